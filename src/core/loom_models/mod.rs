//! PURE: model checks of the lock-free core under loom (`make loom`, built with
//! `RUSTFLAGS="--cfg loom"`): the real code of each protocol, its atomics the checker's (see
//! `core::sync`), run by two or three threads doing what backends do, under every
//! interleaving within a preemption bound and every value a load may read under the Rust/C11
//! memory model (loom's limits: `SeqCst` loads and stores are checked as `AcqRel`, which can
//! only report too much; some load-buffering outcomes are not explored).
//!
//! Each model asserts the invariant its protocol promises; docs/how-it-works.md ("Memory
//! ordering") states the argument beside it. One model: `make loom T=tick`; a deeper bound:
//! `LOOM_MAX_PREEMPTIONS=3 make loom T=...`.

mod cache;
mod claim;
mod gdid;
mod inflight;
mod sightings;
mod tick;

use std::time::Instant;

/// The preemption bound of every model unless `LOOM_MAX_PREEMPTIONS` says otherwise: loom's
/// own default (none) explores every schedule, too many for `make test` on two cores.
pub const DEFAULT_PREEMPTIONS: usize = 2;

/// Runs `model` under every schedule within the bound (`preemptions` unless
/// `LOOM_MAX_PREEMPTIONS` is set) and prints how many executions that was and how long it
/// took.
pub fn check(name: &str, preemptions: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    let bound = *builder.preemption_bound.get_or_insert(preemptions);
    // Waits (the membarrier handshake, a slot being claimed) are yields, each a branch: at
    // bound 3 one execution of the mixed cache model passes loom's default of 1,000.
    builder.max_branches = builder.max_branches.max(20_000);
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = runs.clone();
    let start = Instant::now();
    builder.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    println!(
        "loom {name}: {} executions, preemption bound {bound}, {:.1} s",
        runs.load(std::sync::atomic::Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
}

/// Spins (a yield under loom) until `done` says so.
pub fn wait_until(mut done: impl FnMut() -> bool) {
    while !done() {
        loom::hint::spin_loop();
    }
}

use crate::core::cache::{Cache, Key, Slot};
use crate::core::reclamation::{Barrier, Phases};
use crate::core::sync::AtomicU64;

/// The cache of sequences and its phases, as shared memory holds them (made, not zeroed:
/// under loom an atomic is the checker's object).
pub struct Table {
    pub slots: Vec<Slot>,
    pub global: AtomicU64,
    pub active: Vec<AtomicU64>,
    pub barrier: Option<Barrier>,
}

impl Table {
    pub fn new(slots: usize, backends: usize, barrier: Option<Barrier>) -> Table {
        Table {
            slots: (0..slots).map(|_| Slot::default()).collect(),
            global: AtomicU64::new(0),
            active: (0..backends).map(|_| AtomicU64::new(0)).collect(),
            barrier,
        }
    }

    pub fn cache(&self) -> Cache<'_> {
        Cache::new(&self.slots, self.phases())
    }

    pub fn phases(&self) -> Phases<'_> {
        Phases::new(&self.global, &self.active, self.barrier)
    }
}

/// The sequence the models generate from.
pub const KEY: Key = Key {
    db: 1,
    relid: 16_384,
    filenode: 16_384,
};
