//! One snowflake sequence: its state words in a cache slot, and everything that can be
//! done with them without PostgreSQL: one attempt at reserving ticks (clock choice, CAS,
//! counters), the check against the layout it was created with, the size of a lease
//! extension, and restoring a durable lease.
//!
//! PURE: no pgrx here. It never raises an error and never waits, so both entry points of
//! `snowflake_next` use it: the unguarded fast one and the guarded one that waits and raises.

use crate::core::sync::{AtomicU64, Ordering};

use crate::core::cache::{Seq, SlotState};
#[cfg(test)]
use crate::core::identity::CreationLayout;
use crate::core::identity::Kind;
use crate::core::lease::Lease;
use crate::core::snowflake::clock::{self, Bounds, Refusal, Reservation};
use crate::core::snowflake::layout::Layout;
use crate::core::wallclock;

/// The state words of a snowflake sequence.
#[repr(C)]
#[derive(Default)]
pub struct SnowflakeState {
    /// The last tick handed out (see `clock`); 0 before the first.
    tick: AtomicU64,
    /// The first tick the durable lease does not cover: no tick at or past it has reached a
    /// caller.
    lease_end: AtomicU64,
    /// IDs handed out since the server started.
    issued: AtomicU64,
    /// Reservations that ran out of a millisecond's counter and took later milliseconds.
    counter_exhausted: AtomicU64,
    /// Calls that found the wall clock earlier than the same backend last saw it.
    clock_regressions: AtomicU64,
    /// Lease extensions since the sequence entered the cache.
    lease_extensions: AtomicU64,
    /// The end (ms) of the durable lease its relation held when it entered the cache: up to
    /// there the sequence skipped ahead without handing anything out (see
    /// [`lease_target_ms`]).
    restored_end_ms: AtomicU64,
}

// SAFETY: repr(C), seven AtomicU64 (56 bytes, align 8), valid when zeroed.
unsafe impl SlotState for SnowflakeState {
    const KIND: Kind = Kind::Snowflake;
}

/// A snowflake sequence: a cache slot known to hold one.
pub type SnowflakeSeq<'a> = Seq<'a, SnowflakeState>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// The wall clock is before the layout's epoch or past its last millisecond.
    ClockOutsideLayout {
        unix_ms: i64,
    },
    Refused(Refusal),
}

/// What the monitoring view shows of a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub last_tick: u64,
    pub lease_end_tick: u64,
    pub issued: u64,
    pub counter_exhausted: u64,
    pub clock_regressions: u64,
    pub lease_extensions: u64,
}

/// How far past the later of the wall clock and the sequence a lease extension reaches: one
/// disk write and one WAL flush per second per busy sequence, and at most this much of the
/// time range lost in a crash. With `snowflake.max_clock_ahead` below a second the window is
/// that bound instead, so that a restarted server is never held back by its leases for longer
/// than the bound; such a sequence extends its lease once per bound when busy.
pub const LEASE_WINDOW_MS: u64 = 1_000;

pub fn lease_window_ms(max_ahead_ms: u64) -> u64 {
    LEASE_WINDOW_MS.min(max_ahead_ms).max(1)
}

/// The exclusive end, in milliseconds since the epoch, of a lease extension that must cover
/// tick `last`: a window past the later of the wall clock and `last`, never past the end of
/// the layout.
///
/// The window is counted from the sequence, not capped at the run-ahead bound: a sequence
/// held at the bound by a sustained burst then extends once per window like any other
/// (capping it made one extension, an fsync and a WAL flush, per wall-clock millisecond). The
/// price: after a crash, such a sequence resumes up to one window past the bound and waits
/// (then fails with 53400) until the clock has caught up by that much.
///
/// Except within a window of `restored_end_ms`, the lease its relation held when the
/// sequence entered the cache: the sequence went there without handing anything out, and a
/// window counted from it would move a sequence that leaves and enters a busy cache one
/// window further ahead of the clock each time (on to 53400). There the window is counted
/// from the clock alone, and a sequence ahead of it extends by what it needs.
pub fn lease_target_ms(last: u64, now_ms: u64, b: &Bounds, restored_end_ms: u64) -> u64 {
    let needed = (last >> b.counter_bits) + 1;
    let layout_end = (b.max_tick >> b.counter_bits) + 1;
    let window = lease_window_ms(b.max_ahead_ms);
    // 0: it entered the cache with no lease in its relation (a fresh sequence).
    let from = if restored_end_ms > 0 && needed <= restored_end_ms.saturating_add(window) {
        now_ms
    } else {
        needed.max(now_ms)
    };
    from.saturating_add(window).min(layout_end).max(needed)
}

