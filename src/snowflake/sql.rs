//! SQL-facing snowflake functions. Thin: arguments in, pure core, errors out.
//! Their SQL declarations (types, volatility, STRICT, PARALLEL) are in sql/snowflake.sql.

use std::sync::atomic::{AtomicI64, Ordering};

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::clock::{self, Bounds, Refusal, Reservation};
use super::epoch::{format_utc, pg_timestamp_to_unix_ms, unix_ms_to_pg_timestamp};
use super::layout::{preset, preset_names, Layout, Parts};
use super::registry::{check_name, NameError, Registry, SequenceState, MAX_NAME_LEN};
use super::wallclock;
use crate::errors::{error, not_preloaded, Code};
use crate::{guc, shmem};

/// Longest wait for the wall clock to catch up before refusing with an error.
const MAX_WAIT_MS: u64 = 100;

// ---------------------------------------------------------------------------------------------
// Generators

#[pg_extern(sql = false)]
fn snowflake_next(fcinfo: pg_sys::FunctionCallInfo, seq: &str) -> i64 {
    let (layout, state) = sequence(fcinfo, seq);
    let r = reserve(layout, state, seq, 1);
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
    let state = &registry.slot(find_slot(&registry, seq)).state;
    let r = reserve(layout, state, seq, n as u64);
    let node = guc::node_id();
    SetOfIterator::new((r.first..=r.last).map(move |tick| layout.id_of_tick(tick, node) as i64))
}

fn preloaded() -> (&'static Layout, Registry<'static>) {
    match (guc::layout(), shmem::registry()) {
        (Some(layout), Some(registry)) => (layout, registry),
        _ => not_preloaded(),
    }
}

/// The layout and the shared state of `seq` in the current database, through the call
/// site's cache. Only for functions returning one value (see snowflake_next_batch).
fn sequence(
    fcinfo: pg_sys::FunctionCallInfo,
    seq: &str,
) -> (&'static Layout, &'static SequenceState) {
    let (layout, registry) = preloaded();
    let idx = match cached_slot(fcinfo, seq) {
        Some(idx) => idx,
        None => {
            let idx = find_slot(&registry, seq);
            remember_slot(fcinfo, seq, idx);
            idx
        }
    };
    (layout, &registry.slot(idx).state)
}

fn find_slot(registry: &Registry<'static>, seq: &str) -> usize {
    match check_name(seq) {
        Ok(()) => {}
        Err(NameError::Empty) => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            "snowflake sequence name must not be empty",
        )
        .raise(),
        Err(NameError::TooLong) => error(
            Code::ERRCODE_NAME_TOO_LONG,
            format!("snowflake sequence name \"{seq}\" is too long"),
        )
        .detail(format!("Names are at most {MAX_NAME_LEN} bytes."))
        .raise(),
    }
    // SAFETY: MyDatabaseId is set for the life of a backend connected to a database.
    let db = unsafe { pg_sys::MyDatabaseId }.to_u32();
    registry.find_or_insert(db, seq).unwrap_or_else(|_| {
        error(
            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!(
                "cannot create snowflake sequence \"{seq}\": all {} slots are in use",
                registry.capacity()
            ),
        )
        .hint("Raise snowflake.max_sequences and restart the server.")
        .raise()
    })
}

/// A call site (one FmgrInfo: a DEFAULT expression, a query's target list) nearly always
/// asks for the same name, so it keeps the slot of the last name it resolved in fn_extra.
#[repr(C)]
struct CallSiteCache {
    slot: usize,
    len: usize,
    name: [u8; MAX_NAME_LEN],
}

fn cached_slot(fcinfo: pg_sys::FunctionCallInfo, seq: &str) -> Option<usize> {
    // SAFETY: fcinfo and its flinfo are valid for this call; fn_extra is either NULL or the
    // CallSiteCache that remember_slot allocated in fn_mcxt, which lives as long as flinfo.
    let cache = unsafe {
        (*(*fcinfo).flinfo)
            .fn_extra
            .cast::<CallSiteCache>()
            .as_ref()?
    };
    (cache.name[..cache.len] == *seq.as_bytes()).then_some(cache.slot)
}

fn remember_slot(fcinfo: pg_sys::FunctionCallInfo, seq: &str, slot: usize) {
    // SAFETY: as in cached_slot; the allocation is sized for CallSiteCache and lives in the
    // FmgrInfo's own memory context, the documented home of fn_extra. seq.len() was checked
    // against MAX_NAME_LEN by find_slot.
    unsafe {
        let flinfo = (*fcinfo).flinfo;
        let mut cache = (*flinfo).fn_extra.cast::<CallSiteCache>();
        if cache.is_null() {
            cache =
                pg_sys::MemoryContextAlloc((*flinfo).fn_mcxt, std::mem::size_of::<CallSiteCache>())
                    .cast();
            (*flinfo).fn_extra = cache.cast();
        }
        let mut name = [0; MAX_NAME_LEN];
        name[..seq.len()].copy_from_slice(seq.as_bytes());
        cache.write(CallSiteCache {
            slot,
            len: seq.len(),
            name,
        });
    }
}

