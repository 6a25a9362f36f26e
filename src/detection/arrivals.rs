//! The trigger that sees new values arrive: `snowflake_arrival_trigger()`, fired after each
//! row a logical replication apply worker inserts into (or deletes from) a table with a
//! generating column (see `watch` for which tables have it, and why it fires only there).
//!
//! A generating column is one whose DEFAULT calls a generator (`defaults::generating`): a
//! value a replicated INSERT brings into it was made by the server that inserted the row.
//! Updates, deletes, and keys copied into other columns (foreign keys) are never counted,
//! whoever made the key: they say nothing about who generates now.
//!
//! Two kinds of insert are not new values either. An UPDATE that moves a row to another
//! partition arrives as a DELETE and an INSERT of the same key (published that way, or routed
//! so on this server): the trigger fires on DELETE too and keeps the last keys deleted, and
//! an INSERT of one of them is the row moving, not counted. And rows that `COPY` loads (the
//! initial copy of a pglogical subscription, made by a session with the subscription's
//! origin; a native one's table synchronisation origin is recognised by its name) are old
//! rows, not counted.
//!
//! The columns of each table are looked up once per process and kept until the relation
//! cache says the table or one of its partitioned ancestors changed.

use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::rc::Rc;

use pgrx::pg_sys::{self, Datum, Oid};

use crate::detection::generating::{self, Holds};
use crate::guc;
use crate::pg::errors::{self, error, Code};
use crate::pg::fmgr::Call;
use crate::pg::gdid_datum as datum;
use crate::pg::spi;

use crate::core::sightings::What;

/// The generating columns of one table, and the relations whose change makes them stale.
struct Columns {
    columns: Rc<[(i16, What)]>,
    ancestors: Vec<Oid>,
}

struct Cache {
    tables: HashMap<Oid, Columns>,
    /// Counts invalidations, so that a lookup during which one arrived is not kept.
    invalidations: u64,
    registered: bool,
}

/// The one [`Cache`] of this process.
struct ThisProcess(UnsafeCell<Option<Cache>>);

// SAFETY: a backend is one thread; nothing else ever reaches the cell.
unsafe impl Sync for ThisProcess {}

static CACHE: ThisProcess = ThisProcess(UnsafeCell::new(None));

/// The cache; its users never hold the reference across a call that can invalidate it
/// (a catalog read processes invalidation messages, which call [`invalidate`]).
fn cache() -> &'static mut Cache {
    // SAFETY: see ThisProcess; callers keep the borrow short (above).
    let cell = unsafe { &mut *CACHE.0.get() };
    cell.get_or_insert_with(|| Cache {
        tables: HashMap::new(),
        invalidations: 0,
        registered: false,
    })
}

/// The trigger function's body: counts the row's generating values when an apply session
/// inserts it, and hands the trigger manager back the row.
pub fn fired(call: Call<'_>) -> Datum {
    let context = call.context();
    // SAFETY: a Node's tag is its first field; the trigger manager passes a TriggerData.
    if context.is_null() || unsafe { (*context).type_ } != pg_sys::NodeTag::T_TriggerData {
        error(
            Code::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
            "snowflake_arrival_trigger() was not called by the trigger manager",
        )
        .raise();
    }
    // SAFETY: checked above: the call's context is the trigger manager's TriggerData.
    let (event, tuple, new_tuple, relation) = unsafe {
        let data = context.cast::<pg_sys::TriggerData>();
        (
            (*data).tg_event,
            (*data).tg_trigtuple,
            (*data).tg_newtuple,
            (*data).tg_relation,
        )
    };
    if event & pg_sys::TRIGGER_EVENT_ROW == 0 {
        return Datum::from(0);
    }
    let op = event & pg_sys::TRIGGER_EVENT_OPMASK;
    if op == pg_sys::TRIGGER_EVENT_INSERT || op == pg_sys::TRIGGER_EVENT_DELETE {
        if let Some(origin) = crate::detection::counted_origin().filter(|_| !copying()) {
            row(relation, tuple, origin, op == pg_sys::TRIGGER_EVENT_DELETE);
        }
    }
    // What a BEFORE trigger returns is the row to write: the row as it came.
    if op == pg_sys::TRIGGER_EVENT_UPDATE {
        Datum::from(new_tuple)
    } else {
        Datum::from(tuple)
    }
}

/// Whether the statement running is a `COPY`.
fn copying() -> bool {
    // SAFETY: ActivePortal is NULL or the portal running now (a session's statement; apply
    // workers run none).
    unsafe {
        let portal = pg_sys::ActivePortal;
        !portal.is_null() && (*portal).commandTag == pg_sys::CommandTag::CMDTAG_COPY
    }
}