/// The last coarse wall-clock reading of this process, to notice the clock stepping back.
/// Process-local: each backend compares only its own readings, so there are no races.
#[cfg(not(loom))]
static LAST_WALL_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(i64::MIN);

/// Whether the wall clock read `coarse` is earlier than this process's last reading.
#[inline(always)]
fn clock_went_back(coarse: i64) -> bool {
    #[cfg(not(loom))]
    {
        use std::sync::atomic::Ordering::Relaxed;
        let back = coarse < LAST_WALL_MS.load(Relaxed);
        LAST_WALL_MS.store(coarse, Relaxed);
        back
    }
    // Under loom, each model thread is a process of its own.
    #[cfg(loom)]
    {
        loom::thread_local! {
            static LAST: std::cell::Cell<i64> = std::cell::Cell::new(i64::MIN);
        }
        LAST.with(|last| coarse < last.replace(coarse))
    }
}

impl SnowflakeSeq<'_> {
    /// The layout its IDs count in: the one it was created with.
    pub fn layout(&self) -> Layout {
        let c = self.slot().created_with();
        Layout::own(c.node_bits, c.epoch_ms)
    }

    /// The bounds of a reservation now. The lease only grows while the server runs, so a
    /// lease end read before the CAS never overstates what is durable. Acquire, paired with
    /// [`SnowflakeSeq::publish_lease`]'s release: a tick under a new lease is taken after the
    /// lease reached the disk (relaxed on both sides, loom_models::tick hands out a tick past
    /// the durable lease).
    pub fn bounds(&self, layout: &Layout, max_ahead_ms: u64) -> Bounds {
        Bounds {
            counter_bits: layout.counter_bits,
            max_tick: layout.max_tick(),
            lease_end: self.state().lease_end.load(Ordering::Acquire),
            max_ahead_ms,
        }
    }

    /// Reserves `n >= 1` ticks if the bounds allow it now. Inlined into the generators' fast
    /// path, which a call of it would cost a tenth more (the registers it saves and restores).
    #[inline(always)]
    pub fn try_reserve(
        &self,
        layout: &Layout,
        n: u64,
        bounds: &Bounds,
    ) -> Result<Reservation, Miss> {
        let state = self.state();
        let cb = layout.counter_bits;
        let coarse = wallclock::coarse_unix_ms();
        if clock_went_back(coarse) {
            state.clock_regressions.fetch_add(1, Ordering::Relaxed);
        }
        let since_epoch = |unix_ms| {
            layout
                .ms_since_epoch(unix_ms)
                .map_err(|_| Miss::ClockOutsideLayout { unix_ms })
        };

        let coarse_ms = since_epoch(coarse)?;
        let last = state.tick.load(Ordering::Relaxed);
        let by_coarse =
            clock::coarse_clock_suffices(last, coarse_ms, wallclock::COARSE_MARGIN_MS, cb)
                .then(|| clock::reserve(&state.tick, clock::tick_of_ms(coarse_ms, cb), n, bounds));
        let r = match by_coarse {
            Some(Ok(r)) => r,
            // Not decided by the coarse clock, or refused by it: the coarse reading
            // understates the time, so it overstates how far ahead the sequence is. Ask the
            // precise clock.
            _ => {
                let now_ms = since_epoch(wallclock::precise_unix_ms())?;
                clock::reserve(&state.tick, clock::tick_of_ms(now_ms, cb), n, bounds)
                    .map_err(Miss::Refused)?
            }
        };
        state.issued.fetch_add(n, Ordering::Relaxed);
        if r.counter_exhausted {
            state.counter_exhausted.fetch_add(1, Ordering::Relaxed);
        }
        Ok(r)
    }

    /// The lowest tick a reservation from now on can take (ticks only grow). The
    /// watermark's read (see `core::inflight`): acquire would do, the watermark fences after
    /// it; SeqCst costs nothing more for a load on x86 and arm64.
    pub fn next_tick_floor(&self) -> u64 {
        self.state().tick.load(Ordering::SeqCst).saturating_add(1)
    }

    /// The last tick handed out (0 before the first).
    pub fn last_tick(&self) -> u64 {
        self.state().tick.load(Ordering::Acquire)
    }

    /// Moves the sequence on so that its next tick is above `tick` (never back), without
    /// extending its lease: for a fresh sequence, above the keys already stored (see
    /// `probe`). The lease extension that follows covers it before anything is handed out.
    pub fn raise_to(&self, tick: u64) {
        // A read-modify-write (ordered with every reservation's CAS whatever its ordering);
        // AcqRel as the CAS, under the lease lock, once per first use.
        self.state().tick.fetch_max(tick, Ordering::AcqRel);
    }

    /// Whether a lease extension is still needed to cover tick `last` (another backend may
    /// have made one meanwhile). Asked again under the lease lock.
    pub fn needs_lease_for(&self, last: u64) -> bool {
        self.state().lease_end.load(Ordering::Acquire) <= last
    }

    /// Publishes a lease that is now durable: ticks of milliseconds below `end_ms` may be
    /// handed out.
    pub fn publish_lease(&self, end_ms: u64) {
        let cb = self.layout().counter_bits;
        self.state()
            .lease_end
            .fetch_max(end_ms << cb, Ordering::AcqRel);
        self.state()
            .lease_extensions
            .fetch_add(1, Ordering::Relaxed);
    }

    /// The end of a lease extension covering tick `last` at `now_ms` (see
    /// [`lease_target_ms`]).
    pub fn lease_target_ms(&self, last: u64, now_ms: u64, bounds: &Bounds) -> u64 {
        let restored = self.state().restored_end_ms.load(Ordering::Acquire);
        lease_target_ms(last, now_ms, bounds, restored)
    }

    /// The durable lease it holds: the first millisecond not covered.
    pub fn lease(&self) -> Lease {
        let cb = self.layout().counter_bits;
        Lease {
            era: 0,
            end: self.state().lease_end.load(Ordering::Acquire) >> cb,
        }
    }

    /// Takes the durable lease its relation holds (read under the extension lock): nothing
    /// below it is handed out again. Never moves the sequence back.
    pub fn restore(&self, lease: Lease) {
        let cb = self.layout().counter_bits;
        let end_tick = lease.end << cb;
        // The tick first: a reader that sees the lease sees the sequence above it (a
        // watermark counts from the tick of an entry that has a lease), and a generator that
        // acquires the lease reserves above the tick. Release on the lease would do; SeqCst is
        // kept because loom cannot check this one (it runs read-modify-writes in the order
        // they execute, so loom_models::tick passes even with both relaxed), and a restore is
        // rare (a cache entry, a lease extension).
        self.state()
            .tick
            .fetch_max(end_tick.saturating_sub(1), Ordering::SeqCst);
        // Only a lease this entry did not make itself moves the sequence without handing
        // anything out (every extension reads the relation back, and finds its own lease
        // there).
        if self.state().lease_end.fetch_max(end_tick, Ordering::SeqCst) < end_tick {
            self.state()
                .restored_end_ms
                .fetch_max(lease.end, Ordering::AcqRel);
        }
    }

    pub fn stats(&self) -> Stats {
        let s = self.state();
        Stats {
            last_tick: s.tick.load(Ordering::Relaxed),
            lease_end_tick: s.lease_end.load(Ordering::Relaxed),
            issued: s.issued.load(Ordering::Relaxed),
            counter_exhausted: s.counter_exhausted.load(Ordering::Relaxed),
            clock_regressions: s.clock_regressions.load(Ordering::Relaxed),
            lease_extensions: s.lease_extensions.load(Ordering::Relaxed),
        }
    }
}

