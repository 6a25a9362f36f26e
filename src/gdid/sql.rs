//! SQL-facing gdid functions that can raise errors: I/O, construction, conversions and
//! generation. Their SQL declarations are in `gdid/api.sql`.

use pgrx::pg_sys::{self, Datum, FunctionCallInfo};

use super::compact::{self, DecodeError};
use super::counter::{GdidState, Taken};
use super::datum::{palloc, read};
use super::sequence::{GdidSeq, Plan};
use super::value::{Gdid, ParseError, Part, SIZE};
use crate::callsite;
use crate::dbtext::DbText;
use crate::durable::lease::LeaseLock;
use crate::errors::{error, Code, PgError};
use crate::fmgr::{self, finfo, v1, Call};
use crate::registry::Kind;
use crate::sequence_id::SequenceName;
use crate::sightings::What;
use crate::snowflake::wallclock;
use crate::{guc, observe, sequences, shmem};

finfo!(
    pg_finfo_gdid_in,
    pg_finfo_gdid_out,
    pg_finfo_gdid_recv,
    pg_finfo_gdid_send,
    pg_finfo_gdid_make,
    pg_finfo_gdid_era,
    pg_finfo_gdid_authority,
    pg_finfo_gdid_counter,
    pg_finfo_gdid_to_hex,
    pg_finfo_gdid_to_bytea,
    pg_finfo_gdid_from_bytea,
    pg_finfo_gdid_compress,
    pg_finfo_gdid_decompress,
    pg_finfo_gdid_to_leb128,
    pg_finfo_gdid_from_leb128,
    pg_finfo_gdid_next,
    pg_finfo_gdid_next_block,
    pg_finfo_gdid_advance,
    pg_finfo_gdid_sequences_rows,
    pg_finfo_gdid_drop_sequence,
);

/// Defines a V1 function whose body reads its (non-null) arguments through `call`.
macro_rules! function {
    ($name:ident, |$call:ident| $body:expr) => {
        #[no_mangle]
        pub extern "C" fn $name(fcinfo: FunctionCallInfo) -> Datum {
            fn body($call: Call<'_>) -> Datum {
                $body
            }
            // SAFETY: called by fmgr for the SQL function declared with this symbol in
            // api.sql, STRICT, whose arguments are what the body reads.
            unsafe { v1(fcinfo, body) }
        }
    };
}

