//! Releases 0.2.0 and 0.3.0 kept each sequence's lease in a file of the data directory
//! (`snowflake_id/leases`) and in WAL records of their own. What is left of that here carries
//! those leases into sequence relations when a database's extension is updated (`adopt`), and
//! keeps the file current while WAL from those releases is replayed (`wal`). Nothing writes
//! either any more.

pub mod adopt;
pub mod record;
pub mod store;
pub mod wal;
