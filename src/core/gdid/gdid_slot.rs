//! One gdid sequence: a cache slot known to hold one, its counters (see `counter`), and
//! the arithmetic of its lease: how big the next block is, whether an extension or a new era
//! is still needed once the lease lock is held, how `gdid_advance` moves it on, and restoring
//! a durable lease.
//!
//! PURE: no pgrx here.

use crate::core::cache::Seq;
use crate::core::gdid::counter::{GdidState, Need, Taken};
use crate::core::gdid::value::MAX_COUNTER;
use crate::core::lease::Lease;

/// Lease blocks: the first one, and the most a block grows to under sustained load.
pub const MIN_BLOCK: u64 = 1 << 10;
pub const MAX_BLOCK: u64 = 1 << 20;

/// A gdid sequence: a cache slot known to hold one.
pub type GdidSeq<'a> = Seq<'a, GdidState>;

/// What to do once the lease lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Nothing: another backend extended the lease or moved to the next era meanwhile.
    Retry,
    /// The last era's counters are used up.
    Exhausted,
    /// Make `Move::lease` durable, then [`GdidSeq::publish`] it.
    Move(Move),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// The lease to make durable.
    pub lease: Lease,
    /// The counters it covers beyond what is needed now (for sizing the next one).
    block: u64,
    /// The sequence continues after this counter of `lease.era`.
    last: u64,
    /// `lease.era` is a new era.
    new_era: bool,
}

/// What the monitoring view shows of a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub era: u32,
    pub last_counter: u64,
    pub lease_end: u64,
    pub issued: u64,
    pub lease_extensions: u64,
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

impl GdidSeq<'_> {
    /// Claims `n >= 1` consecutive counters if the lease covers them.
    #[inline]
    pub fn try_take(&self, n: u64) -> Result<Taken, Need> {
        self.state().try_take(n)
    }

    /// Under the lease lock: what `need` (from a failed [`GdidSeq::try_take`] of `n`
    /// counters) still calls for, now that no other backend can extend the lease. The need was
    /// seen without the lock, so it is checked again: the lease may have been extended, or
    /// the era moved on, meanwhile. A need for the next era seen while another backend was
    /// moving to it (the counter word is closed during the move) is not a reason to move on
    /// once more.
    pub fn plan(&self, need: Need, n: u64, now_unix_ms: i64) -> Plan {
        let (era, end) = self.state().lease();
        let (previous, at) = self.state().last_extension();
        let block = next_block(previous, now_unix_ms - at);
        match need {
            Need::Lease { era: seen, last } => {
                if seen != era || end > last {
                    return Plan::Retry;
                }
                Plan::Move(Move {
                    lease: Lease {
                        era,
                        end: lease_end_for(last, block),
                    },
                    block,
                    last: 0,
                    new_era: false,
                })
            }
            Need::NextEra { era: seen } => {
                let fits = self
                    .state()
                    .last()
                    .checked_add(n)
                    .is_some_and(|l| l <= MAX_COUNTER);
                if seen != era || fits {
                    return Plan::Retry;
                }
                match era.checked_add(1) {
                    None => Plan::Exhausted,
                    Some(next) => Plan::Move(Move {
                        lease: Lease {
                            era: next,
                            end: lease_end_for(n, block),
                        },
                        block,
                        last: 0,
                        new_era: true,
                    }),
                }
            }
        }
    }

    /// Under the lease lock: how to move the sequence so that its next gdid is later than
    /// counter `last` of `era`; `None` if it already is (it never moves back).
    pub fn plan_advance(&self, era: u32, last: u64) -> Option<Move> {
        let (cur_era, cur_end) = self.state().lease();
        if (era, last) <= (cur_era, self.state().last()) {
            return None;
        }
        let (block, _) = self.state().last_extension();
        let end = lease_end_for(last, MIN_BLOCK);
        Some(Move {
            lease: Lease {
                era,
                end: if era == cur_era {
                    end.max(cur_end)
                } else {
                    end
                },
            },
            block,
            last,
            new_era: era != cur_era,
        })
    }

    /// Publishes a move whose lease is now durable.
    pub fn publish(&self, m: Move, now_unix_ms: i64) {
        if m.new_era {
            self.state().advance_era(m.lease.era, m.last, m.lease.end);
        } else {
            self.state().extend(m.lease.end);
            self.state().raise_to(m.last);
        }
        self.state().note_extension(m.block, now_unix_ms);
    }

    /// The durable lease it holds.
    pub fn lease(&self) -> Lease {
        let (era, end) = self.state().lease();
        Lease { era, end }
    }

    /// Moves the sequence on so that its next gdid is above counter `end - 1` of `era` (never
    /// back), without a lease: for a fresh sequence, above the keys already stored (see
    /// `probe`). The lease extension that follows covers it before anything is handed out.
    pub fn raise_position(&self, lease: Lease) {
        let (era, _) = self.state().lease();
        let last = lease.end.saturating_sub(1);
        if lease.era > era {
            self.state().advance_era(lease.era, last, 0);
        } else if lease.era == era {
            self.state().raise_to(last);
        }
    }

    /// Takes the durable lease its relation holds (read under the extension lock); never
    /// moves back.
    pub fn restore(&self, lease: Lease) {
        self.state().restore(lease.era, lease.end);
    }

    pub fn stats(&self) -> Stats {
        let (era, lease_end) = self.state().lease();
        Stats {
            era,
            last_counter: self.state().last(),
            lease_end,
            issued: self.state().issued(),
            lease_extensions: self.state().lease_extensions(),
        }
    }
}