/// The last coarse wall-clock reading of this backend, to notice the clock stepping back.
/// Process-local: each backend compares only its own readings, so there are no races.
static LAST_WALL_MS: AtomicI64 = AtomicI64::new(i64::MIN);

/// The DETAIL of every "outside the layout's time range" error.
fn layout_range(layout: &Layout) -> String {
    format!(
        "IDs of this layout cover {} to {}.",
        format_utc(layout.epoch_ms),
        format_utc(layout.epoch_ms + layout.max_ms() as i64)
    )
}

fn ms_since_epoch(layout: &Layout, unix_ms: i64) -> u64 {
    layout.ms_since_epoch(unix_ms).unwrap_or_else(|_| {
        error(
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!(
                "the system clock ({}) is outside the range of snowflake IDs",
                format_utc(unix_ms)
            ),
        )
        .detail(layout_range(layout))
        .raise()
    })
}

/// Reserves `n` ticks, waiting briefly when the sequence has run too far ahead of the clock.
fn reserve(layout: &Layout, state: &SequenceState, seq: &str, n: u64) -> Reservation {
    let cb = layout.counter_bits;
    let bounds = Bounds {
        counter_bits: cb,
        max_tick: layout.max_tick(),
        max_ahead_ms: guc::max_clock_ahead_ms(),
    };
    let mut waited_ms = 0;
    let mut precise_only = false;
    loop {
        let coarse = wallclock::coarse_unix_ms();
        if coarse < LAST_WALL_MS.load(Ordering::Relaxed) {
            state.clock_regressions.fetch_add(1, Ordering::Relaxed);
        }
        LAST_WALL_MS.store(coarse, Ordering::Relaxed);
        let coarse_ms = ms_since_epoch(layout, coarse);
        let last = state.tick.load(Ordering::Relaxed);
        let use_coarse = !precise_only
            && clock::coarse_clock_suffices(last, coarse_ms, wallclock::COARSE_MARGIN_MS, cb);
        let now_ms = if use_coarse {
            coarse_ms
        } else {
            ms_since_epoch(layout, wallclock::precise_unix_ms())
        };
        match clock::reserve(&state.tick, clock::tick_of_ms(now_ms, cb), n, &bounds) {
            Ok(r) => {
                state.issued.fetch_add(n, Ordering::Relaxed);
                if r.borrowed {
                    state.borrowed.fetch_add(1, Ordering::Relaxed);
                }
                return r;
            }
            // The coarse reading overstates how far ahead we are: judge with the precise one.
            Err(Refusal::AheadOfClock { .. }) if use_coarse => precise_only = true,
            Err(refusal) => {
                match clock::wait_before_retry(refusal, &bounds, MAX_WAIT_MS - waited_ms) {
                    Some(ms) => {
                        let ms = ms.max(1);
                        // SAFETY: pg_usleep only sleeps; interrupts are checked right after.
                        unsafe { pg_sys::pg_usleep(1000 * ms as std::ffi::c_long) };
                        check_for_interrupts!();
                        waited_ms += ms;
                    }
                    None => refuse(refusal, &bounds, seq, n),
                }
            }
        }
    }
}

fn refuse(refusal: Refusal, bounds: &Bounds, seq: &str, n: u64) -> ! {
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

/// Rows of the snowflake_sequences view: the current database's sequences.
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
    ),
> {
    let (layout, registry) = preloaded();
    // SAFETY: MyDatabaseId is set for the life of a backend connected to a database.
    let db = unsafe { pg_sys::MyDatabaseId }.to_u32();
    let node = guc::node_id();
    let now_ms = wallclock::precise_unix_ms();
    let describe = format!(
        "{}/{}/{}",
        layout.time_bits, layout.node_bits, layout.counter_bits
    );
    let epoch = timestamptz(layout.epoch_ms);
    let rows: Vec<_> = registry
        .of_database(db)
        .map(|slot| {
            let s = &slot.state;
            let tick = s.tick.load(Ordering::Relaxed);
            // Tick 0 means nothing handed out yet.
            let last_id = (tick != 0).then(|| layout.id_of_tick(tick, node) as i64);
            let last_unix_ms =
                (tick != 0).then(|| layout.epoch_ms + (tick >> layout.counter_bits) as i64);
            let ahead_ms = last_unix_ms.map_or(0, |ms| (ms - now_ms).max(0));
            (
                slot.name().to_string(),
                describe.clone(),
                epoch,
                last_id,
                last_unix_ms.map(timestamptz),
                s.issued.load(Ordering::Relaxed) as i64,
                s.borrowed.load(Ordering::Relaxed) as i64,
                Interval::from_micros(ahead_ms * 1000),
                s.clock_regressions.load(Ordering::Relaxed) as i64,
            )
        })
        .collect();
    TableIterator::new(rows)
}
