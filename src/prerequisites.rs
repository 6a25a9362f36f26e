//! What a generator checks before it hands anything out, and the settings it needs: WAL can
//! be written, no other server is known to use this server's number, the node number or
//! authority is set, a batch or block is at least one value.

use pgrx::pg_sys;

use crate::detection;
use crate::detection::sightings::What;
use crate::errors::{error, Code};
use crate::guc::{self, Server};

/// What every generator checks before it hands anything out: that WAL can be written
/// ([`require_writable`]), and that no other server is known to use this server's number
/// for `what` (when `snowflake.refuse_shared_node` is on).
pub fn require_may_generate(function: &str, what: What) {
    require_writable(function);
    detection::refuse_if_shared(what);
}

/// The size of a batch or block: at least 1.
pub fn count_argument(n: i32, what: &str) -> u64 {
    if n < 1 {
        error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{what} size must be at least 1, not {n}"),
        )
        .raise();
    }
    n as u64
}

/// Generators write WAL, so like `nextval` they refuse where WAL cannot be written. The
/// check does not depend on whether the lease happens to need extending, so the behaviour
/// is the same on every call.
pub fn require_writable(function: &str) {
    // SAFETY: plain reads of backend-global state.
    let (in_recovery, read_only) = unsafe { (pg_sys::RecoveryInProgress(), pg_sys::XactReadOnly) };
    if in_recovery {
        error(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            format!("cannot execute {function} during recovery"),
        )
        .hint("Generate IDs on the primary; a standby continues above them once promoted.")
        .raise();
    }
    if read_only {
        error(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            format!("cannot execute {function} in a read-only transaction"),
        )
        .raise();
    }
}

/// The ERROR for a setting a generator needs and the server was not given.
fn setting_missing(setting: &str, range: &str, how: &str) -> ! {
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("{setting} is not set"),
    )
    .detail(format!(
        "Every value this server generates carries it, so it must be unique among the \
         servers whose values meet; there is no default. Range {range}."
    ))
    .hint(how.to_owned())
    .raise()
}

/// This server's node number, or the ERROR when `snowflake.node_id` is not set.
pub fn node_id(server: &Server) -> u32 {
    server.node.unwrap_or_else(|| {
        setting_missing(
            "snowflake.node_id",
            &format!("0 .. {}", server.layout.max_node()),
            "Set snowflake.node_id in postgresql.conf (or with ALTER SYSTEM) and restart the \
             server.",
        )
    })
}

/// This session's gdid authority, or the ERROR when `gdid.authority` is not set.
pub fn gdid_authority() -> u8 {
    guc::gdid_authority().unwrap_or_else(|| {
        setting_missing(
            "gdid.authority",
            "0 .. 15",
            "Set gdid.authority in postgresql.conf (or with ALTER SYSTEM) and reload the \
             configuration.",
        )
    })
}
