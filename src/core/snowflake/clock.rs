//! The generator step: one u64 *tick* per sequence, advanced by compare-and-swap.
//!
//! PURE: no pgrx here. The state lives in shared memory in production and in a plain
//! `AtomicU64` in the tests; both are the same machine word.
//!
//! A tick is `ms << counter_bits | counter`. The next reservation of `n` IDs starts at
//! `max(last + 1, now_tick)`: a counter that runs out carries into the next millisecond by
//! itself (the logical clock runs ahead of the wall clock), a wall clock that steps back is
//! simply outrun, and a batch is the same single CAS as one ID.

use crate::core::sync::{AtomicU64, Ordering};

/// What a reservation must stay within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub counter_bits: u32,
    /// The last tick the layout can express.
    pub max_tick: u64,
    /// The first tick the durable lease does not cover yet (see `durable`): no tick at or
    /// past it may reach a caller before the lease is extended.
    pub lease_end: u64,
    /// How far, in milliseconds, the logical clock may run ahead of the wall clock.
    pub max_ahead_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The reservation would end `ahead_ms` milliseconds past the wall clock, more than
    /// `Bounds::max_ahead_ms` allows. Waiting for the clock helps.
    AheadOfClock { ahead_ms: u64 },
    /// The reservation alone spans more milliseconds than `Bounds::max_ahead_ms`: it would be
    /// too far ahead even if it started at the wall clock, so waiting cannot help.
    BatchTooLarge { span_ms: u64 },
    /// The reservation would pass `Bounds::max_tick`.
    PastLastTick,
    /// The reservation is allowed but reaches `Bounds::lease_end`: extend the lease to cover
    /// tick `last` and try again.
    LeaseNeeded { last: u64 },
}

/// A granted reservation: ticks `first ..= first + n - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    pub first: u64,
    pub last: u64,
    /// The counter of a millisecond ran out and the reservation borrowed a later millisecond
    /// than both the wall clock and the previous tick had reached.
    pub counter_exhausted: bool,
}

/// Where a reservation of `n >= 1` ticks goes, given the last issued tick.
#[inline]
pub fn plan(last: u64, now_tick: u64, n: u64, b: &Bounds) -> Result<Reservation, Refusal> {
    debug_assert!(n >= 1);
    let first = last.saturating_add(1).max(now_tick);
    let end = first
        .checked_add(n - 1)
        .filter(|&end| end <= b.max_tick)
        .ok_or(Refusal::PastLastTick)?;
    let now_ms = now_tick >> b.counter_bits;
    let end_ms = end >> b.counter_bits;
    let ahead_ms = end_ms.saturating_sub(now_ms);
    if ahead_ms > b.max_ahead_ms {
        // Started at a fresh millisecond, the reservation would end this far ahead.
        let span_ms = (n - 1) >> b.counter_bits;
        return Err(if span_ms > b.max_ahead_ms {
            Refusal::BatchTooLarge { span_ms }
        } else {
            Refusal::AheadOfClock { ahead_ms }
        });
    }
    if end >= b.lease_end {
        return Err(Refusal::LeaseNeeded { last: end });
    }
    Ok(Reservation {
        first,
        last: end,
        counter_exhausted: end_ms > now_ms.max(last >> b.counter_bits),
    })
}

/// Reserves `n >= 1` consecutive ticks from `state`, lock-free. Every tick is handed out at
/// most once, whatever the number of callers, and each reservation lies above every earlier
/// one. Inlined: the generators' fast path is mostly this.
#[inline(always)]
pub fn reserve(
    state: &AtomicU64,
    now_tick: u64,
    n: u64,
    b: &Bounds,
) -> Result<Reservation, Refusal> {
    let mut last = state.load(Ordering::Relaxed);
    loop {
        let r = plan(last, now_tick, n, b)?;
        // Relaxed would do for uniqueness (one variable has one modification order: the
        // CAS reads the latest tick, loom_models::tick). Release publishes what the caller did
        // before the reservation (its transaction's entry in flight, see `core::inflight`) to
        // a reader that acquires the tick; the callers' SeqCst fences do that too today
        // (loom_models::inflight passes with Relaxed), kept so that the argument does not hang
        // on them. Free on x86 (lock cmpxchg either way).
        match state.compare_exchange_weak(last, r.last, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return Ok(r),
            Err(current) => last = current,
        }
    }
}

/// The tick of a wall-clock millisecond (since the layout's epoch) with counter 0.
#[inline]
pub fn tick_of_ms(ms: u64, counter_bits: u32) -> u64 {
    ms << counter_bits
}

