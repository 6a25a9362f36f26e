//! Dropping sequences: `snowflake_drop_sequence` and `gdid_drop_sequence`, and every sequence
//! of a database that `DROP DATABASE` drops.
//!
//! The functions take effect when their transaction commits, like `DROP SEQUENCE`: a rolled-back drop (or one in a subtransaction that rolls
//! back) changes nothing. The drops a transaction asked for are kept in the backend until its
//! commit, which carries them out (see `durable::recovery::forget`) just before the commit
//! record: a failure there aborts the transaction like any other error.
//!
//! Until then the sequence goes on working in every session, this one included. A
//! transaction that drops sequences cannot be prepared for two-phase commit, since its drops
//! live in this backend.
//!
//! A database that is dropped takes its sequences with it (an object access hook sees it go,
//! after the checks and before its files are removed): their slots take new sequences, their
//! records leave the lease file, and a database that later gets the same OID starts its
//! sequences afresh (seeded from its tables) instead of inheriting leases never its own.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Oid};

use crate::durable::forget::forget;
use crate::durable::lease::LeaseLock;
use crate::errors::{self, error, Code};
use crate::identity::{Key, Kind, OwnedKey, SequenceName};
use crate::registry::{Registry, SlotRef};
use crate::{lookup, shmem};

/// A drop asked for, and the (sub)transaction nesting level that asked.
struct Pending {
    key: OwnedKey,
    level: i32,
}

thread_local! {
    /// The drops of the current transaction. (A backend is one thread.)
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
    static REGISTERED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Drops sequence `name` of the current database when the transaction commits, if it exists:
/// the next use of the name then starts a new sequence, seeded (see `seed`). True if it
/// exists.
pub fn drop_sequence(registry: &Registry<'static>, name: SequenceName<'_>) -> bool {
    lookup::check_name(&name);
    let key_name = name.key_name();
    let key = Key {
        db: lookup::current_db(),
        kind: name.kind(),
        name: key_name.as_bytes(),
    };
    if registry.find(key).is_none() {
        return false;
    }
    at_commit(key.to_owned());
    true
}

/// Drops the sequence of `key` when the current transaction commits.
fn at_commit(key: OwnedKey) {
    if !REGISTERED.get() {
        // SAFETY: registers this backend's callbacks once; they live as long as the process.
        unsafe {
            pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut());
            pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut());
        }
        REGISTERED.set(true);
    }
    // SAFETY: a plain read of the transaction state.
    let level = unsafe { pg_sys::GetCurrentTransactionNestLevel() };
    PENDING.with_borrow_mut(|p| {
        if !p.iter().any(|d| d.key == key) {
            p.push(Pending { key, level });
        }
    });
}

/// Carries out the drops of a committing transaction.
fn drop_pending() {
    let pending = PENDING.take();
    if pending.is_empty() {
        return;
    }
    let Some(registry) = shmem::registry() else {
        return;
    };
    let _lock = LeaseLock::acquire();
    for d in pending {
        if let Some(at) = registry.find(d.key.key()) {
            forget(&registry, at);
        }
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn xact_callback(event: pg_sys::XactEvent::Type, _arg: *mut c_void) {
    // SAFETY: the outermost Rust frame of a callback PostgreSQL calls.
    unsafe {
        errors::boundary(|| match event {
            pg_sys::XactEvent::XACT_EVENT_PRE_COMMIT => drop_pending(),
            pg_sys::XactEvent::XACT_EVENT_PRE_PREPARE if PENDING.with_borrow(|p| !p.is_empty()) => {
                error(
                    Code::ERRCODE_FEATURE_NOT_SUPPORTED,
                    "cannot PREPARE a transaction that has dropped snowflake_id sequences",
                )
                .raise()
            }
            pg_sys::XactEvent::XACT_EVENT_ABORT => {
                PENDING.take();
            }
            _ => {}
        })
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    _sub: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut c_void,
) {
    // SAFETY: a plain read of the transaction state, in the subtransaction that ends.
    let level = unsafe { pg_sys::GetCurrentTransactionNestLevel() };
    PENDING.with_borrow_mut(|p| match event {
        pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB => p.retain(|d| d.level < level),
        pg_sys::SubXactEvent::SUBXACT_EVENT_COMMIT_SUB => {
            for d in p.iter_mut().filter(|d| d.level >= level) {
                d.level = level - 1;
            }
        }
        _ => {}
    });
}

/// Drops every sequence of database `db`, which is being dropped.
fn forget_database(db: u32) {
    let Some(registry) = shmem::registry() else {
        return;
    };
    let _lock = LeaseLock::acquire();
    for kind in [Kind::Snowflake, Kind::Gdid] {
        let found: Vec<SlotRef> = registry.of_database(db, kind).collect();
        for at in found {
            forget(&registry, at);
        }
    }
}

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
                forget_database(object_id.to_u32());
            }
        })
    }
}
