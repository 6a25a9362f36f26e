//! Where a fresh sequence must start so that it repeats none of the keys already stored in the
//! columns that take their DEFAULT from it (keys that arrived without the sequence's state: a
//! table dumped alone, a dump of release 0.3.0, rows loaded by COPY).
//!
//! PURE: no pgrx here. The search asks one question of an index, again and again: the largest
//! key at most a bound (one descent of a btree, see `sequences::fallback`). It looks only for
//! this server's own keys (its node number, its authority): values of other servers cannot
//! collide with its own.
//!
//! A snowflake key carries its millisecond, node and counter in that order, so this node's
//! keys of one millisecond are one range of the index, and the largest key at or below the
//! top of the range of millisecond `ms` is either ours (found) or another node's, which says
//! where to look next. Only keys from `from_ms` on matter (a fresh sequence starts at the
//! clock, past older milliseconds anyway). A gdid key carries era, authority and counter in
//! that order: the same walk over eras.
//!
//! Each question is one step; after [`MAX_STEPS`] the search gives up and answers with the
//! last key it saw (of any server), which every key it did not look at is below: too high a
//! start, never too low.

use crate::core::gdid::value::{Gdid, MAX_COUNTER};
use crate::core::lease::Lease;
use crate::core::snowflake::layout::Layout;

/// The most index descents one column's search takes.
pub const MAX_STEPS: usize = 10_000;

/// The first millisecond (since the layout's epoch) after every key of node `node` from
/// millisecond `from_ms` on, if there is such a key. `max_at_most(bound)` is the largest key
/// of the column at most `bound`.
pub fn snowflake_floor(
    layout: &Layout,
    node: u32,
    from_ms: u64,
    mut max_at_most: impl FnMut(i64) -> Option<i64>,
) -> Option<u64> {
    let top = |ms: u64| {
        layout.id_of_tick(
            (ms << layout.counter_bits) | u64::from(layout.max_counter()),
            node,
        ) as i64
    };
    let from = layout.id_of_tick(from_ms << layout.counter_bits, 0) as i64;
    let mut bound = i64::MAX;
    let mut last_seen = None;
    for _ in 0..MAX_STEPS {
        let key = max_at_most(bound)?;
        if key < from {
            return None;
        }
        let parts = layout.decode(key as u64).ok()?;
        let ms = parts.ms;
        last_seen = Some(ms);
        match parts.node.cmp(&node) {
            std::cmp::Ordering::Equal => return Some(ms + 1),
            // Our range of this millisecond is below the key.
            std::cmp::Ordering::Greater => bound = top(ms),
            // Our range of this millisecond is above the key and was empty.
            std::cmp::Ordering::Less if ms == 0 => return None,
            std::cmp::Ordering::Less => bound = top(ms - 1),
        }
    }
    last_seen.map(|ms| ms + 1)
}

