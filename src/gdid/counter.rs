//! The gdid generator step: counters of one (scope, sequence) handed out lock-free.
//!
//! PURE: no pgrx here; the tests run it from several threads.
//!
//! The state is three words of a `SequenceState`:
//! - `tick`, the counter word: `generation << 60 | last counter handed out`;
//! - `era`, the era those counters belong to;
//! - `lease_end`, the first counter of `era` the durable lease does not cover.
//!
//! A caller reads the word, then `era` and `lease_end`, and claims counters with one CAS on
//! the word. The lease only grows within an era, so a stale `lease_end` at worst sends a
//! caller to the slow path. The era changes only in [`advance_era`], under the lease lock,
//! and only after the word has been *closed* (its counter set to the maximum, which no claim
//! can pass) and with a new generation: a caller that saw the new era therefore finds its
//! CAS failing, and a caller whose CAS succeeded read the era its counters belong to.

use std::sync::atomic::Ordering;

use crate::registry::SequenceState;

/// Counters are 60 bits.
pub const MAX_COUNTER: u64 = (1 << 60) - 1;
const GENERATION_SHIFT: u32 = 60;

/// Lease blocks: the first one, and the most a block grows to under sustained load.
pub const MIN_BLOCK: u64 = 1 << 10;
pub const MAX_BLOCK: u64 = 1 << 20;

/// Counters `first ..= first + n - 1` of `era`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    pub era: u32,
    pub first: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Extend the lease of the current era past counter `last`.
    Lease { era: u32, last: u64 },
    /// The era's counters are used up (or an era change is under way).
    NextEra { era: u32 },
}

fn counter_of(word: u64) -> u64 {
    word & MAX_COUNTER
}

/// Claims `n >= 1` consecutive counters if the lease covers them.
pub fn try_take(state: &SequenceState, n: u64) -> Result<Taken, Need> {
    debug_assert!(n >= 1);
    let mut word = state.tick.load(Ordering::Acquire);
    loop {
        let era = state.era.load(Ordering::Acquire);
        let lease_end = state.lease_end.load(Ordering::Acquire);
        let last = counter_of(word);
        let new_last = match last.checked_add(n) {
            Some(l) if l <= MAX_COUNTER => l,
            _ => return Err(Need::NextEra { era }),
        };
        if new_last >= lease_end {
            return Err(Need::Lease {
                era,
                last: new_last,
            });
        }
        let claimed = word & !MAX_COUNTER | new_last;
        match state
            .tick
            .compare_exchange_weak(word, claimed, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                state.issued.fetch_add(n, Ordering::Relaxed);
                return Ok(Taken {
                    era,
                    first: last + 1,
                });
            }
            Err(current) => word = current,
        }
    }
}

/// Extends the lease of the current era to `end` (exclusive). Under the lease lock, after
/// the lease is durable.
pub fn extend(state: &SequenceState, end: u64) {
    state.lease_end.fetch_max(end, Ordering::AcqRel);
}

/// Moves the sequence to `era`, its next counter `last + 1`, with a lease up to
/// `lease_end`. Under the lease lock, after the new lease is durable.
pub fn advance_era(state: &SequenceState, era: u32, last: u64, lease_end: u64) {
    // Close the word: from now on no claim can succeed in the old era.
    let old = state.tick.fetch_or(MAX_COUNTER, Ordering::AcqRel);
    state.era.store(era, Ordering::Release);
    state.lease_end.store(lease_end, Ordering::Release);
    let generation = ((old >> GENERATION_SHIFT) + 1) & 0xF;
    state
        .tick
        .store(generation << GENERATION_SHIFT | last, Ordering::Release);
}

/// Moves the next counter of the current era past `last` (no-op if it is already). Under
/// the lease lock, with the lease already covering `last`.
pub fn raise_to(state: &SequenceState, last: u64) {
    let mut word = state.tick.load(Ordering::Acquire);
    while counter_of(word) < last {
        match state.tick.compare_exchange_weak(
            word,
            word & !MAX_COUNTER | last,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => return,
            Err(current) => word = current,
        }
    }
}

/// The last counter handed out in the current era.
pub fn last(state: &SequenceState) -> u64 {
    counter_of(state.tick.load(Ordering::Acquire))
}

/// The durable position of the sequence: `(era, first counter not covered)`.
pub fn lease(state: &SequenceState) -> (u32, u64) {
    (
        state.era.load(Ordering::Acquire),
        state.lease_end.load(Ordering::Acquire),
    )
}

/// Sets the state from a durable lease (start-up, or WAL replay), if it is ahead of what
/// the state has. Nothing is generating meanwhile: the server is starting, or in recovery.
pub fn restore(state: &SequenceState, era: u32, end: u64) {
    if (era, end) > lease(state) {
        state.era.store(era, Ordering::Release);
        state.lease_end.store(end, Ordering::Release);
        state.tick.store(end.saturating_sub(1), Ordering::Release);
    }
}

