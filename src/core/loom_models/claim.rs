//! PURE: the claim of a node number or authority (`claim.rs`): the claims worker ends a claim
//! (and claims the same number again) while a generator reads the claim, reserves a value and
//! confirms the claim it read. No value is confirmed under a claim that has ended: a
//! generator that knows of the end (its detach ordered before it) confirms nothing, and one
//! that read the old claim never confirms it by the word of the new one. Also the claim's
//! texts (a seqlock) and the requests of `snowflake_node_detach()` and `..._attach()`.

use loom::sync::Arc;
use loom::thread;

use super::{check, DEFAULT_PREEMPTIONS};
use crate::core::claim::{ClaimSlot, Claims, Request, SharedText, State};
use crate::core::sync::{AtomicBool, AtomicU64, Ordering};

const NUMBER: u16 = 7;
/// The first claim's deadline, and the second's (monotonic ms).
const FIRST_DEADLINE: i64 = 1_000;
const SECOND_DEADLINE: i64 = 5_000;

fn held() -> Arc<ClaimSlot> {
    let slot = ClaimSlot::default();
    slot.hold(NUMBER, FIRST_DEADLINE, 1, 0, 0);
    Arc::new(slot)
}

/// The worker finds the number lost (the registry gave it away after its lease) and claims it
/// again at once, a later deadline and era floor; a generator reads the claim while the first
/// one is valid (at 500) and confirms its value once only the second one can be (at 2,000): it
/// must not take the second claim's word for the first's.
#[test]
fn loom_a_claim_lost_and_made_again_is_another_claim() {
    check("claim again", DEFAULT_PREEMPTIONS, || {
        let slot = held();
        let generator = {
            let slot = slot.clone();
            thread::spawn(move || {
                let Some((number, made)) = slot.held_at(500) else {
                    return;
                };
                let floor = slot.era_floor();
                // ... the value is reserved ...
                let confirmed = slot.still_held(number, made, 2_000);
                if confirmed {
                    assert_eq!(
                        floor, 2,
                        "a value of the second claim under the first's floor"
                    );
                }
                if made == 1 {
                    assert!(
                        !confirmed,
                        "a value of the first claim confirmed after it ended"
                    );
                }
            })
        };
        let worker = {
            let slot = slot.clone();
            thread::spawn(move || {
                slot.end(State::Lost);
                slot.hold(NUMBER, SECOND_DEADLINE, 2, 0, 0);
            })
        };
        worker.join().unwrap();
        generator.join().unwrap();
    });
}

/// `snowflake_node_detach()` ends the claim and returns; whatever a generator does after
/// learning that (here: a flag the detach sets after it, read with acquire), it confirms no
/// value, whether it read the claim before or after.
#[test]
fn loom_no_value_is_confirmed_after_a_detach_that_came_before() {
    check("claim detach", DEFAULT_PREEMPTIONS, || {
        let slot = held();
        let detached = Arc::new(AtomicBool::new(false));
        let generator = {
            let (slot, detached) = (slot.clone(), detached.clone());
            thread::spawn(move || {
                let read = slot.held_at(500);
                let known = detached.load(Ordering::Acquire);
                let confirmed = read.is_some_and(|(n, made)| slot.still_held(n, made, 500));
                assert!(!(known && confirmed), "confirmed after a detach it knew of");
                if known {
                    assert_eq!(slot.held_at(500), None);
                }
            })
        };
        let detach = {
            let (slot, detached) = (slot.clone(), detached.clone());
            thread::spawn(move || {
                slot.end(State::Detached);
                detached.store(true, Ordering::Release);
            })
        };
        detach.join().unwrap();
        generator.join().unwrap();
    });
}

/// The worker writes a text twice while a backend reads it: the reader gets one of the texts
/// whole (the empty one first), never a mix of two.
#[test]
fn loom_shared_text_is_read_whole() {
    check("claim text", DEFAULT_PREEMPTIONS, || {
        let text = Arc::new(SharedText::default());
        let (a, b) = ("aaaaaaaaaaaaaaaa", "bbbbbbbbb");
        let reader = {
            let text = text.clone();
            thread::spawn(move || {
                let got = text.get();
                assert!(["", a, b].contains(&got.as_str()), "read {got:?}");
            })
        };
        let writer = {
            let text = text.clone();
            thread::spawn(move || {
                text.set(a);
                text.set(b);
            })
        };
        writer.join().unwrap();
        reader.join().unwrap();
        assert_eq!(text.get(), b);
    });
}

/// `snowflake_node_detach()` posts a request while the worker deals with an earlier one: the
/// worker sees the action posted with its number, and the caller's wait ends only once its
/// request was dealt with.
#[test]
fn loom_requests_reach_the_worker() {
    check("claim requests", DEFAULT_PREEMPTIONS, || {
        let claims = Arc::new(Claims::default());
        let dealt = Arc::new(AtomicU64::new(0));
        let worker = {
            let (claims, dealt) = (claims.clone(), dealt.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    if let Some((action, number)) = claims.pending() {
                        assert_eq!(action, Request::Detach, "request {number}");
                        dealt.store(number, Ordering::Relaxed);
                        claims.finish(number);
                    }
                    loom::hint::spin_loop();
                }
            })
        };
        let caller = {
            let (claims, dealt) = (claims.clone(), dealt.clone());
            thread::spawn(move || {
                let number = claims.request(Request::Detach);
                if claims.done(number) {
                    assert_eq!(dealt.load(Ordering::Relaxed), number);
                }
            })
        };
        caller.join().unwrap();
        worker.join().unwrap();
    });
}
