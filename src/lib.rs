//! snowflake_id: time-ordered 64-bit snowflake IDs and a 12-byte gdid type for PostgreSQL.
//!
//! Module wiring and start-up only. The pure cores (`registry`, `sequence_id`, `dbtext`,
//! `snowflake::{layout, clock, epoch, sequence}`, `gdid::{value, compact, counter, sequence}`,
//! `durable::{record, store}`) know nothing of PostgreSQL. `fmgr` and `errors` are the
//! calling convention every SQL function uses, `*/sql.rs` the thin SQL-facing layer,
//! `sequences` what both generators share, and `durable::{wal, recovery, lease}` the lease's
//! PostgreSQL side.

pub mod dbtext;
pub mod durable;
pub mod epochs;
pub mod gdid;
pub mod plain_decimal;
pub mod registry;
pub mod sequence_id;
pub mod sightings;
pub mod snowflake;

mod callsite;
mod compat;
mod defaults;
mod dropdb;
mod dropping;
mod errors;
mod fmgr;
mod guc;
mod maintenance;
mod observe;
mod seed;
mod sequences;
mod shmem;
mod spi;
mod sqlfn;
mod utility;

#[cfg(test)]
mod testrng;

/// Every SQL function the library declares, by module (see `sqlfn`): a test compares them
/// with api.sql.
#[cfg(test)]
const SQL_FUNCTIONS: &[&[sqlfn::SqlFunction]] = &[
    snowflake::sql::FUNCTIONS,
    gdid::sql::FUNCTIONS,
    gdid::ops::FUNCTIONS,
];

pgrx::pg_module_magic!();

pgrx::extension_sql_file!("snowflake/api.sql", name = "snowflake_api");
pgrx::extension_sql_file!(
    "gdid/api.sql",
    name = "gdid_api",
    requires = ["snowflake_api"]
);

#[no_mangle]
pub extern "C" fn _PG_init() {
    // SAFETY: PostgreSQL calls _PG_init once, when it loads the library; the outermost frame.
    unsafe {
        errors::boundary(|| {
            // A flag PostgreSQL sets while it loads shared_preload_libraries.
            if !pgrx::pg_sys::process_shared_preload_libraries_in_progress {
                // Loaded on demand (CREATE EXTENSION, LOAD): shared memory and postmaster
                // settings are out of reach now, and every entry point says so with a hint.
                return;
            }
            guc::register();
            shmem::install_hooks(durable::recovery::load_at_startup);
            durable::recovery::register(sequences::KINDS);
            dropdb::install_hook();
            utility::install_hook();
        })
    }
}
