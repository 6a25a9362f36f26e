#!/usr/bin/env bash
# Crash: four sessions generate snowflake IDs and gdids; the postmaster and all its children
# are killed with SIGKILL mid-stream; the server restarts with its clock 30 s behind. Every
# ID generated afterwards must be greater than every ID a client received before the crash.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 11" \
    "gdid.authority = 4" "snowflake.max_clock_ahead = '60s'")
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id"

out="$CLUSTER_ROOT/out"
mkdir -p "$out"
chmod 777 "$out"
SF="SELECT snowflake_next('orders') UNION ALL SELECT * FROM snowflake_next_batch('orders', 100);"
GD="SELECT gdid_next('shop', 'orders') UNION ALL SELECT * FROM gdid_next_block('shop', 'orders', 100);"
pids=()
for s in 1 2; do
    : >"$out/sf_before_$s" && : >"$out/gd_before_$s"
    stream "$db" "$out/sf_before_$s" 100000 "$SF" &
    pids+=($!)
    stream "$db" "$out/gd_before_$s" 100000 "$GD" &
    pids+=($!)
done
# Under load for a while: until the sessions have received 20000 IDs of each kind.
wait_until 60 "20000 snowflake IDs" lines_at_least 20000 "$out"/sf_before_*
wait_until 60 "20000 gdids" lines_at_least 20000 "$out"/gd_before_*
pg_kill9 "$db"
for p in "${pids[@]}"; do wait "$p"; done
sf_before=$(cat "$out"/sf_before_* | wc -l)
gd_before=$(cat "$out"/gd_before_* | wc -l)
[ "$sf_before" -gt 1000 ] && [ "$gd_before" -gt 1000 ] || fail "too little generated before the crash"
echo "before the crash: $sf_before snowflake IDs, $gd_before gdids received"

pg_start "$db" FAKETIME=-30s LD_PRELOAD="$FAKETIME_LIB"
lag=$(clock_lag "$db")
[ "$lag" -ge 28 ] || fail "the restarted server's clock is only $lag s behind"
echo "restarted after crash recovery, clock $lag s behind"
stream "$db" "$out/sf_after" 200 "$SF"
stream "$db" "$out/gd_after" 200 "$GD"
sf_after=$(wc -l <"$out/sf_after")
gd_after=$(wc -l <"$out/gd_after")
[ "$sf_after" -eq 20200 ] && [ "$gd_after" -eq 20200 ] || fail "generation after the crash failed"

load_ids "$db" sf_before bigint "$out"/sf_before_*
load_ids "$db" sf_after bigint "$out/sf_after"
load_ids "$db" gd_before gdid "$out"/gd_before_*
load_ids "$db" gd_after gdid "$out/gd_after"
expect "$db" "SELECT (SELECT min(id) FROM sf_after) > (SELECT max(id) FROM sf_before)" "t"
expect "$db" "SELECT (SELECT min(id) FROM gd_after) > (SELECT max(id) FROM gd_before)" "t"
expect "$db" "SELECT count(*) - count(DISTINCT id) FROM (SELECT id FROM sf_before UNION ALL SELECT id FROM sf_after) s" "0"
expect "$db" "SELECT count(*) - count(DISTINCT id) FROM (SELECT id FROM gd_before UNION ALL SELECT id FROM gd_after) s" "0"
sql "$db" "SELECT 'figures: snowflake ' || (SELECT count(*) FROM sf_before) || ' before, ' || (SELECT count(*) FROM sf_after) || ' after, resumed ' || ((SELECT min(snowflake_timestamp(id)) FROM sf_after) - (SELECT max(snowflake_timestamp(id)) FROM sf_before)) || ' above the last ID; gdid ' || (SELECT count(*) FROM gd_before) || ' before, ' || (SELECT count(*) FROM gd_after) || ' after, counters ' || (SELECT max(gdid_counter(id)) FROM gd_before) || ' -> ' || (SELECT min(gdid_counter(id)) FROM gd_after)"
echo "crash: ok"
