#!/usr/bin/env bash
# Active-active with pglogical 2.4 (Debian's postgresql-15-pglogical): two servers writing
# to each other (forward_origins := '{}', so nothing comes back), with
# snowflake.refuse_shared_node on.
#  1. Both insert at once with DEFAULT snowflake_next('orders') and DEFAULT gdid_next('shop',
#     'orders').
#  2. Each updates and deletes rows the other made and adds items whose foreign keys hold
#     them, while both go on inserting: each receives its own keys back, which is not two
#     servers sharing a node number.
# Both end with identical tables, no insert conflict in the log, each server's rows in the order it
# made them, nothing in snowflake_node_conflicts, and both still generating; the same after
# pglogical copies a table again. Then a third server with n1's node number, to which n2
# subscribes too, is reported on n2.
# majors: 15 (pglogical is packaged for Debian's PostgreSQL 15 only)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SESSIONS=2
ROUNDS=40
# Since the 2026 minor releases a server loads only the output plugins it is told to.
plugins=""
settings=$(as_postgres "$PG_BINDIR/postgres" --describe-config 2>/dev/null | cut -f1)
if grep -qx output_plugin_libraries <<<"$settings"; then
    plugins="output_plugin_libraries = 'pgoutput, pglogical_output'"
fi
declare -A dir
# server N NODE_ID AUTHORITY SQL...: a pglogical node nN, running SQL once it is one.
server() {
    local n=$1 node=$2 authority=$3
    shift 3
    dir[$n]=$(instance "n$n" "shared_preload_libraries = 'pglogical, snowflake_id'" \
        "snowflake.node_id = $node" "gdid.authority = $authority" "wal_level = logical" \
        "track_commit_timestamp = on" "snowflake.refuse_shared_node = on" ${plugins:+"$plugins"})
    pg_start "${dir[$n]}"
    local args=() q
    for q in "$@"; do args+=(-c "$q"); done
    pg_psql "${dir[$n]}" -d postgres -q -c "CREATE EXTENSION pglogical" -c "CREATE EXTENSION snowflake_id" \
        -c "SELECT pglogical.create_node(node_name := 'n$n', dsn := '$(dsn "${dir[$n]}")')" "${args[@]}" >/dev/null
}
# subscribe N M: nN subscribes to nM's default replication set.
subscribe() {
    pg_psql "${dir[$1]}" -d postgres -qc "SELECT pglogical.create_subscription(
        subscription_name := 'from_n$2', provider_dsn := '$(dsn "${dir[$2]}")',
        replication_sets := '{default}', synchronize_data := false, forward_origins := '{}')" >/dev/null
}
replicating() {
    sql_is "$1" "SELECT bool_and(status = 'replicating') AND count(*) = $2 FROM pglogical.show_subscription_status()" t
}

for n in 1 2; do
    server $n $n $n "$ORDERS_TABLE" "$ITEMS_TABLE" \
        "SELECT pglogical.replication_set_add_table('default', 'orders')" \
        "SELECT pglogical.replication_set_add_table('default', 'items')"
done
subscribe 1 2
subscribe 2 1
for n in 1 2; do
    wait_until 30 "n$n's subscription replicating" replicating "${dir[$n]}" 1
done

start=$(date +%s.%N)
pids=()
for n in 1 2; do
    for s in $(seq 1 $SESSIONS); do
        insert_orders "${dir[$n]}" $n "$s" $ROUNDS &
        pids+=($!)
    done
done
for p in "${pids[@]}"; do wait "$p" || fail "a session failed"; done
written=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
total=$((2 * SESSIONS * ROUNDS * 100))
for n in 1 2; do wait_for_orders "${dir[$n]}" "$total"; done
converged=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
echo "figures: phase 1: $total rows, $((SESSIONS * ROUNDS * 100)) from each of 2 servers ($SESSIONS sessions each), written in ${written} s, on both ${converged} s after the start"

# Phase 2: updates, deletes and foreign keys both ways, with new orders beside.
pids=()
for n in 1 2; do
    touch_others "${dir[$n]}" $n $SESSIONS &
    pids+=($!)
    insert_orders "${dir[$n]}" $n $((SESSIONS + 1)) 10 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a session failed"; done
changed=$((SESSIONS * ROUNDS * 10))   # rows of the other server each one updates, deletes, references
remaining=$((total - 2 * changed + 2 * 1000))
for n in 1 2; do
    wait_for_orders "${dir[$n]}" "$remaining"
    wait_until 60 "$((2 * changed)) items on n$n" sql_is "${dir[$n]}" "SELECT count(*) FROM items" "$((2 * changed))"
