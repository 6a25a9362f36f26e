//! SQL-facing snowflake functions. Thin: arguments in, pure core, errors out. Each is declared
//! once, below (`sql_functions!`); the rest of their SQL (the domain, views, comments) is in
//! snowflake.sql.

use pgrx::pg_sys::{self, Datum};

use crate::core::identity::{Kind, SequenceName};
use crate::core::inflight::{Held, Value};
use crate::core::lease::{self, Lease};
use crate::core::sightings::What;
use crate::core::snowflake::clock::{self, Bounds, Refusal, Reservation};
use crate::core::snowflake::epoch::{format_utc, pg_timestamp_to_unix_ms, unix_ms_to_pg_timestamp};
use crate::core::snowflake::layout::{preset, preset_names, Layout, Parts};
use crate::core::snowflake::snowflake_slot::{Miss, SnowflakeSeq, SnowflakeState};
use crate::core::wallclock;
use crate::pg::errors::{error, Clipped, Code};
use crate::pg::fmgr::{self, Call};
use crate::sequences::fallback::{self, fallback_of, Missed};
use crate::sequences::resolve::{resolve, Purpose, Resolved};
use crate::sequences::{callsite, catalog, durable, inflight, lifecycle, privileges};
use crate::sql::sqlfn::sql_functions;
use crate::sql::watermark;
use crate::{
    detection, guc, node, pg::errors, pg::shmem, sequences::lookup, sequences::prerequisites,
};

/// Longest wait for the wall clock to catch up before refusing with an error.
const MAX_WAIT_MS: u64 = 100;

/// How far before the clock the fallback of a fresh sequence looks for stored keys: a fresh
/// sequence starts at the clock, so older keys cannot meet its IDs, and a second covers a
/// clock that steps back a little between the search and the first ID.
const FALLBACK_MARGIN_MS: u64 = 1_000;

sql_functions! {
    /// `snowflake_next(seq)`. The common case, a call site that has already resolved its name
    /// and a reservation the bounds allow at once, is a few loads and one CAS; everything else
    /// (first call, errors, waiting, lease extensions) takes the slow path.
    fn snowflake_next(seq: text_datum) -> snowflake [volatile parallel_unsafe] |call| {
        next_without_waiting(call).unwrap_or_else(|| next(call))
    }

    /// `snowflake_next_batch(seq, n)`: one reservation, then one row per call.
    fn snowflake_next_batch(seq: text, n: integer) -> setof snowflake
        [volatile parallel_unsafe rows(100)] |call| {
        next_batch(call, seq, n)
    }

    /// The millisecond in which an ID was made.
    fn snowflake_timestamp(id: bigint) -> timestamptz [stable parallel_safe] |_| {
        timestamp_of(own_layout(), id)
    }

    fn snowflake_node(id: bigint) -> integer [stable parallel_safe] |_| {
        parts(own_layout(), id).node as i32
    }

    fn snowflake_counter(id: bigint) -> integer [stable parallel_safe] |_| {
        parts(own_layout(), id).counter as i32
    }

    /// The smallest ID of any node in the millisecond of `ts`.
    fn snowflake_from_timestamp(ts: timestamptz) -> snowflake [stable parallel_safe] |_| {
        min_id_of(own_layout(), ts)
    }

    fn snowflake_timestamp_in_layout as snowflake_timestamp(id: bigint, layout: text)
        -> timestamptz [immutable parallel_safe] |_| {
        timestamp_of(named_layout(layout), id)
    }

    fn snowflake_node_in_layout as snowflake_node(id: bigint, layout: text) -> integer
        [immutable parallel_safe] |_| {
        parts(named_layout(layout), id).node as i32
    }

    fn snowflake_counter_in_layout as snowflake_counter(id: bigint, layout: text) -> integer
        [immutable parallel_safe] |_| {
        parts(named_layout(layout), id).counter as i32
    }

    fn snowflake_from_timestamp_in_layout as snowflake_from_timestamp(ts: timestamptz, layout: text)
        -> bigint [immutable parallel_safe] |_| {
        min_id_of(named_layout(layout), ts)
    }

    /// The schema of this database's snowflake sequences (`snowflake`, or `snowflake_seq`, see
    /// `Kind::schema_names`); NULL without one.
    fn snowflake_sequence_schema() -> regnamespace [stable parallel_safe] |_| {
        catalog::existing_schema(Kind::Snowflake).map(|s| s.oid)
    }

    /// `DROP SEQUENCE snowflake.seq`, as the caller (its owner may): refused while a DEFAULT
    /// uses it. False if there is no such sequence.
    fn snowflake_drop_sequence(seq: text) -> boolean [volatile parallel_unsafe] |_| {
        lifecycle::drop_sequence(SequenceName::Snowflake(seq))
    }

    /// The trigger that counts the node numbers and authorities of values logical
    /// replication inserts into generating columns (see `detection`).
    fn snowflake_arrival_trigger() -> trigger [volatile parallel_unsafe] |call| {
        detection::arrivals::fired(call)
    }

    /// Gives every table with a generating column the trigger above; how many got one.
    fn snowflake_watch_tables() -> integer [volatile parallel_unsafe] |_| {
        detection::watch::watch_all()
    }

    /// Rows of the snowflake_node_conflicts view: what logical replication has shown this
    /// server.
    fn snowflake_node_conflicts_rows() -> table(
        kind: text, node_or_authority: integer, origins: text_array, first_seen: timestamptz,
        last_seen: timestamptz, rows_seen: bigint
    ) [volatile parallel_safe] |_, emit| {
        conflict_rows(emit)
    }

    /// The row of the snowflake_sequences view for sequence `seq`: the layout its definition
    /// records, its lease, and what the cache knows of it (NULL where it is not cached, or
    /// where the caller may not read the sequence).
    fn snowflake_sequence_state(seq: regclass) -> table(
        layout: text, epoch: timestamptz, last_id: bigint,
        last_timestamp: timestamptz, issued: bigint, counter_exhausted: bigint,
        clock_ahead: interval, clock_regressions: bigint, lease_until: timestamptz,
        lease_extensions: bigint
    ) [volatile parallel_unsafe] |_, emit| {
        sequence_state(seq, emit)
    }
}