/// Whether a coarse clock reading already decides the next tick, so the precise (and four
/// times dearer) clock need not be read. A coarse clock is never ahead of the precise one;
/// if it lags it by less than `margin_ms`, the true millisecond is below
/// `coarse_ms + margin_ms`. When the last tick is at or past that, `max(last + 1, now)` is
/// `last + 1` whatever the precise reading: the case of a sustained burst, where the counter,
/// not the clock, moves the sequence.
#[inline]
pub fn coarse_clock_suffices(last: u64, coarse_ms: u64, margin_ms: u64, counter_bits: u32) -> bool {
    last >> counter_bits >= coarse_ms.saturating_add(margin_ms)
}

/// How long to wait before retrying a refused reservation, or `None` when waiting cannot
/// help within `max_wait_ms` (the clock is too far behind, or the end of time is reached).
pub fn wait_before_retry(refusal: Refusal, b: &Bounds, max_wait_ms: u64) -> Option<u64> {
    match refusal {
        Refusal::AheadOfClock { ahead_ms } => {
            let excess = ahead_ms - b.max_ahead_ms;
            (excess <= max_wait_ms).then_some(excess)
        }
        Refusal::BatchTooLarge { .. } | Refusal::PastLastTick | Refusal::LeaseNeeded { .. } => None,
    }
}

