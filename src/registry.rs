//! The table of named sequences: a fixed array of slots in shared memory, found by
//! (database, kind, name) through lock-free open addressing.
//!
//! PURE: no pgrx here; the tests run it on a `Vec` from several threads.
//!
//! Slots are only ever added, never removed, so a probe can stop at the first free slot:
//! a key is always stored at or before the first slot that was free when it was inserted.
//! An all-zero slot is a free slot, so zeroed shared memory is a valid empty table.
//! Both generators share the table: a snowflake sequence and a gdid sequence never collide
//! because the kind is part of the key.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

/// Longest snowflake sequence name, gdid scope or gdid sequence name in bytes, like a
/// PostgreSQL identifier (NAMEDATALEN - 1).
pub const MAX_NAME_LEN: usize = 63;

/// Longest key name: a gdid key is `scope NUL sequence`.
pub const MAX_KEY_LEN: usize = 2 * MAX_NAME_LEN + 1;

const FREE: u32 = 0;
const CLAIMING: u32 = 1;
const READY: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Snowflake = 1,
    Gdid = 2,
}

impl Kind {
    pub fn from_u8(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Snowflake),
            2 => Some(Kind::Gdid),
            _ => None,
        }
    }
}

/// What identifies a sequence. Names are bytes in the database's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key<'k> {
    pub db: u32,
    pub kind: Kind,
    pub name: &'k [u8],
}

/// The snowflake layout a sequence was created with (zero for gdid sequences). Kept with
/// the sequence, durably, so that a later change of the settings cannot go unnoticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recorded {
    pub epoch_ms: i64,
    pub node_bits: u32,
}

/// The moving parts of one sequence. On its own cache line: every generating call writes
/// here, while the key above is read-only once published.
///
/// For a snowflake sequence `tick` is the last tick handed out (see `clock`) and
/// `lease_end` the first tick not yet covered by the durable lease. For a gdid sequence
/// `tick` is the counter word (see `gdid::counter`), `lease_end` the first counter of `era`
/// not covered by the lease.
#[repr(C, align(64))]
#[derive(Default)]
pub struct SequenceState {
    pub tick: AtomicU64,
    pub lease_end: AtomicU64,
    pub era: AtomicU32,
    /// IDs handed out since the server started.
    pub issued: AtomicU64,
    /// Snowflake reservations that ran out of counter and borrowed a later millisecond.
    pub borrowed: AtomicU64,
    /// Snowflake calls that found the wall clock earlier than the same backend last saw it.
    pub clock_regressions: AtomicU64,
    /// Lease extensions since the server started.
    pub lease_extensions: AtomicU64,
    /// Wall-clock time (Unix ms) of the last lease extension; sizes the next gdid block.
    pub last_extension_ms: AtomicI64,
    /// gdid: counters the last lease extension covered.
    pub block: AtomicU64,
}

/// Written once by the claimer before the slot is published, immutable afterwards.
struct Meta {
    kind: u8,
    len: u8,
    name: [u8; MAX_KEY_LEN],
    recorded: Recorded,
}

#[repr(C)]
pub struct Slot {
    status: AtomicU32,
    db: AtomicU32,
    /// Written only by the backend that moved `status` from FREE to CLAIMING, read only
    /// after `status` is READY (release/acquire), never written again.
    meta: UnsafeCell<Meta>,
    pub state: SequenceState,
}

// SAFETY: the only non-atomic field, `meta`, is written once by the single claimer before it
// publishes the slot with a release store, and read only after an acquire load sees READY.
unsafe impl Sync for Slot {}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            status: AtomicU32::new(FREE),
            db: AtomicU32::new(0),
            meta: UnsafeCell::new(Meta {
                kind: 0,
                len: 0,
                name: [0; MAX_KEY_LEN],
                recorded: Recorded::default(),
            }),
            state: SequenceState::default(),
        }
    }
}

impl Slot {
    fn is_ready(&self) -> bool {
        self.status.load(Ordering::Acquire) == READY
    }

    fn meta(&self) -> &Meta {
        debug_assert!(self.is_ready());
        // SAFETY: the slot is READY (acquire), so `meta` was fully written and is immutable.
        unsafe { &*self.meta.get() }
    }

    /// The key of a READY slot (every slot `Registry` hands out is READY).
    pub fn key(&self) -> Key<'_> {
        let m = self.meta();
        Key {
            db: self.db.load(Ordering::Relaxed),
            // Only valid kinds are ever written (find_or_insert takes a Kind).
            kind: Kind::from_u8(m.kind).unwrap_or(Kind::Snowflake),
            name: &m.name[..m.len as usize],
        }
    }

    /// The name, in the database's encoding.
    pub fn name(&self) -> &[u8] {
        self.key().name
    }

    pub fn db(&self) -> u32 {
        self.db.load(Ordering::Relaxed)
    }

    pub fn recorded(&self) -> Recorded {
        self.meta().recorded
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong,
    /// A NUL byte; only possible from a bytea-built text, but the gdid key uses NUL.
    Nul,
}

