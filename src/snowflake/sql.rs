//! SQL-facing snowflake functions. Thin: arguments in, pure core, errors out.
//! Their SQL declarations (types, volatility, STRICT, PARALLEL) are in api.sql.

use std::sync::atomic::Ordering;

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::callsite;
use super::clock::{self, Bounds, Refusal, Reservation};
use super::epoch::{format_utc, pg_timestamp_to_unix_ms, unix_ms_to_pg_timestamp};
use super::generator::{self, Miss};
use super::layout::{preset, preset_names, Layout, Parts};
use super::wallclock;
use crate::durable;
use crate::errors::{error, not_preloaded, Code};
use crate::registry::{Kind, Registry, Slot};
use crate::{guc, sequences, shmem};

/// Longest wait for the wall clock to catch up before refusing with an error.
const MAX_WAIT_MS: u64 = 100;

// ---------------------------------------------------------------------------------------------
// Generators

// snowflake_next has two entry points. SQL calls `snowflake_next_fast`, a plain V1 function:
// pgrx's generic call wrapper costs more than generating the ID does (measured: a trivial
// pgrx function ~26 ns above the bare loop, int4pl ~9 ns). It handles only the case that
// cannot fail: a call site that has already resolved its name, and a reservation the bounds
// allow at once. Everything else (first call, errors, waiting) goes to the guarded
// `snowflake_next` below, which does the whole call again, so no Rust panic can ever cross
// the unguarded frame.

#[no_mangle]
pub extern "C" fn pg_finfo_snowflake_next_fast() -> &'static pg_sys::Pg_finfo_record {
    static V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// # Safety
/// Called by PostgreSQL's fmgr with a valid fcinfo for `snowflake_next(text)` (STRICT).
#[no_mangle]
pub unsafe extern "C-unwind" fn snowflake_next_fast(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    // next_without_fail cannot panic in a release build; should it ever (a debug build's
    // overflow checks, a later edit), the guarded entry point reports it as an ERROR instead
    // of the panic unwinding into PostgreSQL. catch_unwind costs nothing when nothing panics.
    let fast = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| next_without_fail(fcinfo)));
    match fast.ok().flatten() {
        Some(id) => pg_sys::Datum::from(id),
        // SAFETY: the same fcinfo, handed on to the guarded entry point.
        None => unsafe { snowflake_next_wrapper(fcinfo) },
    }
}

/// The ID, if it can be made without an error, a wait, a lease extension, or a call into
/// PostgreSQL.
fn next_without_fail(fcinfo: pg_sys::FunctionCallInfo) -> Option<i64> {
    // SAFETY: a plain read of a backend-global flag. Read-only transactions (and every
    // transaction on a standby) get their ERROR from the guarded entry point.
    if unsafe { pg_sys::XactReadOnly } {
        return None;
    }
    let (layout, registry) = (guc::layout()?, shmem::registry()?);
    // SAFETY: fcinfo is this call's, and its one argument is a non-null text (STRICT).
    let slot = registry.get(unsafe { callsite::cached_slot(fcinfo)? })?;
    let bounds = generator::bounds(layout, guc::max_clock_ahead_ms(), &slot.state);
    let r = generator::try_reserve(layout, &slot.state, 1, &bounds).ok()?;
    Some(layout.id_of_tick(r.first, guc::node_id()) as i64)
}

#[pg_extern(sql = false)]
fn snowflake_next(fcinfo: pg_sys::FunctionCallInfo) -> i64 {
    let (layout, registry) = preloaded();
    durable::require_writable("snowflake_next()");
    // SAFETY: fcinfo is this call's, and its one argument is a non-null text (STRICT).
    let idx = unsafe { callsite::slot_of_name_arg(fcinfo, |name| find_slot(&registry, name)) };
    let r = reserve(layout, idx, registry.slot(idx), 1);
    layout.id_of_tick(r.first, guc::node_id()) as i64
}

