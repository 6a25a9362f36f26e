//! The watermark of a sequence: below it, every value this server made belongs to a
//! transaction that has ended (see `core::inflight` for why reading the sequence first and the
//! values in flight second makes that so), and every value made later is at or above it.
//!
//! Where the sequence stands comes from its cache entry, or, when it has none, from the lease
//! its relation holds (the next entry continues above it), read before the cache is looked at:
//! an entry made after the look continues above that lease.

use std::sync::atomic::{fence, Ordering};

use pgrx::pg_sys::{self, Oid};

use crate::core::cache::Key;
use crate::core::identity::{Kind, SequenceName};
use crate::core::inflight::{Held, Holding, Seen, Value};
use crate::pg::errors::{error, Code};
use crate::pg::{procs, shmem};
use crate::sequences::catalog::{self, Opened};
use crate::sequences::generate::{self, Generator};
use crate::sequences::resolve::{bad_name, not_ours};
use crate::sequences::{durable, lookup, privileges};

/// The watermark of sequence `name` of the current database, its values stamped as `g`
/// stamps them.
pub fn watermark<G: Generator>(g: G, name: SequenceName<'_>) -> Value {
    // SAFETY: a plain read of backend-global state.
    if unsafe { pg_sys::RecoveryInProgress() } {
        error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "cannot take the watermark of {} during recovery",
                name.described()
            ),
        )
        .detail("Only the server that generates a sequence's values knows which are in flight.")
        .hint("Take the watermark on the primary.")
        .raise();
    }
    let (relid, opened) = open(name);
    let lease = durable::read_locked(relid).unwrap_or_else(|()| missing(name));
    let key = Key {
        db: lookup::current_db(),
        relid: relid.to_u32(),
        filenode: opened.filenode,
    };
    let cache = lookup::cache();
    let stands = cache
        .find(key)
        .and_then(|at| cache.seq::<G::State>(at))
        .map_or_else(
            || g.stored_position(&opened, lease),
            |seq| generate::stands(g, seq),
        );
    drop(cache);
    // The values in flight after where the sequence stands (`lowest_held` fences first).
    stands.min(lowest_held(Held {
        db: key.db,
        relid: key.relid,
        kind: name.kind(),
    }))
}

/// The sequence's relation, locked against a DROP for the rest of the transaction, if the
/// caller may read it (as `pg_sequence_last_value`).
fn open(name: SequenceName<'_>) -> (Oid, Opened) {
    let relname = name.relation_name().unwrap_or_else(|bad| bad_name(bad));
    let kind = name.kind();
    let schema = catalog::schema(kind);
    let relid = catalog::find(schema.oid, &relname).unwrap_or_else(|| missing(name));
    // SAFETY: a lock of the current transaction; an ERROR (lock timeout, cancel) aborts it.
    unsafe { pg_sys::LockRelationOid(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE) };
    // Renamed or dropped between the lookup and the lock: as if it were not there. A relation
    // of the schema that is not a sequence of this extension: the generators' error.
    if catalog::find(schema.oid, &relname) != Some(relid) {
        missing(name);
    }
    let opened = match catalog::open(kind, relid) {
        Some(Ok(o)) => o,
        Some(Err(why)) => not_ours(name, relid, why),
        None => missing(name),
    };
    // SAFETY: a plain read of the current user.
    if !privileges::may_read(relid, unsafe { pg_sys::GetUserId() }) {
        error(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied for {}", name.described()),
        )
        .hint("The watermark needs SELECT or USAGE on the sequence.")
        .raise();
    }
    (relid, opened)
}

fn missing(name: SequenceName<'_>) -> ! {
    error(
        Code::ERRCODE_UNDEFINED_TABLE,
        format!("{} does not exist", name.described()),
    )
    .hint("A sequence is made by the first value generated under its name.")
    .raise()
}

/// The lowest value a transaction in flight holds of `held` (`Value::MAX`: none).
fn lowest_held(held: Held) -> Value {
    let Some(holders) = shmem::holders() else {
        crate::pg::errors::not_preloaded()
    };
    let mut low = Value::MAX;
    holders.holding_after_fence(held, |s| {
        if holds(&s) {
            low = low.min(s.value.unwrap_or(0));
        }
    });
    if !unknown_prepared(held.db).is_empty() {
        low = 0;
    }
    low
}

/// Whether what a reader saw still holds: a process's entries until it clears them, a
/// prepared transaction's while it is prepared (its PGPROC still has its xid, which then is
/// running: an xid alone could be another transaction's after the xids wrap around).
fn holds(s: &Seen) -> bool {
    s.xid == 0 || (procs::pid_and_xid(s.holder).1 == s.xid && procs::running(s.xid))
}

/// The prepared transactions of database `db` that hold values nobody knows: prepared before
/// the server (re)started. Read in this order: each one's PGPROC, then the processes
/// preparing, then its holder; a transaction whose entries move meanwhile is found at one or
/// the other (see `Holders::move_to_prepared`).
pub fn unknown_prepared(db: u32) -> Vec<(usize, u32)> {
    let Some(holders) = shmem::holders() else {
        return vec![];
    };
    let prepared = procs::prepared_in(Oid::from(db));
    if prepared.is_empty() {
        return prepared;
    }
    fence(Ordering::SeqCst);
    let preparing: Vec<u32> = (0..holders.capacity()).map(|n| holders.xid_of(n)).collect();
    prepared
        .into_iter()
        // A PGPROC keeps the xid of a prepared transaction that has ended until it is taken
        // again: only one still running holds anything.
        .filter(|&(n, xid)| {
            holders.xid_of(n) != xid && !preparing.contains(&xid) && procs::running(xid)
        })
        .collect()
}

/// One row of a holders view.
pub struct HolderRow {
    pub relid: Option<Oid>,
    pub pid: Option<i32>,
    pub xid: Option<u32>,
    pub prepared: bool,
    pub value: Option<Value>,
    pub since_ms: Option<i64>,
}

/// What holds the watermarks of the current database's sequences of `kind` back: one row per
/// transaction and sequence (`relid` `None`: every sequence, for an overflow or a prepared
/// transaction nobody knows), of sequences the caller may read.
pub fn holder_rows(kind: Kind) -> Vec<HolderRow> {
    let Some(holders) = shmem::holders() else {
        crate::pg::errors::not_preloaded()
    };
    let db = lookup::current_db();
    // SAFETY: a plain read of the current user.
    let user = unsafe { pg_sys::GetUserId() };
    let mut rows = vec![];
    holders.scan(db, |h, s| {
        let relid = match h {
            Holding::One(h) if h.kind == kind => Some(Oid::from(h.relid)),
            Holding::All(k) if k == kind => None,
            _ => return,
        };
        if !holds(&s) {
            return;
        }
        if relid.is_some_and(|r| !privileges::may_read(r, user)) {
            return;
        }
        let (pid, xid) = procs::pid_and_xid(s.holder);
        rows.push(HolderRow {
            relid,
            pid: (s.xid == 0 && pid != 0).then_some(pid),
            xid: Some(if s.xid != 0 { s.xid } else { xid }).filter(|&x| x != 0),
            prepared: s.xid != 0,
            value: s.value,
            since_ms: (s.since_ms != 0).then_some(s.since_ms),
        });
    });
    rows.extend(unknown_prepared(db).into_iter().map(|(_, xid)| HolderRow {
        relid: None,
        pid: None,
        xid: Some(xid),
        prepared: true,
        value: None,
        since_ms: None,
    }));
    rows
}
