//! The floors of names whose relation this transaction made and generated from (the table of
//! every transaction's is `core::name_floors`): reserved with every lease such a relation takes, brought down at a
//! rollback to exactly what was handed out, read by the fallback of a fresh relation, and
//! forgotten when the transaction commits.
//!
//! This is what lets the transaction that makes the extension generate from the sequences it
//! makes (a first migration: `CREATE EXTENSION`, tables with DEFAULTs naming new sequences and
//! seed rows in one transaction), where the background worker cannot make them (it cannot
//! see the extension's schemas before they commit): if the transaction, or the savepoint in
//! which a relation was made, rolls back after values left it, the name's next relation
//! starts above them. Only such transactions get here (see `resolve`): `CREATE EXTENSION`
//! takes a superuser, so no other role can fill the table or plant a floor under a name.
//!
//! A lease reaches past what is handed out (a snowflake lease a window ahead of the clock, a
//! gdid lease a block of counters), so the floor is brought down at the rollback to the cache
//! entry's position: a migration rolled back again and again then starts where the clock is,
//! not a window further each time. Kept in shared memory: a restart forgets them
//! (docs/how-it-works.md says what holds then).

use std::cell::RefCell;

use pgrx::pg_sys::{self, Oid};

use crate::core::cache::Key;
use crate::core::gdid::counter::GdidState;
use crate::core::identity::{Kind, RelationName};
use crate::core::lease::{self, Lease};
use crate::core::name_floors::{FloorKey, NameFloors};
use crate::core::snowflake::snowflake_slot::SnowflakeState;
use crate::pg::errors::{error, Code};
use crate::pg::shmem::{self, InterruptibleLock};
use crate::sequences::{catalog, lookup};

/// A name this transaction reserved a floor of.
#[derive(Clone, Copy)]
struct Recorded {
    name: FloorKey,
    /// The relation that took the leases, and its cache entry.
    cache: Key,
    /// The subtransaction that made the relation: its rollback takes the relation.
    made_in: pg_sys::SubTransactionId,
    /// The highest lease it took.
    leased: i64,
    /// The floor the name had before (a migration rolled back earlier).
    before: Option<i64>,
}

thread_local! {
    static RECORDED: RefCell<Vec<Recorded>> = const { RefCell::new(Vec::new()) };
    /// Of those, the names to forget when the commit is done (decided before it).
    static COMMITTING: RefCell<Vec<FloorKey>> = const { RefCell::new(Vec::new()) };
}

pub fn install() {
    // SAFETY: called once from _PG_init in the postmaster; the callbacks live as long as the
    // process and its children.
    unsafe {
        pg_sys::RegisterXactCallback(Some(at_transaction_end), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(at_subtransaction_end), std::ptr::null_mut());
    }
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

/// As [`with_table`], for the end of a transaction, where nothing may raise: a plain LWLock
/// wait, on a lock held only for a scan of the table.
fn with_table_nothrow<R>(f: impl FnOnce(&mut NameFloors) -> R) -> R {
    let lock = shmem::name_floors_lock();
    // SAFETY: an LWLock of the extension's tranche, taken and released here; the table is
    // only used under it.
    unsafe {
        pg_sys::LWLockAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let r = f(&mut *shmem::name_floors());
        pg_sys::LWLockRelease(lock);
        r
    }
}

/// Before the relation of cache entry `cache`, of `kind`, takes lease `value`: if the current
/// transaction made the relation, the name's floor is raised to `value` first. Raises 55000,
/// before anything is leased, when the table has no room for another name.
pub fn before_lease(kind: Kind, cache: Key, value: i64) {
    let relid = Oid::from(cache.relid);
    let Some(made_in) = catalog::made_in_this_transaction(relid) else {
        return;
    };
    let Some(name) = key_of(kind, relid) else {
        return;
    };
    let known = RECORDED.with(|r| r.borrow().iter().any(|x| x.cache == cache));
    let recorded = with_table(|t| {
        let before = t.floor(&name);
        let r = t.record(&name, value).or_else(|_| {
            // Room from databases dropped since (a test suite's, say).
            t.forget_databases(|db| !database_exists(db));
            t.record(&name, value)
        });
        r.map(|()| before)
    });
    let Ok(before) = recorded else {
        error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "{} was created in the current transaction, and no more such sequences can be used before the server restarts",
                catalog::described(kind, relid)
            ),
        )
        .detail(format!(
            "What sequences made by first migrations that rolled back handed out is kept for {} names, all databases together.",
            crate::core::name_floors::CAPACITY
        ))
        .hint("Commit the transaction that created the extension first.")
        .raise();
    };
    RECORDED.with(|r| {
        let mut r = r.borrow_mut();
        match r.iter_mut().find(|x| x.cache == cache) {
            Some(x) => x.leased = x.leased.max(value),
            None if !known => r.push(Recorded {
                name,
                cache,
                made_in,
                leased: value,
                before,
            }),
            None => {}
        }
    });
}

