#!/usr/bin/env bash
# Where the time of a single-row INSERT ... DEFAULT goes: pgbench (8 clients, asynchronous
# commit) on each key's table while perf samples every CPU (cpu-clock, which works on VMs
# without hardware counters). Prints, for each key, the share of the backends' samples spent
# in the key's generator (this extension's library for snowflake_next and gdid_next;
# nextval_internal and what it calls for nextval) beside the whole INSERT. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
source scripts/pgcluster.sh
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
command -v perf >/dev/null || { echo "perf is needed (apt-get install linux-perf)" >&2; exit 1; }
dir=$(mktemp -d /tmp/snowflake_id_profile.XXXXXX)
trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
chmod 755 "$dir"
pg_init "$dir/node" 55496 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" \
    "gdid.authority = 1" "shared_buffers = '512MB'" "synchronous_commit = off" "jit = off"
pg_start "$dir/node"
pg_psql "$dir/node" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE SEQUENCE s1 CACHE 1;
CREATE TABLE t_sf (id snowflake PRIMARY KEY DEFAULT snowflake_next('t_sf'), v int);
CREATE TABLE t_gd (id gdid PRIMARY KEY DEFAULT gdid_next('bench', 't_gd'), v int);
CREATE TABLE t_seq1 (id bigint PRIMARY KEY DEFAULT nextval('s1'), v int);
SQL
for k in sf gd seq1; do echo "INSERT INTO t_$k (v) VALUES (1);" >"$dir/$k.sql"; done
chmod a+r "$dir"/*.sql
echo "pgbench, 8 clients, asynchronous commit, $SECONDS_PER_RUN s per key; samples of the postgres processes"
printf '%-16s %10s %12s %14s\n' key tps samples generator_share
for k in sf gd seq1; do
    perf record -q -e cpu-clock -a -g -o "$dir/$k.data" -- \
        "$PG_BINDIR/pgbench" -n -h "$dir/node" -p 55496 -U postgres -c 8 -j 2 -T "$SECONDS_PER_RUN" \
        -f "$dir/$k.sql" postgres >"$dir/$k.out" 2>&1
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$dir/$k.out")
    # Samples of the postgres backends, and among them those whose stack passes through the
    # generator: children-inclusive, so that what the generator calls counts too.
    case $k in
        seq1) pattern='nextval_internal' ;;
        *) pattern='snowflake_id\.so' ;;
    esac
    read -r total inside < <(perf script -i "$dir/$k.data" --comm postgres -F comm,ip,sym,dso 2>/dev/null |
        awk -v pat="$pattern" 'BEGIN { RS = "" } { n++ } $0 ~ pat { m++ } END { print n + 0, m + 0 }')
    share=$(python3 -c "print(f'{100 * $inside / max($total, 1):.1f} %')")
    printf '%-16s %10.0f %12s %14s\n' "$k" "$tps" "$total" "$share"
done
