//! snowflake_id: time-ordered 64-bit snowflake IDs for PostgreSQL.
//!
//! Module wiring and start-up only. The pure cores (`registry`, `snowflake::{layout, clock,
//! generator, epoch}`, `gdid::{value, compact, counter}`, `durable::{record, store}`) know
//! nothing of PostgreSQL; `*/sql.rs` files are the thin SQL-facing layer, and
//! `durable::{lease, wal}` the lease's PostgreSQL side.

use pgrx::prelude::*;

pub mod durable;
pub mod gdid;
pub mod registry;
pub mod snowflake;

mod errors;
mod guc;
mod sequences;
mod shmem;
mod soft_error;

#[cfg(test)]
mod testrng;

pgrx::pg_module_magic!();

extension_sql_file!("snowflake/api.sql", name = "snowflake_api");
extension_sql_file!(
    "gdid/api.sql",
    name = "gdid_api",
    requires = ["snowflake_api"]
);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // SAFETY: a flag PostgreSQL sets while it loads shared_preload_libraries.
    if !unsafe { pgrx::pg_sys::process_shared_preload_libraries_in_progress } {
        // Loaded on demand (CREATE EXTENSION, LOAD): shared memory and postmaster settings
        // are out of reach now, and every entry point says so with a hint.
        return;
    }
    guc::register();
    shmem::install_hooks();
    durable::register_wal();
}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'snowflake_id'"]
    }
}
