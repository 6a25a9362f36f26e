#!/usr/bin/env bash
# Every released version stays installable and updatable. For each install script of an
# earlier release in sql/, a database installs that version and generates with both kinds
# (through the current library, which keeps the old C symbols), then runs
# ALTER EXTENSION snowflake_id UPDATE. Its extension objects (every function with its
# markings, C symbol and privileges, operators, classes, casts, types, views, comments) must
# be exactly those of a fresh install of the current version, and its data and generation
# go on: nothing handed out before the update comes back after it.
#
# A release that changes the SQL adds sql/snowflake_id--OLD--NEW.sql (and keeps
# sql/snowflake_id--OLD.sql); a forgotten script fails here, as "no update path" or as a
# difference in the objects.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."

current=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml)
db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 9" \
    "gdid.authority = 9")
pg_start "$db"
objects() {
    pg_psql "$db" -d "$1" -q -f tests/cluster/extension_objects.sql
}

pg_psql "$db" -d postgres -qc "CREATE DATABASE fresh" -c "ALTER DATABASE fresh SET timezone = 'UTC'"
pg_psql "$db" -d fresh -qc "CREATE EXTENSION snowflake_id"
objects fresh >"$CLUSTER_ROOT/fresh.txt"
[ "$(wc -l <"$CLUSTER_ROOT/fresh.txt")" -gt 60 ] || fail "the object listing is too short"
echo "a fresh $current install has $(wc -l <"$CLUSTER_ROOT/fresh.txt") object properties"

versions=$(ls sql | sed -n 's/^snowflake_id--\([^-]*\)\.sql$/\1/p' | grep -vx "$current" || true)
[ -n "$versions" ] || fail "no earlier release in sql/"
for v in $versions; do
    name="from_${v//./_}"
    pg_psql "$db" -d postgres -qc "CREATE DATABASE $name"
    pg_psql "$db" -d "$name" -q <<SQL
CREATE EXTENSION snowflake_id VERSION '$v';
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), at text DEFAULT 'before');
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), at text DEFAULT 'before');
INSERT INTO orders SELECT FROM generate_series(1, 5000);
INSERT INTO invoices SELECT FROM generate_series(1, 5000);
SELECT count(*) FROM snowflake_next_batch('orders', 100) \g /dev/null
SQL
    sql() { pg_psql "$db" -d "$name" -Atc "$1"; }
    [ "$(sql "SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'")" = "$v" ] || fail "did not install $v: $(sql "SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'")"
    objects "$name" >"$CLUSTER_ROOT/$name.before.txt"
    pg_psql "$db" -d "$name" -qc "ALTER EXTENSION snowflake_id UPDATE"
    pg_psql "$db" -d "$name" -Atc "SELECT 'updated $v -> ' || extversion FROM pg_extension WHERE extname = 'snowflake_id'"
    objects "$name" >"$CLUSTER_ROOT/$name.txt"
    if ! diff -u "$CLUSTER_ROOT/fresh.txt" "$CLUSTER_ROOT/$name.txt"; then
        fail "after the update from $v the extension differs from a fresh $current install"
    fi
    echo "ok: after the update from $v the objects are exactly those of a fresh install"
    # Tables with a generating column that existed before the update get the trigger that
    # detection counts new values with.
    [ "$(sql "SELECT string_agg(tgrelid::regclass::text || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text) FROM pg_trigger WHERE tgfoid = 'snowflake_arrival_trigger'::regproc")" = "invoices:R,orders:R" ] ||
        fail "after the update from $v: triggers $(sql "SELECT string_agg(tgrelid::regclass::text, ',') FROM pg_trigger WHERE tgfoid = 'snowflake_arrival_trigger'::regproc")"
    changed=$(diff "$CLUSTER_ROOT/$name.before.txt" "$CLUSTER_ROOT/$name.txt" | grep -c '^[<>]' || true)
    echo "($changed object properties changed by the update)"
    pg_psql "$db" -d "$name" -q <<'SQL'
INSERT INTO orders (at) SELECT 'after' FROM generate_series(1, 5000);
INSERT INTO invoices (at) SELECT 'after' FROM generate_series(1, 5000);
SQL
    [ "$(sql "SELECT count(*) || '/' || count(DISTINCT id) FROM orders")" = 10000/10000 ] ||
        fail "orders: $(sql "SELECT count(*) || '/' || count(DISTINCT id) FROM orders")"
    [ "$(sql "SELECT count(*) || '/' || count(DISTINCT id) FROM invoices")" = 10000/10000 ] ||
        fail "invoices: $(sql "SELECT count(*) || '/' || count(DISTINCT id) FROM invoices")"
    [ "$(sql "SELECT min(id) FILTER (WHERE at = 'after') > max(id) FILTER (WHERE at = 'before') FROM orders")" = t ] ||
        fail "snowflake IDs after the update are not above those before"
    [ "$(sql "SELECT min(id) FILTER (WHERE at = 'after') > max(id) FILTER (WHERE at = 'before') FROM invoices")" = t ] ||
        fail "gdids after the update are not above those before"
    echo "figures: from $v: 5000 + 5000 rows of each kind before and after the update, none repeated"
done
echo "upgrade: ok"
