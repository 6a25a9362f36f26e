//! What logical replication has brought to this server: for each snowflake node number and
//! gdid authority, through which replication origins (subscriptions) values carrying it
//! arrived, first and last when, and how many. From that, whether two servers share a node
//! number or an authority.
//!
//! PURE: no pgrx here. The table lives in shared memory; apply workers add to it (see
//! `detection::arrivals`), the `snowflake_node_conflicts` view reads it.
//!
//! Two origins deliver values of one node number in a healthy setup only one after the
//! other: a standby promoted in place of a dead primary continues its node, and the
//! subscriber meets it through a new subscription once the old one has gone quiet. Two
//! servers that share the number deliver concurrently. So a conflict is two origins whose
//! periods of delivery overlap by more than [`GRACE_MS`], or any origin that delivers this
//! server's own node number or authority.

use crate::core::sync::{spin_loop, AtomicBool, AtomicI64, AtomicU64, Ordering};

/// Room for sightings: distinct (what, value, origin) triples since the server started.
/// (Four under loom: a reader reads them all at every step the checker explores.)
pub const MAX_SIGHTINGS: usize = if cfg!(loom) { 4 } else { 256 };

/// The key of an entry whose times are being written by the worker that claimed it.
const CLAIMING: u64 = 1;

/// How long two origins' deliveries of one value may overlap before it is a conflict: the
/// slack of a hand-over (the old origin's last rows applied while the new one starts), and of
/// the batched timestamps (an apply worker records at most every [`FLUSH_MS`]).
pub const GRACE_MS: i64 = 1_000;

/// How often, at most, an apply worker adds its counts to the shared table.
pub const FLUSH_MS: i64 = 100;

/// How often a conflict that persists is reported again.
pub const REPEAT_WARNING_MS: i64 = 600_000;

/// What a value identifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum What {
    /// A snowflake node number.
    Node = 1,
    /// A gdid authority.
    Authority = 2,
}

/// One sighting: values of `what` = `value` arriving through replication origin `origin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub what: What,
    pub value: u16,
    pub origin: u16,
}

impl Key {
    fn encode(self) -> u64 {
        1 << 63 | (self.what as u64) << 32 | u64::from(self.value) << 16 | u64::from(self.origin)
    }

    fn decode(w: u64) -> Option<Key> {
        if w >> 63 == 0 {
            return None;
        }
        let what = match (w >> 32) & 0xFF {
            1 => What::Node,
            2 => What::Authority,
            _ => return None,
        };
        Some(Key {
            what,
            value: (w >> 16) as u16,
            origin: w as u16,
        })
    }
}

#[repr(C)]
#[derive(Default)]
struct Entry {
    key: AtomicU64,
    first_ms: AtomicI64,
    last_ms: AtomicI64,
    rows: AtomicU64,
    /// When a conflict this entry takes part in was last reported (0: never).
    warned_ms: AtomicI64,
}

/// The table, in shared memory: all-zero is empty.
#[repr(C)]
pub struct Sightings {
    entries: [Entry; MAX_SIGHTINGS],
    /// Set once values carrying this server's own node number (authority) have arrived from
    /// another server; `snowflake.refuse_shared_node` acts on it.
    own_node_shared: AtomicBool,
    own_authority_shared: AtomicBool,
}

/// A conflict: servers that share `value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub what: What,
    pub value: u16,
    /// The origins involved, in order; [`THIS_SERVER`] when one of them is this server itself.
    pub origins: Vec<u16>,
    pub first_ms: i64,
    pub last_ms: i64,
    pub rows: u64,
}

/// Stands for this server in [`Conflict::origins`] (no replication origin has ID 0).
pub const THIS_SERVER: u16 = 0;

/// This server's own node number and authority, when set.
#[derive(Debug, Clone, Copy, Default)]
pub struct Own {
    pub node: Option<u16>,
    pub authority: Option<u16>,
}

impl Own {
    fn of(&self, what: What) -> Option<u16> {
        match what {
            What::Node => self.node,
            What::Authority => self.authority,
        }
    }
}

