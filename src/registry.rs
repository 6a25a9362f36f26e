//! The table of named sequences: a fixed array of slots in shared memory, found by
//! (database, kind, name) through lock-free open addressing.
//!
//! PURE: no pgrx here; the tests run it on a `Vec` from several threads.
//!
//! Slots are only ever added while the server runs, never freed: a dropped sequence's slot
//! becomes DROPPED, which probes pass over like a slot of another key, and is free again only
//! when the table is rebuilt at the next start. So a probe can stop at the first free slot: a
//! key is always stored at or before the first slot that was free when it was inserted, and a
//! slot a backend holds always belongs to the key it looked up. An all-zero slot is a free
//! slot, so zeroed shared memory is a valid empty table.
//! Both generators share the table: a snowflake sequence and a gdid sequence never collide
//! because the kind is part of the key.
//!
//! The table does not know what a sequence's state words mean. Each kind declares its own
//! [`SlotState`] type, and [`Slot::state`] hands a slot's words out only as the type of the
//! slot's own kind: gdid code cannot read a snowflake slot by mistake.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Longest key name: a gdid key is `scope NUL sequence`, each at most
/// [`crate::sequence_id::MAX_NAME_LEN`] bytes.
pub const MAX_KEY_LEN: usize = 127;

const FREE: u32 = 0;
const CLAIMING: u32 = 1;
const READY: u32 = 2;
const DROPPED: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    Snowflake = 1,
    Gdid = 2,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Snowflake => "snowflake",
            Kind::Gdid => "gdid",
        })
    }
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

/// What identifies a sequence in the table and on disk. `name` is the key name (see
/// [`crate::sequence_id`]), bytes in the database's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key<'k> {
    pub db: u32,
    pub kind: Kind,
    pub name: &'k [u8],
}

impl Key<'_> {
    pub fn to_owned(self) -> OwnedKey {
        OwnedKey {
            db: self.db,
            kind: self.kind,
            name: self.name.to_vec(),
        }
    }
}

/// A [`Key`] that owns its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnedKey {
    pub db: u32,
    pub kind: Kind,
    pub name: Vec<u8>,
}

impl OwnedKey {
    pub fn key(&self) -> Key<'_> {
        Key {
            db: self.db,
            kind: self.kind,
            name: &self.name,
        }
    }
}

/// The snowflake layout a sequence was created with: its epoch and node width (zero for gdid
/// sequences). Kept with the sequence, durably, so that a later change of the settings cannot
/// go unnoticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CreationLayout {
    pub epoch_ms: i64,
    pub node_bits: u32,
}

/// Bytes of state words every slot has room for.
pub const STATE_SIZE: usize = 128;

/// The state words of a slot, uninterpreted: zero until the slot's kind gives them a meaning.
/// On cache lines of their own, since every generating call writes here while the key is
/// read-only once published.
#[repr(C, align(64))]
#[derive(Default)]
struct StateWords([AtomicU64; STATE_SIZE / 8]);

/// The state of one kind of sequence, laid over a slot's state words.
///
/// # Safety
/// The implementing type is `#[repr(C)]`, made only of atomic integers (so that all-zero
/// bytes are a valid value and shared access needs no lock), at most [`STATE_SIZE`] bytes
/// and aligned to at most 64.
pub unsafe trait SlotState: Sync + 'static {
    /// The kind of sequence whose slots hold this state.
    const KIND: Kind;
}

/// Written once by the claimer before the slot is published, immutable afterwards.
struct Meta {
    kind: u8,
    len: u8,
    name: [u8; MAX_KEY_LEN],
    created_with: CreationLayout,
}

#[repr(C)]
pub struct Slot {
    status: AtomicU32,
    db: AtomicU32,
    /// Written only by the backend that moved `status` from FREE to CLAIMING, read only
    /// after `status` is READY (release/acquire), never written again.
    meta: UnsafeCell<Meta>,
    /// Whether the sequence has been brought above the values already stored in the columns
    /// that take their defaults from it (see `seed`): one this server learnt from its lease
    /// file or its WAL needs nothing, one it meets for the first time does.
    seeded: AtomicBool,
    state: StateWords,
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
                created_with: CreationLayout::default(),
            }),
            seeded: AtomicBool::new(false),
            state: StateWords::default(),
        }
    }
}

