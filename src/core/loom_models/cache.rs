//! PURE: the cache of sequences and its reclamation (`cache.rs`, `reclamation.rs`): a backend
//! finds a sequence and claims a value from it (inside a phase) while the cache's lock holder
//! evicts that sequence and inserts another, which may take the evicted slot once no backend
//! can still be using it. No slot takes a new sequence while a backend that found the old one
//! may still touch it: the backend's accesses all happen before the slot's reset (loom checks
//! the slot's key and layout cell for unordered accesses, and the model that the state words
//! it reset are still zero afterwards).
//!
//! Readers enter a phase with a fence ([`Phases::enter`]) or, registered for Linux's
//! `membarrier(2)`, with a plain store ([`Phases::enter_registered`]) that the reclaimer's
//! global barrier orders. Loom cannot make another thread run a fence, so the barrier is
//! modelled by what the system call guarantees when it returns: at some point P of each
//! registered thread's program between the call's start and its return, the thread ran a full
//! barrier, so that everything it did before P is visible to the caller after the return, and
//! everything the caller did before the call is visible to the thread after P. The model
//! makes that a handshake (the caller announces the call and waits for the thread's answer;
//! the thread, at P, waits for the announcement and answers), which gives exactly those two
//! orderings and nothing more (no total order, no fence of either side), and checks one P at
//! each place between the reader's steps: before it enters, after it entered, after it found
//! the slot, after it used it, after it left. P inside one of those steps (between the load
//! of the phase and the store of the entry, between the loads of a lookup) orders no more
//! than the nearest boundary after it for the loads that follow P, and no less than the one
//! before it for the stores that precede P: the checks at the boundaries cover them.

use loom::sync::Arc;
use loom::thread;

use super::{check, wait_until, Table, DEFAULT_PREEMPTIONS, KEY};
use crate::core::cache::{Key, Seq, SlotRef, Slots};
use crate::core::identity::Kind;
use crate::core::reclamation::Barrier;
use crate::core::snowflake::layout::{Layout, DEFAULT_EPOCH_MS};
use crate::core::snowflake::snowflake_slot::{creation_layout, SnowflakeState};
use crate::core::sync::{AtomicBool, Ordering};

const LAYOUT: Layout = Layout::own(10, DEFAULT_EPOCH_MS);
const OTHER: Key = Key {
    db: 1,
    relid: 16_390,
    filenode: 16_390,
};
/// The tick the reader's claim moves the sequence to.
const CLAIMED: u64 = 77;

loom::lazy_static! {
    /// The membarrier handshake: the reclaimer announced its global barrier; the reader ran
    /// its side of it.
    static ref ANNOUNCED: AtomicBool = AtomicBool::new(false);
    static ref ANSWERED: AtomicBool = AtomicBool::new(false);
}

/// `membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)` as the reclaimer sees it.
fn membarrier() -> bool {
    ANNOUNCED.store(true, Ordering::Release);
    wait_until(|| ANSWERED.load(Ordering::Acquire));
    true
}

/// The registered reader's side of it, at the point P where the barrier reaches it.
fn barrier_reaches_reader() {
    wait_until(|| ANNOUNCED.load(Ordering::Acquire));
    ANSWERED.store(true, Ordering::Release);
}

/// How the reader enters, and where the barrier reaches it (0: before it enters, ... 4: after
/// it left).
#[derive(Clone, Copy, PartialEq)]
enum Entry {
    Fenced,
    Registered { p: u8 },
}

/// What a generator reads of a slot it found (its layout, in the slot's key cell) and writes
/// (the tick).
fn claim(seq: Seq<'_, SnowflakeState>) -> bool {
    assert_eq!(seq.layout(), LAYOUT);
    seq.raise_to(CLAIMED);
    true
}

/// Backend `me`'s call: enter, find the sequence, claim a value (a tick moved on), leave.
/// Whether it claimed.
fn reader(t: &Table, me: usize, entry: Entry) -> bool {
    let at_p = |p| {
        if entry == (Entry::Registered { p }) {
            barrier_reaches_reader();
        }
    };
    let (cache, phases) = (t.cache(), t.phases());
    at_p(0);
    assert!(match entry {
        Entry::Fenced => phases.enter(me),
        Entry::Registered { .. } => phases.enter_registered(me),
    });
    at_p(1);
    let seq = cache
        .find(KEY)
        .and_then(|at| cache.seq::<SnowflakeState>(at));
    at_p(2);
    let claimed = seq.is_some_and(claim);
    at_p(3);
    phases.exit(me);
    at_p(4);
    claimed
}