#[cfg(not(loom))] // with std atomics, outside the model checker
#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testrng::Rng;
    use std::sync::Arc;

    const CB: u32 = 12;

    fn bounds(max_ahead_ms: u64) -> Bounds {
        Bounds {
            counter_bits: CB,
            max_tick: (1 << (41 + CB)) - 1,
            lease_end: u64::MAX,
            max_ahead_ms,
        }
    }

    #[test]
    fn the_lease_bounds_what_is_handed_out() {
        let b = Bounds {
            lease_end: tick_of_ms(10, CB),
            ..bounds(1000)
        };
        assert!(plan(0, tick_of_ms(9, CB), 1, &b).is_ok());
        let last_of_9 = tick_of_ms(10, CB) - 1;
        assert!(plan(0, last_of_9, 1, &b).is_ok());
        assert_eq!(
            plan(0, tick_of_ms(9, CB), (1 << CB) + 1, &b),
            Err(Refusal::LeaseNeeded {
                last: tick_of_ms(10, CB)
            })
        );
        // Refusals that waiting or a lease cannot cure come first.
        assert!(matches!(
            plan(0, tick_of_ms(9, CB), 1 << (CB + 11), &b),
            Err(Refusal::BatchTooLarge { .. })
        ));
    }

    #[test]
    fn fresh_millisecond_starts_at_counter_zero() {
        let b = bounds(1000);
        let r = plan(tick_of_ms(5, CB) + 7, tick_of_ms(9, CB), 1, &b).unwrap();
        assert_eq!(r.first, tick_of_ms(9, CB));
        assert!(!r.counter_exhausted);
    }

    #[test]
    fn counter_overflow_carries_into_next_millisecond() {
        let b = bounds(1000);
        let full = tick_of_ms(9, CB) + (1 << CB) - 1; // last counter of ms 9
        let r = plan(full, tick_of_ms(9, CB), 1, &b).unwrap();
        assert_eq!(r.first, tick_of_ms(10, CB));
        assert!(r.counter_exhausted);
        // a batch that crosses the millisecond boundary borrows as well
        let r = plan(tick_of_ms(9, CB), tick_of_ms(9, CB), 1 << CB, &b).unwrap();
        assert_eq!(r.last >> CB, 10);
        assert!(r.counter_exhausted);
    }

    #[test]
    fn clock_stepping_back_never_goes_below_last() {
        let b = bounds(60_000);
        let last = tick_of_ms(50_000, CB) + 3;
        let r = plan(last, tick_of_ms(20_000, CB), 1, &b).unwrap();
        assert_eq!(r.first, last + 1);
    }

    #[test]
    fn too_far_ahead_is_refused_with_the_distance() {
        let b = bounds(100);
        let last = tick_of_ms(1_000, CB);
        assert_eq!(
            plan(last, tick_of_ms(850, CB), 1, &b),
            Err(Refusal::AheadOfClock { ahead_ms: 150 })
        );
        assert_eq!(
            wait_before_retry(Refusal::AheadOfClock { ahead_ms: 150 }, &b, 100),
            Some(50)
        );
        assert_eq!(
            wait_before_retry(Refusal::AheadOfClock { ahead_ms: 250 }, &b, 100),
            None
        );
        // exactly at the bound is fine
        assert!(plan(last, tick_of_ms(901, CB), 1, &b).is_ok());
    }

    #[test]
    fn coarse_clock_suffices_only_when_no_precise_reading_could_matter() {
        let last = tick_of_ms(1_004, CB) + 9;
        assert!(coarse_clock_suffices(last, 1_000, 4, CB));
        assert!(!coarse_clock_suffices(last, 1_001, 4, CB));
        // Exhaustive over every precise reading the coarse one allows: when it says the
        // coarse reading suffices, the plan from the precise reading starts at last + 1.
        let b = bounds(u64::MAX / 2);
        for coarse in 990..1_010u64 {
            for precise in coarse..coarse + 4 {
                if coarse_clock_suffices(last, coarse, 4, CB) {
                    let r = plan(last, tick_of_ms(precise, CB), 1, &b).unwrap();
                    assert_eq!(r.first, last + 1);
                }
            }
        }
    }

    #[test]
    fn a_batch_wider_than_the_bound_is_refused_without_waiting() {
        let b = bounds(100);
        let n = 150 << CB; // 150 ms of counter
        let r = plan(0, tick_of_ms(1_000, CB), n, &b);
        assert_eq!(r, Err(Refusal::BatchTooLarge { span_ms: 149 }));
        assert_eq!(wait_before_retry(r.unwrap_err(), &b, 100), None);
        // exactly the bound fits
        assert!(plan(0, tick_of_ms(1_000, CB), 101 << CB, &b).is_ok());
    }

    #[test]
    fn end_of_time_is_refused() {
        let b = bounds(1000);
        assert_eq!(
            plan(b.max_tick, b.max_tick, 1, &b),
            Err(Refusal::PastLastTick)
        );
        assert_eq!(plan(b.max_tick - 1, 0, 2, &b), Err(Refusal::PastLastTick));
        assert_eq!(plan(u64::MAX - 1, 0, 5, &b), Err(Refusal::PastLastTick));
        assert_eq!(wait_before_retry(Refusal::PastLastTick, &b, 100), None);
    }

    #[test]
    fn random_steps_are_strictly_increasing_and_disjoint() {
        let mut rng = Rng::new(42);
        let b = bounds(5_000);
        let mut last = 0u64;
        let mut wall = 1_000_000u64;
        for _ in 0..200_000 {
            // the wall clock mostly ticks forward, sometimes jumps back up to 3 s
            match rng.below(10) {
                0 => wall = wall.saturating_sub(rng.below(3_000)),
                _ => wall += rng.below(3),
            }
            let span = if rng.below(20) == 0 { 10_000 } else { 3 };
            let n = 1 + rng.below(span);
            match plan(last, tick_of_ms(wall, CB), n, &b) {
                Ok(r) => {
                    assert!(r.first > last || (last == 0 && r.first >= 1));
                    assert_eq!(r.last - r.first + 1, n);
                    assert!(r.first >= tick_of_ms(wall, CB) || r.first == last + 1);
                    last = r.last;
                }
                Err(Refusal::AheadOfClock { ahead_ms }) => {
                    assert!(ahead_ms > b.max_ahead_ms);
                    wall += ahead_ms - b.max_ahead_ms; // as if we waited
                }
                Err(r) => unreachable!("{r:?}"),
            }
            assert!(last >> CB <= wall + b.max_ahead_ms);
        }
    }

    #[test]
    fn concurrent_reservations_never_overlap() {
        let state = Arc::new(AtomicU64::new(0));
        let b = bounds(u64::MAX / 2);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let state = Arc::clone(&state);
                std::thread::spawn(move || {
                    let mut rng = Rng::new(t);
                    let mut got = Vec::new();
                    for i in 0..20_000u64 {
                        let n = 1 + rng.below(4);
                        let r = reserve(&state, tick_of_ms(i / 100, CB), n, &b).unwrap();
                        got.push((r.first, r.last));
                    }
                    got
                })
            })
            .collect();
        let mut all: Vec<(u64, u64)> = Vec::new();
        for t in threads {
            let got = t.join().unwrap();
            assert!(
                got.windows(2).all(|w| w[0].1 < w[1].0),
                "per thread increasing"
            );
            all.extend(got);
        }
        all.sort_unstable();
        assert!(all.windows(2).all(|w| w[0].1 < w[1].0), "no overlap");
    }
}
