//! A sequence's durable state is its relation's value (see `catalog`): read it, and make a new
//! one durable before shared memory may use it.
//!
//! A lease extension is `setval(relation, value, true)`: non-transactional and WAL-logged by
//! PostgreSQL itself (a rollback keeps it, a standby replays it, a dump carries it), then
//! `XLogFlush` of the record before anything under the new lease reaches a caller. `nextval`
//! leaves the flush to the commit of a transaction that wrote; a lease cannot wait for that,
//! since a value may leave in a transaction that writes nothing, and must not come back after
//! a crash either. `setval` gives the calling transaction an XID, so that its commit also
//! waits for synchronous standbys.
//!
//! Both run as the bootstrap superuser: they are internal state of a sequence the caller has
//! been allowed to use (see `privileges`), not an `UPDATE` of it, and run no code of anyone's
//! (PostgreSQL's own functions on a sequence, which has no triggers). The caller holds the
//! relation's lock already (`RowExclusiveLock`, taken once per transaction when it was
//! resolved), so neither waits for a lock here, where an extension lock is held.
//!
//! Extensions of one sequence are serialised by one of the extension's locks (see `shmem`),
//! chosen by the sequence's identity; a backend waiting for one can be cancelled.

use pgrx::pg_sys::{self, Datum, Oid};

use crate::core::cache::Key;
use crate::core::identity::Kind;
use crate::pg::shmem::{self, InterruptibleLock};
use crate::sequences::name_floors_xact;

/// Waits for the extension lock of the sequence whose cache key hashes to `hash`; the wait
/// can be cancelled and shows as the wait event `Extension`.
pub fn lock_extensions(hash: u64) -> InterruptibleLock {
    InterruptibleLock::acquire(shmem::extension_lock(hash))
}

/// Runs `f` as the bootstrap superuser, in a security-restricted operation: the privilege
/// checks of `setval` and `pg_sequence_last_value` pass, and nothing `f` could reach may
/// change the session. A transaction abort restores the caller's identity if an error
/// escapes.
fn as_superuser<R>(f: impl FnOnce() -> R) -> R {
    let (mut user, mut context) = (pg_sys::InvalidOid, 0);
    // SAFETY: the pattern PostgreSQL's own maintenance commands use; restored below.
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        pg_sys::SetUserIdAndSecContext(
            pg_sys::Oid::from(pg_sys::BOOTSTRAP_SUPERUSERID),
            context
                | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32
                | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
        );
    }
    let r = f();
    // SAFETY: puts back what was read above.
    unsafe { pg_sys::SetUserIdAndSecContext(user, context) };
    r
}

/// The value of sequence `relid`, or `None` if it is fresh (`is_called` false: it has never
/// leased anything).
pub fn read(relid: Oid) -> Option<i64> {
    as_superuser(|| {
        // SAFETY: a V1 call of PostgreSQL's pg_sequence_last_value(regclass) with one non-null
        // argument, through a FunctionCallInfo sized for it; it returns NULL (isnull) for a
        // sequence whose is_called is false.
        unsafe {
            let size = std::mem::size_of::<pg_sys::FunctionCallInfoBaseData>()
                + std::mem::size_of::<pg_sys::NullableDatum>();
            let fcinfo = pg_sys::palloc0(size).cast::<pg_sys::FunctionCallInfoBaseData>();
            (*fcinfo).nargs = 1;
            (*fcinfo).fncollation = pg_sys::InvalidOid;
            let arg = (*fcinfo).args.as_mut_ptr();
            *arg = pg_sys::NullableDatum {
                value: Datum::from(relid),
                isnull: false,
            };
            let value = pg_sys::pg_sequence_last_value(fcinfo);
            let isnull = (*fcinfo).isnull;
            pg_sys::pfree(fcinfo.cast());
            (!isnull).then_some(value.value() as i64)
        }
    })
}

