//! SQL-facing snowflake functions. Thin: arguments in, pure core, errors out. Each is declared
//! once, below (`sql_functions!`); the rest of their SQL (the domain, views, comments) is in
//! api.sql.

use pgrx::pg_sys::{self, Datum};

use super::clock::{self, Bounds, Refusal, Reservation};
use super::epoch::{format_utc, pg_timestamp_to_unix_ms, unix_ms_to_pg_timestamp};
use super::handle::{lease_target_ms, Miss, SnowflakeSeq, SnowflakeState};
use super::layout::{preset, preset_names, Layout, Parts};
use crate::callsite;
use crate::detection::sightings::What;
use crate::durable::lease::LeaseLock;
use crate::durable::record::Lease;
use crate::errors::{error, Clipped, Code};
use crate::fmgr::{self, Call};
use crate::identity::Kind;
use crate::identity::SequenceName;
use crate::sqlfn::sql_functions;
use crate::wallclock;
use crate::{detection, dropping, errors, guc, lookup, prerequisites, shmem};

/// Longest wait for the wall clock to catch up before refusing with an error.
const MAX_WAIT_MS: u64 = 100;

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

    /// Superuser only (EXECUTE revoked from PUBLIC).
    fn snowflake_drop_sequence(seq: text) -> boolean [volatile parallel_unsafe] |_| {
        let registry = lookup::registry();
        prerequisites::require_writable("snowflake_drop_sequence()");
        dropping::drop_sequence(&registry, SequenceName::Snowflake(seq))
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

    /// Rows of the snowflake_sequences view: the current database's sequences, each described
    /// with the layout it was created with (the server's, unless the settings changed since).
    fn snowflake_sequences_rows() -> table(
        name: text, layout: text, epoch: timestamptz, last_id: bigint,
        last_timestamp: timestamptz, issued: bigint, counter_exhausted: bigint,
        clock_ahead: interval, clock_regressions: bigint, lease_until: timestamptz,
        lease_extensions: bigint
    ) [volatile parallel_safe] |_, emit| {
        sequence_rows(emit)
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
    let (server, registry) = (guc::server()?, shmem::registry()?);
    let node = server.node?;
    let seq = registry.seq::<SnowflakeState>(callsite::cached_slot::<1>(call)?)?;
    let bounds = seq.bounds(&server.layout, guc::max_clock_ahead_ms());
    let r = seq.try_reserve(&server.layout, 1, &bounds).ok()?;
    Some(server.layout.id_of_tick(r.first, node) as i64)
}

fn next(call: Call<'_>) -> i64 {
    let (server, registry) = (lookup::server(), lookup::registry());
    let node = prerequisites::node_id(server);
    prerequisites::require_may_generate("snowflake_next()", What::Node);
    loop {
        let at = callsite::slot_of(
            call,
            |at| registry.seq::<SnowflakeState>(at).is_some(),
            |[name]| lookup::snowflake(&registry, name, &server.layout, node).at(),
        );
        if let Some(r) = registry
            .seq::<SnowflakeState>(at)
            .and_then(|seq| reserve(&server.layout, seq, 1))
        {
            return server.layout.id_of_tick(r.first, node) as i64;
        }
        // Dropped since the call site resolved it: the name leads to a new sequence.
    }
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
            let (server, registry) = (lookup::server(), lookup::registry());
            let node = prerequisites::node_id(server);
            prerequisites::require_may_generate("snowflake_next_batch()", What::Node);
            let r = loop {
                let seq = lookup::snowflake(&registry, name, &server.layout, node);
                if let Some(r) = reserve(&server.layout, seq, n) {
                    break r;
                }
                // Dropped meanwhile: the name leads to a new sequence.
            };
            Batch {
                next: r.first,
                last: r.last,
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

/// Reserves `n` ticks, extending the lease when needed and waiting briefly when the sequence
/// has run too far ahead of the clock; `None` if the sequence was dropped meanwhile.
fn reserve(layout: &Layout, seq: SnowflakeSeq<'_>, n: u64) -> Option<Reservation> {
    let max_ahead_ms = guc::max_clock_ahead_ms();
    let mut waited_ms = 0;
    loop {
        let bounds = seq.bounds(layout, max_ahead_ms);
        let refusal = match seq.try_reserve(layout, n, &bounds) {
            Ok(r) => return Some(r),
            Err(Miss::Refused(Refusal::LeaseNeeded { last })) => {
                if !extend_lease(layout, seq, &bounds, last) {
                    return None;
                }
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
            return None; // dropped: refused because it is closed
        }
        match clock::wait_before_retry(refusal, &bounds, MAX_WAIT_MS - waited_ms) {
            Some(ms) => {
                let ms = ms.max(1);
                // SAFETY: pg_usleep only sleeps; interrupts are checked right after.
                unsafe { pg_sys::pg_usleep(1000 * ms as std::ffi::c_long) };
                pgrx::check_for_interrupts!();
                waited_ms += ms;
            }
            None => refuse(refusal, &bounds, seq, n),
        }
    }
}

/// Makes a lease covering tick `last` durable, unless another backend did meanwhile. False if
/// the sequence was dropped meanwhile.
fn extend_lease(layout: &Layout, seq: SnowflakeSeq<'_>, bounds: &Bounds, last: u64) -> bool {
    let lock = LeaseLock::acquire();
    if !seq.needs_lease_for(last) {
        return true;
    }
    let now_ms = layout
        .ms_since_epoch(wallclock::precise_unix_ms())
        .unwrap_or(last >> layout.counter_bits);
    let end = lease_target_ms(last, now_ms, bounds);
    lock.persist_then_publish(seq, Lease { era: 0, end }, || seq.publish_lease(end))
}

fn refuse(refusal: Refusal, bounds: &Bounds, seq: SnowflakeSeq<'_>, n: u64) -> ! {
    let id = lookup::id_of(seq.slot());
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
fn layout_range(layout: &Layout) -> String {
    format!(
        "IDs of this layout cover {} to {}.",
        format_utc(layout.epoch_ms),
        format_utc(layout.epoch_ms + layout.max_ms() as i64)
    )
}

/// The server's layout; needs the library preloaded because the layout settings do.
fn own_layout() -> &'static Layout {
    &lookup::server().layout
}

fn named_layout(name: &[u8]) -> &'static Layout {
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

fn parts(layout: &Layout, id: i64) -> Parts {
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

fn sequence_rows(emit: &mut dyn FnMut(snowflake_sequences_rows::Row)) {
    let registry = lookup::registry();
    let node = lookup::server().node;
    let now_ms = wallclock::precise_unix_ms();
    let db = lookup::current_db();
    for at in registry.of_database(db, Kind::Snowflake) {
        let Some(seq) = registry.seq::<SnowflakeState>(at) else {
            continue;
        };
        let layout = seq.layout();
        let s = seq.stats();
        let ms_of = |tick: u64| layout.epoch_ms + (tick >> layout.counter_bits) as i64;
        // Tick 0 means nothing handed out yet.
        let last = (s.last_tick != 0).then_some(s.last_tick);
        emit((
            // A snowflake sequence's key name is its name.
            Some(seq.slot().key().name.to_vec()),
            Some(
                format!(
                    "{}/{}/{}",
                    layout.time_bits, layout.node_bits, layout.counter_bits
                )
                .into_bytes(),
            ),
            Some(timestamptz(layout.epoch_ms)),
            last.zip(node).map(|(t, n)| layout.id_of_tick(t, n) as i64),
            last.map(|t| timestamptz(ms_of(t))),
            Some(s.issued as i64),
            Some(s.counter_exhausted as i64),
            Some(last.map_or(0, |t| (ms_of(t) - now_ms).max(0))),
            Some(s.clock_regressions as i64),
            (s.lease_end_tick != 0).then(|| timestamptz(ms_of(s.lease_end_tick))),
            Some(s.lease_extensions as i64),
        ));
    }
}
