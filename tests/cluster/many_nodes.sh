#!/usr/bin/env bash
# Many nodes: three publishers with distinct snowflake.node_id and gdid.authority insert
# concurrently into their own `orders` tables (keys from snowflake_next and gdid_next); a
# fourth node subscribes to all three (native logical replication, one subscription in
# binary mode) into one table with both keys unique. Zero conflicts, the row count equals
# the sum, and each node's IDs are in the order its sessions made them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SESSIONS=2   # per node
ROUNDS=50    # x 100 rows per session
for n in 1 2 3; do
    node=$(instance "node$n" "shared_preload_libraries = 'snowflake_id'" \
        "snowflake.node_id = $n" "gdid.authority = $n" "wal_level = logical")
    pg_start "$node"
    pg_psql "$node" -d postgres -q -c "CREATE EXTENSION snowflake_id" -c "$ORDERS_TABLE" \
        -c "CREATE PUBLICATION pub FOR TABLE orders"
done
hub=$(instance hub "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 4")
pg_start "$hub"
pg_psql "$hub" -d postgres -q -c "CREATE EXTENSION snowflake_id" -c "$ORDERS_TABLE"
for n in 1 2 3; do
    binary=$([ "$n" = 1 ] && echo true || echo false)
    PGOPTIONS='-c client_min_messages=warning' pg_psql "$hub" -d postgres -qc "CREATE SUBSCRIPTION sub$n
        CONNECTION '$(dsn "$CLUSTER_ROOT/node$n")'
        PUBLICATION pub WITH (binary = $binary)"
done

pids=()
for n in 1 2 3; do
    for s in $(seq 1 $SESSIONS); do
        insert_orders "$CLUSTER_ROOT/node$n" $n "$s" $ROUNDS &
        pids+=($!)
    done
done
for p in "${pids[@]}"; do wait "$p" || fail "a session failed"; done

total=$((3 * SESSIONS * ROUNDS * 100))
wait_for_orders "$hub" "$total"
# (A fan-in: three node numbers, each through its own subscription; nothing to report.)
check_orders "$hub" "$total"
expect "$hub" "SELECT coalesce(sum(apply_error_count + $SYNC_ERRORS), 0) FROM pg_stat_subscription_stats s" "0"
for n in 1 2 3; do
    expect "$CLUSTER_ROOT/node$n" "SELECT count(*) FROM orders" "$((SESSIONS * ROUNDS * 100))"
done
echo "figures: $total rows from 3 nodes ($((3 * SESSIONS)) sessions) replicated into one table"
echo "many_nodes: ok"
