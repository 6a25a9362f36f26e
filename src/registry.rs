//! The table of named sequences: a fixed array of slots in shared memory, found by
//! (database, kind, name) through lock-free open addressing.
//!
//! PURE: no pgrx here; the tests run it on a `Vec` from several threads.
//!
//! A dropped sequence's slot becomes DROPPED, which probes pass over like a slot of another
//! key (a tombstone), and takes a new sequence once no backend can still be using it as the
//! old one (see `epochs`). A FREE slot is never used, so a probe can stop at the first one: a
//! key is always stored at or before the first slot that was free when it was inserted. Each
//! occupant of a slot has its own *generation*, and a handle ([`Seq`], [`SlotRef`]) names the
//! generation it found: a handle kept across calls (a call site's cache) never reaches the
//! next occupant of its slot. An all-zero slot is a free slot, so zeroed shared memory is a
//! valid empty table.
//! Both generators share the table: a snowflake sequence and a gdid sequence never collide
//! because the kind is part of the key.
//!
//! The table does not know what a sequence's state words mean. Each kind declares its own
//! [`SlotState`] type, and [`Slot::state`] hands a slot's words out only as the type of the
//! slot's own kind: gdid code cannot read a snowflake slot by mistake.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::epochs::Epochs;
use crate::identity::{CreationLayout, Key, Kind, MAX_KEY_LEN};

const FREE: u32 = 0;
const CLAIMING: u32 = 1;
const READY: u32 = 2;
const DROPPED: u32 = 3;

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
    /// Which occupant of the slot this is: bumped whenever the slot takes a sequence.
    generation: AtomicU32,
    /// For a DROPPED slot, the epoch its reuse waits for (see `epochs`).
    dropped_at: AtomicU64,
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
            generation: AtomicU32::new(0),
            dropped_at: AtomicU64::new(0),
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

    /// Which occupant of the slot this is.
    pub fn generation(&self) -> u32 {
        self.generation.load(Ordering::Acquire)
    }

    /// Whether the slot still holds the occupant a handle of `generation` found.
    #[inline]
    pub fn is_current(&self, generation: u32) -> bool {
        self.status.load(Ordering::Acquire) == READY
            && self.generation.load(Ordering::Acquire) == generation
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

    /// The slot's state words as `S`, if the slot holds a sequence of `S`'s kind (dropped
    /// or not: [`Registry::seq`] and [`Registry::tombstones`] tell them apart).
    #[inline]
    fn state<S: SlotState>(&self) -> Option<&S> {
        const {
            assert!(std::mem::size_of::<S>() <= STATE_SIZE);
            assert!(std::mem::align_of::<S>() <= 64);
        }
        let status = self.status.load(Ordering::Acquire);
        if !matches!(status, READY | DROPPED) || self.meta().kind != S::KIND as u8 {
            return None;
        }
        // SAFETY: StateWords is STATE_SIZE bytes of atomics aligned to 64; S fits in it (checked
        // above at compile time), is made only of atomics and valid when zeroed (SlotState's
        // contract), so any bytes the words hold are a valid S, shared access included.
        Some(unsafe { &*std::ptr::from_ref(&self.state).cast::<S>() })
    }
}

/// A slot's occupant as it was found: its index and generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotRef {
    pub idx: usize,
    pub generation: u32,
}

/// A sequence of the kind whose state is `S`: a slot known to hold one, of the generation
/// found. The kinds add their operations to it (`SnowflakeSeq`, `GdidSeq`).
pub struct Seq<'a, S: SlotState> {
    at: SlotRef,
    slot: &'a Slot,
    state: &'a S,
}

impl<S: SlotState> Clone for Seq<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: SlotState> Copy for Seq<'_, S> {}

impl<'a, S: SlotState> Seq<'a, S> {
    pub fn at(&self) -> SlotRef {
        self.at
    }

    pub fn idx(&self) -> usize {
        self.at.idx
    }

    pub fn slot(&self) -> &'a Slot {
        self.slot
    }

    /// The kind's state words.
    pub fn state(&self) -> &'a S {
        self.state
    }

    /// Whether the sequence is still in its slot: not dropped (and so not replaced).
    pub fn is_current(&self) -> bool {
        self.slot.is_current(self.at.generation)
    }
}