#[cfg(not(loom))] // with std atomics, outside the model checker
#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::cache::tests::{key, table};
    use crate::core::identity::{CreationLayout, Kind};

    fn with_seq(test: impl FnOnce(GdidSeq<'_>)) {
        let t = table(2);
        let r = t.cache();
        let at = r
            .find_or_insert(key(1, 2), Kind::Gdid, CreationLayout::default(), 0)
            .unwrap();
        test(r.seq(at).unwrap());
    }

    /// What the slow path does: plan under the lock, make durable, publish.
    fn take(seq: &GdidSeq<'_>, n: u64) -> Result<Taken, Plan> {
        loop {
            match seq.try_take(n) {
                Ok(t) => return Ok(t),
                Err(need) => match seq.plan(need, n, 0) {
                    Plan::Move(m) => seq.publish(m, 0),
                    Plan::Retry => {}
                    other => return Err(other),
                },
            }
        }
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

    #[test]
    fn extensions_cover_a_block_and_eras_follow_each_other() {
        with_seq(|seq| {
            assert_eq!(take(&seq, 1), Ok(Taken { era: 0, first: 1 }));
            assert_eq!(
                seq.lease(),
                Lease {
                    era: 0,
                    end: 1 + MIN_BLOCK
                }
            );
            assert_eq!(seq.stats().lease_extensions, 1);
            seq.restore(Lease {
                era: 3,
                end: MAX_COUNTER,
            });
            assert_eq!(
                take(&seq, 2),
                Ok(Taken { era: 4, first: 1 }),
                "two counters do not fit in what is left of era 3"
            );
            seq.restore(Lease {
                era: u32::MAX,
                end: MAX_COUNTER + 1,
            });
            assert_eq!(take(&seq, 1), Err(Plan::Exhausted));
        });
    }

    /// Two backends find the era used up. The first moves the sequence to the next era under
    /// the lock; the second, which looked while the counter word was closed for that move, saw
    /// the new era as used up too. Under the lock it must find room and retry, not move on a
    /// second time.
    #[test]
    fn a_need_for_the_next_era_is_checked_again_under_the_lock() {
        with_seq(|seq| {
            seq.restore(Lease {
                era: 5,
                end: MAX_COUNTER + 1,
            });
            let need = seq.try_take(2).unwrap_err();
            assert_eq!(need, Need::NextEra { era: 5 });
            let Plan::Move(m) = seq.plan(need, 2, 0) else {
                panic!("the era is used up")
            };
            seq.publish(m, 0);
            assert_eq!(seq.lease().era, 6);
            // What the second backend saw during the move: era 6, counter word closed.
            let seen_during_the_move = Need::NextEra { era: 6 };
            assert_eq!(seq.plan(seen_during_the_move, 2, 0), Plan::Retry);
            assert_eq!(take(&seq, 2), Ok(Taken { era: 6, first: 1 }));
            // And a lease need another backend has met meanwhile.
            let stale = Need::Lease { era: 6, last: 2 };
            assert_eq!(seq.plan(stale, 1, 0), Plan::Retry);
        });
    }

    #[test]
    fn a_raised_position_needs_a_lease_first() {
        with_seq(|seq| {
            seq.raise_position(Lease { era: 2, end: 10 });
            seq.raise_position(Lease { era: 1, end: 99 });
            assert_eq!(take(&seq, 1), Ok(Taken { era: 2, first: 10 }));
            assert!(seq.lease().end > 10);
        });
    }

    #[test]
    fn advance_moves_on_and_never_back() {
        with_seq(|seq| {
            let m = seq.plan_advance(0, 1_000).unwrap();
            seq.publish(m, 0);
            assert_eq!(
                take(&seq, 1),
                Ok(Taken {
                    era: 0,
                    first: 1_001
                })
            );
            assert_eq!(seq.plan_advance(0, 5), None);
            let m = seq.plan_advance(7, 41).unwrap();
            seq.publish(m, 0);
            assert_eq!(take(&seq, 1), Ok(Taken { era: 7, first: 42 }));
            assert_eq!(seq.plan_advance(6, MAX_COUNTER), None);
        });
    }
}
