//! What differs between the PostgreSQL majors this library builds for (15, 17, 18, 19), in one
//! place: the callers read one function each, whatever the major.

use pgrx::pg_sys::{self, Oid};

/// Whether `role` has any of the privileges `mode` on schema `nsp`.
pub fn namespace_aclcheck(nsp: Oid, role: Oid, mode: pg_sys::AclMode) -> bool {
    // SAFETY: catalog lookups; an error (the schema dropped meanwhile) is raised as usual.
    unsafe {
        #[cfg(feature = "pg15")]
        let r = pg_sys::pg_namespace_aclcheck(nsp, role, mode);
        #[cfg(not(feature = "pg15"))]
        let r = pg_sys::object_aclcheck(pg_sys::NamespaceRelationId, nsp, role, mode);
        r == pg_sys::AclResult::ACLCHECK_OK
    }
}

/// Whether `role` owns relation `relid` (or is a superuser, or a member of its owner).
pub fn class_ownercheck(relid: Oid, role: Oid) -> bool {
    // SAFETY: a catalog lookup.
    unsafe {
        #[cfg(feature = "pg15")]
        {
            pg_sys::pg_class_ownercheck(relid, role)
        }
        #[cfg(not(feature = "pg15"))]
        {
            pg_sys::object_ownercheck(pg_sys::RelationRelationId, relid, role)
        }
    }
}

/// Whether `role` owns type `typid` (or is a superuser, or a member of its owner).
pub fn type_ownercheck(typid: Oid, role: Oid) -> bool {
    // SAFETY: a catalog lookup.
    unsafe {
        #[cfg(feature = "pg15")]
        {
            pg_sys::pg_type_ownercheck(typid, role)
        }
        #[cfg(not(feature = "pg15"))]
        {
            pg_sys::object_ownercheck(pg_sys::TypeRelationId, typid, role)
        }
    }
}

/// Whether relation `rel` got new storage in the current transaction (TRUNCATE, `ALTER
/// SEQUENCE ... RESTART`) after it was made: a rollback would bring the earlier storage back.
///
/// # Safety
/// `rel` is an open relation.
pub unsafe fn reset_in_this_transaction(rel: pg_sys::Relation) -> bool {
    // SAFETY: fields of an open relation; InvalidSubTransactionId is 0.
    unsafe {
        #[cfg(feature = "pg15")]
        let storage = (*rel).rd_firstRelfilenodeSubid;
        #[cfg(not(feature = "pg15"))]
        let storage = (*rel).rd_firstRelfilelocatorSubid;
        storage != 0
    }
}

/// The subtransaction of the current transaction that made relation `rel`, if one did.
///
/// # Safety
/// `rel` is an open relation.
pub unsafe fn made_in_this_transaction(rel: pg_sys::Relation) -> Option<pg_sys::SubTransactionId> {
    // SAFETY: a field of an open relation; InvalidSubTransactionId is 0.
    let subid = unsafe { (*rel).rd_createSubid };
    (subid != 0).then_some(subid)
}

/// `index_beginscan`, which 18 gave an instrumentation argument and 19 a bitmask of scan
/// options (`ScanOptions`; none here, as for a catalog scan).
///
/// # Safety
/// As `index_beginscan`: both relations open and locked, `snapshot` valid for the scan.
pub unsafe fn index_beginscan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    // SAFETY: the caller's contract.
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg17"))]
        {
            pg_sys::index_beginscan(heap, index, snapshot, nkeys, 0)
        }
        #[cfg(feature = "pg18")]
        {
            pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), nkeys, 0)
        }
        #[cfg(feature = "pg19")]
        {
            let flags = pg_sys::ScanOptions::SO_NONE;
            pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), nkeys, 0, flags)
        }
    }
}

/// Share-locks the content of a pinned buffer. 19 made `LockBuffer` a static inline
/// function (no symbol in the server to call) over the exported `LockBufferInternal`, which
/// takes every mode but `BUFFER_LOCK_UNLOCK`.
///
/// # Safety
/// `buf` is a valid buffer this backend has pinned and not locked.
pub unsafe fn lock_buffer_share(buf: pg_sys::Buffer) {
    // SAFETY: the caller's contract.
    unsafe {
        #[cfg(not(feature = "pg19"))]
        {
            pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_SHARE as i32)
        }
        #[cfg(feature = "pg19")]
        {
            pg_sys::LockBufferInternal(buf, pg_sys::BufferLockMode::BUFFER_LOCK_SHARE)
        }
    }
}

/// The replication origin of this session's changes (0 for local ones): 19 moved
/// `replorigin_session_origin` into `replorigin_xact_state.origin`.
#[inline(always)]
pub fn session_replication_origin() -> u16 {
    // SAFETY: a plain read of a backend-global variable.
    unsafe {
        #[cfg(not(feature = "pg19"))]
        {
            pg_sys::replorigin_session_origin
        }
        #[cfg(feature = "pg19")]
        {
            pg_sys::replorigin_xact_state.origin
        }
    }
}
