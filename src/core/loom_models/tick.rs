//! PURE: snowflake ticks (`snowflake_slot`, `clock`): backends reserving ticks, one or a batch,
//! at the end of a millisecond's counter and with a wall clock stepped back, while another
//! extends the lease; a cache entry restoring its relation's lease while a backend reserves.
//! No tick is handed out twice, none at or past the durable lease, none below a restored
//! lease.

use loom::sync::Arc;
use loom::thread;

use super::{check, Table, DEFAULT_PREEMPTIONS, KEY};
use crate::core::identity::Kind;
use crate::core::lease::Lease;
use crate::core::snowflake::clock::{Refusal, Reservation};
use crate::core::snowflake::layout::{Layout, DEFAULT_EPOCH_MS};
use crate::core::snowflake::snowflake_slot::{creation_layout, Miss, SnowflakeSeq, SnowflakeState};
use crate::core::sync::{AtomicU64, Ordering};
use crate::core::wallclock;

/// 12 counter bits: 4,096 ticks a millisecond.
const LAYOUT: Layout = Layout::own(10, DEFAULT_EPOCH_MS);
const CB: u32 = LAYOUT.counter_bits;
/// The millisecond (since the epoch) the models run at.
const M: u64 = 1_000;
const MAX_AHEAD_MS: u64 = 10_000;

fn tick(ms: u64, counter: u64) -> u64 {
    ms << CB | counter
}

/// A table whose one slot holds the sequence, its last tick `last` and its lease `lease_ms`.
fn table(last: u64, lease_ms: u64) -> Arc<Table> {
    let t = Table::new(1, 1, None);
    {
        let cache = t.cache();
        let at = cache
            .find_or_insert(KEY, Kind::Snowflake, creation_layout(&LAYOUT), 0)
            .unwrap();
        let seq = cache.seq::<SnowflakeState>(at).unwrap();
        seq.raise_to(last);
        if lease_ms > 0 {
            seq.publish_lease(lease_ms);
        }
    }
    Arc::new(t)
}

fn with_seq<R>(t: &Table, f: impl FnOnce(SnowflakeSeq<'_>) -> R) -> R {
    let cache = t.cache();
    f(cache
        .seq::<SnowflakeState>(cache.find(KEY).unwrap())
        .unwrap())
}

/// What `snowflake_next`'s fast path does, the wall clock of this backend at `ms` (coarse and
/// precise): the bounds, then one attempt; a lease needed is waited for (another backend is
/// extending it), up to three attempts. `durable` is the lease its relation holds (ms): what
/// a reservation takes must lie below it.
fn take(t: &Table, n: u64, ms: u64, durable: &AtomicU64) -> Option<Reservation> {
    let unix = DEFAULT_EPOCH_MS + ms as i64;
    wallclock::model::set(unix, unix);
    with_seq(t, |seq| {
        for _ in 0..3 {
            let bounds = seq.bounds(&LAYOUT, MAX_AHEAD_MS);
            match seq.try_reserve(&LAYOUT, n, &bounds) {
                Ok(r) => {
                    let lease = durable.load(Ordering::Relaxed);
                    assert!(
                        r.last < tick(lease, 0),
                        "tick {:#x} handed out past the durable lease {lease} ms",
                        r.last
                    );
                    assert_eq!(r.last - r.first + 1, n);
                    return Some(r);
                }
                Err(Miss::Refused(Refusal::LeaseNeeded { .. })) => loom::hint::spin_loop(),
                Err(other) => panic!("{other:?}"),
            }
        }
        None
    })
}

/// The lease extension, as under the lease lock: the relation first (durable), then the
/// shared lease.
fn extend(t: &Table, end_ms: u64, durable: &AtomicU64) {
    durable.store(end_ms, Ordering::Relaxed);
    with_seq(t, |seq| seq.publish_lease(end_ms));
}

fn disjoint(mut taken: Vec<Reservation>) {
    taken.sort_by_key(|r| r.first);
    for w in taken.windows(2) {
        assert!(w[0].last < w[1].first, "a tick handed out twice: {taken:?}");
    }
}

/// Three backends: one at the last counter's millisecond, one whose clock stepped back 3 ms
/// taking a batch of two, one extending the lease and then taking one a millisecond later.
/// The sequence stands at the last counter of millisecond M and its lease ends there: every
/// tick is in a later millisecond, past the lease until it is extended.
#[test]
fn loom_ticks_at_a_milliseconds_end_a_clock_step_back_and_a_lease_extension() {
    check("tick", DEFAULT_PREEMPTIONS, || {
        let t = table(tick(M, (1 << CB) - 1), M + 1);
        let durable = Arc::new(AtomicU64::new(M + 1));
        let spawn = |n, ms| {
            let (t, durable) = (t.clone(), durable.clone());
            thread::spawn(move || take(&t, n, ms, &durable))
        };
        let at_the_end = spawn(1, M);
        let stepped_back = spawn(2, M - 3);
        let extender = {
            let (t, durable) = (t.clone(), durable.clone());
            thread::spawn(move || {
                extend(&t, M + 5, &durable);
                take(&t, 1, M + 1, &durable)
            })
        };
        let after = extender.join().unwrap();
        let taken: Vec<Reservation> = [
            at_the_end.join().unwrap(),
            stepped_back.join().unwrap(),
            after,
        ]
        .into_iter()
        .flatten()
        .collect();
        for r in &taken {
            assert!(
                r.first > tick(M, (1 << CB) - 1),
                "below the last tick: {r:?}"
            );
        }
        let last = with_seq(&t, |seq| seq.last_tick());
        assert_eq!(
            Some(last),
            taken
                .iter()
                .map(|r| r.last)
                .max()
                .or(Some(tick(M, (1 << CB) - 1)))
        );
        disjoint(taken);
    });
}

/// A sequence entering the cache takes its relation's lease (`restore`), then extends it,
/// while a backend whose clock is behind that lease reserves: whatever it takes lies above
/// the restored lease (an earlier cache entry of the sequence may have handed out anything
/// below it) and below the extended one.
#[test]
fn loom_a_restored_lease_is_never_undercut() {
    check("tick restore", DEFAULT_PREEMPTIONS, || {
        let t = table(0, 0);
        let durable = Arc::new(AtomicU64::new(M + 3));
        let generator = {
            let (t, durable) = (t.clone(), durable.clone());
            thread::spawn(move || take(&t, 1, M, &durable))
        };
        let entering = {
            let (t, durable) = (t.clone(), durable.clone());
            thread::spawn(move || {
                with_seq(&t, |seq| seq.restore(Lease { era: 0, end: M + 3 }));
                extend(&t, M + 6, &durable);
            })
        };
        entering.join().unwrap();
        if let Some(r) = generator.join().unwrap() {
            assert!(r.first >= tick(M + 3, 0), "{r:?} below the restored lease");
        }
    });
}
