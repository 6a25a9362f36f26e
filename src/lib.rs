//! snowflake_id: time-ordered 64-bit snowflake IDs and a 12-byte gdid type for PostgreSQL.
//!
//! Module wiring and start-up only; CONTRIBUTING.md's "Layout of the source" is the map. The
//! folders say what the code is, and are layers (each imports only from those below it,
//! `scripts/check_layers.py`): `core` knows nothing of PostgreSQL; `pg` the plumbing (errors,
//! the calling convention, SPI, shared memory); `guc` the settings; `node` this server's
//! numbers; `detection` what logical replication brings; `sequences` the life of a named
//! sequence (its relation, its cache entry, its lease, generating); `sql` the SQL face (every
//! declaration, the scripts); `legacy` what is left of 0.3.0's lease file, for the update from
//! it; `hooks` everything installed into PostgreSQL. Nothing is public outside the crate: the
//! unit tests live beside what they test.
//!
//! Built with `RUSTFLAGS="--cfg loom"` (`make loom`), the crate is `core` alone, its atomics
//! the model checker's (see `core::sync`): everything else is left out, and what only it used
//! is unused there.

// Under loom only the models use `core`: what the rest of the crate calls is unused there.
#![cfg_attr(loom, allow(dead_code))]

mod core;
#[cfg(not(loom))]
mod legacy;

#[cfg(not(loom))]
mod detection;
#[cfg(not(loom))]
mod guc;
#[cfg(not(loom))]
mod hooks;
#[cfg(not(loom))]
mod node;
#[cfg(not(loom))]
mod pg;
#[cfg(not(loom))]
mod sequences;
#[cfg(not(loom))]
mod sql;

#[cfg(not(loom))]
pgrx::pg_module_magic!();

#[cfg(not(loom))]
pgrx::extension_sql_file!("sql/snowflake.sql", name = "snowflake_api");
#[cfg(not(loom))]
pgrx::extension_sql_file!(
    "sql/gdid.sql",
    name = "gdid_api",
    requires = ["snowflake_api"]
);
#[cfg(not(loom))]
pgrx::extension_sql_file!("sql/node.sql", name = "node_api", requires = ["gdid_api"]);

#[cfg(not(loom))]
#[no_mangle]
pub extern "C" fn _PG_init() {
    // SAFETY: PostgreSQL calls _PG_init once, when it loads the library; the outermost frame.
    unsafe {
        pg::errors::boundary(|| {
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
