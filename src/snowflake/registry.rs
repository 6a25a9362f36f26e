//! The table of named sequences: a fixed array of slots in shared memory, found by
//! (database, name) through lock-free open addressing.
//!
//! PURE: no pgrx here; the tests run it on a `Vec` from several threads.
//!
//! Slots are only ever added, never removed, so a probe can stop at the first free slot:
//! a key is always stored at or before the first slot that was free when it was inserted.
//! An all-zero slot is a free slot, so zeroed shared memory is a valid empty table.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Longest sequence name in bytes, like a PostgreSQL identifier (NAMEDATALEN - 1).
pub const MAX_NAME_LEN: usize = 63;

const FREE: u32 = 0;
const CLAIMING: u32 = 1;
const READY: u32 = 2;

/// Counters of one sequence. On its own cache line: every generating call writes here, while
/// the key above is read-only once published.
#[repr(C, align(64))]
#[derive(Default)]
pub struct SequenceState {
    /// Last tick handed out (0: none yet). See `clock`.
    pub tick: AtomicU64,
    /// IDs handed out since the server started.
    pub issued: AtomicU64,
    /// Reservations that ran out of counter and borrowed a later millisecond.
    pub borrowed: AtomicU64,
    /// Calls that found the wall clock earlier than the same backend had last seen it.
    pub clock_regressions: AtomicU64,
}

#[repr(C)]
pub struct Slot {
    status: AtomicU32,
    db: AtomicU32,
    name_len: AtomicU32,
    /// Written only by the backend that moved `status` from FREE to CLAIMING, read only
    /// after `status` is READY (release/acquire), never written again.
    name: UnsafeCell<[u8; MAX_NAME_LEN]>,
    pub state: SequenceState,
}

// SAFETY: the only non-atomic field, `name`, is written once by the single claimer before it
// publishes the slot with a release store, and read only after an acquire load sees READY.
unsafe impl Sync for Slot {}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            status: AtomicU32::new(FREE),
            db: AtomicU32::new(0),
            name_len: AtomicU32::new(0),
            name: UnsafeCell::new([0; MAX_NAME_LEN]),
            state: SequenceState::default(),
        }
    }
}

impl Slot {
    fn is_ready(&self) -> bool {
        self.status.load(Ordering::Acquire) == READY
    }

    /// The key of a READY slot.
    fn key(&self) -> (u32, &[u8]) {
        debug_assert!(self.is_ready());
        let len = self.name_len.load(Ordering::Relaxed) as usize;
        // SAFETY: the slot is READY (acquire), so `name` was fully written and is immutable.
        let name = unsafe { &(&*self.name.get())[..len] };
        (self.db.load(Ordering::Relaxed), name)
    }

    /// The sequence's name, in the database's encoding; the slot must be READY (as every
    /// slot `Registry` returns is).
    pub fn name(&self) -> &[u8] {
        self.key().1
    }

    pub fn db(&self) -> u32 {
        self.key().0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong,
}

pub fn check_name(name: &[u8]) -> Result<(), NameError> {
    match name.len() {
        0 => Err(NameError::Empty),
        n if n > MAX_NAME_LEN => Err(NameError::TooLong),
        _ => Ok(()),
    }
}

/// Every slot is taken by another (database, name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

pub struct Registry<'a> {
    slots: &'a [Slot],
}

