//! PostgreSQL plumbing every other part uses: raising and catching errors (`errors`), the
//! extension's own queries (`spi`), differences between majors (`pgcompat`), the shared-memory
//! segments and their locks (`shmem`), the PGPROC array (`procs`).

pub(crate) mod errors;
pub(crate) mod exprs;
pub(crate) mod pgcompat;
pub(crate) mod procs;
pub(crate) mod shmem;
pub(crate) mod spi;
