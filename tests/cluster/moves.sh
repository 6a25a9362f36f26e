#!/usr/bin/env bash
# Ways a database moves without its server's lease file: a template copy, and pg_dump /
# pg_restore into another cluster. In each, the sequences are new to the server that holds the
# copy, and the first value each hands out must be above the values stored with it, with no
# manual step: the table also holds keys another server (authority 7, node 8) made, which
# must not get in the way. A column converted from serial survives the dump and restore.
# Dropping a database drops its sequences from the lease file.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

a="$CLUSTER_ROOT/a"
pg_init "$a" 55551 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 3" \
    "gdid.authority = 3"
pg_start "$a"
pg_psql "$a" -d postgres -qc "CREATE DATABASE app"
pg_psql "$a" -d app -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), origin text DEFAULT 'a');
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), origin text DEFAULT 'a');
INSERT INTO orders SELECT FROM generate_series(1, 20000);
INSERT INTO invoices SELECT FROM generate_series(1, 20000);
-- Keys of another server, as replication would have brought them: higher counters, a later
-- millisecond.
INSERT INTO invoices VALUES (gdid(0, 7, 50000000), 'other'), (gdid(0, 7, 50000001), 'other');
INSERT INTO orders VALUES (snowflake_from_timestamp(now() + interval '5 s') + 4096 * 8, 'other');
-- A serial key converted to snowflake IDs.
CREATE TABLE legacy (id serial PRIMARY KEY, v text);
INSERT INTO legacy (v) SELECT 'old ' || g FROM generate_series(1, 100) g;
SELECT snowflake_convert_column('legacy', 'id') \g /dev/null
INSERT INTO legacy (v) VALUES ('converted');
SQL
sql() { pg_psql "$1" -d "$2" -Atc "$3"; }

# check DIR DB LABEL: after inserting 5000 rows with the defaults, no key repeats, and every
# new key of this server is above every earlier key of this server.
check() {
    local dir=$1 db=$2 label=$3
    sql "$dir" "$db" "UPDATE orders SET origin = 'before' WHERE origin = 'a'; UPDATE invoices SET origin = 'before' WHERE origin = 'a'" >/dev/null
    sql "$dir" "$db" "INSERT INTO orders (origin) SELECT 'new' FROM generate_series(1, 5000)" >/dev/null ||
        fail "$label: inserting snowflake IDs failed"
    sql "$dir" "$db" "INSERT INTO invoices (origin) SELECT 'new' FROM generate_series(1, 5000)" >/dev/null ||
        fail "$label: inserting gdids failed"
    [ "$(sql "$dir" "$db" "SELECT count(*) - count(DISTINCT id) FROM orders")" = 0 ] || fail "$label: repeated snowflake IDs"
    [ "$(sql "$dir" "$db" "SELECT count(*) - count(DISTINCT id) FROM invoices")" = 0 ] || fail "$label: repeated gdids"
    [ "$(sql "$dir" "$db" "SELECT min(id) FILTER (WHERE origin = 'new') > max(id) FILTER (WHERE origin = 'before') FROM orders")" = t ] ||
        fail "$label: new snowflake IDs are not above the earlier ones of node 3"
    [ "$(sql "$dir" "$db" "SELECT min(id) FILTER (WHERE origin = 'new') > max(id) FILTER (WHERE origin = 'before') FROM invoices")" = t ] ||
        fail "$label: new gdids are not above the earlier ones of authority 3"
    [ "$(sql "$dir" "$db" "SELECT count(*) FROM invoices WHERE origin = 'new' AND gdid_authority(id) = 3 AND gdid_counter(id) < 50000000")" = 5000 ] ||
        fail "$label: the keys of authority 7 pushed authority 3's counters up"
    echo "figures: $label: $(sql "$dir" "$db" "SELECT count(*) FILTER (WHERE origin <> 'new') FROM orders") snowflake IDs and $(sql "$dir" "$db" "SELECT count(*) FILTER (WHERE origin <> 'new') FROM invoices") gdids copied, 5000 of each made after, none repeated; gdid counters resumed at $(sql "$dir" "$db" "SELECT min(gdid_counter(id)) FROM invoices WHERE origin = 'new'") (highest copied of authority 3: $(sql "$dir" "$db" "SELECT max(gdid_counter(id)) FROM invoices WHERE origin = 'before'"))"
    sql "$dir" "$db" "UPDATE orders SET origin = 'a' WHERE origin IN ('before', 'new'); UPDATE invoices SET origin = 'a' WHERE origin IN ('before', 'new')" >/dev/null
}