// ---------------------------------------------------------------------------------------------
// Generators

/// The ID, if it can be made without an error, a wait, a lease extension, or a call into
/// PostgreSQL.
#[inline(always)]
fn next_without_waiting(call: Call<'_>) -> Option<i64> {
    // SAFETY: a plain read of a backend-global flag. Read-only transactions (and every
    // transaction on a standby) get their ERROR from the slow path.
    if unsafe { pg_sys::XactReadOnly } || detection::refused(What::Node) {
        return None;
    }
    let (server, cache) = (guc::server()?, shmem::cache()?);
    let (node, check) = node::node_now(server)?;
    let at = callsite::cached_slot::<1>(call)?;
    // The transaction's first ID of the sequence is published as in flight first.
    if !inflight::published(at) {
        return None;
    }
    let seq = cache.seq::<SnowflakeState>(at)?;
    let bounds = seq.bounds(&server.layout, node::max_clock_ahead_ms(server));
    let r = seq.try_reserve(&server.layout, 1, &bounds).ok()?;
    // A claim that ended meanwhile: the slow path says so (the tick is dropped).
    check
        .passes()
        .then(|| server.layout.id_of_tick(r.first, node) as i64)
}

/// Resolves sequence `name` of the current database for generating.
fn resolved(name: &[u8], layout: &Layout) -> Resolved {
    resolve(SequenceName::Snowflake(name), layout, Purpose::Generate)
}

fn next(call: Call<'_>) -> i64 {
    let server = lookup::server();
    // Read-only first: a standby has no claim, and says so with 25006.
    prerequisites::require_may_generate("snowflake_next()", What::Node);
    let (node, check) = node::node_id(server);
    let mut looked = None;
    loop {
        let r = callsite::resolved(
            call,
            |at| lookup::cache().seq::<SnowflakeState>(at).is_some(),
            |[name]| resolved(name, &server.layout),
        );
        // Pinned after resolving, which may wait: see `shmem::refresh_phase`.
        let cache = lookup::cache();
        match cache
            .seq::<SnowflakeState>(r.at)
            .ok_or(Missed::Evicted)
            .and_then(|seq| in_flight(&server.layout, seq, &r, 1, fallback_of(looked, &r), node))
        {
            Ok(t) => {
                // The reservation may have waited: the number must still be this server's.
                check.confirm();
                return server.layout.id_of_tick(t.first, node) as i64;
            }
            // Evicted from the cache since the call site resolved it: resolve again.
            Err(Missed::Evicted) => {}
            Err(Missed::Fallback) => {
                drop(cache);
                looked = Some((r.relid, look_for_fallback(&server.layout, node, &r)));
            }
        }
    }
}

