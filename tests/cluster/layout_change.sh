#!/usr/bin/env bash
# Layout change: a snowflake sequence keeps the epoch and node bits it was created with in
# its relation's definition (MINVALUE is the epoch in Unix ms, INCREMENT the node bits). After
# a restart with another snowflake.epoch (or snowflake.node_bits), generating under that
# name refuses (55000) with an ERROR that says how to migrate, rather than making IDs that
# could repeat or sort below the old ones. New names use the new layout, and are refused in
# turn under the old one; with the settings restored, the old name resumes above its IDs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 3" "gdid.authority = 3")
conf="$db/data/postgresql.conf"
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id"
out="$CLUSTER_ROOT/out"
mkdir -p "$out"
stream "$db" "$out/before" 10 "SELECT * FROM snowflake_next_batch('orders', 1000);"

expect "$db" "SELECT seqmin || ' ' || seqincrement FROM pg_sequence WHERE seqrelid = 'snowflake.orders'::regclass" \
    "$(sql "$db" "SELECT (extract(epoch FROM timestamptz '2025-01-01 00:00:00+00') * 1000)::bigint") 10"

# refused NAME: generating from NAME is refused for its layout.
refused() {
    local msg
    msg=$(pg_psql "$db" -d postgres -v VERBOSITY=verbose -Atc "SELECT snowflake_next('$1')" 2>&1) &&
        fail "generated under a changed layout: $msg"
    echo "$msg" | grep -q "ERROR:  55000: snowflake sequence \"$1\" was created with a different layout" ||
        fail "unexpected: $msg"
    echo "$msg" | grep -v LOCATION
}

v=1
for change in "snowflake.epoch = '2026-01-01 00:00:00+00'" "snowflake.node_bits = 12"; do
    v=$((v + 1))
    pg_stop "$db"
    cp -p "$conf" "$conf.orig"
    echo "$change" >>"$conf"
    pg_start "$db"
    echo "restarted with $change:"
    refused orders
    # A new name records the new layout (and is refused in turn once it changes again).
    expect "$db" "SELECT snowflake_next('orders_v$v') > 0" "t"
    expect "$db" "SELECT gdid_next('shop', 'orders') IS NOT NULL" "t"
    mv "$conf.orig" "$conf"
done

pg_stop "$db"
pg_start "$db"
echo "restarted with the original settings:"
refused orders_v2
refused orders_v3
stream "$db" "$out/after" 10 "SELECT * FROM snowflake_next_batch('orders', 1000);"
load_ids "$db" before bigint "$out/before"
load_ids "$db" after bigint "$out/after"
expect "$db" "SELECT count(*) FROM after" "10000"
expect "$db" "SELECT (SELECT min(id) FROM after) > (SELECT max(id) FROM before)" "t"
echo "figures: 10000 IDs before, 0 under each changed layout, 10000 after restoring it"
echo "layout_change: ok"
