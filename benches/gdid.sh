#!/usr/bin/env bash
# Prints, from one run on one throwaway cluster, what a gdid key costs beside uuid, bigint
# and bytea keys on the same number of rows (N, default 10,000,000): in-memory sort time,
# btree index build time and index size; then gdid_compress / gdid_decompress throughput.
# Not a test: it checks nothing, it reports. Each timing is the median of RUNS (default 3)
# runs, interleaved across key types. Target (issue 3): gdid sort within 1.2x of uuid sort.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pgcluster.sh
N=${N:-10000000}
RUNS=${RUNS:-3}
dir=$(mktemp -d /tmp/snowflake_id_bench_gdid.XXXXXX)
trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
chmod 755 "$dir"
pg_init "$dir/node" 55498 "shared_preload_libraries = 'snowflake_id'" "shared_buffers = '4GB'" \
    "work_mem = '4GB'" "maintenance_work_mem = '4GB'" "max_parallel_workers_per_gather = 0" \
    "max_parallel_maintenance_workers = 0" "jit = off"
pg_start "$dir/node"
export PGOPTIONS="-c client_min_messages=warning"

echo "building 4 tables of $N rows..."
# Keys in scrambled order: counter = g * 7919 mod a prime above N, a permutation. gdids are
# spread over 4 authorities of era 0, as four generating servers would make them.
pg_psql "$dir/node" -d postgres -q <<SQL
CREATE EXTENSION snowflake_id;
CREATE UNLOGGED TABLE k_gdid AS
    SELECT gdid(0, (g % 4)::int, (g * 7919) % 2147483647) AS k FROM generate_series(1::bigint, $N) g;
CREATE UNLOGGED TABLE k_uuid AS SELECT gen_random_uuid() AS k FROM generate_series(1, $N) g;
CREATE UNLOGGED TABLE k_bigint AS SELECT (g * 7919) % 2147483647 AS k FROM generate_series(1::bigint, $N) g;
CREATE UNLOGGED TABLE k_bytea AS SELECT k::bytea AS k FROM k_gdid;
CREATE UNLOGGED TABLE k_packed AS SELECT gdid_compress(k) AS k FROM k_gdid;
VACUUM ANALYZE;
CREATE FUNCTION timed(sql text) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    EXECUTE sql;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END \$\$;
CREATE TABLE timings (what text, type text, ms float8, round int);
SQL

types="gdid uuid bigint bytea"
for r in $(seq 0 "$RUNS"); do
    for t in $types; do
        # Round 0 warms the caches and is not counted (see the report's WHERE round > 0).
        pg_psql "$dir/node" -d postgres -q <<SQL
-- The index of the previous round would turn the sort into an index scan: drop it first.
DROP INDEX IF EXISTS i_$t;
INSERT INTO timings SELECT 'sort', '$t', timed('SELECT k FROM k_$t ORDER BY k OFFSET $N'), $r;
INSERT INTO timings SELECT 'index', '$t', timed('CREATE INDEX i_$t ON k_$t (k)'), $r;
SQL
    done
    for what in compress decompress baseline; do
        case $what in
        compress) sql="SELECT count(gdid_compress(k)) FROM k_gdid" ;;
        decompress) sql="SELECT count(gdid_decompress(k)) FROM k_packed" ;;
        baseline) sql="SELECT count(k::bytea) FROM k_gdid" ;;
        esac
        pg_psql "$dir/node" -d postgres -qc "INSERT INTO timings SELECT '$what', 'gdid', timed('$sql'), $r"
    done
done

pg_psql "$dir/node" -d postgres -P footer=off <<SQL
DELETE FROM timings WHERE round = 0;
\echo
\echo Sort and btree index build, $N rows, median of $RUNS runs (ms):
SELECT t.type AS key,
       round(percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE what = 'sort')::numeric) AS sort_ms,
       round((percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE what = 'sort')
             / (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) FROM timings
                 WHERE what = 'sort' AND type = 'uuid'))::numeric, 2) AS sort_vs_uuid,
       round(percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE what = 'index')::numeric) AS index_build_ms,
       pg_size_pretty(pg_relation_size('i_' || t.type)) AS index_size,
       pg_size_pretty(pg_relation_size('k_' || t.type)) AS table_size
  FROM timings t WHERE what IN ('sort', 'index') GROUP BY t.type
 ORDER BY array_position(ARRAY['gdid','uuid','bigint','bytea'], t.type);
\echo gdid_compress / gdid_decompress over $N values (median of $RUNS runs):
SELECT what, round(percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)::numeric) AS ms,
       round(($N / percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) / 1000)::numeric, 1) AS million_per_s
  FROM timings WHERE what IN ('compress', 'decompress', 'baseline') GROUP BY what
 ORDER BY array_position(ARRAY['compress','decompress','baseline'], what);
SELECT round(avg(length(k)), 2) AS avg_compact_bytes, max(length(k)) AS max_compact_bytes FROM k_packed;
\echo (baseline: the cast to the 12-byte bytea, the cheapest conversion of the same rows)
\echo Target: gdid sort within 1.2x of uuid sort.
SQL
