//! SQL-facing snowflake functions. Thin: arguments in, the generator (`sequences::generate`)
//! or the pure core, errors out. Each is declared once, below (`sql_functions!`); the rest of
//! their SQL (the domain, views, comments) is in snowflake.sql.

use pgrx::pg_sys::{self, Datum};

use crate::core::identity::{Kind, SequenceName};
use crate::core::sightings::What;
use crate::core::snowflake::epoch::{pg_timestamp_to_unix_ms, unix_ms_to_pg_timestamp};
use crate::core::snowflake::layout::{preset, preset_names, Layout, Parts};
use crate::core::snowflake::snowflake_slot::SnowflakeState;
use crate::core::wallclock;
use crate::pg::errors::{error, Clipped, Code};
use crate::pg::fmgr;
use crate::sequences::generate::{self, layout_range, Generator, Snowflakes};
use crate::sequences::{catalog, durable, lifecycle, privileges, watermark};
use crate::sql::sqlfn::sql_functions;
use crate::{detection, guc, node, pg::errors, pg::shmem, sequences::lookup};

sql_functions! {
    /// `snowflake_next(seq)`. The common case, a call site that has already resolved its name
    /// and a reservation the bounds allow at once, is a few loads and one CAS; everything else
    /// (first call, errors, waiting, lease extensions) takes the slow path.
    fn snowflake_next(seq: text_datum) -> snowflake [volatile parallel_unsafe] |call| {
        generate::next::<Snowflakes>(call, "snowflake_next()")
    }

    /// `snowflake_next_batch(seq, n)`: one reservation, then one row per call.
    fn snowflake_next_batch(seq: text, n: integer) -> setof snowflake
        [volatile parallel_unsafe rows(100)] |call| {
        fmgr::rows_per_call(
            call,
            || generate::many::<Snowflakes>("snowflake_next_batch()", &[seq], n, "batch"),
            |batch| batch.next().map(Datum::from),
        )
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

    /// Below it, every ID of the sequence made on this server belongs to a transaction that
    /// has ended; every ID made after the call is at or above it.
    fn snowflake_watermark(seq: text) -> snowflake [volatile parallel_unsafe] |_| {
        let (g, _) = Snowflakes::stamp(lookup::server());
        let v = watermark::watermark(g, SequenceName::Snowflake(seq));
        i64::try_from(v).unwrap_or(i64::MAX)
    }

    /// Rows of the snowflake_watermark_holders view.
    fn snowflake_watermark_holders_rows() -> table(
        sequence: regclass, pid: integer, transaction: xid, prepared: boolean,
        first_id: bigint, since: timestamptz
    ) [volatile parallel_unsafe] |_, emit| {
        for r in watermark::holder_rows(Kind::Snowflake) {
            let first = r.value.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
            emit((r.relid, r.pid, r.xid, Some(r.prepared), first, r.since_ms.map(timestamptz)));
        }
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
// Decoders

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
