//! The sequence relations in the catalog: the schema of each kind, a relation found by name,
//! made (`CREATE SEQUENCE`), and opened for generation, with the layout its definition
//! records checked.
//!
//! A snowflake sequence is `CREATE SEQUENCE snowflake.name AS bigint MINVALUE epoch MAXVALUE
//! epoch + 2^41 START epoch INCREMENT node_bits`: its value is the end of its durable lease
//! as a Unix millisecond (no ID of that millisecond or later has been handed out), its bounds
//! the time range of its layout, and its increment the node bits it was made with; nothing
//! ever calls `nextval` on it. A gdid sequence is `CREATE SEQUENCE gdid."scope/name" AS
//! bigint MINVALUE 0 START 0`, its value the lease as `core::lease` encodes it. A sequence
//! that has never leased anything has `is_called` false (`setval(..., false)` after a
//! restore): it is *fresh*.

use std::ffi::{CStr, CString};

use pgrx::pg_sys::{self, Oid};

use crate::core::identity::{CreationLayout, Kind, RelationName};
use crate::core::snowflake::layout::{Layout, MAX_NODE_BITS, MIN_NODE_BITS, OWN_TIME_BITS};
use crate::pg::errors::{error, Code};
use crate::{pg::pgcompat, pg::spi};

/// The schema of a kind in the current database.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    pub oid: Oid,
    /// Its name: one of the kind's [`Kind::schema_names`].
    pub name: &'static str,
    /// The extension it belongs to.
    ext: Oid,
}

impl Schema {
    /// Whether the current transaction made it the extension's (`CREATE EXTENSION`, or the
    /// update that made it, in this transaction): no other session sees it yet, so neither can
    /// a background worker. Read from the row of `pg_depend` that makes the schema a member
    /// of the extension, which only those statements insert and nothing updates, and not from
    /// the schema's own row: any role with USAGE rewrites that one (a `GRANT` that grants
    /// nothing still updates it), and would pass for the transaction of a first migration.
    /// Asked only where a sequence is made, or was made by this transaction.
    pub fn new_in_this_transaction(&self) -> bool {
        let query = CString::new(format!(
            "SELECT d.xmin::pg_catalog.text FROM pg_catalog.pg_depend d
              WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
                AND d.objid OPERATOR(pg_catalog.=) {}::pg_catalog.oid
                AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                AND d.refobjid OPERATOR(pg_catalog.=) {}::pg_catalog.oid
                AND d.deptype OPERATOR(pg_catalog.=) 'e'",
            self.oid.to_u32(),
            self.ext.to_u32()
        ))
        .expect("no NUL in the query");
        let xmin = spi::connect(|conn| conn.select(&query, 1).text(0, 1));
        xmin.and_then(|x| String::from_utf8(x).ok()?.parse::<u32>().ok())
            // SAFETY: a read of this backend's transaction state.
            .is_some_and(|x| unsafe {
                pg_sys::TransactionIdIsCurrentTransactionId(pg_sys::TransactionId::from(x))
            })
    }
}

/// The schema holding `kind`'s sequences, if the extension of this database has one: the
/// schema of one of the kind's names that belongs to the extension (`CREATE EXTENSION` made
/// it). A schema of that name that is not the extension's is never one: anybody with CREATE
/// on the database could have made it.
pub fn existing_schema(kind: Kind) -> Option<Schema> {
    // SAFETY: catalog lookups; get_extension_oid and get_namespace_oid with missing_ok return
    // InvalidOid instead of raising.
    let ext = unsafe { pg_sys::get_extension_oid(c"snowflake_id".as_ptr(), true) };
    if ext == pg_sys::InvalidOid {
        return None;
    }
    kind.schema_names().into_iter().find_map(|name| {
        let c = CString::new(name).expect("no NUL in a schema name");
        // SAFETY: as above.
        let oid = unsafe { pg_sys::get_namespace_oid(c.as_ptr(), true) };
        // SAFETY: a pg_depend lookup.
        let ours = oid != pg_sys::InvalidOid
            && unsafe { pg_sys::getExtensionOfObject(pg_sys::NamespaceRelationId, oid) } == ext;
        ours.then_some(Schema { oid, name, ext })
    })
}

