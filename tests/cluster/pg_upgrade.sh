#!/usr/bin/env bash
# pg_upgrade carries the catalog and the data into a new data directory, not the lease file.
# The old server here ran with its clock 90 s ahead (as a server does whose clock was then
# corrected), so its snowflake IDs are 90 s ahead of the new server's clock, and its gdid
# counters are far from 1. After the upgrade the new server meets every sequence for the
# first time and must continue above what the old one stored: once as is, once with the
# old lease file copied into the new data directory (the operations guide's advice, which
# also covers values that left the database without being stored).
#
# Within one major (pg_upgrade accepts the same major), on each; pg_upgrade_majors.sh goes
# from one major to another.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

settings=("shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 4" "gdid.authority = 4")
old=$(instance old "${settings[@]}" "snowflake.max_clock_ahead = '120s'")
pg_start "$old" FAKETIME=+90s LD_PRELOAD="$FAKETIME_LIB"
pg_psql "$old" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), era text DEFAULT 'old');
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), era text DEFAULT 'old');
INSERT INTO orders SELECT FROM generate_series(1, 30000);
INSERT INTO invoices SELECT FROM generate_series(1, 30000);
SELECT count(*) FROM gdid_next_block('billing', 'invoices', 100000) \g /dev/null
SQL
echo "the old server ran with its clock 90 s ahead: $(sql "$old" "SELECT count(*) FROM orders") IDs up to $(sql "$old" "SELECT snowflake_timestamp(max(id)) FROM orders")"
pg_stop "$old"

work="$CLUSTER_ROOT/upgrade_work"
mkdir -p "$work"
chown postgres: "$work"
# upgrade NAME [copy-lease-file]: a new data directory from the old one, started.
upgrade() {
    local new
    new=$(instance "$1" "${settings[@]}" "snowflake.max_clock_ahead = '120s'")
    (cd "$work" && as_postgres "$PG_BINDIR/pg_upgrade" -b "$PG_BINDIR" -B "$PG_BINDIR" \
        -d "$old/data" -D "$new/data" -p "$(free_port)" -P "$(free_port)" -s "$work" \
        -U postgres >"$work/$1.log" 2>&1) ||
        { tail -n 30 "$work/$1.log"; fail "pg_upgrade into $1 failed"; }
    # (The servers pg_upgrade starts leave an empty lease file of their own.)
    [ ! -s "$new/data/snowflake_id/leases" ] || fail "pg_upgrade carried lease records after all"
    if [ "${2:-}" = copy-lease-file ]; then
        as_postgres mkdir -p "$new/data/snowflake_id"
        as_postgres cp "$old/data/snowflake_id/leases" "$new/data/snowflake_id/leases"
    fi
    pg_start "$new"
}

for variant in "seeded" "with_lease_file copy-lease-file"; do
    # shellcheck disable=SC2086
    set -- $variant
    new="$CLUSTER_ROOT/$1"
    upgrade "$@"
    on_new() { sql "$new" "$1"; }
    [ "$(on_new "SELECT string_agg(tgrelid::regclass::text || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text) FROM pg_trigger WHERE tgfoid = 'snowflake_arrival_trigger'::regproc")" = "invoices:R,orders:R" ] ||
        fail "$1: the detection triggers were not made again"
    on_new "INSERT INTO orders (era) SELECT 'new' FROM generate_series(1, 10000)" >/dev/null ||
        fail "$1: inserting snowflake IDs failed"
    on_new "INSERT INTO invoices (era) SELECT 'new' FROM generate_series(1, 10000)" >/dev/null ||
        fail "$1: inserting gdids failed (a duplicate key means the counters started again)"
    [ "$(on_new "SELECT count(*) - count(DISTINCT id) FROM orders")" = 0 ] || fail "$1: repeated snowflake IDs"
    [ "$(on_new "SELECT count(*) - count(DISTINCT id) FROM invoices")" = 0 ] || fail "$1: repeated gdids"
    [ "$(on_new "SELECT min(id) FILTER (WHERE era = 'new') > max(id) FILTER (WHERE era = 'old') FROM orders")" = t ] ||
        fail "$1: new snowflake IDs are not above the old ones"
    [ "$(on_new "SELECT min(id) FILTER (WHERE era = 'new') > max(id) FILTER (WHERE era = 'old') FROM invoices")" = t ] ||
        fail "$1: new gdids are not above the old ones"
    echo "figures: pg_upgrade, $1: 30000 + 30000 rows before, 10000 + 10000 after, none repeated;" \
        "first new ID $(on_new "SELECT round(extract(epoch FROM snowflake_timestamp(min(id) FILTER (WHERE era = 'new')) - snowflake_timestamp(max(id) FILTER (WHERE era = 'old')))::numeric, 3) FROM orders") s after the last old one," \
        "gdid counters $(on_new "SELECT max(gdid_counter(id)) FILTER (WHERE era = 'old') || ' -> ' || min(gdid_counter(id)) FILTER (WHERE era = 'new') FROM invoices")"
    pg_stop "$new"
done
echo "pg_upgrade: ok"
