//! The IDs still in flight: for each process (and each prepared transaction), the first value
//! its open transaction took from each sequence. A watermark (`snowflake_watermark`) is the
//! lowest of these and of the value the sequence hands out next: below it, every value made
//! here belongs to a transaction that has ended.
//!
//! PURE: no pgrx here; the tests run it from several threads.
//!
//! A process publishes an entry *before* the reservation that takes its transaction's first
//! value from a sequence, with a lower bound of that value (then raises it to the value
//! itself), and clears its entries only after its transaction has ended (committed and
//! visible, or rolled back). A reader first reads where the sequence stands, then the
//! entries. Either the reservation came after the reader's look at the sequence (so the value
//! is at or above where the sequence stood), or the entry was published before it and the
//! reader sees it (the reservation's release store orders the entry before the sequence's new
//! state).
//!
//! Each entry is written under its own sequence counter (odd while written). A reader that
//! finds one odd, or changed while it read, passes over it: the entry was being published
//! (its reservation comes later, see above) or cleared (its transaction has ended), or both
//! for a new transaction. Only the owner ever writes a process's entries, and the process
//! that prepares a transaction writes the prepared transaction's.

use crate::core::sync::{fence, AtomicI64, AtomicU32, AtomicU64, Ordering};

use crate::core::identity::Kind;

/// Sequences one transaction can hold entries for. A transaction that takes values from more
/// holds every sequence of its database at the lowest value instead (see [`Seen::value`]).
/// (Two under loom: each entry is one more to read at every step the checker explores.)
pub const ENTRIES: usize = if cfg!(loom) { 2 } else { 8 };

/// A value in the order of its kind: a snowflake ID, or a gdid as `era << 64 | rest`.
pub type Value = u128;

/// Which sequence an entry is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub db: u32,
    pub relid: u32,
    pub kind: Kind,
}

fn kind_code(kind: Kind) -> u32 {
    kind as u32
}

fn kind_of(code: u32) -> Option<Kind> {
    [Kind::Snowflake, Kind::Gdid]
        .into_iter()
        .find(|&k| kind_code(k) == code)
}

#[repr(C)]
#[derive(Default)]
struct Entry {
    /// Odd while written; 0 with `kind` 0 is an empty entry.
    version: AtomicU32,
    db: AtomicU32,
    relid: AtomicU32,
    /// 0: empty; else `kind_code`.
    kind: AtomicU32,
    /// The prepared transaction, in a prepared transaction's holder; 0 in a process's.
    xid: AtomicU32,
    /// The value: `hi` is written with the entry, `lo` may be raised alone afterwards.
    hi: AtomicU64,
    lo: AtomicU64,
    /// When it was published, Unix ms.
    since_ms: AtomicI64,
    /// Whether a reservation has taken a value under it (its owner's, not read by others).
    raised: AtomicU32,
}