impl Slot {
    fn is_ready(&self) -> bool {
        self.status.load(Ordering::Acquire) == READY
    }

    /// Whether the sequence was dropped: its name now leads to another slot (or none).
    pub fn is_dropped(&self) -> bool {
        self.status.load(Ordering::Acquire) == DROPPED
    }

    fn meta(&self) -> &Meta {
        debug_assert!(matches!(
            self.status.load(Ordering::Acquire),
            READY | DROPPED
        ));
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

    pub fn kind(&self) -> Kind {
        self.key().kind
    }

    pub fn created_with(&self) -> CreationLayout {
        self.meta().created_with
    }

    pub fn is_seeded(&self) -> bool {
        self.seeded.load(Ordering::Acquire)
    }

    /// Records that the sequence is above the stored values. Backends that find it unseeded
    /// at the same time each seed it: seeding only ever raises a sequence, so doing it twice
    /// is harmless, and no backend waits for another (whose seeding query may wait for a
    /// lock the first one holds).
    pub fn mark_seeded(&self) {
        self.seeded.store(true, Ordering::Release);
    }

    /// The slot's state words as `S`, if the slot holds a sequence of `S`'s kind that was
    /// not dropped.
    #[inline]
    pub fn state<S: SlotState>(&self) -> Option<&S> {
        const {
            assert!(std::mem::size_of::<S>() <= STATE_SIZE);
            assert!(std::mem::align_of::<S>() <= 64);
        }
        if !self.is_ready() || self.meta().kind != S::KIND as u8 {
            return None;
        }
        // SAFETY: StateWords is STATE_SIZE bytes of atomics aligned to 64; S fits in it (checked
        // above at compile time), is made only of atomics and valid when zeroed (SlotState's
        // contract), so any bytes the words hold are a valid S, shared access included.
        Some(unsafe { &*std::ptr::from_ref(&self.state).cast::<S>() })
    }
}

/// Every slot is taken by another key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// What a probe for a key found.
enum Probe {
    Found(usize),
    Free(usize),
    Full,
}

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

    /// The slot of `key`, if the sequence exists.
    pub fn find(&self, key: Key<'_>) -> Option<usize> {
        match self.probe(key) {
            Probe::Found(idx) => Some(idx),
            Probe::Free(_) | Probe::Full => None,
        }
    }

    /// The slot of `key`, claiming a free one if the sequence is new; a new slot records
    /// `created_with` and whether it is `seeded` already (see [`Slot::is_seeded`]), an
    /// existing one keeps what it has. The key name must be at most [`MAX_KEY_LEN`] bytes.
    pub fn find_or_insert(
        &self,
        key: Key<'_>,
        created_with: CreationLayout,
        seeded: bool,
    ) -> Result<usize, Full> {
        debug_assert!(!key.name.is_empty() && key.name.len() <= MAX_KEY_LEN);
        loop {
            let idx = match self.probe(key) {
                Probe::Found(idx) => return Ok(idx),
                Probe::Full => return Err(Full),
                Probe::Free(idx) => idx,
            };
            let slot = &self.slots[idx];
            if slot
                .status
                .compare_exchange(FREE, CLAIMING, Ordering::Acquire, Ordering::Acquire)
                .is_ok()
            {
                slot.db.store(key.db, Ordering::Relaxed);
                // SAFETY: we own the slot (FREE -> CLAIMING); nobody reads `meta` until the
                // release store of READY below.
                let m = unsafe { &mut *slot.meta.get() };
                m.kind = key.kind as u8;
                m.len = key.name.len() as u8;
                m.name[..key.name.len()].copy_from_slice(key.name);
                m.created_with = created_with;
                slot.seeded.store(seeded, Ordering::Relaxed);
                slot.status.store(READY, Ordering::Release);
                return Ok(idx);
            }
            // Another backend took the slot first, perhaps for this very key: probe again.
        }
    }