/// The schema holding `kind`'s sequences, or the ERROR for a database whose extension is
/// older than the library (its sequences still wait for `ALTER EXTENSION ... UPDATE`), or
/// whose extension's schemas were renamed.
pub fn schema(kind: Kind) -> Schema {
    existing_schema(kind).unwrap_or_else(|| {
        let [first, second] = kind.schema_names();
        let e = error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("the extension snowflake_id of this database has no schema for its {kind} sequences"),
        );
        match member_schemas().as_slice() {
            [] => e
                .detail(format!(
                    "Since release 0.4.0 every sequence is a PostgreSQL sequence in a schema of \
                     the extension (\"{first}\" or \"{second}\"); this database's extension is of \
                     an earlier release."
                ))
                .hint("Run ALTER EXTENSION snowflake_id UPDATE in this database."),
            renamed => e
                .detail(format!(
                    "The extension's schemas are named {}; its {kind} sequences \
                     are looked for in its schema named \"{first}\" or \"{second}\".",
                    renamed.join(", ")
                ))
                .hint(format!(
                    "Rename the extension's schema back: ALTER SCHEMA ... RENAME TO {first} (or {second})."
                )),
        }
        .raise()
    })
}

/// The names of the schemas that belong to the extension, quoted.
fn member_schemas() -> Vec<String> {
    let query = c"SELECT pg_catalog.quote_ident(n.nspname)::pg_catalog.text
                    FROM pg_catalog.pg_depend d
                    JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) d.objid
                    JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) d.refobjid
                   WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                     AND d.deptype OPERATOR(pg_catalog.=) 'e'
                     AND x.extname OPERATOR(pg_catalog.=) 'snowflake_id'
                   ORDER BY 1";
    spi::connect(|conn| {
        let rows = conn.select(query, 0);
        (0..rows.len())
            .filter_map(|i| rows.text(i, 1))
            .map(|b| crate::core::dbtext::DbText(&b).to_string())
            .collect()
    })
}

/// The schema of `kind` that relation namespace `nsp` is, if it is one.
pub fn is_schema_of(kind: Kind, nsp: Oid) -> bool {
    existing_schema(kind).is_some_and(|s| s.oid == nsp)
}

/// The relation named `name` in `schema`, if there is one.
pub fn find(schema: Oid, name: &RelationName) -> Option<Oid> {
    let name = CString::new(name.as_bytes()).expect("relation names hold no NUL");
    // SAFETY: a syscache lookup by name and namespace; InvalidOid when absent.
    let relid = unsafe { pg_sys::get_relname_relid(name.as_ptr(), schema) };
    (relid != pg_sys::InvalidOid).then_some(relid)
}

/// `CREATE SEQUENCE IF NOT EXISTS` for a sequence of `kind` named `name` (bytes in the
/// database's encoding) in schema `schema`, its definition recording `layout` (snowflake).
/// Every name is quoted and qualified, and the statement calls no function or operator: it
/// means the same under any `search_path`.
pub fn creation_statement(
    kind: Kind,
    schema: &str,
    name: &RelationName,
    layout: &Layout,
) -> CString {
    let definition = match kind {
        Kind::Snowflake => {
            let max = layout.epoch_ms + (1i64 << OWN_TIME_BITS);
            format!(
                "AS bigint INCREMENT BY {} MINVALUE {} MAXVALUE {max} START WITH {} CACHE 1 NO CYCLE",
                layout.node_bits, layout.epoch_ms, layout.epoch_ms
            )
        }
        Kind::Gdid => {
            "AS bigint INCREMENT BY 1 MINVALUE 0 NO MAXVALUE START WITH 0 CACHE 1 NO CYCLE".into()
        }
    };
    let mut q = b"CREATE SEQUENCE IF NOT EXISTS ".to_vec();
    q.extend_from_slice(&qualified_name(schema.as_bytes(), name));
    q.push(b' ');
    q.extend_from_slice(definition.as_bytes());
    CString::new(q).expect("quoted identifiers hold no NUL")
}

/// `schema.relation`, each part quoted as needed.
pub fn qualified_name(schema: &[u8], name: &RelationName) -> Vec<u8> {
    let mut q = quote_identifier(schema);
    q.push(b'.');
    q.extend_from_slice(&quote_identifier(name.as_bytes()));
    q
}

/// A schema name as an SQL identifier, quoted if it needs it.
pub fn quoted_schema(schema: &str) -> Vec<u8> {
    quote_identifier(schema.as_bytes())
}

