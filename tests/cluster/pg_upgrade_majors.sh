#!/usr/bin/env bash
# pg_upgrade to a new major, the way users do it: `pg_upgrade --check`, then the upgrade in
# link mode or in copy mode, from a server where both generators were in use with its clock
# running 90 s ahead, into one whose clock is right. Three paths: 15 -> 17, 15 -> 18 and
# 17 -> 18, each twice: --link with the lease file carried over, and copy mode without it
# (pg_upgrade never carries it: the data directory's snowflake_id/ is not PostgreSQL's).
# From 17 to 18 also with --swap (new in 18). Either way, inserting with the defaults
# afterwards repeats no key and continues above every key of the old server (the snowflake sequence from its seed, the gdid sequence from
# its seed or the lease).
#
# The 15 is PostgreSQL 15.18 from Debian 12's source package (scripts/pgversions.sh): Debian
# 12's own 15.20 stores an attribute option, pg_attver, on every column, which 17.11 and
# 18.6 do not know, so that pg_upgrade from it fails at the restore of any database (see
# the README's operations guide).
# majors: across (run once, after the pass of every major: it uses 15.18, 17 and 18 itself)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../../scripts/pgversions.sh"

settings=("shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 4" "gdid.authority = 4"
    "snowflake.max_clock_ahead = '120s'")
bindir() { "$1" --bindir; }

# old_server NAME PG_CONFIG: a stopped server of that PostgreSQL whose orders (snowflake) and
# invoices (gdid) were filled with the defaults while its clock ran 90 s ahead.
old_server() {
    local dir
    dir=$(PG_BINDIR=$(bindir "$2") instance "$1" "${settings[@]}")
    PG_BINDIR=$(bindir "$2") pg_start "$dir" FAKETIME=+90s LD_PRELOAD="$FAKETIME_LIB"
    PG_BINDIR=$(bindir "$2") pg_psql "$dir" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), era text DEFAULT 'old');
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), era text DEFAULT 'old');
INSERT INTO orders SELECT FROM generate_series(1, 20000);
INSERT INTO invoices SELECT FROM generate_series(1, 20000);
SELECT count(*) FROM gdid_next_block('billing', 'invoices', 50000) \g /dev/null
ANALYZE orders, invoices;
SQL
    PG_BINDIR=$(bindir "$2") pg_stop "$dir"
    echo "$dir"
}

# upgrade OLD_DIR OLD_CONFIG NEW_CONFIG NAME MODE LEASE: a new server of NEW_CONFIG upgraded
# from a copy of OLD_DIR with `pg_upgrade --check` then `pg_upgrade MODE` (--link or
# --copy); LEASE is "carried" to copy the lease file over. Prints the new directory.
upgrade() {
    local old=$1 old_bin new_bin new work copy
    old_bin=$(bindir "$2")
    new_bin=$(bindir "$3")
    copy="$CLUSTER_ROOT/$4.old"
    mkdir -p "$copy" && chown postgres: "$copy" && chmod 700 "$copy"
    as_postgres cp -a "$old/data" "$copy/data"
    # 18's initdb turns data checksums on, which pg_upgrade refuses to mix with an old
    # cluster without them: the new cluster is made as the old one is.
    local initdb_args=""
    [ "$(pg_major_of "$3")" -ge 18 ] && initdb_args=--no-data-checksums
    new=$(PG_INITDB_ARGS=$initdb_args PG_BINDIR=$new_bin instance "$4" "${settings[@]}")
    work="$CLUSTER_ROOT/$4.work"
    mkdir -p "$work" && chown postgres: "$work"
    for step in --check "$5"; do
        (cd "$work" && as_postgres "$new_bin/pg_upgrade" -b "$old_bin" -B "$new_bin" \
            -d "$copy/data" -D "$new/data" -p "$(free_port)" -P "$(free_port)" -s "$work" \
            -U postgres "$step" >"$work/pg_upgrade$step.log" 2>&1) ||
            { tail -n 30 "$work/pg_upgrade$step.log" >&2; fail "$4: pg_upgrade $step failed"; }
    done
    if [ "$6" = carried ]; then
        as_postgres mkdir -p "$new/data/snowflake_id"
        as_postgres cp "$copy/data/snowflake_id/leases" "$new/data/snowflake_id/leases"
    fi
    PG_BINDIR=$new_bin pg_start "$new"
    echo "$new"
}

