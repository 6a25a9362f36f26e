//! What every part of the library reads of the server it runs in: the current database, the
//! cache of sequences, the settings fixed at start (each, when the library was not
//! preloaded, the ERROR that says so).

use pgrx::pg_sys;

use crate::guc::{self, Server};
use crate::pg::errors::not_preloaded;
use crate::pg::shmem;

pub fn current_db() -> u32 {
    // SAFETY: MyDatabaseId is set for the life of a backend connected to a database.
    unsafe { pg_sys::MyDatabaseId }.to_u32()
}

/// The cache of sequences, pinned for the caller (see `shmem`), or the ERROR for a library
/// that was not preloaded.
pub fn cache() -> shmem::Pinned {
    shmem::cache().unwrap_or_else(|| not_preloaded())
}

/// What was fixed at server start, or the ERROR for a library that was not preloaded.
pub fn server() -> &'static Server {
    guc::server().unwrap_or_else(|| not_preloaded())
}

/// Whether the library was preloaded (its settings and shared memory exist).
pub fn is_preloaded() -> bool {
    guc::server().is_some()
}
