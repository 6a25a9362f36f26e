//! Extending a lease: under one lock for all sequences, the new lease is written to the
//! lease file (fsync), then to the WAL (flushed); only then may the caller publish it in
//! shared memory.
//!
//! The flush comes before any value under the new lease reaches a caller, not at commit as
//! for `nextval`: a value handed out by a transaction that writes nothing (an autocommit
//! `SELECT snowflake_next(...)`) has no commit record to wait for, and must not come back
//! after a crash either.

use pgrx::pg_sys;

use super::file::write_record;
use super::record::{Lease, LeaseRecord};
use super::wal;
use crate::registry::{Seq, SlotState};
use crate::shmem;

/// How long a waiter sleeps between attempts at the lock: it wakes at once for a cancel
/// request, a statement timeout or a terminate, which are checked after every wait.
const LOCK_POLL_MS: i64 = 1;

/// The lock that serialises lease extensions across all backends: an LWLock of the
/// extension's tranche, held by this backend while the value exists. PostgreSQL releases it
/// at transaction abort if an error escapes first.
pub struct LeaseLock {
    lock: *mut pg_sys::LWLock,
}

impl LeaseLock {
    /// Waits for the lock. Unlike a plain LWLock wait, the wait can be cancelled
    /// (`pg_cancel_backend`, `statement_timeout`): a backend queued behind a stalled fsync
    /// must not hang with it. Shows as the wait event `Extension` meanwhile.
    pub fn acquire() -> LeaseLock {
        let lock = shmem::lease_lock();
        // SAFETY: `lock` is the extension's LWLock in shared memory (generators only run with
        // the library preloaded), which lives as long as the server; a conditional acquire never sleeps. WaitLatch on MyLatch with a timeout
        // and postmaster-death exit is the standard interruptible wait, and the interrupt
        // check right after it raises a pending cancel or timeout as an ERROR.
        unsafe {
            while !pg_sys::LWLockConditionalAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE) {
                pg_sys::WaitLatch(
                    pg_sys::MyLatch,
                    (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH)
                        as i32,
                    LOCK_POLL_MS as _,
                    pg_sys::PG_WAIT_EXTENSION,
                );
                pg_sys::ResetLatch(pg_sys::MyLatch);
                pgrx::check_for_interrupts!();
            }
        }
        LeaseLock { lock }
    }

    /// Makes `lease` durable for `seq` (the lease file, then the WAL, flushed), then runs
    /// `publish`, which lets shared memory use it. False, with nothing written, if the
    /// sequence was dropped meanwhile (drops hold this lock): its record left the lease file
    /// with it, and the caller finds the name's new sequence. Raises an ERROR (58030) if the
    /// file cannot be written; nothing is published then.
    pub fn persist_then_publish<S: SlotState>(
        &self,
        seq: Seq<'_, S>,
        lease: Lease,
        publish: impl FnOnce(),
    ) -> bool {
        if !seq.is_current() {
            return false;
        }
        let slot = seq.slot();
        let record = LeaseRecord::new(slot.key(), slot.created_with(), lease);
        write_record(seq.idx(), &record);
        wal::log_and_flush(&record);
        publish();
        true
    }
}

impl Drop for LeaseLock {
    fn drop(&mut self) {
        // SAFETY: acquired in `acquire` by this backend and not yet released.
        unsafe { pg_sys::LWLockRelease(self.lock) };
    }
}
