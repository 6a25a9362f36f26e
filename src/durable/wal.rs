//! The lease's WAL records, through a custom WAL resource manager: they reach standbys with
//! the rest of the WAL and are replayed after a crash.
//!
//! The resource manager ID is 128, `RM_EXPERIMENTAL_ID`, the ID PostgreSQL sets aside for
//! extensions that have not claimed one on the PostgreSQL wiki yet. Another library using it
//! stops the server at start-up with an error naming both.

use std::ffi::{c_char, CStr, CString};

use pgrx::pg_sys;
use pgrx::prelude::*;

use super::lease;
use super::record::{LeaseRecord, RECORD_SIZE};
use crate::registry::Kind;

const RM_ID: pg_sys::RmgrId = pg_sys::RM_EXPERIMENTAL_ID as pg_sys::RmgrId;
/// The record type, in the high bits of xl_info (the low four belong to PostgreSQL).
const XLOG_LEASE: u8 = 0x10;
const XLR_INFO_MASK: u8 = 0x0F;

/// Registers the resource manager; only possible while preloading.
pub fn register() {
    let mut rmgr = pg_sys::RmgrData {
        rm_name: c"snowflake_id".as_ptr(),
        rm_redo: Some(redo),
        rm_desc: Some(desc),
        rm_identify: Some(identify),
        ..Default::default()
    };
    // SAFETY: called from _PG_init while shared_preload_libraries is processed; PostgreSQL
    // copies the struct, and rm_name points at a static string.
    // (A raw pointer: PostgreSQL 15 declares the parameter mutable, 18 const.)
    unsafe { pg_sys::RegisterCustomRmgr(RM_ID, &raw mut rmgr) };
}

/// Writes one lease record and waits until the WAL holding it is flushed.
pub fn log_and_flush(bytes: &[u8; RECORD_SIZE]) {
    // SAFETY: the standard insertion protocol; XLogRegisterData only reads `bytes`, which
    // outlive the XLogInsert that copies them.
    unsafe {
        pg_sys::XLogBeginInsert();
        pg_sys::XLogRegisterData(bytes.as_ptr().cast_mut().cast(), RECORD_SIZE as _);
        let lsn = pg_sys::XLogInsert(RM_ID, XLOG_LEASE);
        pg_sys::XLogFlush(lsn);
    }
}

/// The record's payload. SAFETY: `record` is the reader state PostgreSQL passes to a
/// resource manager callback, with a decoded record.
unsafe fn payload(record: *mut pg_sys::XLogReaderState) -> (u8, &'static [u8]) {
    // SAFETY: see above; main_data holds main_data_len bytes for the life of the callback
    // (the 'static is never allowed to escape it).
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
    (info == XLOG_LEASE)
        .then(|| LeaseRecord::decode(bytes).ok().flatten())
        .flatten()
}

#[pg_guard]
unsafe extern "C-unwind" fn redo(record: *mut pg_sys::XLogReaderState) {
    // SAFETY: called by PostgreSQL's redo loop with a decoded record of ours.
    let (info, data) = unsafe { payload(record) };
    match decode(info, data) {
        Some(rec) => lease::apply(&rec),
        None => ereport!(
            PgLogLevel::PANIC,
            PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
            format!(
                "snowflake_id: invalid lease WAL record (info {info:#x}, {} bytes)",
                data.len()
            )
        ),
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn desc(buf: pg_sys::StringInfo, record: *mut pg_sys::XLogReaderState) {
    // SAFETY: as in redo; buf is the StringInfo PostgreSQL gives us to append to.
    let (info, data) = unsafe { payload(record) };
    let text = match decode(info, data) {
        Some(r) if r.kind == Kind::Snowflake => format!(
            "snowflake db {} \"{}\" end_ms {}",
            r.db,
            String::from_utf8_lossy(&r.name),
            r.end
        ),
        Some(r) => format!(
            "gdid db {} \"{}\" era {} end {}",
            r.db,
            lease::display_gdid_key(&r.name),
            r.era,
            r.end
        ),
        None => "invalid".to_owned(),
    };
    let text = CString::new(text.replace('\0', "")).unwrap_or_default();
    // SAFETY: appendStringInfoString copies the NUL-terminated string into buf.
    unsafe { pg_sys::appendStringInfoString(buf, text.as_ptr()) };
}

#[pg_guard]
unsafe extern "C-unwind" fn identify(info: u8) -> *const c_char {
    const LEASE: &CStr = c"LEASE";
    if info & !XLR_INFO_MASK == XLOG_LEASE {
        LEASE.as_ptr()
    } else {
        std::ptr::null()
    }
}
