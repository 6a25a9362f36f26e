//! `snowflake_drop_sequence` and `gdid_drop_sequence` take effect when their transaction
//! commits, like `DROP SEQUENCE`: a rolled-back drop (or one in a subtransaction that rolls
//! back) changes nothing. The drops a transaction asked for are kept in the backend until its
//! commit, which carries them out (see `durable::recovery::forget`) just before the commit
//! record: a failure there aborts the transaction like any other error.
//!
//! Until then the sequence goes on working in every session, this one included. A
//! transaction that drops sequences cannot be prepared for two-phase commit, since its drops
//! live in this backend.

use std::cell::RefCell;
use std::ffi::c_void;

use pgrx::pg_guard;
use pgrx::pg_sys;

use crate::durable::lease::LeaseLock;
use crate::durable::recovery;
use crate::errors::{self, error, Code};
use crate::registry::OwnedKey;
use crate::shmem;

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

/// Drops the sequence of `key` when the current transaction commits.
pub fn at_commit(key: OwnedKey) {
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
            recovery::forget(&registry, at);
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
