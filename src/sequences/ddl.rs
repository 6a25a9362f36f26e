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
    let Some(cache) = shmem::cache() else {
        return;
    };
    let _lock = InterruptibleLock::acquire(shmem::cache_lock());
    cache.evict_relation(lookup::current_db(), relid.to_u32());
}

/// What the utility hook does with a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// Run it.
    Run,
    /// Skip it: Citus rewriting a sequence of the extension's schemas into a worker's window.
    Skip,
}

/// Before a utility statement (`toplevel`: not one that another runs): what a failed
/// statement left is forgotten, a rename of a named sequence refused, and Citus's rewrite of a
/// sequence's bounds on a worker skipped.
pub fn before_statement(stmt: *mut pg_sys::Node, toplevel: bool) -> Run {
    if toplevel {
        *pending() = Pending::default();
    }
    // SAFETY: the statement PostgreSQL is about to run, a parse node.
    unsafe {
        refuse_renaming_a_named_sequence(stmt);
        keep_from_citus(stmt, toplevel)
    }
}

/// Citus makes the sequences a distributed table's DEFAULTs depend on on every worker, and
/// rewrites a bigint sequence's bounds there into a window of the worker's own (see
/// `core::citus`), at `create_distributed_table` and at every metadata sync. The extension's
/// sequences never serve `nextval`: their values carry the node's number, and a sequence's
/// value is its lease, which the rewrite would throw away (its RESTART) and whose bounds
/// are its layout. So that one statement is skipped for them, with a LOG line (a NOTICE when
/// typed by hand); nothing else of Citus's is.
///
/// # Safety
/// `stmt` is a parse node.
unsafe fn keep_from_citus(stmt: *mut pg_sys::Node, toplevel: bool) -> Run {
    // SAFETY: the cast follows the node's tag.
    let alter = unsafe {
        if (*stmt).type_ != pg_sys::NodeTag::T_AlterSeqStmt {
            return Run::Run;
        }
        stmt.cast::<pg_sys::AlterSeqStmt>()
    };
    // SAFETY: an AlterSeqStmt's option list holds DefElems.
    let options = unsafe { sequence_options((*alter).options) };
    if !crate::core::citus::is_worker_window(&options) {
        return Run::Run;
    }
    // SAFETY: a field of the statement.
    let Some(relid) = (unsafe { sequence_of_ours((*alter).sequence) }) else {
        return Run::Run;
    };
    // Only what the statement could have done: a role that may not alter the sequence, or a
    // read-only transaction, gets PostgreSQL's own error from the statement.
    // SAFETY: plain reads of the current user and a backend-global flag.
    let (user, read_only) = unsafe { (pg_sys::GetUserId(), pg_sys::XactReadOnly) };
    if read_only || !crate::pg::pgcompat::class_ownercheck(relid, user) {
        return Run::Run;
    }
    let said = error(
        Code::ERRCODE_SUCCESSFUL_COMPLETION,
        format!(
            "snowflake_id keeps the definition of sequence {}: Citus's bounds for this node's nextval do not apply to it",
            catalog::described(Kind::Snowflake, relid)
        ),
    )
    .detail("Its value is this node's durable lease, and the values it gives carry this node's number.");
    if toplevel {
        said.notice();
    } else {
        said.log(false);
    }
    Run::Skip
}

/// The options of an `ALTER SEQUENCE` that matter to [`keep_from_citus`].
///
/// # Safety
/// `list` is NULL or a List of DefElem nodes.
unsafe fn sequence_options(list: *mut pg_sys::List) -> crate::core::citus::SequenceOptions {
    let mut o = crate::core::citus::SequenceOptions::default();
    // SAFETY: per the contract; each DefElem's arg is NULL or a value node, read by its tag.
    unsafe {
        let list = pgrx::PgList::<pg_sys::DefElem>::from_pg(list);
        for def in list.iter_ptr() {
            let name = std::ffi::CStr::from_ptr((*def).defname).to_bytes();
            let value = int64_of((*def).arg);
            let slot = match name {
                b"start" => &mut o.start,
                b"minvalue" => &mut o.minvalue,
                b"maxvalue" => &mut o.maxvalue,
                b"restart" => &mut o.restart,
                _ => {
                    o.others = true;
                    continue;
                }
            };
            match value {
                Some(v) if slot.is_none() => *slot = Some(v),
                _ => o.others = true,
            }
        }
    }
    o
}

/// The integer a DefElem's argument holds: an Integer node, or a Float node whose text is an
/// integer (how the parser, and Citus, write values past int4).
///
/// # Safety
/// `arg` is NULL or a parse node.
unsafe fn int64_of(arg: *mut pg_sys::Node) -> Option<i64> {
    if arg.is_null() {
        return None;
    }
    // SAFETY: each cast follows the node's tag; a Float's text is NUL-terminated.
    unsafe {
        match (*arg).type_ {
            pg_sys::NodeTag::T_Integer => Some(i64::from((*arg.cast::<pg_sys::Integer>()).ival)),
            pg_sys::NodeTag::T_Float => {
                let text = (*arg.cast::<pg_sys::Float>()).fval;
                if text.is_null() {
                    return None;
                }
                std::ffi::CStr::from_ptr(text).to_str().ok()?.parse().ok()
            }
            _ => None,
        }
    }
}

/// The sequence of the extension's schemas that `relation` names, if it names one.
///
/// # Safety
/// `relation` is NULL or a RangeVar.
unsafe fn sequence_of_ours(relation: *mut pg_sys::RangeVar) -> Option<Oid> {
    if relation.is_null() || !lookup::is_preloaded() {
        return None;
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
        return None;
    }
    // SAFETY: a catalog lookup.
    let nsp = unsafe { pg_sys::get_rel_namespace(relid) };
    [Kind::Snowflake, Kind::Gdid]
        .into_iter()
        .any(|k| catalog::is_schema_of(k, nsp))
        .then_some(relid)
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
    // SAFETY: a field of the statement.
    let Some(relid) = (unsafe { sequence_of_ours(relation) }) else {
        return;
    };
    if !defaults::named_by_a_default(relid) {
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
