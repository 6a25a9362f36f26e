//! When the slot of a dropped sequence may take a new sequence: once no backend can still be
//! using it as the old one.
//!
//! PURE: no pgrx here; the tests run it from several threads.
//!
//! Backends reach a slot without a lock (the generators' whole point), so a slot cannot be
//! handed to a new sequence the moment its old one is dropped: a backend may be between
//! finding the slot and claiming a value from it. This is epoch-based reclamation (its epochs
//! are called phases here: "epoch" is the ID's time origin), at the granularity of a call: before a call touches the table it publishes the current phase in
//! its backend's entry ([`Phases::enter`]), and clears it when the call ends
//! ([`Phases::exit`]). A drop marks the slot first, then advances the phase
//! ([`Phases::advance`]), and the slot may be reused once every entry is either clear or at
//! least that new phase ([`Phases::all_past`]): every call that could have found the slot
//! before it was dropped has ended since. A call starting later finds the slot dropped (the
//! drop's mark comes before the phase advance, a release the call's load of the phase
//! acquires). What a backend keeps between calls (a call site's slot) it checks by generation
//! before use, inside the next call's phase.
//!
//! Entering must order the entry's store before the call's loads of slots (a reclaimer that
//! misses the store could reuse a slot the call then reads): a SeqCst fence after the store,
//! and one in the reclaimer between its eviction and its loads of the entries. Of the two,
//! the first in their single total order decides: the reclaimer sees the entry, or the call
//! sees the slot evicted (`loom_models::cache`). A fence per call does it, and
//! costs the generators' fast path a locked instruction that drains the store buffer: the
//! largest part of what a call adds to the loop. So, where the system offers it, the fence moves
//! to the reclaimer, the side that runs rarely: a reader enters with a plain store, and a
//! reclaimer, having seen a slot evicted and before it reads the entries, makes every CPU that
//! runs a registered process execute a full barrier ([`Barrier`]: Linux's
//! `membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)`, as liburcu does for threads). A reader's store
//! is then either visible to the reclaimer, or ordered after the barrier together with its
//! loads, which find the slot evicted. Readers that are not registered to receive the
//! barrier enter with the fence ([`Phases::enter`]); both kinds mix safely.
//!
//! A call that waits (a first use reading a locked table) delays the reuse of slots evicted
//! meanwhile; a backend idle in a transaction does not.

use crate::core::sync::{compiler_fence, fence, AtomicU64, Ordering};

/// Makes every CPU that runs a process registered for it execute a full memory barrier
/// before it returns; false if it could not (the reclaimer then reuses nothing).
pub type Barrier = fn() -> bool;

/// The phase counter and one entry per backend, in shared memory (all-zero: no phase yet,
/// nobody entered).
#[derive(Clone, Copy)]
pub struct Phases<'a> {
    global: &'a AtomicU64,
    active: &'a [AtomicU64],
    /// What a reclaimer runs before reading the entries, when some readers enter without a
    /// fence ([`Phases::enter_registered`]); `None` when every reader fences.
    barrier: Option<Barrier>,
}

impl<'a> Phases<'a> {
    pub fn new(global: &'a AtomicU64, active: &'a [AtomicU64], barrier: Option<Barrier>) -> Self {
        Phases {
            global,
            active,
            barrier,
        }
    }

