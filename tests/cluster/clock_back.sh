#!/usr/bin/env bash
# A clean restart with the clock set back by more than snowflake.max_clock_ahead (10 s by
# default): the generator refuses with a clear error instead of risking a repeat; gdids,
# which do not depend on the clock, carry on; once the clock is right, generation resumes
# above everything handed out before.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 12" "gdid.authority = 12")
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id"
out="$CLUSTER_ROOT/out"
mkdir -p "$out"
SF="SELECT * FROM snowflake_next_batch('orders', 500);"
stream "$db" "$out/before" 100 "$SF"
stream "$db" "$out/gd_before" 1 "SELECT * FROM gdid_next_block('shop', 'orders', 1000);"
pg_stop "$db"

pg_start "$db" FAKETIME=-30s LD_PRELOAD="$FAKETIME_LIB"
lag=$(clock_lag "$db")
[ "$lag" -ge 28 ] || fail "the restarted server's clock is only $lag s behind"
echo "clean restart, clock $lag s behind"
for sql in "SELECT snowflake_next('orders')" "SELECT * FROM snowflake_next_batch('orders', 10)"; do
    if msg=$(sql "$db" "$sql" 2>&1); then
        fail "$sql succeeded with the clock 30 s behind: $msg"
    fi
    echo "$msg" | grep -q 'ERROR:  snowflake sequence "orders" is too far ahead of the wall clock' ||
        fail "unexpected error: $msg"
    echo "refused as expected: $sql"
done
echo "$msg"
stream "$db" "$out/gd_during" 1 "SELECT * FROM gdid_next_block('shop', 'orders', 1000);"
[ "$(wc -l <"$out/gd_during")" -eq 1000 ] || fail "gdid generation stopped with the clock"
pg_stop "$db"

pg_start "$db"
lag=$(clock_lag "$db")
[ "$lag" -le 2 ] || fail "the clock is still $lag s behind"
stream "$db" "$out/after" 100 "$SF"
[ "$(wc -l <"$out/after")" -eq 50000 ] || fail "generation did not resume"
load_ids "$db" before bigint "$out/before"
load_ids "$db" after bigint "$out/after"
load_ids "$db" gd gdid "$out/gd_before" "$out/gd_during"
expect "$db" "SELECT (SELECT min(id) FROM after) > (SELECT max(id) FROM before)" "t"
expect "$db" "SELECT count(*) - count(DISTINCT id) FROM gd" "0"
expect "$db" "SELECT count(*) FROM gd" "2000"
echo "figures: 50000 snowflake IDs before, 0 with the clock 30 s behind, 50000 after; 2000 gdids"
echo "clock_back: ok"
