//! SQL-facing gdid functions that can raise errors: I/O, construction, conversions and
//! generation. Each is declared once, below (`sql_functions!`); the type, operators and
//! classes around them are in `gdid.sql`.

use std::ffi::CStr;

use pgrx::pg_sys::{self, Datum};

use crate::core::dbtext::DbText;
use crate::core::gdid::compact::{self, DecodeError};
use crate::core::gdid::counter::{GdidState, Taken};
use crate::core::gdid::gdid_slot::{GdidSeq, Plan};
use crate::core::gdid::value::{Gdid, ParseError, Part, SIZE};
use crate::core::identity::{gdid_names, Kind, SequenceName};
use crate::core::inflight::Held;
use crate::core::lease;
use crate::core::sightings::What;
use crate::core::wallclock;
use crate::pg::errors::{error, Code, PgError};
use crate::pg::fmgr::{self, Call};
use crate::pg::gdid_datum::palloc;
use crate::sequences::fallback::{self, fallback_of, Missed};
use crate::sequences::resolve::{resolve, Purpose, Resolved};
use crate::sequences::{callsite, catalog, durable, inflight, lifecycle, privileges};
use crate::sql::sqlfn::sql_functions;
use crate::sql::watermark;
use crate::{detection, node, pg::shmem, sequences::lookup, sequences::prerequisites};

sql_functions! {
    /// NULL only when the caller asked for soft errors (PostgreSQL 16+) and the input is bad.
    fn gdid_in(_text: cstring) -> gdid_or_null [immutable parallel_safe] |call| {
        input(call, _text)
    }

    fn gdid_out(_g: gdid) -> cstring [immutable parallel_safe] |_| {
        _g.to_string().into_bytes()
    }

    /// A receive function's argument is the StringInfo holding the value's bytes.
    fn gdid_recv(_buf: internal) -> gdid [immutable parallel_safe] |_| {
        receive(_buf.cast())
    }

    fn gdid_send(_g: gdid) -> bytea [immutable parallel_safe] |_| {
        _g.to_bytes().to_vec()
    }

    fn gdid_make as gdid(era: bigint, authority: integer, counter: bigint) -> gdid
        [immutable parallel_safe] |_| {
        Gdid::new(era, authority.into(), counter).unwrap_or_else(|part| {
            out_of_range(format_args!("gdid({era}, {authority}, {counter})"), part).raise()
        })
    }

    fn gdid_era(_g: gdid) -> bigint [immutable parallel_safe] |_| {
        i64::from(_g.era)
    }

    fn gdid_authority(_g: gdid) -> integer [immutable parallel_safe] |_| {
        i32::from(_g.authority())
    }

    /// At most 2^60 - 1.
    fn gdid_counter(_g: gdid) -> bigint [immutable parallel_safe] |_| {
        _g.counter() as i64
    }

    fn gdid_to_hex(_g: gdid) -> text [immutable parallel_safe] |_| {
        _g.to_hex().into_bytes()
    }

    fn gdid_to_bytea(_g: gdid) -> bytea [immutable parallel_safe] |_| {
        _g.to_bytes().to_vec()
    }

    fn gdid_from_bytea(_b: bytea) -> gdid [immutable parallel_safe] |_| {
        match <&[u8; SIZE]>::try_from(_b) {
            Ok(b) => Gdid::from_bytes(b),
            Err(_) => bad_binary(
                "bytea value",
                format!("A gdid is {SIZE} bytes, not {}.", _b.len()),
            ),
        }
    }

    fn gdid_compress(_g: gdid) -> bytea [immutable parallel_safe] |_| {
        compact::compress(_g)
    }

    fn gdid_decompress(_b: bytea) -> gdid [immutable parallel_safe] |_| {
        decoded("compact", compact::decompress(_b))
    }

    fn gdid_to_leb128(_g: gdid) -> bytea [immutable parallel_safe] |_| {
        compact::to_leb128(_g)
    }

    fn gdid_from_leb128(_b: bytea) -> gdid [immutable parallel_safe] |_| {
        decoded("LEB128", compact::from_leb128(_b))
    }

    /// `gdid_next(scope, sequence)`. The common case, a call site that has already resolved
    /// its names and counters the lease covers, is a few loads, one CAS and a palloc;
    /// everything else (first call, errors, lease extensions, a new era) takes the slow path.
    fn gdid_next(scope: text_datum, sequence: text_datum) -> gdid
        [volatile parallel_unsafe] |call| {
        next_without_waiting(call).unwrap_or_else(|| next(call))
    }

    /// `gdid_next_block(scope, sequence, n)`: one reservation, then one row per call.
    fn gdid_next_block(scope: text, sequence: text, n: integer) -> setof gdid
        [volatile parallel_unsafe rows(100)] |call| {
        next_block(call, scope, sequence, n)
    }

    /// Moves the sequence on so that its next gdid is later than `past`: UPDATE on the
    /// sequence, as setval.
    fn gdid_advance(scope: text, sequence: text, past: gdid) -> void
        [volatile parallel_unsafe] |_| {
        prerequisites::require_writable("gdid_advance()");
        advance(SequenceName::Gdid { scope, sequence }, past)
    }

    /// The schema of this database's gdid sequences (`gdid`, or `snowflake_gdid_seq`, see
    /// `Kind::schema_names`); NULL without one.
    fn gdid_sequence_schema() -> regnamespace [stable parallel_safe] |_| {
        catalog::existing_schema(Kind::Gdid).map(|s| s.oid)
    }

    /// `DROP SEQUENCE gdid."scope/sequence"`, as the caller (its owner may): refused while a
    /// DEFAULT uses it. False if there is no such sequence.
    fn gdid_drop_sequence(scope: text, sequence: text) -> boolean [volatile parallel_unsafe] |_| {
        lifecycle::drop_sequence(SequenceName::Gdid { scope, sequence })
    }

    /// The row of the gdid_sequences view for sequence `seq`: its names, its lease, and what
    /// the cache knows of it (NULL where it is not cached, or where the caller may not read
    /// the sequence).
    fn gdid_sequence_state(seq: regclass) -> table(
        scope: text, sequence: text, era: bigint, last_counter: bigint, lease_end: bigint,
        issued: bigint, lease_extensions: bigint
    ) [volatile parallel_unsafe] |_, emit| {
        sequence_state(seq, emit)
    }
}

