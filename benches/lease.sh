#!/usr/bin/env bash
# What one lease extension costs: a setval of the sequence relation (WAL-logged by
# PostgreSQL) and a WAL flush up to its record, under the sequence's extension lock. Not a
# test: it checks nothing, it reports.
#
# gdid_advance past the lease extends it on every call; gdid_advance to a value the lease
# already covers does the same work (resolving the name, the extension lock, reading the
# relation back) without the extension. Each round times ROUNDS_CALLS (default 1,000) calls of
# each, in an order that alternates from round to round; the difference of the medians over
# RUNS rounds (default 11) is the cost of one extension. Also the cost of a name's first use
# whose sequence exists (read back from its relation into the cache) against a cached one,
# and of a name whose sequence does not exist yet (made by the background worker).
# PostgreSQL 15, fsync on, the WAL on this machine's disk.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-11}
CALLS=${ROUND_CALLS:-1000}
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
source scripts/pgcluster.sh
dir=$(mktemp -d /tmp/snowflake_id_bench_lease.XXXXXX)
trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
chmod 755 "$dir"
pg_init "$dir/node" 55498 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" \
    "gdid.authority = 1" "jit = off"
pg_start "$dir/node"
pg_psql "$dir/node" -d postgres -q -v runs="$RUNS" -v calls="$CALLS" <<'SQL'
\pset footer off
CREATE EXTENSION snowflake_id;
SET bench.runs = :runs;
SET bench.calls = :calls;
SELECT gdid_next('bench', 'lease') IS NOT NULL AS made;
-- Names whose relations exist and hold a lease, for the first-use figures.
SELECT count(gdid_next('cold', 'n' || i)) AS made FROM generate_series(1, :calls) i;
CREATE TEMP TABLE timings (what text, ms float8);
DO $$
DECLARE
    t0 timestamptz;
    base bigint := 1000000;
    n int := current_setting('bench.calls')::int;
BEGIN
    FOR r IN 0..current_setting('bench.runs')::int LOOP
        FOR k IN 0..1 LOOP
            IF (k + r) % 2 = 0 THEN
                -- each past the lease: one extension per call
                t0 := clock_timestamp();
                FOR i IN 1..n LOOP
                    PERFORM gdid_advance('bench', 'lease', gdid(0, 1, base + i * 100000));
                END LOOP;
                base := base + (n + 1) * 100000;
                IF r > 0 THEN
                    INSERT INTO timings
                        VALUES ('extending', extract(epoch FROM clock_timestamp() - t0) * 1000 / n);
                END IF;
            ELSE
                -- each already covered: the same path without the extension
                t0 := clock_timestamp();
                FOR i IN 1..n LOOP
                    PERFORM gdid_advance('bench', 'lease', gdid(0, 1, 1));
                END LOOP;
                IF r > 0 THEN
                    INSERT INTO timings
                        VALUES ('not extending', extract(epoch FROM clock_timestamp() - t0) * 1000 / n);
                END IF;
            END IF;
        END LOOP;
    END LOOP;
END $$;
\echo
\echo 'One lease extension (setval of the relation and a WAL flush), per call, median and middle half of' :runs 'rounds of' :calls 'calls'
WITH m AS (
    SELECT what, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS median,
           percentile_cont(0.25) WITHIN GROUP (ORDER BY ms) AS q1,
           percentile_cont(0.75) WITHIN GROUP (ORDER BY ms) AS q3
      FROM timings GROUP BY what)
SELECT what, round((median * 1000)::numeric, 1) AS median_us,
       round((q1 * 1000)::numeric, 1) || ' .. ' || round((q3 * 1000)::numeric, 1) AS middle_half_us
  FROM m ORDER BY what DESC;
SELECT round(((e.median - c.median) * 1000)::numeric, 1) AS one_extension_us
  FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS median FROM timings WHERE what = 'extending') e,
       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS median FROM timings WHERE what = 'not extending') c;
SHOW wal_sync_method;
SQL
# A name's first use on a server that has just started (its relation read back into the
# cache, its lease extended), then the same names again (cached), then names whose
# relations do not exist (made by the background worker).
pg_stop "$dir/node"
pg_start "$dir/node"
pg_psql "$dir/node" -d postgres -q -v calls="$CALLS" <<'SQL'
\pset footer off
CREATE TEMP TABLE t (what text, ms float8);
DO $$
DECLARE
    t0 timestamptz;
    n int := current_setting('bench.calls', true)::int;
BEGIN
    n := coalesce(n, 1000);
    t0 := clock_timestamp();
    FOR i IN 1..n LOOP PERFORM gdid_next('cold', 'n' || i); END LOOP;
    INSERT INTO t VALUES ('first use after a restart (read back, one extension)', extract(epoch FROM clock_timestamp() - t0) * 1000 / n);
    t0 := clock_timestamp();
    FOR i IN 1..n LOOP PERFORM gdid_next('cold', 'n' || i); END LOOP;
    INSERT INTO t VALUES ('the same names again (cached)', extract(epoch FROM clock_timestamp() - t0) * 1000 / n);
    t0 := clock_timestamp();
    FOR i IN 1..least(n, 200) LOOP PERFORM gdid_next('new', 'n' || i); END LOOP;
    INSERT INTO t VALUES ('a new name (relation made by the worker)', extract(epoch FROM clock_timestamp() - t0) * 1000 / least(n, 200));
END $$;
SELECT what, round((ms * 1000)::numeric, 1) AS us_per_call FROM t;
SQL