/// Every slot is taken by another key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// What a probe for a key found.
enum Probe {
    Found(usize),
    /// Not there; `reusable` is the first dropped slot on the key's path that may take it,
    /// `free` the first free one.
    Absent {
        reusable: Option<usize>,
        free: Option<usize>,
    },
}

pub struct Registry<'a> {
    slots: &'a [Slot],
    epochs: Epochs<'a>,
}

impl<'a> Registry<'a> {
    pub fn new(slots: &'a [Slot], epochs: Epochs<'a>) -> Self {
        Registry { slots, epochs }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The sequence of `key`, if it exists.
    pub fn find(&self, key: Key<'_>) -> Option<SlotRef> {
        match self.probe(key, false) {
            Probe::Found(idx) => Some(self.slot_ref(idx)),
            Probe::Absent { .. } => None,
        }
    }

    fn slot_ref(&self, idx: usize) -> SlotRef {
        SlotRef {
            idx,
            generation: self.slots[idx].generation.load(Ordering::Acquire),
        }
    }

    /// The sequence `at` names, as a sequence of `S`'s kind, if it is still there.
    #[inline]
    pub fn seq<S: SlotState>(&self, at: SlotRef) -> Option<Seq<'a, S>> {
        let slot = self.slots.get(at.idx)?;
        if !slot.is_current(at.generation) {
            return None;
        }
        Some(Seq {
            at,
            slot,
            state: slot.state::<S>()?,
        })
    }