impl Sightings {
    /// Adds `rows` values seen at `now_ms`; false if the table is full of other sightings.
    pub fn record(&self, key: Key, rows: u64, now_ms: i64) -> bool {
        let w = key.encode();
        let start = (w.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % MAX_SIGHTINGS;
        for step in 0..MAX_SIGHTINGS {
            let e = &self.entries[(start + step) % MAX_SIGHTINGS];
            let mut cur = e.key.load(Ordering::Acquire);
            while cur == CLAIMING {
                // Another worker is writing this entry's times: a few stores.
                spin_loop();
                cur = e.key.load(Ordering::Acquire);
            }
            let mine = cur == w
                || (cur == 0 && {
                    // first_ms is set before the key is published, so readers that see the key
                    // see a time; a lost race leaves the slot to the winner.
                    match e
                        .key
                        .compare_exchange(0, CLAIMING, Ordering::AcqRel, Ordering::Acquire)
                    {
                        Ok(_) => {
                            e.first_ms.store(now_ms, Ordering::Relaxed);
                            e.last_ms.store(now_ms, Ordering::Relaxed);
                            // Release (relaxed: loom_models::sightings reads the key
                            // without its times).
                            e.key.store(w, Ordering::Release);
                            true
                        }
                        Err(mut other) => {
                            while other == CLAIMING {
                                spin_loop();
                                other = e.key.load(Ordering::Acquire);
                            }
                            other == w
                        }
                    }
                });
            if mine {
                e.rows.fetch_add(rows, Ordering::Relaxed);
                e.last_ms.fetch_max(now_ms, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    fn entries_of(&self, what: What, value: u16) -> Vec<(Key, &Entry)> {
        self.entries
            .iter()
            .filter_map(|e| Some((Key::decode(e.key.load(Ordering::Acquire))?, e)))
            .filter(|(k, _)| k.what == what && k.value == value)
            .collect()
    }

    /// The conflict about `value`, if there is one.
    pub fn conflict(&self, what: What, value: u16, own: Own) -> Option<Conflict> {
        let entries = self.entries_of(what, value);
        let span = |e: &Entry| {
            (
                e.first_ms.load(Ordering::Relaxed),
                e.last_ms.load(Ordering::Relaxed),
            )
        };
        let mut involved: Vec<usize> = Vec::new();
        if own.of(what) == Some(value) {
            involved.extend(0..entries.len());
        } else {
            for (i, (ka, a)) in entries.iter().enumerate() {
                for (j, (kb, b)) in entries.iter().enumerate().skip(i + 1) {
                    let ((fa, la), (fb, lb)) = (span(a), span(b));
                    if ka.origin != kb.origin && la.min(lb) - fa.max(fb) > GRACE_MS {
                        involved.extend([i, j]);
                    }
                }
            }
        }
        involved.sort_unstable();
        involved.dedup();
        if involved.is_empty() {
            return None;
        }
        let mut origins: Vec<u16> = involved.iter().map(|&i| entries[i].0.origin).collect();
        if own.of(what) == Some(value) {
            origins.push(THIS_SERVER);
        }
        origins.sort_unstable();
        origins.dedup();
        Some(Conflict {
            what,
            value,
            origins,
            first_ms: involved.iter().map(|&i| span(entries[i].1).0).min()?,
            last_ms: involved.iter().map(|&i| span(entries[i].1).1).max()?,
            rows: involved
                .iter()
                .map(|&i| entries[i].1.rows.load(Ordering::Relaxed))
                .sum(),
        })
    }

    /// Every conflict, by what and value.
    pub fn conflicts(&self, own: Own) -> Vec<Conflict> {
        let mut seen: Vec<(What, u16)> = self
            .entries
            .iter()
            .filter_map(|e| Key::decode(e.key.load(Ordering::Acquire)))
            .map(|k| (k.what, k.value))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.into_iter()
            .filter_map(|(what, value)| self.conflict(what, value, own))
            .collect()
    }

    /// Records that this server's own node number (authority) is shared. Relaxed, both
    /// ways: a flag that orders no other data (seen a moment later at worst).
    pub fn mark_own_shared(&self, what: What) {
        self.own_flag(what).store(true, Ordering::Relaxed);
    }

    /// Whether this server's own node number (authority) is known to be shared.
    #[inline]
    pub fn own_shared(&self, what: What) -> bool {
        self.own_flag(what).load(Ordering::Relaxed)
    }

    fn own_flag(&self, what: What) -> &AtomicBool {
        match what {
            What::Node => &self.own_node_shared,
            What::Authority => &self.own_authority_shared,
        }
    }

    /// Whether the conflict about `value` is due to be reported at `now_ms` (first time, or
    /// [`REPEAT_WARNING_MS`] after the last report); marks it reported.
    pub fn due_for_warning(&self, conflict: &Conflict, now_ms: i64) -> bool {
        let entries = self.entries_of(conflict.what, conflict.value);
        // The entry with the latest mark carries it (the first one before any report); of two
        // workers that find the conflict at once, one reports it.
        let Some((_, marked)) = entries
            .iter()
            .max_by_key(|(_, e)| e.warned_ms.load(Ordering::Relaxed))
        else {
            return false;
        };
        let last = marked.warned_ms.load(Ordering::Relaxed);
        if last != 0 && now_ms - last < REPEAT_WARNING_MS {
            return false;
        }
        marked
            .warned_ms
            .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// Shared memory holds it zeroed; under loom, atomics are the checker's objects and are made.
#[cfg(loom)]
impl Default for Sightings {
    fn default() -> Self {
        Sightings {
            entries: std::array::from_fn(|_| Entry::default()),
            own_node_shared: AtomicBool::new(false),
            own_authority_shared: AtomicBool::new(false),
        }
    }
}

#[cfg(not(loom))] // with std atomics, outside the model checker
#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Box<Sightings> {
        // SAFETY: atomics only; all-zero is the empty table, as in shared memory.
        unsafe { Box::new(std::mem::zeroed()) }
    }

    fn node(value: u16, origin: u16) -> Key {
        Key {
            what: What::Node,
            value,
            origin,
        }
    }

    const OWN: Own = Own {
        node: Some(1),
        authority: Some(1),
    };

    #[test]
    fn one_origin_per_value_is_healthy() {
        let t = table();
        // A mesh: node 2 through origin 10, node 3 through origin 11, for a minute.
        for s in 0..60 {
            assert!(t.record(node(2, 10), 100, s * 1_000));
            assert!(t.record(node(3, 11), 100, s * 1_000));
        }
        // A cascade: nodes 4 and 5 through one origin.
        t.record(node(4, 12), 5, 0);
        t.record(node(5, 12), 5, 0);
        assert_eq!(t.conflicts(OWN), []);
    }

    #[test]
    fn a_hand_over_is_not_a_conflict_but_concurrent_delivery_is() {
        let t = table();
        // Node 2's old primary delivers until 30 s; its promoted standby, through a new
        // subscription, from 31 s on (the old one's last rows applied up to 0.5 s late).
        for s in 0..30 {
            t.record(node(2, 10), 10, s * 1_000);
        }
        t.record(node(2, 10), 1, 30_500);
        for s in 30..60 {
            t.record(node(2, 11), 10, s * 1_000);
        }
        assert_eq!(t.conflicts(OWN), []);
        // Two servers delivering node 3 side by side for more than a second.
        for ms in (0..3_000).step_by(100) {
            t.record(node(3, 12), 1, ms);
            t.record(node(3, 13), 1, ms + 50);
        }
        let c = t.conflicts(OWN);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].what, c[0].value), (What::Node, 3));
        assert_eq!(c[0].origins, [12, 13]);
        assert_eq!((c[0].first_ms, c[0].last_ms, c[0].rows), (0, 2_950, 60));
    }

    #[test]
    fn this_servers_own_value_arriving_is_a_conflict_at_once() {
        let t = table();
        t.record(
            Key {
                what: What::Authority,
                value: 1,
                origin: 10,
            },
            3,
            5,
        );
        let c = t.conflicts(OWN);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].origins, [THIS_SERVER, 10]);
        assert!(!t.own_shared(What::Authority));
        t.mark_own_shared(What::Authority);
        assert!(t.own_shared(What::Authority) && !t.own_shared(What::Node));
        assert_eq!(t.conflicts(Own::default()), []);
        assert!(t.due_for_warning(&c[0], 100));
        assert!(!t.due_for_warning(&c[0], 200));
        assert!(t.due_for_warning(&c[0], 100 + REPEAT_WARNING_MS));
    }