/// Counters the next lease block covers: doubled while extensions come within a second of
/// each other, halved once they are ten seconds apart, so that a busy sequence touches the
/// disk rarely and a quiet one loses few counters in a crash.
pub fn next_block(previous: u64, since_last_ms: i64) -> u64 {
    match previous {
        0 => MIN_BLOCK,
        p if since_last_ms < 1_000 => (p * 2).min(MAX_BLOCK),
        p if since_last_ms > 10_000 => (p / 2).max(MIN_BLOCK),
        p => p,
    }
}

/// The lease end that covers counter `last` and a block beyond it, within the era.
pub fn lease_end_for(last: u64, block: u64) -> u64 {
    last.saturating_add(block).min(MAX_COUNTER + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn counters_start_at_one_and_stop_at_the_lease() {
        let s = SequenceState::default();
        assert_eq!(try_take(&s, 1), Err(Need::Lease { era: 0, last: 1 }));
        extend(&s, lease_end_for(1, 10));
        assert_eq!(try_take(&s, 1), Ok(Taken { era: 0, first: 1 }));
        assert_eq!(try_take(&s, 9), Ok(Taken { era: 0, first: 2 }));
        assert_eq!(try_take(&s, 1), Err(Need::Lease { era: 0, last: 11 }));
    }

    #[test]
    fn the_era_advances_when_counters_run_out() {
        let s = SequenceState::default();
        restore(&s, 7, MAX_COUNTER - 1);
        extend(&s, MAX_COUNTER + 1);
        assert_eq!(
            try_take(&s, 1),
            Ok(Taken {
                era: 7,
                first: MAX_COUNTER - 1
            })
        );
        assert_eq!(try_take(&s, 2), Err(Need::NextEra { era: 7 }));
        assert_eq!(
            try_take(&s, 1),
            Ok(Taken {
                era: 7,
                first: MAX_COUNTER
            })
        );
        advance_era(&s, 8, 0, 100);
        assert_eq!(try_take(&s, 1), Ok(Taken { era: 8, first: 1 }));
        assert_eq!(lease(&s), (8, 100));
        raise_to(&s, 50);
        raise_to(&s, 20);
        assert_eq!(try_take(&s, 1), Ok(Taken { era: 8, first: 51 }));
        advance_era(&s, 10, 70, 100);
        assert_eq!(try_take(&s, 1), Ok(Taken { era: 10, first: 71 }));
    }

    #[test]
    fn restore_only_moves_forward() {
        let s = SequenceState::default();
        restore(&s, 1, 500);
        restore(&s, 1, 400);
        restore(&s, 0, 9_000);
        assert_eq!(lease(&s), (1, 500));
        extend(&s, 600);
        assert_eq!(try_take(&s, 1), Ok(Taken { era: 1, first: 500 }));
    }

    #[test]
    fn blocks_grow_under_load_and_shrink_when_quiet() {
        assert_eq!(next_block(0, 0), MIN_BLOCK);
        assert_eq!(next_block(MIN_BLOCK, 10), 2 * MIN_BLOCK);
        assert_eq!(next_block(MAX_BLOCK, 10), MAX_BLOCK);
        assert_eq!(next_block(4 * MIN_BLOCK, 5_000), 4 * MIN_BLOCK);
        assert_eq!(next_block(4 * MIN_BLOCK, 60_000), 2 * MIN_BLOCK);
        assert_eq!(next_block(MIN_BLOCK, 60_000), MIN_BLOCK);
        assert_eq!(lease_end_for(MAX_COUNTER - 3, 10), MAX_COUNTER + 1);
    }

    /// Eight threads take counters while a ninth extends the lease and moves the era on,
    /// as the slow path does under the lease lock: no (era, counter) is taken twice.
    #[test]
    fn concurrent_takes_never_repeat_across_extensions_and_eras() {
        let s = SequenceState::default();
        extend(&s, 1_000);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let taken: Vec<Vec<(u32, u64)>> = std::thread::scope(|sc| {
            let (s, stop) = (&s, &stop);
            sc.spawn(move || {
                let mut era = 0;
                for round in 0..2_000u64 {
                    if round % 100 == 99 {
                        era += 1;
                        advance_era(s, era, 0, 1_000);
                    } else {
                        extend(s, lease(s).1 + 500);
                    }
                    std::thread::yield_now();
                }
                stop.store(true, Ordering::Relaxed);
            });
            let handles: Vec<_> = (0..8)
                .map(|t| {
                    sc.spawn(move || {
                        let mut mine = Vec::new();
                        while !stop.load(Ordering::Relaxed) && mine.len() < 200_000 {
                            let n = 1 + (t % 3);
                            if let Ok(tk) = try_take(s, n) {
                                mine.extend((0..n).map(|i| (tk.era, tk.first + i)));
                            }
                        }
                        mine
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let all: Vec<_> = taken.into_iter().flatten().collect();
        let distinct: HashSet<_> = all.iter().collect();
        assert_eq!(distinct.len(), all.len());
        assert!(all.iter().all(|&(_, c)| c >= 1));
    }
}
