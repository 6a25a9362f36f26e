//! SQL-facing gdid functions that can raise errors: I/O, construction, conversions and
//! generation. Their SQL declarations are in `gdid/api.sql`.

use std::ffi::{CStr, CString};

use pgrx::datum::Internal;
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::compact::{self, DecodeError};
use super::counter::{self, Taken};
use super::datum::PgGdid;
use super::value::{Gdid, ParseError, Part, SIZE};
use crate::durable;
use crate::errors::{error, not_preloaded, Code};
use crate::registry::{gdid_key_name, Kind, Recorded, Slot};
use crate::soft_error::InputError;
use crate::{guc, sequences, shmem};

// ---------------------------------------------------------------------------------------------
// Text and binary I/O

fn out_of_range(what: &str, part: Part) -> ! {
    error(
        Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{what} is out of range for type gdid"),
    )
    .detail(format!("The {}.", part.describe()))
    .raise()
}

/// NULL only when the caller asked for soft errors (PostgreSQL 16+) and the input is bad.
#[pg_extern(sql = false)]
fn gdid_in(input: &CStr, fcinfo: pg_sys::FunctionCallInfo) -> Option<PgGdid> {
    let text = input.to_string_lossy();
    let e = match Gdid::parse(&text) {
        Ok(g) => return Some(PgGdid(g)),
        Err(ParseError::Malformed) => InputError {
            code: Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
            message: format!("invalid input syntax for type gdid: \"{text}\""),
            detail: None,
            hint: Some(
                "Write era:authority:counter in decimal, such as 1293:3:57, or 24 hexadecimal digits.",
            ),
        },
        Err(ParseError::OutOfRange(part)) => InputError {
            code: Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            message: format!("value \"{text}\" is out of range for type gdid"),
            detail: Some(format!("The {}.", part.describe())),
            hint: None,
        },
    };
    e.report(fcinfo);
    None
}

#[pg_extern(sql = false)]
fn gdid_out(g: PgGdid) -> CString {
    CString::new(g.0.to_string()).expect("digits and colons contain no NUL")
}

fn bad_binary(what: &str, why: impl Into<String>) -> ! {
    error(
        Code::ERRCODE_INVALID_BINARY_REPRESENTATION,
        format!("invalid {what} for type gdid"),
    )
    .detail(why)
    .raise()
}

#[pg_extern(sql = false)]
fn gdid_recv(mut buf: Internal) -> PgGdid {
    // SAFETY: a receive function's argument is the StringInfo holding the value's bytes.
    let buf = unsafe { buf.get_mut::<pg_sys::StringInfoData>() }
        .unwrap_or_else(|| bad_binary("external value", "no message"));
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
    PgGdid(Gdid::from_bytes(&bytes))
}

#[pg_extern(sql = false)]
fn gdid_send(g: PgGdid) -> Vec<u8> {
    g.0.to_bytes().to_vec()
}

// ---------------------------------------------------------------------------------------------
// Construction, parts, conversions

#[pg_extern(sql = false)]
fn gdid_make(era: i64, authority: i32, counter: i64) -> PgGdid {
    Gdid::new(era, authority.into(), counter)
        .map(PgGdid)
        .unwrap_or_else(|part| out_of_range(&format!("gdid({era}, {authority}, {counter})"), part))
}

#[pg_extern(sql = false)]
fn gdid_era(g: PgGdid) -> i64 {
    g.0.era.into()
}

#[pg_extern(sql = false)]
fn gdid_authority(g: PgGdid) -> i32 {
    g.0.authority().into()
}

#[pg_extern(sql = false)]
fn gdid_counter(g: PgGdid) -> i64 {
    // At most 2^60 - 1.
    g.0.counter() as i64
}

#[pg_extern(sql = false)]
fn gdid_to_hex(g: PgGdid) -> String {
    g.0.to_hex()
}

#[pg_extern(sql = false)]
fn gdid_to_bytea(g: PgGdid) -> Vec<u8> {
    g.0.to_bytes().to_vec()
}

#[pg_extern(sql = false)]
fn gdid_from_bytea(bytes: &[u8]) -> PgGdid {
    match <&[u8; SIZE]>::try_from(bytes) {
        Ok(b) => PgGdid(Gdid::from_bytes(b)),
        Err(_) => bad_binary(
            "bytea value",
            format!("A gdid is {SIZE} bytes, not {}.", bytes.len()),
        ),
    }
}