/// AccessShareLock on a sequence for the time one row of a monitoring view takes, released
/// after it, never kept to the end of the transaction: the views list every sequence of the
/// database, and 100,000 locks held at once exhaust the shared lock table
/// (`max_locks_per_transaction` x `max_connections`), "out of shared memory". While it is held
/// the sequence cannot be dropped or renamed (AccessExclusiveLock); the generators
/// (RowExclusiveLock) and `ALTER SEQUENCE` (ShareRowExclusiveLock) go on.
///
/// The value is read from the sequence's page here rather than by `pg_sequence_last_value`,
/// which (PostgreSQL 15 to 18, sequence.c: `init_sequence`, `lock_and_open_sequence`) takes
/// RowExclusiveLock under the top transaction's resource owner and records in the backend's
/// table of sequences that this transaction holds it: releasing that lock afterwards would
/// leave a record that lets a later `setval` in the transaction run without a lock. (18's
/// `pg_get_sequence_data` reads as this does, AccessShareLock released at close; 15 and 17
/// have nothing of the kind.)
#[must_use = "release() it once the row is read"]
pub struct ShareLocked {
    relid: Oid,
}

/// The value of sequence `relid`, which the caller holds a lock on (any mode): `None` if it is
/// fresh (`is_called` false); `Err` if it is gone (dropped before the lock was taken) or its
/// page is not a sequence's. Read from the page, without `pg_sequence_last_value`'s
/// RowExclusiveLock (see [`ShareLocked`]).
pub fn read_locked(relid: Oid) -> Result<Option<i64>, ()> {
    // SAFETY: try_relation_open with NoLock (the lock is held) returns NULL for a relation
    // that no longer exists, else an open relation, closed below; a sequence's block 0 always
    // exists, and is read pinned and share-locked (nextval and setval change it in place under
    // an exclusive lock), then released.
    unsafe {
        let rel = pg_sys::try_relation_open(relid, pg_sys::NoLock as pg_sys::LOCKMODE);
        if rel.is_null() {
            return Err(());
        }
        let r = if (*(*rel).rd_rel).relkind as u8 == pg_sys::RELKIND_SEQUENCE {
            let buf = pg_sys::ReadBuffer(rel, 0);
            crate::pg::pgcompat::lock_buffer_share(buf);
            let r = sequence_value(pg_sys::BufferGetPage(buf).cast::<u8>());
            pg_sys::UnlockReleaseBuffer(buf);
            r
        } else {
            Err(())
        };
        pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        r
    }
}

/// `SEQ_MAGIC` of sequence.c: the special space of a sequence's page.
const SEQ_MAGIC: u32 = 0x1717;

impl ShareLocked {
    /// The lock on sequence `relid` if it can be had without waiting (a view must not hang
    /// behind a transaction that drops or renames the sequence), else `None`. Taking it reads
    /// the invalidation messages: a sequence whose drop committed meanwhile is gone from the
    /// caches once this returns.
    pub fn try_lock(relid: Oid) -> Option<Self> {
        // SAFETY: a conditional lock request never waits; release() gives it back.
        let locked = unsafe {
            pg_sys::ConditionalLockRelationOid(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE)
        };
        locked.then_some(Self { relid })
    }

    /// The value of the sequence, `None` if it is fresh (`is_called` false); `Err` if it is
    /// gone (dropped before the lock was taken) or its page is not a sequence's.
    pub fn read(&self) -> Result<Option<i64>, ()> {
        read_locked(self.relid)
    }

    /// Gives the lock back. (An ERROR before this gives it back with the transaction.)
    pub fn release(self) {
        // SAFETY: releases the one AccessShareLock try_lock took; a lock of the same mode the
        // transaction took otherwise is counted apart and stays.
        unsafe {
            pg_sys::UnlockRelationOid(self.relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE)
        };
    }

    /// Runs `f` with sequence `relid` locked for the call only (`None`: it could not be had
    /// without waiting): the monitoring views read every sequence, and must neither hold a
    /// lock per sequence to the end of the transaction nor wait. Taken first, so that a
    /// sequence dropped before is seen gone and one locked cannot go meanwhile. An ERROR
    /// inside leaves the lock to the end of the transaction.
    pub fn for_one_row<R>(relid: Oid, f: impl FnOnce(Option<&ShareLocked>) -> R) -> R {
        let locked = Self::try_lock(relid);
        let r = f(locked.as_ref());
        if let Some(l) = locked {
            l.release();
        }
        r
    }
}

