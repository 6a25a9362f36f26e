//! PURE: detection's sightings (`sightings.rs`): apply workers recording what replication
//! brought, into the same entry or racing for the same free one, while a backend reads the
//! conflicts; workers finding a conflict at once. Each sighting has one entry and every row
//! is counted; a reader that sees an entry sees its times; a conflict is reported once.

use loom::sync::Arc;
use loom::thread;

use super::{check, DEFAULT_PREEMPTIONS};
use crate::core::sightings::{Key, Own, Sightings, What, MAX_SIGHTINGS, THIS_SERVER};

const VALUE: u16 = 5;
const OWN: Own = Own {
    node: Some(VALUE),
    authority: None,
};

fn node(origin: u16) -> Key {
    Key {
        what: What::Node,
        value: VALUE,
        origin,
    }
}

/// Where `Sightings::record` starts looking for a key (its hash, as written there).
fn start(key: Key) -> usize {
    let w = 1 << 63 | (key.what as u64) << 32 | u64::from(key.value) << 16 | u64::from(key.origin);
    (w.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % MAX_SIGHTINGS
}

fn record(s: &Arc<Sightings>, key: Key, rows: u64, now_ms: i64) -> thread::JoinHandle<()> {
    let s = s.clone();
    thread::spawn(move || assert!(s.record(key, rows, now_ms)))
}

/// Two apply workers see values of this server's own node number through the same origin,
/// while a backend reads the conflicts.
#[test]
fn loom_one_entry_per_sighting_and_every_row_counted() {
    check("sightings same", DEFAULT_PREEMPTIONS, || {
        let s = Arc::new(Sightings::default());
        let a = record(&s, node(1), 2, 100);
        let b = record(&s, node(1), 3, 200);
        let reader = {
            let s = s.clone();
            thread::spawn(move || {
                for c in s.conflicts(OWN) {
                    assert!(
                        c.first_ms > 0 && c.last_ms > 0,
                        "an entry seen without its times: {c:?}"
                    );
                }
            })
        };
        reader.join().unwrap();
        a.join().unwrap();
        b.join().unwrap();
        let c = s.conflict(What::Node, VALUE, OWN).unwrap();
        assert_eq!(c.origins, [THIS_SERVER, 1]);
        assert_eq!(c.rows, 5);
        assert_eq!(c.last_ms, 200);
        assert!([100, 200].contains(&c.first_ms));
    });
}

/// Two apply workers see values of two origins whose entries start at the same place: both
/// are recorded, each in an entry of its own.
#[test]
fn loom_sightings_racing_for_one_free_entry() {
    let first = node(1);
    let second = (2..u16::MAX)
        .map(node)
        .find(|&k| start(k) == start(first))
        .unwrap();
    check("sightings race", DEFAULT_PREEMPTIONS, move || {
        let s = Arc::new(Sightings::default());
        let a = record(&s, first, 1, 100);
        let b = record(&s, second, 1, 100);
        a.join().unwrap();
        b.join().unwrap();
        let c = s.conflict(What::Node, VALUE, OWN).unwrap();
        assert_eq!(c.origins, [THIS_SERVER, 1, second.origin]);
        assert_eq!(c.rows, 2);
    });
}

/// Two workers find the same conflict at once: one of them reports it.
#[test]
fn loom_a_conflict_is_reported_once() {
    check("sightings warning", DEFAULT_PREEMPTIONS, || {
        let s = Arc::new(Sightings::default());
        assert!(s.record(node(1), 1, 100));
        let report = || {
            let s = s.clone();
            thread::spawn(move || {
                let c = s.conflict(What::Node, VALUE, OWN).unwrap();
                s.due_for_warning(&c, 1_000)
            })
        };
        let (a, b) = (report(), report());
        let reported = [a.join().unwrap(), b.join().unwrap()];
        assert_eq!(reported.iter().filter(|&&r| r).count(), 1);
    });
}