    /// Backend `me`'s entry, found once and kept (the generators' fast path enters and leaves
    /// through it); `None` if it has none (it must not use the table then).
    #[inline]
    pub fn entry(&self, me: usize) -> Option<Entry<'a>> {
        self.active.get(me).map(|entry| Entry {
            global: self.global,
            entry,
        })
    }

    /// Backend `me` starts using the table; false if it has no entry (it must not then).
    pub fn enter(&self, me: usize) -> bool {
        self.entry(me).map(Entry::enter).is_some()
    }

    /// Backend `me` starts using the table, without a fence: only for a process that
    /// receives the reclaimers' barrier (registered for it), and only in phases made with
    /// one. False if it has no entry (it must not then).
    #[inline]
    pub fn enter_registered(&self, me: usize) -> bool {
        debug_assert!(
            self.barrier.is_some(),
            "a registered entry needs the barrier"
        );
        self.entry(me).map(Entry::enter_registered).is_some()
    }

    /// What a reclaimer must run after seeing a slot evicted and before asking
    /// [`Phases::all_past`] about it; false if the slot must not be reused now.
    pub fn before_reclaiming(&self) -> bool {
        // The reclaimer's half of the fenced readers' protocol: its eviction (a SeqCst
        // exchange) before its loads of the entries. The C11 model orders a SeqCst operation
        // before a later SeqCst fence of another thread, but loom checks SeqCst operations
        // as AcqRel only, and proves the protocol with a fence on both sides. Once per probe
        // that meets an evicted slot, under the cache's lock: nothing on a generator's path.
        fence(Ordering::SeqCst);
        self.barrier.is_none_or(|barrier| barrier())
    }

    /// Backend `me` holds nothing of the table any more.
    pub fn exit(&self, me: usize) {
        if let Some(entry) = self.entry(me) {
            entry.exit();
        }
    }

    /// After a slot was marked dropped: the phase its reuse must wait for.
    pub fn advance(&self) -> u64 {
        // The phase a backend entering from now on publishes. Release: the eviction before it
        // is seen by a call that reads the new phase (see `enter`).
        self.global.fetch_add(1, Ordering::Release) + 2
    }

    /// Whether every backend entered at `phase` or later, or not at all.
    pub fn all_past(&self, phase: u64) -> bool {
        // Acquire: synchronizes with `exit`. After the reclaimer's fence (`before_reclaiming`).
        self.active.iter().all(|e| {
            let e = e.load(Ordering::Acquire);
            e == 0 || e >= phase
        })
    }
}

/// One backend's entry among the phases, and the phase counter it enters at.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    global: &'a AtomicU64,
    entry: &'a AtomicU64,
}

impl<'a> Entry<'a> {
    /// The entry `entry` of the phases whose counter is `global` (see [`Phases::entry`]: one
    /// kept by its process as pointers).
    pub fn new(global: &'a AtomicU64, entry: &'a AtomicU64) -> Self {
        Entry { global, entry }
    }

    /// The backend starts using the table (see [`Phases::enter`]).
    #[inline]
    pub fn enter(self) {
        // Never 0, which means "not entered". Acquire: a call that reads a phase advanced
        // after an eviction must see the eviction (with a relaxed load the model reuses the
        // slot under it: the reclaimer sees the new phase, the call the slot still READY).
        let phase = self.global.load(Ordering::Acquire) + 1;
        // Release: a reclaimer that reads this entry (`all_past`, Acquire) and lets the slot
        // go must see all this backend's earlier calls did to it, and a later store does not
        // continue the release sequence of the `exit` before it (C++20, which Rust follows).
        // Relaxed, the model of a backend that calls twice reuses the slot under the first
        // call's reads. A plain store on x86 and arm64 alike.
        self.entry.store(phase, Ordering::Release);
        // A fence, not a SeqCst store: a SeqCst store orders nothing after it but other
        // SeqCst operations, and the call's loads of slots are Acquire (x86's xchg ordered
        // them; arm64's stlr does not order a later ldapr). On x86-64 this is one locked
        // instruction, as the xchg was. (loom_models::cache, the fenced reader.)
        fence(Ordering::SeqCst);
    }

    /// The backend starts using the table, without a fence (see [`Phases::enter_registered`]:
    /// only where the reclaimers make the barrier, and the process receives it).
    #[inline(always)]
    pub fn enter_registered(self) {
        let phase = self.global.load(Ordering::Acquire) + 1;
        // Release, though the barrier orders it: it costs a plain store on x86 and arm64.
        self.entry.store(phase, Ordering::Release);
        // The CPU's ordering of this store before the call's loads comes from the
        // reclaimers' barrier; the compiler's from this.
        compiler_fence(Ordering::SeqCst);
    }

