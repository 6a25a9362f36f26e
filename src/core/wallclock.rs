//! Reading the wall clock in Unix milliseconds, precisely or cheaply and coarsely: the clock
//! of both generators, of leases and of detection.
//!
//! PURE: no pgrx here (libc's clock_gettime). Measured on the development VM: `SystemTime::now()` 38 ns,
//! `clock_gettime(CLOCK_REALTIME)` 26 ns, `CLOCK_REALTIME_COARSE` 6 ns. The coarse clock has a
//! 4 ms resolution, but on a busy VM its ticks arrive late: over 8 s of readings with both
//! cores loaded it lagged the precise clock by up to 5 ms nearly always, and by 9 to 13 ms a
//! few hundred times. Hence the generous margin below.

/// How far the coarse clock is assumed to lag, at most, when deciding that it is enough
/// (`clock::coarse_clock_suffices`). Should it ever lag more (a paused VM), IDs stay unique
/// and ordered; only their timestamps fall behind real time by the excess.
pub const COARSE_MARGIN_MS: u64 = 50;

#[inline(always)]
fn read(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer; it cannot fail for
    // these two clocks on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

#[cfg(not(loom))]
#[inline]
pub fn precise_unix_ms() -> i64 {
    read(libc::CLOCK_REALTIME)
}

/// The time of the kernel's last timer tick: never ahead of [`precise_unix_ms`].
#[cfg(not(loom))]
#[inline]
pub fn coarse_unix_ms() -> i64 {
    read(libc::CLOCK_REALTIME_COARSE)
}

/// Under loom, each model thread reads a wall clock of its own that the model sets
/// ([`model::set`]): a backend whose clock stepped back is a thread whose clock is behind.
#[cfg(loom)]
pub fn precise_unix_ms() -> i64 {
    model::NOW.with(|n| n.get().1)
}

#[cfg(loom)]
pub fn coarse_unix_ms() -> i64 {
    model::NOW.with(|n| n.get().0)
}

#[cfg(loom)]
pub mod model {
    use std::cell::Cell;

    loom::thread_local! {
        /// (coarse, precise) Unix ms.
        pub(super) static NOW: Cell<(i64, i64)> = Cell::new((0, 0));
    }

    /// This model thread's wall clock from now on: the coarse reading never ahead of the
    /// precise one.
    pub fn set(coarse_unix_ms: i64, precise_unix_ms: i64) {
        assert!(coarse_unix_ms <= precise_unix_ms);
        NOW.with(|n| n.set((coarse_unix_ms, precise_unix_ms)));
    }
}

/// Milliseconds of the monotonic clock (since boot, never stepped, counting while the
/// process is stopped): how long a claim of a node number has been held.
pub fn monotonic_ms() -> i64 {
    read(libc::CLOCK_MONOTONIC)
}

/// The monotonic clock at the kernel's last timer tick: never ahead of [`monotonic_ms`], and
/// behind it by about as much as [`coarse_unix_ms`] is behind the precise wall clock.
pub fn monotonic_coarse_ms() -> i64 {
    read(libc::CLOCK_MONOTONIC_COARSE)
}

#[cfg(not(loom))] // the real clocks, outside the model checker
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_is_never_ahead_of_precise() {
        for _ in 0..100_000 {
            let coarse = coarse_unix_ms();
            let precise = precise_unix_ms();
            assert!(
                coarse <= precise,
                "coarse {coarse} ahead of precise {precise}"
            );
            let coarse = monotonic_coarse_ms();
            let precise = monotonic_ms();
            assert!(
                coarse <= precise,
                "monotonic coarse {coarse} ahead of {precise}"
            );
        }
    }
}
