//! PostgreSQL plumbing every other part uses: raising and catching errors (`errors`), the
//! version-1 calling convention (`fmgr`: arguments, results, rows and sets; `gdid_datum`: a
//! gdid as a Datum), the extension's own queries (`spi`), differences between majors
//! (`pgcompat`), the shared-memory segments and their locks (`shmem`), the PGPROC array
//! (`procs`), expression trees (`exprs`).

pub(crate) mod errors;
pub(crate) mod exprs;
pub(crate) mod fmgr;
pub(crate) mod gdid_datum;
pub(crate) mod pgcompat;
pub(crate) mod procs;
pub(crate) mod shmem;
pub(crate) mod spi;
