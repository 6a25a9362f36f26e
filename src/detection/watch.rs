//! Which tables have the trigger that counts arriving values (`arrivals`): every plain table
//! with a generating column (`generating`), and only those.
//!
//! The trigger is an internal one, as PostgreSQL's own foreign-key triggers are: `pg_dump`
//! does not dump it, `\d` does not list it, and only a superuser can disable it. It fires
//! AFTER INSERT OR DELETE FOR EACH ROW (a DELETE and an INSERT of one key are a row moving
//! between partitions, see `arrivals`), `ENABLE REPLICA`: only where `session_replication_role` is
//! `replica`, as in logical replication apply workers (native and pglogical). A local insert
//! passes it by with one comparison; an AFTER trigger, unlike a BEFORE one, leaves `COPY`
//! its multi-row inserts. It depends on its function automatically, so that it goes with
//! the extension.
//!
//! Tables get it when the catalog changes in a way that can make a column generating or stop
//! it: a DEFAULT stored or dropped (CREATE TABLE, `ALTER COLUMN ... SET DEFAULT`, `LIKE ...
//! INCLUDING DEFAULTS`, a restore), a partition attached or detached (a partition's column is
//! generating when its partitioned ancestor's DEFAULT is), a table created or altered (a
//! column of a domain whose DEFAULT generates; `SET LOGGED` makes a table that can be
//! replicated), a domain's DEFAULT changed. PostgreSQL's object access hook
//! says which relations; at the end of the utility statement (`utility`), with the catalog
//! changes visible, each is brought in line. A partitioned table has no rows of its own: its
//! leaf partitions get the trigger. `ALTER TABLE ... ENABLE TRIGGER ALL` (which `pg_dump
//! --disable-triggers` writes after loading data) would make it fire on every local insert
//! and never in an apply worker: it is set back to `ENABLE REPLICA` (a disabled one is left
//! disabled).
//!
//! Tables that existed before (an update from 0.2.0) get it from `snowflake_watch_tables()`.

use std::cell::UnsafeCell;
use std::ffi::{c_int, CString};

use pgrx::pg_sys::{self, Oid};

use crate::detection::generating;
use crate::pg::spi::{self, Connection, EXTENSION_FUNCTIONS};
use crate::pg::{errors, pgcompat};

/// The base of the trigger's name; PostgreSQL appends the trigger's OID to an internal one.
const TRIGGER_NAME: &std::ffi::CStr = c"snowflake_arrivals";

/// What the trigger fires on, as `pg_trigger.tgtype` has it: AFTER (no BEFORE bit) INSERT OR
/// DELETE FOR EACH ROW.
const EVENTS: i16 = (pg_sys::TRIGGER_TYPE_INSERT | pg_sys::TRIGGER_TYPE_DELETE) as i16;
const TGTYPE: i64 = pg_sys::TRIGGER_TYPE_ROW as i64 | EVENTS as i64;

// Fixed OIDs of catalogs that pgrx's bindings leave out (catalog/pg_attrdef.h, pg_inherits.h).
const ATTR_DEFAULT_RELATION_ID: Oid = Oid::from_u32(2604);
const INHERITS_RELATION_ID: Oid = Oid::from_u32(2611);

/// What the object access hook has seen during the current statement.
#[derive(Default)]
struct Pending {
    /// Relations whose generating columns may have changed.
    relations: Vec<Oid>,
    /// Triggers enabled or disabled.
    triggers: Vec<Oid>,
    /// Types altered (a domain's DEFAULT).
    types: Vec<Oid>,
}

/// The one [`Pending`] of this process.
struct ThisProcess(UnsafeCell<Option<Pending>>);

// SAFETY: a backend is one thread; nothing else ever reaches the cell.
unsafe impl Sync for ThisProcess {}

static PENDING: ThisProcess = ThisProcess(UnsafeCell::new(None));

/// The pending set; callers hold the borrow only for a push or a take.
fn pending() -> &'static mut Pending {
    // SAFETY: see ThisProcess; no caller keeps the borrow across a call into PostgreSQL.
    unsafe { &mut *PENDING.0.get() }.get_or_insert_with(Pending::default)
}

