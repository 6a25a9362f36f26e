//! The WAL records of releases 0.2.0 and 0.3.0, through their custom WAL resource manager, ID
//! 128 (`RM_EXPERIMENTAL_ID`): replayed into the lease file (see `store`) by a server whose
//! WAL may still hold some (crash recovery after one of those releases ran, a standby of a
//! server that ran them). Nothing writes such records any more.
//!
//! The manager is registered only when the data directory holds a lease file: a server that
//! never ran those releases leaves ID 128 to other extensions, and its standbys replay every
//! WAL record of this extension (plain sequence updates) without the library.

use std::ffi::{c_char, CStr, CString};
use std::path::Path;

use pgrx::pg_guard;
use pgrx::pg_sys;

use crate::legacy::record::{LeaseRecord, RECORD_SIZE};
use crate::legacy::store::Store;
use crate::pg::errors::{self, error, Code};

const RM_ID: pg_sys::RmgrId = pg_sys::RM_EXPERIMENTAL_ID as pg_sys::RmgrId;

/// The record types, in the high bits of xl_info (the low four belong to PostgreSQL): a
/// lease, and a dropped sequence (the record then carries its key).
const XLOG_LEASE: u8 = 0x10;
const XLOG_FORGET: u8 = 0x20;
const XLR_INFO_MASK: u8 = 0x0F;

/// Registers the resource manager if this data directory has a lease file; only possible
/// while preloading (the postmaster runs in the data directory by then).
pub fn register_if_needed() {
    if !Path::new(&Store::in_data_dir().path()).exists() {
        return;
    }
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
            let store = Store::in_data_dir();
            let done = match decode(info, data) {
                Some(rec) if info == XLOG_FORGET => store.clear(&rec.key),
                Some(rec) => store.upsert(&rec),
                None => error(
                    Code::ERRCODE_DATA_CORRUPTED,
                    format!(
                        "invalid snowflake_id lease WAL record (info {info:#x}, {} bytes)",
                        data.len()
                    ),
                )
                .fatal(),
            };
            if let Err(e) = done {
                error(
                    Code::ERRCODE_IO_ERROR,
                    format!(
                        "could not write lease file \"{}\": {e}",
                        store.path().display()
                    ),
                )
                .fatal()
            }
        })
    }
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
