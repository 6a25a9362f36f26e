//! The gdid generator step: counters of one (scope, sequence) handed out lock-free.
//!
//! PURE: no pgrx here; the tests run it from several threads.
//!
//! The state is three words of a [`GdidState`]:
//! - `word`, the counter word: `generation << 60 | last counter handed out`;
//! - `era`, the era those counters belong to;
//! - `lease_end`, the first counter of `era` the durable lease does not cover.
//!
//! A caller reads the word, then `era` and `lease_end`, and claims counters with one CAS on
//! the word. The lease only grows within an era, so a stale `lease_end` at worst sends a
//! caller to the slow path. The era changes only in [`GdidState::advance_era`], under the
//! lease lock, and only after the word has been *closed* (its counter set to the maximum,
//! which no claim can pass) and with a new generation: a caller that saw the new era
//! therefore finds its CAS failing, and a caller whose CAS succeeded read the era its
//! counters belong to.

use crate::core::sync::{AtomicI64, AtomicU32, AtomicU64, Ordering};

use crate::core::cache::SlotState;
use crate::core::gdid::value::MAX_COUNTER;
use crate::core::identity::Kind;

const GENERATION_SHIFT: u32 = 60;

/// The state words of a gdid sequence.
#[repr(C)]
#[derive(Default)]
pub struct GdidState {
    word: AtomicU64,
    lease_end: AtomicU64,
    era: AtomicU32,
    /// gdids handed out since the server started.
    issued: AtomicU64,
    /// Lease extensions since the server started.
    lease_extensions: AtomicU64,
    /// Wall-clock time (Unix ms) of the last lease extension; sizes the next block.
    last_extension_ms: AtomicI64,
    /// Counters the last lease extension covered.
    block: AtomicU64,
}

// SAFETY: repr(C), atomics only (56 bytes, align 8), valid when zeroed.
unsafe impl SlotState for GdidState {
    const KIND: Kind = Kind::Gdid;
}

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
    /// The era's counters looked used up (or an era change was under way).
    NextEra { era: u32 },
}

fn counter_of(word: u64) -> u64 {
    word & MAX_COUNTER
}

