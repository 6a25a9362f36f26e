//! Noticing two servers with the same node number or authority where their values meet: in
//! the logical replication apply workers of this server.
//!
//! A value is new where a row is inserted into a column whose DEFAULT generates it: the
//! server that inserted the row made it. Such rows arriving through logical replication fire
//! `snowflake_arrival_trigger()` (`arrivals`; `watch` gives every such table the trigger),
//! which counts each value's node number or authority per replication origin, adding to the
//! shared [`Sightings`] when its transaction commits (that it was seen, at once). When a count
//! shows a conflict, the worker writes a WARNING (again every ten minutes while it lasts) and,
//! for this server's own number, sets the flag that `snowflake.refuse_shared_node` acts on.
//!
//! Updates, deletes and keys in other columns (foreign keys) are not counted: a server
//! updating a row another server made is normal in every mesh. The initial copy of a
//! subscription (its table synchronisation origins) is not counted either, since a copy of
//! old rows says nothing about who generates now.

use std::cell::UnsafeCell;
use std::ffi::{c_char, CStr};

use pgrx::{pg_guard, pg_sys};

use crate::pg::errors::{error, Code};
pub mod arrivals;
pub mod generating;
pub mod watch;

use crate::core::sightings::{Conflict, Key, Own, What, FLUSH_MS, THIS_SERVER};
use crate::core::wallclock;
use crate::{guc, pg::shmem};

/// How many runs a worker keeps timing at once (see [`count`]).
const MAX_PENDING: usize = 8;

/// The current run of one (what, value, origin): when its sighting last reached the shared
/// table.
struct Pending {
    key: Key,
    since_ms: i64,
}

/// Values of one key counted by the current transaction at one subtransaction nesting level:
/// they reach the shared table when the transaction commits, and go if it (or that
/// subtransaction) rolls back.
struct Uncommitted {
    key: Key,
    level: i32,
    rows: u64,
}

/// Process-local state of an apply worker: its current runs, what its transaction counted,
/// whether its origin (one per worker) is counted at all, and whether its transaction
/// callbacks are registered.
struct Worker {
    pending: Vec<Pending>,
    uncommitted: Vec<Uncommitted>,
    origin: Option<(u16, bool)>,
    callbacks: bool,
}

/// The one [`Worker`] of this process.
struct ThisProcess(UnsafeCell<Worker>);

// SAFETY: a backend is one thread; nothing else ever reaches the cell.
unsafe impl Sync for ThisProcess {}

static WORKER: ThisProcess = ThisProcess(UnsafeCell::new(Worker {
    pending: Vec::new(),
    uncommitted: Vec::new(),
    origin: None,
    callbacks: false,
}));

/// The replication origin of this session's changes: a subscription's, in an apply worker.
#[inline(always)]
fn session_origin() -> u16 {
    crate::pg::pgcompat::session_replication_origin()
}

/// The replication origin of this session if its inserts are counted: an apply worker's (a
/// subscription's), not a table synchronisation's.
pub(crate) fn counted_origin() -> Option<u16> {
    let origin = session_origin();
    if origin == 0 || origin == u16::MAX {
        return None;
    }
    // SAFETY: WORKER is only touched by this process's one thread, never reentrantly.
    let worker = unsafe { &mut *WORKER.0.get() };
    match worker.origin {
        Some((o, counted)) if o == origin => counted.then_some(origin),
        _ => {
            let counted = !is_table_sync(origin);
            // SAFETY: as above; is_table_sync has returned.
            let worker = unsafe { &mut *WORKER.0.get() };
            worker.origin = Some((origin, counted));
            counted.then_some(origin)
        }
    }
}