# check NAME DIR NEW_CONFIG: generate on the upgraded server and check every key.
check() {
    local name=$1 dir=$2 bin
    bin=$(bindir "$3")
    q() { PG_BINDIR=$bin pg_psql "$dir" -d postgres -Atc "$1"; }
    is() {
        local got
        got=$(q "$1") || fail "$name: $1 failed"
        [ "$got" = "$2" ] || fail "$name: $1: expected $2, got $got"
    }
    is "SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'" \
        "$(sed -n 's/^version = "\(.*\)"/\1/p' "$(dirname "$0")/../../Cargo.toml")"
    q "INSERT INTO orders (era) SELECT 'new' FROM generate_series(1, 10000)" >/dev/null &&
        q "INSERT INTO invoices (era) SELECT 'new' FROM generate_series(1, 10000)" >/dev/null ||
        fail "$name: inserting with the defaults failed (a duplicate key: a sequence started below the old keys)"
    is "SELECT count(*) - count(DISTINCT id) FROM orders" 0
    is "SELECT count(*) - count(DISTINCT id) FROM invoices" 0
    is "SELECT min(id) FILTER (WHERE era = 'new') > max(id) FILTER (WHERE era = 'old') FROM orders" t
    is "SELECT min(id) FILTER (WHERE era = 'new') > max(id) FILTER (WHERE era = 'old') FROM invoices" t
    # 18's pg_upgrade carries planner statistics, a gdid column's as any other.
    if [ "$(pg_major_of "$3")" -ge 18 ]; then
        is "SELECT histogram_bounds IS NOT NULL FROM pg_stats WHERE tablename = 'invoices' AND attname = 'id'" t
    fi
    # The detection triggers, internal and so not in pg_upgrade's dump, are made again.
    is "SELECT string_agg(tgrelid::regclass::text, ',' ORDER BY tgrelid::regclass::text) FROM pg_trigger WHERE tgfoid = 'snowflake_arrival_trigger'::regproc" \
        "invoices,orders"
    echo "figures: $name ($(q "SHOW server_version" | cut -d' ' -f1)): 20000 + 20000 rows before," \
        "10000 + 10000 after, none repeated; first new ID" \
        "$(q "SELECT round(extract(epoch FROM snowflake_timestamp(min(id) FILTER (WHERE era = 'new')) - snowflake_timestamp(max(id) FILTER (WHERE era = 'old')))::numeric, 3) FROM orders") s" \
        "after the last old one, gdid counters" \
        "$(q "SELECT max(gdid_counter(id)) FILTER (WHERE era = 'old') || ' -> ' || min(gdid_counter(id)) FILTER (WHERE era = 'new') FROM invoices")"
    PG_BINDIR=$bin pg_stop "$dir"
}

for config in "$PG15_OLD_CONFIG" "$PG17_CONFIG" "$PG18_CONFIG"; do
    [ -f "$("$config" --pkglibdir)/snowflake_id.so" ] || fail "snowflake_id is not installed into $config"
done
old15=$(old_server old15 "$PG15_OLD_CONFIG")
old17=$(old_server old17 "$PG17_CONFIG")
start=$SECONDS
for path in "15 17" "15 18" "17 18"; do
    read -r from to <<<"$path"
    case $from in 15) old=$old15 from_config=$PG15_OLD_CONFIG ;; 17) old=$old17 from_config=$PG17_CONFIG ;; esac
    case $to in 17) to_config=$PG17_CONFIG ;; 18) to_config=$PG18_CONFIG ;; esac
    variants=("--link carried" "--copy not-carried")
    [ "$to" = 18 ] && [ "$from" = 17 ] && variants+=("--swap not-carried")
    for variant in "${variants[@]}"; do
        read -r mode lease <<<"$variant"
        name="${from}_to_${to}${mode/--/_}_lease_$lease"
        new=$(upgrade "$old" "$from_config" "$to_config" "$name" "$mode" "$lease")
        check "$name" "$new" "$to_config"
    done
done
echo "figures: seven upgrades across majors in $((SECONDS - start)) s"
echo "pg_upgrade_majors: ok"
