#!/usr/bin/env bash
# What Citus does to the extension's sequences on a worker node, reproduced on a plain server
# (Citus is not packaged for Debian 12; docs/many-writers.md has the figures of a real Citus
# 13.2 cluster), and that generation goes on through it. The server here plays a worker of
# group 1 with node number 2 and authority 2.
#
# 1. Sequences a distributed table's DEFAULT depends on: Citus sends the coordinator's CREATE
#    SEQUENCE IF NOT EXISTS (the coordinator's definition), then rewrites a bigint sequence's
#    bounds into the worker's window (worker_data_fetch_protocol.c, AlterSequenceMinMax:
#    START x MINVALUE x MAXVALUE x + 2^48 RESTART x, x = (group << 48) + 1), then OWNER TO,
#    and marks it distributed (pg_dist_object); it refuses DROP and ALTER of it on a worker
#    (emulated with event triggers, same messages and SQLSTATE), and sends the same commands
#    again at every metadata sync. Proved: the extension keeps the sequence's definition (the
#    rewrite is skipped, with a LOG line), inserts through the shard's DEFAULT generate under
#    the worker's own number, a metadata sync after values were handed out resets nothing
#    (the lease stays, later values are above), and DROP/ALTER are never needed.
# 2. A new name's first use by several sessions at once (the shard tasks of one distributed
#    INSERT .. SELECT, whose waits Citus's deadlock detector reads from the lock manager as
#    waits of one transaction on itself): while the first one's background worker makes the
#    sequence (held up here by a lock on pg_class), the others wait without queueing in the
#    lock manager, so pg_locks never shows one waiting for the name; then every one generates.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap cleanup_with_jobs EXIT

dir=$(instance worker "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 2" \
    "gdid.authority = 2" "log_min_messages = log")
pg_start "$dir"
psql_v() { pg_psql "$dir" -d postgres -X -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -q "$@"; }

psql_v <<'SQL'
CREATE EXTENSION snowflake_id;
-- Citus's catalog on a worker, in pg_catalog: its group, and the distributed objects.
SET allow_system_table_mods = on;
CREATE TABLE pg_catalog.pg_dist_local_group (groupid int NOT NULL);
CREATE TABLE pg_catalog.pg_dist_object (classid oid NOT NULL, objid oid NOT NULL,
    objsubid int NOT NULL, PRIMARY KEY (classid, objid, objsubid));
RESET allow_system_table_mods;
INSERT INTO pg_catalog.pg_dist_local_group VALUES (1);
-- Citus's refusals on a worker (commands/sequence.c, PreprocessDropSequenceStmt and
-- PreprocessAlterSequenceStmt), skipped with citus.enable_ddl_propagation off.
CREATE FUNCTION citus_refuses() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    IF current_setting('citus.enable_ddl_propagation', true) = 'off' THEN
        RETURN;
    END IF;
    IF TG_EVENT = 'sql_drop' THEN
        FOR r IN SELECT * FROM pg_event_trigger_dropped_objects() WHERE object_type = 'sequence' LOOP
            IF EXISTS (SELECT FROM pg_catalog.pg_dist_object o WHERE o.objid = r.objid) THEN
                RAISE EXCEPTION 'operation is not allowed on this node'
                    USING ERRCODE = 'XX000', HINT = 'Connect to the coordinator and run it again.';
            END IF;
        END LOOP;
    ELSE
        FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() LOOP
            IF EXISTS (SELECT FROM pg_catalog.pg_dist_object o WHERE o.objid = r.objid) THEN
                RAISE EXCEPTION 'Altering a distributed sequence is currently not supported.'
                    USING ERRCODE = 'XX000';
            END IF;
        END LOOP;
    END IF;
END $$;
CREATE EVENT TRIGGER citus_drop ON sql_drop EXECUTE FUNCTION citus_refuses();
CREATE EVENT TRIGGER citus_alter ON ddl_command_end WHEN TAG IN ('ALTER SEQUENCE')
    EXECUTE FUNCTION citus_refuses();
SQL