/// Orderings: a seqlock of release stores and acquire loads, the counter moved by
/// acquire-release read-modify-writes. A reader that reads any field from a newer write
/// synchronizes with it and so reads the counter's change: it never takes a mix of two
/// writes for a settled entry (loom_models::inflight fails with relaxed fields: a cleared
/// kind read with the counter from before the clear, the value still in flight). Against
/// the reservation the callers' SeqCst fences order the entry (see the module's comment).
/// These were SeqCst stores: an xchg each on x86, publish + raise + clear 35-47 ns against
/// 10-17 ns now, once per transaction and sequence (an autocommit INSERT's every value).
impl Entry {
    fn begin(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    fn end(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    fn is(&self, held: Held) -> bool {
        self.kind.load(Ordering::Relaxed) == kind_code(held.kind)
            && self.db.load(Ordering::Relaxed) == held.db
            && self.relid.load(Ordering::Relaxed) == held.relid
    }

    fn is_empty(&self) -> bool {
        self.kind.load(Ordering::Relaxed) == 0
    }

    /// Written by the owner only.
    fn write(&self, held: Held, xid: u32, value: Value, since_ms: i64) {
        self.begin();
        self.db.store(held.db, Ordering::Release);
        self.relid.store(held.relid, Ordering::Release);
        self.kind.store(kind_code(held.kind), Ordering::Release);
        self.xid.store(xid, Ordering::Release);
        self.hi.store((value >> 64) as u64, Ordering::Release);
        self.lo.store(value as u64, Ordering::Release);
        self.since_ms.store(since_ms, Ordering::Release);
        self.raised.store(0, Ordering::Relaxed);
        self.end();
    }

    fn clear(&self) {
        if self.is_empty() {
            return;
        }
        self.begin();
        self.kind.store(0, Ordering::Release);
        self.end();
    }

    /// What a reader sees of it, if it is a settled entry: the sequence, the value, the
    /// prepared transaction and when it was published.
    fn read(&self) -> Option<(Held, Value, u32, i64)> {
        let v1 = self.version.load(Ordering::Acquire);
        if v1 % 2 == 1 {
            return None;
        }
        let kind = kind_of(self.kind.load(Ordering::Acquire))?;
        let held = Held {
            db: self.db.load(Ordering::Acquire),
            relid: self.relid.load(Ordering::Acquire),
            kind,
        };
        let xid = self.xid.load(Ordering::Acquire);
        let value = Value::from(self.hi.load(Ordering::Acquire)) << 64
            | Value::from(self.lo.load(Ordering::Acquire));
        let since = self.since_ms.load(Ordering::Acquire);
        (self.version.load(Ordering::Acquire) == v1).then_some((held, value, xid, since))
    }
}

/// The entries of one process or prepared transaction. All-zero is empty.
#[repr(C)]
#[derive(Default)]
pub struct Holder {
    /// A process's: the transaction it is preparing (from the start of PREPARE until its
    /// entries are moved). A prepared transaction's: the transaction whose entries these are.
    xid: AtomicU32,
    /// Not 0: the transaction took values from more sequences of this database than it has
    /// entries for, and holds all of them of the kinds in `overflow_kinds`.
    overflow_db: AtomicU32,
    /// A bit per kind (`1 << kind_code`) whose sequences the overflow holds.
    overflow_kinds: AtomicU32,
    entries: [Entry; ENTRIES],
}

/// What a reader found holding a sequence back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The holder's index (a PGPROC number).
    pub holder: usize,
    /// The lowest value the transaction may hold; `None`: any (it overflowed its entries).
    pub value: Option<Value>,
    /// The prepared transaction, for a prepared transaction's holder; 0 for a process's.
    pub xid: u32,
    /// When the entry was published (Unix ms); 0 for an overflow.
    pub since_ms: i64,
}

/// What an entry holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holding {
    One(Held),
    /// Every sequence of this kind of the database (an overflow).
    All(Kind),
}

/// What [`Holders::publish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// A new entry (or one no reservation took a value under yet), to be raised to the value
    /// the reservation takes.
    New(usize),
    /// The transaction had one already, holding a value it took earlier: never raised.
    Had,
    /// No entry left: the transaction holds every sequence of the database.
    Overflow,
}

/// The holders of a server: one per PGPROC number.
#[derive(Clone, Copy)]
pub struct Holders<'a> {
    all: &'a [Holder],
}

impl<'a> Holders<'a> {
    pub fn new(all: &'a [Holder]) -> Self {
        Holders { all }
    }

    pub fn capacity(&self) -> usize {
        self.all.len()
    }

    /// [`Holders::publish`], then a full fence: what the caller reads next (whether its slot
    /// still holds the sequence, then the reservation) comes after the entry, against a
    /// watermark's fence between where the sequence stands and the entries
    /// ([`Holders::holding_after_fence`]): of the two fences, the first orders either the
    /// entry before the watermark's reading or the watermark's reading before the slot check.
    pub fn hold(&self, me: usize, held: Held, lower: Value, now_ms: i64) -> Published {
        let published = self.publish(me, held, lower, now_ms);
        fence(Ordering::SeqCst);
        published
    }

