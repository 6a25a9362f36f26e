//! Finding a named sequence of the current database in shared memory, and creating it (under
//! the lease lock, within the limits) the first time the server meets it: the naming errors,
//! the limit errors, the layout check, and the seed (see `seed`) a new sequence needs.

use pgrx::pg_sys;

use crate::durable::lease::LeaseLock;
use crate::errors::{error, not_preloaded, Clipped, Code};
use crate::gdid::handle::GdidSeq;
use crate::guc::{self, Server};
use crate::identity::{CreationLayout, Key, NameError, SequenceId, SequenceName, MAX_NAME_LEN};
use crate::registry::{Registry, Seq, Slot, SlotRef, SlotState};
use crate::snowflake::epoch::format_utc;
use crate::snowflake::handle::{creation_layout, SnowflakeSeq};
use crate::snowflake::layout::Layout;
use crate::{seed, shmem};

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

/// Raises the ERROR for a bad name: empty, too long, with a NUL byte.
pub fn check_name(name: &SequenceName<'_>) {
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
    check_name(&name);
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
        seed::snowflake(registry, seq, bytes, layout, node);
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
        seed::gdid(registry, seq, scope, sequence, authority);
    }
    seq
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
