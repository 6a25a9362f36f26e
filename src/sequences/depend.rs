//! What `pg_depend` says about sequences: the column defaults (and domains) that depend on one,
//! and recording such a dependency. Read through the catalog's own indexes, without SPI: this
//! runs in the generators' slow path.

use pgrx::pg_sys::{self, Oid};

use crate::pg::{errors, pgcompat};
use crate::sequences::catalog::{self, getstruct};
use crate::sequences::naming;

// Fixed OIDs that pgrx's bindings leave out (catalog/pg_attrdef.h, pg_depend.h, pg_type.h).
pub const ATTR_DEFAULT_RELATION_ID: Oid = Oid::from_u32(2604);
const DEPEND_RELATION_ID: Oid = Oid::from_u32(2608);
const DEPEND_DEPENDER_INDEX_ID: Oid = Oid::from_u32(2673);
const DEPEND_REFERENCE_INDEX_ID: Oid = Oid::from_u32(2674);
const F_OIDEQ: Oid = Oid::from_u32(pg_sys::F_OIDEQ);

/// The fixed part of a `pg_depend` row (catalog/pg_depend.h; not in pgrx's bindings).
#[repr(C)]
struct FormPgDepend {
    classid: Oid,
    objid: Oid,
    objsubid: i32,
    refclassid: Oid,
    refobjid: Oid,
    refobjsubid: i32,
    deptype: std::ffi::c_char,
}

/// One row of `pg_depend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dependency {
    pub classid: Oid,
    pub objid: Oid,
    pub objsubid: i32,
    pub refclassid: Oid,
    pub refobjid: Oid,
    pub deptype: u8,
}

/// The rows of `pg_depend` whose referenced object is (`refclassid`, `refobjid`), or whose
/// dependent object is (`classid`, `objid`) when `by_depender`.
fn scan(by_depender: bool, class: Oid, obj: Oid) -> Vec<Dependency> {
    let (index, class_att, obj_att) = if by_depender {
        (DEPEND_DEPENDER_INDEX_ID, 1, 2)
    } else {
        (DEPEND_REFERENCE_INDEX_ID, 4, 5)
    };
    let mut found = Vec::new();
    // SAFETY: the standard systable scan of a catalog through one of its indexes, with two
    // equality keys on oid columns; every tuple of pg_depend is a FormData_pg_depend. The
    // relation is opened and closed with AccessShareLock, as PostgreSQL's own readers do.
    unsafe {
        let rel = pg_sys::table_open(DEPEND_RELATION_ID, pg_sys::AccessShareLock as _);
        let mut keys: [pg_sys::ScanKeyData; 2] = std::mem::zeroed();
        pg_sys::ScanKeyInit(
            &mut keys[0],
            class_att,
            pg_sys::BTEqualStrategyNumber as _,
            F_OIDEQ,
            pg_sys::Datum::from(class),
        );
        pg_sys::ScanKeyInit(
            &mut keys[1],
            obj_att,
            pg_sys::BTEqualStrategyNumber as _,
            F_OIDEQ,
            pg_sys::Datum::from(obj),
        );
        let scan = pg_sys::systable_beginscan(
            rel,
            index,
            true,
            std::ptr::null_mut(),
            2,
            keys.as_mut_ptr(),
        );
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            let d = getstruct::<FormPgDepend>(tuple);
            found.push(Dependency {
                classid: (*d).classid,
                objid: (*d).objid,
                objsubid: (*d).objsubid,
                refclassid: (*d).refclassid,
                refobjid: (*d).refobjid,
                deptype: (*d).deptype as u8,
            });
        }
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(rel, pg_sys::AccessShareLock as _);
    }
    found
}

/// What depends on object (`class`, `obj`).
pub fn dependents(class: Oid, obj: Oid) -> Vec<Dependency> {
    scan(false, class, obj)
}

/// What object (`class`, `obj`) depends on.
pub fn dependencies(class: Oid, obj: Oid) -> Vec<Dependency> {
    scan(true, class, obj)
}

/// A column: its table and attribute number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub table: Oid,
    pub attnum: i16,
}

/// The columns that take their DEFAULT from sequence relation `seq`: those whose own DEFAULT
/// depends on it, and the columns of domains (and of domains over them) whose DEFAULT does
/// and which have no DEFAULT of their own. Dependencies are recorded when a DEFAULT names the
/// sequence by a constant (see `defaults`).
///
/// A domain's column counts only in a table whose owner vouches for the domain's DEFAULT (see
/// [`owner_vouches`]): a column's own DEFAULT was made by a role allowed to name the sequence,
/// but any role may put another's domain in a table of its own, and what it stores there
/// must neither let it generate (a role may generate through the DEFAULT of a table it may
/// insert into, see `privileges`) nor move the sequence's fallback.
pub fn default_columns(seq: Oid) -> Vec<Column> {
    let (defaults, naming_domains) = naming_dependents(seq);
    let mut columns: Vec<Column> = defaults.into_iter().filter_map(column_of_default).collect();
    let mut domains: Vec<(Oid, Oid)> = naming_domains.into_iter().map(|d| (d, d)).collect();
    // Domains over domains, each with the domain whose DEFAULT names the sequence: bounded,
    // since a type cannot be its own base.
    let mut seen = Vec::new();
    while let Some((domain, naming)) = domains.pop() {
        if seen.contains(&domain) || seen.len() > 1_000 {
            continue;
        }
        seen.push(domain);
        for d in dependents(pg_sys::TypeRelationId, domain) {
            if d.classid == pg_sys::RelationRelationId && d.objsubid > 0 {
                let attnum = d.objsubid as i16;
                if !has_own_default(d.objid, attnum) && owner_vouches(d.objid, naming, seq) {
                    columns.push(Column {
                        table: d.objid,
                        attnum,
                    });
                }
            } else if d.classid == pg_sys::TypeRelationId && d.deptype == b'n' {
                domains.push((d.objid, naming));
            }
        }
    }
    columns
}

