//! What the SQL functions of both generators share: finding a named sequence in shared memory
//! (the naming errors, the current database, the table-full error), the check that WAL can be
//! written, the settings a generator needs; and how recovery restores each kind of sequence.

use pgrx::pg_sys;

use crate::durable::lease::LeaseLock;
use crate::durable::record::{Lease, LeaseRecord};
use crate::durable::recovery::{self, Kinds};
use crate::errors::{error, not_preloaded, Clipped, Code};
use crate::gdid::counter::GdidState;
use crate::gdid::sequence::GdidSeq;
use crate::gdid::value::Gdid;
use crate::guc::{self, Server};
use crate::registry::{
    CreationLayout, Key, Kind, OwnedKey, Registry, Seq, Slot, SlotRef, SlotState,
};
use crate::sequence_id::{NameError, SequenceId, SequenceName, MAX_NAME_LEN};
use crate::sightings::What;
use crate::snowflake::epoch::format_utc;
use crate::snowflake::layout::Layout;
use crate::snowflake::sequence::{creation_layout, SnowflakeSeq, SnowflakeState};
use crate::snowflake::wallclock;
use crate::{dropping, observe, seed, shmem};

pub fn current_db() -> u32 {
    // SAFETY: MyDatabaseId is set for the life of a backend connected to a database.
    unsafe { pg_sys::MyDatabaseId }.to_u32()
}

/// The registry, or the ERROR for a library that was not preloaded.
pub fn registry() -> Registry<'static> {
    shmem::registry().unwrap_or_else(|| not_preloaded())
}

/// What was fixed at server start, or the ERROR for a library that was not preloaded.
pub fn server() -> &'static Server {
    guc::server().unwrap_or_else(|| not_preloaded())
}

/// Generators write WAL, so like `nextval` they refuse where WAL cannot be written. The
/// check does not depend on whether the lease happens to need extending, so the behaviour
/// is the same on every call.
/// What every generator checks before it hands anything out: that WAL can be written
/// ([`require_writable`]), and that no other server is known to use this server's number
/// for `what` (when `snowflake.refuse_shared_node` is on).
pub fn require_may_generate(function: &str, what: What) {
    require_writable(function);
    observe::refuse_if_shared(what);
}

/// The size of a batch or block: at least 1.
pub fn count_argument(n: i32, what: &str) -> u64 {
    if n < 1 {
        error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{what} size must be at least 1, not {n}"),
        )
        .raise();
    }
    n as u64
}

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

/// The ERROR for a setting a generator needs and the server was not given.
fn setting_missing(setting: &str, range: &str, how: &str) -> ! {
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("{setting} is not set"),
    )
    .detail(format!(
        "Every value this server generates carries it, so it must be unique among the \
         servers whose values meet; there is no default. Range {range}."
    ))
    .hint(how.to_owned())
    .raise()
}

/// This server's node number, or the ERROR when `snowflake.node_id` is not set.
pub fn node_id(server: &Server) -> u32 {
    server.node.unwrap_or_else(|| {
        setting_missing(
            "snowflake.node_id",
            &format!("0 .. {}", server.layout.max_node()),
            "Set snowflake.node_id in postgresql.conf (or with ALTER SYSTEM) and restart the \
             server.",
        )
    })
}

/// This session's gdid authority, or the ERROR when `gdid.authority` is not set.
pub fn gdid_authority() -> u8 {
    guc::gdid_authority().unwrap_or_else(|| {
        setting_missing(
            "gdid.authority",
            "0 .. 15",
            "Set gdid.authority in postgresql.conf (or with ALTER SYSTEM) and reload the \
             configuration.",
        )
    })
}

/// Raises the ERROR for a bad name.
fn check_or_raise(name: &SequenceName<'_>) {
    let Err(bad) = name.check() else { return };
    let what = bad.part.describe();
    match bad.error {
        NameError::Empty => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{what} name must not be empty"),
        )
        .raise(),
        NameError::TooLong => error(
            Code::ERRCODE_NAME_TOO_LONG,
            format!("{what} name \"{}\" is too long", Clipped(bad.name)),
        )
        .detail(format!("Names are at most {MAX_NAME_LEN} bytes."))
        .raise(),
        NameError::Nul => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{what} name must not contain a NUL byte"),
        )
        .raise(),
    }
}

/// Sequence `name` of the current database as its kind's handle, its slot claimed with
/// `created_with` if it is new; raises the naming errors and the limit errors.
fn find_or_create<S: SlotState>(
    registry: &Registry<'static>,
    name: SequenceName<'_>,
    created_with: CreationLayout,
) -> Seq<'static, S> {
    loop {
        if let Some(seq) = registry.seq::<S>(slot_of(registry, name, created_with)) {
            return seq;
        }
        // Dropped by another backend since it was found: the name now leads to a new slot.
    }
}

