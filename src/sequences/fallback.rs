//! The fallback of a fresh sequence (one that never leased anything: just made, or restored
//! with `setval(..., false)`): the keys already stored in the columns that take their DEFAULT
//! from it, which it must not repeat. See `probe` for the search, and docs/how-it-works.md, "The fallback".
//!
//! Which columns: those whose DEFAULT `pg_depend` records as depending on the sequence
//! (directly or through a domain, see `depend`), with the tables that inherit from theirs
//! and their partitions. Each is read through a btree index whose first column it is, with
//! PostgreSQL's own integer ordering or this extension's gdid ordering, index-only: no
//! expression, predicate, operator class or table access method of anyone's runs, no row is
//! read, no privilege is involved, and it works the same inside a Citus shard task. A column
//! without such an index is not read (its keys are not protected: docs/how-it-works.md says so).
//! Dead and uncommitted keys count too, which only ever makes the start higher.

use pgrx::pg_sys::{self, Datum, Oid};

use crate::core::gdid::value::{Gdid, SIZE};
use crate::core::identity::Kind;
use crate::core::lease::{self, Lease};
use crate::core::snowflake::layout::Layout;
use crate::pg::errors;
use crate::sequences::{catalog, depend, name_floors_xact};
use crate::{core::probe, pg::pgcompat};

/// What the keys of a column are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keys {
    Bigint,
    Gdid,
}

/// The first millisecond (since the layout's epoch) after every stored key of node `node`
/// from millisecond `from_ms` on, over every column of sequence `seq`, and after every ID a
/// relation of its name handed out in a transaction that did not commit (see `name_floors_xact`).
pub fn snowflake_floor(seq: Oid, layout: &Layout, node: u32, from_ms: u64) -> Option<u64> {
    let uncommitted = name_floors_xact::floor(Kind::Snowflake, seq)
        .map(|v| lease::snowflake_from_value(layout.epoch_ms, v));
    let stored = columns(seq)
        .into_iter()
        .filter_map(|(rel, attnum)| {
            let mut index = IndexProbe::open(rel, attnum, Keys::Bigint)?;
            probe::snowflake_floor(layout, node, from_ms, |bound| {
                index
                    .max_at_most(Datum::from(bound))
                    .map(|d| d.value() as i64)
            })
        })
        .max();
    stored.max(uncommitted)
}

/// The lease that covers every stored key of authority `authority` over every column of
/// sequence `seq`, and every gdid a relation of its name handed out in a transaction that did
/// not commit (see `name_floors_xact`).
pub fn gdid_floor(seq: Oid, authority: u8) -> Option<Lease> {
    let uncommitted = name_floors_xact::floor(Kind::Gdid, seq).and_then(lease::gdid_from_value);
    let stored = columns(seq)
        .into_iter()
        .filter_map(|(rel, attnum)| {
            let mut index = IndexProbe::open(rel, attnum, Keys::Gdid)?;
            probe::gdid_floor(authority, |bound| {
                let bytes = bound.to_bytes();
                let d = Datum::from(bytes.as_ptr());
                index.max_at_most(d).map(|d| {
                    // SAFETY: a gdid Datum points at its 12 bytes, copied out of the index tuple.
                    Gdid::from_bytes(unsafe { &*d.cast_mut_ptr::<[u8; SIZE]>() })
                })
            })
        })
        .max();
    stored.max(uncommitted)
}

/// The columns to read: (relation with storage, attribute number).
fn columns(seq: Oid) -> Vec<(Oid, i16)> {
    let mut found = Vec::new();
    for c in depend::default_columns(seq) {
        // SAFETY: catalog lookups; find_all_inheritors returns a List of OIDs (the table
        // itself first), taking no locks with NoLock.
        unsafe {
            let name = pg_sys::get_attname(c.table, c.attnum, true);
            if name.is_null() {
                continue;
            }
            let all = errors::guarded(|| {
                find_all_inheritors(c.table, pg_sys::NoLock as _, std::ptr::null_mut())
            });
            let all = pgrx::PgList::<std::ffi::c_void>::from_pg(all);
            for i in 0..all.len() {
                let rel = Oid::from(all.get_oid(i).unwrap_or_default().to_u32());
                let attnum = pg_sys::get_attnum(rel, name);
                if attnum > 0 && !found.contains(&(rel, attnum)) {
                    found.push((rel, attnum));
                }
            }
        }
    }
    found
}