fn database_exists(db: u32) -> bool {
    // SAFETY: a syscache lookup; the tuple is released before returning.
    unsafe {
        let t = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::DATABASEOID as _,
            pg_sys::Datum::from(db),
        );
        if t.is_null() {
            return false;
        }
        pg_sys::ReleaseSysCache(t);
        true
    }
}

/// The floor of the name of relation `relid` of `kind`: what relations of that name handed
/// out in transactions that did not commit.
pub fn floor(kind: Kind, relid: Oid) -> Option<i64> {
    shmem::cache()?; // not preloaded: no table
    let key = key_of(kind, relid)?;
    with_table(|t| t.floor(&key))
}

/// What relation `r` handed out, as a relation value (a lease that covers exactly that): from
/// its cache entry, if it is still there; else the highest lease it took. Nothing from a
/// relation that handed nothing out.
fn handed_out(r: &Recorded) -> Option<i64> {
    let Some(cache) = shmem::cache() else {
        return Some(r.leased);
    };
    let Some(at) = cache.find(r.cache) else {
        return Some(r.leased);
    };
    match r.name.kind {
        Kind::Snowflake => {
            let Some(seq) = cache.seq::<SnowflakeState>(at) else {
                return Some(r.leased);
            };
            let layout = seq.layout();
            let tick = seq.last_tick();
            (tick != 0).then(|| {
                lease::snowflake_to_value(layout.epoch_ms, (tick >> layout.counter_bits) + 1)
                    .min(r.leased)
            })
        }
        Kind::Gdid => {
            let Some(seq) = cache.seq::<GdidState>(at) else {
                return Some(r.leased);
            };
            let s = seq.stats();
            (s.last_counter != 0).then(|| {
                lease::gdid_to_value(Lease {
                    era: s.era,
                    end: s.last_counter + 1,
                })
                .min(r.leased)
            })
        }
    }
}

/// At the rollback of the relations of `gone`: each name's floor becomes exactly what its
/// relation handed out (or what it had before, if more).
fn rolled_back(gone: &[Recorded]) {
    if gone.is_empty() {
        return;
    }
    let floors: Vec<(FloorKey, Option<i64>)> = gone
        .iter()
        .map(|r| (r.name, handed_out(r).max(r.before)))
        .collect();
    with_table_nothrow(|t| {
        for (name, floor) in &floors {
            match floor {
                Some(v) => t.set(name, *v),
                None => t.forget(name),
            }
        }
    });
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
        // commits. An error here (a cancel) fails the commit, as a deferred trigger's would:
        // the transaction rolls back and the floors stay.
        XACT_EVENT_PRE_COMMIT | XACT_EVENT_PARALLEL_PRE_COMMIT => {
            let recorded = RECORDED.with(|r| std::mem::take(&mut *r.borrow_mut()));
            let held: Vec<FloorKey> = recorded
                .iter()
                .filter(|r| held_by_relation(r))
                .map(|r| r.name)
                .collect();
            COMMITTING.with(|c| *c.borrow_mut() = held);
        }
        // nothrow: plain LWLock calls on a lock held only for a scan of the table.
        XACT_EVENT_COMMIT | XACT_EVENT_PARALLEL_COMMIT => {
            let keys = COMMITTING.with(|c| std::mem::take(&mut *c.borrow_mut()));
            if !keys.is_empty() {
                with_table_nothrow(|t| keys.iter().for_each(|k| t.forget(k)));
            }
        }
        // A rollback keeps the floors, brought down to what was handed out. A prepared
        // transaction may still roll back: the same.
        XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT | XACT_EVENT_PREPARE => {
            let recorded = RECORDED.with(|r| std::mem::take(&mut *r.borrow_mut()));
            COMMITTING.with(|c| c.borrow_mut().clear());
            rolled_back(&recorded);
        }
        _ => {}
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn at_subtransaction_end(
    event: pg_sys::SubXactEvent::Type,
    subid: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    // SAFETY: the outermost Rust frame of the callback.
    unsafe {
        crate::pg::errors::boundary(|| {
            if event != pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
                return;
            }
            // The relations made in this subtransaction or one below it (a later one) go.
            let gone: Vec<Recorded> = RECORDED.with(|r| {
                let mut r = r.borrow_mut();
                let (gone, kept) = r.drain(..).partition(|x| x.made_in >= subid);
                *r = kept;
                gone
            });
            rolled_back(&gone);
        })
    }
}

/// Whether relation `r`, which took leases up to `r.leased` in this transaction, is the one
/// named by its name now and holds a lease at or above the name's floor, so that the floor is
/// no longer needed once the transaction commits. (A floor kept is never wrong, only kept.)
fn held_by_relation(r: &Recorded) -> bool {
    let Some(schema) = catalog::existing_schema(r.name.kind) else {
        return false;
    };
    if catalog::find(schema.oid, &r.name.name) != Some(Oid::from(r.cache.relid)) {
        return false;
    }
    with_table(|t| t.floor(&r.name)).is_none_or(|floor| r.leased >= floor)
}