    #[test]
    fn a_full_table_says_so() {
        let t = table();
        for v in 0..MAX_SIGHTINGS as u16 {
            assert!(t.record(node(v, 10), 1, 0));
        }
        assert!(!t.record(node(9_999, 10), 1, 0));
        assert!(t.record(node(7, 10), 1, 0), "known sightings still count");
    }

    #[test]
    fn workers_recording_at_once_lose_nothing() {
        let t = table();
        // Eight workers, each its own origin, all delivering nodes 0..16 at once: every key
        // gets one entry, and every row is counted.
        std::thread::scope(|scope| {
            for origin in 1..=8u16 {
                let t = &t;
                scope.spawn(move || {
                    for round in 0..1_000 {
                        for value in 0..16 {
                            assert!(t.record(node(value, origin), 1, round));
                        }
                    }
                });
            }
        });
        let keys: Vec<Key> = t
            .entries
            .iter()
            .filter_map(|e| Key::decode(e.key.load(Ordering::Relaxed)))
            .collect();
        assert_eq!(keys.len(), 8 * 16);
        let rows: u64 = t
            .entries
            .iter()
            .map(|e| e.rows.load(Ordering::Relaxed))
            .sum();
        assert_eq!(rows, 8 * 16 * 1_000);
        // All of them delivered every node side by side for 999 ms, within GRACE_MS: no
        // conflict yet.
        assert_eq!(t.conflicts(Own::default()), []);
    }

    #[test]
    fn keys_round_trip() {
        for k in [node(8191, 65_534), node(0, 1)] {
            assert_eq!(Key::decode(k.encode()), Some(k));
        }
        assert_eq!(Key::decode(0), None);
        assert_eq!(Key::decode(1), None);
    }
}