/// Whether `rel` is a temporary table of another session, which the fallback skips, as
/// VACUUM and ANALYZE skip them: its pages live in that session's own buffers, so reading it
/// fails ("cannot access temporary tables of other sessions") and would stop every first use
/// while the table exists. Checked before locking it, so that a lock its session holds (a
/// TRUNCATE in a long transaction) does not hold up a first use either.
///
/// Safe enough: no other session can see those keys, and they go when their session ends.
/// They meet the sequence's new values only if their session copies them into a table, where
/// the key column's unique index refuses a repeat (23505) and a later fallback reads them;
/// until then they are keys kept elsewhere, like those of a column without a btree index,
/// which the fallback does not protect either (docs/how-it-works.md, "The fallback", says
/// both). The calling session's own temporary tables are read as any table.
fn another_sessions_temporary(rel: Oid) -> bool {
    // SAFETY: a pg_class row is a FormData_pg_class; isOtherTempNamespace only compares with
    // this backend's temporary namespaces and reads pg_namespace's cache.
    unsafe {
        let Some((persistence, namespace)) = catalog::cached_row(
            pg_sys::SysCacheIdentifier::RELOID,
            rel,
            |c: &pg_sys::FormData_pg_class| (c.relpersistence as u8, c.relnamespace),
        ) else {
            // Gone: try_relation_open finds nothing either.
            return false;
        };
        persistence == pg_sys::RELPERSISTENCE_TEMP && pg_sys::isOtherTempNamespace(namespace)
    }
}

/// A btree index whose first column is the column, open for descents.
struct IndexProbe {
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    scan: pg_sys::IndexScanDesc,
    procedure: Oid,
    keys: Keys,
    /// The first column is in descending order: the largest key at most the bound comes
    /// first walking forwards.
    descending: bool,
}

impl IndexProbe {
    /// The first usable index of column `attnum` of relation `rel`, if it has one.
    fn open(rel: Oid, attnum: i16, keys: Keys) -> Option<IndexProbe> {
        if another_sessions_temporary(rel) {
            return None;
        }
        // SAFETY: the relation is opened (and locked as any reader locks it) if it still
        // exists; each candidate index is opened, checked and closed again unless chosen;
        // every field read is of an open relation.
        unsafe {
            let heap = pg_sys::try_relation_open(rel, pg_sys::AccessShareLock as _);
            if heap.is_null() {
                return None;
            }
            let kind = (*(*heap).rd_rel).relkind as u8;
            if kind != pg_sys::RELKIND_RELATION && kind != pg_sys::RELKIND_MATVIEW {
                pg_sys::relation_close(heap, pg_sys::AccessShareLock as _);
                return None;
            }
            let list =
                pgrx::PgList::<std::ffi::c_void>::from_pg(pg_sys::RelationGetIndexList(heap));
            for i in 0..list.len() {
                let Some(oid) = list.get_oid(i) else { continue };
                let index = pg_sys::index_open(oid, pg_sys::AccessShareLock as _);
                if let Some(procedure) = usable(index, attnum, keys) {
                    let scan =
                        pgcompat::index_beginscan(heap, index, &raw mut pg_sys::SnapshotAnyData, 1);
                    (*scan).xs_want_itup = true;
                    let options = *(*index).rd_indoption;
                    return Some(IndexProbe {
                        heap,
                        index,
                        scan,
                        procedure,
                        keys,
                        descending: options & pg_sys::INDOPTION_DESC as i16 != 0,
                    });
                }
                pg_sys::index_close(index, pg_sys::AccessShareLock as _);
            }
            pg_sys::relation_close(heap, pg_sys::AccessShareLock as _);
            None
        }
    }