    /// By `me`, before the reservation that takes its transaction's first value from `held`:
    /// `lower` is at or below anything that reservation can take.
    pub fn publish(&self, me: usize, held: Held, lower: Value, now_ms: i64) -> Published {
        let h = &self.all[me];
        if let Some(i) = h.entries.iter().position(|e| e.is(held)) {
            // Published by an attempt that took nothing (its slot was evicted meanwhile, or
            // it went to look for a fallback): the coming reservation takes the first value.
            if h.entries[i].raised.load(Ordering::Relaxed) == 0 {
                return Published::New(i);
            }
            return Published::Had;
        }
        match h.entries.iter().position(Entry::is_empty) {
            Some(i) => {
                h.entries[i].write(held, 0, lower, now_ms);
                Published::New(i)
            }
            None => {
                // SeqCst here and in `preparing` and `move_to_prepared`: the overflow and
                // prepared transactions are not modelled, and these run once per transaction
                // with more than ENTRIES sequences, or per PREPARE.
                h.overflow_kinds
                    .fetch_or(1 << kind_code(held.kind), Ordering::SeqCst);
                h.overflow_db.store(held.db, Ordering::SeqCst);
                Published::Overflow
            }
        }
    }

    /// By `me`, after the reservation that followed [`Published::New`]: the value its entry
    /// `i` holds is `value`, the first the reservation took (at or above what was published).
    pub fn raise(&self, me: usize, i: usize, value: Value) {
        let e = &self.all[me].entries[i];
        let (hi, lo) = (e.hi.load(Ordering::Relaxed), e.lo.load(Ordering::Relaxed));
        let (new_hi, new_lo) = ((value >> 64) as u64, value as u64);
        if new_hi == hi && new_lo > lo {
            e.lo.store(new_lo, Ordering::Release);
        } else if new_hi > hi {
            // Readers read `hi`, then `lo`, without the entry's counter (they must not pass
            // over an entry whose value was taken): the low word to 0 first, then the high
            // word, then the low word. Whatever pair a reader gets is at most `value`.
            e.lo.store(0, Ordering::Release);
            e.hi.store(new_hi, Ordering::Release);
            e.lo.store(new_lo, Ordering::Release);
        }
        e.raised.store(1, Ordering::Relaxed);
    }

    /// By `me`, once its transaction has ended (and is visible, if it committed).
    pub fn clear(&self, me: usize) {
        let h = &self.all[me];
        for e in &h.entries {
            e.clear();
        }
        // Release, as the entries' clears: a reader that sees a clear (with acquire) sees the
        // transaction's end before it; one that does not holds the sequence back, the safe
        // side. These were SeqCst stores, three xchg at the end of every transaction that
        // generated.
        h.overflow_db.store(0, Ordering::Release);
        h.overflow_kinds.store(0, Ordering::Release);
        h.xid.store(0, Ordering::Release);
    }

    /// By `me`, at the start of PREPARE TRANSACTION: the transaction it prepares.
    pub fn preparing(&self, me: usize, xid: u32) {
        self.all[me].xid.store(xid, Ordering::SeqCst);
    }

    /// The transaction `holder` is preparing, or whose entries it holds (0: none).
    pub fn xid_of(&self, holder: usize) -> u32 {
        self.all[holder].xid.load(Ordering::SeqCst)
    }

    /// By `me`, once its transaction is prepared as `xid` with the PGPROC number `prepared`:
    /// the entries move there, to be held until the prepared transaction ends. Written there
    /// completely before they leave `me`, and readers look at processes before prepared
    /// transactions (PGPROC numbers of prepared transactions come last).
    pub fn move_to_prepared(&self, me: usize, prepared: usize, xid: u32) {
        let (from, to) = (&self.all[me], &self.all[prepared]);
        // What is there belongs to a prepared transaction that has ended (its PGPROC is
        // free again), and readers pass over it by its xid.
        to.overflow_db.store(0, Ordering::SeqCst);
        to.overflow_kinds.store(0, Ordering::SeqCst);
        to.xid.store(xid, Ordering::SeqCst);
        for (src, dst) in from.entries.iter().zip(&to.entries) {
            match src.kind.load(Ordering::Relaxed) {
                0 => dst.clear(),
                _ => match src.read() {
                    // The owner's own entry, which nobody else writes: always settled.
                    Some((held, value, _, since_ms)) => dst.write(held, xid, value, since_ms),
                    None => dst.clear(),
                },
            }
        }
        to.overflow_kinds.store(
            from.overflow_kinds.load(Ordering::Relaxed),
            Ordering::SeqCst,
        );
        to.overflow_db
            .store(from.overflow_db.load(Ordering::Relaxed), Ordering::SeqCst);
        self.clear(me);
    }