# 1. A template copy: a new database OID, so new sequences, seeded from the copied tables.
pg_psql "$a" -d postgres -qc "CREATE DATABASE app_copy TEMPLATE app"
check "$a" app_copy "template copy"

# 2. pg_dump -Fc / pg_restore into another cluster, whose server has the same node number and
# authority (a replacement for the first) and whose clock is 30 s behind.
mkdir -p "$CLUSTER_ROOT/dumps"
chown postgres: "$CLUSTER_ROOT/dumps"
dump="$CLUSTER_ROOT/dumps/app.dump"
as_postgres "$PG_BINDIR/pg_dump" -h "$a" -p 55551 -U postgres -Fc -f "$dump" app || fail "pg_dump failed"
b="$CLUSTER_ROOT/b"
pg_init "$b" 55552 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 3" \
    "gdid.authority = 3" "snowflake.max_clock_ahead = '60s'"
pg_start "$b" FAKETIME=-30s LD_PRELOAD="$FAKETIME_LIB"
pg_psql "$b" -d postgres -qc "CREATE DATABASE app"
as_postgres "$PG_BINDIR/pg_restore" -h "$b" -p 55552 -U postgres -d app "$dump" || fail "pg_restore failed"
check "$b" app "restore into another cluster (clock 30 s behind)"

# The converted column came along: bigint, DEFAULT snowflake_next, no sequence left.
[ "$(sql "$b" app "SELECT format_type(atttypid, NULL) || ' ' || pg_get_expr(adbin, adrelid) FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum WHERE attrelid = 'legacy'::regclass AND attname = 'id'")" = "bigint snowflake_next('public.legacy.id'::text)" ] ||
    fail "the converted column did not survive the restore"
[ "$(sql "$b" app "SELECT count(*) FROM pg_class WHERE relkind = 'S'")" = 0 ] || fail "a sequence survived the conversion"
sql "$b" app "INSERT INTO legacy (v) SELECT 'restored' FROM generate_series(1, 1000)" >/dev/null
expect_app() { [ "$(sql "$b" app "$1")" = "$2" ] || fail "$1: expected $2"; echo "ok: $1 = $2"; }
expect_app "SELECT count(*), count(DISTINCT id) FROM legacy" "1101|1101"
expect_app "SELECT min(id) FILTER (WHERE v = 'restored') > max(id) FILTER (WHERE v <> 'restored') FROM legacy" "t"

# 3. DROP DATABASE drops the database's sequences: their records leave the lease file.
# records DIR DB_OID: the lease records of that database.
records() {
    python3 - "$1/data/snowflake_id/leases" "$2" <<'PY'
import struct, sys
data, db = open(sys.argv[1], "rb").read(), int(sys.argv[2])
print(sum(1 for i in range(0, len(data), 256)
          if data[i:i + 4] == b"SFL1" and struct.unpack_from("<I", data, i + 8)[0] == db))
PY
}
copy_oid=$(sql "$a" postgres "SELECT oid FROM pg_database WHERE datname = 'app_copy'")
app_oid=$(sql "$a" postgres "SELECT oid FROM pg_database WHERE datname = 'app'")
before=$(records "$a" "$copy_oid")
[ "$before" -ge 2 ] || fail "app_copy has only $before lease records"
pg_psql "$a" -d postgres -qc "DROP DATABASE app_copy"
[ "$(records "$a" "$copy_oid")" -eq 0 ] || fail "DROP DATABASE left lease records of app_copy"
echo "ok: DROP DATABASE app_copy removed its $before sequences from the lease file; app keeps its $(records "$a" "$app_oid")"
pg_stop "$a"
pg_start "$a"
[ "$(records "$a" "$copy_oid")" -eq 0 ] || fail "the records came back at restart"
echo "moves: ok"
