//! What DDL means for sequences, seen from the hooks (see `hooks`):
//!
//! - a statement that stores a column DEFAULT or changes a domain's binds them to the
//!   sequences they name, once it has run (see `defaults`);
//! - a sequence that a DEFAULT names keeps its name and schema: `ALTER SEQUENCE ... RENAME`
//!   or `SET SCHEMA` of one is refused (2BP01), since the DEFAULT would then name a new,
//!   fresh sequence. (A DEFAULT written with `'seq'::regclass` follows renames; a text name,
//!   by design, does not.)

use std::cell::UnsafeCell;

use pgrx::pg_sys::{self, Oid};

use crate::core::identity::Kind;
use crate::pg::errors::{error, Code};
use crate::pg::shmem::{self, InterruptibleLock};
use crate::sequences::defaults::{self, Making};
use crate::sequences::depend::ATTR_DEFAULT_RELATION_ID;
use crate::sequences::{catalog, lookup};

/// What the object access hook has seen during the current statement.
#[derive(Default)]
struct Pending {
    /// Columns whose DEFAULT was stored: (table, attnum).
    columns: Vec<(Oid, i16)>,
    /// Domains created or altered.
    domains: Vec<Oid>,
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

/// The object access hook's part: notes what may name sequences.
pub fn on_access(access: pg_sys::ObjectAccessType::Type, class: Oid, object: Oid, sub: i32) {
    use pg_sys::ObjectAccessType::{OAT_DROP, OAT_POST_ALTER, OAT_POST_CREATE};
    match access {
        // A column DEFAULT stored: PostgreSQL passes the table and the column.
        OAT_POST_CREATE if class == ATTR_DEFAULT_RELATION_ID => {
            if let Ok(attnum) = i16::try_from(sub) {
                pending().columns.push((object, attnum));
            }
        }
        // A domain created with a DEFAULT, or ALTER DOMAIN ... SET DEFAULT.
        OAT_POST_CREATE | OAT_POST_ALTER if class == pg_sys::TypeRelationId => {
            pending().domains.push(object);
        }
        // A sequence dropped. (Not altered: a GRANT or an OWNER TO would throw its lease's
        // rest away; a RESTART's new storage is a new key anyway.)
        OAT_DROP if class == pg_sys::RelationRelationId && sub == 0 => {
            forget_cached(object);
        }
        _ => {}
    }
}

/// Takes relation `relid`, if it is a sequence, out of the cache of sequences, whatever
/// storage it was cached with: evicting loses nothing (a DROP rolled back reads the relation
/// again), and no entry of it stays behind for another relation that later comes to have the
/// same OID and storage (OIDs wrap around), which would continue from it instead of from its
/// own state.
fn forget_cached(relid: Oid) {
    // SAFETY: a pg_class row is a FormData_pg_class.
    let sequence = unsafe {
        catalog::cached_row(
            pg_sys::SysCacheIdentifier::RELOID,
            relid,
            |c: &pg_sys::FormData_pg_class| c.relkind as u8 == pg_sys::RELKIND_SEQUENCE,
        )
    };
    if sequence != Some(true) {
        return;
    }
    let Some(registry) = shmem::registry() else {
        return;
    };
    let _lock = InterruptibleLock::acquire(shmem::cache_lock());
    registry.evict_relation(lookup::current_db(), relid.to_u32());
}

/// Before a utility statement (`toplevel`: not one that another runs): what a failed
/// statement left is forgotten, and a rename of a named sequence refused.
pub fn before_statement(stmt: *mut pg_sys::Node, toplevel: bool) {
    if toplevel {
        *pending() = Pending::default();
    }
    // SAFETY: the statement PostgreSQL is about to run, a parse node.
    unsafe { refuse_renaming_a_named_sequence(stmt) };
}

/// After a utility statement: binds the defaults it stored to their sequences.
pub fn after_statement() {
    let p = std::mem::take(pending());
    if p.columns.is_empty() && p.domains.is_empty() {
        return;
    }
    // SAFETY: plain reads of process state. Binary upgrade restores a schema whose sequences
    // come with it (or, from 0.3.0, are made by the extension's update later): nothing is
    // made or recorded meanwhile, since pg_upgrade assigns every OID itself.
    if unsafe { !pg_sys::IsTransactionState() || pg_sys::IsBinaryUpgrade } {
        return;
    }
    let Some(server) = crate::guc::server() else {
        return; // not preloaded: nothing generates here
    };
    // SAFETY: makes the statement's catalog changes visible to the reads below.
    unsafe { pg_sys::CommandCounterIncrement() };
    for (table, attnum) in p.columns {
        defaults::bind_column(table, attnum, &server.layout, Making::ForTheCurrentRole);
    }
    for domain in p.domains {
        defaults::bind_domain(domain, &server.layout, Making::ForTheCurrentRole);
    }
    // What binding itself stored (pg_depend rows, a sequence made here) needs no binding.
    *pending() = Pending::default();
}

/// Refuses `ALTER SEQUENCE` (or `ALTER TABLE`) `... RENAME TO` and `... SET SCHEMA` of a
/// sequence of the extension's schemas that a DEFAULT names.
///
/// # Safety
/// `stmt` is a parse node.
unsafe fn refuse_renaming_a_named_sequence(stmt: *mut pg_sys::Node) {
    // SAFETY: each cast follows the node's tag.
    let relation = unsafe {
        match (*stmt).type_ {
            pg_sys::NodeTag::T_RenameStmt => {
                let r = stmt.cast::<pg_sys::RenameStmt>();
                let renames_relation = matches!(
                    (*r).renameType,
                    pg_sys::ObjectType::OBJECT_SEQUENCE | pg_sys::ObjectType::OBJECT_TABLE
                );
                if !renames_relation {
                    return;
                }
                (*r).relation
            }
            pg_sys::NodeTag::T_AlterObjectSchemaStmt => {
                let a = stmt.cast::<pg_sys::AlterObjectSchemaStmt>();
                if !matches!(
                    (*a).objectType,
                    pg_sys::ObjectType::OBJECT_SEQUENCE | pg_sys::ObjectType::OBJECT_TABLE
                ) {
                    return;
                }
                (*a).relation
            }
            _ => return,
        }
    };
    if relation.is_null() || !lookup::is_preloaded() {
        return;
    }
    // SAFETY: a name lookup without a lock (the statement takes its own); InvalidOid when the
    // relation does not exist, which the statement itself reports.
    let relid = unsafe {
        pg_sys::RangeVarGetRelidExtended(
            relation,
            pg_sys::NoLock as _,
            pg_sys::RVROption::RVR_MISSING_OK,
            None,
            std::ptr::null_mut(),
        )
    };
    if relid == pg_sys::InvalidOid {
        return;
    }
    // SAFETY: a catalog lookup.
    let nsp = unsafe { pg_sys::get_rel_namespace(relid) };
    let ours = [Kind::Snowflake, Kind::Gdid]
        .into_iter()
        .any(|k| crate::sequences::catalog::is_schema_of(k, nsp));
    if !ours || !defaults::named_by_a_default(relid) {
        return;
    }
    error(
        Code::ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST,
        format!(
            "cannot rename or move sequence \"{}\" because a DEFAULT names it",
            crate::core::dbtext::DbText(
                &crate::sequences::catalog::relation_name(relid).unwrap_or_default()
            )
        ),
    )
    .detail("The DEFAULT would then name a new sequence, which would start afresh.")
    .hint(
        "Drop the DEFAULT first, rename or move the sequence, and set the DEFAULT again with the \
         new name, in one transaction.",
    )
    .raise()
}
