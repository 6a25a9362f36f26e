//! What relations of a name handed out before their transaction committed: the floor of the
//! next relation of that name.
//!
//! A sequence made by the transaction that uses it (the first migration: `CREATE EXTENSION`, a
//! table whose DEFAULT names a new sequence and seed rows, all in one transaction) goes if that
//! transaction rolls back, and with it the lease its relation held; values it handed out may
//! already have reached a client. The next relation of the same name starts fresh, and a gdid
//! counter would start at 1 again. So every lease such a relation takes is written here too,
//! under the database, kind and relation name, and a fresh relation of that name starts above
//! it. An entry is forgotten when the transaction that wrote it commits (its relation then
//! holds the lease durably); one whose transaction rolled back stays until the server stops.
//!
//! The table is a fixed array in shared memory, used under one lock (`pg::shmem`): only
//! transactions that generate from a relation they made come here, once per lease.
//!
//! PURE: no pgrx here.

use crate::core::identity::{Kind, RelationName, MAX_NAME_LEN};

/// How many names the table holds. A name comes here only from a transaction that made its
/// relation and generated from it; it stays only if that transaction rolled back.
pub const CAPACITY: usize = 1024;

/// Which relation name a floor is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloorKey {
    pub db: u32,
    pub kind: Kind,
    pub name: RelationName,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Entry {
    db: u32,
    /// 0: a free entry; else the kind's number.
    kind: u8,
    len: u8,
    name: [u8; MAX_NAME_LEN],
    /// The highest relation value (lease) recorded: no value of the name was handed out at or
    /// above it (see `core::lease`).
    value: i64,
}

impl Entry {
    fn is(&self, key: &FloorKey) -> bool {
        self.kind == key.kind as u8
            && self.db == key.db
            && &self.name[..usize::from(self.len)] == key.name.as_bytes()
    }
}

/// The table. All-zero bytes are the empty table.
#[repr(C)]
pub struct NameFloors {
    entries: [Entry; CAPACITY],
}

/// Every entry holds another name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

impl NameFloors {
    /// The floor of `key`: the highest lease a relation of that name took before its
    /// transaction committed, if one did (and did not commit since).
    pub fn floor(&self, key: &FloorKey) -> Option<i64> {
        self.entries.iter().find(|e| e.is(key)).map(|e| e.value)
    }

    /// Raises the floor of `key` to `value`.
    pub fn record(&mut self, key: &FloorKey, value: i64) -> Result<(), Full> {
        if let Some(e) = self.entries.iter_mut().find(|e| e.is(key)) {
            e.value = e.value.max(value);
            return Ok(());
        }
        let free = self.entries.iter_mut().find(|e| e.kind == 0).ok_or(Full)?;
        let name = key.name.as_bytes();
        let mut bytes = [0u8; MAX_NAME_LEN];
        bytes[..name.len()].copy_from_slice(name);
        *free = Entry {
            db: key.db,
            kind: key.kind as u8,
            len: name.len() as u8,
            name: bytes,
            value,
        };
        Ok(())
    }

    /// Sets the floor of `key` to `value`, lower or higher: at a rollback, to exactly what was
    /// handed out under the leases the floor had been raised to.
    pub fn set(&mut self, key: &FloorKey, value: i64) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.is(key)) {
            e.value = value;
        }
    }

    /// Forgets the floors of databases for which `gone` is true (dropped since).
    pub fn forget_databases(&mut self, gone: impl Fn(u32) -> bool) {
        for e in self.entries.iter_mut().filter(|e| e.kind != 0) {
            if gone(e.db) {
                e.kind = 0;
            }
        }
    }

    /// Forgets `key`: the relation that took its leases was committed, and holds them.
    pub fn forget(&mut self, key: &FloorKey) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.is(key)) {
            e.kind = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Box<NameFloors> {
        // SAFETY: all-zero bytes are the empty table (every field is an integer or bytes).
        unsafe { Box::new(std::mem::zeroed()) }
    }

    /// How many names have a floor.
    fn names(t: &NameFloors) -> usize {
        t.entries.iter().filter(|e| e.kind != 0).count()
    }

    fn key(db: u32, kind: Kind, name: &str) -> FloorKey {
        FloorKey {
            db,
            kind,
            name: RelationName::from_bytes(name.as_bytes()).unwrap(),
        }
    }

    #[test]
    fn a_floor_only_rises_and_is_kept_per_database_kind_and_name() {
        let mut t = empty();
        let orders = key(5, Kind::Snowflake, "orders");
        assert_eq!(t.floor(&orders), None);
        t.record(&orders, 100).unwrap();
        t.record(&orders, 40).unwrap();
        assert_eq!(t.floor(&orders), Some(100));
        t.record(&orders, 250).unwrap();
        assert_eq!(t.floor(&orders), Some(250));
        for other in [
            key(6, Kind::Snowflake, "orders"),
            key(5, Kind::Gdid, "orders"),
            key(5, Kind::Snowflake, "order"),
            key(5, Kind::Snowflake, "orders2"),
        ] {
            assert_eq!(t.floor(&other), None, "{other:?}");
        }
        assert_eq!(names(&t), 1);
        t.set(&orders, 120);
        assert_eq!(
            t.floor(&orders),
            Some(120),
            "brought down to what was handed out"
        );
        t.forget(&orders);
        assert_eq!(t.floor(&orders), None);
        assert_eq!(names(&t), 0);
        t.set(&orders, 5);
        assert_eq!(t.floor(&orders), None, "set never makes an entry");
    }

    #[test]
    fn the_floors_of_dropped_databases_go() {
        let mut t = empty();
        for db in 1..=4 {
            t.record(&key(db, Kind::Gdid, "s/x"), 10).unwrap();
        }
        t.forget_databases(|db| db % 2 == 0);
        assert_eq!(names(&t), 2);
        assert_eq!(t.floor(&key(1, Kind::Gdid, "s/x")), Some(10));
        assert_eq!(t.floor(&key(2, Kind::Gdid, "s/x")), None);
    }

    #[test]
    fn a_full_table_refuses_new_names_but_raises_known_ones_and_reuses_forgotten_entries() {
        let mut t = empty();
        for i in 0..CAPACITY {
            t.record(&key(1, Kind::Gdid, &format!("s/{i}")), i as i64)
                .unwrap();
        }
        assert_eq!(t.record(&key(1, Kind::Gdid, "s/new"), 1), Err(Full));
        t.record(&key(1, Kind::Gdid, "s/7"), 1_000).unwrap();
        assert_eq!(t.floor(&key(1, Kind::Gdid, "s/7")), Some(1_000));
        t.forget(&key(1, Kind::Gdid, "s/3"));
        t.record(&key(1, Kind::Gdid, "s/new"), 9).unwrap();
        assert_eq!(t.floor(&key(1, Kind::Gdid, "s/new")), Some(9));
        assert_eq!(t.floor(&key(1, Kind::Gdid, "s/3")), None);
        assert_eq!(names(&t), CAPACITY);
    }

    #[test]
    fn names_of_every_length_are_told_apart() {
        let mut t = empty();
        let long = "x".repeat(MAX_NAME_LEN);
        t.record(&key(1, Kind::Snowflake, &long), 7).unwrap();
        assert_eq!(t.floor(&key(1, Kind::Snowflake, &long)), Some(7));
        assert_eq!(t.floor(&key(1, Kind::Snowflake, &long[1..])), None);
    }
}
