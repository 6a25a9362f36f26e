//! The cache of sequences in shared memory: a fixed array of slots, found by (database,
//! relation, storage) through lock-free open addressing. A sequence's durable state is its
//! relation (see `sequences`); a slot holds what generating needs between two lease
//! extensions, and losing it loses nothing: the next use of the sequence reads the relation
//! again and continues above its lease.
//!
//! PURE: no pgrx here; the tests run it on a `Vec` from several threads.
//!
//! A slot leaves the cache (evicted to make room, see [`Cache::evict_one`]) by becoming
//! EVICTED, which probes pass over like a slot of another key (a tombstone); it takes a new
//! sequence once no backend can still be using it as the old one (see `phases`). A FREE slot
//! is never used, so a probe can stop at the first one: a key is always stored at or before
//! the first slot that was free when it was inserted. Each occupant of a slot has its own
//! *generation*, and a handle ([`Seq`], [`SlotRef`]) names the generation it found: a handle
//! kept across calls (a call site's cache) never reaches the next occupant of its slot. An
//! all-zero slot is a free slot, so zeroed shared memory is a valid empty table.
//!
//! The key names the relation's storage, not only the relation: a dropped relation's OID may
//! come back for another relation one day, and `ALTER SEQUENCE ... RESTART` gives a sequence
//! new storage with another state. A stale entry is never found again, and is evicted in
//! time like any other.
//!
//! The table does not know what a sequence's state words mean. Each kind declares its own
//! [`SlotState`] type, and [`Slot::state`] hands a slot's words out only as the type of the
//! slot's own kind: gdid code cannot read a snowflake slot by mistake.

use crate::core::sync::{spin_loop, AtomicI64, AtomicU32, AtomicU64, Ordering, UnsafeCell};

use crate::core::identity::{CreationLayout, Kind};
use crate::core::reclamation::Phases;

const FREE: u32 = 0;
const CLAIMING: u32 = 1;
const READY: u32 = 2;
const EVICTED: u32 = 3;

/// Bytes of state words every slot has room for.
pub const STATE_SIZE: usize = 128;

/// How many words that is; under loom, as many as the largest kind's state (7): the models
/// reset every word of a reused slot, each store one more step to explore.
#[cfg(not(loom))]
const STATE_WORDS: usize = STATE_SIZE / 8;
#[cfg(loom)]
const STATE_WORDS: usize = 7;

/// The state words of a slot, uninterpreted: zero until the slot's kind gives them a meaning.
/// On cache lines of their own, since every generating call writes here while the key is
/// read-only once published.
#[repr(C, align(64))]
#[derive(Default)]
struct StateWords([AtomicU64; STATE_WORDS]);

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<StateWords>() == STATE_SIZE);

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

/// What the cache finds a sequence by: its database, its relation, and the relation's
/// storage (`pg_class.relfilenode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub db: u32,
    pub relid: u32,
    pub filenode: u32,
}

impl Key {
    /// A hash of the key: where its probe starts, and which extension lock it takes.
    pub fn hash(&self) -> u64 {
        // FNV-1a over the three words.
        [self.db, self.relid, self.filenode]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .fold(0xcbf2_9ce4_8422_2325, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            })
    }
}

/// Written once by the claimer before the slot is published, immutable afterwards.
#[derive(Default, Clone, Copy)]
struct Meta {
    kind: u8,
    created_with: CreationLayout,
}

#[repr(C)]
pub struct Slot {
    status: AtomicU32,
    db: AtomicU32,
    relid: AtomicU32,
    filenode: AtomicU32,
    /// Written only by the backend that moved `status` from FREE (or EVICTED) to CLAIMING,
    /// read only after `status` is READY (release/acquire), never written again.
    meta: UnsafeCell<Meta>,
    /// Which occupant of the slot this is: bumped whenever the slot takes a sequence.
    generation: AtomicU32,
    /// When the sequence last extended its lease (or entered the cache), Unix ms: the
    /// oldest of a sample is evicted.
    last_used_ms: AtomicI64,
    /// For an EVICTED slot, the phase its reuse waits for (see `phases`).
    evicted_at: AtomicU64,
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
            relid: AtomicU32::new(0),
            filenode: AtomicU32::new(0),
            meta: UnsafeCell::new(Meta::default()),
            generation: AtomicU32::new(0),
            last_used_ms: AtomicI64::new(0),
            evicted_at: AtomicU64::new(0),
            state: StateWords::default(),
        }
    }
}

