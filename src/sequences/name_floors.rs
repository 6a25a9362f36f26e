//! The floors of names whose relation a transaction made and generated from (see
//! `core::name_floors`): recorded with every lease such a relation takes, read by the fallback
//! of a fresh relation, forgotten when the transaction that recorded them commits.
//!
//! This is what lets the transaction that makes a sequence generate from it (a first
//! migration: `CREATE EXTENSION`, tables with DEFAULTs naming new sequences and seed rows in
//! one transaction), where the background worker cannot make it (it cannot see the
//! extension's schemas before they commit): if the transaction rolls back after values left
//! it, the name's next relation starts above them. Kept in shared memory, so a restart
//! forgets them (docs/how-it-works.md says what holds then).

use std::cell::RefCell;

use pgrx::pg_sys::{self, Oid};

use crate::core::identity::{Kind, RelationName};
use crate::core::name_floors::{FloorKey, NameFloors};
use crate::pg::errors::{error, Code};
use crate::pg::shmem::{self, InterruptibleLock};
use crate::sequences::{catalog, lookup};

thread_local! {
    /// The names this transaction recorded a floor of, each with the relation that did and
    /// the highest lease it took: forgotten at its commit if that relation is the name's then.
    static RECORDED: RefCell<Vec<(FloorKey, Oid, i64)>> = const { RefCell::new(Vec::new()) };
    /// Of those, the names to forget when the commit is done (decided before it).
    static COMMITTING: RefCell<Vec<FloorKey>> = const { RefCell::new(Vec::new()) };
}

pub fn install() {
    // SAFETY: called once from _PG_init in the postmaster; the callback lives as long as the
    // process and its children.
    unsafe { pg_sys::RegisterXactCallback(Some(at_transaction_end), std::ptr::null_mut()) };
}

/// The key of relation `relid` of `kind`, if it still exists.
fn key_of(kind: Kind, relid: Oid) -> Option<FloorKey> {
    let name = catalog::relation_name(relid)?;
    Some(FloorKey {
        db: lookup::current_db(),
        kind,
        name: RelationName::from_bytes(&name)?,
    })
}

/// Runs `f` on the table under its lock (a wait that a cancel ends).
fn with_table<R>(f: impl FnOnce(&mut NameFloors) -> R) -> R {
    let _lock = InterruptibleLock::acquire(shmem::name_floors_lock());
    // SAFETY: the table lives in shared memory as long as the server, and is only used under
    // its lock, held here exclusively.
    f(unsafe { &mut *shmem::name_floors() })
}

/// Before relation `relid` of `kind` takes lease `value`: if the current transaction made the
/// relation, `value` becomes the floor of its name. Raises 55000, before anything is leased,
/// when the table has no room for another name.
pub fn before_lease(kind: Kind, relid: Oid, value: i64) {
    if !catalog::made_in_this_transaction(relid) {
        return;
    }
    let Some(key) = key_of(kind, relid) else {
        return;
    };
    if with_table(|t| t.record(&key, value)).is_err() {
        error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "{} was created in the current transaction, and no more such sequences can be used before the server restarts",
                catalog::described(kind, relid)
            ),
        )
        .detail(format!(
            "What sequences made by transactions that rolled back handed out is kept for {} names.",
            crate::core::name_floors::CAPACITY
        ))
        .hint("Commit the transaction that created it first.")
        .raise();
    }
    RECORDED.with(|r| {
        let mut r = r.borrow_mut();
        match r.iter_mut().find(|(k, rel, _)| *k == key && *rel == relid) {
            Some((_, _, leased)) => *leased = (*leased).max(value),
            None => r.push((key, relid, value)),
        }
    });
}

/// The floor of the name of relation `relid` of `kind`: the highest lease a relation of that
/// name took in a transaction that has not committed (see the module's comment).
pub fn floor(kind: Kind, relid: Oid) -> Option<i64> {
    shmem::registry()?; // not preloaded: no table
    let key = key_of(kind, relid)?;
    with_table(|t| t.floor(&key))
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn at_transaction_end(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    // SAFETY: the outermost Rust frame of the callback.
    unsafe { crate::pg::errors::boundary(|| on_transaction_end(event)) }
}

fn on_transaction_end(event: pg_sys::XactEvent::Type) {
    use pg_sys::XactEvent::*;
    match event {
        // Still in the transaction: which names' relations will hold their floors once it
        // commits. A relation made in a subtransaction that rolled back is gone, and the name
        // keeps its floor (so does one made again without reaching it).
        XACT_EVENT_PRE_COMMIT | XACT_EVENT_PARALLEL_PRE_COMMIT => {
            let recorded = RECORDED.with(|r| std::mem::take(&mut *r.borrow_mut()));
            if recorded.is_empty() {
                return;
            }
            // An error here (a cancel) fails the commit, as a deferred trigger's would: the
            // transaction rolls back and every floor stays.
            let held: Vec<FloorKey> = recorded
                .into_iter()
                .filter(|&(k, relid, leased)| held_by_relation(&k, relid, leased))
                .map(|(k, _, _)| k)
                .collect();
            COMMITTING.with(|c| *c.borrow_mut() = held);
        }
        // nothrow: plain LWLock calls on a lock held only for a scan of the table.
        XACT_EVENT_COMMIT | XACT_EVENT_PARALLEL_COMMIT => {
            let keys = COMMITTING.with(|c| std::mem::take(&mut *c.borrow_mut()));
            if keys.is_empty() {
                return;
            }
            let lock = shmem::name_floors_lock();
            // SAFETY: an LWLock of the extension's tranche, taken and released here (a plain
            // acquire: nothing may raise at commit); the table is only used under it.
            unsafe {
                pg_sys::LWLockAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
                let table = &mut *shmem::name_floors();
                for k in &keys {
                    table.forget(k);
                }
                pg_sys::LWLockRelease(lock);
            }
        }
        // A rollback keeps the floors: that is what they are for. A prepared transaction may
        // still roll back.
        XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT | XACT_EVENT_PREPARE => {
            RECORDED.with(|r| r.borrow_mut().clear());
            COMMITTING.with(|c| c.borrow_mut().clear());
        }
        _ => {}
    }
}

/// Whether relation `relid`, which took leases up to `leased` in this transaction, is the one
/// named by `key` now and holds a lease at or above the name's floor, so that the floor is no
/// longer needed once the transaction commits. (A floor kept is never wrong, only kept.)
fn held_by_relation(key: &FloorKey, relid: Oid, leased: i64) -> bool {
    let Some(schema) = catalog::existing_schema(key.kind) else {
        return false;
    };
    if catalog::find(schema.oid, &key.name) != Some(relid) {
        return false;
    }
    with_table(|t| t.floor(key)).is_none_or(|floor| leased >= floor)
}