/// The slot of sequence `name` (see [`find_or_create`]). New names are created under the
/// lease lock, so that the per-database limit holds exactly; finding an existing one takes
/// no lock.
fn slot_of(
    registry: &Registry<'static>,
    name: SequenceName<'_>,
    created_with: CreationLayout,
) -> SlotRef {
    check_or_raise(&name);
    let key_name = name.key_name();
    let db = current_db();
    let key = Key {
        db,
        kind: name.kind(),
        name: key_name.as_bytes(),
    };
    if let Some(at) = registry.find(key) {
        return at;
    }
    let id = SequenceId { db, name };
    let mut waited_ms = 0;
    loop {
        let lock = LeaseLock::acquire();
        if let Some(at) = registry.find(key) {
            return at;
        }
        let limit = guc::max_sequences_per_database();
        if registry.count_in_database(db) >= limit {
            error(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!("cannot create {id}: this database has {limit} sequences"),
            )
            .detail("snowflake.max_sequences_per_database limits the sequences of one database.")
            .hint(
                "Drop sequences that are no longer used (snowflake_drop_sequence, \
                 gdid_drop_sequence), or raise snowflake.max_sequences_per_database.",
            )
            .raise();
        }
        if let Ok(at) = registry.find_or_insert(key, created_with, false) {
            return at;
        }
        let waiting = registry.dropped_in_use();
        if waiting > 0 && waited_ms < RECLAIM_WAIT_MS {
            // Slots of dropped sequences come free as the transactions that were running
            // when they were dropped end: wait a little, without the lock.
            std::mem::drop(lock);
            // SAFETY: pg_usleep only sleeps; interrupts are checked right after.
            unsafe { pg_sys::pg_usleep(1000) };
            pgrx::check_for_interrupts!();
            waited_ms += 1;
            continue;
        }
        let e = error(
            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!(
                "cannot create {id}: all {} slots are in use",
                registry.capacity()
            ),
        )
        .hint(
            "Drop sequences that are no longer used, or raise snowflake.max_sequences and \
             restart the server.",
        );
        if waiting == 0 {
            e.raise()
        }
        e.detail(format!(
            "{waiting} of them hold dropped sequences, which take new ones once the \
             transactions that were running when they were dropped have ended."
        ))
        .raise()
    }
}

/// How long creating a sequence waits for the slot of a dropped one to come free when every
/// slot is taken.
const RECLAIM_WAIT_MS: u32 = 1_000;

/// The snowflake sequence `name` of the current database, created under the server's layout
/// if it is new, and above the stored IDs of `node` if this server meets it for the first
/// time (see `seed`). One created under another layout is refused: its state counts ticks of
/// that layout, so this check comes before anything reads them.
pub fn snowflake(
    registry: &Registry<'static>,
    bytes: &[u8],
    layout: &Layout,
    node: u32,
) -> SnowflakeSeq<'static> {
    let name = SequenceName::Snowflake(bytes);
    let seq: SnowflakeSeq = find_or_create(registry, name, creation_layout(layout));
    if !seq.created_under(layout) {
        layout_changed(&seq, name, layout);
    }
    if !seq.slot().is_seeded() {
        seed::exclusively(seq.at(), || {
            if seq.slot().is_seeded() {
                return; // seeded by the backend this one waited for
            }
            // The sequence's next tick is never below the clock's now, so only stored IDs at
            // or above it can collide; holding the sequence at now also keeps a clock that
            // steps back meanwhile from reaching below what was looked at.
            let now = wallclock::precise_unix_ms();
            if let (Ok(now_ms), Ok(from)) = (layout.ms_since_epoch(now), layout.min_id_at(now)) {
                seq.raise_to((now_ms << layout.counter_bits).saturating_sub(1));
                if let Some(id) = seed::snowflake_floor(bytes, node, layout, from) {
                    let parts = layout
                        .decode(id)
                        .expect("the floor decodes: it is a node's ID of this layout");
                    seq.raise_to(layout.tick_of(parts));
                }
            }
            // A dropped sequence of the name may have handed out IDs that are not stored
            // yet (its slot has not taken a new sequence, so transactions that used it may
            // still run): continue above them too.
            let _lock = LeaseLock::acquire();
            for old in registry.tombstones::<SnowflakeState>(key_of(name).key()) {
                if old.slot().created_with() == seq.slot().created_with() {
                    seq.raise_to(old.closed_at());
                }
            }
            seq.slot().mark_seeded();
        });
    }
    seq
}