    /// The backend holds nothing of the table any more.
    #[inline(always)]
    pub fn exit(self) {
        // Release, read with acquire by `all_past`: all the call did to a slot happens
        // before the slot's reset.
        self.entry.store(0, Ordering::Release);
    }
}

#[cfg(not(loom))] // with std atomics, outside the model checker
#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::membarrier;
    use std::sync::atomic::AtomicBool;

    fn table(n: usize) -> (AtomicU64, Vec<AtomicU64>) {
        (
            AtomicU64::new(0),
            (0..n).map(|_| AtomicU64::new(0)).collect(),
        )
    }

    #[test]
    fn a_drop_waits_for_the_backends_entered_before_it() {
        let (g, a) = table(3);
        let e = Phases::new(&g, &a, None);
        assert!(e.enter(0));
        let d = e.advance();
        assert!(!e.all_past(d), "backend 0 entered before the drop");
        assert!(e.enter(1));
        assert!(!e.all_past(d));
        e.exit(0);
        assert!(e.all_past(d), "backend 1 entered after the drop");
        assert!(!e.enter(3), "no entry for backend 3");
    }

    /// Readers find a slot, check that it is still theirs (not dropped), then use it; a
    /// reclaimer drops it, and reuses it once all_past says so. No reader may be using the slot
    /// (after a successful check) while it is being reused.
    #[test]
    fn no_reader_uses_a_slot_while_it_is_reused() {
        readers_and_a_reclaimer(None);
    }

    /// The same with readers that enter without a fence, the reclaimer making every CPU
    /// execute one (this process registered for Linux's membarrier), as backends do where
    /// the system offers it. (It cannot show that the barrier is needed: the reordering it
    /// prevents spans a few cycles, and a run without it passes too.)
    #[test]
    #[cfg(target_os = "linux")]
    fn no_reader_uses_a_slot_while_it_is_reused_unfenced_entries() {
        assert!(membarrier::register(), "membarrier registration failed");
        readers_and_a_reclaimer(Some(membarrier::global));
    }

    fn readers_and_a_reclaimer(barrier: Option<Barrier>) {
        let (g, a) = table(8);
        let phases = Phases::new(&g, &a, barrier);
        let dropped = AtomicBool::new(false);
        let in_use = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        // Failures are counted, never asserted inside the scope: a panicking thread would
        // leave the others spinning (a reader that never exits, a reclaimer that never stops
        // them), and `cargo test` would hang instead of failing.
        let (refused_entries, reused_in_use) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for me in 0..7 {
                let (phases, dropped, in_use, stop) = (&phases, &dropped, &in_use, &stop);
                let refused_entries = &refused_entries;
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let entered = match barrier {
                            Some(_) => phases.enter_registered(me),
                            None => phases.enter(me),
                        };
                        if !entered {
                            refused_entries.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                        if !dropped.load(Ordering::SeqCst) {
                            in_use.fetch_add(1, Ordering::SeqCst);
                            std::hint::spin_loop();
                            in_use.fetch_sub(1, Ordering::SeqCst);
                        }
                        phases.exit(me);
                    }
                });
            }
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            for _ in 0..2_000 {
                dropped.store(true, Ordering::SeqCst);
                let d = phases.advance();
                while !(phases.before_reclaiming() && phases.all_past(d))
                    && std::time::Instant::now() < deadline
                {
                    std::hint::spin_loop();
                }
                if in_use.load(Ordering::SeqCst) != 0 {
                    reused_in_use.fetch_add(1, Ordering::Relaxed);
                }
                dropped.store(false, Ordering::SeqCst); // reused: a live slot again
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(refused_entries.into_inner(), 0, "a reader could not enter");
        assert_eq!(
            reused_in_use.into_inner(),
            0,
            "a reader still used the slot"
        );
        assert!(
            phases.all_past(phases.advance()),
            "a reader never left (the wait timed out)"
        );
    }
}
