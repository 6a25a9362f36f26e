//! The lease file: one 256-byte record per registry slot, at `slot * 256`.
//!
//! PURE: plain file I/O with no pgrx, so the tests run it in a temporary directory. Every
//! PostgreSQL process runs in the data directory, so the relative path lands there, where
//! `pg_basebackup` copies it along with everything else.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::record::{Corrupt, LeaseRecord, RECORD_SIZE};
use crate::identity::OwnedKey;

/// Relative to the data directory.
pub const DIR: &str = "snowflake_id";
const FILE: &str = "leases";
const TEMP: &str = "leases.tmp";

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
    /// what damage means depends on how the server starts (see `recovery`).
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
    pub fn rewrite(&self, records: &[(usize, LeaseRecord)]) -> io::Result<()> {
        let new = !self.dir.exists();
        fs::create_dir_all(&self.dir)?;
        if new {
            sync_dir(self.dir.parent().filter(|p| !p.as_os_str().is_empty()))?;
        }
        let len = records.iter().map(|(i, _)| i + 1).max().unwrap_or(0);
        let mut bytes = vec![0u8; len * RECORD_SIZE];
        for (i, r) in records {
            bytes[i * RECORD_SIZE..(i + 1) * RECORD_SIZE].copy_from_slice(&r.encode());
        }
        let temp = self.dir.join(TEMP);
        let file = File::create(&temp)?;
        file.write_all_at(&bytes, 0)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, self.path())?;
        sync_dir(Some(&self.dir))
    }

    /// Clears the record of slot `idx` (a dropped sequence) and waits until it is on disk.
    pub fn clear(&self, idx: usize) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(self.path())?;
        if file.metadata()?.len() < ((idx + 1) * RECORD_SIZE) as u64 {
            return Ok(()); // never written
        }
        file.write_all_at(&[0; RECORD_SIZE], (idx * RECORD_SIZE) as u64)?;
        file.sync_data()
    }

    /// Writes the record of slot `idx` and waits until it is on disk.
    pub fn write(&self, idx: usize, record: &LeaseRecord) -> io::Result<()> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.path())?;
        file.write_all_at(&record.encode(), (idx * RECORD_SIZE) as u64)?;
        file.sync_data()
    }
}

/// Makes a rename or a new entry in `dir` durable (the current directory when `None`).
fn sync_dir(dir: Option<&Path>) -> io::Result<()> {
    File::open(dir.unwrap_or(Path::new(".")))?.sync_all()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::durable::record::Lease;
    use crate::identity::{CreationLayout, Kind};

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
    fn rewrite_write_and_load() {
        let root = temp_dir("rw");
        let store = Store::at(&root.join(DIR));
        assert!(store.load().unwrap().records.is_empty());
        store
            .rewrite(&[(0, record("a", 10)), (3, record("b", 20))])
            .unwrap();
        store.write(3, &record("b", 30)).unwrap();
        store.write(5, &record("c", 1)).unwrap();
        store.write(6, &record("d", 1)).unwrap();
        store.clear(6).unwrap();
        store.clear(9).unwrap();
        let names: Vec<_> = store
            .load()
            .unwrap()
            .records
            .into_iter()
            .map(|r| (String::from_utf8(r.key.name).unwrap(), r.lease.end))
            .collect();
        assert_eq!(names, [("a".into(), 10), ("b".into(), 30), ("c".into(), 1)]);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn damage_is_reported_with_the_key_when_it_still_reads() {
        let root = temp_dir("bad");
        let store = Store::at(&root.join(DIR));
        store
            .rewrite(&[(0, record("a", 10)), (1, record("b", 20))])
            .unwrap();
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