// ---------------------------------------------------------------------------------------------
// Text and binary I/O

fn out_of_range(what: impl std::fmt::Display, part: Part) -> PgError {
    error(
        Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{what} is out of range for type gdid"),
    )
    .detail(format!("The {}.", part.describe()))
}

/// Text in the database's encoding; anything but ASCII is malformed.
fn parse(text: &[u8]) -> Result<Gdid, ParseError> {
    std::str::from_utf8(text)
        .map_err(|_| ParseError::Malformed)
        .and_then(Gdid::parse)
}

/// The gdid of `text`, or `None` when the error was saved for a caller that asked for soft
/// errors.
fn input(call: Call<'_>, text: &CStr) -> Option<Gdid> {
    let text = text.to_bytes();
    let e = match parse(text) {
        Ok(g) => return Some(g),
        Err(ParseError::Malformed) => error(
            Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
            format!("invalid input syntax for type gdid: \"{}\"", DbText(text)),
        )
        .hint(
            "Write era:authority:counter in decimal, such as 1293:3:57, or 24 hexadecimal digits.",
        ),
        Err(ParseError::OutOfRange(part)) => {
            out_of_range(format_args!("value \"{}\"", DbText(text)), part)
        }
    };
    if e.save(call.context()) {
        return None;
    }
    e.raise()
}

fn bad_binary(what: &str, why: impl Into<String>) -> ! {
    error(
        Code::ERRCODE_INVALID_BINARY_REPRESENTATION,
        format!("invalid {what} for type gdid"),
    )
    .detail(why)
    .raise()
}