    /// Everything holding sequences of database `db` back, in the order of the holders: which
    /// sequences, and what holds them. To be read after where the sequence stands (see the
    /// module's comment).
    pub fn scan(&self, db: u32, mut f: impl FnMut(Holding, Seen)) {
        for (holder, h) in self.all.iter().enumerate() {
            for e in &h.entries {
                if let Some((held, value, xid, since_ms)) = e.read().filter(|r| r.0.db == db) {
                    let seen = Seen {
                        holder,
                        value: Some(value),
                        xid,
                        since_ms,
                    };
                    f(Holding::One(held), seen);
                }
            }
            let kinds = h.overflow_kinds.load(Ordering::SeqCst);
            if h.overflow_db.load(Ordering::SeqCst) == db {
                let seen = Seen {
                    holder,
                    value: None,
                    xid: h.xid.load(Ordering::SeqCst),
                    since_ms: 0,
                };
                for kind in [Kind::Snowflake, Kind::Gdid] {
                    if kinds & 1 << kind_code(kind) != 0 {
                        f(Holding::All(kind), seen);
                    }
                }
            }
        }
    }

    /// A watermark's reading of what holds `held` back, after it read where the sequence
    /// stands: a full fence (see [`Holders::hold`]), then [`Holders::holding`].
    pub fn holding_after_fence(&self, held: Held, f: impl FnMut(Seen)) {
        fence(Ordering::SeqCst);
        self.holding(held, f);
    }

    /// Everything holding `held` back (see [`Holders::scan`]).
    pub fn holding(&self, held: Held, mut f: impl FnMut(Seen)) {
        self.scan(held.db, |h, seen| {
            if h == Holding::One(held) || h == Holding::All(held.kind) {
                f(seen)
            }
        });
    }
}