/// The gdid sequence (`scope`, `sequence`) of the current database, created if new, and
/// above the stored gdids of the session's authority if this server meets it for the first
/// time (see `seed`; without an authority it stays unseeded until a generator needs it).
pub fn gdid(registry: &Registry<'static>, scope: &[u8], sequence: &[u8]) -> GdidSeq<'static> {
    let name = SequenceName::Gdid { scope, sequence };
    let seq: GdidSeq = find_or_create(registry, name, CreationLayout::default());
    if let (false, Some(authority)) = (seq.slot().is_seeded(), guc::gdid_authority()) {
        seed::exclusively(seq.at(), || {
            if seq.slot().is_seeded() {
                return; // seeded by the backend this one waited for
            }
            if let Some(floor) = seed::gdid_floor(scope, sequence, authority) {
                advance(seq, floor);
            }
            // As for snowflake sequences: above what a dropped sequence of the names handed
            // out, stored or not.
            let dropped: Vec<(u32, u64)> = {
                let _lock = LeaseLock::acquire();
                registry
                    .tombstones::<GdidState>(key_of(name).key())
                    .iter()
                    .map(|old| old.closed_at())
                    .collect()
            };
            for (era, last) in dropped {
                advance(seq, Gdid::from_parts(era, 0, last));
            }
            seq.slot().mark_seeded();
        });
    }
    seq
}

/// Moves gdid sequence `seq` so that its next gdid is later than `past` (never back). False
/// if the sequence was dropped meanwhile.
pub fn advance(seq: GdidSeq<'_>, past: Gdid) -> bool {
    let lock = LeaseLock::acquire();
    match seq.plan_advance(past.era, past.counter()) {
        Some(m) => persist_then_publish(&lock, seq, m.lease, || {
            seq.publish(m, wallclock::precise_unix_ms())
        }),
        None => true,
    }
}

/// Under the lease lock: makes `lease` durable for `seq` (the lease file, then the WAL, see
/// `durable::lease`), then runs `publish`, which lets shared memory use it. False, with
/// nothing written, if the sequence was dropped meanwhile (drops hold the same lock): its
/// record left the lease file with it, and the caller finds the name's new sequence.
pub fn persist_then_publish<S: SlotState>(
    lock: &LeaseLock,
    seq: Seq<'_, S>,
    lease: Lease,
    publish: impl FnOnce(),
) -> bool {
    if !seq.is_current() {
        return false;
    }
    let slot = seq.slot();
    lock.persist(
        seq.idx(),
        &LeaseRecord::new(slot.key(), slot.created_with(), lease),
    );
    publish();
    true
}

/// Drops sequence `name` of the current database when the transaction commits, if it exists
/// (see `dropping`): the next use of the name then starts a new sequence, seeded above the
/// stored values (see `seed`). True if it existed.
pub fn drop(registry: &Registry<'static>, name: SequenceName<'_>) -> bool {
    check_or_raise(&name);
    let key_name = name.key_name();
    let key = Key {
        db: current_db(),
        kind: name.kind(),
        name: key_name.as_bytes(),
    };
    if registry.find(key).is_none() {
        return false;
    }
    dropping::at_commit(key.to_owned());
    true
}

/// Drops every sequence of database `db`, which is being dropped: their slots take new
/// sequences once no backend can be using them, and a new database that gets its OID starts
/// its sequences afresh (seeded).
pub fn forget_database(db: u32) {
    let Some(registry) = shmem::registry() else {
        return;
    };
    let _lock = LeaseLock::acquire();
    for kind in [Kind::Snowflake, Kind::Gdid] {
        let found: Vec<SlotRef> = registry.of_database(db, kind).collect();
        for at in found {
            recovery::forget(&registry, at);
        }
    }
}

/// The registry key of sequence `name` of the current database.
fn key_of(name: SequenceName<'_>) -> OwnedKey {
    Key {
        db: current_db(),
        kind: name.kind(),
        name: name.key_name().as_bytes(),
    }
    .to_owned()
}

/// The name of the sequence in `slot`, for messages.
pub fn id_of(slot: &Slot) -> SequenceId<'_> {
    SequenceId::from_key(slot.key()).expect("registry keys are built from sequence names")
}

/// The ERROR for a sequence created under other layout settings than the server's now.
fn layout_changed(seq: &SnowflakeSeq<'_>, name: SequenceName<'_>, now: &Layout) -> ! {
    let was = seq.layout();
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("snowflake sequence \"{name}\" was created with a different layout"),
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

fn restore(registry: &Registry<'_>, at: SlotRef, lease: Lease) {
    if let Some(seq) = registry.seq::<SnowflakeState>(at) {
        seq.restore(lease);
    } else if let Some(seq) = registry.seq::<GdidState>(at) {
        seq.restore(lease);
    }
}

fn lease(registry: &Registry<'_>, at: SlotRef) -> Lease {
    registry
        .seq::<SnowflakeState>(at)
        .map(|s| s.lease())
        .or_else(|| registry.seq::<GdidState>(at).map(|g| g.lease()))
        .unwrap_or_default()
}

fn close(registry: &Registry<'_>, at: SlotRef) {
    if let Some(seq) = registry.dropped::<SnowflakeState>(at) {
        seq.close();
    } else if let Some(seq) = registry.dropped::<GdidState>(at) {
        seq.close();
    }
}

/// How recovery and drops handle either kind of sequence.
pub const KINDS: Kinds = Kinds {
    restore,
    lease,
    close,
    registry: shmem::recovery_registry,
};