impl GdidState {
    /// Claims `n >= 1` consecutive counters if the lease covers them.
    #[inline]
    pub fn try_take(&self, n: u64) -> Result<Taken, Need> {
        debug_assert!(n >= 1);
        // The word with acquire (and the CAS's failure load): the era and lease read after it
        // are at least those stored before it (relaxed, loom_models::gdid fails).
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let era = self.era.load(Ordering::Acquire);
            let lease_end = self.lease_end.load(Ordering::Acquire);
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
            match self.word.compare_exchange_weak(
                word,
                claimed,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    self.issued.fetch_add(n, Ordering::Relaxed);
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
    pub fn extend(&self, end: u64) {
        self.lease_end.fetch_max(end, Ordering::AcqRel);
    }

    /// Moves the sequence to `era`, its next counter `last + 1`, with a lease up to
    /// `lease_end`. Under the lease lock, after the new lease is durable.
    pub fn advance_era(&self, era: u32, last: u64, lease_end: u64) {
        // Close the word: from now on no claim can succeed in the old era. The era and the
        // lease are stored before the new word (release): a claim that succeeds on the new
        // word acquired it and reads them (the new word stored relaxed, loom_models::gdid
        // takes a counter outside its era's lease).
        let old = self.word.fetch_or(MAX_COUNTER, Ordering::AcqRel);
        self.era.store(era, Ordering::Release);
        self.lease_end.store(lease_end, Ordering::Release);
        let generation = ((old >> GENERATION_SHIFT) + 1) & 0xF;
        self.word
            .store(generation << GENERATION_SHIFT | last, Ordering::Release);
    }

    /// Moves the next counter of the current era past `last` (no-op if it is already). Under
    /// the lease lock, with the lease already covering `last`.
    pub fn raise_to(&self, last: u64) {
        let mut word = self.word.load(Ordering::Acquire);
        while counter_of(word) < last {
            match self.word.compare_exchange_weak(
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
    pub fn last(&self) -> u64 {
        counter_of(self.word.load(Ordering::Acquire))
    }

    /// The lowest `(era, counter)` a claim from now on can take: the era, the word, then the
    /// era again. Should the era move on between the first two, every later claim is of a
    /// later era; between the last two, the word may count in the next era (see below).
    pub fn floor(&self) -> (u32, u64) {
        // SeqCst loads: acquire would do (the watermark fences after), and costs the same.
        // A word read while the era moved on may be the next era's, counting from its start:
        // read the era again, and again while it moves (under the lease lock, rarely).
        // A closed word (see `advance_era`) may already sit under the next era, which starts
        // lower: read until the word is open (or the era's counters are used up for good).
        let mut era = self.era.load(Ordering::SeqCst);
        for _ in 0..1_000 {
            let last = counter_of(self.word.load(Ordering::SeqCst));
            let again = self.era.load(Ordering::SeqCst);
            if again == era && last < MAX_COUNTER {
                return (era, last + 1);
            }
            era = again;
            crate::core::sync::model_yield();
        }
        // Still moving, or used up: the start of the era, below anything a claim takes from
        // now on.
        (era, 0)
    }

    /// The durable position of the sequence: `(era, first counter not covered)`.
    pub fn lease(&self) -> (u32, u64) {
        (
            self.era.load(Ordering::Acquire),
            self.lease_end.load(Ordering::Acquire),
        )
    }

    /// Sets the state from the durable lease its relation holds, if it is ahead of what the
    /// state has (a new cache entry; a lease another entry of the sequence, since evicted, or
    /// a `setval` made). Under the extension lock, which every change of the era takes too.
    ///
    /// Other backends may be claiming counters meanwhile: a later era is entered as
    /// [`GdidState::advance_era`] enters one (the word closed first, so that no claim of the
    /// old era can succeed after it), and within the era the counter is raised before the
    /// lease grows, so that no claim between the two takes a counter below the new lease.
    pub fn restore(&self, era: u32, end: u64) {
        let (cur_era, cur_end) = self.lease();
        let last = end.saturating_sub(1);
        if era > cur_era {
            self.advance_era(era, last, end);
        } else if era == cur_era && end > cur_end {
            self.raise_to(last);
            self.extend(end);
        }
    }

    /// Records an extension that covered `block` counters, made at `now_unix_ms`.
    pub fn note_extension(&self, block: u64, now_unix_ms: i64) {
        self.block.store(block, Ordering::Relaxed);
        self.last_extension_ms.store(now_unix_ms, Ordering::Relaxed);
        self.lease_extensions.fetch_add(1, Ordering::Relaxed);
    }

    /// The block the last extension covered, and when it was made (Unix ms).
    pub fn last_extension(&self) -> (u64, i64) {
        (
            self.block.load(Ordering::Relaxed),
            self.last_extension_ms.load(Ordering::Relaxed),
        )
    }

    pub fn issued(&self) -> u64 {
        self.issued.load(Ordering::Relaxed)
    }

    pub fn lease_extensions(&self) -> u64 {
        self.lease_extensions.load(Ordering::Relaxed)
    }
}

#[cfg(not(loom))] // with std atomics, outside the model checker
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn counters_start_at_one_and_stop_at_the_lease() {
        let s = GdidState::default();
        assert_eq!(s.try_take(1), Err(Need::Lease { era: 0, last: 1 }));
        s.extend(11);
        assert_eq!(s.try_take(1), Ok(Taken { era: 0, first: 1 }));
        assert_eq!(s.try_take(9), Ok(Taken { era: 0, first: 2 }));
        assert_eq!(s.try_take(1), Err(Need::Lease { era: 0, last: 11 }));
        assert_eq!(s.issued(), 10);
    }

    #[test]
    fn the_era_advances_when_counters_run_out() {
        let s = GdidState::default();
        s.restore(7, MAX_COUNTER - 1);
        s.extend(MAX_COUNTER + 1);
        assert_eq!(
            s.try_take(1),
            Ok(Taken {
                era: 7,
                first: MAX_COUNTER - 1
            })
        );
        assert_eq!(s.try_take(2), Err(Need::NextEra { era: 7 }));
        assert_eq!(
            s.try_take(1),
            Ok(Taken {
                era: 7,
                first: MAX_COUNTER
            })
        );
        s.advance_era(8, 0, 100);
        assert_eq!(s.try_take(1), Ok(Taken { era: 8, first: 1 }));
        assert_eq!(s.lease(), (8, 100));
        s.raise_to(50);
        s.raise_to(20);
        assert_eq!(s.try_take(1), Ok(Taken { era: 8, first: 51 }));
        s.advance_era(10, 70, 100);
        assert_eq!(s.try_take(1), Ok(Taken { era: 10, first: 71 }));
    }

    #[test]
    fn restore_only_moves_forward() {
        let s = GdidState::default();
        s.restore(1, 500);
        s.restore(1, 400);
        s.restore(0, 9_000);
        assert_eq!(s.lease(), (1, 500));
        s.extend(600);
        assert_eq!(s.try_take(1), Ok(Taken { era: 1, first: 500 }));
    }

    /// While the era moves on, the word is closed under the next era before it opens at that
    /// era's first counters: the floor must not read the closed word as the new era's.
    #[test]
    fn floor_waits_for_the_word_of_a_new_era() {
        let s = GdidState::default();
        s.extend(1_000);
        for _ in 0..10 {
            s.try_take(1).unwrap();
        }
        assert_eq!(s.floor(), (0, 11));
        // advance_era, halfway: closed, then the new era stored.
        s.word.fetch_or(MAX_COUNTER, Ordering::AcqRel);
        s.era.store(1, Ordering::Release);
        assert_eq!(s.floor(), (1, 0));
        s.advance_era(1, 5, 1_000);
        assert_eq!(s.floor(), (1, 6));
        assert_eq!(s.try_take(1).unwrap(), Taken { era: 1, first: 6 });
    }

    /// Eight threads take counters while a ninth extends the lease and moves the era on,
    /// as the slow path does under the lease lock: no (era, counter) is taken twice.
    #[test]
    fn concurrent_takes_never_repeat_across_extensions_and_eras() {
        let s = GdidState::default();
        s.extend(1_000);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let taken: Vec<Vec<(u32, u64)>> = std::thread::scope(|sc| {
            let (s, stop) = (&s, &stop);
            sc.spawn(move || {
                let mut era = 0;
                for round in 0..2_000u64 {
                    if round % 100 == 99 {
                        era += 1;
                        s.advance_era(era, 0, 1_000);
                    } else {
                        s.extend(s.lease().1 + 500);
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
                            if let Ok(tk) = s.try_take(n) {
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