fn decoded(form: &str, r: Result<Gdid, DecodeError>) -> PgGdid {
    r.map(PgGdid).unwrap_or_else(|e| {
        bad_binary(
            &format!("{form} value"),
            format!("In the input, {}.", e.describe()),
        )
    })
}

#[pg_extern(sql = false)]
fn gdid_compress(g: PgGdid) -> Vec<u8> {
    compact::compress(g.0)
}

#[pg_extern(sql = false)]
fn gdid_decompress(bytes: &[u8]) -> PgGdid {
    decoded("compact", compact::decompress(bytes))
}

#[pg_extern(sql = false)]
fn gdid_to_leb128(g: PgGdid) -> Vec<u8> {
    compact::to_leb128(g.0)
}

#[pg_extern(sql = false)]
fn gdid_from_leb128(bytes: &[u8]) -> PgGdid {
    decoded("LEB128", compact::from_leb128(bytes))
}

// ---------------------------------------------------------------------------------------------
// Generation

/// The slot of (scope, sequence) in this database, created if new, and the slot itself.
fn slot_of(scope: &str, sequence: &str) -> (usize, &'static Slot) {
    let registry = shmem::registry().unwrap_or_else(|| not_preloaded());
    sequences::check_name_or_raise("gdid scope", scope.as_bytes());
    sequences::check_name_or_raise("gdid sequence", sequence.as_bytes());
    let name = gdid_key_name(scope.as_bytes(), sequence.as_bytes());
    let shown = format!("gdid sequence \"{scope}/{sequence}\"");
    let idx = sequences::find_or_create(&registry, Kind::Gdid, &name, Recorded::default(), &shown);
    (idx, registry.slot(idx))
}

/// `n` consecutive counters of (scope, sequence), the lease extended as needed.
fn take(function: &str, scope: &str, sequence: &str, n: u64) -> Taken {
    durable::require_writable(function);
    let (idx, slot) = slot_of(scope, sequence);
    loop {
        match counter::try_take(&slot.state, n) {
            Ok(t) => return t,
            Err(need) => durable::extend_gdid(idx, slot, need),
        }
    }
}

#[pg_extern(sql = false)]
fn gdid_next(scope: &str, sequence: &str) -> PgGdid {
    let t = take("gdid_next()", scope, sequence, 1);
    PgGdid(Gdid::from_parts(t.era, guc::gdid_authority(), t.first))
}

#[pg_extern(sql = false)]
fn gdid_next_block(scope: &str, sequence: &str, n: i32) -> SetOfIterator<'static, PgGdid> {
    if n < 1 {
        error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("block size must be at least 1, not {n}"),
        )
        .raise();
    }
    let t = take("gdid_next_block()", scope, sequence, n as u64);
    let authority = guc::gdid_authority();
    SetOfIterator::new(
        (t.first..t.first + n as u64).map(move |c| PgGdid(Gdid::from_parts(t.era, authority, c))),
    )
}

#[pg_extern(sql = false)]
fn gdid_advance(scope: &str, sequence: &str, past: PgGdid) {
    durable::require_writable("gdid_advance()");
    let (idx, slot) = slot_of(scope, sequence);
    durable::advance_gdid(idx, slot, past.0.era, past.0.counter());
}

/// Rows of the gdid_sequences view: the current database's gdid sequences.
#[allow(clippy::type_complexity)]
#[pg_extern(sql = false)]
fn gdid_sequences_rows() -> TableIterator<'static, (String, String, i64, i64, i64, i64, i64)> {
    let registry = shmem::registry().unwrap_or_else(|| not_preloaded());
    let db = sequences::current_db();
    let rows: Vec<_> = registry
        .of_database(db, Kind::Gdid)
        .map(|slot| {
            let name = slot.name();
            let split = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            let (scope, sequence) = (&name[..split], name.get(split + 1..).unwrap_or(&[]));
            let s = &slot.state;
            let (era, lease_end) = counter::lease(s);
            (
                String::from_utf8_lossy(scope).into_owned(),
                String::from_utf8_lossy(sequence).into_owned(),
                i64::from(era),
                counter::last(s) as i64,
                lease_end as i64,
                s.issued.load(std::sync::atomic::Ordering::Relaxed) as i64,
                s.lease_extensions
                    .load(std::sync::atomic::Ordering::Relaxed) as i64,
            )
        })
        .collect();
    TableIterator::new(rows)
}