/// Backend `me`'s call on the generators' fast path (`shmem::fast_slots`): the sequence's slot
/// `at` found by an earlier call, outside any phase, and the backend's entry found once; enter
/// through the entry, read the slot by generation, claim, leave. Whether it claimed.
fn fast_reader(t: &Table, me: usize, at: SlotRef, entry: Entry) -> bool {
    let at_p = |p| {
        if entry == (Entry::Registered { p }) {
            barrier_reaches_reader();
        }
    };
    let own = t.phases().entry(me).unwrap();
    at_p(0);
    match entry {
        Entry::Fenced => own.enter(),
        Entry::Registered { .. } => own.enter_registered(),
    }
    at_p(1);
    let seq = Slots::new(&t.slots).seq::<SnowflakeState>(at);
    at_p(2);
    let claimed = seq.is_some_and(claim);
    at_p(3);
    own.exit();
    at_p(4);
    claimed
}

/// The cache's lock holder: evicts the sequence, then inserts another, which may take its
/// slot (the only one). Whether it did.
fn reclaimer(t: &Table) -> bool {
    let cache = t.cache();
    let at = cache.find(KEY).unwrap();
    assert!(cache.evict(at.idx));
    match cache.find_or_insert(OTHER, Kind::Snowflake, creation_layout(&LAYOUT), 0) {
        Ok(new) => {
            assert_eq!(new.idx, at.idx);
            let seq = cache.seq::<SnowflakeState>(new).unwrap();
            assert_eq!(seq.last_tick(), 0, "the reused slot's state was not reset");
            true
        }
        Err(_) => false,
    }
}

/// The backends (`entries[me]` for backend `me`) and the lock holder.
fn model(entries: &'static [Entry], barrier: Option<Barrier>) {
    let t = Arc::new(Table::new(1, entries.len(), barrier));
    t.cache()
        .find_or_insert(KEY, Kind::Snowflake, creation_layout(&LAYOUT), 0)
        .unwrap();
    let backends: Vec<_> = entries
        .iter()
        .enumerate()
        .map(|(me, &entry)| {
            let t = t.clone();
            thread::spawn(move || (entry, reader(&t, me, entry)))
        })
        .collect();
    let lock_holder = {
        let t = t.clone();
        thread::spawn(move || reclaimer(&t))
    };
    let reused = lock_holder.join().unwrap();
    let claimed: Vec<(Entry, bool)> = backends.into_iter().map(|b| b.join().unwrap()).collect();
    if reused {
        let cache = t.cache();
        let seq = cache
            .find(OTHER)
            .and_then(|at| cache.seq::<SnowflakeState>(at))
            .unwrap();
        assert_eq!(
            seq.last_tick(),
            0,
            "a backend that found the evicted sequence claimed from its slot's new one"
        );
    }
    for (entry, claimed) in claimed {
        if entry == (Entry::Registered { p: 0 }) {
            // The model's own check: a reader the barrier reached before it entered runs
            // after the eviction, and finds nothing.
            assert!(!claimed);
        }
    }
}

/// Failed when `Phases::enter` published its entry with a SeqCst store and no fence: the
/// reader loaded the phase, stored its entry, then read the slot READY (not yet EVICTED, an
/// Acquire load that the SeqCst store does not order after it), while the lock holder
/// evicted, advanced the phase, read the reader's entry still 0 (`all_past`), and reset the
/// slot for the other sequence: the reader then read the slot's layout cell unordered with
/// the reset's write ("Causality violation: concurrent read and write", cache.rs `meta`).
/// x86's xchg orders everything; arm64's stlr does not order a later ldapr (an Acquire load
/// built for a CPU with RCpc, Graviton 2 and later).
#[test]
fn loom_no_slot_is_reused_while_a_fenced_reader_holds_it() {
    check("cache fenced", DEFAULT_PREEMPTIONS, || {
        model(&[Entry::Fenced], None)
    });
}

