//! The durable lease both generators share: shared memory hands out values at full speed,
//! never past a bound that is already on disk and in the WAL.
//!
//! A lease extension writes the sequence's record to the lease file (fsync), then to the
//! WAL (flushed), then publishes the new bound in shared memory. At start-up the file is
//! read back; WAL replay (crash recovery, or a standby streaming from the primary) applies
//! the records written since. Every value a caller ever saw is below a bound that both
//! survive, so a restarted or promoted server resumes above it.

pub mod record;
pub mod store;
mod wal;

pub use lease::{
    advance_gdid, apply, check_layout, display_gdid_key, extend_gdid, extend_snowflake,
    load_at_startup, recorded_of, require_writable,
};
pub use wal::register as register_wal;

mod lease;