/// What a new sequence records of the server's layout (the tests' and the models' sequences;
/// `sequences` makes it from the relation's options).
#[cfg(test)]
pub(crate) fn creation_layout(layout: &Layout) -> CreationLayout {
    CreationLayout {
        epoch_ms: layout.epoch_ms,
        node_bits: layout.node_bits,
    }
}

#[cfg(not(loom))] // with std atomics, outside the model checker
#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::cache::tests::{key, table};
    use crate::core::identity::CreationLayout;
    use crate::core::snowflake::layout::DEFAULT_EPOCH_MS;

    const LAYOUT: Layout = Layout::own(10, DEFAULT_EPOCH_MS);

    impl SnowflakeSeq<'_> {
        /// Whether the sequence was created under `layout` (the server's now). Its state counts
        /// ticks of the layout it was created with, so this comes before anything reads them.
        fn created_under(&self, layout: &Layout) -> bool {
            self.slot().created_with() == creation_layout(layout)
        }
    }

    fn with_seq(test: impl FnOnce(SnowflakeSeq<'_>)) {
        let t = table(2);
        let r = t.cache();
        let at = r
            .find_or_insert(key(1, 1), Kind::Snowflake, creation_layout(&LAYOUT), 0)
            .unwrap();
        test(r.seq(at).unwrap());
    }

    /// A sequence whose lease reaches the end of time: these tests are about the clock.
    fn leased(seq: &SnowflakeSeq<'_>) {
        seq.state().lease_end.store(u64::MAX, Ordering::Relaxed);
    }

    fn now_ms() -> u64 {
        LAYOUT.ms_since_epoch(wallclock::precise_unix_ms()).unwrap()
    }

    #[test]
    fn only_a_snowflake_slot_is_a_snowflake_sequence() {
        let t = table(2);
        let r = t.cache();
        let at = r
            .find_or_insert(key(1, 2), Kind::Gdid, CreationLayout::default(), 0)
            .unwrap();
        assert!(r.seq::<SnowflakeState>(at).is_none());
    }

    #[test]
    fn nothing_is_handed_out_past_the_lease() {
        with_seq(|seq| {
            let b = seq.bounds(&LAYOUT, 10_000);
            assert!(matches!(
                seq.try_reserve(&LAYOUT, 1, &b),
                Err(Miss::Refused(Refusal::LeaseNeeded { .. }))
            ));
            assert_eq!(seq.stats().last_tick, 0);
        });
    }

    #[test]
    fn reservations_follow_the_wall_clock_and_count() {
        with_seq(|seq| {
            leased(&seq);
            let b = seq.bounds(&LAYOUT, 10_000);
            let before = now_ms();
            let a = seq.try_reserve(&LAYOUT, 1, &b).unwrap();
            let z = seq.try_reserve(&LAYOUT, 5, &b).unwrap();
            let after = now_ms();
            assert!((before..=after).contains(&(a.first >> LAYOUT.counter_bits)));
            assert!(z.first > a.last);
            assert_eq!(seq.stats().issued, 6);
        });
    }

    #[test]
    fn a_sequence_far_ahead_continues_from_its_last_tick() {
        with_seq(|seq| {
            leased(&seq);
            let b = seq.bounds(&LAYOUT, 10_000);
            let ahead = clock::tick_of_ms(now_ms() + 5_000, LAYOUT.counter_bits) + 17;
            seq.state().tick.store(ahead, Ordering::Relaxed);
            assert_eq!(seq.try_reserve(&LAYOUT, 1, &b).unwrap().first, ahead + 1);
            // ...but not past the bound:
            let tight = seq.bounds(&LAYOUT, 1_000);
            assert!(matches!(
                seq.try_reserve(&LAYOUT, 1, &tight),
                Err(Miss::Refused(Refusal::AheadOfClock { .. }))
            ));
            assert_eq!(seq.stats().issued, 1);
        });
    }

    #[test]
    fn a_clock_outside_the_layout_is_a_miss() {
        with_seq(|seq| {
            leased(&seq);
            let future_epoch = Layout::own(10, wallclock::precise_unix_ms() + 86_400_000);
            let b = seq.bounds(&future_epoch, 10_000);
            assert!(matches!(
                seq.try_reserve(&future_epoch, 1, &b),
                Err(Miss::ClockOutsideLayout { .. })
            ));
        });
    }

    #[test]
    fn the_layout_check_compares_epoch_and_node_bits() {
        with_seq(|seq| {
            assert!(seq.created_under(&LAYOUT));
            assert!(!seq.created_under(&Layout::own(11, DEFAULT_EPOCH_MS)));
            assert!(!seq.created_under(&Layout::own(10, DEFAULT_EPOCH_MS + 1)));
        });
    }

    #[test]
    fn a_raised_sequence_continues_above_once_leased() {
        with_seq(|seq| {
            let far = clock::tick_of_ms(now_ms() + 2_000, LAYOUT.counter_bits) + 5;
            seq.raise_to(far);
            seq.raise_to(far - 100);
            let b = seq.bounds(&LAYOUT, 10_000);
            assert!(matches!(
                seq.try_reserve(&LAYOUT, 1, &b),
                Err(Miss::Refused(Refusal::LeaseNeeded { .. }))
            ));
            leased(&seq);
            let b = seq.bounds(&LAYOUT, 10_000);
            assert_eq!(seq.try_reserve(&LAYOUT, 1, &b).unwrap().first, far + 1);
        });
    }

    #[test]
    fn restore_takes_the_lease_and_never_goes_back() {
        with_seq(|seq| {
            seq.restore(Lease { era: 0, end: 500 });
            seq.restore(Lease { era: 0, end: 400 });
            assert_eq!(seq.lease(), Lease { era: 0, end: 500 });
            let cb = LAYOUT.counter_bits;
            assert_eq!(seq.stats().last_tick, (500 << cb) - 1);
            assert!(!seq.needs_lease_for((500 << cb) - 1));
            assert!(seq.needs_lease_for(500 << cb));
            seq.publish_lease(700);
            assert_eq!(seq.lease().end, 700);
            assert_eq!(seq.stats().lease_extensions, 1);
        });
    }

    fn bounds(max_ahead_ms: u64) -> Bounds {
        Bounds {
            counter_bits: 12,
            max_tick: (1 << (41 + 12)) - 1,
            lease_end: 0,
            max_ahead_ms,
        }
    }

    #[test]
    fn a_lease_reaches_one_window_past_the_clock_or_the_sequence() {
        let t = |ms: u64| clock::tick_of_ms(ms, 12);
        let b = bounds(10_000);
        // A sequence at the clock: one window ahead.
        assert_eq!(lease_target_ms(t(100), 100, &b, 0), 1101);
        // A sequence ahead of the clock: one window past the sequence, even at the
        // run-ahead bound, so that a sequence held there extends once a second, not once a
        // millisecond.
        assert_eq!(lease_target_ms(t(9_500), 0, &b, 0), 10_501);
        assert_eq!(lease_target_ms(t(10_000), 0, &b, 0), 11_001);
        // Below a second of run-ahead bound, the window is the bound.
        assert_eq!(lease_target_ms(t(100), 100, &bounds(100), 0), 201);
        assert_eq!(lease_window_ms(0), 1);
        // Never past the end of the layout, always covering `last`.
        let end_ms = (b.max_tick >> 12) + 1;
        assert_eq!(lease_target_ms(b.max_tick, end_ms - 1, &b, 0), end_ms);
    }

    /// A sequence held at the run-ahead bound by a burst (the clock advancing one millisecond
    /// per millisecond, the sequence pinned at the bound) extends its lease once per window.
    #[test]
    fn a_sequence_held_at_the_bound_extends_about_once_a_window() {
        for max_ahead in [100u64, 1_000, 10_000, 60_000] {
            let b = bounds(max_ahead);
            let mut lease_end_ms = 0u64;
            let mut extensions = 0;
            let seconds = 10;
            for now in 0..seconds * 1_000 {
                let last = t12(now + max_ahead); // pinned at the bound
                if last >> 12 >= lease_end_ms {
                    lease_end_ms = lease_target_ms(last, now, &b, 0);
                    extensions += 1;
                }
            }
            let per_window = seconds * 1_000 / lease_window_ms(max_ahead);
            assert!(
                extensions <= per_window + 1,
                "max_ahead {max_ahead}: {extensions} extensions"
            );
        }
    }

    /// A sequence that enters the cache again and again (evicted by a busy cache between two
    /// uses, each entry continuing above the lease its relation holds) stays within a few
    /// milliseconds of the clock instead of moving a window ahead per entry.
    #[test]
    fn entering_the_cache_again_does_not_run_ahead() {
        let b = bounds(10_000);
        let mut durable_ms = 0u64; // the relation's lease
        let mut entries_per_ms = 0;
        for now in (1_000u64..3_000).step_by(2) {
            // Two entries every 2 ms: each restores the relation's lease, takes one tick
            // past it, and extends the lease to cover it.
            for _ in 0..2 {
                let restored = durable_ms;
                let last = t12(restored.max(now)); // the first tick past the lease
                durable_ms = lease_target_ms(last, now, &b, restored);
                assert!(
                    durable_ms > last >> 12,
                    "the lease covers what was handed out"
                );
                entries_per_ms += 1;
            }
            assert!(
                durable_ms <= now + lease_window_ms(10_000) + 2,
                "at {now} ms the lease reached {durable_ms}"
            );
        }
        assert_eq!(entries_per_ms, 2_000);
        // And without the rule (the window counted from the sequence after each entry), the
        // same entries would have run the lease ahead by far more than the bound.
        let mut runaway_ms = 0u64;
        for now in (1_000u64..3_000).step_by(2) {
            for _ in 0..2 {
                runaway_ms = lease_target_ms(t12(runaway_ms.max(now)), now, &b, 0);
            }
        }
        assert!(runaway_ms > 3_000 + b.max_ahead_ms);
    }

    /// Every extension reads the relation back and restores what it finds, usually the
    /// entry's own last lease: that is no entry into the cache, and a burst keeps extending
    /// once per window.
    #[test]
    fn reading_back_its_own_lease_is_not_an_entry() {
        with_seq(|seq| {
            let layout = seq.layout();
            let b = seq.bounds(&layout, 1_000);
            seq.restore(Lease { era: 0, end: 500 });
            assert_eq!(seq.state().restored_end_ms.load(Ordering::Relaxed), 500);
            seq.publish_lease(2_000);
            seq.restore(Lease { era: 0, end: 2_000 });
            assert_eq!(
                seq.state().restored_end_ms.load(Ordering::Relaxed),
                500,
                "its own lease read back"
            );
            // Held at the bound (1 s ahead of the clock at 1,000): a window past the sequence.
            let last = t12(2_000);
            assert_eq!(seq.lease_target_ms(last, 1_000, &b), 2_001 + 1_000);
        });
    }

    fn t12(ms: u64) -> u64 {
        clock::tick_of_ms(ms, 12)
    }
}