/// Failed when `Phases::enter` stored the entry Relaxed: the backend's first call read the
/// slot and left (a Release store of 0), its second call stored its new phase, at or past
/// the eviction's, and the lock holder, reading that entry, reset the slot with nothing
/// ordering the first call's reads before it (a later relaxed store does not continue the
/// release sequence of the exit). Found by an independent review of the orderings.
#[test]
fn loom_no_slot_is_reused_while_a_reader_that_left_calls_again() {
    check("cache fenced twice", DEFAULT_PREEMPTIONS, || {
        let t = Arc::new(Table::new(1, 1, None));
        t.cache()
            .find_or_insert(KEY, Kind::Snowflake, creation_layout(&LAYOUT), 0)
            .unwrap();
        let backend = {
            let t = t.clone();
            thread::spawn(move || {
                reader(&t, 0, Entry::Fenced);
                let phases = t.phases();
                assert!(phases.enter(0));
                phases.exit(0);
            })
        };
        let lock_holder = {
            let t = t.clone();
            thread::spawn(move || reclaimer(&t))
        };
        lock_holder.join().unwrap();
        backend.join().unwrap();
    });
}

#[test]
fn loom_no_slot_is_reused_while_a_registered_reader_holds_it() {
    static AT: [[Entry; 1]; 5] = [
        [Entry::Registered { p: 0 }],
        [Entry::Registered { p: 1 }],
        [Entry::Registered { p: 2 }],
        [Entry::Registered { p: 3 }],
        [Entry::Registered { p: 4 }],
    ];
    for (p, entries) in AT.iter().enumerate() {
        check(
            &format!("cache membarrier P{p}"),
            DEFAULT_PREEMPTIONS,
            move || model(entries, Some(membarrier)),
        );
    }
}

/// Both kinds at once, as a server has them when some processes could not register: a
/// fenced backend and a registered one (the barrier reaching it after it entered, or after
/// it used the slot), the lock holder reclaiming with the barrier.
#[test]
fn loom_no_slot_is_reused_while_fenced_and_registered_readers_hold_it() {
    static MIXED: [[Entry; 2]; 2] = [
        [Entry::Fenced, Entry::Registered { p: 1 }],
        [Entry::Fenced, Entry::Registered { p: 3 }],
    ];
    for (i, entries) in MIXED.iter().enumerate() {
        check(
            &format!("cache mixed {i}"),
            DEFAULT_PREEMPTIONS,
            move || model(entries, Some(membarrier)),
        );
    }
}

/// The fast path, as production runs it (`shmem::fast_slots`, `generate::without_waiting`):
/// fenced, once and twice in a row (the second call entering after the first left), and
/// registered with the barrier reaching it at each point. Fails with the fence taken out of
/// `Entry::enter` (a causality violation on the slot's layout cell).
#[test]
fn loom_no_slot_is_reused_while_a_fast_path_reader_holds_it() {
    let run = |entry: Entry, calls: usize| {
        let barrier = match entry {
            Entry::Fenced => None,
            Entry::Registered { .. } => Some(membarrier as Barrier),
        };
        let t = Arc::new(Table::new(1, 1, barrier));
        let at = t
            .cache()
            .find_or_insert(KEY, Kind::Snowflake, creation_layout(&LAYOUT), 0)
            .unwrap();
        let backend = {
            let t = t.clone();
            thread::spawn(move || {
                for _ in 0..calls {
                    fast_reader(&t, 0, at, entry);
                }
            })
        };
        let lock_holder = {
            let t = t.clone();
            thread::spawn(move || reclaimer(&t))
        };
        let reused = lock_holder.join().unwrap();
        backend.join().unwrap();
        if reused {
            let seq = t.cache().seq::<SnowflakeState>(at_of(&t)).unwrap();
            assert_eq!(
                seq.last_tick(),
                0,
                "the fast path claimed from the reused slot"
            );
        }
    };
    for calls in 1..=2 {
        check(
            &format!("cache fast path fenced x{calls}"),
            DEFAULT_PREEMPTIONS,
            move || run(Entry::Fenced, calls),
        );
    }
    for p in 0..=4 {
        check(
            &format!("cache fast path membarrier P{p}"),
            DEFAULT_PREEMPTIONS,
            move || run(Entry::Registered { p }, 1),
        );
    }
}

/// The other sequence's slot, once the lock holder inserted it.
fn at_of(t: &Table) -> SlotRef {
    t.cache().find(OTHER).unwrap()
}