#[cfg(not(loom))] // with std atomics, outside the model checker
#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    impl Holders<'_> {
        /// Whether `me` holds anything.
        fn holds_any(&self, me: usize) -> bool {
            let h = &self.all[me];
            h.overflow_db.load(Ordering::Relaxed) != 0 || h.entries.iter().any(|e| !e.is_empty())
        }
    }

    fn holders(n: usize) -> Vec<Holder> {
        (0..n).map(|_| Holder::default()).collect()
    }

    const ORDERS: Held = Held {
        db: 5,
        relid: 16_384,
        kind: Kind::Snowflake,
    };
    const OTHER: Held = Held {
        db: 5,
        relid: 16_390,
        kind: Kind::Snowflake,
    };

    fn seen(h: &Holders<'_>, held: Held) -> Vec<Seen> {
        let mut v = vec![];
        h.holding(held, |s| v.push(s));
        v
    }

    #[test]
    fn publish_raise_clear() {
        let all = holders(4);
        let h = Holders::new(&all);
        assert_eq!(h.publish(2, ORDERS, 100, 7), Published::New(0));
        // An attempt that took nothing: the next one's value is the first.
        assert_eq!(h.publish(2, ORDERS, 100, 7), Published::New(0));
        h.raise(2, 0, 120);
        assert_eq!(h.publish(2, ORDERS, 150, 8), Published::Had);
        h.raise(2, 0, 110); // never lowered
        assert_eq!(
            seen(&h, ORDERS),
            vec![Seen {
                holder: 2,
                value: Some(120),
                xid: 0,
                since_ms: 7
            }]
        );
        assert!(seen(&h, OTHER).is_empty());
        assert!(h.holds_any(2));
        h.clear(2);
        assert!(!h.holds_any(2));
        assert!(seen(&h, ORDERS).is_empty());
    }

    #[test]
    fn a_raise_moves_the_high_word_too() {
        let all = holders(1);
        let h = Holders::new(&all);
        h.publish(0, ORDERS, 3 << 64 | 900, 0);
        h.raise(0, 0, 4 << 64 | 1);
        assert_eq!(seen(&h, ORDERS)[0].value, Some(4 << 64 | 1));
    }

    #[test]
    fn overflow_holds_every_sequence_of_the_database_and_kind() {
        let all = holders(2);
        let h = Holders::new(&all);
        for relid in 0..ENTRIES as u32 {
            let held = Held { relid, ..ORDERS };
            assert!(matches!(h.publish(1, held, 1, 0), Published::New(_)));
        }
        assert_eq!(h.publish(1, OTHER, 1, 0), Published::Overflow);
        assert_eq!(seen(&h, OTHER)[0].value, None);
        let elsewhere = Held { db: 6, ..OTHER };
        assert!(seen(&h, elsewhere).is_empty());
        // Only sequences of the kind it overflowed with.
        let gdids = Held {
            kind: Kind::Gdid,
            ..OTHER
        };
        assert!(seen(&h, gdids).is_empty());
        h.publish(1, gdids, 1, 0);
        assert_eq!(seen(&h, gdids)[0].value, None);
    }

    #[test]
    fn prepared_entries_move_and_keep_their_xid() {
        let all = holders(6);
        let h = Holders::new(&all);
        h.publish(1, ORDERS, 40, 3);
        h.preparing(1, 777);
        h.move_to_prepared(1, 5, 777);
        assert!(!h.holds_any(1));
        assert_eq!(h.xid_of(1), 0);
        assert_eq!(h.xid_of(5), 777);
        assert_eq!(
            seen(&h, ORDERS),
            vec![Seen {
                holder: 5,
                value: Some(40),
                xid: 777,
                since_ms: 3
            }]
        );
        // The PGPROC taken again by a later prepared transaction without values.
        h.move_to_prepared(2, 5, 800);
        assert!(seen(&h, ORDERS).is_empty());
    }

    /// Writers publish, reserve from a shared counter and clear; a reader that reads the
    /// counter, then the entries, never finds a value below its watermark still in flight.
    #[test]
    fn a_watermark_never_passes_a_value_in_flight() {
        const WRITERS: usize = 4;
        let all: Arc<Vec<Holder>> = Arc::new(holders(WRITERS));
        let next = Arc::new(AtomicU64::new(1));
        // The value each writer holds in flight (0: none), set after its reservation and
        // cleared before its entry: a value a reader may find here is surely still held.
        let in_flight: Arc<Vec<AtomicU64>> =
            Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..WRITERS)
            .map(|me| {
                let (all, next, in_flight, stop) =
                    (all.clone(), next.clone(), in_flight.clone(), stop.clone());
                std::thread::spawn(move || {
                    let h = Holders::new(&all);
                    for _ in 0..20_000 {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let lower = next.load(Ordering::SeqCst);
                        let Published::New(i) = h.publish(me, ORDERS, lower.into(), 0) else {
                            panic!("one sequence fits");
                        };
                        let v = next.fetch_add(1, Ordering::AcqRel);
                        h.raise(me, i, v.into());
                        in_flight[me].store(v, Ordering::SeqCst);
                        in_flight[me].store(0, Ordering::SeqCst);
                        h.clear(me);
                    }
                })
            })
            .collect();
        let h = Holders::new(&all);
        for _ in 0..20_000 {
            let mut mark = Value::from(next.load(Ordering::SeqCst));
            h.holding(ORDERS, |s| mark = mark.min(s.value.unwrap()));
            for f in in_flight.iter() {
                // Still in flight now: taken after the counter was read (so at or above
                // it), or before, and then its entry was there to be seen.
                let v = f.load(Ordering::SeqCst);
                assert!(
                    v == 0 || Value::from(v) >= mark,
                    "{v} in flight below {mark}"
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        writers.into_iter().for_each(|w| w.join().unwrap());
    }
}