impl<'a> Registry<'a> {
    pub fn new(slots: &'a [Slot]) -> Self {
        Registry { slots }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The slot of (db, name), claiming a free one if the sequence is new.
    /// `name` must have passed [`check_name`].
    pub fn find_or_insert(&self, db: u32, name: &[u8]) -> Result<usize, Full> {
        debug_assert_eq!(check_name(name), Ok(()));
        let cap = self.slots.len();
        let start = (hash(db, name) % cap as u64) as usize;
        for step in 0..cap {
            let idx = (start + step) % cap;
            let slot = &self.slots[idx];
            loop {
                match slot.status.load(Ordering::Acquire) {
                    READY if slot.key() == (db, name) => return Ok(idx),
                    READY => break,
                    FREE => {
                        if slot
                            .status
                            .compare_exchange(FREE, CLAIMING, Ordering::Acquire, Ordering::Acquire)
                            .is_ok()
                        {
                            slot.db.store(db, Ordering::Relaxed);
                            slot.name_len.store(name.len() as u32, Ordering::Relaxed);
                            // SAFETY: we own the slot (FREE -> CLAIMING); nobody reads `name`
                            // until the release store of READY below.
                            unsafe { (&mut *slot.name.get())[..name.len()].copy_from_slice(name) };
                            slot.status.store(READY, Ordering::Release);
                            return Ok(idx);
                        }
                        // Lost the race for this slot: look at it again.
                    }
                    // Another backend is writing the key: a handful of stores.
                    _ => std::hint::spin_loop(),
                }
            }
        }
        Err(Full)
    }

    pub fn slot(&self, idx: usize) -> &'a Slot {
        &self.slots[idx]
    }

    /// As [`Registry::slot`], for callers that must not panic.
    pub fn get(&self, idx: usize) -> Option<&'a Slot> {
        self.slots.get(idx)
    }

    /// Every sequence of `db`, in slot order.
    pub fn of_database(&self, db: u32) -> impl Iterator<Item = &'a Slot> + '_ {
        self.slots
            .iter()
            .filter(move |s| s.is_ready() && s.db() == db)
    }
}

/// FNV-1a: tiny, good enough to spread a few hundred short names.
fn hash(db: u32, name: &[u8]) -> u64 {
    db.to_le_bytes()
        .iter()
        .chain(name)
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn table(n: usize) -> Vec<Slot> {
        (0..n).map(|_| Slot::default()).collect()
    }

    #[test]
    fn same_key_same_slot_other_db_other_slot() {
        let slots = table(8);
        let r = Registry::new(&slots);
        let a = r.find_or_insert(1, b"orders").unwrap();
        assert_eq!(r.find_or_insert(1, b"orders"), Ok(a));
        let b = r.find_or_insert(2, b"orders").unwrap();
        assert_ne!(a, b);
        assert_eq!(r.slot(a).name(), b"orders");
        assert_eq!(r.slot(b).db(), 2);
        assert_eq!(r.of_database(1).count(), 1);
    }

    #[test]
    fn full_table_is_reported_but_existing_names_still_resolve() {
        let slots = table(3);
        let r = Registry::new(&slots);
        for name in [b"a", b"b", b"c"] {
            r.find_or_insert(7, name).unwrap();
        }
        assert_eq!(r.find_or_insert(7, b"d"), Err(Full));
        assert!(r.find_or_insert(7, b"b").is_ok());
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(check_name(b""), Err(NameError::Empty));
        assert_eq!(check_name(&[b'x'; 64]), Err(NameError::TooLong));
        assert_eq!(check_name(&[b'x'; 63]), Ok(()));
    }

    #[test]
    fn zeroed_memory_is_an_empty_table() {
        // Shared memory arrives zeroed; a zeroed Slot must read as FREE with zero counters.
        let zeroed: Slot = unsafe { std::mem::zeroed() };
        assert_eq!(zeroed.status.load(Ordering::Relaxed), FREE);
        assert_eq!(zeroed.state.tick.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn concurrent_inserts_agree_on_one_slot_per_name() {
        let slots = table(64);
        let results: Vec<Vec<usize>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        let r = Registry::new(&slots);
                        (0..48)
                            .map(|i| r.find_or_insert(1, format!("seq{i}").as_bytes()).unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results.windows(2).all(|w| w[0] == w[1]));
        let distinct: HashSet<_> = results[0].iter().collect();
        assert_eq!(distinct.len(), 48);
    }
}