/// The first millisecond above this node's stored keys in the columns of fresh sequence `r`
/// (see `fallback`), looked for from a second before the clock; outside the cache's phase.
fn look_for_fallback(layout: &Layout, node: u32, r: &Resolved) -> Option<u64> {
    let now = layout
        .ms_since_epoch(wallclock::precise_unix_ms())
        .unwrap_or(0);
    fallback::snowflake_floor(
        r.relid,
        layout,
        node,
        now.saturating_sub(FALLBACK_MARGIN_MS),
    )
}

/// The state of a batch being returned: the ticks still to hand out.
#[derive(Clone, Copy)]
struct Batch {
    next: u64,
    last: u64,
    node: u32,
    layout: Layout,
}

fn next_batch(call: Call<'_>, name: &[u8], n: i32) -> Datum {
    fmgr::rows_per_call(
        call,
        || {
            let n = prerequisites::count_argument(n, "batch");
            let server = lookup::server();
            prerequisites::require_may_generate("snowflake_next_batch()", What::Node);
            let (node, check) = node::node_id(server);
            let mut looked = None;
            let t = loop {
                let r = resolved(name, &server.layout);
                let cache = lookup::cache();
                match cache
                    .seq::<SnowflakeState>(r.at)
                    .ok_or(Missed::Evicted)
                    .and_then(|seq| {
                        in_flight(&server.layout, seq, &r, n, fallback_of(looked, &r), node)
                    }) {
                    Ok(t) => break t,
                    // Evicted meanwhile: resolve again.
                    Err(Missed::Evicted) => {}
                    Err(Missed::Fallback) => {
                        drop(cache);
                        looked = Some((r.relid, look_for_fallback(&server.layout, node, &r)));
                    }
                }
            };
            check.confirm();
            Batch {
                next: t.first,
                last: t.last,
                node,
                layout: server.layout,
            }
        },
        |b| {
            (b.next <= b.last).then(|| {
                let id = b.layout.id_of_tick(b.next, b.node) as i64;
                b.next += 1;
                Datum::from(id)
            })
        },
    )
}

/// [`reserve`], the transaction's values of the sequence published as in flight first, for
/// the watermarks (see `sequences::inflight`), under the node the IDs will carry, as the
/// watermark counts.
fn in_flight(
    layout: &Layout,
    seq: SnowflakeSeq<'_>,
    r: &Resolved,
    n: u64,
    looked: Option<Option<u64>>,
    node: u32,
) -> Result<Reservation, Missed> {
    let held = Held {
        db: r.key.db,
        relid: r.key.relid,
        kind: Kind::Snowflake,
    };
    inflight::reserving(
        seq.at(),
        held,
        watermark::snowflake_floor(&seq, node),
        || seq.is_current(),
        || reserve(layout, seq, r, n, looked),
        |t| Value::from(layout.id_of_tick(t.first, node)),
    )
}

/// Reserves `n` ticks, extending the lease when needed and waiting briefly when the sequence
/// has run too far ahead of the clock. `looked`: the fallback, once looked for (see
/// [`Missed::Fallback`]).
fn reserve(
    layout: &Layout,
    seq: SnowflakeSeq<'_>,
    r: &Resolved,
    n: u64,
    looked: Option<Option<u64>>,
) -> Result<Reservation, Missed> {
    let max_ahead_ms = node::max_clock_ahead_ms(lookup::server());
    let mut waited_ms = 0;
    loop {
        let bounds = seq.bounds(layout, max_ahead_ms);
        let refusal = match seq.try_reserve(layout, n, &bounds) {
            Ok(res) => return Ok(res),
            Err(Miss::Refused(Refusal::LeaseNeeded { last })) => {
                extend_lease(layout, seq, r, &bounds, last, looked)?;
                continue;
            }
            Err(Miss::Refused(refusal)) => refusal,
            Err(Miss::ClockOutsideLayout { unix_ms }) => error(
                Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
                format!(
                    "the system clock ({}) is outside the range of snowflake IDs",
                    format_utc(unix_ms)
                ),
            )
            .detail(layout_range(layout))
            .raise(),
        };
        if !seq.is_current() {
            return Err(Missed::Evicted); // refused because its lease is gone with it
        }
        match clock::wait_before_retry(refusal, &bounds, MAX_WAIT_MS - waited_ms) {
            Some(ms) => {
                let ms = ms.max(1);
                // SAFETY: pg_usleep only sleeps; interrupts are checked right after.
                unsafe { pg_sys::pg_usleep(1000 * ms as std::ffi::c_long) };
                pgrx::check_for_interrupts!();
                waited_ms += ms;
            }
            None => refuse(refusal, &bounds, r, n),
        }
    }
}

