//! Bringing leases back into shared memory: from the lease file when shared memory is created
//! (server start, or re-initialisation after a crash), and from the WAL while it is replayed
//! (crash recovery, a restored backup, a standby following its primary).
//!
//! What a lease means to a sequence is its kind's business: [`Kinds`] says how to restore one
//! into a slot and how to read it back, and is registered once at start-up.
//!
//! A damaged record stops a server that starts from its own data directory: generating
//! without it could repeat IDs. A server that starts from a base backup (or as a standby)
//! may hold a record torn by the copy (the backup read it while a lease extension rewrote
//! it); every such extension was followed by its WAL record, which replay applies, so the
//! record is set aside and recovery fails only if it ends without the WAL having supplied it.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

use super::file::{os_error, write_failed, write_record};
use super::forget::forget;
use super::kinds::{self, kinds, Kinds};
use super::record::LeaseRecord;
use super::store::{Damaged, Loaded, Store};
use super::wal;
use crate::dbtext;
use crate::errors::{error, Code};
use crate::identity::OwnedKey;
use crate::identity::SequenceId;
use crate::registry::{Registry, SlotRef};

/// Registers how each kind restores its leases (see `kinds`), and the WAL resource manager
/// whose replay uses it. Only while preloading.
pub fn register(kinds: Kinds) {
    kinds::register(kinds);
    wal::register(wal::Replay {
        record: replay,
        forget: replay_forget,
        end: end_of_recovery,
    });
}

/// How the server is starting, as its data directory tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// From its own data directory (after a clean stop or a crash).
    Own,
    /// From a base backup (`backup_label`), or as a standby or for point-in-time recovery
    /// (`standby.signal`, `recovery.signal`): WAL replay will bring its files up to date.
    FromBackup,
}

impl Start {
    /// The postmaster runs in the data directory.
    pub fn of_data_dir() -> Start {
        let present = |f: &str| Path::new(f).exists();
        if present("backup_label") || present("standby.signal") || present("recovery.signal") {
            Start::FromBackup
        } else {
            Start::Own
        }
    }
}

/// The outcome of reading the file into shared memory.
#[derive(Debug)]
pub struct Restored {
    /// One record per slot that a record reached, from the slot's final state: the file to
    /// write back.
    pub rewrite: Vec<(usize, LeaseRecord)>,
    /// Damaged records set aside for replay to supply (only when starting from a backup).
    pub pending: Vec<Damaged>,
}

#[derive(Debug)]
pub enum LoadError {
    Damaged(Damaged),
    Full { key: OwnedKey, capacity: usize },
}

/// Reads what the file holds into `registry`. Every record is merged into its sequence's slot
/// (a lease never moves back, so a key found twice keeps the higher lease), and the file to
/// write back is read from the slots' final state.
pub fn load(
    loaded: Loaded,
    registry: &Registry<'_>,
    kinds: &Kinds,
    start: Start,
) -> Result<Restored, LoadError> {
    if start == Start::Own {
        if let Some(d) = loaded.damaged.first() {
            return Err(LoadError::Damaged(d.clone()));
        }
    }
    let mut slots = BTreeSet::new();
    for rec in &loaded.records {
        let at = registry
            .find_or_insert(rec.key(), rec.created_with, true)
            .map_err(|_| LoadError::Full {
                key: rec.key.clone(),
                capacity: registry.capacity(),
            })?;
        (kinds.restore)(registry, at, rec.lease);
        slots.insert((at.idx, at.generation));
    }
    let rewrite = slots
        .into_iter()
        .map(|(idx, generation)| (idx, record_of(registry, SlotRef { idx, generation }, kinds)))
        .collect();
    Ok(Restored {
        rewrite,
        pending: loaded.damaged,
    })
}

fn record_of(registry: &Registry<'_>, at: SlotRef, kinds: &Kinds) -> LeaseRecord {
    let slot = registry.slot(at.idx);
    LeaseRecord::new(slot.key(), slot.created_with(), (kinds.lease)(registry, at))
}

/// Damaged records of a server starting from a backup that replay has not supplied yet.
/// Set by the postmaster, inherited by the startup process that replays the WAL.
static PENDING: Mutex<Vec<Damaged>> = Mutex::new(Vec::new());

