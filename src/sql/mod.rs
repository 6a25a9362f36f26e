//! The SQL face: every SQL function's declaration (`sqlfn`, one per function, checked against
//! the `CREATE FUNCTION` statements of `snowflake.sql` and `gdid.sql`), the thin SQL-facing
//! functions of each kind and their watermarks, and the C symbols of earlier releases
//! (`compat`). The calling convention they use is plumbing (`pg::fmgr`).

pub(crate) mod compat;
pub(crate) mod containment;
pub(crate) mod forms;
pub(crate) mod gdid;
pub(crate) mod gdid_ops;
pub(crate) mod node;
pub(crate) mod snowflake;
pub(crate) mod sqlfn;
#[cfg(test)]
mod update_check;

/// Every SQL function the library declares, by module (see `sqlfn`): a test compares them
/// with the scripts.
#[cfg(test)]
pub(crate) const SQL_FUNCTIONS: &[&[sqlfn::SqlFunction]] = &[
    snowflake::FUNCTIONS,
    gdid::FUNCTIONS,
    gdid_ops::FUNCTIONS,
    node::FUNCTIONS,
    forms::FUNCTIONS,
    containment::FUNCTIONS,
];