/// The generating values of a row inserted (counted, unless just deleted: a move) or deleted
/// (kept for that comparison).
fn row(relation: pg_sys::Relation, tuple: pg_sys::HeapTuple, origin: u16, deleted: bool) {
    // SAFETY: the trigger's relation, open while it fires.
    let (table, desc) = unsafe { ((*relation).rd_id, (*relation).rd_att) };
    // A counted reference, not a borrow of the cache: counting can read the catalog (a
    // WARNING names the subscription), which can invalidate the cache.
    let found = cache().tables.get(&table).map(|c| Rc::clone(&c.columns));
    let columns = match found {
        Some(columns) => columns,
        None => look_up(table),
    };
    for &(attnum, what) in columns.iter() {
        let mut isnull = false;
        // SAFETY: the row inserted or deleted, described by its relation's descriptor; attnum is
        // one of the relation's columns (from the catalog, dropped columns excluded).
        let value = unsafe { pg_sys::heap_getattr(tuple, i32::from(attnum), desc, &mut isnull) };
        if isnull {
            continue;
        }
        let (key, number) = match what {
            What::Node => {
                let id = value.value() as u64;
                let Some(parts) = guc::server().and_then(|s| s.layout.decode(id).ok()) else {
                    continue;
                };
                (u128::from(id), parts.node as u16)
            }
            What::Authority => {
                // SAFETY: a non-null value of a gdid column.
                let g = unsafe { datum::read(value) };
                (gdid_key(g.to_bytes()), u16::from(g.authority()))
            }
        };
        let value = Deleted { what, key, origin };
        if deleted {
            recently_deleted().remember(value);
        } else if !recently_deleted().take(value) {
            crate::detection::count(what, number, origin);
        }
    }
}

/// A gdid's 12 bytes as a number, for comparing keys.
fn gdid_key(bytes: [u8; 12]) -> u128 {
    let mut padded = [0; 16];
    padded[4..].copy_from_slice(&bytes);
    u128::from_be_bytes(padded)
}

/// A generating value a replicated DELETE removed.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Deleted {
    what: What,
    key: u128,
    origin: u16,
}

/// How many deleted values are kept: a move's INSERT follows its DELETE in the same change or
/// the next, so a few are enough.
const DELETED_KEPT: usize = 16;

/// The last values deleted, the oldest overwritten first.
struct RecentlyDeleted {
    kept: [Option<Deleted>; DELETED_KEPT],
    next: usize,
}

impl RecentlyDeleted {
    fn remember(&mut self, d: Deleted) {
        self.kept[self.next] = Some(d);
        self.next = (self.next + 1) % DELETED_KEPT;
    }

    /// Whether `d` was deleted (and forgets it).
    fn take(&mut self, d: Deleted) -> bool {
        match self.kept.iter_mut().find(|k| **k == Some(d)) {
            Some(k) => {
                *k = None;
                true
            }
            None => false,
        }
    }
}

/// The one [`RecentlyDeleted`] of this process.
struct DeletedInThisProcess(UnsafeCell<RecentlyDeleted>);

// SAFETY: a backend is one thread; nothing else ever reaches the cell.
unsafe impl Sync for DeletedInThisProcess {}

static DELETED: DeletedInThisProcess = DeletedInThisProcess(UnsafeCell::new(RecentlyDeleted {
    kept: [None; DELETED_KEPT],
    next: 0,
}));

fn recently_deleted() -> &'static mut RecentlyDeleted {
    // SAFETY: see DeletedInThisProcess; each use is one call that touches nothing else.
    unsafe { &mut *DELETED.0.get() }
}

/// The generating columns of `table`, from the catalog; kept unless an invalidation
/// arrived while they were read.
#[cold]
fn look_up(table: Oid) -> Rc<[(i16, What)]> {
    register_callback();
    let before = cache().invalidations;
    let (columns, ancestors) = spi::connect(|conn| generating::generating(conn, table));
    let columns: Rc<[(i16, What)]> = columns
        .into_iter()
        .map(|(attnum, holds)| {
            let what = match holds {
                Holds::Integers => What::Node,
                Holds::Gdids => What::Authority,
            };
            (attnum, what)
        })
        .collect();
    let cache = cache();
    if cache.invalidations == before {
        cache.tables.insert(
            table,
            Columns {
                columns: Rc::clone(&columns),
                ancestors,
            },
        );
    }
    columns
}

fn register_callback() {
    if cache().registered {
        return;
    }
    // SAFETY: registers a callback for the life of the process (once: the flag); it only
    // touches this process's cache.
    unsafe {
        errors::guarded(|| {
            pg_sys::CacheRegisterRelcacheCallback(Some(invalidate), Datum::from(0));
            // A domain's DEFAULT changing changes its columns' tables, unannounced.
            pg_sys::CacheRegisterSyscacheCallback(
                pg_sys::SysCacheIdentifier::TYPEOID as std::ffi::c_int,
                Some(types_changed),
                Datum::from(0),
            );
        });
    }
    cache().registered = true;
}

/// The type cache's callback: some type changed; every table's columns are looked up again.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn types_changed(_arg: Datum, _cache: i32, _hash: u32) {
    let cache = cache();
    cache.invalidations += 1;
    cache.tables.clear();
}

/// The relation cache's callback: `relid` changed (every relation, if InvalidOid).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn invalidate(_arg: Datum, relid: Oid) {
    let cache = cache();
    cache.invalidations += 1;
    if relid == pg_sys::InvalidOid {
        cache.tables.clear();
    } else {
        cache
            .tables
            .retain(|&table, c| table != relid && !c.ancestors.contains(&relid));
    }
}
