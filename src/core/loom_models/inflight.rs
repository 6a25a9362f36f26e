//! PURE: values in flight and the watermark (`inflight.rs`, with `snowflake_slot`'s tick and
//! the cache): a backend publishes its transaction's entry, reserves a value and holds it
//! until its transaction ends, while another takes the sequence's watermark; and the same
//! with the sequence evicted from the cache meanwhile, the watermark then counting from the
//! relation's lease. No watermark is above a value still in flight.
//!
//! The fences are production's ([`Holders::hold`], [`Holders::holding_after_fence`]); the
//! order of the steps around them is the models', as `sequences::generate::reserve` (through
//! `sequences::inflight_xact::hold` and `raise`) and `sequences::watermark` take them: hold
//! (publish, fence), the slot still current, reserve, raise; and where the sequence stands
//! (its cache entry, or its relation's lease read first), then the entries after the fence.

use loom::sync::Arc;
use loom::thread;

use super::{check, Table, DEFAULT_PREEMPTIONS, KEY};
use crate::core::identity::Kind;
use crate::core::inflight::{Held, Holder, Holders, Published, Value};
use crate::core::snowflake::layout::{Layout, DEFAULT_EPOCH_MS};
use crate::core::snowflake::snowflake_slot::{creation_layout, SnowflakeSeq, SnowflakeState};
use crate::core::sync::{AtomicU64, Ordering};
use crate::core::wallclock;

const LAYOUT: Layout = Layout::own(10, DEFAULT_EPOCH_MS);
const CB: u32 = LAYOUT.counter_bits;
const M: u64 = 1_000;
/// The lease the sequence's relation holds (ms).
const LEASE_MS: u64 = M + 5;
const HELD: Held = Held {
    db: KEY.db,
    relid: KEY.relid,
    kind: Kind::Snowflake,
};

struct World {
    table: Table,
    holders: Vec<Holder>,
    /// The generator's value while its transaction runs (0: none): set after the reservation,
    /// cleared before its entry is.
    in_flight: AtomicU64,
}

fn id(tick: u64) -> Value {
    Value::from(LAYOUT.id_of_tick(tick, 0))
}

/// `watermark::snowflake_floor`.
fn floor(seq: &SnowflakeSeq<'_>) -> Value {
    if seq.lease().end == 0 {
        return 0;
    }
    id(seq.next_tick_floor())
}

fn world() -> Arc<World> {
    let table = Table::new(1, 1, None);
    {
        let cache = table.cache();
        let at = cache
            .find_or_insert(KEY, Kind::Snowflake, creation_layout(&LAYOUT), 0)
            .unwrap();
        let seq = cache.seq::<SnowflakeState>(at).unwrap();
        seq.raise_to(M << CB | 7);
        seq.publish_lease(LEASE_MS);
    }
    Arc::new(World {
        table,
        holders: (0..1).map(|_| Holder::default()).collect(),
        in_flight: AtomicU64::new(0),
    })
}

/// A transaction of backend 0 taking its first value from the sequence, holding it, and
/// ending: `reserving`, then the end of the transaction.
fn generator(w: &World) {
    let unix = DEFAULT_EPOCH_MS + M as i64;
    wallclock::model::set(unix, unix);
    let holders = Holders::new(&w.holders);
    let cache = w.table.cache();
    let Some(seq) = cache
        .find(KEY)
        .and_then(|at| cache.seq::<SnowflakeState>(at))
    else {
        return;
    };
    let Published::New(i) = holders.hold(0, HELD, floor(&seq), 0) else {
        panic!("one sequence, one entry");
    };
    if seq.is_current() {
        let bounds = seq.bounds(&LAYOUT, 10_000);
        let r = seq.try_reserve(&LAYOUT, 1, &bounds).unwrap();
        holders.raise(0, i, id(r.first));
        let v = u64::try_from(id(r.first)).unwrap();
        w.in_flight.store(v, Ordering::Release);
        // ... the transaction runs, then ends ...
        w.in_flight.store(0, Ordering::Release);
    }
    holders.clear(0);
}

/// `watermark`: where the sequence stands (the relation's lease, read first, if it is not
/// cached), a full fence, the lowest value in flight. Then the check: a value still in flight
/// after the watermark was taken is not below it.
fn watermark(w: &World) {
    let stands = w
        .table
        .cache()
        .find(KEY)
        .and_then(|at| w.table.cache().seq::<SnowflakeState>(at).map(|s| floor(&s)))
        .unwrap_or(id(LEASE_MS << CB));
    let mut mark = stands;
    Holders::new(&w.holders).holding_after_fence(HELD, |s| mark = mark.min(s.value.unwrap_or(0)));
    let v = w.in_flight.load(Ordering::Acquire);
    assert!(
        v == 0 || Value::from(v) >= mark,
        "value {v} in flight below the watermark {mark}"
    );
}

#[test]
fn loom_no_watermark_above_a_value_in_flight() {
    check("inflight", DEFAULT_PREEMPTIONS, || {
        let w = world();
        let g = {
            let w = w.clone();
            thread::spawn(move || generator(&w))
        };
        let reader = {
            let w = w.clone();
            thread::spawn(move || watermark(&w))
        };
        reader.join().unwrap();
        g.join().unwrap();
    });
}

/// The sequence evicted from the cache while a transaction takes its first value: the
/// watermark that finds it gone counts from its relation's lease, which the value lies below;
/// the generator that still found its slot current must be seen in flight.
#[test]
fn loom_no_watermark_above_a_value_in_flight_across_an_eviction() {
    check("inflight eviction", DEFAULT_PREEMPTIONS, || {
        let w = world();
        let g = {
            let w = w.clone();
            thread::spawn(move || generator(&w))
        };
        // The cache's lock holder evicts, then takes the watermark.
        let reader = {
            let w = w.clone();
            thread::spawn(move || {
                let cache = w.table.cache();
                assert!(cache.evict(cache.find(KEY).unwrap().idx));
                watermark(&w);
            })
        };
        reader.join().unwrap();
        g.join().unwrap();
    });
}