#[pg_extern(sql = false)]
fn snowflake_next_batch(seq: &str, n: i32) -> SetOfIterator<'static, i64> {
    if n < 1 {
        error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("batch size must be at least 1, not {n}"),
        )
        .raise();
    }
    // No call-site cache here: in a set-returning function fn_extra belongs to the SRF
    // protocol, and one lookup per batch costs nothing.
    let (layout, registry) = preloaded();
    durable::require_writable("snowflake_next_batch()");
    let idx = find_slot(&registry, seq.as_bytes());
    let r = reserve(layout, idx, registry.slot(idx), n as u64);
    let node = guc::node_id();
    SetOfIterator::new((r.first..=r.last).map(move |tick| layout.id_of_tick(tick, node) as i64))
}

fn preloaded() -> (&'static Layout, Registry<'static>) {
    match (guc::layout(), shmem::registry()) {
        (Some(layout), Some(registry)) => (layout, registry),
        _ => not_preloaded(),
    }
}

/// For messages: names are bytes in the database's encoding.
fn display(name: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(name)
}

/// The slot of `name` in the current database, created if new; raises the naming errors.
fn find_slot(registry: &Registry<'static>, name: &[u8]) -> usize {
    sequences::check_name_or_raise("snowflake sequence", name);
    let recorded = durable::recorded_of(own_layout());
    let shown = format!("snowflake sequence \"{}\"", display(name));
    sequences::find_or_create(registry, Kind::Snowflake, name, recorded, &shown)
}

/// The DETAIL of every "outside the layout's time range" error.
fn layout_range(layout: &Layout) -> String {
    format!(
        "IDs of this layout cover {} to {}.",
        format_utc(layout.epoch_ms),
        format_utc(layout.epoch_ms + layout.max_ms() as i64)
    )
}

