//! Every configuration setting, in one place. The README's GUC table mirrors this file.

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::OnceLock;

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::snowflake::epoch::{parse_epoch, DEFAULT_EPOCH_C, DEFAULT_EPOCH_MS};
use crate::snowflake::layout::{Layout, DEFAULT_NODE_BITS, MAX_NODE_BITS, MIN_NODE_BITS};

pub static NODE_ID: GucSetting<i32> = GucSetting::<i32>::new(0);
pub static NODE_BITS: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_NODE_BITS as i32);
pub static EPOCH: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(Some(DEFAULT_EPOCH_C));
pub static MAX_SEQUENCES: GucSetting<i32> = GucSetting::<i32>::new(128);
pub static MAX_CLOCK_AHEAD_MS: GucSetting<i32> = GucSetting::<i32>::new(10_000);
pub static GDID_AUTHORITY: GucSetting<i32> = GucSetting::<i32>::new(0);

/// The layout fixed at server start from `snowflake.node_bits` and `snowflake.epoch`.
static LAYOUT: OnceLock<Layout> = OnceLock::new();

/// Registers the settings. Only called while `shared_preload_libraries` is processed:
/// PostgreSQL refuses (FATAL) to define postmaster-level settings any later.
pub fn register() {
    GucRegistry::define_int_guc(
        c"snowflake.node_bits",
        c"Bits of a snowflake ID that hold the node number (7 to 13: 128 to 8192 nodes).",
        c"The counter takes the remaining 22 - node_bits bits. Fixed at server start.",
        &NODE_BITS,
        MIN_NODE_BITS as i32,
        MAX_NODE_BITS as i32,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    // Read back now: the node number's range depends on it.
    let node_bits = NODE_BITS.get() as u32;

    GucRegistry::define_int_guc(
        c"snowflake.node_id",
        c"Node number written into every snowflake ID this server generates.",
        c"Must be unique among all servers whose IDs meet. Range 0 .. 2^node_bits - 1.",
        &NODE_ID,
        0,
        (1 << node_bits) - 1,
        GucContext::Sighup,
        GucFlags::default(),
    );

    // SAFETY: the check hook is a plain function with the signature PostgreSQL expects; it
    // does not raise errors and only touches its arguments and the check-hook message globals.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"snowflake.epoch",
            c"Time from which snowflake IDs count milliseconds, e.g. '2025-01-01 00:00:00+00'.",
            c"ISO 8601; without an offset the time is UTC. Fixed at server start.",
            &EPOCH,
            GucContext::Postmaster,
            GucFlags::default(),
            Some(check_epoch),
            None,
            None,
        );
    }

    GucRegistry::define_int_guc(
        c"snowflake.max_sequences",
        c"How many named sequences shared memory holds: snowflake and gdid, all databases.",
        c"Each takes 320 bytes of shared memory.",
        &MAX_SEQUENCES,
        1,
        1 << 20,
        GucContext::Postmaster,
        GucFlags::default(),
    );

    GucRegistry::define_int_guc(
        c"snowflake.max_clock_ahead",
        c"How far a sequence's logical clock may run ahead of the wall clock.",
        c"Past it, generation waits up to 100 ms for the clock, then fails.",
        &MAX_CLOCK_AHEAD_MS,
        1,
        3_600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );

    GucRegistry::define_int_guc(
        c"gdid.authority",
        c"Authority (0 to 15) written into every gdid this server generates.",
        c"Must be unique among the servers that generate gdids of the same scope and sequence.",
        &GDID_AUTHORITY,
        0,
        15,
        GucContext::Suset,
        GucFlags::default(),
    );

    // SAFETY: plain calls PostgreSQL allows while libraries are preloaded; afterwards a
    // misspelt `snowflake.` or `gdid.` setting is an error instead of a silent placeholder.
    unsafe {
        pg_sys::MarkGUCPrefixReserved(c"snowflake".as_ptr());
        pg_sys::MarkGUCPrefixReserved(c"gdid".as_ptr());
    }

    // The check hook has refused anything that does not parse.
    let epoch = EPOCH
        .get()
        .and_then(|s| parse_epoch(s.to_str().ok()?).ok())
        .unwrap_or(DEFAULT_EPOCH_MS);
    let _ = LAYOUT.set(Layout::own(node_bits, epoch));
}

/// The server's layout, or `None` when the library was not preloaded.
pub fn layout() -> Option<&'static Layout> {
    LAYOUT.get()
}

// The two settings below are read on every generated ID. GucSetting::get also checks that it
// runs on the backend's main thread, which costs more than the read itself on this path.

pub fn node_id() -> u32 {
    // SAFETY: a backend has one thread, and PostgreSQL writes the variable only between
    // statements (when it processes a reload). The GUC's range is 0 .. 2^node_bits - 1.
    unsafe { *NODE_ID.as_ptr() as u32 }
}

pub fn max_clock_ahead_ms() -> u64 {
    // SAFETY: as in node_id; the range is 1 .. 3600000.
    unsafe { *MAX_CLOCK_AHEAD_MS.as_ptr() as u64 }
}

pub fn gdid_authority() -> u8 {
    GDID_AUTHORITY.get() as u8
}

#[pg_guard]
unsafe extern "C-unwind" fn check_epoch(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    _source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: PostgreSQL passes a valid pointer to the candidate value (NULL only for a
    // string GUC reset to a NULL boot value, which ours never is).
    let value = unsafe {
        if newval.is_null() || (*newval).is_null() {
            return false;
        }
        CStr::from_ptr(*newval)
    };
    let problem = match value.to_str().map(parse_epoch) {
        Ok(Ok(_)) => return true,
        Ok(Err(msg)) => msg,
        Err(_) => "the value is not valid UTF-8".to_string(),
    };
    let detail = CString::new(problem).unwrap_or_default();
    // SAFETY: GUC_check_errdetail_string is read by the GUC machinery right after we return
    // false; pstrdup copies into the current memory context, as GUC_check_errdetail does.
    unsafe {
        pg_sys::GUC_check_errdetail_string = pg_sys::pstrdup(detail.as_ptr());
    }
    false
}
