//! Generating: one loop for both kinds of sequence, in the manner of `nextval_internal` in
//! PostgreSQL's sequence.c. [`reserve`] reads from top to bottom: may this server generate, and
//! under which number; which sequence; its cache entry, pinned; the transaction's value
//! published as in flight; the reservation, the lease extended and the clock waited for as
//! needed; the number checked again. [`next`] is the same in the common case (a call site
//! that knows its sequence, a lease that covers the value) without a call into PostgreSQL.
//!
//! What differs between the kinds is a [`Generator`]: how one attempt reserves values (a
//! tick under the clock's bounds, counters of an era), what a lease extension is, how a value
//! is stamped with this server's number. Each of its methods is one step of a few lines; the
//! loop, the waits, the lock and the entry in flight are `reserve`'s alone.

use pgrx::pg_sys;

use crate::core::cache::{Seq, SlotState};
use crate::core::dbtext::DbText;
use crate::core::gdid::counter::{GdidState, Need, Taken};
use crate::core::gdid::gdid_slot::{GdidSeq, Move, Plan};
use crate::core::gdid::value::{Gdid, MAX_COUNTER};
use crate::core::identity::{Kind, SequenceName};
use crate::core::inflight::{Held, Value};
use crate::core::lease::{self, Lease};
use crate::core::sightings::What;
use crate::core::snowflake::clock::{self, Bounds, Refusal, Reservation};
use crate::core::snowflake::epoch::format_utc;
use crate::core::snowflake::layout::Layout;
use crate::core::snowflake::snowflake_slot::{Miss, SnowflakeSeq, SnowflakeState};
use crate::core::wallclock;
use crate::detection;
use crate::guc::{self, Server};
use crate::node::{self, Check};
use crate::pg::errors::{error, Code};
use crate::pg::fmgr::Call;
use crate::pg::shmem;
use crate::sequences::catalog::{self, Opened};
use crate::sequences::resolve::{resolve, Purpose, Resolved};
use crate::sequences::{callsite, durable, fallback, inflight_xact, lookup, prerequisites};

/// Longest a reservation waits, in all, for the wall clock to catch up (a sequence run
/// ahead of it by a burst) before it refuses with an error.
const MAX_WAIT_MS: u64 = 100;

/// How far before the clock the fallback of a fresh snowflake sequence looks for stored
/// keys: a fresh sequence starts at the clock, so older keys cannot meet its IDs, and a second
/// covers a clock that steps back a little between the search and the first ID.
const FALLBACK_MARGIN_MS: u64 = 1_000;