/// One value with `what` = `value` arrived through `origin` (a counted one). It is counted
/// when its transaction commits; the sighting (which servers' values meet, and so a conflict)
/// reaches the shared table at once for the first value of a run, then at most every
/// [`FLUSH_MS`], so that a conflict shows within a run, however long its transaction.
fn count(what: What, value: u16, origin: u16) {
    let key = Key {
        what,
        value,
        origin,
    };
    // SAFETY: a plain read of transaction state.
    let level = unsafe { pg_sys::GetCurrentTransactionNestLevel() };
    // SAFETY: WORKER is only touched by this process's one thread, here, never reentrantly
    // (nothing below calls back into count); the borrow ends before flush.
    let worker = unsafe { &mut *WORKER.0.get() };
    if !worker.callbacks {
        // SAFETY: registers callbacks with PostgreSQL for the rest of this process's life,
        // once (marked only once both are); the function pointers are 'static.
        unsafe {
            pg_sys::RegisterXactCallback(Some(at_transaction_end), std::ptr::null_mut());
            pg_sys::RegisterSubXactCallback(Some(at_subtransaction_end), std::ptr::null_mut());
        }
        worker.callbacks = true;
    }
    match worker
        .uncommitted
        .iter_mut()
        .rev()
        .find(|u| u.key == key && u.level == level)
    {
        Some(u) => u.rows += 1,
        None => worker.uncommitted.push(Uncommitted {
            key,
            level,
            rows: 1,
        }),
    }
    let now = wallclock::coarse_unix_ms();
    // A row carries a node number and an authority, each a run of its own: one run per key,
    // so that values of alternating keys do not reach the table at every value.
    match worker.pending.iter_mut().find(|p| p.key == key) {
        Some(p) if now - p.since_ms < FLUSH_MS => return,
        Some(p) => p.since_ms = now,
        None => {
            if worker.pending.len() == MAX_PENDING {
                worker.pending.swap_remove(0);
            }
            worker.pending.push(Pending { key, since_ms: now });
        }
    }
    let uncommitted = worker
        .uncommitted
        .iter()
        .filter(|u| u.key == key)
        .map(|u| u.rows)
        .sum();
    flush(key, 0, uncommitted, now);
}

/// Adds what the current transaction counted to the shared table before it commits (or is
/// prepared: its values have arrived, and a prepared transaction is nearly always committed),
/// and forgets it when it rolls back. Before the commit, not after it: the WARNING of a
/// conflict names subscriptions, which takes the catalog.
#[pg_guard]
unsafe extern "C-unwind" fn at_transaction_end(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::XactEvent::*;
    // SAFETY: WORKER is only touched by this process's one thread; the taken vector is owned
    // here, and flush does not touch WORKER.
    let worker = unsafe { &mut *WORKER.0.get() };
    match event {
        XACT_EVENT_PRE_COMMIT | XACT_EVENT_PRE_PREPARE => {
            let now = wallclock::coarse_unix_ms();
            for u in std::mem::take(&mut worker.uncommitted) {
                flush(u.key, u.rows, 0, now);
            }
        }
        XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT => worker.uncommitted.clear(),
        _ => {}
    }
}

/// A subtransaction that rolls back takes back what it counted; one that commits hands it to
/// its parent.
#[pg_guard]
unsafe extern "C-unwind" fn at_subtransaction_end(
    event: pg_sys::SubXactEvent::Type,
    _sub: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::SubXactEvent::*;
    // SAFETY: a plain read of transaction state: the ending subtransaction's level.
    let level = unsafe { pg_sys::GetCurrentTransactionNestLevel() };
    // SAFETY: WORKER is only touched by this process's one thread.
    let worker = unsafe { &mut *WORKER.0.get() };
    match event {
        SUBXACT_EVENT_ABORT_SUB => worker.uncommitted.retain(|u| u.level < level),
        SUBXACT_EVENT_COMMIT_SUB => {
            // Into the parent's entry of the same key, if it has one: the list stays one entry
            // per key and level, however many subtransactions come and go.
            let ended: Vec<Uncommitted> = {
                let (ended, kept) = std::mem::take(&mut worker.uncommitted)
                    .into_iter()
                    .partition(|u| u.level >= level);
                worker.uncommitted = kept;
                ended
            };
            for e in ended {
                match worker
                    .uncommitted
                    .iter_mut()
                    .find(|u| u.key == e.key && u.level == level - 1)
                {
                    Some(u) => u.rows += e.rows,
                    None => worker.uncommitted.push(Uncommitted {
                        level: level - 1,
                        ..e
                    }),
                }
            }
        }
        _ => {}
    }
}

/// Adds `rows` values of `key` (0: only that it was seen) to the shared table, and reports a
/// conflict they show, counting `uncommitted` more values of the current transaction in its
/// message.
#[cold]
fn flush(key: Key, rows: u64, uncommitted: u64, now_ms: i64) {
    let Some(sightings) = shmem::sightings() else {
        return;
    };
    if !sightings.record(key, rows, now_ms) {
        return; // full: what it holds is still reported
    }
    if let Some(c) = sightings.conflict(key.what, key.value, own()) {
        if c.origins.contains(&THIS_SERVER) {
            sightings.mark_own_shared(c.what);
        }
        if sightings.due_for_warning(&c, now_ms) {
            warn(&Conflict {
                rows: c.rows + uncommitted,
                ..c
            });
        }
    }
}

/// This server's node number and authority (the apply worker's settings are the server's;
/// a claimed number while it is held).
pub fn own() -> Own {
    let (node, authority) = crate::node::own();
    Own { node, authority }
}