    /// The sequence `at` names, if it was dropped and its slot has not taken a new one yet.
    pub fn dropped<S: SlotState>(&self, at: SlotRef) -> Option<Seq<'a, S>> {
        let slot = self.slots.get(at.idx)?;
        if !slot.is_dropped() || slot.generation.load(Ordering::Acquire) != at.generation {
            return None;
        }
        Some(Seq {
            at,
            slot,
            state: slot.state::<S>()?,
        })
    }

    /// The dropped sequences of `key` whose slots have not taken new ones yet: what they
    /// handed out may not be stored anywhere yet, so the key's next sequence continues above
    /// them. Only while no slot can be reused meanwhile (under the lease lock).
    pub fn tombstones<S: SlotState>(&self, key: Key<'_>) -> Vec<Seq<'a, S>> {
        let cap = self.slots.len();
        let start = (hash(&key) % cap as u64) as usize;
        let mut found = Vec::new();
        for step in 0..cap {
            let idx = (start + step) % cap;
            let slot = &self.slots[idx];
            match slot.status.load(Ordering::Acquire) {
                FREE => break,
                DROPPED if slot.key() == key => {
                    if let Some(state) = slot.state::<S>() {
                        found.push(Seq {
                            at: self.slot_ref(idx),
                            slot,
                            state,
                        });
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// The sequence of `key`, claiming a slot if it is new (a free one, or the slot of a
    /// dropped sequence no backend can be using any more); a new sequence records
    /// `created_with` and whether it is `seeded` already (see [`Slot::is_seeded`]), an existing
    /// one keeps what it has. The key name must be at most [`MAX_KEY_LEN`] bytes. Only one
    /// caller at a time may insert (the lease lock, or recovery, which is alone).
    pub fn find_or_insert(
        &self,
        key: Key<'_>,
        created_with: CreationLayout,
        seeded: bool,
    ) -> Result<SlotRef, Full> {
        debug_assert!(!key.name.is_empty() && key.name.len() <= MAX_KEY_LEN);
        loop {
            let (idx, from) = match self.probe(key, true) {
                Probe::Found(idx) => return Ok(self.slot_ref(idx)),
                Probe::Absent {
                    reusable: Some(idx),
                    ..
                } => (idx, DROPPED),
                Probe::Absent {
                    free: Some(idx), ..
                } => (idx, FREE),
                Probe::Absent { .. } => return Err(Full),
            };
            let slot = &self.slots[idx];
            if slot
                .status
                .compare_exchange(from, CLAIMING, Ordering::Acquire, Ordering::Acquire)
                .is_ok()
            {
                if from == DROPPED {
                    // No backend can see the old occupant's state any more (epochs).
                    for w in &slot.state.0 {
                        w.store(0, Ordering::Relaxed);
                    }
                }
                slot.db.store(key.db, Ordering::Relaxed);
                // SAFETY: we own the slot (-> CLAIMING); nobody reads `meta` until the
                // release store of READY below.
                let m = unsafe { &mut *slot.meta.get() };
                m.kind = key.kind as u8;
                m.len = key.name.len() as u8;
                m.name[..key.name.len()].copy_from_slice(key.name);
                m.created_with = created_with;
                slot.seeded.store(seeded, Ordering::Relaxed);
                slot.dropped_at.store(0, Ordering::Relaxed);
                slot.generation.fetch_add(1, Ordering::Relaxed);
                slot.status.store(READY, Ordering::Release);
                return Ok(self.slot_ref(idx));
            }
            // Another caller took the slot first, perhaps for this very key: probe again.
        }
    }

    /// Where `key` is, or else where it would go: the first slot on its path that may take
    /// it (looked for only when `for_insert`).
    fn probe(&self, key: Key<'_>, for_insert: bool) -> Probe {
        let cap = self.slots.len();
        let start = (hash(&key) % cap as u64) as usize;
        let mut reusable = None;
        for step in 0..cap {
            let idx = (start + step) % cap;
            let slot = &self.slots[idx];
            loop {
                match slot.status.load(Ordering::Acquire) {
                    READY if slot.key() == key => return Probe::Found(idx),
                    READY => break,
                    DROPPED => {
                        if for_insert
                            && reusable.is_none()
                            && self.epochs.all_past(slot.dropped_at.load(Ordering::SeqCst))
                        {
                            reusable = Some(idx);
                        }
                        break;
                    }
                    FREE => {
                        return Probe::Absent {
                            reusable,
                            free: Some(idx),
                        }
                    }
                    // Another backend is writing a key: a handful of stores.
                    _ => std::hint::spin_loop(),
                }
            }
        }
        Probe::Absent {
            reusable,
            free: None,
        }
    }

    pub fn slot(&self, idx: usize) -> &'a Slot {
        &self.slots[idx]
    }

    /// As [`Registry::slot`], for callers that must not panic.
    pub fn get(&self, idx: usize) -> Option<&'a Slot> {
        self.slots.get(idx)
    }

    /// Drops the sequence in slot `idx`: lookups no longer find it, and its slot takes a new
    /// sequence once no backend can still be using it. False if it was not there (dropped
    /// already).
    pub fn drop_slot(&self, idx: usize) -> bool {
        let slot = &self.slots[idx];
        if slot.status.load(Ordering::Acquire) != READY {
            return false;
        }
        // Not reusable until the epoch below is known.
        slot.dropped_at.store(u64::MAX, Ordering::SeqCst);
        if slot
            .status
            .compare_exchange(READY, DROPPED, Ordering::SeqCst, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        // After the mark, so that a backend entering at this epoch or later finds it dropped.
        slot.dropped_at
            .store(self.epochs.advance(), Ordering::SeqCst);
        true
    }

    /// How many sequences of database `db` (of either kind) hold a slot.
    pub fn count_in_database(&self, db: u32) -> usize {
        self.slots
            .iter()
            .filter(|s| s.is_ready() && s.db.load(Ordering::Relaxed) == db)
            .count()
    }

    /// How many slots hold dropped sequences that backends may still be using.
    pub fn dropped_in_use(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| {
                s.is_dropped() && !self.epochs.all_past(s.dropped_at.load(Ordering::SeqCst))
            })
            .count()
    }

    /// Every sequence of `kind` in `db`, in slot order.
    pub fn of_database(&self, db: u32, kind: Kind) -> impl Iterator<Item = SlotRef> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(move |(_, s)| {
                s.is_ready() && s.db.load(Ordering::Relaxed) == db && s.kind() == kind
            })
            .map(|(idx, _)| self.slot_ref(idx))
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

    /// A table and its epochs (8 backends), as shared memory holds them.
    pub struct Table {
        slots: Vec<Slot>,
        global: AtomicU64,
        active: Vec<AtomicU64>,
    }

    impl Table {
        pub fn registry(&self) -> Registry<'_> {
            Registry::new(&self.slots, self.epochs())
        }

        pub fn epochs(&self) -> Epochs<'_> {
            Epochs::new(&self.global, &self.active)
        }
    }

    pub fn table(n: usize) -> Table {
        Table {
            slots: (0..n).map(|_| Slot::default()).collect(),
            global: AtomicU64::new(0),
            active: (0..8).map(|_| AtomicU64::new(0)).collect(),
        }
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
        let t = table(8);
        let r = t.registry();
        let a = r.find_or_insert(sf(1, b"orders"), LAYOUT, true).unwrap();
        assert_eq!(r.find_or_insert(sf(1, b"orders"), LAYOUT, true), Ok(a));
        let b = r.find_or_insert(sf(2, b"orders"), LAYOUT, true).unwrap();
        assert_ne!(a.idx, b.idx);
        let g = Key {
            kind: Kind::Gdid,
            ..sf(1, b"orders")
        };
        let c = r
            .find_or_insert(g, CreationLayout::default(), true)
            .unwrap();
        assert!(c.idx != a.idx && c.idx != b.idx);
        assert_eq!(r.slot(a.idx).key().name, b"orders");
        assert_eq!(r.slot(a.idx).created_with(), LAYOUT);
        assert_eq!(r.slot(c.idx).key(), g);
        assert_eq!(r.slot(b.idx).key().db, 2);
        assert_eq!(r.of_database(1, Kind::Snowflake).count(), 1);
        assert_eq!(r.of_database(1, Kind::Gdid).count(), 1);
    }

    #[test]
    fn state_words_are_handed_out_only_as_the_slots_own_kind() {
        let t = table(4);
        let r = t.registry();
        let s = r.find_or_insert(sf(1, b"s"), LAYOUT, true).unwrap();
        let g = r
            .find_or_insert(
                Key {
                    kind: Kind::Gdid,
                    ..sf(1, b"g")
                },
                CreationLayout::default(),
                true,
            )
            .unwrap();
        assert!(r.seq::<SnowflakeWords>(s).is_some());
        assert!(r.seq::<GdidWords>(s).is_none());
        assert!(r.seq::<GdidWords>(g).is_some());
        assert!(r.seq::<SnowflakeWords>(g).is_none());
        r.seq::<SnowflakeWords>(s)
            .unwrap()
            .state()
            .a
            .store(7, Ordering::Relaxed);
        assert_eq!(
            r.seq::<SnowflakeWords>(s)
                .unwrap()
                .state()
                .a
                .load(Ordering::Relaxed),
            7
        );
        assert_eq!(
            r.seq::<GdidWords>(g)
                .unwrap()
                .state()
                .b
                .load(Ordering::Relaxed),
            0
        );
    }

    #[test]
    fn a_dropped_slot_is_reused_once_no_backend_can_hold_it() {
        let t = table(4);
        let r = t.registry();
        let e = t.epochs();
        assert!(e.enter(0)); // backend 0 found "a" before the drop
        let a = r.find_or_insert(sf(1, b"a"), LAYOUT, false).unwrap();
        r.seq::<SnowflakeWords>(a)
            .unwrap()
            .state()
            .a
            .store(99, Ordering::Relaxed);
        assert!(!r.slot(a.idx).is_seeded());
        assert!(r.drop_slot(a.idx));
        assert!(!r.drop_slot(a.idx));
        assert!(r.slot(a.idx).is_dropped());
        assert!(r.seq::<SnowflakeWords>(a).is_none());
        assert_eq!(r.find(sf(1, b"a")), None);
        assert_eq!(r.dropped_in_use(), 1);
        // Backend 0 may still use the old occupant: the name gets another slot.
        let fill: Vec<SlotRef> = [b"a", b"b", b"c"]
            .iter()
            .map(|n| r.find_or_insert(sf(1, *n), LAYOUT, false).unwrap())
            .collect();
        assert!(fill.iter().all(|f| f.idx != a.idx));
        assert_eq!(r.find_or_insert(sf(1, b"d"), LAYOUT, false), Err(Full));
        // Once it has left, the slot takes a new sequence: a new generation, zeroed state.
        e.exit(0);
        assert_eq!(r.dropped_in_use(), 0);
        let d = r.find_or_insert(sf(1, b"d"), LAYOUT, false).unwrap();
        assert_eq!(d.idx, a.idx);
        assert_ne!(d.generation, a.generation);
        assert!(
            r.seq::<SnowflakeWords>(a).is_none(),
            "the old handle is stale"
        );
        let seq = r.seq::<SnowflakeWords>(d).unwrap();
        assert_eq!(seq.state().a.load(Ordering::Relaxed), 0);
        assert_eq!(r.count_in_database(1), 4);
    }

    #[test]
    fn a_name_dropped_and_inserted_again_is_found_once() {
        // A reused tombstone before the key's own slot must not make a second copy.
        let t = table(8);
        let r = t.registry();
        let names: Vec<Vec<u8>> = (0..6).map(|i| format!("n{i}").into_bytes()).collect();
        let refs: Vec<SlotRef> = names
            .iter()
            .map(|n| r.find_or_insert(sf(1, n), LAYOUT, true).unwrap())
            .collect();
        for (i, at) in refs.iter().enumerate().step_by(2) {
            assert!(r.drop_slot(at.idx), "{i}");
        }
        for n in &names {
            let first = r.find_or_insert(sf(1, n), LAYOUT, true).unwrap();
            assert_eq!(r.find_or_insert(sf(1, n), LAYOUT, true), Ok(first));
            assert_eq!(r.find(sf(1, n)), Some(first));
        }
        assert_eq!(r.count_in_database(1), 6);
    }

    #[test]
    fn new_names_start_unseeded_and_known_ones_seeded() {
        let t = table(2);
        let r = t.registry();
        let s = r.slot(r.find_or_insert(sf(1, b"a"), LAYOUT, false).unwrap().idx);
        assert!(!s.is_seeded());
        s.mark_seeded();
        assert!(s.is_seeded());
        let known = r.slot(r.find_or_insert(sf(1, b"b"), LAYOUT, true).unwrap().idx);
        assert!(known.is_seeded());
    }

    #[test]
    fn full_table_is_reported_but_existing_names_still_resolve() {
        let t = table(3);
        let r = t.registry();
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
        let t = table(64);
        let results: Vec<Vec<SlotRef>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        let r = t.registry();
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
        let distinct: HashSet<_> = results[0].iter().map(|r| r.idx).collect();
        assert_eq!(distinct.len(), 48);
    }

    /// Backends keep claiming values from their sequences (entering and leaving, a handle
    /// checked before each use) while another drops sequences and creates new ones, in a
    /// table small enough that every slot is reused many times: the slot a claim went to
    /// still held the handle's occupant after the claim, never its next one.
    #[test]
    fn drops_and_uses_race_without_a_stale_handle_touching_a_new_occupant() {
        let t = table(6);
        let stop = AtomicBool::new(false);
        let claims = AtomicU64::new(0);
        let names: Vec<Vec<u8>> = (0..4).map(|i| format!("s{i}").into_bytes()).collect();
        std::thread::scope(|s| {
            for me in 0..6 {
                let (t, stop, names, claims) = (&t, &stop, &names, &claims);
                s.spawn(move || {
                    let r = t.registry();
                    let e = t.epochs();
                    let mut i = me;
                    while !stop.load(Ordering::Relaxed) {
                        assert!(e.enter(me));
                        let name = &names[i % names.len()];
                        i += 1;
                        if let Some(seq) = r
                            .find(sf(1, name))
                            .and_then(|at| r.seq::<SnowflakeWords>(at))
                        {
                            seq.state().a.fetch_add(1, Ordering::AcqRel);
                            claims.fetch_add(1, Ordering::Relaxed);
                            assert_eq!(
                                seq.slot().generation.load(Ordering::Acquire),
                                seq.at().generation,
                                "the slot took a new occupant while a handle was in use"
                            );
                        }
                        e.exit(me);
                    }
                });
            }
            let r = t.registry();
            let mut reused = 0;
            let mut round = 0usize;
            // Until both sides have done plenty (the readers may start late), within bounds.
            while round < 20_000 || (claims.load(Ordering::Relaxed) < 100_000 && round < 5_000_000)
            {
                round += 1;
                let name = &names[round % names.len()];
                if let Some(at) = r.find(sf(1, name)) {
                    r.drop_slot(at.idx);
                }
                if let Ok(at) = r.find_or_insert(sf(1, name), LAYOUT, true) {
                    reused += usize::from(at.generation > 1);
                }
            }
            stop.store(true, Ordering::Relaxed);
            assert!(reused > 100, "slots were reused {reused} times");
        });
        assert!(claims.load(Ordering::Relaxed) > 0);
    }
}