/// A name as an SQL identifier, quoted if it needs it, in the database's encoding.
fn quote_identifier(name: &[u8]) -> Vec<u8> {
    let c = CString::new(name).expect("names hold no NUL");
    // SAFETY: quote_identifier reads the NUL-terminated name and returns it or a palloc'd
    // quoted copy, NUL-terminated.
    unsafe { CStr::from_ptr(pg_sys::quote_identifier(c.as_ptr())) }
        .to_bytes()
        .to_vec()
}

/// Makes the sequence in the current transaction, as the current user (whose CREATE
/// privilege on the schema is checked, and who owns it). Never as an object of the extension,
/// even while its script runs (the update from 0.3.0 makes sequences): a member would not be
/// dumped, and would go with the extension.
pub fn create_in_this_transaction(kind: Kind, schema: &str, name: &RelationName, layout: &Layout) {
    let statement = creation_statement(kind, schema, name, layout);
    outside_extension(|| spi::connect(|conn| conn.execute(&statement)));
    // SAFETY: makes the new relation visible to the lookups that follow in this statement.
    unsafe { pg_sys::CommandCounterIncrement() };
}

/// Runs `f` as if no extension script were running: what it makes is no object of the
/// extension, and what it grants is no initial privilege of one (both would be left out of
/// dumps, which restore them with `CREATE EXTENSION`).
pub fn outside_extension<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: plain reads and writes of the backend's extension-script state; put back right
    // after (an error aborts the script, whose cleanup resets both).
    let (creating, object) = unsafe {
        let was = (pg_sys::creating_extension, pg_sys::CurrentExtensionObject);
        pg_sys::creating_extension = false;
        pg_sys::CurrentExtensionObject = pg_sys::InvalidOid;
        was
    };
    let r = f();
    // SAFETY: as above.
    unsafe {
        pg_sys::creating_extension = creating;
        pg_sys::CurrentExtensionObject = object;
    }
    r
}

/// A sequence relation, opened: what a generator needs to know of it.
#[derive(Debug, Clone, Copy)]
pub struct Opened {
    pub relid: Oid,
    /// Its storage: a new one (`ALTER SEQUENCE ... RESTART`) is a new state.
    pub filenode: u32,
    /// What its definition records (see the module's comment); zero for gdid sequences.
    pub layout: CreationLayout,
    /// Given new storage by the current transaction (`ALTER SEQUENCE ... RESTART`), which a
    /// rollback would take back, with what was leased under it. (A relation the transaction
    /// made, it may use: see `name_floors_xact`.)
    pub reset_in_this_transaction: bool,
    /// Made by the current transaction: it may generate only where the transaction made the
    /// extension's schema too (a first migration, see `name_floors_xact`).
    pub made_in_this_transaction: bool,
}

/// Why a relation of a kind's schema cannot be used as a sequence of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotOurs {
    /// Not a sequence at all (a table someone made in the schema).
    NotASequence,
    /// A sequence whose definition is not one this extension makes (made by hand, or
    /// altered since).
    Definition,
    /// An unlogged sequence: a crash resets it.
    Unlogged,
}

/// Opens relation `relid`, which the caller has locked, as a sequence of `kind`; `None` if it
/// is gone (dropped between the lookup and the lock).
pub fn open(kind: Kind, relid: Oid) -> Option<Result<Opened, NotOurs>> {
    // SAFETY: RelationIdGetRelation returns NULL for a relation that no longer exists, else
    // an open relcache entry that RelationClose gives back; its rd_rel is its pg_class row.
    let (filenode, new_here, made_here, relkind, persistence) = unsafe {
        let rel = pg_sys::RelationIdGetRelation(relid);
        if rel.is_null() {
            return None;
        }
        let r = (
            (*(*rel).rd_rel).relfilenode.to_u32(),
            pgcompat::reset_in_this_transaction(rel),
            pgcompat::made_in_this_transaction(rel).is_some(),
            (*(*rel).rd_rel).relkind as u8,
            (*(*rel).rd_rel).relpersistence as u8,
        );
        pg_sys::RelationClose(rel);
        r
    };
    if relkind != pg_sys::RELKIND_SEQUENCE {
        return Some(Err(NotOurs::NotASequence));
    }
    if persistence != pg_sys::RELPERSISTENCE_PERMANENT {
        return Some(Err(NotOurs::Unlogged));
    }
    let Some((min, max, increment)) = sequence_bounds(relid) else {
        return Some(Err(NotOurs::NotASequence));
    };
    let layout = match kind {
        Kind::Snowflake => {
            let node_bits = u32::try_from(increment).unwrap_or(0);
            let fits = (MIN_NODE_BITS..=MAX_NODE_BITS).contains(&node_bits)
                && max == min.saturating_add(1i64 << OWN_TIME_BITS);
            if !fits {
                return Some(Err(NotOurs::Definition));
            }
            CreationLayout {
                epoch_ms: min,
                node_bits,
            }
        }
        Kind::Gdid => {
            if (min, max, increment) != (0, i64::MAX, 1) {
                return Some(Err(NotOurs::Definition));
            }
            CreationLayout::default()
        }
    };
    Some(Ok(Opened {
        relid,
        filenode,
        layout,
        reset_in_this_transaction: new_here,
        made_in_this_transaction: made_here,
    }))
}

