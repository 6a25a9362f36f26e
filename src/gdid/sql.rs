//! SQL-facing gdid functions that can raise errors: I/O, construction, conversions and
//! generation. Each is declared once, below (`sql_functions!`); the type, operators and
//! classes around them are in `gdid/api.sql`.

use std::ffi::CStr;

use pgrx::pg_sys::{self, Datum};

use super::compact::{self, DecodeError};
use super::counter::{GdidState, Taken};
use super::datum::palloc;
use super::handle::{GdidSeq, Plan};
use super::value::{Gdid, ParseError, Part, SIZE};
use crate::callsite;
use crate::dbtext::DbText;
use crate::detection::sightings::What;
use crate::durable::lease::LeaseLock;
use crate::errors::{error, Code, PgError};
use crate::fmgr::{self, Call};
use crate::identity::Kind;
use crate::identity::SequenceName;
use crate::sqlfn::sql_functions;
use crate::wallclock;
use crate::{detection, dropping, guc, lookup, prerequisites, seed, shmem};

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

    /// Superuser only (EXECUTE revoked from PUBLIC).
    fn gdid_advance(scope: text, sequence: text, past: gdid) -> void
        [volatile parallel_unsafe] |_| {
        let registry = lookup::registry();
        prerequisites::require_writable("gdid_advance()");
        while !seed::advance(lookup::gdid(&registry, scope, sequence), past) {
            // Dropped meanwhile: the names lead to a new sequence.
        }
    }

    /// Superuser only (EXECUTE revoked from PUBLIC).
    fn gdid_drop_sequence(scope: text, sequence: text) -> boolean [volatile parallel_unsafe] |_| {
        let registry = lookup::registry();
        prerequisites::require_writable("gdid_drop_sequence()");
        dropping::drop_sequence(&registry, SequenceName::Gdid { scope, sequence })
    }

    /// Rows of the gdid_sequences view: the current database's gdid sequences.
    fn gdid_sequences_rows() -> table(
        scope: text, sequence: text, era: bigint, last_counter: bigint, lease_end: bigint,
        issued: bigint, lease_extensions: bigint
    ) [volatile parallel_safe] |_, emit| {
        sequence_rows(emit)
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
    let authority = guc::gdid_authority()?;
    let registry = shmem::registry()?;
    let seq = registry.seq::<GdidState>(callsite::cached_slot::<2>(call)?)?;
    let t = seq.try_take(1).ok()?;
    Some(Gdid::from_parts(t.era, authority, t.first))
}

fn next(call: Call<'_>) -> Gdid {
    let registry = lookup::registry();
    let authority = prerequisites::gdid_authority();
    prerequisites::require_may_generate("gdid_next()", What::Authority);
    loop {
        let at = callsite::slot_of(
            call,
            |at| registry.seq::<GdidState>(at).is_some(),
            |[scope, sequence]| lookup::gdid(&registry, scope, sequence).at(),
        );
        if let Some(t) = registry.seq::<GdidState>(at).and_then(|seq| take(seq, 1)) {
            return Gdid::from_parts(t.era, authority, t.first);
        }
        // Dropped since the call site resolved it: the names lead to a new sequence.
    }
}

/// `n` consecutive counters, the lease extended (or the era moved on) as needed; `None` if
/// the sequence was dropped meanwhile.
fn take(seq: GdidSeq<'_>, n: u64) -> Option<Taken> {
    loop {
        let need = match seq.try_take(n) {
            Ok(t) => return Some(t),
            Err(need) => need,
        };
        let lock = LeaseLock::acquire();
        if !seq.is_current() {
            return None; // dropped: its word is closed
        }
        let now = wallclock::precise_unix_ms();
        match seq.plan(need, n, now) {
            Plan::Retry => {}
            Plan::Exhausted => error(
                Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                format!("{} has used up every era", lookup::id_of(seq.slot())),
            )
            .raise(),
            Plan::Move(m) => {
                if !lock.persist_then_publish(seq, m.lease, || seq.publish(m, now)) {
                    return None;
                }
            }
        }
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
            let registry = lookup::registry();
            let authority = prerequisites::gdid_authority();
            prerequisites::require_may_generate("gdid_next_block()", What::Authority);
            let t = loop {
                let seq = lookup::gdid(&registry, scope, sequence);
                if let Some(t) = take(seq, n) {
                    break t;
                }
                // Dropped meanwhile: the names lead to a new sequence.
            };
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

fn sequence_rows(emit: &mut dyn FnMut(gdid_sequences_rows::Row)) {
    let registry = lookup::registry();
    for at in registry.of_database(lookup::current_db(), Kind::Gdid) {
        let Some(seq) = registry.seq::<GdidState>(at) else {
            continue;
        };
        let Some(SequenceName::Gdid { scope, sequence }) =
            SequenceName::from_key(Kind::Gdid, seq.slot().key().name)
        else {
            continue;
        };
        let s = seq.stats();
        emit((
            Some(scope.to_vec()),
            Some(sequence.to_vec()),
            Some(i64::from(s.era)),
            Some(s.last_counter as i64),
            Some(s.lease_end as i64),
            Some(s.issued as i64),
            Some(s.lease_extensions as i64),
        ));
    }
}