impl Slot {
    fn is_ready(&self) -> bool {
        self.status.load(Ordering::Acquire) == READY
    }

    /// Whether the slot's occupant was evicted: its key now leads to another slot (or none).
    pub fn is_evicted(&self) -> bool {
        self.status.load(Ordering::Acquire) == EVICTED
    }

    /// Whether the slot still holds the occupant a handle of `generation` found.
    #[inline]
    pub fn is_current(&self, generation: u32) -> bool {
        self.status.load(Ordering::Acquire) == READY
            && self.generation.load(Ordering::Acquire) == generation
    }

    fn meta(&self) -> Meta {
        debug_assert!(matches!(
            self.status.load(Ordering::Acquire),
            READY | EVICTED
        ));
        // SAFETY: the slot is READY or EVICTED (acquire), so `meta` was fully written and is
        // immutable until the slot is claimed again, which waits for every backend that could
        // hold a reference (phases).
        self.meta.with(|m| unsafe { *m })
    }

    /// The key of a READY slot (every slot `Cache` hands out is READY).
    pub fn key(&self) -> Key {
        Key {
            db: self.db.load(Ordering::Relaxed),
            relid: self.relid.load(Ordering::Relaxed),
            filenode: self.filenode.load(Ordering::Relaxed),
        }
    }

    /// The layout its relation's definition records (see `sequences::catalog`).
    pub fn created_with(&self) -> CreationLayout {
        self.meta().created_with
    }

    /// Notes that the sequence is in use at `now_ms` (a lease extension): the cache evicts
    /// the least recently used of a sample.
    pub fn touch(&self, now_ms: i64) {
        self.last_used_ms.store(now_ms, Ordering::Relaxed);
    }

    /// The slot's state words as `S`, if the slot holds a sequence of `S`'s kind (evicted or
    /// not: [`Cache::seq`] tells them apart).
    #[inline]
    fn state<S: SlotState>(&self) -> Option<&S> {
        const {
            assert!(std::mem::size_of::<S>() <= std::mem::size_of::<StateWords>());
            assert!(std::mem::align_of::<S>() <= 64);
        }
        let status = self.status.load(Ordering::Acquire);
        if !matches!(status, READY | EVICTED) || self.meta().kind != S::KIND as u8 {
            return None;
        }
        // SAFETY: StateWords is STATE_SIZE bytes of atomics aligned to 64; S fits in it (checked
        // above at compile time), is made only of atomics and valid when zeroed (SlotState's
        // contract), so any bytes the words hold are a valid S, shared access included. (Under
        // loom, both are loom `AtomicU64`s one after the other, see `sync`.)
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

    pub fn slot(&self) -> &'a Slot {
        self.slot
    }

    /// The kind's state words.
    pub fn state(&self) -> &'a S {
        self.state
    }

    /// Whether the sequence is still in its slot: not evicted (and so not replaced).
    pub fn is_current(&self) -> bool {
        self.slot.is_current(self.at.generation)
    }
}

/// Every slot is taken by another key or by an evicted sequence a backend may still use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// What a probe for a key found.
enum Probe {
    Found(usize),
    /// Not there; `reusable` is the first evicted slot on the key's path that may take it,
    /// `free` the first free one.
    Absent {
        reusable: Option<usize>,
        free: Option<usize>,
    },
}

pub struct Cache<'a> {
    slots: &'a [Slot],
    phases: Phases<'a>,
}

/// The table's slots without its phases: enough to use a sequence found before (the
/// generators' fast path), not to enter one or reuse a slot.
#[derive(Clone, Copy)]
pub struct Slots<'a>(&'a [Slot]);

impl<'a> Slots<'a> {
    /// The slots of a table, for a caller in one of its phases (`shmem::fast_slots`).
    pub fn new(slots: &'a [Slot]) -> Self {
        Slots(slots)
    }

    /// The sequence `at` names, as a sequence of `S`'s kind, if it is still there.
    #[inline(always)]
    pub fn seq<S: SlotState>(self, at: SlotRef) -> Option<Seq<'a, S>> {
        let slot = self.0.get(at.idx)?;
        if !slot.is_current(at.generation) {
            return None;
        }
        Some(Seq {
            at,
            slot,
            state: slot.state::<S>()?,
        })
    }
}

