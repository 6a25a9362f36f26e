//! The lease file of releases 0.2.0 and 0.3.0, `$PGDATA/snowflake_id/leases`: 256-byte
//! records (see `record`), read whole, and kept current by WAL replay of their records (a
//! standby of a server that ran them, or crash recovery after it).
//!
//! PURE: no pgrx here (std::fs only).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::legacy::record::{Corrupt, LeaseRecord, OwnedKey, RECORD_SIZE};

/// Relative to the data directory.
pub const DIR: &str = "snowflake_id";
const FILE: &str = "leases";

pub struct Store {
    dir: PathBuf,
}

/// The file, read back.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The records that read back whole.
    pub records: Vec<LeaseRecord>,
    /// The ones that did not: a checksum or a field wrong, or a partial record at the end.
    pub damaged: Vec<Damaged>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    /// Byte offset of the record in the file.
    pub offset: u64,
    pub what: Corrupt,
    /// The sequence it belongs to, if its key fields still read as one.
    pub key: Option<OwnedKey>,
}

impl Store {
    pub fn in_data_dir() -> Store {
        Store::at(Path::new(DIR))
    }

    pub fn at(dir: &Path) -> Store {
        Store {
            dir: dir.to_path_buf(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// Every record in the file (none if there is no file yet), and the damaged ones apart:
    /// what damage means is the caller's (`adopt`: the update refuses and says which record).
    pub fn load(&self) -> io::Result<Loaded> {
        let bytes = match fs::read(self.path()) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Loaded::default()),
            Err(e) => return Err(e),
        };
        let mut loaded = Loaded::default();
        let chunks = bytes.chunks_exact(RECORD_SIZE);
        if !chunks.remainder().is_empty() {
            // A record being added at the end when the file was copied.
            loaded.damaged.push(Damaged {
                offset: (bytes.len() - chunks.remainder().len()) as u64,
                what: Corrupt::Partial,
                key: None,
            });
        }
        for (i, chunk) in chunks.enumerate() {
            let chunk: &[u8; RECORD_SIZE] = chunk.try_into().expect("chunks_exact");
            match LeaseRecord::decode(chunk) {
                Ok(Some(r)) => loaded.records.push(r),
                Ok(None) => {}
                Err(what) => loaded.damaged.push(Damaged {
                    offset: (i * RECORD_SIZE) as u64,
                    what,
                    key: LeaseRecord::key_of_damaged(chunk),
                }),
            }
        }
        loaded.damaged.sort_by_key(|d| d.offset);
        Ok(loaded)
    }

    /// Replaces the whole file with `records` (slot index, record) atomically: a crash
    /// leaves either the old file or the new one.
    /// Puts `record` into the file: over the record of its key if there is one (keeping the
    /// higher lease, as a lease never moves back), else into the first unused place. Synced
    /// before it returns.
    pub fn upsert(&self, record: &LeaseRecord) -> io::Result<()> {
        let at = match self.find(&record.key)? {
            Found::At(_, old) if old.lease >= record.lease => return Ok(()),
            Found::At(i, _) => i,
            Found::Free(i) => i,
        };
        self.put(at, &record.encode())
    }

    /// Clears the record of `key` (its sequence was dropped), if there is one.
    pub fn clear(&self, key: &OwnedKey) -> io::Result<()> {
        match self.find(key)? {
            Found::At(i, _) => self.put(i, &[0; RECORD_SIZE]),
            Found::Free(_) => Ok(()),
        }
    }

    /// Where `key`'s record is, or else the first place a new one may go.
    fn find(&self, key: &OwnedKey) -> io::Result<Found> {
        let bytes = match fs::read(self.path()) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Free(0)),
            Err(e) => return Err(e),
        };
        let mut free = None;
        let chunks = bytes.chunks_exact(RECORD_SIZE);
        let count = chunks.len();
        for (i, chunk) in chunks.enumerate() {
            let chunk: &[u8; RECORD_SIZE] = chunk.try_into().expect("chunks_exact");
            match LeaseRecord::decode(chunk) {
                Ok(Some(r)) if r.key == *key => return Ok(Found::At(i, r)),
                Ok(None) if free.is_none() => free = Some(i),
                _ => {}
            }
        }
        Ok(Found::Free(free.unwrap_or(count)))
    }

    fn put(&self, idx: usize, bytes: &[u8; RECORD_SIZE]) -> io::Result<()> {
        let new = !self.dir.exists();
        fs::create_dir_all(&self.dir)?;
        if new {
            sync_dir(self.dir.parent().filter(|p| !p.as_os_str().is_empty()))?;
        }
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.path())?;
        file.write_all_at(bytes, (idx * RECORD_SIZE) as u64)?;
        file.sync_data()
    }
}

enum Found {
    At(usize, LeaseRecord),
    Free(usize),
}

fn sync_dir(dir: Option<&Path>) -> io::Result<()> {
    File::open(dir.unwrap_or(Path::new(".")))?.sync_all()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::identity::{CreationLayout, Kind};
    use crate::core::lease::Lease;

    pub fn record(name: &str, end: u64) -> LeaseRecord {
        LeaseRecord {
            key: OwnedKey {
                db: 5,
                kind: Kind::Gdid,
                name: name.as_bytes().to_vec(),
            },
            created_with: CreationLayout::default(),
            lease: Lease { era: 1, end },
        }
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("snowflake_id_store_{tag}_{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn replay_keeps_the_higher_lease_per_key_and_clears_dropped_ones() {
        let root = temp_dir("rw");
        let store = Store::at(&root.join(DIR));
        assert!(store.load().unwrap().records.is_empty());
        store.upsert(&record("a", 10)).unwrap();
        store.upsert(&record("b", 20)).unwrap();
        store.upsert(&record("b", 15)).unwrap();
        store.upsert(&record("b", 30)).unwrap();
        store.upsert(&record("c", 1)).unwrap();
        store.clear(&record("a", 0).key).unwrap();
        store.upsert(&record("d", 7)).unwrap();
        let names: Vec<_> = store
            .load()
            .unwrap()
            .records
            .into_iter()
            .map(|r| (String::from_utf8(r.key.name).unwrap(), r.lease.end))
            .collect();
        // d took a's place, cleared.
        assert_eq!(names, [("d".into(), 7), ("b".into(), 30), ("c".into(), 1)]);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn damage_is_reported_with_the_key_when_it_still_reads() {
        let root = temp_dir("bad");
        let store = Store::at(&root.join(DIR));
        store.upsert(&record("a", 10)).unwrap();
        store.upsert(&record("b", 20)).unwrap();
        let mut bytes = fs::read(store.path()).unwrap();
        bytes[RECORD_SIZE + 26] ^= 1; // b's lease end
        fs::write(store.path(), &bytes).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.records, [record("a", 10)]);
        assert_eq!(
            loaded.damaged,
            [Damaged {
                offset: 256,
                what: Corrupt::Checksum,
                key: Some(record("b", 0).key),
            }]
        );
        bytes.truncate(RECORD_SIZE + 100);
        fs::write(store.path(), &bytes).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.records, [record("a", 10)]);
        assert_eq!(loaded.damaged[0].what, Corrupt::Partial);
        fs::remove_dir_all(root).unwrap();
    }
}