# What the coordinator sends for each sequence (metadata_sync.c, DDLCommandsForSequence),
# in a transaction of its own internal connection; at create_distributed_table and again at
# every metadata sync.
citus_sends() {
    psql_v 2>/dev/null <<'SQL'
BEGIN;
SET LOCAL application_name = 'citus_internal gpid=10000000001';
SET LOCAL citus.enable_ddl_propagation TO 'off';
-- worker_apply_sequence_command: the CREATE, then AlterSequenceMinMax, both run from inside
-- the function (nested statements, as here from a DO block).
DO $$
BEGIN
    EXECUTE 'CREATE SEQUENCE IF NOT EXISTS snowflake.orders AS bigint INCREMENT BY 10 MINVALUE 1735689600000 MAXVALUE 3934712855552 START WITH 1735689600000 CACHE 1 NO CYCLE';
    EXECUTE 'ALTER SEQUENCE snowflake.orders START WITH 281474976710657 MINVALUE 281474976710657 MAXVALUE 562949953421313 RESTART WITH 281474976710657';
END $$;
ALTER SEQUENCE snowflake.orders OWNER TO postgres;
DO $$
BEGIN
    EXECUTE 'CREATE SEQUENCE IF NOT EXISTS gdid."shop/gorders" AS bigint INCREMENT BY 1 MINVALUE 0 MAXVALUE 9223372036854775807 START WITH 0 CACHE 1 NO CYCLE';
    EXECUTE 'ALTER SEQUENCE gdid."shop/gorders" START WITH 281474976710657 MINVALUE 281474976710657 MAXVALUE 562949953421313 RESTART WITH 281474976710657';
END $$;
ALTER SEQUENCE gdid."shop/gorders" OWNER TO postgres;
COMMIT;
INSERT INTO pg_catalog.pg_dist_object VALUES ('pg_class'::regclass, 'snowflake.orders'::regclass, 0),
    ('pg_class'::regclass, 'gdid."shop/gorders"'::regclass, 0) ON CONFLICT DO NOTHING;
SQL
}
definitions() {
    sql "$dir" "SELECT string_agg(format('%s %s..%s inc %s', seqrelid::regclass, seqmin, seqmax, seqincrement), ', ' ORDER BY seqrelid::regclass::text)
                  FROM pg_sequence WHERE seqrelid IN ('snowflake.orders'::regclass, 'gdid.\"shop/gorders\"'::regclass)"
}

## 1. The sequences Citus makes and rewrites
citus_sends
expect_defs="gdid.\"shop/gorders\" 0..9223372036854775807 inc 1, snowflake.orders 1735689600000..3934712855552 inc 10"
[ "$(definitions)" = "$expect_defs" ] || fail "the definitions changed: $(definitions)"
grep -q 'snowflake_id keeps the definition of sequence snowflake.orders' "$dir/server.log" ||
    fail "no LOG line for the skipped rewrite"
