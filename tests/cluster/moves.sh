#!/usr/bin/env bash
# Ways a database, or a table, moves, and what each new home generates next. Every sequence is
# a relation of its database whose value is its durable lease, so:
# 1. a template copy (CREATE DATABASE ... TEMPLATE) copies the relations: each sequence of the
#    copy continues above its lease;
# 2. pg_dump -Fc / pg_restore of the whole database into another cluster (same node number
#    and authority, its clock 30 s behind) restores each sequence with its value (setval):
#    the same; a column converted from serial comes along, its old sequence gone;
# 3. pg_dump -t of single tables (their sequences not included) restored into another
#    database and into another cluster, and rows loaded by COPY into a table whose DEFAULT
#    names a new sequence: there the sequence is fresh, and starts above this server's keys
#    found in the column's index (the fallback);
# 4. a DROP DATABASE that fails (55006: another session is connected) changes nothing:
#    gdid_next continues with the next counter, snowflake_next above its last ID even though
#    that ran ahead of the clock.
# In each, the tables also hold keys of another server (authority 7, node 8, higher counters
# and a later millisecond), which must not get in the way.
# snowflake.node_bits = 13 (512 IDs a millisecond), so that one batch runs a sequence many
# seconds ahead of the clock: keys that time alone would not put new IDs above.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap cleanup_with_jobs EXIT

SETTINGS=("shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 3" "gdid.authority = 3"
    "snowflake.node_bits = 13" "snowflake.max_clock_ahead = '60s'")
a=$(instance a "${SETTINGS[@]}")
pg_start "$a"
pg_psql "$a" -d postgres -qc "CREATE DATABASE app"
pg_psql "$a" -d app -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), origin text DEFAULT 'a');
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), origin text DEFAULT 'a');
INSERT INTO orders SELECT FROM generate_series(1, 20000);
INSERT INTO invoices SELECT FROM generate_series(1, 20000);
-- Keys of another server, as replication would have brought them: higher counters, a later
-- millisecond (node 8 of 13 node bits: 8 << 9).
INSERT INTO invoices VALUES (gdid(0, 7, 50000000), 'other'), (gdid(0, 7, 50000001), 'other');
INSERT INTO orders VALUES (snowflake_from_timestamp(now() + interval '5 s') + (8 << 9), 'other');
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
    sql "$dir" "UPDATE orders SET origin = 'before' WHERE origin <> 'other'; UPDATE invoices SET origin = 'before' WHERE origin <> 'other'" "$db" >/dev/null
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
    echo "figures: $label: $(sql "$dir" "SELECT count(*) FILTER (WHERE origin <> 'new') FROM orders" "$db") snowflake IDs and $(sql "$dir" "SELECT count(*) FILTER (WHERE origin <> 'new') FROM invoices" "$db") gdids there, 5000 of each made after, none repeated; first new ID $(sql "$dir" "SELECT min(snowflake_timestamp(id)) FILTER (WHERE origin = 'new') - max(snowflake_timestamp(id)) FILTER (WHERE origin = 'before') FROM orders" "$db") after the newest of node 3, which was $(sql "$dir" "SELECT date_trunc('second', max(snowflake_timestamp(id)) FILTER (WHERE origin = 'before') - now()) FROM orders" "$db") ahead of the clock; gdid counters resumed at $(sql "$dir" "SELECT min(gdid_counter(id)) FROM invoices WHERE origin = 'new'" "$db") (highest of authority 3 before: $(sql "$dir" "SELECT max(gdid_counter(id)) FROM invoices WHERE origin = 'before'" "$db"))"
    sql "$dir" "UPDATE orders SET origin = 'a' WHERE origin IN ('before', 'new'); UPDATE invoices SET origin = 'a' WHERE origin IN ('before', 'new')" "$db" >/dev/null
}
# run_ahead DIR DB SECONDS: one batch of app's orders sequence, its last ID stored: a key of
# node 3 at least SECONDS ahead of the clock. Prints how far ahead it is.
run_ahead() {
    sql "$1" "INSERT INTO orders (id, origin) SELECT max(i), 'ahead' FROM snowflake_next_batch('orders', 512 * 1000 * $3) i" "$2" >/dev/null
    sql "$1" "SELECT round(extract(epoch FROM max(snowflake_timestamp(id)) - clock_timestamp())::numeric, 1) FROM orders WHERE origin = 'ahead'" "$2"
}
# is_fresh DIR DB RELATION: whether the sequence has never leased anything.
is_fresh() {
    sql "$1" "SELECT NOT is_called FROM $3" "$2"
}

