//! PURE: everything that knows nothing of PostgreSQL, so that unit and property tests run it as
//! it is: the layouts and tick arithmetic, gdid values and their text and compact forms, the
//! cache of sequences in shared memory as plain atomics, lease arithmetic, the fallback's
//! search, what replication brought, the values still in flight. `scripts/check_layers.py` keeps every module here free of
//! pgrx and of imports from outside `core`.

pub mod cache;
pub mod citus;
pub mod claim;
pub mod crc32c;
pub mod dbtext;
pub mod gdid;
pub mod identity;
pub mod idrange;
pub mod inflight;
pub mod lease;
pub mod membarrier;
pub mod name_floors;
pub mod plain_decimal;
pub mod probe;
pub mod reclamation;
pub mod sightings;
pub mod snowflake;
pub mod sync;
pub mod wallclock;

#[cfg(all(test, loom))]
mod loom_models;
#[cfg(test)]
pub mod testrng;