/// The object access hook's part (see `hooks`): notes which relations, triggers and types a
/// statement changes.
pub fn on_access(access: pg_sys::ObjectAccessType::Type, class: Oid, object: Oid, _sub: c_int) {
    use pg_sys::ObjectAccessType::{OAT_DROP, OAT_POST_ALTER, OAT_POST_CREATE};
    match access {
        // PostgreSQL passes the table of a new DEFAULT (and the column as `sub`).
        OAT_POST_CREATE if class == ATTR_DEFAULT_RELATION_ID => {
            pending().relations.push(object);
        }
        OAT_DROP if class == ATTR_DEFAULT_RELATION_ID => {
            // SAFETY: reads pg_attrdef, as deleting the default is about to; InvalidOid for
            // one that is gone. An ERROR (cancel, out of memory) is raised through the guard.
            let column = unsafe { errors::guarded(|| GetAttrDefaultColumnAddress(object)) };
            if column.objectId != pg_sys::InvalidOid {
                pending().relations.push(column.objectId);
            }
        }
        OAT_POST_ALTER if class == INHERITS_RELATION_ID => {
            pending().relations.push(object);
        }
        // A table created (a column of a domain with a DEFAULT has no default of its own), a
        // column added, a table altered (SET LOGGED, a rewrite).
        OAT_POST_CREATE | OAT_POST_ALTER if class == pg_sys::RelationRelationId => {
            pending().relations.push(object);
        }
        // ALTER DOMAIN ... SET DEFAULT: the tables with columns of the domain.
        OAT_POST_ALTER if class == pg_sys::TypeRelationId => {
            pending().types.push(object);
        }
        OAT_POST_ALTER if class == pg_sys::TriggerRelationId => {
            pending().triggers.push(object);
        }
        _ => {}
    }
}

/// Called before a top-level utility statement: what a failed statement left is forgotten.
pub fn before_statement() {
    *pending() = Pending::default();
}

/// Called after each utility statement: brings the tables it changed in line.
pub fn after_statement() {
    let mut p = std::mem::take(pending());
    if p.relations.is_empty() && p.triggers.is_empty() && p.types.is_empty() {
        return;
    }
    // SAFETY: plain reads of transaction state; CommandCounterIncrement makes the statement's
    // catalog changes visible to the queries below, as between the parts of one ALTER TABLE.
    unsafe {
        if !pg_sys::IsTransactionState() {
            return;
        }
        errors::guarded(|| pg_sys::CommandCounterIncrement());
    }
    spi::connect(|conn| {
        let Some(function) = trigger_function(conn) else {
            return;
        };
        p.relations.extend(tables_with_types(conn, &p.types));
        // SAFETY: a plain read of the current user.
        let user = unsafe { pg_sys::GetUserId() };
        for (table, permanent) in leaves(conn, &p.relations) {
            // Only the statement's own tables: a domain's owner changing its DEFAULT does not
            // get to create, drop or re-enable triggers on (nor lock) other roles' tables,
            // which `snowflake_watch_tables()` or their owners' next DDL bring in line.
            if pgcompat::class_ownercheck(table, user) {
                bring_in_line(conn, table, permanent, function);
            }
        }
        for trigger in p.triggers {
            enable_replica(conn, trigger, function);
        }
    });
    // The triggers created, dropped and re-enabled above were seen by the hook too.
    *pending() = Pending::default();
}

/// Gives every table with a generating column the trigger (and sets back any enabled for
/// local inserts), and takes it from tables that have none left; the number of triggers
/// created.
pub fn watch_all() -> i32 {
    spi::connect(|conn| {
        let Some(function) = trigger_function(conn) else {
            return 0;
        };
        // A column's own DEFAULT or its domain's (see `generating`), and the tables that
        // have the trigger (one whose domain's DEFAULT no longer generates loses it).
        let query = CString::new(format!(
            "SELECT t.tgrelid FROM pg_catalog.pg_trigger t
              WHERE t.tgfoid = {}::pg_catalog.oid AND t.tgisinternal
             UNION
             SELECT d.rel
               FROM ({}) d
               JOIN ({EXTENSION_FUNCTIONS}) p ON p.oid = d.func
                AND p.proname IN ('snowflake_next', 'gdid_next')",
            function.to_u32(),
            generating::DEFAULTS_CALLING
        ))
        .expect("no NUL in the query");
        let relations: Vec<Oid> = {
            let rows = conn.select(&query, 0);
            (0..rows.len()).filter_map(|r| rows.oid(r, 1)).collect()
        };
        let mut created = 0;
        for (table, permanent) in leaves(conn, &relations) {
            if bring_in_line(conn, table, permanent, function) == Some(true) {
                created += 1;
            }
            if let Some((trigger, _)) = trigger_on(conn, table, function) {
                enable_replica(conn, trigger, function);
            }
        }
        created
    })
}