    /// The largest key at most `bound`: one descent of the index, read from the index tuple.
    fn max_at_most(&mut self, bound: Datum) -> Option<Datum> {
        // SAFETY: a rescan of the open scan with one key on its first column, the btree
        // strategy "less or equal" and the operator family's own comparison; the first entry,
        // walking backwards in an ascending index or forwards in a descending one, is the
        // largest at most `bound`. The index tuple of an index-only scan is deformed with the
        // index's own descriptor (later columns may be NULL: a null bitmap moves the data); a
        // NULL key never satisfies the qualification. A gdid is copied out of the tuple.
        unsafe {
            let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
            pg_sys::ScanKeyInit(
                &mut key,
                1,
                pg_sys::BTLessEqualStrategyNumber as _,
                self.procedure,
                bound,
            );
            pg_sys::index_rescan(self.scan, &mut key, 1, std::ptr::null_mut(), 0);
            let direction = if self.descending {
                pg_sys::ScanDirection::ForwardScanDirection
            } else {
                pg_sys::ScanDirection::BackwardScanDirection
            };
            let tid = pg_sys::index_getnext_tid(self.scan, direction);
            let itup = (*self.scan).xs_itup;
            if tid.is_null() || itup.is_null() {
                return None;
            }
            let desc = (*self.scan).xs_itupdesc;
            let natts = usize::try_from((*desc).natts).unwrap_or(0).max(1);
            let mut values = vec![Datum::from(0); natts];
            let mut nulls = vec![false; natts];
            pg_sys::index_deform_tuple(itup, desc, values.as_mut_ptr(), nulls.as_mut_ptr());
            if nulls[0] {
                return None;
            }
            Some(match self.keys {
                Keys::Bigint => values[0],
                Keys::Gdid => {
                    let copy = pg_sys::palloc(SIZE).cast::<u8>();
                    std::ptr::copy_nonoverlapping(values[0].cast_mut_ptr::<u8>(), copy, SIZE);
                    Datum::from(copy)
                }
            })
        }
    }
}

impl Drop for IndexProbe {
    fn drop(&mut self) {
        // SAFETY: opened in `open`; closed once, keeping the locks to the end of the
        // transaction as readers do.
        unsafe {
            pg_sys::index_endscan(self.scan);
            pg_sys::index_close(self.index, pg_sys::NoLock as _);
            pg_sys::relation_close(self.heap, pg_sys::NoLock as _);
        }
    }
}

/// The comparison procedure to descend `index` with, if it is a valid btree index without
/// predicate whose first column is `attnum` with the standard ordering of `keys`.
///
/// # Safety
/// `index` is an open index.
unsafe fn usable(index: pg_sys::Relation, attnum: i16, keys: Keys) -> Option<Oid> {
    // SAFETY: fields of an open index relation; catalog lookups.
    unsafe {
        let form = (*index).rd_index;
        let first = *(*form).indkey.values.as_ptr();
        let btree = (*(*index).rd_rel).relam == pg_sys::BTREE_AM_OID;
        if !btree || !(*form).indisvalid || first != attnum {
            return None;
        }
        if !pg_sys::RelationGetIndexPredicate(index).is_null() {
            return None;
        }
        let family = *(*index).rd_opfamily;
        let input = *(*index).rd_opcintype;
        match keys {
            Keys::Bigint if family == pg_sys::INTEGER_BTREE_FAM_OID && input == pg_sys::INT8OID => {
                Some(Oid::from(pg_sys::F_INT8LE))
            }
            Keys::Gdid
                if is_ours(pg_sys::TypeRelationId, input)
                    && is_ours(OPERATOR_FAMILY_RELATION_ID, family) =>
            {
                let op = pg_sys::get_opfamily_member(
                    family,
                    input,
                    input,
                    pg_sys::BTLessEqualStrategyNumber as _,
                );
                (op != pg_sys::InvalidOid).then(|| pg_sys::get_opcode(op))
            }
            _ => None,
        }
    }
}

/// pg_opfamily's catalog OID (catalog/pg_opfamily.h).
const OPERATOR_FAMILY_RELATION_ID: Oid = Oid::from_u32(2753);

/// Whether object `oid` of catalog `class` belongs to this extension (the type gdid, its
/// operator family gdid_ops: comparisons of its own).
fn is_ours(class: Oid, oid: Oid) -> bool {
    // SAFETY: catalog lookups.
    unsafe {
        let ext = pg_sys::get_extension_oid(c"snowflake_id".as_ptr(), true);
        ext != pg_sys::InvalidOid && pg_sys::getExtensionOfObject(class, oid) == ext
    }
}

unsafe extern "C-unwind" {
    // catalog/pg_inherits.h; not in pgrx's bindings.
    fn find_all_inheritors(
        parent: Oid,
        lockmode: pg_sys::LOCKMODE,
        numparents: *mut *mut pg_sys::List,
    ) -> *mut pg_sys::List;
}
