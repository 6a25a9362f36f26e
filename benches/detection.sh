#!/usr/bin/env bash
# What noticing shared node numbers and authorities costs (see src/observe.rs), from one run
# on one throwaway cluster (PG_CONFIG selects the PostgreSQL, default 15). Every value an
# apply worker writes to a snowflake column passes the domain's check, snowflake_observe;
# every gdid it writes passes gdid_in or gdid_recv; each counts the value when the session
# has a replication origin, as apply workers do. Measured here per 1,000,000 values, in one
# session, with and without a replication origin, beside a domain with 0.1.0's check
# (plain_snowflake, VALUE >= 0), and a gdid column fed the same text; and a 1,000,000-row
# INSERT ... SELECT of explicit IDs (the local path where the check runs; rows that take
# DEFAULT snowflake_next are not checked at all, the function returns the domain). Rotated
# order, medians and spread of ROUNDS (default 7). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-/usr/bin/pg_config}
source scripts/pgcluster.sh
ROUNDS=${ROUNDS:-7}
dir=$(mktemp -d /tmp/snowflake_id_bench_detection.XXXXXX)
trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
chmod 755 "$dir"
pg_init "$dir/node" 55495 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" \
    "gdid.authority = 1" "shared_buffers = '512MB'" "work_mem = '64MB'" "jit = off"
pg_start "$dir/node"
pg_psql "$dir/node" -d postgres -v rounds="$ROUNDS" <<'SQL'
\pset footer off
CREATE EXTENSION snowflake_id;
CREATE DOMAIN plain_snowflake AS bigint CHECK (VALUE >= 0);
CREATE UNLOGGED TABLE ids AS SELECT 4194304::bigint * (1000000 + g) + 4096 * 2 AS id,
                                    '0:2:' || g AS gtext FROM generate_series(1, 1000000) g;
CREATE UNLOGGED TABLE t_observed (id snowflake);
CREATE UNLOGGED TABLE t_plain (id plain_snowflake);
SELECT pg_replication_origin_create('bench_origin') > 0 AS origin_created;
CREATE TEMP TABLE cases (ord int, label text, origin bool, query text);
INSERT INTO cases VALUES
    (1, 'snowflake domain (with the observer), apply session', true, 'SELECT count(id::snowflake) FROM ids'),
    (2, 'snowflake domain (with the observer), no origin', false, 'SELECT count(id::snowflake) FROM ids'),
    (3, 'domain of 0.1.0 (VALUE >= 0)', true, 'SELECT count(id::plain_snowflake) FROM ids'),
    (4, 'gdid_in, apply session', true, 'SELECT count(gtext::gdid) FROM ids'),
    (5, 'gdid_in, no origin', false, 'SELECT count(gtext::gdid) FROM ids'),
    (6, 'INSERT ... SELECT explicit IDs, snowflake', false, 'INSERT INTO t_observed SELECT id FROM ids'),
    (7, 'INSERT ... SELECT explicit IDs, plain domain', false, 'INSERT INTO t_plain SELECT id FROM ids');
CREATE TEMP TABLE timings (ord int, ms float8);
SET bench.rounds = :rounds;
DO $$
DECLARE
    c record;
    t0 timestamptz;
    n int := (SELECT count(*) FROM cases);
BEGIN
    FOR r IN 0..current_setting('bench.rounds', true)::int LOOP
        FOR i IN 0..n - 1 LOOP
            SELECT * INTO c FROM cases WHERE ord = (i + r) % n + 1;
            TRUNCATE t_observed, t_plain;
            IF c.origin THEN PERFORM pg_replication_origin_session_setup('bench_origin'); END IF;
            t0 := clock_timestamp();
            EXECUTE c.query;
            IF r > 0 THEN
                INSERT INTO timings VALUES (c.ord, extract(epoch FROM clock_timestamp() - t0) * 1000);
            END IF;
            IF c.origin THEN PERFORM pg_replication_origin_session_reset(); END IF;
        END LOOP;
    END LOOP;
END $$;
SELECT c.label, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ms)::numeric, 1) AS median_ms,
       round(min(t.ms)::numeric, 1) || ' .. ' || round(max(t.ms)::numeric, 1) AS spread_ms
  FROM timings t JOIN cases c USING (ord) GROUP BY c.ord, c.label ORDER BY c.ord;
SELECT * FROM snowflake_node_conflicts;
SQL
