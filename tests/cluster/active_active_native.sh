#!/usr/bin/env bash
# Active-active with PostgreSQL's own logical replication: three servers, each publishing
# `orders` and subscribing to the two others (origin = none, so nothing comes back, and
# copy_data = false), all inserting at once with DEFAULT snowflake_next('orders') and
# DEFAULT gdid_next('shop', 'orders'), the same sequence names everywhere. All three end
# with identical tables, with no apply error and no insert conflict (confl_insert_exists),
# each server's rows in the order it made them, and nothing in snowflake_node_conflicts.
# majors: 18 (origin = none needs 16+, pg_stat_subscription_stats counts conflicts since 18)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SESSIONS=2   # per server
ROUNDS=40    # x 100 rows per session
dir() { echo "$CLUSTER_ROOT/n$1"; }
for n in 1 2 3; do
    pg_init "$(dir $n)" $((55600 + n)) "shared_preload_libraries = 'snowflake_id'" \
        "snowflake.node_id = $n" "gdid.authority = $n" "wal_level = logical"
    pg_start "$(dir $n)"
    pg_psql "$(dir $n)" -d postgres -q -c "CREATE EXTENSION snowflake_id" -c "$ORDERS_TABLE" \
        -c "CREATE PUBLICATION pub FOR TABLE orders"
done
for n in 1 2 3; do
    for m in 1 2 3; do
        [ "$n" = "$m" ] && continue
        PGOPTIONS='-c client_min_messages=warning' pg_psql "$(dir $n)" -d postgres -qc "CREATE SUBSCRIPTION n${n}_from_n$m
            CONNECTION 'host=$(dir $m) port=$((55600 + m)) user=postgres dbname=postgres'
            PUBLICATION pub WITH (origin = none, copy_data = false)"
    done
done
for n in 1 2 3; do
    for _ in $(seq 1 100); do
        [ "$(pg_psql "$(dir $n)" -d postgres -Atc "SELECT count(*) FROM pg_stat_subscription WHERE pid IS NOT NULL")" = 2 ] && break
        sleep 0.1
    done
done

start=$(date +%s.%N)
pids=()
for n in 1 2 3; do
    for s in $(seq 1 $SESSIONS); do
        insert_orders "$(dir $n)" $n "$s" $ROUNDS &
        pids+=($!)
    done
done
for p in "${pids[@]}"; do wait "$p" || fail "a session failed"; done
written=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")

total=$((3 * SESSIONS * ROUNDS * 100))
for n in 1 2 3; do wait_for_orders "$(dir $n)" "$total"; done
converged=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
checksum="SELECT md5(string_agg(id || ' ' || g || ' ' || node || ' ' || session || ' ' || pos, ',' ORDER BY id)) FROM orders"
first=$(pg_psql "$(dir 1)" -d postgres -Atc "$checksum")
for n in 1 2 3; do
    d=$(dir $n)
    check_orders "$d" "$total"
    expect "$d" "$checksum" "$first"
    expect "$d" "SELECT sum(apply_error_count + sync_error_count) FROM pg_stat_subscription_stats" "0"
    expect "$d" "SELECT sum(confl_insert_exists + confl_update_exists) FROM pg_stat_subscription_stats" "0"
done
echo "figures: $total rows, $((SESSIONS * ROUNDS * 100)) from each of 3 servers ($SESSIONS sessions each), written in ${written} s, identical on all three ${converged} s after the start"
echo "active_active_native: ok"