fn pending() -> std::sync::MutexGuard<'static, Vec<Damaged>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fills freshly created shared memory from the lease file and rewrites the file in slot
/// order. Runs in the postmaster before any backend exists; a file it cannot trust stops the
/// server, since generating without it could repeat IDs.
pub fn load_at_startup(registry: &Registry<'static>) {
    let store = Store::in_data_dir();
    let path = store.path();
    let start = Start::of_data_dir();
    let loaded = store.load().unwrap_or_else(|e| {
        error(
            Code::ERRCODE_IO_ERROR,
            format!(
                "could not read lease file \"{}\": {}",
                path.display(),
                os_error(&e)
            ),
        )
        .fatal()
    });
    let done = load(loaded, registry, kinds(), start).unwrap_or_else(|e| match e {
        LoadError::Damaged(d) => error(
            Code::ERRCODE_DATA_CORRUPTED,
            format!(
                "could not read lease file \"{}\": the record at byte {}{} is damaged ({})",
                path.display(),
                d.offset,
                d.key.as_ref().map(describe).unwrap_or_default(),
                d.what.describe(),
            ),
        )
        .hint(
            "Restore the file from a backup of this data directory. Do not delete it: every \
             sequence would start afresh and could hand out IDs it has handed out before.",
        )
        .fatal(),
        LoadError::Full { key, capacity } => error(
            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!(
                "no free slot for the durable sequence{}: all {capacity} are in use",
                describe(&key)
            ),
        )
        .hint("Raise snowflake.max_sequences.")
        .fatal(),
    });
    for d in &done.pending {
        error(
            Code::ERRCODE_DATA_CORRUPTED,
            format!(
                "lease file \"{}\": the record at byte {}{} is damaged ({}); WAL replay is \
                 expected to supply it",
                path.display(),
                d.offset,
                d.key.as_ref().map(describe).unwrap_or_default(),
                d.what.describe(),
            ),
        )
        .detail("The server starts from a base backup or as a standby, whose copy of the file can hold a record torn by the copy.")
        .log(true);
    }
    *pending() = done.pending;
    if let Err(e) = store.rewrite(&done.rewrite) {
        write_failed(&store, &e).fatal();
    }
}

/// ` (gdid sequence "billing/invoices" of database 5)`, for the server log, which has no
/// database encoding: names are shown as UTF-8 where they are.
fn describe(key: &OwnedKey) -> String {
    match SequenceId::from_key(key.key()) {
        Some(id) => format!(
            " ({} of database {})",
            dbtext::to_lossy(&id.to_string()),
            key.db
        ),
        None => format!(" ({} sequence of database {})", key.kind, key.db),
    }
}

/// WAL replay of one record: merged into its slot (never moving a lease back), then the
/// slot's record is rewritten in the file.
fn replay(rec: &LeaseRecord) {
    let kinds = kinds();
    let registry = (kinds.registry)().expect("redo runs only with the library preloaded");
    let at = registry
        .find_or_insert(rec.key(), rec.created_with, true)
        .unwrap_or_else(|_| {
            error(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!(
                    "no free slot for the durable sequence{}: all {} are in use",
                    describe(&rec.key),
                    registry.capacity()
                ),
            )
            .hint("Set snowflake.max_sequences at least as high as on the primary.")
            .fatal()
        });
    (kinds.restore)(&registry, at, rec.lease);
    write_record(at.idx, &record_of(&registry, at, kinds));
    let mut pending = pending();
    if !pending.is_empty() {
        pending.retain(|d| d.key.as_ref() != Some(&rec.key));
    }
}

/// WAL replay of a dropped sequence: dropped here too, its record cleared.
fn replay_forget(rec: &LeaseRecord) {
    let registry = (kinds().registry)().expect("redo runs only with the library preloaded");
    if let Some(at) = registry.find(rec.key()) {
        forget(&registry, at);
    }
}

