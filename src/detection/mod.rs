//! Noticing two servers with the same node number or authority where their values meet: in
//! the logical replication apply workers of this server.
//!
//! A value is new where a row is inserted into a column whose DEFAULT generates it: the
//! server that inserted the row made it. Such rows arriving through logical replication fire
//! `snowflake_arrival_trigger()` (`arrivals`; `watch` gives every such table the trigger),
//! which counts each value's node number or authority per replication origin, adding to the
//! shared [`Sightings`] at most every [`FLUSH_MS`]. When a count shows a conflict, the worker
//! writes a WARNING (again every ten minutes while it lasts) and, for this server's own
//! number, sets the flag that `snowflake.refuse_shared_node` acts on.
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

/// How many runs a worker keeps counting at once before adding the oldest to the table.
const MAX_PENDING: usize = 8;

/// The values of the current run of one (what, value, origin), not yet in the shared table.
struct Pending {
    key: Key,
    rows: u64,
    since_ms: i64,
}

/// Process-local state of an apply worker: its current runs, whether its origin (one per
/// worker) is counted at all, and whether its transactions flush the runs when they commit.
struct Worker {
    pending: Vec<Pending>,
    origin: Option<(u16, bool)>,
    flushes_at_commit: bool,
}

/// The one [`Worker`] of this process.
struct ThisProcess(UnsafeCell<Worker>);

// SAFETY: a backend is one thread; nothing else ever reaches the cell.
unsafe impl Sync for ThisProcess {}

static WORKER: ThisProcess = ThisProcess(UnsafeCell::new(Worker {
    pending: Vec::new(),
    origin: None,
    flushes_at_commit: false,
}));

/// The replication origin of this session's changes: a subscription's, in an apply worker.
#[inline(always)]
fn session_origin() -> u16 {
    // SAFETY: a plain read of a backend-global variable.
    unsafe { pg_sys::replorigin_session_origin }
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

/// One value with `what` = `value` arrived through `origin` (a counted one).
fn count(what: What, value: u16, origin: u16) {
    // SAFETY: WORKER is only touched by this process's one thread, here, never reentrantly
    // (nothing below calls back into count).
    let worker = unsafe { &mut *WORKER.0.get() };
    let key = Key {
        what,
        value,
        origin,
    };
    let now = wallclock::coarse_unix_ms();
    // A row carries a node number and an authority, each a run of its own: one pending run
    // per key, so that values of alternating keys do not flush at every value.
    if let Some(i) = worker.pending.iter().position(|p| p.key == key) {
        let p = &mut worker.pending[i];
        if now - p.since_ms < FLUSH_MS {
            p.rows += 1;
            return;
        }
        let p = worker.pending.swap_remove(i);
        flush(&p, now);
    } else if worker.pending.len() == MAX_PENDING {
        let p = worker.pending.swap_remove(0);
        flush(&p, now);
    }
    // The first value of a run goes to the table at once, so a conflict shows within a run.
    let p = Pending {
        key,
        rows: 1,
        since_ms: now,
    };
    flush(&p, now);
    worker.pending.push(Pending { rows: 0, ..p });
    if !worker.flushes_at_commit {
        worker.flushes_at_commit = true;
        // SAFETY: registers a callback with PostgreSQL for the rest of this process's life,
        // once; the function pointer is 'static.
        unsafe { pg_sys::RegisterXactCallback(Some(at_commit), std::ptr::null_mut()) };
    }
}

/// Adds what the runs of this process counted to the shared table before each transaction
/// commits, so that no count waits for the next arrival (which may never come: the session
/// ends). Before the commit, not after it: the WARNING of a conflict names subscriptions,
/// which takes the catalog.
#[pg_guard]
unsafe extern "C-unwind" fn at_commit(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    if event != pg_sys::XactEvent::XACT_EVENT_PRE_COMMIT {
        return;
    }
    let now = wallclock::coarse_unix_ms();
    let mut i = 0;
    loop {
        // SAFETY: WORKER is only touched by this process's one thread; the borrow ends before
        // flush, which does not touch it.
        let worker = unsafe { &mut *WORKER.0.get() };
        let Some(p) = worker.pending.get_mut(i) else {
            return;
        };
        i += 1;
        if p.rows == 0 {
            continue;
        }
        let run = Pending { ..*p };
        p.rows = 0;
        flush(&run, now);
    }
}

#[cold]
fn flush(p: &Pending, now_ms: i64) {
    let Some(sightings) = shmem::sightings() else {
        return;
    };
    if !sightings.record(p.key, p.rows, now_ms) {
        return; // full: what it holds is still reported
    }
    if let Some(c) = sightings.conflict(p.key.what, p.key.value, own()) {
        if c.origins.contains(&THIS_SERVER) {
            sightings.mark_own_shared(c.what);
        }
        if sightings.due_for_warning(&c, now_ms) {
            warn(&c);
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
/// shared. Cheap enough for the fast paths (two loads).
#[inline(always)]
pub fn refused(what: What) -> bool {
    shmem::sightings().is_some_and(|s| s.own_shared(what)) && guc::refuse_shared_node()
}
