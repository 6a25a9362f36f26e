#!/usr/bin/env bash
# The INSERT path: what a key's DEFAULT costs where it is used. Prints, from one run on one
# throwaway cluster (PG_CONFIG selects the PostgreSQL, default 15):
#   - single-row INSERT ... DEFAULT, pgbench with 2 and 8 clients, synchronous and asynchronous
#     commit: transactions per second of each key's table, and the ratio to nextval CACHE 1;
#   - a 1,000,000-row INSERT ... SELECT: milliseconds, and the ratio to nextval CACHE 100.
# Keys: snowflake_next, gdid_next, nextval with CACHE 1 and CACHE 100, each the primary key of
# its own table (id, v int). Every round measures every key once, in an order rotated from
# round to round, each table truncated first; figures are medians over ROUNDS (default 5) with
# the spread (lowest .. highest). Not a test: it checks nothing, it reports.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
source scripts/pgcluster.sh
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
BULK=1000000
pgbench="$PG_BINDIR/pgbench"
dir=$(mktemp -d /tmp/snowflake_id_bench_insert.XXXXXX)
trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
chmod 755 "$dir"
pg_init "$dir/node" 55497 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" \
    "gdid.authority = 1" "shared_buffers = '512MB'" "max_wal_size = '4GB'" "jit = off"
pg_start "$dir/node"
port=55497
keys=(sf gd seq1 seq100)
declare -A label=([sf]="snowflake_next" [gd]="gdid_next" [seq1]="nextval, CACHE 1" [seq100]="nextval, CACHE 100")
pg_psql "$dir/node" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE SEQUENCE s1 CACHE 1;
CREATE SEQUENCE s100 CACHE 100;
CREATE TABLE t_sf (id snowflake PRIMARY KEY DEFAULT snowflake_next('t_sf'), v int);
CREATE TABLE t_gd (id gdid PRIMARY KEY DEFAULT gdid_next('bench', 't_gd'), v int);
CREATE TABLE t_seq1 (id bigint PRIMARY KEY DEFAULT nextval('s1'), v int);
CREATE TABLE t_seq100 (id bigint PRIMARY KEY DEFAULT nextval('s100'), v int);
CREATE TABLE results (what text, key text, round int, value float8);
SQL
scripts="$dir/scripts"
mkdir -p "$scripts"
for k in "${keys[@]}"; do echo "INSERT INTO t_$k (v) VALUES (1);" >"$scripts/$k.sql"; done
chmod -R a+rX "$dir"

record() { pg_psql "$dir/node" -d postgres -qc "INSERT INTO results VALUES ('$1', '$2', $3, $4)"; }

for r in $(seq 0 "$ROUNDS"); do
    for i in "${!keys[@]}"; do
        k=${keys[$(((i + r) % ${#keys[@]}))]}   # rotated order
        for clients in 2 8; do
            for commit in on off; do
                pg_psql "$dir/node" -d postgres -qc "TRUNCATE t_$k" -c "CHECKPOINT"
                tps=$(PGOPTIONS="-c synchronous_commit=$commit" "$pgbench" -n -h "$dir/node" -p $port \
                    -U postgres -c "$clients" -j 2 -T "$SECONDS_PER_RUN" -f "$scripts/$k.sql" postgres 2>&1 |
                    sed -n 's/^tps = \([0-9.]*\).*/\1/p')
                [ "$r" -gt 0 ] && record "single-row INSERT, $clients clients, synchronous_commit = $commit" "$k" "$r" "$tps"
            done
        done
        pg_psql "$dir/node" -d postgres -qc "TRUNCATE t_$k" -c "CHECKPOINT"
        ms=$(pg_psql "$dir/node" -d postgres -Atc "
            DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN
                INSERT INTO t_$k (v) SELECT g FROM generate_series(1, $BULK) g;
                PERFORM set_config('bench.ms', (extract(epoch FROM clock_timestamp() - t0) * 1000)::text, false);
            END \$\$; SELECT current_setting('bench.ms')" | tail -n 1)
        [ "$r" -gt 0 ] && record "INSERT ... SELECT of 1,000,000 rows (ms)" "$k" "$r" "$ms"
    done
    [ "$r" -gt 0 ] && echo "round $r of $ROUNDS done" >&2
done

pg_psql "$dir/node" -d postgres -v major="$("$PG_CONFIG" --version)" <<SQL
\\pset footer off
\\echo :major ': medians of $ROUNDS rounds (lowest .. highest); single rows: transactions per second, $SECONDS_PER_RUN s each'
WITH m AS (
    SELECT what, key, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS median,
           min(value) AS lo, max(value) AS hi
      FROM results GROUP BY what, key)
SELECT m.what, CASE m.key WHEN 'sf' THEN '${label[sf]}' WHEN 'gd' THEN '${label[gd]}'
                          WHEN 'seq1' THEN '${label[seq1]}' ELSE '${label[seq100]}' END AS key,
       round(m.median::numeric, 1) AS median, round(m.lo::numeric, 1) || ' .. ' || round(m.hi::numeric, 1) AS spread,
       round((m.median / ref.median)::numeric, 2) AS vs_nextval_cache1
  FROM m JOIN m ref ON ref.what = m.what AND ref.key = 'seq1'
 ORDER BY m.what DESC, array_position(ARRAY['sf', 'gd', 'seq1', 'seq100'], m.key);
\\echo 'Targets: single rows at least nextval CACHE 1 (ratio >= 1); the bulk INSERT at least as fast as'
\\echo 'CACHE 100 (for milliseconds, a ratio to CACHE 1 at most that of CACHE 100)'
SQL