/// `last_value` of the sequence tuple on `page` (sequence.c's `read_seq_tuple`: the magic in
/// the special space, one tuple at offset 1 holding `FormData_pg_sequence_data`), `None` if
/// `is_called` is false; `Err` for a page not laid out so.
///
/// # Safety
/// `page` is a pinned and locked page of `BLCKSZ` bytes.
unsafe fn sequence_value(page: *const u8) -> Result<Option<i64>, ()> {
    use std::mem::{offset_of, size_of};
    // FormData_pg_sequence_data (commands/sequence.h): last_value, log_cnt, is_called.
    const LAST_VALUE: usize = 0;
    const IS_CALLED: usize = 16;
    let block = pg_sys::BLCKSZ as usize;
    let linp = offset_of!(pg_sys::PageHeaderData, pd_linp);
    // SAFETY: every read below is within the page: offsets are checked against BLCKSZ, the
    // special space and the item's length first, and read unaligned.
    unsafe {
        let header = page.cast::<pg_sys::PageHeaderData>().read_unaligned();
        let special = usize::from(header.pd_special);
        if special + size_of::<u32>() > block
            || usize::from(header.pd_lower) < linp + size_of::<pg_sys::ItemIdData>()
            || page.add(special).cast::<u32>().read_unaligned() != SEQ_MAGIC
        {
            return Err(());
        }
        let item = page.add(linp).cast::<pg_sys::ItemIdData>().read_unaligned();
        let (off, len) = (item.lp_off() as usize, item.lp_len() as usize);
        if item.lp_flags() != pg_sys::LP_NORMAL || off + len > special {
            return Err(());
        }
        let tuple = page.add(off);
        let hoff = usize::from(
            tuple
                .cast::<pg_sys::HeapTupleHeaderData>()
                .read_unaligned()
                .t_hoff,
        );
        if hoff + IS_CALLED + 1 > len {
            return Err(());
        }
        let data = tuple.add(hoff);
        let is_called = data.add(IS_CALLED).read() != 0;
        Ok(is_called.then(|| data.add(LAST_VALUE).cast::<i64>().read_unaligned()))
    }
}

/// Extends the lease of the sequence of cache entry `cache`, of `kind`, to `value`: if the
/// current transaction made the relation, the floor of its name is raised first (see
/// `name_floors_xact`: a rollback would take the relation with it); then [`write_and_flush`].
pub fn extend_lease(kind: Kind, cache: Key, value: i64) {
    name_floors_xact::before_lease(kind, cache, value);
    write_and_flush(Oid::from(cache.relid), value);
}

/// Sets the value of sequence `relid` (`setval(relid, value, true)`) and waits until the WAL
/// record of it is flushed: once this returns, the value survives a crash.
pub fn write_and_flush(relid: Oid, value: i64) {
    as_superuser(|| {
        // SAFETY: setval3_oid is PostgreSQL's setval(regclass, bigint, boolean), called
        // through its V1 interface with three non-null arguments; it raises an ERROR for a
        // value outside the sequence's bounds (which callers keep to), and WAL-logs the change
        // (XactLastRecEnd is then the end of that record).
        unsafe {
            pg_sys::DirectFunctionCall3Coll(
                Some(setval3_oid),
                pg_sys::InvalidOid,
                Datum::from(relid),
                Datum::from(value),
                Datum::from(true),
            );
            pg_sys::XLogFlush(pg_sys::XactLastRecEnd);
        }
    })
}

unsafe extern "C-unwind" {
    // setval(regclass, bigint, boolean), as a function pointer for DirectFunctionCall.
    fn setval3_oid(fcinfo: pg_sys::FunctionCallInfo) -> Datum;
}