/// Makes a lease covering tick `last` durable in the sequence's relation, unless another
/// backend did meanwhile, then publishes it. A fresh sequence (its relation holds no lease
/// yet) starts above the keys of this node already stored in its columns: `looked`, the
/// fallback, must have been looked for (see [`Missed::Fallback`]).
fn extend_lease(
    layout: &Layout,
    seq: SnowflakeSeq<'_>,
    r: &Resolved,
    bounds: &Bounds,
    last: u64,
    looked: Option<Option<u64>>,
) -> Result<(), Missed> {
    let floor = if seq.lease().end == 0 && durable::read(r.relid).is_none() {
        looked.ok_or(Missed::Fallback)?
    } else {
        None
    };
    let _lock = durable::lock_extensions(r.key.hash());
    if !seq.is_current() {
        return Err(Missed::Evicted);
    }
    if !seq.needs_lease_for(last) {
        return Ok(());
    }
    // The relation's lease is never below this entry's: an earlier entry of the sequence
    // (since evicted) or a setval may have moved it on.
    match durable::read(r.relid) {
        Some(v) => seq.restore(Lease {
            era: 0,
            end: lease::snowflake_from_value(layout.epoch_ms, v),
        }),
        None => {
            if let Some(ms) = floor {
                seq.raise_to((ms << layout.counter_bits).saturating_sub(1));
            }
        }
    }
    let last = last.max(seq.last_tick() + 1);
    let now_unix_ms = wallclock::precise_unix_ms();
    let now_ms = layout
        .ms_since_epoch(now_unix_ms)
        .unwrap_or(last >> layout.counter_bits);
    let end = seq.lease_target_ms(last, now_ms, bounds);
    durable::extend_lease(
        Kind::Snowflake,
        r.key,
        lease::snowflake_to_value(layout.epoch_ms, end),
    );
    seq.publish_lease(end);
    seq.slot().touch(now_unix_ms);
    Ok(())
}

fn refuse(refusal: Refusal, bounds: &Bounds, r: &Resolved, n: u64) -> ! {
    let id = format!(
        "snowflake sequence \"{}\"",
        crate::core::dbtext::DbText(&catalog::relation_name(r.relid).unwrap_or_default())
    );
    match refusal {
        Refusal::AheadOfClock { ahead_ms } => error(
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
        )
        .raise(),
        Refusal::BatchTooLarge { span_ms } => error(
            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!("a batch of {n} snowflake IDs spans more milliseconds than snowflake.max_clock_ahead allows"),
        )
        .detail(format!(
            "{} IDs fit in a millisecond, so the batch spans {span_ms} ms; snowflake.max_clock_ahead is {} ms.",
            1u64 << bounds.counter_bits,
            bounds.max_ahead_ms
        ))
        .hint("Request smaller batches, or raise snowflake.max_clock_ahead.")
        .raise(),
        Refusal::PastLastTick => error(
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!("{id} has reached the end of its time range"),
        )
        .hint("Choose a later snowflake.epoch for new sequences.")
        .raise(),
        Refusal::LeaseNeeded { .. } => unreachable!("reserve extends the lease itself"),
    }
}

// ---------------------------------------------------------------------------------------------
// Decoders

/// The DETAIL of every "outside the layout's time range" error.
pub(crate) fn layout_range(layout: &Layout) -> String {
    format!(
        "IDs of this layout cover {} to {}.",
        format_utc(layout.epoch_ms),
        format_utc(layout.epoch_ms + layout.max_ms() as i64)
    )
}

/// The server's layout; needs the library preloaded because the layout settings do.
pub(crate) fn own_layout() -> &'static Layout {
    &lookup::server().layout
}

pub(crate) fn named_layout(name: &[u8]) -> &'static Layout {
    match preset(name) {
        Some(p) => &p.layout,
        None => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("unknown snowflake layout \"{}\"", Clipped(name)),
        )
        .hint(format!("Known layouts: {}.", preset_names()))
        .raise(),
    }
}

pub(crate) fn parts(layout: &Layout, id: i64) -> Parts {
    layout.decode(id as u64).unwrap_or_else(|_| {
        error(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{id} is not a valid snowflake ID"),
        )
        .detail(format!(
            "IDs of this layout are below 2^{}; a negative bigint has the sign bit set.",
            layout.total_bits()
        ))
        .raise()
    })
}

