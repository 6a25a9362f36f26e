//! Lease extensions, start-up and replay: the PostgreSQL side of the durable lease.

use std::sync::atomic::Ordering;

use pgrx::pg_sys;

use super::record::LeaseRecord;
use super::store::{LoadError, Store};
use super::wal;
use crate::errors::{error, Code};
use crate::gdid::counter::{self, Need};
use crate::registry::{Key, Kind, Recorded, Registry, Slot};
use crate::shmem;
use crate::snowflake::clock::{self, Bounds};
use crate::snowflake::epoch::format_utc;
use crate::snowflake::layout::Layout;
use crate::snowflake::wallclock;

/// How far past the clock a snowflake lease reaches: one disk write and one WAL flush per
/// second per busy sequence, and at most this much of the time range lost in a crash.
pub const SNOWFLAKE_WINDOW_MS: u64 = 1_000;

/// Generators write WAL, so like `nextval` they refuse where WAL cannot be written. The
/// check does not depend on whether the lease happens to need extending, so the behaviour
/// is the same on every call.
pub fn require_writable(function: &str) {
    // SAFETY: plain reads of backend-global state.
    let (in_recovery, read_only) = unsafe { (pg_sys::RecoveryInProgress(), pg_sys::XactReadOnly) };
    if in_recovery {
        error(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            format!("cannot execute {function} during recovery"),
        )
        .hint("Generate IDs on the primary; a standby continues above them once promoted.")
        .raise();
    }
    if read_only {
        error(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            format!("cannot execute {function} in a read-only transaction"),
        )
        .raise();
    }
}

/// Serialises lease extensions across all backends: PostgreSQL's own lock, released by
/// the transaction abort if an error escapes.
struct LeaseLock;

impl LeaseLock {
    fn acquire() -> LeaseLock {
        // SAFETY: the lock lives in shared memory for the life of the server.
        unsafe { pg_sys::LWLockAcquire(shmem::lease_lock(), pg_sys::LWLockMode::LW_EXCLUSIVE) };
        LeaseLock
    }
}

impl Drop for LeaseLock {
    fn drop(&mut self) {
        // SAFETY: acquired in `acquire` by this backend and not yet released.
        unsafe { pg_sys::LWLockRelease(shmem::lease_lock()) };
    }
}

fn record_of(slot: &Slot, era: u32, end: u64) -> LeaseRecord {
    let key = slot.key();
    LeaseRecord {
        db: key.db,
        kind: key.kind,
        name: key.name.to_vec(),
        recorded: slot.recorded(),
        era,
        end,
    }
}

/// On disk, then in the WAL, flushed: only then may shared memory use the new bound.
fn persist(idx: usize, record: &LeaseRecord) {
    write_file(idx, record);
    wal::log_and_flush(&record.encode());
}

/// The record of slot `idx`, on disk (fsync), or an ERROR.
fn write_file(idx: usize, record: &LeaseRecord) {
    let store = Store::in_data_dir();
    if let Err(e) = store.write(idx, record) {
        error(
            Code::ERRCODE_IO_ERROR,
            format!(
                "could not write lease file \"{}\": {e}",
                store.path().display()
            ),
        )
        .raise();
    }
}

fn layout_of(recorded: Recorded) -> Layout {
    Layout::own(recorded.node_bits, recorded.epoch_ms)
}

/// The ERROR for a sequence created under other layout settings than the server's now.
fn layout_changed(slot: &Slot, now: &Layout) -> ! {
    let was = slot.recorded();
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "snowflake sequence \"{}\" was created with a different layout",
            String::from_utf8_lossy(slot.name())
        ),
    )
    .detail(format!(
        "It was created with snowflake.epoch = '{}' and snowflake.node_bits = {}; the server \
         now runs with '{}' and {}. Its new IDs could repeat or sort below the ones it made.",
        format_utc(was.epoch_ms),
        was.node_bits,
        format_utc(now.epoch_ms),
        now.node_bits
    ))
    .hint(
        "Restore those two settings and restart, or generate under a new sequence name (and \
         decode the old IDs with the settings they were made with).",
    )
    .raise()
}