pub fn check_name(name: &[u8]) -> Result<(), NameError> {
    match name.len() {
        0 => Err(NameError::Empty),
        n if n > MAX_NAME_LEN => Err(NameError::TooLong),
        _ if name.contains(&0) => Err(NameError::Nul),
        _ => Ok(()),
    }
}

/// The key name of gdid sequence `sequence` in `scope`, both checked by [`check_name`].
pub fn gdid_key_name(scope: &[u8], sequence: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(scope.len() + 1 + sequence.len());
    k.extend_from_slice(scope);
    k.push(0);
    k.extend_from_slice(sequence);
    k
}

/// Every slot is taken by another key.
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

    /// The slot of `key`, claiming a free one if the sequence is new; a new slot records
    /// `recorded`, an existing one keeps what it has. The key name must be at most
    /// [`MAX_KEY_LEN`] bytes.
    pub fn find_or_insert(&self, key: Key<'_>, recorded: Recorded) -> Result<usize, Full> {
        debug_assert!(!key.name.is_empty() && key.name.len() <= MAX_KEY_LEN);
        let cap = self.slots.len();
        let start = (hash(&key) % cap as u64) as usize;
        for step in 0..cap {
            let idx = (start + step) % cap;
            let slot = &self.slots[idx];
            loop {
                match slot.status.load(Ordering::Acquire) {
                    READY if slot.key() == key => return Ok(idx),
                    READY => break,
                    FREE => {
                        if slot
                            .status
                            .compare_exchange(FREE, CLAIMING, Ordering::Acquire, Ordering::Acquire)
                            .is_ok()
                        {
                            slot.db.store(key.db, Ordering::Relaxed);
                            // SAFETY: we own the slot (FREE -> CLAIMING); nobody reads `meta`
                            // until the release store of READY below.
                            let m = unsafe { &mut *slot.meta.get() };
                            m.kind = key.kind as u8;
                            m.len = key.name.len() as u8;
                            m.name[..key.name.len()].copy_from_slice(key.name);
                            m.recorded = recorded;
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

    /// Every sequence of `kind` in `db`, in slot order.
    pub fn of_database(&self, db: u32, kind: Kind) -> impl Iterator<Item = &'a Slot> + '_ {
        self.slots
            .iter()
            .filter(move |s| s.is_ready() && s.db() == db && s.key().kind == kind)
    }

    /// Every sequence with its slot index.
    pub fn all(&self) -> impl Iterator<Item = (usize, &'a Slot)> + '_ {
        self.slots.iter().enumerate().filter(|(_, s)| s.is_ready())
    }
}

/// FNV-1a: tiny, good enough to spread a few hundred short names.
fn hash(key: &Key<'_>) -> u64 {
    key.db
        .to_le_bytes()
        .iter()
        .chain(&[key.kind as u8])
        .chain(key.name)
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

    const REC: Recorded = Recorded {
        epoch_ms: 1_735_689_600_000,
        node_bits: 10,
    };

    fn sf(db: u32, name: &[u8]) -> Key<'_> {
        Key {
            db,
            kind: Kind::Snowflake,
            name,
        }
    }

    #[test]
    fn same_key_same_slot_other_db_other_slot() {
        let slots = table(8);
        let r = Registry::new(&slots);
        let a = r.find_or_insert(sf(1, b"orders"), REC).unwrap();
        assert_eq!(r.find_or_insert(sf(1, b"orders"), REC), Ok(a));
        let b = r.find_or_insert(sf(2, b"orders"), REC).unwrap();
        assert_ne!(a, b);
        let g = Key {
            kind: Kind::Gdid,
            ..sf(1, b"orders")
        };
        let c = r.find_or_insert(g, Recorded::default()).unwrap();
        assert!(c != a && c != b);
        assert_eq!(r.slot(a).name(), b"orders");
        assert_eq!(r.slot(a).recorded(), REC);
        assert_eq!(r.slot(c).key(), g);
        assert_eq!(r.slot(b).db(), 2);
        assert_eq!(r.of_database(1, Kind::Snowflake).count(), 1);
        assert_eq!(r.all().count(), 3);
    }

    #[test]
    fn full_table_is_reported_but_existing_names_still_resolve() {
        let slots = table(3);
        let r = Registry::new(&slots);
        for name in [b"a", b"b", b"c"] {
            r.find_or_insert(sf(7, name), REC).unwrap();
        }
        assert_eq!(r.find_or_insert(sf(7, b"d"), REC), Err(Full));
        assert!(r.find_or_insert(sf(7, b"b"), REC).is_ok());
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(check_name(b""), Err(NameError::Empty));
        assert_eq!(check_name(&[b'x'; 64]), Err(NameError::TooLong));
        assert_eq!(check_name(&[b'x'; 63]), Ok(()));
        assert_eq!(check_name(b"a\0b"), Err(NameError::Nul));
        assert_eq!(gdid_key_name(b"s", b"q"), b"s\0q");
    }

    #[test]
    fn a_slot_is_320_bytes_as_documented() {
        // README and the snowflake.max_sequences description quote this size.
        assert_eq!(std::mem::size_of::<Slot>(), 320);
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
                            .map(|i| {
                                let name = format!("seq{i}");
                                r.find_or_insert(sf(1, name.as_bytes()), REC).unwrap()
                            })
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
