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

use crate::pg::shmem::{self, InterruptibleLock};

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

/// The value of sequence `relid` if it can be read without waiting for a lock (the
/// monitoring views must not hang behind a transaction that dropped or altered it): `None`
/// for a fresh sequence, `Err` for one locked away.
pub fn read_without_waiting(relid: Oid) -> Result<Option<i64>, ()> {
    // SAFETY: a conditional lock request never waits; a lock taken is held to the end of the
    // transaction, as the read below would take it.
    let locked = unsafe {
        pg_sys::ConditionalLockRelationOid(relid, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE)
    };
    if locked {
        Ok(read(relid))
    } else {
        Err(())
    }
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