/// Raises the layout-change ERROR if snowflake sequence `slot` was created under other
/// layout settings than `layout`. Its state counts ticks of that layout, so this comes
/// before anything else looks at them.
pub fn check_layout(slot: &Slot, layout: &Layout) {
    if slot.recorded() != recorded_of(layout) {
        layout_changed(slot, layout);
    }
}

/// Extends the lease of snowflake sequence `idx` to cover tick `last`.
pub fn extend_snowflake(idx: usize, slot: &Slot, layout: &Layout, bounds: &Bounds, last: u64) {
    check_layout(slot, layout);
    let state = &slot.state;
    let _lock = LeaseLock::acquire();
    if state.lease_end.load(Ordering::Acquire) > last {
        return; // another backend extended it meanwhile
    }
    let now_unix = wallclock::precise_unix_ms();
    let now_ms = layout
        .ms_since_epoch(now_unix)
        .unwrap_or(last >> layout.counter_bits);
    let end_ms = clock::lease_end_ms(last, now_ms, bounds, SNOWFLAKE_WINDOW_MS);
    persist(idx, &record_of(slot, 0, end_ms));
    state
        .lease_end
        .fetch_max(end_ms << layout.counter_bits, Ordering::AcqRel);
    note_extension(slot, now_unix);
}

pub fn recorded_of(layout: &Layout) -> Recorded {
    Recorded {
        epoch_ms: layout.epoch_ms,
        node_bits: layout.node_bits,
    }
}

/// Extends the lease of gdid sequence `idx`, or moves it to the next era, as `need` says.
pub fn extend_gdid(idx: usize, slot: &Slot, need: Need) {
    let state = &slot.state;
    let _lock = LeaseLock::acquire();
    let (era, end) = counter::lease(state);
    let now_unix = wallclock::precise_unix_ms();
    let since = now_unix - state.last_extension_ms.load(Ordering::Relaxed);
    let block = counter::next_block(state.block.load(Ordering::Relaxed), since);
    match need {
        Need::Lease { era: e, last } => {
            if e != era || end > last {
                return; // another backend extended it, or moved to the next era
            }
            let new_end = counter::lease_end_for(last, block);
            persist(idx, &record_of(slot, era, new_end));
            counter::extend(state, new_end);
        }
        Need::NextEra { era: e } => {
            if e != era {
                return;
            }
            let Some(next) = era.checked_add(1) else {
                error(
                    Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                    format!(
                        "gdid sequence \"{}\" has used up every era",
                        display_gdid_key(slot.name())
                    ),
                )
                .raise()
            };
            let new_end = counter::lease_end_for(1, block);
            persist(idx, &record_of(slot, next, new_end));
            counter::advance_era(state, next, 0, new_end);
        }
    }
    state.block.store(block, Ordering::Relaxed);
    note_extension(slot, now_unix);
}

/// Moves gdid sequence `idx` so that its next counter is past `(era, last)`; never back.
pub fn advance_gdid(idx: usize, slot: &Slot, era: u32, last: u64) {
    let state = &slot.state;
    let _lock = LeaseLock::acquire();
    let (cur_era, cur_end) = counter::lease(state);
    if (era, last) <= (cur_era, counter::last(state)) {
        return;
    }
    let now_unix = wallclock::precise_unix_ms();
    let block = counter::MIN_BLOCK;
    let end = counter::lease_end_for(last, block);
    if era == cur_era {
        let end = end.max(cur_end);
        persist(idx, &record_of(slot, era, end));
        counter::extend(state, end);
        counter::raise_to(state, last);
    } else {
        persist(idx, &record_of(slot, era, end));
        counter::advance_era(state, era, last, end);
    }
    note_extension(slot, now_unix);
}