# 1. A template copy: a new database whose sequences are copies of app's, leases included.
pg_psql "$a" -d postgres -qc "CREATE DATABASE app_copy TEMPLATE app"
[ "$(is_fresh "$a" app_copy snowflake.orders)$(is_fresh "$a" app_copy 'gdid."billing/invoices"')" = ff ] ||
    fail "the template copy's sequences are fresh"
[ "$(sql "$a" "SELECT last_value FROM gdid.\"billing/invoices\"" app_copy)" = "$(sql "$a" "SELECT last_value FROM gdid.\"billing/invoices\"" app)" ] ||
    fail "the template copy's gdid lease differs from the original's"
check "$a" app_copy "template copy"

# 2. pg_dump -Fc / pg_restore into another cluster, whose server has the same node number and
# authority (a replacement for the first) and whose clock is 30 s behind.
mkdir -p "$CLUSTER_ROOT/dumps"
chown postgres: "$CLUSTER_ROOT/dumps"
dump="$CLUSTER_ROOT/dumps/app.dump"
as_postgres "$PG_BINDIR/pg_dump" -h "$a" -p "$(pg_port_of "$a")" -U postgres -Fc -f "$dump" app || fail "pg_dump failed"
b=$(instance b "${SETTINGS[@]}")
pg_start "$b" FAKETIME=-30s LD_PRELOAD="$FAKETIME_LIB"
pg_psql "$b" -d postgres -qc "CREATE DATABASE app"
as_postgres "$PG_BINDIR/pg_restore" -h "$b" -p "$(pg_port_of "$b")" -U postgres -d app "$dump" || fail "pg_restore failed"
for rel in snowflake.orders 'gdid."billing/invoices"' 'snowflake."public.legacy.id"'; do
    [ "$(sql "$b" "SELECT last_value || ' ' || is_called FROM $rel" app)" = "$(sql "$a" "SELECT last_value || ' ' || is_called FROM $rel" app)" ] ||
        fail "$rel was not restored with its value"
done
echo "ok: the restored sequences hold the values of the dumped ones"
check "$b" app "restore into another cluster (clock 30 s behind)"

# The converted column came along: bigint, DEFAULT snowflake_next depending on its sequence;
# the serial's own sequence is gone, and no sequence exists outside the extension's schemas.
[ "$(sql "$b" "SELECT format_type(atttypid, NULL) || ' ' || pg_get_expr(adbin, adrelid) FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum WHERE attrelid = 'legacy'::regclass AND attname = 'id'" app)" = "bigint snowflake_next('public.legacy.id'::text)" ] ||
    fail "the converted column did not survive the restore"
expect "$b" "SELECT to_regclass('public.legacy_id_seq') IS NULL" "t" app
expect "$b" "SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relnamespace NOT IN ('snowflake'::regnamespace, 'gdid'::regnamespace)" "0" app
expect "$b" "SELECT count(*) FROM pg_depend d JOIN pg_attrdef ad ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid WHERE ad.adrelid = 'legacy'::regclass AND d.refobjid = 'snowflake.\"public.legacy.id\"'::regclass" "1" app
sql "$b" "INSERT INTO legacy (v) SELECT 'restored' FROM generate_series(1, 1000)" app >/dev/null
expect "$b" "SELECT count(*), count(DISTINCT id) FROM legacy" "1101|1101" app
expect "$b" "SELECT min(id) FILTER (WHERE v = 'restored') > max(id) FILTER (WHERE v <> 'restored') FROM legacy" "t" app