/// The column DEFAULTs and the domains whose DEFAULT names sequence `seq` (see `naming`).
/// Not every dependent does: PostgreSQL records the same dependency for any expression that
/// holds the sequence as a `regclass` constant, which takes no privilege on it, so a role
/// could otherwise make its own column count as one of the sequence's.
pub fn naming_dependents(seq: Oid) -> (Vec<Oid>, Vec<Oid>) {
    let (mut defaults, mut domains) = (Vec::new(), Vec::new());
    for d in dependents(pg_sys::RelationRelationId, seq) {
        if d.classid == ATTR_DEFAULT_RELATION_ID {
            if naming::column_default(d.objid).is_some_and(|tree| naming::names(&tree, seq)) {
                defaults.push(d.objid);
            }
        } else if d.classid == pg_sys::TypeRelationId
            && naming::domain_default(d.objid).is_some_and(|tree| naming::names(&tree, seq))
        {
            domains.push(d.objid);
        }
    }
    (defaults, domains)
}

/// Whether the owner of `table` vouches for the DEFAULT of domain `domain`, which names
/// sequence `seq`: it owns the domain (and so made or was given its DEFAULT), or it could have
/// written that DEFAULT on the column itself (USAGE or UPDATE on the sequence, or owning it).
/// A table that is gone vouches for nothing.
fn owner_vouches(table: Oid, domain: Oid, seq: Oid) -> bool {
    let Some(owner) = relation_owner(table) else {
        return false;
    };
    // SAFETY: a catalog lookup; an error (the sequence dropped meanwhile, which the caller's
    // lock prevents) is raised as usual.
    let may_use = unsafe {
        pg_sys::pg_class_aclcheck(
            seq,
            owner,
            (pg_sys::ACL_USAGE | pg_sys::ACL_UPDATE) as pg_sys::AclMode,
        ) == pg_sys::AclResult::ACLCHECK_OK
    };
    may_use || pgcompat::type_ownercheck(domain, owner) || pgcompat::class_ownercheck(seq, owner)
}

/// The owner of relation `relid`, if it exists.
fn relation_owner(relid: Oid) -> Option<Oid> {
    // SAFETY: a pg_class row is a FormData_pg_class.
    unsafe {
        catalog::cached_row(
            pg_sys::SysCacheIdentifier::RELOID,
            relid,
            |c: &pg_sys::FormData_pg_class| c.relowner,
        )
    }
}

/// The column whose DEFAULT is `attrdef`.
pub fn column_of_default(attrdef: Oid) -> Option<Column> {
    // SAFETY: a catalog lookup; InvalidOid for a default that no longer exists.
    let address = unsafe { errors::guarded(|| GetAttrDefaultColumnAddress(attrdef)) };
    (address.objectId != pg_sys::InvalidOid).then_some(Column {
        table: address.objectId,
        attnum: address.objectSubId as i16,
    })
}

fn has_own_default(table: Oid, attnum: i16) -> bool {
    // SAFETY: a catalog lookup by column; InvalidOid when the column has no default.
    unsafe { errors::guarded(|| GetAttrDefaultOid(table, attnum)) != pg_sys::InvalidOid }
}

/// Records that `depender` (a column default or a domain) depends on sequence relation
/// `seq`, as PostgreSQL records what an expression's `'seq'::regclass` constant depends on:
/// `DROP SEQUENCE` is then refused (or, with CASCADE, drops the default). Nothing is recorded
/// twice.
pub fn record(depender: pg_sys::ObjectAddress, seq: Oid) {
    let exists = dependencies(depender.classId, depender.objectId)
        .iter()
        .any(|d| {
            d.refclassid == pg_sys::RelationRelationId
                && d.refobjid == seq
                && d.objsubid == depender.objectSubId
        });
    if exists {
        return;
    }
    let referenced = pg_sys::ObjectAddress {
        classId: pg_sys::RelationRelationId,
        objectId: seq,
        objectSubId: 0,
    };
    // SAFETY: both objects exist (the caller holds a lock on the sequence and is creating the
    // default); recordDependencyOn inserts one pg_depend row.
    unsafe {
        pg_sys::recordDependencyOn(
            &depender,
            &referenced,
            pg_sys::DependencyType::DEPENDENCY_NORMAL,
        );
    }
}

unsafe extern "C-unwind" {
    // catalog/pg_attrdef.h; not in pgrx's bindings.
    fn GetAttrDefaultColumnAddress(attrdefoid: Oid) -> pg_sys::ObjectAddress;
    fn GetAttrDefaultOid(relid: Oid, attnum: pg_sys::AttrNumber) -> Oid;
}