    /// Where `key` is, or else the first free slot on its path (where it would go).
    fn probe(&self, key: Key<'_>) -> Probe {
        let cap = self.slots.len();
        let start = (hash(&key) % cap as u64) as usize;
        for step in 0..cap {
            let idx = (start + step) % cap;
            let slot = &self.slots[idx];
            loop {
                match slot.status.load(Ordering::Acquire) {
                    READY if slot.key() == key => return Probe::Found(idx),
                    READY | DROPPED => break,
                    FREE => return Probe::Free(idx),
                    // Another backend is writing a key: a handful of stores.
                    _ => std::hint::spin_loop(),
                }
            }
        }
        Probe::Full
    }

    pub fn slot(&self, idx: usize) -> &'a Slot {
        &self.slots[idx]
    }

    /// As [`Registry::slot`], for callers that must not panic.
    pub fn get(&self, idx: usize) -> Option<&'a Slot> {
        self.slots.get(idx)
    }

    /// Drops the sequence in slot `idx`: lookups no longer find it, and its slot is free again
    /// at the next start. False if it was not there (dropped already).
    pub fn drop_slot(&self, idx: usize) -> bool {
        self.slots[idx]
            .status
            .compare_exchange(READY, DROPPED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// How many sequences of database `db` (of either kind) hold a slot, dropped ones too,
    /// since they keep it until the next start.
    pub fn count_in_database(&self, db: u32) -> usize {
        self.slots
            .iter()
            .filter(|s| {
                matches!(s.status.load(Ordering::Acquire), READY | DROPPED)
                    && s.db.load(Ordering::Relaxed) == db
            })
            .count()
    }

    /// Every sequence of `kind` in `db`, with its slot index, in slot order.
    pub fn of_database(&self, db: u32, kind: Kind) -> impl Iterator<Item = (usize, &'a Slot)> + '_ {
        self.slots.iter().enumerate().filter(move |(_, s)| {
            s.is_ready() && s.db.load(Ordering::Relaxed) == db && s.kind() == kind
        })
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
pub(crate) mod tests {
    use super::*;
    use std::collections::HashSet;

    pub fn table(n: usize) -> Vec<Slot> {
        (0..n).map(|_| Slot::default()).collect()
    }

    const LAYOUT: CreationLayout = CreationLayout {
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

    #[repr(C)]
    #[derive(Default)]
    struct SnowflakeWords {
        a: AtomicU64,
    }
    // SAFETY: repr(C), one atomic, 8 bytes.
    unsafe impl SlotState for SnowflakeWords {
        const KIND: Kind = Kind::Snowflake;
    }

    #[repr(C)]
    struct GdidWords {
        a: AtomicU64,
        b: AtomicU32,
    }
    // SAFETY: repr(C), atomics only, 16 bytes.
    unsafe impl SlotState for GdidWords {
        const KIND: Kind = Kind::Gdid;
    }

    #[test]
    fn same_key_same_slot_other_db_other_slot() {
        let slots = table(8);
        let r = Registry::new(&slots);
        let a = r.find_or_insert(sf(1, b"orders"), LAYOUT, true).unwrap();
        assert_eq!(r.find_or_insert(sf(1, b"orders"), LAYOUT, true), Ok(a));
        let b = r.find_or_insert(sf(2, b"orders"), LAYOUT, true).unwrap();
        assert_ne!(a, b);
        let g = Key {
            kind: Kind::Gdid,
            ..sf(1, b"orders")
        };
        let c = r
            .find_or_insert(g, CreationLayout::default(), true)
            .unwrap();
        assert!(c != a && c != b);
        assert_eq!(r.slot(a).key().name, b"orders");
        assert_eq!(r.slot(a).created_with(), LAYOUT);
        assert_eq!(r.slot(c).key(), g);
        assert_eq!(r.slot(b).key().db, 2);
        assert_eq!(r.of_database(1, Kind::Snowflake).count(), 1);
        assert_eq!(r.of_database(1, Kind::Gdid).count(), 1);
    }

    #[test]
    fn state_words_are_handed_out_only_as_the_slots_own_kind() {
        let slots = table(4);
        let r = Registry::new(&slots);
        let s = r.slot(r.find_or_insert(sf(1, b"s"), LAYOUT, true).unwrap());
        let g = r.slot(
            r.find_or_insert(
                Key {
                    kind: Kind::Gdid,
                    ..sf(1, b"g")
                },
                CreationLayout::default(),
                true,
            )
            .unwrap(),
        );
        assert!(s.state::<SnowflakeWords>().is_some());
        assert!(s.state::<GdidWords>().is_none());
        assert!(g.state::<GdidWords>().is_some());
        assert!(g.state::<SnowflakeWords>().is_none());
        s.state::<SnowflakeWords>()
            .unwrap()
            .a
            .store(7, Ordering::Relaxed);
        assert_eq!(
            s.state::<SnowflakeWords>()
                .unwrap()
                .a
                .load(Ordering::Relaxed),
            7
        );
        assert_eq!(g.state::<GdidWords>().unwrap().b.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_dropped_sequence_keeps_its_slot_and_its_name_gets_a_new_one() {
        let slots = table(4);
        let r = Registry::new(&slots);
        let a = r.find_or_insert(sf(1, b"a"), LAYOUT, false).unwrap();
        assert!(!r.slot(a).is_seeded());
        assert!(r.slot(a).state::<SnowflakeWords>().is_some());
        assert!(r.drop_slot(a));
        assert!(!r.drop_slot(a));
        assert!(r.slot(a).is_dropped());
        assert!(r.slot(a).state::<SnowflakeWords>().is_none());
        assert_eq!(r.find(sf(1, b"a")), None);
        let again = r.find_or_insert(sf(1, b"a"), LAYOUT, false).unwrap();
        assert_ne!(again, a);
        assert_eq!(r.find(sf(1, b"a")), Some(again));
        assert_eq!(
            r.count_in_database(1),
            2,
            "the dropped slot is taken until restart"
        );
        assert_eq!(r.count_in_database(2), 0);
    }

    #[test]
    fn new_names_start_unseeded_and_known_ones_seeded() {
        let slots = table(2);
        let r = Registry::new(&slots);
        let s = r.slot(r.find_or_insert(sf(1, b"a"), LAYOUT, false).unwrap());
        assert!(!s.is_seeded());
        s.mark_seeded();
        assert!(s.is_seeded());
        let known = r.slot(r.find_or_insert(sf(1, b"b"), LAYOUT, true).unwrap());
        assert!(known.is_seeded());
    }

    #[test]
    fn full_table_is_reported_but_existing_names_still_resolve() {
        let slots = table(3);
        let r = Registry::new(&slots);
        for name in [b"a", b"b", b"c"] {
            r.find_or_insert(sf(7, name), LAYOUT, true).unwrap();
        }
        assert_eq!(r.find_or_insert(sf(7, b"d"), LAYOUT, true), Err(Full));
        assert!(r.find_or_insert(sf(7, b"b"), LAYOUT, true).is_ok());
    }

    #[test]
    fn a_slot_is_320_bytes_as_documented() {
        // README and the snowflake.max_sequences description quote this size.
        assert_eq!(std::mem::size_of::<Slot>(), 320);
    }

    #[test]
    fn zeroed_memory_is_an_empty_table() {
        // Shared memory arrives zeroed; a zeroed Slot must read as FREE with zero state.
        // SAFETY: Slot is atomics and plain bytes; all-zero is the free slot by design.
        let zeroed: Slot = unsafe { std::mem::zeroed() };
        assert_eq!(zeroed.status.load(Ordering::Relaxed), FREE);
        assert!(zeroed
            .state
            .0
            .iter()
            .all(|w| w.load(Ordering::Relaxed) == 0));
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
                                r.find_or_insert(sf(1, name.as_bytes()), LAYOUT, true)
                                    .unwrap()
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
