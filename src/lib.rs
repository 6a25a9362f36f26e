//! snowflake_id: time-ordered 64-bit snowflake IDs and a 12-byte gdid type for PostgreSQL.
//!
//! Module wiring and start-up only; the README's "Layout of the source" is the map. The pure
//! cores (`identity`, `lease`, `registry`, `epochs`, `dbtext`, `wallclock`, the kinds' values
//! and handles) know nothing of PostgreSQL. `sqlfn`, `fmgr` and `errors` are the calling
//! convention every SQL function uses, `*/sql.rs` the thin SQL-facing layer, `sequences` the
//! life of a named sequence (its relation, its cache entry, its lease), `node` this server's
//! numbers, `hooks` everything installed into PostgreSQL.

pub mod dbtext;
pub mod epochs;
pub mod gdid;
pub mod identity;
pub mod lease;
pub mod legacy;
pub mod plain_decimal;
pub mod probe;
pub mod registry;
pub mod snowflake;
pub mod wallclock;

mod compat;
mod detection;
mod errors;
mod fmgr;
mod guc;
mod hooks;
mod lookup;
mod node;
mod pgcompat;
mod prerequisites;
mod sequences;
mod shmem;
mod spi;
mod sqlfn;

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
            hooks::install();
        })
    }
}
