//! SQL-facing functions of this server's numbers: giving a claimed number back, claiming
//! again, and the rows of the `snowflake_node_claims` view (see `node::claims`).

use crate::core::snowflake::epoch::unix_ms_to_pg_timestamp;
use crate::node::claims;
use crate::sql::sqlfn::sql_functions;

sql_functions! {
    /// `snowflake_node_detach()`: stops generating under the claimed numbers at once and
    /// gives them back to the registry.
    fn snowflake_node_detach() -> void [volatile parallel_unsafe] |_| {
        claims::detach()
    }

    /// `snowflake_node_attach()`: claims numbers again (perhaps others) and returns once they
    /// are held.
    fn snowflake_node_attach() -> void [volatile parallel_unsafe] |_| {
        claims::attach()
    }

    /// Rows of the snowflake_node_claims view: this server's node number and authority, each
    /// written by hand or claimed from the registry.
    fn snowflake_node_claims_rows() -> table(
        kind: text, number: integer, state: text, holder: text, registry: text,
        since: timestamptz, lease_end: timestamptz, last_renewal: timestamptz, message: text
    ) [volatile parallel_safe] |_, emit| {
        for r in claims::rows() {
            let text = |s: String| Some(s.into_bytes());
            emit((
                text(r.kind.to_owned()),
                r.number,
                text(r.state.to_owned()),
                r.holder.and_then(text),
                r.registry.and_then(text),
                r.since_ms.map(unix_ms_to_pg_timestamp),
                r.lease_end_ms.map(unix_ms_to_pg_timestamp),
                r.renewed_ms.map(unix_ms_to_pg_timestamp),
                r.message.and_then(text),
            ));
        }
    }
}