/// The gdid argument `n`.
fn gdid_arg(call: Call<'_>, n: usize) -> Gdid {
    // SAFETY: the functions below read as gdids exactly the arguments api.sql types gdid.
    unsafe { read(call.datum(n)) }
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

// gdid_in: NULL only when the caller asked for soft errors (PostgreSQL 16+) and the input is
// bad.
function!(gdid_in, |call| {
    let text = call.cstr(0).to_bytes();
    let e = match parse(text) {
        Ok(g) => {
            observe::gdid(g);
            return palloc(g);
        }
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
        return call.null();
    }
    e.raise()
});

function!(gdid_out, |call| fmgr::cstring(
    gdid_arg(call, 0).to_string().as_bytes()
));

fn bad_binary(what: &str, why: impl Into<String>) -> ! {
    error(
        Code::ERRCODE_INVALID_BINARY_REPRESENTATION,
        format!("invalid {what} for type gdid"),
    )
    .detail(why)
    .raise()
}

function!(gdid_recv, |call| {
    // SAFETY: a receive function's argument is the StringInfo holding the value's bytes.
    let buf = unsafe { &mut *call.datum(0).cast_mut_ptr::<pg_sys::StringInfoData>() };
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
    let g = Gdid::from_bytes(&bytes);
    observe::gdid(g);
    palloc(g)
});

function!(gdid_send, |call| fmgr::varlena(
    &gdid_arg(call, 0).to_bytes()
));

// ---------------------------------------------------------------------------------------------
// Construction, parts, conversions

function!(gdid_make, |call| {
    let (era, authority, counter) = (call.i64(0), call.i32(1), call.i64(2));
    match Gdid::new(era, authority.into(), counter) {
        Ok(g) => palloc(g),
        Err(part) => {
            out_of_range(format_args!("gdid({era}, {authority}, {counter})"), part).raise()
        }
    }
});

function!(gdid_era, |call| Datum::from(i64::from(
    gdid_arg(call, 0).era
)));
function!(gdid_authority, |call| Datum::from(i32::from(
    gdid_arg(call, 0).authority()
)));
// At most 2^60 - 1.
function!(gdid_counter, |call| Datum::from(
    gdid_arg(call, 0).counter() as i64
));
function!(gdid_to_hex, |call| fmgr::varlena(
    gdid_arg(call, 0).to_hex().as_bytes()
));
function!(gdid_to_bytea, |call| fmgr::varlena(
    &gdid_arg(call, 0).to_bytes()
));

function!(gdid_from_bytea, |call| {
    let bytes = call.bytes(0);
    match <&[u8; SIZE]>::try_from(bytes) {
        Ok(b) => palloc(Gdid::from_bytes(b)),
        Err(_) => bad_binary(
            "bytea value",
            format!("A gdid is {SIZE} bytes, not {}.", bytes.len()),
        ),
    }
});

fn decoded(form: &str, r: Result<Gdid, DecodeError>) -> Datum {
    match r {
        Ok(g) => palloc(g),
        Err(e) => bad_binary(
            &format!("{form} value"),
            format!("In the input, {}.", e.describe()),
        ),
    }
}

function!(gdid_compress, |call| fmgr::varlena(&compact::compress(
    gdid_arg(call, 0)
)));
function!(gdid_decompress, |call| decoded(
    "compact",
    compact::decompress(call.bytes(0))
));
function!(gdid_to_leb128, |call| fmgr::varlena(&compact::to_leb128(
    gdid_arg(call, 0)
)));
function!(gdid_from_leb128, |call| decoded(
    "LEB128",
    compact::from_leb128(call.bytes(0))
));

// ---------------------------------------------------------------------------------------------
// Generation

/// `gdid_next(scope, sequence)`. The common case, a call site that has already resolved its
/// names and counters the lease covers, is a few loads, one CAS and a palloc; everything else
/// (first call, errors, lease extensions, a new era) takes the slow path.
#[no_mangle]
pub extern "C" fn gdid_next(fcinfo: FunctionCallInfo) -> Datum {
    // SAFETY: called by fmgr for gdid_next(text, text), STRICT.
    unsafe {
        v1(fcinfo, |call| {
            next_without_waiting(call).unwrap_or_else(|| next(call))
        })
    }
}

#[inline(always)]
fn next_without_waiting(call: Call<'_>) -> Option<Datum> {
    // SAFETY: a plain read of a backend-global flag (read-only and standby transactions get
    // their ERROR from the slow path).
    if unsafe { pg_sys::XactReadOnly } || observe::refused(What::Authority) {
        return None;
    }
    let authority = guc::gdid_authority()?;
    let registry = shmem::registry()?;
    let seq = registry.seq::<GdidState>(callsite::cached_slot::<2>(call)?)?;
    let t = seq.try_take(1).ok()?;
    Some(palloc(Gdid::from_parts(t.era, authority, t.first)))
}

fn next(call: Call<'_>) -> Datum {
    let registry = sequences::registry();
    let authority = sequences::gdid_authority();
    sequences::require_may_generate("gdid_next()", What::Authority);
    loop {
        let at = callsite::slot_of(
            call,
            |at| registry.seq::<GdidState>(at).is_some(),
            |[scope, sequence]| sequences::gdid(&registry, scope, sequence).at(),
        );
        if let Some(t) = registry.seq::<GdidState>(at).and_then(|seq| take(seq, 1)) {
            return palloc(Gdid::from_parts(t.era, authority, t.first));
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
                format!("{} has used up every era", sequences::id_of(seq.slot())),
            )
            .raise(),
            Plan::Move(m) => {
                if !sequences::persist_then_publish(&lock, seq, m.lease, || seq.publish(m, now)) {
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

/// `gdid_next_block(scope, sequence, n)`: one reservation, then one row per call.
#[no_mangle]
pub extern "C" fn gdid_next_block(fcinfo: FunctionCallInfo) -> Datum {
    // SAFETY: called by fmgr for gdid_next_block(text, text, integer), STRICT, SETOF.
    unsafe {
        v1(fcinfo, |call| {
            fmgr::rows_per_call(
                call,
                || {
                    let n = sequences::count_argument(call.i32(2), "block");
                    let registry = sequences::registry();
                    let authority = sequences::gdid_authority();
                    sequences::require_may_generate("gdid_next_block()", What::Authority);
                    let t = loop {
                        let seq = sequences::gdid(&registry, call.bytes(0), call.bytes(1));
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
        })
    }
}

function!(gdid_advance, |call| {
    let registry = sequences::registry();
    sequences::require_writable("gdid_advance()");
    while !sequences::advance(
        sequences::gdid(&registry, call.bytes(0), call.bytes(1)),
        gdid_arg(call, 2),
    ) {
        // Dropped meanwhile: the names lead to a new sequence.
    }
    Datum::from(0)
});

// gdid_drop_sequence(text, text): superuser only (EXECUTE revoked from PUBLIC).
function!(gdid_drop_sequence, |call| {
    let registry = sequences::registry();
    sequences::require_writable("gdid_drop_sequence()");
    let name = SequenceName::Gdid {
        scope: call.bytes(0),
        sequence: call.bytes(1),
    };
    Datum::from(sequences::drop(&registry, name))
});

// ---------------------------------------------------------------------------------------------
// Monitoring

// Rows of the gdid_sequences view: the current database's gdid sequences.
function!(gdid_sequences_rows, |call| fmgr::materialize(
    call,
    |rows| {
        let registry = sequences::registry();
        for at in registry.of_database(sequences::current_db(), Kind::Gdid) {
            let Some(seq) = registry.seq::<GdidState>(at) else {
                continue;
            };
            let Some(id) = crate::sequence_id::SequenceId::from_key(seq.slot().key()) else {
                continue;
            };
            let crate::sequence_id::SequenceName::Gdid { scope, sequence } = id.name else {
                continue;
            };
            let s = seq.stats();
            let mut values = [
                fmgr::varlena(scope),
                fmgr::varlena(sequence),
                Datum::from(i64::from(s.era)),
                Datum::from(s.last_counter as i64),
                Datum::from(s.lease_end as i64),
                Datum::from(s.issued as i64),
                Datum::from(s.lease_extensions as i64),
            ];
            rows.push(&mut values, &mut [false; 7]);
        }
    }
));
