//! One attempt at reserving ticks of a sequence: read the clock, CAS, count.
//!
//! No pgrx here: it never raises an error and never waits, so both entry points use it, the
//! unguarded fast one and the guarded one that waits and raises (`sql.rs`).

use std::sync::atomic::{AtomicI64, Ordering};

use super::clock::{self, Bounds, Refusal, Reservation};
use super::layout::Layout;
use super::wallclock;
use crate::registry::SequenceState;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// The wall clock is before the layout's epoch or past its last millisecond.
    ClockOutsideLayout {
        unix_ms: i64,
    },
    Refused(Refusal),
}

/// The bounds of a reservation from `state` now. The lease only grows while the server
/// runs, so a lease end read before the CAS never overstates what is durable.
pub fn bounds(layout: &Layout, max_ahead_ms: u64, state: &SequenceState) -> Bounds {
    Bounds {
        counter_bits: layout.counter_bits,
        max_tick: layout.max_tick(),
        lease_end: state.lease_end.load(Ordering::Acquire),
        max_ahead_ms,
    }
}

/// The last coarse wall-clock reading of this process, to notice the clock stepping back.
/// Process-local: each backend compares only its own readings, so there are no races.
static LAST_WALL_MS: AtomicI64 = AtomicI64::new(i64::MIN);

/// Reserves `n >= 1` ticks of `state` if the bounds allow it now.
pub fn try_reserve(
    layout: &Layout,
    state: &SequenceState,
    n: u64,
    bounds: &Bounds,
) -> Result<Reservation, Miss> {
    let cb = layout.counter_bits;
    let coarse = wallclock::coarse_unix_ms();
    if coarse < LAST_WALL_MS.load(Ordering::Relaxed) {
        state.clock_regressions.fetch_add(1, Ordering::Relaxed);
    }
    LAST_WALL_MS.store(coarse, Ordering::Relaxed);
    let since_epoch = |unix_ms| {
        layout
            .ms_since_epoch(unix_ms)
            .map_err(|_| Miss::ClockOutsideLayout { unix_ms })
    };

    let coarse_ms = since_epoch(coarse)?;
    let last = state.tick.load(Ordering::Relaxed);
    let by_coarse = clock::coarse_clock_suffices(last, coarse_ms, wallclock::COARSE_MARGIN_MS, cb)
        .then(|| clock::reserve(&state.tick, clock::tick_of_ms(coarse_ms, cb), n, bounds));
    let r = match by_coarse {
        Some(Ok(r)) => r,
        // Not decided by the coarse clock, or refused by it: the coarse reading understates
        // the time, so it overstates how far ahead the sequence is. Ask the precise clock.
        _ => {
            let now_ms = since_epoch(wallclock::precise_unix_ms())?;
            clock::reserve(&state.tick, clock::tick_of_ms(now_ms, cb), n, bounds)
                .map_err(Miss::Refused)?
        }
    };
    state.issued.fetch_add(n, Ordering::Relaxed);
    if r.borrowed {
        state.borrowed.fetch_add(1, Ordering::Relaxed);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snowflake::epoch::DEFAULT_EPOCH_MS;

    const LAYOUT: Layout = Layout::own(10, DEFAULT_EPOCH_MS);

    /// A state whose lease reaches the end of time: these tests are about the clock.
    fn leased() -> SequenceState {
        let s = SequenceState::default();
        s.lease_end.store(u64::MAX, Ordering::Relaxed);
        s
    }

    #[test]
    fn nothing_is_handed_out_past_the_lease() {
        let state = SequenceState::default();
        let b = bounds(&LAYOUT, 10_000, &state);
        assert!(matches!(
            try_reserve(&LAYOUT, &state, 1, &b),
            Err(Miss::Refused(Refusal::LeaseNeeded { .. }))
        ));
        assert_eq!(state.tick.load(Ordering::Relaxed), 0);
    }

    fn now_ms() -> u64 {
        LAYOUT.ms_since_epoch(wallclock::precise_unix_ms()).unwrap()
    }

    #[test]
    fn reservations_follow_the_wall_clock_and_count() {
        let (layout, state) = (LAYOUT, leased());
        let b = bounds(&LAYOUT, 10_000, &state);
        let before = now_ms();
        let a = try_reserve(&layout, &state, 1, &b).unwrap();
        let z = try_reserve(&layout, &state, 5, &b).unwrap();
        let after = now_ms();
        assert!((before..=after).contains(&(a.first >> layout.counter_bits)));
        assert!(z.first > a.last);
        assert_eq!(state.issued.load(Ordering::Relaxed), 6);
    }

    #[test]
    fn a_sequence_far_ahead_continues_from_its_last_tick() {
        let (layout, state) = (LAYOUT, leased());
        let b = bounds(&LAYOUT, 10_000, &state);
        let now = now_ms();
        let ahead = clock::tick_of_ms(now + 5_000, layout.counter_bits) + 17;
        state.tick.store(ahead, Ordering::Relaxed);
        assert_eq!(
            try_reserve(&layout, &state, 1, &b).unwrap().first,
            ahead + 1
        );
        // ...but not past the bound:
        let tight = bounds(&layout, 1_000, &state);
        assert!(matches!(
            try_reserve(&layout, &state, 1, &tight),
            Err(Miss::Refused(Refusal::AheadOfClock { .. }))
        ));
        assert_eq!(state.issued.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_clock_outside_the_layout_is_a_miss() {
        let future_epoch = Layout::own(10, wallclock::precise_unix_ms() + 86_400_000);
        let b = bounds(&future_epoch, 10_000, &leased());
        assert!(matches!(
            try_reserve(&future_epoch, &leased(), 1, &b),
            Err(Miss::ClockOutsideLayout { .. })
        ));
    }
}
