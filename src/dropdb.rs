//! A database that is dropped takes its sequences with it: their slots take new sequences
//! (see `registry`), their records leave the lease file, and a database that later gets the same
//! OID starts its sequences afresh (seeded from its tables, see `seed`) instead of inheriting
//! leases that were never its own.

use std::ffi::{c_int, c_void};

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Oid};

use crate::{errors, sequences};

static mut PREV_OBJECT_ACCESS_HOOK: pg_sys::object_access_hook_type = None;

/// Installs the hook. Called from `_PG_init` while preloading.
pub fn install_hook() {
    // SAFETY: _PG_init runs once, single-threaded, in the postmaster; chaining the previous
    // hook is how several libraries share it.
    unsafe {
        PREV_OBJECT_ACCESS_HOOK = pg_sys::object_access_hook;
        pg_sys::object_access_hook = Some(object_access);
    }
}

/// PostgreSQL calls it for DROP DATABASE (among many other events) once the database is
/// known to go: after the checks, before its files are removed.
#[pg_guard]
unsafe extern "C-unwind" fn object_access(
    access: pg_sys::ObjectAccessType::Type,
    class_id: Oid,
    object_id: Oid,
    sub_id: c_int,
    arg: *mut c_void,
) {
    // SAFETY: chains to the previous hook with the same arguments; the outermost Rust frame.
    unsafe {
        errors::boundary(|| {
            if let Some(prev) = PREV_OBJECT_ACCESS_HOOK {
                prev(access, class_id, object_id, sub_id, arg);
            }
            if access == pg_sys::ObjectAccessType::OAT_DROP
                && class_id == pg_sys::DatabaseRelationId
            {
                sequences::forget_database(object_id.to_u32());
            }
        })
    }
}