fn note_extension(slot: &Slot, now_unix: i64) {
    slot.state.lease_extensions.fetch_add(1, Ordering::Relaxed);
    slot.state
        .last_extension_ms
        .store(now_unix, Ordering::Relaxed);
}

/// `scope/sequence` for messages.
pub fn display_gdid_key(name: &[u8]) -> String {
    String::from_utf8_lossy(name).replacen('\0', "/", 1)
}

/// Merges a durable record into shared memory; returns the slot and the record now due
/// for that slot (the merge never moves a lease back).
fn merge(registry: &Registry<'static>, rec: &LeaseRecord) -> Option<(usize, LeaseRecord)> {
    let idx = registry.find_or_insert(rec.key(), rec.recorded).ok()?;
    let slot = registry.slot(idx);
    let state = &slot.state;
    let merged = match rec.kind {
        Kind::Snowflake => {
            let cb = layout_of(slot.recorded()).counter_bits;
            let end_tick = rec.end << cb;
            state.lease_end.fetch_max(end_tick, Ordering::AcqRel);
            state
                .tick
                .fetch_max(end_tick.saturating_sub(1), Ordering::AcqRel);
            record_of(slot, 0, state.lease_end.load(Ordering::Acquire) >> cb)
        }
        Kind::Gdid => {
            counter::restore(state, rec.era, rec.end);
            let (era, end) = counter::lease(state);
            record_of(slot, era, end)
        }
    };
    Some((idx, merged))
}

fn registry_full(key: Key<'_>, capacity: usize) -> String {
    format!(
        "no free slot for the durable sequence \"{}\" (database {}): all {capacity} are in use",
        display_gdid_key(key.name),
        key.db
    )
}

/// WAL replay of one record: crash recovery, or a standby following its primary.
pub fn apply(rec: &LeaseRecord) {
    let registry = shmem::registry().expect("redo runs only with the library preloaded");
    let Some((idx, merged)) = merge(&registry, rec) else {
        error(
            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            registry_full(rec.key(), registry.capacity()),
        )
        .hint("Set snowflake.max_sequences at least as high as on the primary.")
        .raise()
    };
    write_file(idx, &merged);
}

/// Fills freshly created shared memory from the lease file and rewrites the file in slot
/// order. Runs in the postmaster before any backend exists; a lease file that cannot be
/// read stops the server, since generating without it could repeat IDs.
pub fn load_at_startup(registry: &Registry<'static>) {
    let store = Store::in_data_dir();
    let path = store.path();
    let records = store.load().unwrap_or_else(|e| {
        let why = match e {
            LoadError::Io(e) => e.to_string(),
            LoadError::Corrupt { offset, what } => {
                format!(
                    "the record at byte {offset} is damaged ({})",
                    what.describe()
                )
            }
            LoadError::Truncated { len } => {
                format!("its length {len} is not a whole number of records")
            }
        };
        error(
            Code::ERRCODE_DATA_CORRUPTED,
            format!("could not read lease file \"{}\": {why}", path.display()),
        )
        .hint(
            "Restore the file from a backup of this data directory. Moving it away starts \
             every sequence afresh: gdid counters from 1, snowflake IDs from the clock.",
        )
        .fatal()
    });
    let mut rewritten = Vec::with_capacity(records.len());
    for rec in &records {
        match merge(registry, rec) {
            Some(entry) => rewritten.push(entry),
            None => error(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                registry_full(rec.key(), registry.capacity()),
            )
            .hint("Raise snowflake.max_sequences.")
            .fatal(),
        }
    }
    // One record per slot: a later merge of the same key replaced the earlier entry.
    rewritten.sort_by_key(|(idx, _)| *idx);
    rewritten.dedup_by_key(|(idx, _)| *idx);
    if let Err(e) = store.rewrite(&rewritten) {
        error(
            Code::ERRCODE_IO_ERROR,
            format!("could not write lease file \"{}\": {e}", path.display()),
        )
        .fatal();
    }
}