impl<'a> Cache<'a> {
    pub fn new(slots: &'a [Slot], phases: Phases<'a>) -> Self {
        Cache { slots, phases }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The cached sequence of `key`, if there is one.
    pub fn find(&self, key: Key) -> Option<SlotRef> {
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
        Slots(self.slots).seq(at)
    }

    /// The cached sequence of `key`, claiming a slot if it is not cached (a free one, or the
    /// slot of an evicted sequence no backend can be using any more) with zeroed state words:
    /// a sequence of `kind` whose relation records `created_with`. Only one caller at a time
    /// may insert (the cache's lock, see `shmem`).
    pub fn find_or_insert(
        &self,
        key: Key,
        kind: Kind,
        created_with: CreationLayout,
        now_ms: i64,
    ) -> Result<SlotRef, Full> {
        loop {
            let (idx, from) = match self.probe(key, true) {
                Probe::Found(idx) => return Ok(self.slot_ref(idx)),
                Probe::Absent {
                    reusable: Some(idx),
                    ..
                } => (idx, EVICTED),
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
                if from == EVICTED {
                    // No backend can see the old occupant's state any more (phases).
                    for w in &slot.state.0 {
                        w.store(0, Ordering::Relaxed);
                    }
                }
                slot.db.store(key.db, Ordering::Relaxed);
                slot.relid.store(key.relid, Ordering::Relaxed);
                slot.filenode.store(key.filenode, Ordering::Relaxed);
                // SAFETY: we own the slot (-> CLAIMING); nobody reads `meta` until the
                // release store of READY below.
                slot.meta.with_mut(|m| unsafe {
                    *m = Meta {
                        kind: kind as u8,
                        created_with,
                    }
                });
                slot.last_used_ms.store(now_ms, Ordering::Relaxed);
                slot.evicted_at.store(0, Ordering::Relaxed);
                slot.generation.fetch_add(1, Ordering::Relaxed);
                slot.status.store(READY, Ordering::Release);
                return Ok(self.slot_ref(idx));
            }
            // Another caller took the slot first, perhaps for this very key: probe again.
        }
    }

    /// Where `key` is, or else where it would go: the first slot on its path that may take
    /// it (looked for only when `for_insert`).
    fn probe(&self, key: Key, for_insert: bool) -> Probe {
        let cap = self.slots.len();
        let start = (key.hash() % cap as u64) as usize;
        let mut reusable = None;
        // Run once, at the first evicted slot: see `Phases::before_reclaiming`.
        let mut may_reclaim = None;
        for step in 0..cap {
            let idx = (start + step) % cap;
            let slot = &self.slots[idx];
            loop {
                match slot.status.load(Ordering::Acquire) {
                    READY if slot.key() == key => return Probe::Found(idx),
                    READY => break,
                    EVICTED => {
                        if for_insert
                            && reusable.is_none()
                            && *may_reclaim.get_or_insert_with(|| self.phases.before_reclaiming())
                            && self
                                .phases
                                .all_past(slot.evicted_at.load(Ordering::Relaxed))
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
                    _ => spin_loop(),
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

    /// Evicts the occupant of slot `idx`: lookups no longer find it, and its slot takes a new
    /// sequence once no backend can still be using it. False if it was not there.
    pub fn evict(&self, idx: usize) -> bool {
        let slot = &self.slots[idx];
        if slot.status.load(Ordering::Acquire) != READY {
            return false;
        }
        // Not reusable until the phase below is known. `evicted_at` is written, and read for
        // reuse, only under the cache lock: relaxed.
        slot.evicted_at.store(u64::MAX, Ordering::Relaxed);
        if slot
            .status
            // Release: seen by a call that acquires the new phase or the status; against a
            // call that has not entered yet, the fences of `Phases` order it.
            .compare_exchange(READY, EVICTED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        // After the mark, so that a backend entering at this phase or later finds it evicted.
        slot.evicted_at
            .store(self.phases.advance(), Ordering::Relaxed);
        true
    }

    /// Evicts every entry of relation `relid` of database `db`, whatever its storage: the
    /// relation is being dropped, and another relation could later come to have the same key
    /// (OIDs wrap around). How many were evicted. Under the cache lock, as every eviction
    /// (see `probe`, whose one barrier per probe relies on it).
    pub fn evict_relation(&self, db: u32, relid: u32) -> usize {
        (0..self.slots.len())
            .filter(|&i| {
                let s = &self.slots[i];
                s.is_ready()
                    && s.db.load(Ordering::Relaxed) == db
                    && s.relid.load(Ordering::Relaxed) == relid
            })
            .filter(|&i| self.evict(i))
            .count()
    }

    /// Evicts the least recently used of `sample` slots chosen from `seed` (a cheap sample
    /// of an LRU order, as Redis does), if one of them holds a sequence; its index.
    pub fn evict_one(&self, seed: u64, sample: usize) -> Option<usize> {
        let cap = self.slots.len() as u64;
        let mut x = seed | 1;
        let victim = (0..sample)
            .map(|_| {
                // xorshift: a different slot for each draw.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % cap) as usize
            })
            .filter(|&i| self.slots[i].is_ready())
            .min_by_key(|&i| self.slots[i].last_used_ms.load(Ordering::Relaxed))?;
        self.evict(victim).then_some(victim)
    }

    /// How many slots hold a sequence.
    pub fn occupied(&self) -> usize {
        self.slots.iter().filter(|s| s.is_ready()).count()
    }

    /// How many slots hold evicted sequences that backends may still be using.
    pub fn evicted_in_use(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| {
                s.is_evicted() && !self.phases.all_past(s.evicted_at.load(Ordering::Relaxed))
            })
            .count()
    }
}

#[cfg(not(loom))] // with std atomics, outside the model checker
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::AtomicBool;

    /// A table and its phases (8 backends), as shared memory holds them.
    pub struct Table {
        slots: Vec<Slot>,
        global: AtomicU64,
        active: Vec<AtomicU64>,
    }

    impl Table {
        pub fn cache(&self) -> Cache<'_> {
            Cache::new(&self.slots, self.phases())
        }

        pub fn phases(&self) -> Phases<'_> {
            Phases::new(&self.global, &self.active, None)
        }
    }

    pub fn table(n: usize) -> Table {
        Table {
            slots: (0..n).map(|_| Slot::default()).collect(),
            global: AtomicU64::new(0),
            active: (0..8).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub const LAYOUT: CreationLayout = CreationLayout {
        epoch_ms: 1_735_689_600_000,
        node_bits: 10,
    };

    pub fn key(db: u32, relid: u32) -> Key {
        Key {
            db,
            relid,
            filenode: relid,
        }
    }

    fn insert(r: &Cache<'_>, k: Key) -> Result<SlotRef, Full> {
        r.find_or_insert(k, Kind::Snowflake, LAYOUT, 0)
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
    fn one_slot_per_key_and_storage() {
        let t = table(8);
        let r = t.cache();
        let a = insert(&r, key(1, 100)).unwrap();
        assert_eq!(insert(&r, key(1, 100)), Ok(a));
        let b = insert(&r, key(2, 100)).unwrap();
        assert_ne!(a.idx, b.idx);
        // The same relation with new storage (ALTER SEQUENCE ... RESTART) is another entry.
        let restarted = Key {
            filenode: 101,
            ..key(1, 100)
        };
        let c = insert(&r, restarted).unwrap();
        assert!(c.idx != a.idx && c.idx != b.idx);
        assert_eq!(r.slot(a.idx).created_with(), LAYOUT);
        assert_eq!(r.slot(c.idx).key(), restarted);
        assert_eq!(r.slot(b.idx).key().db, 2);
        assert_eq!(r.occupied(), 3);
    }

    #[test]
    fn state_words_are_handed_out_only_as_the_slots_own_kind() {
        let t = table(4);
        let r = t.cache();
        let s = insert(&r, key(1, 1)).unwrap();
        let g = r
            .find_or_insert(key(1, 2), Kind::Gdid, CreationLayout::default(), 0)
            .unwrap();
        assert!(r.seq::<SnowflakeWords>(s).is_some());
        assert!(r.seq::<GdidWords>(s).is_none());
        assert!(r.seq::<GdidWords>(g).is_some());
        assert!(r.seq::<SnowflakeWords>(g).is_none());
        let words = r.seq::<SnowflakeWords>(s).unwrap().state();
        words.a.store(7, Ordering::Relaxed);
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
    fn an_evicted_slot_is_reused_once_no_backend_can_hold_it() {
        let t = table(4);
        let r = t.cache();
        let e = t.phases();
        assert!(e.enter(0)); // backend 0 found it before the eviction
        let a = insert(&r, key(1, 1)).unwrap();
        r.seq::<SnowflakeWords>(a)
            .unwrap()
            .state()
            .a
            .store(99, Ordering::Relaxed);
        assert!(r.evict(a.idx));
        assert!(!r.evict(a.idx));
        assert!(r.slot(a.idx).is_evicted());
        assert!(r.seq::<SnowflakeWords>(a).is_none());
        assert_eq!(r.find(key(1, 1)), None);
        assert_eq!(r.evicted_in_use(), 1);
        // Backend 0 may still use the old occupant: the key gets another slot.
        let fill: Vec<SlotRef> = (1..4).map(|i| insert(&r, key(1, i)).unwrap()).collect();
        assert!(fill.iter().all(|f| f.idx != a.idx));
        assert_eq!(insert(&r, key(1, 4)), Err(Full));
        // Once it has left, the slot takes a new sequence: a new generation, zeroed state.
        e.exit(0);
        assert_eq!(r.evicted_in_use(), 0);
        let d = insert(&r, key(1, 4)).unwrap();
        assert_eq!(d.idx, a.idx);
        assert_ne!(d.generation, a.generation);
        assert!(
            r.seq::<SnowflakeWords>(a).is_none(),
            "the old handle is stale"
        );
        assert_eq!(
            r.seq::<SnowflakeWords>(d)
                .unwrap()
                .state()
                .a
                .load(Ordering::Relaxed),
            0
        );
        assert_eq!(r.occupied(), 4);
    }

    #[test]
    fn eviction_takes_the_least_recently_used_of_its_sample() {
        let t = table(16);
        let r = t.cache();
        for i in 0..16 {
            let at = insert(&r, key(1, i)).unwrap();
            r.slot(at.idx).touch(1_000 + i64::from(i));
        }
        let oldest = r.find(key(1, 0)).unwrap();
        // A sample of every slot finds the oldest.
        let victim = r.evict_one(12345, 64).unwrap();
        assert_eq!(victim, oldest.idx);
        assert_eq!(r.find(key(1, 0)), None);
        assert_eq!(r.occupied(), 15);
    }

    #[test]
    fn a_key_evicted_and_inserted_again_is_found_once() {
        // A reused tombstone before the key's own slot must not make a second copy.
        let t = table(8);
        let r = t.cache();
        let refs: Vec<SlotRef> = (0..6).map(|i| insert(&r, key(1, i)).unwrap()).collect();
        for at in refs.iter().step_by(2) {
            assert!(r.evict(at.idx));
        }
        for i in 0..6 {
            let first = insert(&r, key(1, i)).unwrap();
            assert_eq!(insert(&r, key(1, i)), Ok(first));
            assert_eq!(r.find(key(1, i)), Some(first));
        }
        assert_eq!(r.occupied(), 6);
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
    fn a_slot_is_192_bytes_as_documented() {
        // The README and docs/how-it-works.md quote this size.
        assert_eq!(std::mem::size_of::<Slot>(), 192);
    }

    #[test]
    fn concurrent_inserts_agree_on_one_slot_per_key() {
        let t = table(64);
        let results: Vec<Vec<SlotRef>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        let r = t.cache();
                        (0..48)
                            .map(|i| insert(&r, key(1, i)).unwrap())
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
    /// checked before each use) while another evicts sequences and caches them again, in a
    /// table small enough that every slot is reused many times: the slot a claim went to
    /// still held the handle's occupant after the claim, never its next one.
    #[test]
    fn evictions_and_uses_race_without_a_stale_handle_touching_a_new_occupant() {
        let t = table(6);
        let stop = AtomicBool::new(false);
        let claims = AtomicU64::new(0);
        std::thread::scope(|s| {
            for me in 0..6 {
                let (t, stop, claims) = (&t, &stop, &claims);
                s.spawn(move || {
                    let r = t.cache();
                    let e = t.phases();
                    let mut i = me as u32;
                    while !stop.load(Ordering::Relaxed) {
                        assert!(e.enter(me));
                        let k = key(1, i % 4);
                        i += 1;
                        if let Some(seq) = r.find(k).and_then(|at| r.seq::<SnowflakeWords>(at)) {
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
            let r = t.cache();
            let mut reused = 0;
            let mut round = 0u32;
            // Until both sides have done plenty (the readers may start late), within bounds.
            while round < 20_000 || (claims.load(Ordering::Relaxed) < 100_000 && round < 5_000_000)
            {
                round += 1;
                let k = key(1, round % 4);
                if let Some(at) = r.find(k) {
                    r.evict(at.idx);
                }
                if let Ok(at) = insert(&r, k) {
                    reused += usize::from(at.generation > 1);
                }
            }
            stop.store(true, Ordering::Relaxed);
            assert!(reused > 100, "slots were reused {reused} times");
        });
        assert!(claims.load(Ordering::Relaxed) > 0);
    }
}