# 3. Single tables without their sequences. The orders of app get a key 20 s ahead of the
# clock first: the newest key of node 3 is then one that only the index shows.
ahead=$(run_ahead "$a" app 20)
echo "app's newest order is $ahead s ahead of the clock"
as_postgres "$PG_BINDIR/pg_dump" -h "$a" -p "$(pg_port_of "$a")" -U postgres -Fc -t orders -t invoices \
    -f "$CLUSTER_ROOT/dumps/tables.dump" app || fail "pg_dump -t failed"
for dir in "$a" "$b"; do
    pg_psql "$dir" -d postgres -qc "CREATE DATABASE tables"
    pg_psql "$dir" -d tables -qc "CREATE EXTENSION snowflake_id"
    as_postgres "$PG_BINDIR/pg_restore" -h "$dir" -p "$(pg_port_of "$dir")" -U postgres -d tables \
        "$CLUSTER_ROOT/dumps/tables.dump" || fail "pg_restore of the tables failed"
    # The restored DEFAULTs made the sequences anew: fresh.
    [ "$(is_fresh "$dir" tables snowflake.orders)$(is_fresh "$dir" tables 'gdid."billing/invoices"')" = tt ] ||
        fail "the sequences of the restored tables are not fresh"
done
check "$a" tables "pg_dump -t into another database (same server)"
check "$b" tables "pg_dump -t into another cluster (clock 30 s behind)"

# Rows loaded by COPY into a new table (the same keys: app's orders and invoices, through a
# file), whose DEFAULTs name sequences never used.
pg_psql "$a" -d app -qc "\\copy (SELECT id, origin FROM orders) TO '$CLUSTER_ROOT/dumps/orders.tsv'" \
    -c "\\copy (SELECT id, origin FROM invoices) TO '$CLUSTER_ROOT/dumps/invoices.tsv'"
pg_psql "$a" -d postgres -qc "CREATE DATABASE loaded"
pg_psql "$a" -d loaded -q <<SQL
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('loaded_orders'), origin text);
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'loaded_invoices'), origin text);
\\copy orders FROM '$CLUSTER_ROOT/dumps/orders.tsv'
\\copy invoices FROM '$CLUSTER_ROOT/dumps/invoices.tsv'
SQL
[ "$(is_fresh "$a" loaded snowflake.loaded_orders)$(is_fresh "$a" loaded 'gdid."billing/loaded_invoices"')" = tt ] ||
    fail "the sequences of the loaded tables are not fresh"
check "$a" loaded "COPY into a table with fresh sequences"

# 4. A DROP DATABASE that fails changes nothing.
pg_psql "$a" -d postgres -qc "CREATE DATABASE victim"
pg_psql "$a" -d victim -qc "CREATE EXTENSION snowflake_id"
expect "$a" "SELECT gdid_next('s', 'x')::text || ' ' || gdid_next('s', 'x')::text" "0:3:1 0:3:2" victim
sql "$a" "SELECT snowflake_next('x')" victim >/dev/null
last=$(sql "$a" "SELECT max(i) FROM snowflake_next_batch('x', 512 * 1000 * 5) i" victim)
ahead=$(sql "$a" "SELECT round(extract(epoch FROM snowflake_timestamp($last) - clock_timestamp())::numeric, 1)" victim)
open_session connected "$a" victim
session_pid connected >/dev/null
msg=$(pg_psql "$a" -d postgres -v VERBOSITY=verbose -qc "DROP DATABASE victim" 2>&1) && fail "DROP DATABASE victim succeeded"
grep -q 'ERROR:  55006: database "victim" is being accessed by other users' <<<"$msg" || fail "unexpected: $msg"
echo "DROP DATABASE refused: $(head -n 1 <<<"$msg")"
expect "$a" "SELECT gdid_next('s', 'x')::text" "0:3:3" victim
expect "$a" "SELECT snowflake_next('x') > $last" "t" victim
expect "$a" "SELECT is_called FROM snowflake.x" "t" victim
close_session connected
echo "figures: after the failed DROP DATABASE: gdid 0:3:3 after 0:3:1 and 0:3:2; snowflake above its last ID, made $ahead s ahead of the clock"
echo "moves: ok"
