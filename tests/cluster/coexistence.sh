#!/usr/bin/env bash
# The extension beside schemas named snowflake or gdid that were there first (pgEdge's
# snowflake extension, whose schema is not a member of it, and a user's data), and beside
# pgEdge's setting snowflake.node:
#
# 1. A server whose configuration holds pgEdge's snowflake.node (its library not preloaded,
#    as pgEdge documents it) starts, keeps the value, and takes ALTER SYSTEM and a reload of
#    it; a misspelt name of this extension still stops the server.
# 2. In databases with such schemas the extension takes snowflake_seq and snowflake_gdid_seq.
#    A pg_dump of each restores into a new database without a single error, with the same
#    schemas, the same sequences and leases, the user's tables and rows, and inserts go on
#    above the restored keys. pg_dump writes CREATE EXTENSION right before the extension's
#    first schema in name order; both alternative names sort after snowflake and gdid, so the
#    restore makes those first and the extension chooses the same names again. A database
#    without them keeps snowflake and gdid the same way.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

settings=("shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 2" "gdid.authority = 2"
    "snowflake.node = 1")
dir=$(instance source "${settings[@]}")
pg_start "$dir"

## 1. pgEdge's setting
expect "$dir" "SHOW snowflake.node" 1
pg_psql "$dir" -d postgres -qc "ALTER SYSTEM SET snowflake.node = 3" -c "SELECT pg_reload_conf()" >/dev/null
wait_until 10 "the reloaded snowflake.node" sql_is "$dir" "SHOW snowflake.node" 3
pg_stop "$dir"
pg_start "$dir"
expect "$dir" "SHOW snowflake.node" 3
echo "snowflake.nodeid = 1" >>"$dir/data/postgresql.conf"
pg_stop "$dir"
if pg_start "$dir" >/dev/null 2>&1; then
    fail "a server with a misspelt snowflake.nodeid started"
fi
grep -q 'unrecognized configuration parameter "snowflake.nodeid"' "$dir/server.log" ||
    fail "no FATAL for snowflake.nodeid"
sed -i '/^snowflake.nodeid/d' "$dir/data/postgresql.conf"
pg_start "$dir"
echo "ok: snowflake.node kept, changed by ALTER SYSTEM and a reload, across a restart; snowflake.nodeid refused at start"

## 2. Schemas that were there first, and dumps
declare -A before=(
    [pgedge]="CREATE SCHEMA snowflake; GRANT USAGE ON SCHEMA snowflake TO public;
              CREATE SEQUENCE snowflake.id_seq;
              CREATE FUNCTION snowflake.nextval(regclass = 'snowflake.id_seq'::regclass) RETURNS int8
                  LANGUAGE sql AS \$\$ SELECT pg_catalog.nextval(\$1) \$\$;
              CREATE TABLE pg_orders (id int8 PRIMARY KEY DEFAULT snowflake.nextval('snowflake.id_seq'::regclass));
              INSERT INTO pg_orders SELECT FROM generate_series(1, 10);"
    [warehouse]="CREATE SCHEMA snowflake; CREATE TABLE snowflake.orders (id bigint PRIMARY KEY, item text);
                 INSERT INTO snowflake.orders SELECT i, 'synced ' || i FROM generate_series(1, 100) i;"
    [gdid_only]="CREATE SCHEMA gdid; CREATE TABLE gdid.\"billing/invoices\" (n int); INSERT INTO gdid.\"billing/invoices\" VALUES (1);"
    [plain]=""
)
declare -A schemas=([pgedge]="snowflake_seq snowflake_gdid_seq" [warehouse]="snowflake_seq snowflake_gdid_seq"
    [gdid_only]="snowflake_seq snowflake_gdid_seq" [plain]="snowflake gdid")
state="SELECT string_agg(format('%s %s %s', s.seqrelid::regclass, q.last_value IS NOT NULL, n.nspname), ', ' ORDER BY s.seqrelid::regclass::text)
         FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         CROSS JOIN LATERAL (SELECT last_value FROM pg_sequences p WHERE p.schemaname = n.nspname AND p.sequencename = c.relname) q"
for db in "${!before[@]}"; do
    pg_psql "$dir" -d postgres -qc "CREATE DATABASE $db"
    [ -z "${before[$db]}" ] || pg_psql "$dir" -d "$db" -q -v ON_ERROR_STOP=1 -c "${before[$db]}"
    pg_psql "$dir" -d "$db" -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), item text);
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), item text);
INSERT INTO orders (item) SELECT 'o' || i FROM generate_series(1, 1000) i;
INSERT INTO invoices (item) SELECT 'i' || i FROM generate_series(1, 1000) i;
SELECT count(*) FROM gdid_next_block('billing', 'invoices', 5000) \g /dev/null
SQL
    expect "$dir" "SELECT snowflake_sequence_schema() || ' ' || gdid_sequence_schema()" "${schemas[$db]}" "$db"
    orig_state=$(sql "$dir" "$state" "$db")
    orig_last=$(sql "$dir" "SELECT (SELECT last_value FROM pg_sequences WHERE sequencename = 'billing/invoices')" "$db")
    "$PG_BINDIR/pg_dump" -h "$dir" -p "$(pg_port_of "$dir")" -U postgres -d "$db" >"$CLUSTER_ROOT/$db.sql"
    pg_psql "$dir" -d postgres -qc "CREATE DATABASE ${db}_restored"
    out=$(pg_psql "$dir" -d "${db}_restored" -q -v ON_ERROR_STOP=1 -f "$CLUSTER_ROOT/$db.sql" 2>&1) ||
        fail "$db: the restore failed: $out"
    ! grep -q ERROR <<<"$out" || fail "$db: the restore printed errors: $out"
    expect "$dir" "SELECT snowflake_sequence_schema() || ' ' || gdid_sequence_schema()" "${schemas[$db]}" "${db}_restored"
    [ "$(sql "$dir" "$state" "${db}_restored")" = "$orig_state" ] ||
        fail "$db: sequences differ after the restore: $(sql "$dir" "$state" "${db}_restored") (was $orig_state)"
    expect "$dir" "SELECT last_value FROM pg_sequences WHERE sequencename = 'billing/invoices'" "$orig_last" "${db}_restored"
    pg_psql "$dir" -d "${db}_restored" -q -v ON_ERROR_STOP=1 -c "INSERT INTO orders (item) VALUES ('after')" \
        -c "INSERT INTO invoices (item) VALUES ('after')"
    expect "$dir" "SELECT (SELECT count(*) = count(DISTINCT id) FROM orders) AND (SELECT count(*) = count(DISTINCT id) FROM invoices)
                     AND (SELECT id FROM invoices WHERE item = 'after') > (SELECT max(id) FROM invoices WHERE item <> 'after')" t "${db}_restored"
    case $db in
    warehouse) expect "$dir" "SELECT count(*) FROM snowflake.orders" 100 "${db}_restored" ;;
    gdid_only) expect "$dir" "SELECT count(*) FROM gdid.\"billing/invoices\"" 1 "${db}_restored" ;;
    pgedge) expect "$dir" "SELECT count(*) FROM pg_orders" 10 "${db}_restored" ;;
    esac
    echo "ok: $db: schemas ${schemas[$db]}, restored from pg_dump without an error, the same sequences and leases, inserts above"
done
