#!/usr/bin/env bash
# Ways a database moves without its server's lease file: a template copy, and pg_dump /
# pg_restore into another cluster. In each, the sequences are new to the server that holds the
# copy, and the first value each hands out must be above the values stored with it, with no
# manual step: the table also holds keys another server (authority 7, node 8) made, which
# must not get in the way. A column converted from serial survives the dump and restore.
# Dropping a database drops its sequences from the lease file.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

a=$(instance a "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 3" \
    "gdid.authority = 3")
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

# check DIR DB LABEL: after inserting 5000 rows with the defaults, no key repeats, and every
# new key of this server is above every earlier key of this server.
check() {
    local dir=$1 db=$2 label=$3
    sql "$dir" "UPDATE orders SET origin = 'before' WHERE origin = 'a'; UPDATE invoices SET origin = 'before' WHERE origin = 'a'" "$db" >/dev/null
    sql "$dir" "INSERT INTO orders (origin) SELECT 'new' FROM generate_series(1, 5000)" "$db" >/dev/null ||
        fail "$label: inserting snowflake IDs failed"
    sql "$dir" "INSERT INTO invoices (origin) SELECT 'new' FROM generate_series(1, 5000)" "$db" >/dev/null ||
        fail "$label: inserting gdids failed"
    [ "$(sql "$dir" "SELECT count(*) - count(DISTINCT id) FROM orders" "$db")" = 0 ] || fail "$label: repeated snowflake IDs"
    [ "$(sql "$dir" "SELECT count(*) - count(DISTINCT id) FROM invoices" "$db")" = 0 ] || fail "$label: repeated gdids"
    [ "$(sql "$dir" "SELECT min(id) FILTER (WHERE origin = 'new') > max(id) FILTER (WHERE origin = 'before') FROM orders" "$db")" = t ] ||
        fail "$label: new snowflake IDs are not above the earlier ones of node 3"
    [ "$(sql "$dir" "SELECT min(id) FILTER (WHERE origin = 'new') > max(id) FILTER (WHERE origin = 'before') FROM invoices" "$db")" = t ] ||
        fail "$label: new gdids are not above the earlier ones of authority 3"
    [ "$(sql "$dir" "SELECT count(*) FROM invoices WHERE origin = 'new' AND gdid_authority(id) = 3 AND gdid_counter(id) < 50000000" "$db")" = 5000 ] ||
        fail "$label: the keys of authority 7 pushed authority 3's counters up"
    echo "figures: $label: $(sql "$dir" "SELECT count(*) FILTER (WHERE origin <> 'new') FROM orders" "$db") snowflake IDs and $(sql "$dir" "SELECT count(*) FILTER (WHERE origin <> 'new') FROM invoices" "$db") gdids copied, 5000 of each made after, none repeated; gdid counters resumed at $(sql "$dir" "SELECT min(gdid_counter(id)) FROM invoices WHERE origin = 'new'" "$db") (highest copied of authority 3: $(sql "$dir" "SELECT max(gdid_counter(id)) FROM invoices WHERE origin = 'before'" "$db"))"
    sql "$dir" "UPDATE orders SET origin = 'a' WHERE origin IN ('before', 'new'); UPDATE invoices SET origin = 'a' WHERE origin IN ('before', 'new')" "$db" >/dev/null
}

# 1. A template copy: a new database OID, so new sequences, seeded from the copied tables.
pg_psql "$a" -d postgres -qc "CREATE DATABASE app_copy TEMPLATE app"
check "$a" app_copy "template copy"

# 2. pg_dump -Fc / pg_restore into another cluster, whose server has the same node number and
# authority (a replacement for the first) and whose clock is 30 s behind.
mkdir -p "$CLUSTER_ROOT/dumps"
chown postgres: "$CLUSTER_ROOT/dumps"
dump="$CLUSTER_ROOT/dumps/app.dump"
as_postgres "$PG_BINDIR/pg_dump" -h "$a" -p "$(pg_port_of "$a")" -U postgres -Fc -f "$dump" app || fail "pg_dump failed"
b=$(instance b "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 3" \
    "gdid.authority = 3" "snowflake.max_clock_ahead = '60s'")
pg_start "$b" FAKETIME=-30s LD_PRELOAD="$FAKETIME_LIB"
pg_psql "$b" -d postgres -qc "CREATE DATABASE app"
as_postgres "$PG_BINDIR/pg_restore" -h "$b" -p "$(pg_port_of "$b")" -U postgres -d app "$dump" || fail "pg_restore failed"
check "$b" app "restore into another cluster (clock 30 s behind)"

# The converted column came along: bigint, DEFAULT snowflake_next, no sequence left.
[ "$(sql "$b" "SELECT format_type(atttypid, NULL) || ' ' || pg_get_expr(adbin, adrelid) FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum WHERE attrelid = 'legacy'::regclass AND attname = 'id'" app)" = "bigint snowflake_next('public.legacy.id'::text)" ] ||
    fail "the converted column did not survive the restore"
[ "$(sql "$b" "SELECT count(*) FROM pg_class WHERE relkind = 'S'" app)" = 0 ] || fail "a sequence survived the conversion"
sql "$b" "INSERT INTO legacy (v) SELECT 'restored' FROM generate_series(1, 1000)" app >/dev/null
expect "$b" "SELECT count(*), count(DISTINCT id) FROM legacy" "1101|1101" app
expect "$b" "SELECT min(id) FILTER (WHERE v = 'restored') > max(id) FILTER (WHERE v <> 'restored') FROM legacy" "t" app

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
copy_oid=$(sql "$a" "SELECT oid FROM pg_database WHERE datname = 'app_copy'")
app_oid=$(sql "$a" "SELECT oid FROM pg_database WHERE datname = 'app'")
before=$(records "$a" "$copy_oid")
[ "$before" -ge 2 ] || fail "app_copy has only $before lease records"
pg_psql "$a" -d postgres -qc "DROP DATABASE app_copy"
[ "$(records "$a" "$copy_oid")" -eq 0 ] || fail "DROP DATABASE left lease records of app_copy"
echo "ok: DROP DATABASE app_copy removed its $before sequences from the lease file; app keeps its $(records "$a" "$app_oid")"
pg_stop "$a"
pg_start "$a"
[ "$(records "$a" "$copy_oid")" -eq 0 ] || fail "the records came back at restart"
echo "moves: ok"