/// Reserves `n` ticks of sequence `idx`, extending its lease when needed and waiting
/// briefly when the sequence has run too far ahead of the clock.
fn reserve(layout: &Layout, idx: usize, slot: &Slot, n: u64) -> Reservation {
    durable::check_layout(slot, layout);
    let max_ahead_ms = guc::max_clock_ahead_ms();
    let mut waited_ms = 0;
    loop {
        let bounds = generator::bounds(layout, max_ahead_ms, &slot.state);
        let refusal = match generator::try_reserve(layout, &slot.state, n, &bounds) {
            Ok(r) => return r,
            Err(Miss::Refused(Refusal::LeaseNeeded { last })) => {
                durable::extend_snowflake(idx, slot, layout, &bounds, last);
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
        match clock::wait_before_retry(refusal, &bounds, MAX_WAIT_MS - waited_ms) {
            Some(ms) => {
                let ms = ms.max(1);
                // SAFETY: pg_usleep only sleeps; interrupts are checked right after.
                unsafe { pg_sys::pg_usleep(1000 * ms as std::ffi::c_long) };
                check_for_interrupts!();
                waited_ms += ms;
            }
            None => refuse(refusal, &bounds, slot.name(), n),
        }
    }
}

fn refuse(refusal: Refusal, bounds: &Bounds, name: &[u8], n: u64) -> ! {
    let seq = display(name);
    match refusal {
        Refusal::AheadOfClock { ahead_ms } => error(
            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!("snowflake sequence \"{seq}\" is too far ahead of the wall clock"),
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
            format!("snowflake sequence \"{seq}\" has reached the end of its time range"),
        )
        .hint("Choose a later snowflake.epoch for new sequences.")
        .raise(),
        Refusal::LeaseNeeded { .. } => unreachable!("reserve extends the lease itself"),
    }
}

// ---------------------------------------------------------------------------------------------
// Decoders

/// The server's layout; needs the library preloaded because the layout settings do.
fn own_layout() -> &'static Layout {
    guc::layout().unwrap_or_else(|| not_preloaded())
}

fn named_layout(name: &str) -> &'static Layout {
    match preset(name) {
        Some(p) => &p.layout,
        None => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("unknown snowflake layout \"{name}\""),
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

fn timestamptz(unix_ms: i64) -> TimestampWithTimeZone {
    // Every millisecond a layout holds (epochs 1970..9999, at most 2^42 ms on) is well within
    // timestamptz's range, which ends in 294276 AD.
    TimestampWithTimeZone::try_from(unix_ms_to_pg_timestamp(unix_ms)).unwrap_or_else(|_| {
        error(
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            "timestamp out of range",
        )
        .raise()
    })
}

fn timestamp_of(layout: &Layout, id: i64) -> TimestampWithTimeZone {
    timestamptz(layout.unix_ms(parts(layout, id)))
}

fn min_id_of(layout: &Layout, ts: TimestampWithTimeZone) -> i64 {
    let unix_ms = pg_timestamp_to_unix_ms(ts.into());
    layout
        .min_id_at(unix_ms)
        .map(|id| id as i64)
        .unwrap_or_else(|_| {
            error(
                Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
                "timestamp out of range for snowflake IDs",
            )
            .detail(layout_range(layout))
            .raise()
        })
}

#[pg_extern(sql = false)]
fn snowflake_timestamp(id: i64) -> TimestampWithTimeZone {
    timestamp_of(own_layout(), id)
}

#[pg_extern(sql = false)]
fn snowflake_node(id: i64) -> i32 {
    parts(own_layout(), id).node as i32
}

#[pg_extern(sql = false)]
fn snowflake_counter(id: i64) -> i32 {
    parts(own_layout(), id).counter as i32
}

#[pg_extern(sql = false)]
fn snowflake_from_timestamp(ts: TimestampWithTimeZone) -> i64 {
    min_id_of(own_layout(), ts)
}

#[pg_extern(sql = false)]
fn snowflake_timestamp_in_layout(id: i64, layout: &str) -> TimestampWithTimeZone {
    timestamp_of(named_layout(layout), id)
}

#[pg_extern(sql = false)]
fn snowflake_node_in_layout(id: i64, layout: &str) -> i32 {
    parts(named_layout(layout), id).node as i32
}

#[pg_extern(sql = false)]
fn snowflake_counter_in_layout(id: i64, layout: &str) -> i32 {
    parts(named_layout(layout), id).counter as i32
}

#[pg_extern(sql = false)]
fn snowflake_from_timestamp_in_layout(ts: TimestampWithTimeZone, layout: &str) -> i64 {
    min_id_of(named_layout(layout), ts)
}

// ---------------------------------------------------------------------------------------------
// Monitoring

/// Rows of the snowflake_sequences view: the current database's sequences, each described
/// with the layout it was created with (the server's, unless the settings changed since).
// The row type is spelled out because #[pg_extern] rejects a type alias in TableIterator.
#[allow(clippy::type_complexity)]
#[pg_extern(sql = false)]
fn snowflake_sequences_rows() -> TableIterator<
    'static,
    (
        String,
        String,
        TimestampWithTimeZone,
        Option<i64>,
        Option<TimestampWithTimeZone>,
        i64,
        i64,
        Interval,
        i64,
        Option<TimestampWithTimeZone>,
        i64,
    ),
> {
    let (_, registry) = preloaded();
    let db = sequences::current_db();
    let node = guc::node_id();
    let now_ms = wallclock::precise_unix_ms();
    let rows: Vec<_> = registry
        .of_database(db, Kind::Snowflake)
        .map(|slot| {
            let rec = slot.recorded();
            let layout = Layout::own(rec.node_bits, rec.epoch_ms);
            let s = &slot.state;
            let tick = s.tick.load(Ordering::Relaxed);
            let lease_end = s.lease_end.load(Ordering::Relaxed);
            // Tick 0 means nothing handed out yet.
            let last_id = (tick != 0).then(|| layout.id_of_tick(tick, node) as i64);
            let ms_of = |tick: u64| layout.epoch_ms + (tick >> layout.counter_bits) as i64;
            let last_unix_ms = (tick != 0).then(|| ms_of(tick));
            let ahead_ms = last_unix_ms.map_or(0, |ms| (ms - now_ms).max(0));
            (
                display(slot.name()).into_owned(),
                format!(
                    "{}/{}/{}",
                    layout.time_bits, layout.node_bits, layout.counter_bits
                ),
                timestamptz(layout.epoch_ms),
                last_id,
                last_unix_ms.map(timestamptz),
                s.issued.load(Ordering::Relaxed) as i64,
                s.borrowed.load(Ordering::Relaxed) as i64,
                Interval::from_micros(ahead_ms * 1000),
                s.clock_regressions.load(Ordering::Relaxed) as i64,
                (lease_end != 0).then(|| timestamptz(ms_of(lease_end))),
                s.lease_extensions.load(Ordering::Relaxed) as i64,
            )
        })
        .collect();
    TableIterator::new(rows)
}