/// What differs between the two kinds of sequence; [`reserve`] does the rest, the same way
/// for both. A value of it is this server's number as the values carry it, for one call.
pub trait Generator: Copy + 'static {
    /// The sequence's state words in its cache slot.
    type State: SlotState;
    /// What one reservation took: `n` consecutive values.
    type Taken: Copy + 'static;
    /// What a lease extension must cover, as an attempt saw it.
    type Need: Copy;
    /// Why an attempt was refused.
    type Refusal: Copy;
    /// Where the keys stored in a fresh sequence's columns end (its fallback).
    type Floor: Copy;
    /// A lease extension, decided under the extension lock.
    type Plan: Copy;
    /// A value as the SQL functions return it.
    type Output;
    /// Which of this server's numbers its values carry, for detection.
    const WHAT: What;

    /// The number values carry now, if this server may generate: no error (the fast path).
    fn now(server: &'static Server) -> Option<(Self, Check)>;
    /// The same, or the ERROR that says why not (the setting missing, a claim not held).
    fn stamp(server: &'static Server) -> (Self, Check);

    /// One attempt at `n` values: no error, no wait, no call into PostgreSQL.
    fn attempt(self, seq: Seq<'_, Self::State>, n: u64) -> Attempt<Self>;
    /// How long to wait before attempting again, if waiting at most `budget_ms` cures the
    /// refusal; else its ERROR.
    fn wait_or_refuse(self, why: Self::Refusal, r: &Resolved, n: u64, budget_ms: u64) -> u64;

    /// The lease the entry holds; `Lease::default()` until it is brought up to its relation's.
    fn lease(seq: Seq<'_, Self::State>) -> Lease;
    /// Where a sequence with a lease stands: at or below every value its next reservation
    /// can take, stamped with this server's number.
    fn position(self, seq: Seq<'_, Self::State>) -> Value;
    /// Where a sequence not in the cache stands: above the lease its relation holds
    /// (`stored`; `None`: fresh), which the next entry continues above.
    fn stored_position(self, opened: &Opened, stored: Option<i64>) -> Value;
    /// The value `i` of a reservation.
    fn value(self, t: Self::Taken, i: u64) -> Self::Output;
    /// The first value of a reservation, in the order of its kind.
    fn order(self, t: Self::Taken) -> Value;

    /// The fallback of fresh sequence `r`: where the keys of this number already stored in
    /// its columns end (see `fallback`).
    fn look_for_fallback(self, r: &Resolved) -> Option<Self::Floor>;
    /// Under the extension lock, before the relation is read: whether an extension another
    /// backend made meanwhile covers `need` already.
    fn covered(self, seq: Seq<'_, Self::State>, need: Self::Need) -> bool;
    /// Under the extension lock: the entry brought up to the lease its relation holds
    /// (`stored`), or, for a fresh relation, above its fallback (`floor`). Never back.
    fn bring_up(self, seq: Seq<'_, Self::State>, stored: Option<i64>, floor: Option<Self::Floor>);
    /// Under the extension lock: the extension `need` still calls for, and its lease as the
    /// sequence's relation stores it; `None` if another backend made one meanwhile.
    fn plan(
        self,
        seq: Seq<'_, Self::State>,
        r: &Resolved,
        need: Self::Need,
        n: u64,
        now_unix_ms: i64,
    ) -> Option<(Self::Plan, i64)>;
    /// The plan's lease, durable now, published to the entry: values under it may go out.
    fn publish(self, seq: Seq<'_, Self::State>, plan: Self::Plan, now_unix_ms: i64);
}

/// What one attempt came to.
pub enum Attempt<G: Generator> {
    Taken(G::Taken),
    /// The lease must be extended first (or, for gdid, the era moved on).
    Extend(G::Need),
    Refused(G::Refusal),
}

/// Why a reservation, made while the backend is in the cache's phase, did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missed {
    /// The sequence left the cache meanwhile: resolve it again.
    Evicted,
    /// The sequence is fresh, and its fallback must be looked for first, outside the phase:
    /// reading a table may wait for its lock, and a backend waiting inside the phase keeps
    /// every entry evicted meanwhile from reuse, in every database (the cache fills up: 53400).
    Fallback,
}

/// Where a generator's names come from.
#[derive(Clone, Copy)]
pub enum Names<'a> {
    /// The text arguments of a call whose call site caches what they resolve to (`callsite`).
    CallSite(Call<'a>),
    /// Names as they are: a set-returning function's, whose call site the SRF protocol owns.
    Given(&'a [&'a [u8]]),
}

/// A reservation being handed out, a value at a time (one call of a set-returning function
/// per value).
#[derive(Clone, Copy)]
pub struct Reserved<G: Generator> {
    g: G,
    t: G::Taken,
    next: u64,
    n: u64,
}

impl<G: Generator> Iterator for Reserved<G> {
    type Item = G::Output;

    fn next(&mut self) -> Option<G::Output> {
        (self.next < self.n).then(|| {
            self.next += 1;
            self.g.value(self.t, self.next - 1)
        })
    }
}

/// One value of the sequence the call's text arguments name (`snowflake_next`, `gdid_next`,
/// `function` in messages).
#[inline(always)]
pub fn next<G: Generator>(call: Call<'_>, function: &str) -> G::Output {
    without_waiting::<G>(call).unwrap_or_else(|| {
        let r = reserve::<G>(function, Names::CallSite(call), 1);
        r.g.value(r.t, 0)
    })
}

/// `n` values of sequence `names` (`snowflake_next_batch`, `gdid_next_block`), `n` checked
/// first; `what` is what the SQL function calls them.
pub fn many<G: Generator>(function: &str, names: &[&[u8]], n: i32, what: &str) -> Reserved<G> {
    let n = prerequisites::count_argument(n, what);
    reserve::<G>(function, Names::Given(names), n)
}

/// [`reserve`] of one value, if it can be done without an error, a wait, a lease extension
/// or a call into PostgreSQL: the call site knows its sequence, the transaction has published
/// its value in flight, the lease covers the value.
#[inline(always)]
fn without_waiting<G: Generator>(call: Call<'_>) -> Option<G::Output> {
    // SAFETY: a plain read of a backend-global flag. Read-only transactions (and every
    // transaction on a standby) get their ERROR from `reserve`.
    if unsafe { pg_sys::XactReadOnly } || detection::refused(G::WHAT) {
        return None;
    }
    // The transaction's value in flight is published already (see `reserve`). Read first: it
    // calls into PostgreSQL (GetUserId), and nothing else need be kept across that call.
    let at = callsite::published_slot(call, names_of(G::State::KIND))?;
    let (g, check) = G::now(guc::server()?)?;
    let pinned = shmem::fast_slots()?;
    let Attempt::Taken(t) = g.attempt(pinned.slots().seq::<G::State>(at)?, 1) else {
        return None;
    };
    // Out of the phase before the value is made (a gdid's is palloc'ed): it needs no slot.
    drop(pinned);
    // A claim that ended meanwhile: `reserve` says so (the value is dropped).
    check.passes().then(|| g.value(t, 0))
}

/// `n` values of the sequence `names` name.
fn reserve<G: Generator>(function: &str, names: Names<'_>, n: u64) -> Reserved<G> {
    // Whether this server may generate, and under which number: the library not preloaded
    // first (no setting helps then), then read-only (a standby has no claim, and says so with
    // 25006), then the number itself (not set, or a claim not held).
    let server = lookup::server();
    prerequisites::require_may_generate(function, G::WHAT);
    let (g, check) = G::stamp(server);
    let mut looked: Option<(pg_sys::Oid, Option<G::Floor>)> = None;
    loop {
        // The sequence: as the call site resolved it in this transaction, or resolved now
        // (found or made, locked as nextval locks, privileges checked, entered into the cache).
        let r = resolved::<G>(names, &server.layout);
        // In the cache's current phase until `cache` drops: the entry's slot is not reused
        // meanwhile. Entered after resolving, which may wait (see `shmem::refresh_phase`).
        let cache = lookup::cache();
        let Some(seq) = cache.seq::<G::State>(r.at) else {
            continue; // evicted since it was resolved: resolve again
        };
        // The transaction's first value of the sequence is in flight before it is reserved:
        // an entry at or below where the sequence stands, which a watermark that read the
        // sequence before the reservation finds (see `core::inflight`). The slot must still
        // hold the sequence once the entry is visible (`hold` fences): a watermark that found
        // it gone from the cache counted from its relation's lease, and may have missed it.
        let held = Held {
            db: r.key.db,
            relid: r.key.relid,
            kind: G::State::KIND,
        };
        let entry = inflight_xact::hold(seq.at(), held, stands(g, seq));
        if !seq.is_current() {
            continue;
        }
        let fallback = looked
            .filter(|&(relid, _)| relid == r.relid)
            .map(|(_, found)| found);
        match take(g, seq, &r, n, fallback) {
            Ok(t) => {
                // Only now does the entry hold the transaction's first value: a reservation
                // that failed (an ERROR a savepoint caught) leaves it lower, and the fast path
                // out (`inflight_xact::raise`).
                inflight_xact::raise(entry, g.order(t));
                if let Names::CallSite(call) = names {
                    if inflight_xact::published(r.at) {
                        callsite::note_published(call, r.at);
                    }
                }
                // The reservation may have waited: the number must still be this server's.
                check.confirm();
                return Reserved { g, t, next: 0, n };
            }
            Err(Missed::Evicted) => {}
            Err(Missed::Fallback) => {
                drop(cache);
                // For this relation: the name may be dropped and made again meanwhile.
                looked = Some((r.relid, g.look_for_fallback(&r)));
            }
        }
    }
}

/// `n` values from `seq`, the lease extended as needed, waiting briefly while the sequence is
/// too far ahead of the clock. `looked`: the fallback, if it was looked for.
fn take<G: Generator>(
    g: G,
    seq: Seq<'_, G::State>,
    r: &Resolved,
    n: u64,
    looked: Option<Option<G::Floor>>,
) -> Result<G::Taken, Missed> {
    let mut waited_ms = 0;
    loop {
        match g.attempt(seq, n) {
            Attempt::Taken(t) => return Ok(t),
            Attempt::Extend(need) => extend_lease(g, seq, r, need, n, looked)?,
            Attempt::Refused(why) => {
                // Refused because its lease went with it, maybe: resolve again.
                if !seq.is_current() {
                    return Err(Missed::Evicted);
                }
                let budget_ms = MAX_WAIT_MS.saturating_sub(waited_ms);
                let ms = g.wait_or_refuse(why, r, n, budget_ms).max(1);
                // SAFETY: pg_usleep only sleeps; interrupts are checked right after.
                unsafe { pg_sys::pg_usleep(1000 * ms as std::ffi::c_long) };
                pgrx::check_for_interrupts!();
                waited_ms += ms;
            }
        }
    }
}

/// Makes a lease covering `need` durable in the sequence's relation, unless another backend
/// did meanwhile, then publishes it to the entry.
fn extend_lease<G: Generator>(
    g: G,
    seq: Seq<'_, G::State>,
    r: &Resolved,
    need: G::Need,
    n: u64,
    looked: Option<Option<G::Floor>>,
) -> Result<(), Missed> {
    // A fresh sequence (its relation holds no lease yet) starts above the keys of this number
    // already stored in its columns: the fallback must have been looked for.
    let floor = if G::lease(seq) == Lease::default() && durable::read(r.relid).is_none() {
        looked.ok_or(Missed::Fallback)?
    } else {
        None
    };
    // One extension of a sequence at a time; the wait can be cancelled.
    let _lock = durable::lock_extensions(r.key.hash());
    if !seq.is_current() {
        return Err(Missed::Evicted); // its lease went with it
    }
    // Asked before the relation is read: bringing a snowflake entry up to a lease moves its
    // tick to that lease's end, right for a lease it does not know, not for its own.
    if g.covered(seq, need) {
        return Ok(());
    }
    // The relation's lease is never below the entry's: an earlier entry of the sequence
    // (since evicted) or a setval may have moved it on.
    g.bring_up(seq, durable::read(r.relid), floor);
    let now = wallclock::precise_unix_ms();
    let Some((plan, stored)) = g.plan(seq, r, need, n, now) else {
        return Ok(());
    };
    // Durable (the WAL record flushed) before the entry may hand out anything under it.
    durable::extend_lease(G::State::KIND, r.key, stored);
    g.publish(seq, plan, now);
    seq.slot().touch(now);
    Ok(())
}

/// Where a cached sequence stands, for an entry in flight or a watermark: nobody can say for
/// one not yet brought up to its relation's lease (a first use under way, or a lease being
/// made), not even its relation (a fresh sequence continues below its first lease): the
/// lowest value then.
pub fn stands<G: Generator>(g: G, seq: Seq<'_, G::State>) -> Value {
    if G::lease(seq) == Lease::default() {
        return 0;
    }
    g.position(seq)
}

/// The sequence `names` name, from the call site's cache when there is one.
fn resolved<G: Generator>(names: Names<'_>, layout: &Layout) -> Resolved {
    let kind = G::State::KIND;
    let by_name = |names: &[&[u8]]| resolve(name_of(kind, names), layout, Purpose::Generate);
    match names {
        Names::CallSite(call) => callsite::resolved(
            call,
            names_of(kind),
            |at| lookup::cache().seq::<G::State>(at).is_some(),
            by_name,
        ),
        Names::Given(names) => by_name(names),
    }
}

/// How many names a sequence of `kind` has.
#[inline(always)]
fn names_of(kind: Kind) -> usize {
    match kind {
        Kind::Snowflake => 1,
        Kind::Gdid => 2,
    }
}

fn name_of<'a>(kind: Kind, names: &[&'a [u8]]) -> SequenceName<'a> {
    match kind {
        Kind::Snowflake => SequenceName::Snowflake(names[0]),
        Kind::Gdid => SequenceName::Gdid {
            scope: names[0],
            sequence: names[1],
        },
    }
}

/// `the snowflake sequence "name"` of a resolved sequence, for messages.
fn described(kind: &str, r: &Resolved) -> String {
    format!(
        "{kind} sequence \"{}\"",
        DbText(&catalog::relation_name(r.relid).unwrap_or_default())
    )
}

// ---------------------------------------------------------------------------------------------
// Snowflake IDs: ticks under the clock's bounds

/// Snowflake IDs of this server: its layout and node number, and how far ahead of the wall
/// clock its sequences may run now.
#[derive(Clone, Copy)]
pub struct Snowflakes {
    layout: &'static Layout,
    node: u32,
    max_ahead_ms: u64,
}

impl Generator for Snowflakes {
    type State = SnowflakeState;
    type Taken = Reservation;
    /// The last tick to cover, and the bounds it was seen under.
    type Need = (u64, Bounds);
    type Refusal = (Miss, Bounds);
    /// The first millisecond above the stored keys.
    type Floor = u64;
    /// The end of the lease to make, in milliseconds since the epoch.
    type Plan = u64;
    type Output = i64;
    const WHAT: What = What::Node;

    #[inline(always)]
    fn now(server: &'static Server) -> Option<(Self, Check)> {
        let (node, check) = node::node_now(server)?;
        Some((Snowflakes::of(server, node), check))
    }

    fn stamp(server: &'static Server) -> (Self, Check) {
        let (node, check) = node::node_id(server);
        (Snowflakes::of(server, node), check)
    }

    #[inline(always)]
    fn attempt(self, seq: SnowflakeSeq<'_>, n: u64) -> Attempt<Self> {
        let bounds = seq.bounds(self.layout, self.max_ahead_ms);
        match seq.try_reserve(self.layout, n, &bounds) {
            Ok(t) => Attempt::Taken(t),
            Err(Miss::Refused(Refusal::LeaseNeeded { last })) => Attempt::Extend((last, bounds)),
            Err(why) => Attempt::Refused((why, bounds)),
        }
    }

    fn wait_or_refuse(self, refused: (Miss, Bounds), r: &Resolved, n: u64, budget_ms: u64) -> u64 {
        let (why, bounds) = refused;
        if let Miss::Refused(refusal) = why {
            if let Some(ms) = clock::wait_before_retry(refusal, &bounds, budget_ms) {
                return ms;
            }
        }
        let id = described("snowflake", r);
        match why {
            Miss::ClockOutsideLayout { unix_ms } => error(
                Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
                format!(
                    "the system clock ({}) is outside the range of snowflake IDs",
                    format_utc(unix_ms)
                ),
            )
            .detail(layout_range(self.layout)),
            Miss::Refused(Refusal::AheadOfClock { ahead_ms }) => error(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!("{id} is too far ahead of the wall clock"),
            )
            .detail(format!(
                "{n} more ID(s) would put it {ahead_ms} ms ahead; snowflake.max_clock_ahead is {} ms.",
                bounds.max_ahead_ms
            ))
            .hint(
                "Generate fewer IDs per millisecond or in smaller batches, or raise \
                 snowflake.max_clock_ahead. If the system clock was set back, wait for it to catch up.",
            ),
            Miss::Refused(Refusal::BatchTooLarge { span_ms }) => error(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!("a batch of {n} snowflake IDs spans more milliseconds than snowflake.max_clock_ahead allows"),
            )
            .detail(format!(
                "{} IDs fit in a millisecond, so the batch spans {span_ms} ms; snowflake.max_clock_ahead is {} ms.",
                1u64 << bounds.counter_bits,
                bounds.max_ahead_ms
            ))
            .hint("Request smaller batches, or raise snowflake.max_clock_ahead."),
            Miss::Refused(Refusal::PastLastTick) => error(
                Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
                format!("{id} has reached the end of its time range"),
            )
            .hint("Choose a later snowflake.epoch for new sequences."),
            Miss::Refused(Refusal::LeaseNeeded { .. }) => {
                unreachable!("an attempt asks for the extension itself")
            }
        }
        .raise()
    }

    fn lease(seq: SnowflakeSeq<'_>) -> Lease {
        seq.lease()
    }

    /// Of a later tick than its last, and of this node: a lower node would put the watermark
    /// (or an entry in flight) below the last ID made, which nothing would move past while
    /// the sequence is idle.
    fn position(self, seq: SnowflakeSeq<'_>) -> Value {
        id_or_max(&seq.layout(), seq.next_tick_floor(), self.node)
    }

    fn stored_position(self, opened: &Opened, stored: Option<i64>) -> Value {
        let layout = Layout::own(opened.layout.node_bits, opened.layout.epoch_ms);
        stored.map_or(0, |v| {
            let end_ms = lease::snowflake_from_value(layout.epoch_ms, v);
            id_or_max(
                &layout,
                end_ms.saturating_mul(1 << layout.counter_bits),
                self.node,
            )
        })
    }

    #[inline(always)]
    fn value(self, t: Reservation, i: u64) -> i64 {
        self.layout.id_of_tick(t.first + i, self.node) as i64
    }

    fn order(self, t: Reservation) -> Value {
        Value::from(self.layout.id_of_tick(t.first, self.node))
    }

    fn look_for_fallback(self, r: &Resolved) -> Option<u64> {
        let now = self
            .layout
            .ms_since_epoch(wallclock::precise_unix_ms())
            .unwrap_or(0);
        fallback::snowflake_floor(
            r.relid,
            self.layout,
            self.node,
            now.saturating_sub(FALLBACK_MARGIN_MS),
        )
    }

    fn covered(self, seq: SnowflakeSeq<'_>, (last, _): (u64, Bounds)) -> bool {
        !seq.needs_lease_for(last)
    }

    fn bring_up(self, seq: SnowflakeSeq<'_>, stored: Option<i64>, floor: Option<u64>) {
        match stored {
            Some(v) => seq.restore(Lease {
                era: 0,
                end: lease::snowflake_from_value(self.layout.epoch_ms, v),
            }),
            None => {
                if let Some(ms) = floor {
                    seq.raise_to((ms << self.layout.counter_bits).saturating_sub(1));
                }
            }
        }
    }

    fn plan(
        self,
        seq: SnowflakeSeq<'_>,
        _: &Resolved,
        (last, bounds): (u64, Bounds),
        _: u64,
        now_unix_ms: i64,
    ) -> Option<(u64, i64)> {
        // Brought up to its relation's lease, it may stand above `last` now.
        let last = last.max(seq.last_tick() + 1);
        let now_ms = self
            .layout
            .ms_since_epoch(now_unix_ms)
            .unwrap_or(last >> self.layout.counter_bits);
        let end_ms = seq.lease_target_ms(last, now_ms, &bounds);
        Some((
            end_ms,
            lease::snowflake_to_value(self.layout.epoch_ms, end_ms),
        ))
    }

    fn publish(self, seq: SnowflakeSeq<'_>, end_ms: u64, _: i64) {
        seq.publish_lease(end_ms);
    }
}

impl Snowflakes {
    #[inline(always)]
    fn of(server: &'static Server, node: u32) -> Snowflakes {
        Snowflakes {
            layout: &server.layout,
            node,
            max_ahead_ms: node::max_clock_ahead_ms(server),
        }
    }
}

/// The ID of tick `tick` under `node`, or the largest bigint past the layout's end.
fn id_or_max(layout: &Layout, tick: u64, node: u32) -> Value {
    if tick > layout.max_tick() || node > layout.max_node() {
        return Value::from(i64::MAX as u64);
    }
    Value::from(layout.id_of_tick(tick, node))
}

/// The DETAIL of every "outside the layout's time range" error.
pub fn layout_range(layout: &Layout) -> String {
    format!(
        "IDs of this layout cover {} to {}.",
        format_utc(layout.epoch_ms),
        format_utc(layout.epoch_ms + layout.max_ms() as i64)
    )
}

// ---------------------------------------------------------------------------------------------
// gdids: counters of an era

/// gdids of this server: its authority, and for a claimed one the era of the claim.
///
/// Under a claimed authority every gdid is of the claim's era: the registry gives each new
/// holder of an authority an era above every era earlier holders used, so that this server's
/// counters cannot meet theirs. A sequence still in an earlier era moves on to the claim's;
/// one past it (its era's counters used up) cannot go on under this claim.
#[derive(Clone, Copy)]
pub struct Gdids {
    authority: u8,
    claimed_era: Option<u32>,
}

/// What a gdid sequence needs before it can take counters.
#[derive(Clone, Copy)]
pub enum GdidNeed {
    /// A longer lease, or the next era (see `Need`).
    Counters(Need),
    /// The claim's era, to move into: the counters just taken are skipped.
    ClaimEra(u32),
}

impl Generator for Gdids {
    type State = GdidState;
    type Taken = Taken;
    type Need = GdidNeed;
    /// The era the sequence is in, past the claim's.
    type Refusal = u32;
    /// The lease that covers the stored gdids.
    type Floor = Lease;
    type Plan = Move;
    type Output = Gdid;
    const WHAT: What = What::Authority;

    #[inline(always)]
    fn now(server: &'static Server) -> Option<(Self, Check)> {
        let (authority, claimed_era, check) = node::authority_now_on(server)?;
        Some((
            Gdids {
                authority,
                claimed_era,
            },
            check,
        ))
    }

    fn stamp(_: &'static Server) -> (Self, Check) {
        let (authority, claimed_era, check) = node::gdid_authority();
        (
            Gdids {
                authority,
                claimed_era,
            },
            check,
        )
    }

    #[inline(always)]
    fn attempt(self, seq: GdidSeq<'_>, n: u64) -> Attempt<Self> {
        match seq.try_take(n) {
            Err(need) => Attempt::Extend(GdidNeed::Counters(need)),
            Ok(t) => match self.claimed_era {
                None => Attempt::Taken(t),
                Some(era) if t.era == era => Attempt::Taken(t),
                Some(era) if t.era < era => Attempt::Extend(GdidNeed::ClaimEra(era)),
                Some(_) => Attempt::Refused(t.era),
            },
        }
    }

    fn wait_or_refuse(self, era: u32, r: &Resolved, _: u64, _: u64) -> u64 {
        let claimed = self.claimed_era.unwrap_or_default();
        error(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!(
                "{} is in era {era}, past era {claimed} of this server's claim of authority {}",
                described("gdid", r),
                self.authority
            ),
        )
        .detail(
            "Under a claimed authority every gdid is of the claim's era: a later one could meet \
             the gdids of a later holder of the authority. The sequence used up the claim's era, \
             or reached a later one before (under another claim, registry or group).",
        )
        .hint(format!(
            "Each new claim (SELECT snowflake_node_detach(); SELECT snowflake_node_attach();) \
             is in a later era of the group; era {era} or later is needed."
        ))
        .raise()
    }

    fn lease(seq: GdidSeq<'_>) -> Lease {
        seq.lease()
    }

    /// Under the authority its gdids carry, as for a snowflake sequence's node (the writers'
    /// authority: README, the authority must be the server's, not set per role or session).
    fn position(self, seq: GdidSeq<'_>) -> Value {
        let (era, counter) = seq.state().floor();
        Gdid::from_parts(era, self.authority, counter).order_value()
    }

    fn stored_position(self, _: &Opened, stored: Option<i64>) -> Value {
        stored.and_then(lease::gdid_from_value).map_or(0, |l| {
            Gdid::from_parts(l.era, self.authority, l.end.min(MAX_COUNTER)).order_value()
        })
    }

    #[inline(always)]
    fn value(self, t: Taken, i: u64) -> Gdid {
        Gdid::from_parts(t.era, self.authority, t.first + i)
    }

    fn order(self, t: Taken) -> Value {
        self.value(t, 0).order_value()
    }

    fn look_for_fallback(self, r: &Resolved) -> Option<Lease> {
        fallback::gdid_floor(r.relid, self.authority)
    }

    /// Asked by `plan`, once the relation is read.
    fn covered(self, _: GdidSeq<'_>, _: GdidNeed) -> bool {
        false
    }

    fn bring_up(self, seq: GdidSeq<'_>, stored: Option<i64>, floor: Option<Lease>) {
        match stored {
            Some(v) => load_gdid(seq, v),
            None => {
                if let Some(f) = floor {
                    seq.raise_position(f);
                }
            }
        }
    }

    fn plan(
        self,
        seq: GdidSeq<'_>,
        r: &Resolved,
        need: GdidNeed,
        n: u64,
        now_unix_ms: i64,
    ) -> Option<(Move, i64)> {
        match need {
            GdidNeed::ClaimEra(era) => {
                // Nothing to make durable: the next attempt takes in the claim's era, and
                // extends its lease.
                seq.raise_position(Lease { era, end: 1 });
                None
            }
            GdidNeed::Counters(need) => match seq.plan(need, n, now_unix_ms) {
                Plan::Retry => None,
                Plan::Exhausted => error(
                    Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                    format!("{} has used up every era", described("gdid", r)),
                )
                .raise(),
                Plan::Move(m) => Some((m, lease::gdid_to_value(m.lease))),
            },
        }
    }

    fn publish(self, seq: GdidSeq<'_>, m: Move, now_unix_ms: i64) {
        seq.publish(m, now_unix_ms);
    }
}

/// Brings a gdid entry up to the lease its relation stores, if that is more than the entry
/// knows. Compared as stored values: a lease of era 1 or later is stored rounded up (see
/// `lease`), and the entry's own last lease must not read as a move.
fn load_gdid(seq: GdidSeq<'_>, stored: i64) {
    if stored > lease::gdid_to_value(seq.lease()) {
        if let Some(l) = lease::gdid_from_value(stored) {
            seq.restore(l);
        }
    }
}

/// `gdid_advance`: moves the gdid sequence `name` names on so that its next gdid is later
/// than `past`, as setval moves a sequence: under the extension lock, durable before the
/// entry has it.
pub fn advance_gdid(name: SequenceName<'_>, past: Gdid) {
    let server = lookup::server();
    loop {
        let r = resolve(name, &server.layout, Purpose::Advance);
        let cache = lookup::cache();
        let Some(seq) = cache.seq::<GdidState>(r.at) else {
            continue; // evicted meanwhile
        };
        let _lock = durable::lock_extensions(r.key.hash());
        if !seq.is_current() {
            continue;
        }
        if let Some(stored) = durable::read(r.relid) {
            load_gdid(seq, stored);
        }
        if let Some(m) = seq.plan_advance(past.era, past.counter()) {
            let now = wallclock::precise_unix_ms();
            durable::extend_lease(Kind::Gdid, r.key, lease::gdid_to_value(m.lease));
            seq.publish(m, now);
        }
        return;
    }
}
