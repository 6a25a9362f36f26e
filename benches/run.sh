#!/usr/bin/env bash
# Prints, from one run on one throwaway cluster, the time of 1,000,000 calls of each ID
# generator in a single session, beside the bare loop that calls nothing. Not a test: it
# checks nothing, it reports. Rounds are interleaved; figures are medians over RUNS rounds.
# Targets (issue 2): snowflake_next at most 30 ns/call above the bare loop, and at most half
# of nextval with CACHE 1.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pgcluster.sh
RUNS=${RUNS:-11}
N=1000000
dir=$(mktemp -d /tmp/snowflake_id_bench.XXXXXX)
trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
chmod 755 "$dir"
pg_init "$dir/node" 55499 "shared_preload_libraries = 'snowflake_id'" "work_mem = '64MB'" \
    "snowflake.node_id = 1" "gdid.authority = 1"
pg_start "$dir/node"

pg_psql "$dir/node" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE SEQUENCE seq_cache1 CACHE 1;
CREATE SEQUENCE seq_cache100 CACHE 100;
-- One session, server-side timing. Every round times each generator once, in turn, so that
-- drift (CPU frequency, the other core's load) falls on all of them alike; then the median
-- per generator. One warm-up round is not counted.
CREATE FUNCTION bench(exprs text[], runs int, n int)
RETURNS TABLE (ord int, median_ms float8, min_ms float8) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
    CREATE TEMP TABLE timings (ord int, ms float8);
    FOR r IN 0..runs LOOP
        FOR i IN 1..array_length(exprs, 1) LOOP
            t0 := clock_timestamp();
            EXECUTE format('SELECT count(%s) FROM generate_series(1, %s) g', exprs[i], n);
            IF r > 0 THEN
                INSERT INTO timings VALUES (i, extract(epoch FROM clock_timestamp() - t0) * 1000);
            END IF;
        END LOOP;
    END LOOP;
    RETURN QUERY SELECT t.ord, percentile_disc(0.5) WITHIN GROUP (ORDER BY t.ms), min(t.ms)
                   FROM timings t GROUP BY t.ord;
    DROP TABLE timings;
END $$;
SQL

pg_psql "$dir/node" -d postgres -q -v runs="$RUNS" -v n="$N" <<'SQL'
\pset footer off
\echo 'Time of 1,000,000 calls in one session, PostgreSQL 15; median and best of' :runs 'interleaved rounds'
CREATE TEMP TABLE gens (ord int, label text, expr text);
INSERT INTO gens VALUES (1, 'bare generate_series loop', 'g'),
                        (2, 'snowflake_next(''bench'')', 'snowflake_next(''bench'')'),
                        (3, 'nextval, CACHE 1', 'nextval(''seq_cache1'')'),
                        (4, 'nextval, CACHE 100', 'nextval(''seq_cache100'')'),
                        (5, 'gen_random_uuid()', 'gen_random_uuid()');
CREATE TEMP TABLE results AS
    SELECT g.ord, g.label, b.median_ms, b.min_ms
      FROM bench((SELECT array_agg(expr ORDER BY ord) FROM gens), :runs, :n) b JOIN gens g USING (ord);
SELECT label AS generator, round(median_ms::numeric, 1) AS median_ms, round(min_ms::numeric, 1) AS best_ms,
       round(((median_ms - (SELECT median_ms FROM results WHERE ord = 1)) * 1e6 / :n)::numeric, 1)
           AS ns_per_call_above_bare
  FROM results ORDER BY ord;
\echo 'Targets: snowflake_next at most 30 ns/call above the bare loop, at most 0.5 x nextval CACHE 1'
SELECT round(((sf.median_ms - bare.median_ms) * 1e6 / :n)::numeric, 1) AS snowflake_ns_above_bare,
       round((sf.median_ms / nv.median_ms)::numeric, 2) AS snowflake_over_nextval_cache1
  FROM results bare, results sf, results nv WHERE bare.ord = 1 AND sf.ord = 2 AND nv.ord = 3;
SQL
