//! The values in flight of this process's transaction (the table of every process's is
//! `core::inflight`): a generator publishes the transaction's entry for a sequence before the
//! transaction's first reservation from it, and
//! the entries go when the transaction ends, or move to the prepared transaction at PREPARE
//! TRANSACTION. What a transaction has published is also kept here, per cache slot, so that
//! every later value of the transaction costs the fast path one comparison.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use pgrx::pg_guard;
use pgrx::pg_sys;

use crate::core::cache::SlotRef;
use crate::core::inflight::{Held, Published, Value, ENTRIES};
use crate::core::wallclock;
use crate::pg::{procs, shmem};

/// The slots (`idx << 32 | generation`) this transaction has published an entry for, and
/// how many. Process-local: a backend is one thread; loads and stores only.
static PUBLISHED: [AtomicU64; ENTRIES] = [const { AtomicU64::new(0) }; ENTRIES];
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// Whether this transaction has published anything (an overflow included).
static HOLDS: AtomicBool = AtomicBool::new(false);
/// The transaction being prepared, from PRE_PREPARE to PREPARE.
static PREPARING: AtomicU32 = AtomicU32::new(0);

fn packed(at: SlotRef) -> u64 {
    (at.idx as u64) << 32 | u64::from(at.generation)
}

/// Whether this transaction has published its entry for the sequence in slot `at`.
#[inline(always)]
pub fn published(at: SlotRef) -> bool {
    let p = packed(at);
    PUBLISHED[..COUNT.load(Ordering::Relaxed)]
        .iter()
        .any(|e| e.load(Ordering::Relaxed) == p)
}

/// Where this transaction's entry for a sequence is, to raise it to its first value.
#[derive(Clone, Copy)]
pub struct Entry {
    me: usize,
    i: usize,
    at: SlotRef,
}

/// Publishes this transaction's entry for `held` (in cache slot `at`), `lower` at or below
/// anything its coming reservation takes, unless it has one; then a full fence, so that what
/// the caller reads of the slot next (does it still hold the sequence?) comes after the entry
/// is visible. Before the reservation; `Some` if the entry is new, to be [`raise`]d to the
/// reservation's first value.
pub fn hold(at: SlotRef, held: Held, lower: Value) -> Option<Entry> {
    let (holders, me) = (shmem::holders()?, shmem::my_entry()?);
    HOLDS.store(true, Ordering::Relaxed);
    match holders.hold(me, held, lower, wallclock::precise_unix_ms()) {
        Published::New(i) => Some(Entry { me, i, at }),
        // An entry holding an earlier value of the transaction (found again through another
        // cache slot), or every sequence of the database held: nothing to raise.
        Published::Had | Published::Overflow => {
            remember(at);
            None
        }
    }
}

/// After the reservation: the entry holds the transaction's first value, `first`. Only now
/// may the fast path take values under it: a reservation that failed (an ERROR a savepoint
/// caught) leaves it unraised, and the next value raises it.
pub fn raise(entry: Option<Entry>, first: Value) {
    if let (Some(e), Some(holders)) = (entry, shmem::holders()) {
        holders.raise(e.me, e.i, first);
        remember(e.at);
    }
}

/// The fast path may take values of the sequence in slot `at` in this transaction.
fn remember(at: SlotRef) {
    let n = COUNT.load(Ordering::Relaxed);
    if n < ENTRIES && !published(at) {
        PUBLISHED[n].store(packed(at), Ordering::Relaxed);
        COUNT.store(n + 1, Ordering::Relaxed);
    }
}

/// Registers the transaction callback in the postmaster, for every process it starts: a
/// PREPARE TRANSACTION of a transaction that generated nothing still records, for the
/// watermarks, that it holds nothing.
pub fn install() {
    // SAFETY: called once from _PG_init in the postmaster; the callback lives as long as the
    // process and its children.
    unsafe { pg_sys::RegisterXactCallback(Some(at_transaction_end), std::ptr::null_mut()) };
}

fn forget() {
    COUNT.store(0, Ordering::Relaxed);
    HOLDS.store(false, Ordering::Relaxed);
    PREPARING.store(0, Ordering::Relaxed);
}

#[pg_guard]
unsafe extern "C-unwind" fn at_transaction_end(event: pg_sys::XactEvent::Type, _arg: *mut c_void) {
    use pg_sys::XactEvent::*;
    // Every transaction of every process comes here: most published nothing.
    let nothing = !HOLDS.load(Ordering::Relaxed) && PREPARING.load(Ordering::Relaxed) == 0;
    if nothing && !matches!(event, XACT_EVENT_PRE_PREPARE | XACT_EVENT_PREPARE) {
        return;
    }
    let (Some(holders), Some(me)) = (shmem::holders(), shmem::my_entry()) else {
        return;
    };
    match event {
        // After the transaction has left the proc array: a snapshot taken after a watermark
        // that no longer sees its entries sees its commit.
        XACT_EVENT_COMMIT
        | XACT_EVENT_ABORT
        | XACT_EVENT_PARALLEL_COMMIT
        | XACT_EVENT_PARALLEL_ABORT => {
            holders.clear(me);
            forget();
        }
        XACT_EVENT_PRE_PREPARE => {
            // SAFETY: PrepareTransaction has assigned the transaction its xid already.
            let xid = unsafe { pg_sys::GetTopTransactionIdIfAny() };
            let xid = u32::from(xid);
            PREPARING.store(xid, Ordering::Relaxed);
            holders.preparing(me, xid);
        }
        XACT_EVENT_PREPARE => {
            let xid = PREPARING.load(Ordering::Relaxed);
            // The transaction was just prepared under `xid`: its PGPROC stays until COMMIT
            // PREPARED or ROLLBACK PREPARED, which wait for this backend to let go of it.
            // Holders are sized for every PGPROC, and the prepared transaction's has its xid
            // (were it not found, the entries would stay here, holding, only until the next
            // transaction of this backend that generates ends).
            if let Some(p) = procs::prepared_number(xid).filter(|&p| p < holders.capacity()) {
                holders.move_to_prepared(me, p, xid);
            }
            forget();
        }
        _ => {}
    }
}
