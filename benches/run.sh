#!/usr/bin/env bash
# Prints, from one run on one throwaway cluster, the time of 1,000,000 calls of each ID
# generator in a single session, beside the bare loop that calls nothing. Not a test: it
# checks nothing, it reports. Each figure is the median of RUNS runs after a warm-up.
# Targets (issue 2): snowflake_next at most 30 ns/call above the bare loop, and at most half
# of nextval with CACHE 1.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pgcluster.sh
RUNS=${RUNS:-7}
N=1000000
dir=$(mktemp -d /tmp/snowflake_id_bench.XXXXXX)
trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
chmod 755 "$dir"
pg_init "$dir/node" 55499 "shared_preload_libraries = 'snowflake_id'" "work_mem = '64MB'"
pg_start "$dir/node"

pg_psql "$dir/node" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE SEQUENCE seq_cache1 CACHE 1;
CREATE SEQUENCE seq_cache100 CACHE 100;
-- One session, server-side timing: median of the runs, after one warm-up run.
CREATE FUNCTION bench(expr text, runs int, n int) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; times float8[] := '{}';
BEGIN
    EXECUTE format('SELECT count(%s) FROM generate_series(1, %s) g', expr, n);
    FOR i IN 1..runs LOOP
        t0 := clock_timestamp();
        EXECUTE format('SELECT count(%s) FROM generate_series(1, %s) g', expr, n);
        times := times || extract(epoch FROM clock_timestamp() - t0) * 1000;
    END LOOP;
    RETURN (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY t) FROM unnest(times) t);
END $$;
SQL

pg_psql "$dir/node" -d postgres -v runs="$RUNS" -v n="$N" <<'SQL'
\pset footer off
\echo 'Time of 1,000,000 calls in one session, median of' :runs 'runs'
WITH r AS (
    SELECT label, bench(expr, :runs, :n) AS ms, ord
      FROM (VALUES (1, 'bare generate_series loop', 'g'),
                   (2, 'snowflake_next(''bench'')', 'snowflake_next(''bench'')'),
                   (3, 'nextval, CACHE 1', 'nextval(''seq_cache1'')'),
                   (4, 'nextval, CACHE 100', 'nextval(''seq_cache100'')'),
                   (5, 'gen_random_uuid()', 'gen_random_uuid()'))
           AS v(ord, label, expr)
)
SELECT label AS generator, round(ms::numeric, 1) AS ms,
       round(((ms - (SELECT ms FROM r WHERE ord = 1)) * 1e6 / :n)::numeric, 1) AS ns_per_call_above_bare
  FROM r ORDER BY ord;
WITH t AS (SELECT bench('g', :runs, :n) AS bare, bench('snowflake_next(''bench'')', :runs, :n) AS sf,
                  bench('nextval(''seq_cache1'')', :runs, :n) AS nv)
SELECT round(((sf - bare) * 1e6 / :n)::numeric, 1) AS snowflake_ns_above_bare, 30 AS target_at_most,
       round((sf / nv)::numeric, 2) AS snowflake_over_nextval_cache1, 0.5 AS target_at_most_ratio
  FROM t;
SQL
