#!/usr/bin/env bash
# Active-active with pglogical 2.4 (Debian's postgresql-15-pglogical): two servers writing
# to each other (forward_origins := '{}', so nothing comes back), inserting at once with
# DEFAULT snowflake_next('orders') and DEFAULT gdid_next('shop', 'orders'). Both end with
# identical tables, the subscriptions replicating without a conflict in the log, each
# server's rows in the order it made them, and nothing in snowflake_node_conflicts.
# majors: 15 (pglogical is packaged for Debian's PostgreSQL 15 only)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SESSIONS=2
ROUNDS=40
dir() { echo "$CLUSTER_ROOT/n$1"; }
dsn() { echo "host=$(dir "$1") port=$((55610 + $1)) dbname=postgres user=postgres"; }
# Since the 2026 minor releases a server loads only the output plugins it is told to.
plugins=""
settings=$(as_postgres "$PG_BINDIR/postgres" --describe-config 2>/dev/null | cut -f1)
if grep -qx output_plugin_libraries <<<"$settings"; then
    plugins="output_plugin_libraries = 'pgoutput, pglogical_output'"
fi
for n in 1 2; do
    pg_init "$(dir $n)" $((55610 + n)) "shared_preload_libraries = 'pglogical, snowflake_id'" \
        "snowflake.node_id = $n" "gdid.authority = $n" "wal_level = logical" \
        "track_commit_timestamp = on" ${plugins:+"$plugins"}
    pg_start "$(dir $n)"
    pg_psql "$(dir $n)" -d postgres -q -c "CREATE EXTENSION pglogical" -c "CREATE EXTENSION snowflake_id" \
        -c "$ORDERS_TABLE" \
        -c "SELECT pglogical.create_node(node_name := 'n$n', dsn := '$(dsn $n)')" \
        -c "SELECT pglogical.replication_set_add_table('default', 'orders')" >/dev/null
done
for n in 1 2; do
    m=$((3 - n))
    pg_psql "$(dir $n)" -d postgres -qc "SELECT pglogical.create_subscription(
        subscription_name := 'from_n$m', provider_dsn := '$(dsn $m)',
        replication_sets := '{default}', synchronize_data := false, forward_origins := '{}')" >/dev/null
done
for n in 1 2; do
    for _ in $(seq 1 300); do
        [ "$(pg_psql "$(dir $n)" -d postgres -Atc "SELECT status FROM pglogical.show_subscription_status()")" = replicating ] && break
        sleep 0.1
    done
    [ "$(pg_psql "$(dir $n)" -d postgres -Atc "SELECT status FROM pglogical.show_subscription_status()")" = replicating ] ||
        { grep -E 'ERROR|FATAL' "$(dir $n)/server.log" | tail -n 5; fail "n$n's subscription is not replicating"; }
done

start=$(date +%s.%N)
pids=()
for n in 1 2; do
    for s in $(seq 1 $SESSIONS); do
        insert_orders "$(dir $n)" $n "$s" $ROUNDS &
        pids+=($!)
    done
done
for p in "${pids[@]}"; do wait "$p" || fail "a session failed"; done
written=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
total=$((2 * SESSIONS * ROUNDS * 100))
for n in 1 2; do wait_for_orders "$(dir $n)" "$total"; done
converged=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
checksum="SELECT md5(string_agg(id || ' ' || g || ' ' || node || ' ' || session || ' ' || pos, ',' ORDER BY id)) FROM orders"
first=$(pg_psql "$(dir 1)" -d postgres -Atc "$checksum")
for n in 1 2; do
    d=$(dir $n)
    check_orders "$d" "$total"
    expect "$d" "$checksum" "$first"
    expect "$d" "SELECT status FROM pglogical.show_subscription_status()" "replicating"
    grep -q 'CONFLICT' "$d/server.log" && fail "pglogical logged a conflict on n$n: $(grep -m1 CONFLICT "$d/server.log")"
done
echo "figures: $total rows, $((SESSIONS * ROUNDS * 100)) from each of 2 servers ($SESSIONS sessions each), written in ${written} s, identical on both ${converged} s after the start"

# pglogical applies through the same input functions: a third server with n1's node number,
# to which n2 subscribes too, is reported on n2.
pg_init "$(dir 3)" 55613 "shared_preload_libraries = 'pglogical, snowflake_id'" \
    "snowflake.node_id = 1" "gdid.authority = 3" "wal_level = logical" \
    "track_commit_timestamp = on" ${plugins:+"$plugins"}
pg_start "$(dir 3)"
pg_psql "$(dir 3)" -d postgres -q -c "CREATE EXTENSION pglogical" -c "CREATE EXTENSION snowflake_id" \
    -c "CREATE TABLE orders3 (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders3'), v int)" \
    -c "SELECT pglogical.create_node(node_name := 'n3', dsn := '$(dsn 3)')" \
    -c "SELECT pglogical.replication_set_add_table('default', 'orders3')" >/dev/null
pg_psql "$(dir 2)" -d postgres -q -c "CREATE TABLE orders3 (id snowflake PRIMARY KEY, v int)" \
    -c "SELECT pglogical.create_subscription(subscription_name := 'from_n3', provider_dsn := '$(dsn 3)',
        replication_sets := '{default}', synchronize_data := false, forward_origins := '{}')" >/dev/null
for _ in $(seq 1 300); do
    [ "$(pg_psql "$(dir 2)" -d postgres -Atc "SELECT count(*) FROM pglogical.show_subscription_status() WHERE status = 'replicating'")" = 2 ] && break
    sleep 0.1
done
for n in 1 3; do
    rows=$([ $n = 1 ] && echo "orders (node, session, pos) SELECT 1, 1, 0" || echo "orders3 (v) SELECT 1")
    timeout 60 "$PG_BINDIR/psql" -X -q -h "$(dir $n)" -p $((55610 + n)) -U postgres -d postgres -c "DO \$\$
DECLARE stop timestamptz := clock_timestamp() + interval '3 s';
BEGIN
    WHILE clock_timestamp() < stop LOOP
        INSERT INTO $rows FROM generate_series(1, 20); COMMIT; PERFORM pg_sleep(0.05);
    END LOOP;
END \$\$;" &
done
wait
for _ in $(seq 1 100); do
    [ "$(pg_psql "$(dir 2)" -d postgres -Atc "SELECT count(*) FROM snowflake_node_conflicts")" = 1 ] && break
    sleep 0.1
done
pg_psql "$(dir 2)" -d postgres -Atc "SELECT kind, node_or_authority, origins FROM snowflake_node_conflicts"
expect "$(dir 2)" "SELECT kind || ' ' || node_or_authority FROM snowflake_node_conflicts" "snowflake node 1"
grep -q 'WARNING:  two servers use node number 1' "$(dir 2)/server.log" || fail "no WARNING on n2"
echo "active_active_pglogical: ok"