/// A timestamptz of a Unix time. Every millisecond a layout holds (epochs 1970..9999, at most
/// 2^42 ms on) is well within timestamptz's range, which ends in 294276 AD.
fn timestamptz(unix_ms: i64) -> i64 {
    unix_ms_to_pg_timestamp(unix_ms)
}

fn timestamp_of(layout: &Layout, id: i64) -> i64 {
    timestamptz(layout.unix_ms(parts(layout, id)))
}

fn min_id_of(layout: &Layout, pg_timestamp: i64) -> i64 {
    let unix_ms = pg_timestamp_to_unix_ms(pg_timestamp);
    let id = layout.min_id_at(unix_ms).unwrap_or_else(|_| {
        error(
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            "timestamp out of range for snowflake IDs",
        )
        .detail(layout_range(layout))
        .raise()
    });
    id as i64
}

// ---------------------------------------------------------------------------------------------
// Views

fn conflict_rows(emit: &mut dyn FnMut(snowflake_node_conflicts_rows::Row)) {
    let Some(sightings) = shmem::sightings() else {
        errors::not_preloaded()
    };
    for c in sightings.conflicts(detection::own()) {
        let kind: &[u8] = match c.what {
            What::Node => b"snowflake node",
            What::Authority => b"gdid authority",
        };
        emit((
            Some(kind.to_vec()),
            Some(i32::from(c.value)),
            Some(
                c.origins
                    .iter()
                    .map(|&o| detection::describe_origin(o))
                    .collect(),
            ),
            Some(timestamptz(c.first_ms)),
            Some(timestamptz(c.last_ms)),
            Some(c.rows as i64),
        ));
    }
}

fn sequence_state(seq: pg_sys::Oid, emit: &mut dyn FnMut(snowflake_sequence_state::Row)) {
    durable::ShareLocked::for_one_row(seq, |locked| state_row(seq, locked, emit));
}

/// The row of sequence `seq`, its lease read if `locked` (else NULL: a transaction that drops
/// or renames it holds it).
fn state_row(
    seq: pg_sys::Oid,
    locked: Option<&durable::ShareLocked>,
    emit: &mut dyn FnMut(snowflake_sequence_state::Row),
) {
    let Some(Ok(opened)) = catalog::open(Kind::Snowflake, seq) else {
        return;
    };
    let layout = Layout::own(opened.layout.node_bits, opened.layout.epoch_ms);
    let layout_text = Some(
        format!(
            "{}/{}/{}",
            layout.time_bits, layout.node_bits, layout.counter_bits
        )
        .into_bytes(),
    );
    let epoch = Some(timestamptz(layout.epoch_ms));
    // SAFETY: a plain read of the current user.
    if !privileges::may_read(seq, unsafe { pg_sys::GetUserId() }) {
        emit((
            layout_text,
            epoch,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        ));
        return;
    }
    let lease_until = locked
        .and_then(|l| l.read().ok())
        .flatten()
        .map(timestamptz);
    // Without the library preloaded there is no cache: the catalog's part only.
    let node = guc::server().and_then(node::node_now).map(|(n, _)| n);
    let now_ms = wallclock::precise_unix_ms();
    let key = crate::core::cache::Key {
        db: lookup::current_db(),
        relid: seq.to_u32(),
        filenode: opened.filenode,
    };
    // Pinned while the stats are read: the slot is not reused meanwhile.
    let pinned = shmem::cache();
    let cached = pinned.as_ref().and_then(|cache| {
        cache
            .find(key)
            .and_then(|at| cache.seq::<SnowflakeState>(at))
    });
    let Some(s) = cached.map(|c| c.stats()) else {
        emit((
            layout_text,
            epoch,
            None,
            None,
            None,
            None,
            None,
            None,
            lease_until,
            None,
        ));
        return;
    };
    let ms_of = |tick: u64| layout.epoch_ms + (tick >> layout.counter_bits) as i64;
    // Tick 0 means nothing handed out yet.
    let last = (s.last_tick != 0).then_some(s.last_tick);
    emit((
        layout_text,
        epoch,
        last.zip(node).map(|(t, n)| layout.id_of_tick(t, n) as i64),
        last.map(|t| timestamptz(ms_of(t))),
        Some(s.issued as i64),
        Some(s.counter_exhausted as i64),
        Some(last.map_or(0, |t| (ms_of(t) - now_ms).max(0))),
        Some(s.clock_regressions as i64),
        lease_until,
        Some(s.lease_extensions as i64),
    ));
}