/// The lease that covers every key of authority `authority`, if there is one.
/// `max_at_most(bound)` is the largest key of the column at most `bound`.
pub fn gdid_floor(
    authority: u8,
    mut max_at_most: impl FnMut(Gdid) -> Option<Gdid>,
) -> Option<Lease> {
    let top = |era: u32| Gdid::from_parts(era, authority, MAX_COUNTER);
    let mut bound = Gdid::from_parts(u32::MAX, 15, MAX_COUNTER);
    let mut last_seen = None;
    for _ in 0..MAX_STEPS {
        let key = max_at_most(bound)?;
        last_seen = Some(key);
        match key.authority().cmp(&authority) {
            std::cmp::Ordering::Equal => {
                return Some(Lease {
                    era: key.era,
                    end: key.counter() + 1,
                })
            }
            std::cmp::Ordering::Greater => bound = top(key.era),
            std::cmp::Ordering::Less if key.era == 0 => return None,
            std::cmp::Ordering::Less => bound = top(key.era - 1),
        }
    }
    // Every key not looked at is below the last one seen: start in the era after it.
    last_seen.map(|k| Lease {
        era: k.era.saturating_add(1),
        end: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::snowflake::layout::DEFAULT_EPOCH_MS;
    use crate::core::testrng::Rng;

    const LAYOUT: Layout = Layout::own(10, DEFAULT_EPOCH_MS);

    fn id(ms: u64, node: u32, counter: u64) -> i64 {
        LAYOUT.id_of_tick((ms << LAYOUT.counter_bits) | counter, node) as i64
    }

    /// The largest of `keys` at most `bound`, counting the descents.
    fn index<'a, T: Ord + Copy + 'a>(
        keys: &[T],
        steps: &'a mut usize,
    ) -> impl FnMut(T) -> Option<T> + 'a {
        let mut sorted = keys.to_vec();
        sorted.sort();
        move |bound| {
            *steps += 1;
            sorted.iter().rev().find(|&&k| k <= bound).copied()
        }
    }

    #[test]
    fn a_snowflake_node_finds_its_own_newest_key() {
        let keys = [
            id(100, 3, 5),
            id(100, 7, 1),
            id(105, 1, 0),
            id(105, 9, 4),
            id(104, 3, 4095),
            id(110, 2, 0),
        ];
        let mut steps = 0;
        // Node 3's newest is at ms 104 (the key at 100 is older).
        assert_eq!(
            snowflake_floor(&LAYOUT, 3, 0, index(&keys, &mut steps)),
            Some(105)
        );
        assert!(steps <= 6, "{steps} descents");
        let mut steps = 0;
        assert_eq!(
            snowflake_floor(&LAYOUT, 9, 0, index(&keys, &mut steps)),
            Some(106)
        );
        let mut steps = 0;
        assert_eq!(
            snowflake_floor(&LAYOUT, 4, 0, index(&keys, &mut steps)),
            None
        );
        // Only milliseconds from `from_ms` on count.
        let mut steps = 0;
        assert_eq!(
            snowflake_floor(&LAYOUT, 3, 105, index(&keys, &mut steps)),
            None
        );
        let mut steps = 0;
        assert_eq!(
            snowflake_floor(&LAYOUT, 1, 105, index(&keys, &mut steps)),
            Some(106)
        );
    }

    #[test]
    fn a_gdid_authority_finds_its_own_last_counter() {
        let g = Gdid::from_parts;
        let keys = [
            g(0, 1, 900),
            g(0, 2, 5),
            g(3, 0, 7),
            g(3, 5, 1),
            g(2, 2, 44),
        ];
        let mut steps = 0;
        assert_eq!(
            gdid_floor(2, index(&keys, &mut steps)),
            Some(Lease { era: 2, end: 45 })
        );
        let mut steps = 0;
        assert_eq!(
            gdid_floor(1, index(&keys, &mut steps)),
            Some(Lease { era: 0, end: 901 })
        );
        let mut steps = 0;
        assert_eq!(gdid_floor(9, index(&keys, &mut steps)), None);
    }

    /// Against a plain scan of random keys: the floor is exactly one past this server's
    /// largest key (from `from_ms` on), whatever the mix of servers.
    #[test]
    fn the_walk_agrees_with_a_scan() {
        let mut rng = Rng::new(5);
        for round in 0..300 {
            let n = 1 + rng.below(400) as usize;
            let keys: Vec<i64> = (0..n)
                .map(|_| id(rng.below(50), rng.below(8) as u32, rng.below(4096)))
                .collect();
            let node = rng.below(8) as u32;
            let from_ms = rng.below(30);
            let want = keys
                .iter()
                .filter(|&&k| k >= id(from_ms, 0, 0))
                .filter_map(|&k| LAYOUT.decode(k as u64).ok().map(|p| (k, p)))
                .filter(|(_, p)| p.node == node)
                .map(|(k, _)| (k as u64 >> 22) + 1)
                .max();
            let mut steps = 0;
            let got = snowflake_floor(&LAYOUT, node, from_ms, index(&keys, &mut steps));
            assert_eq!(got, want, "round {round}");

            let gkeys: Vec<Gdid> = (0..n)
                .map(|_| {
                    Gdid::from_parts(rng.below(6) as u32, rng.below(16) as u8, rng.below(1000))
                })
                .collect();
            let authority = rng.below(16) as u8;
            let want = gkeys
                .iter()
                .filter(|g| g.authority() == authority)
                .max()
                .map(|g| Lease {
                    era: g.era,
                    end: g.counter() + 1,
                });
            let mut steps = 0;
            assert_eq!(
                gdid_floor(authority, index(&gkeys, &mut steps)),
                want,
                "round {round}"
            );
        }
    }

    #[test]
    fn a_search_that_gives_up_starts_above_everything_it_did_not_see() {
        // Every millisecond holds another node's key only: more milliseconds than steps.
        let keys: Vec<i64> = (0..(MAX_STEPS as u64 + 10))
            .map(|ms| id(ms, 1, 0))
            .collect();
        let mut steps = 0;
        let floor = snowflake_floor(&LAYOUT, 5, 0, index(&keys, &mut steps)).unwrap();
        assert_eq!(steps, MAX_STEPS);
        let unseen_max = keys.iter().filter(|&&k| (k as u64 >> 22) < floor).count();
        assert!(unseen_max > 0 && floor <= MAX_STEPS as u64 + 10);
    }
}
