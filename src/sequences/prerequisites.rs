//! What a generator checks before it hands anything out: WAL can be written, no other server
//! is known to use this server's number, a batch or block is at least one value. (The node
//! number and authority it needs: `node`.)

use pgrx::pg_sys;

use crate::core::sightings::What;
use crate::detection;
use crate::pg::errors::{error, Code};

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
    // As nextval: a parallel worker's transaction ends before the leader's, and would release
    // the watermark of a value the leader's transaction still holds (see `inflight_xact`).
    // SAFETY: a plain read of backend-global state.
    if unsafe { pg_sys::IsInParallelMode() } {
        error(
            Code::ERRCODE_INVALID_TRANSACTION_STATE,
            format!("cannot execute {function} during a parallel operation"),
        )
        .hint("A function that calls it must not be marked PARALLEL SAFE.")
        .raise();
    }
}