/// The fixed part of a `pg_sequence` row (catalog/pg_sequence.h; not in pgrx's bindings).
#[repr(C)]
struct FormPgSequence {
    seqrelid: Oid,
    seqtypid: Oid,
    seqstart: i64,
    seqincrement: i64,
    seqmax: i64,
    seqmin: i64,
    seqcache: i64,
    seqcycle: bool,
}

/// MINVALUE, MAXVALUE and INCREMENT of sequence `relid`, from `pg_sequence`.
fn sequence_bounds(relid: Oid) -> Option<(i64, i64, i64)> {
    // SAFETY: a pg_sequence row is a FormPgSequence.
    unsafe {
        cached_row(
            pg_sys::SysCacheIdentifier::SEQRELID,
            relid,
            |f: &FormPgSequence| (f.seqmin, f.seqmax, f.seqincrement),
        )
    }
}

/// What `read` takes from the fixed part of the row that syscache `cache` holds for `key`,
/// if it holds one; the tuple is released before returning.
///
/// # Safety
/// `T` is the fixed part of the catalog that `cache` caches.
pub unsafe fn cached_row<T, R>(
    cache: pg_sys::SysCacheIdentifier::Type,
    key: Oid,
    read: impl FnOnce(&T) -> R,
) -> Option<R> {
    // SAFETY: a syscache lookup and release; the caller's contract makes the tuple's fixed
    // part a T, read while the tuple is pinned.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(cache as _, pg_sys::Datum::from(key));
        if tuple.is_null() {
            return None;
        }
        let r = read(&*getstruct::<T>(tuple));
        pg_sys::ReleaseSysCache(tuple);
        Some(r)
    }
}

/// The fixed part of a catalog tuple (GETSTRUCT).
///
/// # Safety
/// `tuple` is a valid heap tuple of a catalog whose fixed part is `T`.
pub unsafe fn getstruct<T>(tuple: pg_sys::HeapTuple) -> *mut T {
    // SAFETY: the caller's contract; t_hoff is the offset of the data past the header.
    unsafe {
        let data = (*tuple).t_data;
        data.cast::<u8>().add((*data).t_hoff as usize).cast()
    }
}

/// `schema.relation` of sequence `relid`, quoted as needed, for messages.
pub fn described(kind: Kind, relid: Oid) -> String {
    // SAFETY: catalog lookups; InvalidOid and NULL for what does not exist.
    let schema = unsafe {
        let nsp = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(relid));
        (!nsp.is_null()).then(|| CStr::from_ptr(nsp).to_bytes().to_vec())
    };
    let name = relation_name(relid).and_then(|n| RelationName::from_bytes(&n));
    match (schema, name) {
        (Some(s), Some(n)) => crate::core::dbtext::DbText(&qualified_name(&s, &n)).to_string(),
        _ => format!("{kind}.?"),
    }
}

/// The subtransaction of the current transaction that made relation `relid`, if one did.
pub fn made_in_this_transaction(relid: Oid) -> Option<pg_sys::SubTransactionId> {
    // SAFETY: RelationIdGetRelation returns NULL for a relation that no longer exists, else
    // an open relcache entry that RelationClose gives back.
    unsafe {
        let rel = pg_sys::RelationIdGetRelation(relid);
        if rel.is_null() {
            return None;
        }
        let made = pgcompat::made_in_this_transaction(rel);
        pg_sys::RelationClose(rel);
        made
    }
}

/// The name of relation `relid` (in the database's encoding), if it exists.
pub fn relation_name(relid: Oid) -> Option<Vec<u8>> {
    // SAFETY: get_rel_name returns NULL or a palloc'd NUL-terminated copy.
    unsafe {
        let p = pg_sys::get_rel_name(relid);
        (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes().to_vec())
    }
}