done
wait_until 60 "the same contents on both" same_contents "${dir[1]}" "${dir[2]}"
for n in 1 2; do
    d=${dir[$n]}
    check_orders "$d" "$remaining"
    expect "$d" "SELECT count(*) FROM orders WHERE note IS NOT NULL" "$((2 * changed))"
    expect "$d" "SELECT count(*) FROM items i JOIN orders o ON o.id = i.order_id AND o.g = i.order_g WHERE o.node <> i.node AND snowflake_node(i.id) = i.node" "$((2 * changed))"
    expect "$d" "SELECT bool_and(status = 'replicating') FROM pglogical.show_subscription_status()" "t"
    # pglogical logs an UPDATE of a row that another node made as a conflict, resolved by
    # applying it; an INSERT conflict (a key that exists) or a row not found would be wrong.
    # Collected first: `grep -m1 . && fail` under pipefail would pass when there are many
    # (grep -m1 exits, the writer gets SIGPIPE, the pipeline fails and fail never runs).
    other=$(grep 'CONFLICT' "$d/server.log" | grep -v 'CONFLICT: remote UPDATE on relation public.orders (local index orders_pkey). Resolution: apply_remote.' || true)
    [ -z "$other" ] || fail "pglogical logged a conflict other than an update of the other node's row on n$n: $(head -n1 <<<"$other")"
    echo "n$n: pglogical logged $(grep -c 'CONFLICT: remote UPDATE' "$d/server.log") updates of its own rows as conflicts, applied"
    expect "$d" "SELECT snowflake_node(snowflake_next('orders')) = $n AND gdid_authority(gdid_next('shop', 'orders')) = $n" "t"
done
echo "figures: phase 2: each server updated, deleted and referenced $changed of the other's orders while inserting 1,000; $remaining orders and $((2 * changed)) items, identical on both; nothing reported"

# pglogical resynchronises a table by copying it again: n2's copy of items comes back from
# n1, half of it n2's own keys. A copy is old rows: nothing reported, both go on generating.
sql "${dir[2]}" "SELECT pglogical.alter_subscription_resynchronize_table('from_n1', 'items')" >/dev/null
synced() { sql_is "${dir[2]}" "SELECT status FROM pglogical.show_subscription_table('from_n1', 'items')" "$1"; }
wait_until 60 "items resynchronised on n2" synced replicating
wait_until 30 "the same contents on both after the resynchronisation" same_contents "${dir[1]}" "${dir[2]}"
for n in 1 2; do
    expect "${dir[$n]}" "SELECT count(*) FROM snowflake_node_conflicts" 0
    expect "${dir[$n]}" "SELECT snowflake_node(snowflake_next('orders')) = $n AND gdid_authority(gdid_next('shop', 'orders')) = $n" "t"
done
echo "ok: a resynchronised table ($((2 * changed)) items, half of them n2's own) reported nothing"

# A third server with n1's node number, to which n2 subscribes too, is reported on n2 (n2's
# copy of its table generates its keys too, as the schema of a mesh has it).
ORDERS3="CREATE TABLE orders3 (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders3'), v int)"
server 3 1 3 "$ORDERS3" "SELECT pglogical.replication_set_add_table('default', 'orders3')"
pg_psql "${dir[2]}" -d postgres -qc "$ORDERS3"
subscribe 2 3
wait_until 30 "n2's two subscriptions replicating" replicating "${dir[2]}" 2
for n in 1 3; do
    rows=$([ $n = 1 ] && echo "orders (node, session, pos) SELECT 1, 9, 0" || echo "orders3 (v) SELECT 1")
    session "${dir[$n]}" -c "DO \$\$
DECLARE stop timestamptz := clock_timestamp() + interval '3 s';
BEGIN
    WHILE clock_timestamp() < stop LOOP
        INSERT INTO $rows FROM generate_series(1, 20); COMMIT; PERFORM pg_sleep(0.05);
    END LOOP;
END \$\$;" &
done
wait
wait_until 10 "a conflict on n2" sql_is "${dir[2]}" "SELECT count(*) FROM snowflake_node_conflicts" 1
sql "${dir[2]}" "SELECT kind, node_or_authority, origins FROM snowflake_node_conflicts"
expect "${dir[2]}" "SELECT kind || ' ' || node_or_authority FROM snowflake_node_conflicts" "snowflake node 1"
grep -q 'WARNING:  two servers use node number 1' "${dir[2]}/server.log" || fail "no WARNING on n2"
echo "active_active_pglogical: ok"