fn warn(c: &Conflict) {
    let (setting, noun) = match c.what {
        What::Node => ("snowflake.node_id", "node number"),
        What::Authority => ("gdid.authority", "authority"),
    };
    let from: Vec<String> = c.origins.iter().map(|&o| describe_origin(o)).collect();
    let own = c.origins.contains(&THIS_SERVER);
    error(
        Code::ERRCODE_WARNING,
        if own {
            format!(
                "{noun} {} of this server ({setting}) also arrives from another server, through {}",
                c.value,
                from.iter()
                    .filter(|f| f.as_str() != "this server")
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        } else {
            format!(
                "two servers use {noun} {}: values with it arrive through {}",
                c.value,
                from.join(" and ")
            )
        },
    )
    .detail(format!(
        "So far {} value(s) with it; values of two servers with one {setting} can repeat.",
        c.rows
    ))
    .hint(format!(
        "Give every server that generates its own {setting}. SELECT * FROM snowflake_node_conflicts \
         lists what this server has seen."
    ))
    .log(true);
}

/// `subscription "name"` for the origin of a native subscription, `replication origin "name"`
/// otherwise (pglogical names its own), `this server` for [`THIS_SERVER`].
pub fn describe_origin(origin: u16) -> String {
    if origin == THIS_SERVER {
        return "this server".to_owned();
    }
    let Some(name) = origin_name(origin) else {
        return format!("replication origin {origin}");
    };
    if let Some(sub) = name
        .strip_prefix("pg_")
        .and_then(|oid| oid.parse::<u32>().ok())
        .and_then(subscription_name)
    {
        return format!("subscription \"{sub}\"");
    }
    format!("replication origin \"{name}\"")
}

/// A native subscription's table synchronisation origin, `pg_<subscription>_<relation>`.
fn is_table_sync(origin: u16) -> bool {
    origin_name(origin).is_some_and(|name| {
        let mut parts = name.split('_');
        parts.next() == Some("pg")
            && parts.next().is_some_and(|s| s.parse::<u32>().is_ok())
            && parts.next().is_some_and(|s| s.parse::<u32>().is_ok())
            && parts.next().is_none()
    })
}

fn origin_name(origin: u16) -> Option<String> {
    let mut name: *mut c_char = std::ptr::null_mut();
    // SAFETY: replorigin_by_oid with missing_ok looks the origin up in the catalog (there is a
    // transaction: a value is being applied or a view read) and sets `name` to a palloc'd
    // string if it exists.
    let found = unsafe { pg_sys::replorigin_by_oid(origin, true, &mut name) };
    if !found || name.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string, set by replorigin_by_oid when found.
    let name = unsafe { CStr::from_ptr(name) };
    Some(name.to_string_lossy().into_owned())
}

unsafe extern "C-unwind" {
    // pg_subscription.h; not in pgrx's bindings for every version.
    fn get_subscription_name(subid: pg_sys::Oid, missing_ok: bool) -> *mut c_char;
}

fn subscription_name(oid: u32) -> Option<String> {
    // SAFETY: with missing_ok a catalog lookup that returns NULL or a palloc'd name; guarded
    // like pgrx's own bindings, so an error cannot jump over Rust frames.
    let name =
        unsafe { pg_sys::ffi::pg_guard_ffi_boundary(|| get_subscription_name(oid.into(), true)) };
    if name.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string when not NULL.
    let name = unsafe { CStr::from_ptr(name) };
    Some(name.to_string_lossy().into_owned())
}

/// The ERROR of a generator on a server whose node number (authority) is known to be shared,
/// when `snowflake.refuse_shared_node` is on.
pub fn refuse_if_shared(what: What) {
    if !refused(what) {
        return;
    }
    let setting = match what {
        What::Node => "snowflake.node_id",
        What::Authority => "gdid.authority",
    };
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("{setting} of this server is used by another server too"),
    )
    .detail(
        "Values carrying it arrived through logical replication from another server \
         (snowflake_node_conflicts); values of both could repeat.",
    )
    .hint(format!(
        "Give one of the servers another {setting} and restart it; with \
         snowflake.refuse_shared_node on, generation stops until then."
    ))
    .raise();
}

/// Whether generation must refuse: the option is on and this server's number is known to be
/// shared. Cheap enough for the fast paths: one load while the option is off (its default).
#[inline(always)]
pub fn refused(what: What) -> bool {
    guc::refuse_shared_node() && shmem::sightings().is_some_and(|s| s.own_shared(what))
}