fn receive(buf: *mut pg_sys::StringInfoData) -> Gdid {
    // SAFETY: the receive function's argument, the StringInfo of the value's bytes.
    let buf = unsafe { &mut *buf };
    let left = (buf.len - buf.cursor) as usize;
    if left != SIZE {
        bad_binary(
            "external value",
            format!("A binary gdid is {SIZE} bytes, not {left}."),
        );
    }
    // SAFETY: the message holds `left` == SIZE more bytes from the cursor on.
    let bytes = unsafe {
        buf.data
            .add(buf.cursor as usize)
            .cast::<[u8; SIZE]>()
            .read_unaligned()
    };
    buf.cursor += SIZE as i32;
    Gdid::from_bytes(&bytes)
}

fn decoded(form: &str, r: Result<Gdid, DecodeError>) -> Gdid {
    r.unwrap_or_else(|e| {
        bad_binary(
            &format!("{form} value"),
            format!("In the input, {}.", e.describe()),
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Generation

#[inline(always)]
fn next_without_waiting(call: Call<'_>) -> Option<Gdid> {
    // SAFETY: a plain read of a backend-global flag (read-only and standby transactions get
    // their ERROR from the slow path).
    if unsafe { pg_sys::XactReadOnly } || detection::refused(What::Authority) {
        return None;
    }
    let (authority, era, check) = node::authority_now()?;
    let cache = shmem::cache()?;
    let at = callsite::cached_slot::<2>(call)?;
    // The transaction's first gdid of the sequence is published as in flight first.
    if !inflight::published(at) {
        return None;
    }
    let seq = cache.seq::<GdidState>(at)?;
    let t = seq.try_take(1).ok()?;
    // Under a claimed authority every gdid is of the claim's era (see `take`), and of a claim
    // still held (else the slow path says why).
    if era.is_some_and(|e| e != t.era) || !check.passes() {
        return None;
    }
    Some(Gdid::from_parts(t.era, authority, t.first))
}

fn resolved(scope: &[u8], sequence: &[u8], purpose: Purpose) -> Resolved {
    resolve(
        SequenceName::Gdid { scope, sequence },
        &lookup::server().layout,
        purpose,
    )
}

fn next(call: Call<'_>) -> Gdid {
    // Read-only first: a standby has no claim, and says so with 25006.
    prerequisites::require_may_generate("gdid_next()", What::Authority);
    let (authority, era, check) = node::gdid_authority();
    let mut looked = None;
    loop {
        let r = callsite::resolved(
            call,
            |at| lookup::cache().seq::<GdidState>(at).is_some(),
            |[scope, sequence]| resolved(scope, sequence, Purpose::Generate),
        );
        // Pinned after resolving, which may wait: see `shmem::refresh_phase`.
        let cache = lookup::cache();
        match cache
            .seq::<GdidState>(r.at)
            .ok_or(Missed::Evicted)
            .and_then(|seq| in_flight(seq, &r, authority, era, 1, fallback_of(looked, &r)))
        {
            Ok(t) => {
                // The take may have waited: the authority must still be this server's.
                check.confirm();
                return Gdid::from_parts(t.era, authority, t.first);
            }
            // Evicted from the cache since the call site resolved it: resolve again.
            Err(Missed::Evicted) => {}
            Err(Missed::Fallback) => {
                drop(cache);
                looked = Some((r.relid, fallback::gdid_floor(r.relid, authority)));
            }
        }
    }
}

/// Brings the cache entry up to the lease its relation holds, if that is more than the entry
/// knows (an earlier entry of the sequence, since evicted, or a setval may have moved it on).
/// Compared as stored values: a lease of era 1 or later is stored rounded up (see `lease`),
/// and the entry's own last lease must not read as a move. Under the extension lock.
fn load(seq: GdidSeq<'_>, r: &Resolved) {
    let Some(stored) = durable::read(r.relid) else {
        return;
    };
    if stored > lease::gdid_to_value(seq.lease()) {
        if let Some(l) = lease::gdid_from_value(stored) {
            seq.restore(l);
        }
    }
}

/// [`take`], the transaction's gdids of the sequence published as in flight first, for the
/// watermarks (see `sequences::inflight`), under the authority the gdids will carry, as the
/// watermark counts.
fn in_flight(
    seq: GdidSeq<'_>,
    r: &Resolved,
    authority: u8,
    claimed_era: Option<u32>,
    n: u64,
    looked: Option<Option<lease::Lease>>,
) -> Result<Taken, Missed> {
    let held = Held {
        db: r.key.db,
        relid: r.key.relid,
        kind: Kind::Gdid,
    };
    inflight::reserving(
        seq.at(),
        held,
        watermark::gdid_floor(&seq, authority),
        || seq.is_current(),
        || take(seq, r, authority, claimed_era, n, looked),
        |t| Gdid::from_parts(t.era, authority, t.first).order_value(),
    )
}

/// `n` consecutive counters, the lease extended (or the era moved on) as needed. A fresh
/// sequence (its relation holds no lease yet) continues above the gdids of this authority
/// already stored in its columns: `looked`, the fallback, must have been looked for (see
/// [`Missed::Fallback`]).
///
/// Under a claimed authority (`claimed_era`), every gdid is of the claim's era: the cache
/// gives each new holder of an authority an era above every era earlier holders used, so that
/// this server's counters cannot meet theirs. A sequence still in an earlier era moves on to
/// the claim's; one past it (its era's counters used up) cannot go on under this claim.
fn take(
    seq: GdidSeq<'_>,
    r: &Resolved,
    authority: u8,
    claimed_era: Option<u32>,
    n: u64,
    looked: Option<Option<lease::Lease>>,
) -> Result<Taken, Missed> {
    loop {
        let need = match seq.try_take(n) {
            Ok(t) => match claimed_era {
                None => return Ok(t),
                Some(era) if t.era == era => return Ok(t),
                Some(era) if t.era > era => error(
                    Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                    format!(
                        "{} is in era {}, past era {era} of this server's claim of authority {authority}",
                        described(r),
                        t.era
                    ),
                )
                .detail(
                    "Under a claimed authority every gdid is of the claim's era: a later one could meet \
                     the gdids of a later holder of the authority. The sequence used up the claim's era, \
                     or reached a later one before (under another claim, registry or group).",
                )
                .hint(format!(
                    "Each new claim (SELECT snowflake_node_detach(); SELECT snowflake_node_attach();) \
                     is in a later era of the group; era {} or later is needed.",
                    t.era
                ))
                .raise(),
                Some(era) => {
                    // Into the claim's era, under the lock; the counters just taken are
                    // skipped.
                    let _lock = durable::lock_extensions(r.key.hash());
                    if !seq.is_current() {
                        return Err(Missed::Evicted);
                    }
                    load(seq, r);
                    seq.raise_position(lease::Lease { era, end: 1 });
                    continue;
                }
            },
            Err(need) => need,
        };
        let fresh = seq.lease() == lease::Lease::default() && durable::read(r.relid).is_none();
        let floor = if fresh {
            looked.ok_or(Missed::Fallback)?
        } else {
            None
        };
        let _lock = durable::lock_extensions(r.key.hash());
        if !seq.is_current() {
            return Err(Missed::Evicted);
        }
        if durable::read(r.relid).is_none() {
            if let Some(f) = floor {
                seq.raise_position(f);
            }
        }
        load(seq, r);
        let now = wallclock::precise_unix_ms();
        match seq.plan(need, n, now) {
            Plan::Retry => {}
            Plan::Exhausted => error(
                Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                format!("{} has used up every era", described(r)),
            )
            .raise(),
            Plan::Move(m) => {
                durable::extend_lease(Kind::Gdid, r.key, lease::gdid_to_value(m.lease));
                seq.publish(m, now);
                seq.slot().touch(now);
            }
        }
    }
}

/// `gdid sequence "scope/sequence"` of a resolved sequence, for messages.
fn described(r: &Resolved) -> String {
    format!(
        "gdid sequence \"{}\"",
        DbText(&catalog::relation_name(r.relid).unwrap_or_default())
    )
}

fn advance(name: SequenceName<'_>, past: Gdid) {
    loop {
        let r = match name {
            SequenceName::Gdid { scope, sequence } => resolved(scope, sequence, Purpose::Advance),
            SequenceName::Snowflake(_) => unreachable!("gdid_advance names a gdid sequence"),
        };
        let cache = lookup::cache();
        let Some(seq) = cache.seq::<GdidState>(r.at) else {
            continue; // evicted meanwhile
        };
        let _lock = durable::lock_extensions(r.key.hash());
        if !seq.is_current() {
            continue;
        }
        load(seq, &r);
        if let Some(m) = seq.plan_advance(past.era, past.counter()) {
            let now = wallclock::precise_unix_ms();
            durable::extend_lease(Kind::Gdid, r.key, lease::gdid_to_value(m.lease));
            seq.publish(m, now);
        }
        return;
    }
}

/// The state of a block being returned.
#[derive(Clone, Copy)]
struct Block {
    era: u32,
    authority: u8,
    next: u64,
    last: u64,
}

fn next_block(call: Call<'_>, scope: &[u8], sequence: &[u8], n: i32) -> Datum {
    fmgr::rows_per_call(
        call,
        || {
            let n = prerequisites::count_argument(n, "block");
            prerequisites::require_may_generate("gdid_next_block()", What::Authority);
            let (authority, era, check) = node::gdid_authority();
            let mut looked = None;
            let t = loop {
                let r = resolved(scope, sequence, Purpose::Generate);
                let cache = lookup::cache();
                match cache
                    .seq::<GdidState>(r.at)
                    .ok_or(Missed::Evicted)
                    .and_then(|seq| in_flight(seq, &r, authority, era, n, fallback_of(looked, &r)))
                {
                    Ok(t) => break t,
                    // Evicted meanwhile: resolve again.
                    Err(Missed::Evicted) => {}
                    Err(Missed::Fallback) => {
                        drop(cache);
                        looked = Some((r.relid, fallback::gdid_floor(r.relid, authority)));
                    }
                }
            };
            check.confirm();
            Block {
                era: t.era,
                authority,
                next: t.first,
                last: t.first + n - 1,
            }
        },
        |b| {
            (b.next <= b.last).then(|| {
                let g = Gdid::from_parts(b.era, b.authority, b.next);
                b.next += 1;
                palloc(g)
            })
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Monitoring

fn sequence_state(seq: pg_sys::Oid, emit: &mut dyn FnMut(gdid_sequence_state::Row)) {
    durable::ShareLocked::for_one_row(seq, |locked| state_row(seq, locked, emit));
}

/// The row of sequence `seq`, its stored lease read if `locked`.
fn state_row(
    seq: pg_sys::Oid,
    locked: Option<&durable::ShareLocked>,
    emit: &mut dyn FnMut(gdid_sequence_state::Row),
) {
    let Some(Ok(opened)) = catalog::open(Kind::Gdid, seq) else {
        return;
    };
    let Some((scope, sequence)) = catalog::relation_name(seq).and_then(|n| gdid_names(&n)) else {
        return;
    };
    // SAFETY: a plain read of the current user.
    if !privileges::may_read(seq, unsafe { pg_sys::GetUserId() }) {
        emit((Some(scope), Some(sequence), None, None, None, None, None));
        return;
    }
    let stored = locked
        .and_then(|l| l.read().ok())
        .flatten()
        .and_then(lease::gdid_from_value);
    let key = crate::core::cache::Key {
        db: lookup::current_db(),
        relid: seq.to_u32(),
        filenode: opened.filenode,
    };
    // Without the library preloaded there is no cache: the catalog's part only.
    // Pinned while the stats are read: the slot is not reused meanwhile.
    let pinned = shmem::cache();
    let cached = pinned
        .as_ref()
        .and_then(|cache| cache.find(key).and_then(|at| cache.seq::<GdidState>(at)));
    match cached.map(|c| c.stats()) {
        Some(s) => emit((
            Some(scope),
            Some(sequence),
            Some(i64::from(s.era)),
            Some(s.last_counter as i64),
            Some(s.lease_end as i64),
            Some(s.issued as i64),
            Some(s.lease_extensions as i64),
        )),
        None => emit((
            Some(scope),
            Some(sequence),
            stored.map(|l| i64::from(l.era)),
            None,
            stored.map(|l| l.end as i64),
            None,
            None,
        )),
    }
}