/// Redo is over: every damaged record whose key could be read must have been supplied.
fn end_of_recovery() {
    let pending = std::mem::take(&mut *pending());
    let unsupplied: Vec<String> = pending
        .iter()
        .filter_map(|d| d.key.as_ref().map(describe))
        .collect();
    if !unsupplied.is_empty() {
        error(
            Code::ERRCODE_DATA_CORRUPTED,
            format!(
                "the lease file held damaged records that WAL replay did not supply:{}",
                unsupplied.join(",")
            ),
        )
        .detail(
            "Their leases are unknown, so the sequences could hand out IDs they have handed \
             out before.",
        )
        .hint("Restore the lease file from a backup taken with the server stopped, or take a new base backup.")
        .fatal();
    }
    if !pending.is_empty() {
        error(
            Code::ERRCODE_SUCCESSFUL_COMPLETION,
            format!(
                "{} damaged record(s) of the lease file had no readable key; they belonged to \
                 sequences first written during the backup, which WAL replay restored",
                pending.len()
            ),
        )
        .log(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::record::Corrupt;
    use crate::durable::record::Lease;
    use crate::durable::store::tests::record;
    use crate::identity::Kind;
    use crate::registry::tests::table;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A kind for the test: the lease is one word, restored with a max.
    fn test_kinds() -> Kinds {
        fn word<'a>(registry: &Registry<'a>, at: SlotRef) -> &'a AtomicU64 {
            registry.seq::<Words>(at).expect("gdid slot").state()
        }
        Kinds {
            restore: |registry, at, lease| {
                word(registry, at).fetch_max(lease.end, Ordering::Relaxed);
            },
            lease: |registry, at| Lease {
                era: 1,
                end: word(registry, at).load(Ordering::Relaxed),
            },
            close: |_, _| {},
            registry: || None,
        }
    }

    #[repr(transparent)]
    struct Words(AtomicU64);
    impl std::ops::Deref for Words {
        type Target = AtomicU64;
        fn deref(&self) -> &AtomicU64 {
            &self.0
        }
    }
    // SAFETY: one atomic, repr(transparent).
    unsafe impl crate::registry::SlotState for Words {
        const KIND: Kind = Kind::Gdid;
    }

    fn damaged(key: Option<&str>) -> Damaged {
        Damaged {
            offset: 512,
            what: Corrupt::Checksum,
            key: key.map(|k| record(k, 0).key),
        }
    }

    #[test]
    fn a_key_found_twice_keeps_its_higher_lease_whatever_the_order() {
        for records in [
            vec![record("a", 900), record("b", 5), record("a", 100)],
            vec![record("a", 100), record("b", 5), record("a", 900)],
        ] {
            let t = table(8);
            let registry = t.registry();
            let loaded = Loaded {
                records,
                damaged: vec![],
            };
            let done = load(loaded, &registry, &test_kinds(), Start::Own).unwrap();
            let mut ends: Vec<_> = done
                .rewrite
                .iter()
                .map(|(_, r)| (r.key.name.clone(), r.lease.end))
                .collect();
            ends.sort();
            assert_eq!(ends, [(b"a".to_vec(), 900), (b"b".to_vec(), 5)]);
            // One record per slot, at the slot's index.
            for (idx, r) in &done.rewrite {
                assert_eq!(registry.slot(*idx).key(), r.key());
            }
        }
    }

    #[test]
    fn damage_stops_an_own_start_and_waits_for_replay_from_a_backup() {
        let t = table(8);
        let registry = t.registry();
        let loaded = || Loaded {
            records: vec![record("a", 10)],
            damaged: vec![damaged(Some("b"))],
        };
        assert!(matches!(
            load(loaded(), &registry, &test_kinds(), Start::Own),
            Err(LoadError::Damaged(d)) if d == damaged(Some("b"))
        ));
        let done = load(loaded(), &registry, &test_kinds(), Start::FromBackup).unwrap();
        assert_eq!(done.pending, [damaged(Some("b"))]);
        assert_eq!(done.rewrite.len(), 1);
    }

    #[test]
    fn a_full_table_is_reported() {
        let t = table(1);
        let registry = t.registry();
        let loaded = Loaded {
            records: vec![record("a", 1), record("b", 2)],
            damaged: vec![],
        };
        assert!(matches!(
            load(loaded, &registry, &test_kinds(), Start::Own),
            Err(LoadError::Full { capacity: 1, .. })
        ));
    }
}
