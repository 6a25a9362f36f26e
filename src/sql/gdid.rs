//! SQL-facing gdid functions that can raise errors: I/O, construction, conversions, and
//! generation (thin: the generator is `sequences::generate`). Each is declared once, below
//! (`sql_functions!`); the type, operators and classes around them are in `gdid.sql`.

use std::ffi::CStr;

use pgrx::pg_sys;

use crate::core::dbtext::DbText;
use crate::core::gdid::compact::{self, DecodeError};
use crate::core::gdid::counter::GdidState;
use crate::core::gdid::value::{Gdid, ParseError, Part, SIZE};
use crate::core::identity::{gdid_names, Kind, SequenceName};
use crate::core::lease;
use crate::core::snowflake::epoch::unix_ms_to_pg_timestamp;
use crate::pg::errors::{error, Code, PgError};
use crate::pg::fmgr::{self, Call};
use crate::pg::gdid_datum::palloc;
use crate::sequences::generate::{self, Gdids, Generator};
use crate::sequences::{catalog, durable, lifecycle, privileges, watermark};
use crate::sql::sqlfn::sql_functions;
use crate::{pg::shmem, sequences::lookup, sequences::prerequisites};

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
        generate::next::<Gdids>(call, "gdid_next()")
    }

    /// `gdid_next_block(scope, sequence, n)`: one reservation, then one row per call.
    fn gdid_next_block(scope: text, sequence: text, n: integer) -> setof gdid
        [volatile parallel_unsafe rows(100)] |call| {
        fmgr::rows_per_call(
            call,
            || generate::many::<Gdids>("gdid_next_block()", &[scope, sequence], n, "block"),
            |block| block.next().map(palloc),
        )
    }

    /// Moves the sequence on so that its next gdid is later than `past`: UPDATE on the
    /// sequence, as setval.
    fn gdid_advance(scope: text, sequence: text, past: gdid) -> void
        [volatile parallel_unsafe] |_| {
        prerequisites::require_writable("gdid_advance()");
        generate::advance_gdid(SequenceName::Gdid { scope, sequence }, past)
    }

    /// As `snowflake_watermark`, for a gdid sequence.
    fn gdid_watermark(scope: text, sequence: text) -> gdid [volatile parallel_unsafe] |_| {
        let (g, _) = Gdids::stamp(lookup::server());
        Gdid::from_order_value(watermark::watermark(g, SequenceName::Gdid { scope, sequence }))
    }

    /// Rows of the gdid_watermark_holders view.
    fn gdid_watermark_holders_rows() -> table(
        sequence: regclass, pid: integer, transaction: xid, prepared: boolean,
        first_gdid: gdid, since: timestamptz
    ) [volatile parallel_unsafe] |_, emit| {
        for r in watermark::holder_rows(Kind::Gdid) {
            let first = r.value.map(Gdid::from_order_value);
            let since = r.since_ms.map(unix_ms_to_pg_timestamp);
            emit((r.relid, r.pid, r.xid, Some(r.prepared), first, since));
        }
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
