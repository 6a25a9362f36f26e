//! PURE: gdid counters (`gdid/counter.rs`): two backends taking counters, one at a time and in
//! blocks, while the lease holder extends the lease and moves the sequence to the next era.
//! No (era, counter) is taken twice, none outside the durable lease of its era, none of a new
//! era below where the move put the sequence.

use loom::sync::Arc;
use loom::thread;

use super::{check, DEFAULT_PREEMPTIONS};
use crate::core::gdid::counter::{GdidState, Need, Taken};
use crate::core::sync::{AtomicU64, Ordering};

/// The durable lease of each era (the first counter not covered), as the relation holds it:
/// written before the shared state is moved.
struct Durable([AtomicU64; 2]);

/// Takes `n` counters, up to two attempts (a lease needed is being extended).
fn take(s: &GdidState, n: u64, durable: &Durable) -> Option<Taken> {
    for _ in 0..2 {
        match s.try_take(n) {
            Ok(t) => {
                let end = durable.0[t.era as usize].load(Ordering::Relaxed);
                assert!(
                    t.first + n - 1 < end,
                    "{t:?} (+{n}) outside era {}'s durable lease {end}",
                    t.era
                );
                return Some(t);
            }
            Err(Need::Lease { .. } | Need::NextEra { .. }) => loom::hint::spin_loop(),
        }
    }
    None
}

#[test]
fn loom_gdid_counters_across_an_extension_and_a_new_era() {
    check("gdid", DEFAULT_PREEMPTIONS, || {
        let s = Arc::new(GdidState::default());
        s.extend(3); // counters 1 and 2
        let durable = Arc::new(Durable([AtomicU64::new(3), AtomicU64::new(0)]));
        let spawn = |n| {
            let (s, durable) = (s.clone(), durable.clone());
            thread::spawn(move || take(&s, n, &durable))
        };
        let one = spawn(1);
        let block = spawn(2);
        let holder = {
            let (s, durable) = (s.clone(), durable.clone());
            thread::spawn(move || {
                // The lease holder, under the lease lock: an extension, then the next era, starting
                // after counter 5 (what `gdid_advance` or a restore would ask), each durable first.
                durable.0[0].store(5, Ordering::Relaxed);
                s.extend(5);
                durable.0[1].store(10, Ordering::Relaxed);
                s.advance_era(1, 5, 10);
            })
        };
        holder.join().unwrap();
        let mut taken: Vec<(u32, u64)> = Vec::new();
        for (t, n) in [(one.join().unwrap(), 1), (block.join().unwrap(), 2)] {
            if let Some(t) = t {
                if t.era == 1 {
                    assert!(t.first > 5, "{t:?} below where the new era starts");
                }
                taken.extend((0..n).map(|i| (t.era, t.first + i)));
            }
        }
        let all = taken.len();
        taken.sort_unstable();
        taken.dedup();
        assert_eq!(taken.len(), all, "a counter taken twice");
        assert_eq!(s.lease(), (1, 10));
    });
}