echo "ok: Citus's rewrite of the bounds skipped, definitions kept ($expect_defs)"
# The shards, with the DEFAULTs as Citus deparses them.
psql_v <<'SQL'
CREATE TABLE orders_102008 (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'::text), tenant int);
CREATE TABLE gorders_102040 (gid gdid PRIMARY KEY DEFAULT gdid_next('shop'::text, 'gorders'::text), tenant int);
INSERT INTO orders_102008 (tenant) SELECT i FROM generate_series(1, 500) i;
INSERT INTO gorders_102040 (tenant) SELECT i FROM generate_series(1, 500) i;
SQL
expect "$dir" "SELECT count(DISTINCT id) || ' ' || min(snowflake_node(id)) || ' ' || max(snowflake_node(id)) FROM orders_102008" "500 2 2"
expect "$dir" "SELECT count(DISTINCT gid) || ' ' || min(gdid_authority(gid)) || ' ' || max(gdid_authority(gid)) FROM gorders_102040" "500 2 2"
before=$(sql "$dir" "SELECT (SELECT max(id) FROM orders_102008) || ' ' || (SELECT last_value FROM snowflake.orders) || ' ' || (SELECT max(gid) FROM gorders_102040) || ' ' || (SELECT last_value FROM gdid.\"shop/gorders\")")
read -r max_id lease_before max_gid glease_before <<<"$before"
# Values handed out and never stored, then a metadata sync: the commands again.
sql "$dir" "SELECT count(*) FROM snowflake_next_batch('orders', 20000)" >/dev/null
sql "$dir" "SELECT count(*) FROM gdid_next_block('shop', 'gorders', 3000)" >/dev/null
handed=$(sql "$dir" "SELECT (SELECT max(i) FROM snowflake_next_batch('orders', 1) i) || ' ' || gdid_next('shop', 'gorders')")
read -r handed_id handed_gid <<<"$handed"
citus_sends
[ "$(definitions)" = "$expect_defs" ] || fail "a metadata sync changed the definitions: $(definitions)"
expect "$dir" "SELECT is_called AND last_value >= $lease_before FROM snowflake.orders" t
expect "$dir" "SELECT is_called AND last_value >= $glease_before FROM gdid.\"shop/gorders\"" t
pg_psql "$dir" -d postgres -qc "INSERT INTO orders_102008 (tenant) VALUES (0); INSERT INTO gorders_102040 (tenant) VALUES (0)"
expect "$dir" "SELECT (SELECT max(id) FROM orders_102008) > $handed_id AND (SELECT max(gid) FROM gorders_102040) > '$handed_gid'" t
echo "ok: after a metadata sync the leases stayed (snowflake $lease_before, gdid $glease_before or above), and new keys are above every value handed out"
# What Citus refuses on a worker is never needed: the extension's sequences are as they were.
out=$(pg_psql "$dir" -d postgres -X -v VERBOSITY=verbose -c "DROP SEQUENCE snowflake.orders CASCADE" 2>&1 || true)
grep -q 'XX000: operation is not allowed on this node' <<<"$out" || fail "the emulation did not refuse DROP: $out"
out=$(pg_psql "$dir" -d postgres -X -v VERBOSITY=verbose -c "ALTER SEQUENCE gdid.\"shop/gorders\" CACHE 2" 2>&1 || true)
grep -q 'XX000: Altering a distributed sequence' <<<"$out" || fail "the emulation did not refuse ALTER: $out"
# The rewrite typed by hand is skipped too, and says so; any other ALTER runs.
out=$(pg_psql "$dir" -d postgres -X -c "SET citus.enable_ddl_propagation = off" \
    -c "ALTER SEQUENCE snowflake.orders START WITH 562949953421313 MINVALUE 562949953421313 MAXVALUE 844424930131969 RESTART WITH 562949953421313" 2>&1)
grep -q 'NOTICE:  snowflake_id keeps the definition of sequence snowflake.orders' <<<"$out" || fail "no NOTICE: $out"
[ "$(definitions)" = "$expect_defs" ] || fail "the definitions changed: $(definitions)"
expect "$dir" "SELECT count(*) = count(DISTINCT id) FROM orders_102008" t
echo "ok: DROP and ALTER refused as Citus does on a worker, and never needed"

## 2. First uses of a new name by several sessions at once
rounds=6
waits_seen=0
for r in $(seq 1 $rounds); do
    name="shard_task_$r"
    # The first session's background worker waits for pg_class while the others wait for it.
    open_session "holder$r" "$dir"
    send "holder$r" "BEGIN; LOCK TABLE pg_catalog.pg_class IN EXCLUSIVE MODE; SELECT 'locked';"
    wait_until 10 "the lock on pg_class" grep -q '^locked' "$CLUSTER_ROOT/holder$r.out"
    : >"$CLUSTER_ROOT/tasks.$r"
    pids=()
    for t in 1 2 3; do
        session "$dir" -Atc "SELECT snowflake_node(snowflake_next('$name'))" >>"$CLUSTER_ROOT/tasks.$r" 2>&1 &
        pids+=($!)
    done
    # Until they have all started: the worker making the sequence waits for pg_class, the
    # others for the name. None of them waits in the lock manager for the name.
    wait_until 10 "the background worker waiting for pg_class" sql_is "$dir" \
        "SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'snowflake_id sequence creator' AND wait_event_type = 'Lock'" t
    for i in $(seq 1 20); do
        w=$(sql "$dir" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21318 AND NOT granted")
        waits_seen=$((waits_seen + w))
        sleep 0.02
    done
    expect "$dir" "SELECT count(*) >= 3 FROM pg_stat_activity WHERE query LIKE '%snowflake_next(''$name'')%' AND state = 'active'" t >/dev/null
    send "holder$r" "COMMIT;"
    close_session "holder$r"
    for p in "${pids[@]}"; do wait "$p" || fail "a first use of $name failed: $(cat "$CLUSTER_ROOT/tasks.$r")"; done
    [ "$(sort -u "$CLUSTER_ROOT/tasks.$r" | tr '\n' ' ')" = "2 " ] || fail "round $r: $(cat "$CLUSTER_ROOT/tasks.$r")"
done
[ "$waits_seen" = 0 ] || fail "$waits_seen samples of pg_locks showed a session waiting in the lock manager for a name being made"
expect "$dir" "SELECT count(*) FROM pg_class WHERE relname LIKE 'shard_task_%' AND relnamespace = snowflake_sequence_schema()" "$rounds"
echo "ok: $rounds rounds of three first uses of a new name held up while its sequence was made: none waited in the lock manager (120 samples of pg_locks each), every one generated"