/// The OID of `snowflake_arrival_trigger()`, if this database has the extension at a
/// version that has it.
fn trigger_function(conn: &mut Connection) -> Option<Oid> {
    let query = CString::new(format!(
        "SELECT p.oid FROM ({EXTENSION_FUNCTIONS}) p WHERE p.proname = 'snowflake_arrival_trigger'"
    ))
    .expect("no NUL in the query");
    conn.select(&query, 1).oid(0, 1)
}

/// The tables with a column of one of `types`.
fn tables_with_types(conn: &mut Connection, types: &[Oid]) -> Vec<Oid> {
    if types.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = types.iter().map(|o| o.to_u32().to_string()).collect();
    let query = CString::new(format!(
        "SELECT DISTINCT attrelid FROM pg_catalog.pg_attribute
          WHERE atttypid = ANY ('{{{}}}'::pg_catalog.oid[]) AND attnum > 0 AND NOT attisdropped",
        list.join(",")
    ))
    .expect("no NUL in the query");
    let rows = conn.select(&query, 0);
    (0..rows.len()).filter_map(|r| rows.oid(r, 1)).collect()
}

/// The plain tables among `relations` and the leaf partitions of partitioned ones, each with
/// whether it is permanent (only those are replicated, so only those keep the trigger; a
/// table made unlogged loses it). (`pg_partition_tree` knows only tables in a partition tree.)
fn leaves(conn: &mut Connection, relations: &[Oid]) -> Vec<(Oid, bool)> {
    if relations.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = relations.iter().map(|o| o.to_u32().to_string()).collect();
    let query = CString::new(format!(
        "WITH r(relid) AS (SELECT * FROM pg_catalog.unnest('{{{}}}'::pg_catalog.oid[]))
         SELECT r.relid, c.relpersistence OPERATOR(pg_catalog.=) 'p'
           FROM r JOIN pg_catalog.pg_class c ON c.oid = r.relid
          WHERE c.relkind = 'r'
         UNION
         SELECT t.relid::pg_catalog.oid, c.relpersistence OPERATOR(pg_catalog.=) 'p'
           FROM r, pg_catalog.pg_partition_tree(r.relid) t
           JOIN pg_catalog.pg_class c ON c.oid = t.relid
          WHERE t.isleaf AND c.relkind = 'r'",
        list.join(",")
    ))
    .expect("no NUL in the query");
    let rows = conn.select(&query, 0);
    (0..rows.len())
        .filter_map(|r| Some((rows.oid(r, 1)?, rows.bool(r, 2)?)))
        .collect()
}

/// This extension's trigger on `table`, if it has one, and whether it fires on what this
/// version's does (one made by an earlier build may not).
fn trigger_on(conn: &mut Connection, table: Oid, function: Oid) -> Option<(Oid, bool)> {
    let query = CString::new(format!(
        "SELECT oid, tgtype::pg_catalog.int8 FROM pg_catalog.pg_trigger
          WHERE tgrelid = {} AND tgfoid = {} AND tgisinternal",
        table.to_u32(),
        function.to_u32()
    ))
    .expect("no NUL in the query");
    let rows = conn.select(&query, 1);
    Some((rows.oid(0, 1)?, rows.i64(0, 2)? == TGTYPE))
}

/// Creates or drops the trigger of `table` as its columns and persistence require:
/// Some(true) if created, Some(false) if dropped, None if it was right.
fn bring_in_line(
    conn: &mut Connection,
    table: Oid,
    permanent: bool,
    function: Oid,
) -> Option<bool> {
    let generating = permanent && !generating::generating(conn, table).0.is_empty();
    match (generating, trigger_on(conn, table, function)) {
        (true, None) => {
            create(table, function);
            Some(true)
        }
        (true, Some((trigger, false))) => {
            drop_trigger(trigger);
            create(table, function);
            Some(true)
        }
        (false, Some((trigger, _))) => {
            drop_trigger(trigger);
            Some(false)
        }
        _ => None,
    }
}

