//! The lease's WAL records, through a custom WAL resource manager: they reach standbys with
//! the rest of the WAL and are replayed after a crash.
//!
//! The resource manager ID is 128, `RM_EXPERIMENTAL_ID`, the ID PostgreSQL sets aside for
//! extensions that have not claimed one on the PostgreSQL wiki yet. Another library using it
//! stops the server at start-up with an error naming both.
//!
//! What replay does with a record is not this module's business: `register` takes the
//! callbacks (see `recovery`).

use std::ffi::{c_char, CStr, CString};
use std::sync::OnceLock;

use pgrx::pg_guard;
use pgrx::pg_sys;

use super::record::{LeaseRecord, RECORD_SIZE};
use crate::errors::{self, error, Code};

const RM_ID: pg_sys::RmgrId = pg_sys::RM_EXPERIMENTAL_ID as pg_sys::RmgrId;
/// The record types, in the high bits of xl_info (the low four belong to PostgreSQL): a
/// lease, and a dropped sequence (the record then carries its key).
const XLOG_LEASE: u8 = 0x10;
const XLOG_FORGET: u8 = 0x20;
const XLR_INFO_MASK: u8 = 0x0F;

/// What replay calls: for each lease record, for each dropped sequence, and once when redo
/// ends (the end of crash recovery, or a standby's promotion).
pub struct Replay {
    pub record: fn(&LeaseRecord),
    pub forget: fn(&LeaseRecord),
    pub end: fn(),
}

static REPLAY: OnceLock<Replay> = OnceLock::new();

/// Registers the resource manager; only possible while preloading.
pub fn register(replay: Replay) {
    let _ = REPLAY.set(replay);
    let mut rmgr = pg_sys::RmgrData {
        rm_name: c"snowflake_id".as_ptr(),
        rm_redo: Some(redo),
        rm_desc: Some(desc),
        rm_identify: Some(identify),
        rm_cleanup: Some(cleanup),
        ..Default::default()
    };
    // SAFETY: called from _PG_init while shared_preload_libraries is processed; PostgreSQL
    // copies the struct, and rm_name points at a static string.
    // (A raw pointer: PostgreSQL 15 declares the parameter mutable, 18 const.)
    unsafe { pg_sys::RegisterCustomRmgr(RM_ID, &raw mut rmgr) };
}

/// Writes one lease record and waits until the WAL holding it is flushed.
pub fn log_and_flush(record: &LeaseRecord) {
    log(record, XLOG_LEASE);
}

/// Writes that the sequence of `record` was dropped, and waits until it is flushed.
pub fn log_forget_and_flush(record: &LeaseRecord) {
    log(record, XLOG_FORGET);
}

fn log(record: &LeaseRecord, info: u8) {
    let bytes = record.encode();
    // SAFETY: the standard insertion protocol; XLogRegisterData only reads `bytes`, which
    // outlive the XLogInsert that copies them.
    unsafe {
        pg_sys::XLogBeginInsert();
        pg_sys::XLogRegisterData(bytes.as_ptr().cast_mut().cast(), RECORD_SIZE as _);
        let lsn = pg_sys::XLogInsert(RM_ID, info);
        pg_sys::XLogFlush(lsn);
    }
}

/// The record's payload.
///
/// # Safety
/// `record` is the reader state PostgreSQL passes to a resource manager callback, with a
/// decoded record; the slice lives as long as the callback.
unsafe fn payload<'a>(record: *mut pg_sys::XLogReaderState) -> (u8, &'a [u8]) {
    // SAFETY: see above; main_data holds main_data_len bytes.
    unsafe {
        let decoded = (*record).record;
        let info = (*decoded).header.xl_info & !XLR_INFO_MASK;
        let data = std::slice::from_raw_parts(
            (*decoded).main_data.cast::<u8>(),
            (*decoded).main_data_len as usize,
        );
        (info, data)
    }
}

fn decode(info: u8, data: &[u8]) -> Option<LeaseRecord> {
    let bytes: &[u8; RECORD_SIZE] = data.try_into().ok()?;
    matches!(info, XLOG_LEASE | XLOG_FORGET)
        .then(|| LeaseRecord::decode(bytes).ok().flatten())
        .flatten()
}

#[pg_guard]
unsafe extern "C-unwind" fn redo(record: *mut pg_sys::XLogReaderState) {
    // SAFETY: called by PostgreSQL's redo loop with a decoded record of ours; the outermost
    // Rust frame.
    unsafe {
        errors::boundary(|| {
            let (info, data) = payload(record);
            let replay = REPLAY.get().expect("registered with the rmgr");
            match decode(info, data) {
                Some(rec) if info == XLOG_FORGET => (replay.forget)(&rec),
                Some(rec) => (replay.record)(&rec),
                None => error(
                    Code::ERRCODE_DATA_CORRUPTED,
                    format!(
                        "invalid snowflake_id lease WAL record (info {info:#x}, {} bytes)",
                        data.len()
                    ),
                )
                .fatal(),
            }
        })
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn cleanup() {
    // SAFETY: called once by the startup process when redo ends; the outermost Rust frame.
    unsafe { errors::boundary(|| (REPLAY.get().expect("registered with the rmgr").end)()) }
}

#[pg_guard]
unsafe extern "C-unwind" fn desc(buf: pg_sys::StringInfo, record: *mut pg_sys::XLogReaderState) {
    // SAFETY: as in redo; buf is the StringInfo PostgreSQL gives us to append to.
    unsafe {
        errors::boundary(|| {
            let (info, data) = payload(record);
            let text = match decode(info, data) {
                Some(r) if info == XLOG_FORGET => format!(
                    "{} db {} \"{}\" dropped",
                    r.key.kind,
                    r.key.db,
                    String::from_utf8_lossy(&r.key.name).replace('\0', "/")
                ),
                Some(r) => format!(
                    "{} db {} \"{}\" era {} end {}",
                    r.key.kind,
                    r.key.db,
                    String::from_utf8_lossy(&r.key.name).replace('\0', "/"),
                    r.lease.era,
                    r.lease.end
                ),
                None => "invalid".to_owned(),
            };
            let text = CString::new(text.replace('\0', "")).unwrap_or_default();
            // appendStringInfoString copies the NUL-terminated string into buf.
            pg_sys::appendStringInfoString(buf, text.as_ptr());
        })
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn identify(info: u8) -> *const c_char {
    const LEASE: &CStr = c"LEASE";
    const FORGET: &CStr = c"FORGET";
    match info & !XLR_INFO_MASK {
        XLOG_LEASE => LEASE.as_ptr(),
        XLOG_FORGET => FORGET.as_ptr(),
        _ => std::ptr::null(),
    }
}
