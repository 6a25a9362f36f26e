//! The durable lease both generators share: shared memory hands out values at full speed,
//! never past a bound that is already on disk and in the WAL.
//!
//! A lease extension writes the sequence's record to the lease file (fsync), then to the
//! WAL (flushed), then publishes the new bound in shared memory. At start-up the file is
//! read back; WAL replay (crash recovery, or a standby streaming from the primary) applies
//! the records written since. Every value a caller ever saw is below a bound that both
//! survive, so a restarted or promoted server resumes above it.
//!
//! Nothing here knows either kind of sequence: a record carries a key, the layout the
//! sequence was created with and a [`record::Lease`]; each kind says how it takes one
//! (`recovery::Kinds`). Dependencies run one way: record, store, wal, file, then recovery,
//! forget and lease.

pub mod file;
pub mod forget;
pub mod kinds;
pub mod lease;
pub mod record;
pub mod recovery;
pub mod store;
pub mod wal;