fn create(table: Oid, function: Oid) {
    // SAFETY: a CreateTrigStmt made as the parser would make one for `CREATE TRIGGER ...
    // AFTER INSERT OR DELETE ON table FOR EACH ROW EXECUTE FUNCTION function()`, but internal: the
    // relation and function are given by OID, so neither name is looked up. CreateTrigger
    // takes the lock it needs on the table. The dependency on the function is then made
    // automatic (see the module's documentation).
    unsafe {
        errors::guarded(|| {
            let stmt = pg_sys::palloc0(std::mem::size_of::<pg_sys::CreateTrigStmt>())
                .cast::<pg_sys::CreateTrigStmt>();
            (*stmt).type_ = pg_sys::NodeTag::T_CreateTrigStmt;
            (*stmt).trigname = TRIGGER_NAME.as_ptr().cast_mut();
            (*stmt).row = true;
            (*stmt).timing = pg_sys::TRIGGER_TYPE_AFTER as i16;
            (*stmt).events = EVENTS;
            let trigger = pg_sys::CreateTriggerFiringOn(
                stmt,
                c"".as_ptr(),
                table,
                pg_sys::InvalidOid,
                pg_sys::InvalidOid,
                pg_sys::InvalidOid,
                function,
                pg_sys::InvalidOid,
                std::ptr::null_mut(),
                true,
                false,
                pg_sys::TRIGGER_FIRES_ON_REPLICA as std::ffi::c_char,
            );
            // The dependency rows just made become visible to the scan that removes one.
            pg_sys::CommandCounterIncrement();
            pg_sys::deleteDependencyRecordsForClass(
                pg_sys::TriggerRelationId,
                trigger.objectId,
                pg_sys::ProcedureRelationId,
                pg_sys::DependencyType::DEPENDENCY_NORMAL as std::ffi::c_char,
            );
            let referenced = pg_sys::ObjectAddress {
                classId: pg_sys::ProcedureRelationId,
                objectId: function,
                objectSubId: 0,
            };
            pg_sys::recordDependencyOn(
                &trigger,
                &referenced,
                pg_sys::DependencyType::DEPENDENCY_AUTO,
            );
        });
    }
}

fn drop_trigger(trigger: Oid) {
    let address = pg_sys::ObjectAddress {
        classId: pg_sys::TriggerRelationId,
        objectId: trigger,
        objectSubId: 0,
    };
    // SAFETY: deletes the trigger through the dependency machinery, as DROP TRIGGER does.
    unsafe {
        errors::guarded(|| {
            pg_sys::performDeletion(
                &address,
                pg_sys::DropBehavior::DROP_RESTRICT,
                pg_sys::PERFORM_DELETION_INTERNAL as c_int,
            )
        });
    }
}

/// Sets `trigger`, if it is this extension's and enabled for local inserts ('O' or 'A'),
/// back to firing on replica only.
fn enable_replica(conn: &mut Connection, trigger: Oid, function: Oid) {
    let query = CString::new(format!(
        "SELECT tgrelid, tgname::pg_catalog.text FROM pg_catalog.pg_trigger
          WHERE oid = {} AND tgfoid = {} AND tgenabled IN ('O', 'A')",
        trigger.to_u32(),
        function.to_u32()
    ))
    .expect("no NUL in the query");
    let found = {
        let rows = conn.select(&query, 1);
        rows.oid(0, 1).zip(rows.text(0, 2))
    };
    let Some((table, name)) = found else { return };
    let Ok(name) = CString::new(name) else { return };
    // SAFETY: the table is opened with the lock ALTER TABLE ... ENABLE TRIGGER takes and
    // closed keeping it until the end of the transaction, as ALTER TABLE does.
    unsafe {
        errors::guarded(|| {
            let lock = pg_sys::ShareRowExclusiveLock as pg_sys::LOCKMODE;
            let rel = pg_sys::relation_open(table, lock);
            set_fires_on_replica(rel, name.as_ptr(), lock);
            pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        });
    }
}

/// `ALTER TABLE rel ENABLE REPLICA TRIGGER name`, for a trigger that is not a partition's
/// clone (no parent, no recursion).
///
/// # Safety
/// `rel` is open with `lock`; `name` names one of its triggers.
unsafe fn set_fires_on_replica(rel: pg_sys::Relation, name: *const std::ffi::c_char, lock: i32) {
    let replica = pg_sys::TRIGGER_FIRES_ON_REPLICA as std::ffi::c_char;
    // SAFETY: the caller's contract.
    #[cfg(feature = "pg15")]
    unsafe {
        pg_sys::EnableDisableTrigger(rel, name, replica, false, lock)
    };
    // SAFETY: the caller's contract.
    #[cfg(not(feature = "pg15"))]
    unsafe {
        pg_sys::EnableDisableTrigger(rel, name, pg_sys::InvalidOid, replica, false, false, lock)
    };
}

unsafe extern "C-unwind" {
    // catalog/pg_attrdef.h; not in pgrx's bindings. Called inside errors::guarded.
    fn GetAttrDefaultColumnAddress(attrdefoid: Oid) -> pg_sys::ObjectAddress;
}
