#!/usr/bin/env bash
# Active-active with PostgreSQL's own logical replication: three servers, each publishing
# orders and items and subscribing to the two others (origin = none, so nothing comes back,
# and copy_data = false), with snowflake.refuse_shared_node on.
#  1. All insert at once with DEFAULT snowflake_next('orders') and DEFAULT gdid_next('shop',
#     'orders'), the same sequence names everywhere.
#  2. Each server updates and deletes rows the two others made, and adds items whose foreign
#     keys hold their keys, while all three go on inserting orders: every server receives its
#     own keys back in updates, deletes and foreign keys, which is not two servers sharing a
#     node number.
# All three end with identical tables, no apply error and no insert conflict, each server's
# rows in the order it made them, nothing in snowflake_node_conflicts, and each still
# generating with both generators.
# majors: 18 (origin = none needs 16+, pg_stat_subscription_stats counts conflicts since 18)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SESSIONS=2   # per server
ROUNDS=40    # x 100 rows per session
declare -A dir
for n in 1 2 3; do
    dir[$n]=$(instance "n$n" "shared_preload_libraries = 'snowflake_id'" \
        "snowflake.node_id = $n" "gdid.authority = $n" "wal_level = logical" \
        "snowflake.refuse_shared_node = on")
    pg_start "${dir[$n]}"
    pg_psql "${dir[$n]}" -d postgres -q -c "CREATE EXTENSION snowflake_id" -c "$ORDERS_TABLE" \
        -c "$ITEMS_TABLE" -c "CREATE PUBLICATION pub FOR TABLE orders, items"
done
for n in 1 2 3; do
    for m in 1 2 3; do
        [ "$n" = "$m" ] && continue
        PGOPTIONS='-c client_min_messages=warning' pg_psql "${dir[$n]}" -d postgres -qc "CREATE SUBSCRIPTION n${n}_from_n$m
            CONNECTION '$(dsn "${dir[$m]}")' PUBLICATION pub WITH (origin = none, copy_data = false)"
    done
done
for n in 1 2 3; do
    wait_until 30 "n$n's two subscriptions" \
        sql_is "${dir[$n]}" "SELECT count(*) FROM pg_stat_subscription WHERE pid IS NOT NULL" 2
done

start=$(date +%s.%N)
pids=()
for n in 1 2 3; do
    for s in $(seq 1 $SESSIONS); do
        insert_orders "${dir[$n]}" $n "$s" $ROUNDS &
        pids+=($!)
    done
done
for p in "${pids[@]}"; do wait "$p" || fail "a session failed"; done
written=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
total=$((3 * SESSIONS * ROUNDS * 100))
for n in 1 2 3; do wait_for_orders "${dir[$n]}" "$total"; done
converged=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
echo "figures: phase 1: $total rows, $((SESSIONS * ROUNDS * 100)) from each of 3 servers ($SESSIONS sessions each), written in ${written} s, on all three ${converged} s after the start"

# Phase 2: updates, deletes and foreign keys in every direction, with new orders beside.
pids=()
for n in 1 2 3; do
    touch_others "${dir[$n]}" $n $SESSIONS &
    pids+=($!)
    insert_orders "${dir[$n]}" $n $((SESSIONS + 1)) 10 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a session failed"; done
# Of each server's phase-1 rows, the two others deleted a tenth each; each server added 1,000.
remaining=$((total - 3 * 2 * SESSIONS * ROUNDS * 10 + 3 * 1000))
items=$((3 * 2 * SESSIONS * ROUNDS * 10))
for n in 1 2 3; do
    wait_for_orders "${dir[$n]}" "$remaining"
    wait_until 60 "$items items on n$n" sql_is "${dir[$n]}" "SELECT count(*) FROM items" "$items"
done
# The last updates may still be on their way: wait until all three hold the same.
wait_until 60 "the same contents on all three" same_contents "${dir[1]}" "${dir[2]}" "${dir[3]}"
for n in 1 2 3; do
    d=${dir[$n]}
    check_orders "$d" "$remaining"
    expect "$d" "SELECT count(*) FROM orders WHERE note IS NOT NULL" "$((3 * 2 * SESSIONS * ROUNDS * 10))"
    expect "$d" "SELECT count(*) FROM items i JOIN orders o ON o.id = i.order_id AND o.g = i.order_g WHERE o.node <> i.node AND snowflake_node(i.id) = i.node" "$items"
    expect "$d" "SELECT sum(apply_error_count + $SYNC_ERRORS) FROM pg_stat_subscription_stats s" "0"
    expect "$d" "SELECT sum(confl_insert_exists + confl_update_exists + confl_update_missing + confl_delete_missing) FROM pg_stat_subscription_stats" "0"
    # Still generating, with refuse_shared_node on.
    expect "$d" "SELECT snowflake_node(snowflake_next('orders')) = $n AND gdid_authority(gdid_next('shop', 'orders')) = $n" "t"
done
echo "figures: phase 2: each server updated $((2 * SESSIONS * ROUNDS * 10)), deleted $((2 * SESSIONS * ROUNDS * 10)) and referenced $((2 * SESSIONS * ROUNDS * 10)) of the two others' orders while inserting 1,000; $remaining orders and $items items, identical on all three; nothing reported"
echo "active_active_native: ok"
