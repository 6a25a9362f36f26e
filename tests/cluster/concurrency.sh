#!/usr/bin/env bash
# Many sessions, one sequence: 8 sessions x 100,000 IDs, each session alternating 500
# single snowflake_next calls with a 500-ID snowflake_next_batch. Checks: no duplicates,
# each session's IDs strictly increasing in the order it received them, and every
# timestamp within the run's wall-clock window plus snowflake.max_clock_ahead.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SESSIONS=8
ROUNDS=100   # x (500 single + 500 batch) = 100,000 IDs per session
db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 7" \
    "max_connections = 40")
pg_start "$db"

pg_psql "$db" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE UNLOGGED TABLE ids (session int, pos int, id bigint);
CREATE TABLE run (started timestamptz, finished timestamptz);
INSERT INTO run VALUES (clock_timestamp(), NULL);
SQL

pids=()
for s in $(seq 1 $SESSIONS); do
    session "$db" \
        -c "DO \$\$
DECLARE pos int := 0;
BEGIN
    FOR r IN 1..$ROUNDS LOOP
        INSERT INTO ids SELECT $s, pos + g, snowflake_next('conc') FROM generate_series(1, 500) g;
        pos := pos + 500;
        INSERT INTO ids SELECT $s, pos + o, b.id FROM snowflake_next_batch('conc', 500) WITH ORDINALITY b(id, o);
        pos := pos + 500;
    END LOOP;
END \$\$;" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a session failed"; done
pg_psql "$db" -d postgres -qc "UPDATE run SET finished = clock_timestamp()"

total=$((SESSIONS * ROUNDS * 1000))
expect "$db" "SELECT count(*) FROM ids" "$total"
expect "$db" "SELECT count(DISTINCT id) FROM ids" "$total"
expect "$db" "SELECT count(*) FROM (SELECT id, lag(id) OVER (PARTITION BY session ORDER BY pos) AS prev FROM ids) s WHERE id <= prev" "0"
expect "$db" "SELECT count(*) FROM ids, run WHERE snowflake_timestamp(id) < date_trunc('milliseconds', started)" "0"
expect "$db" "SELECT count(*) FROM ids, run WHERE snowflake_timestamp(id) > finished + current_setting('snowflake.max_clock_ahead')::interval" "0"
expect "$db" "SELECT count(*) FROM ids WHERE snowflake_node(id) <> 7" "0"
expect "$db" "SELECT issued FROM snowflake_sequences WHERE name = 'conc'" "$total"
sql "$db" "SELECT 'figures: ' || count(*) || ' IDs in ' || round(extract(epoch FROM finished - started)::numeric, 2) || ' s; clock ran ahead by at most ' || (SELECT max(snowflake_timestamp(id)) FROM ids) - finished || ' at the end; counter exhausted ' || (SELECT counter_exhausted FROM snowflake_sequences WHERE name = 'conc') || ' times' FROM ids, run GROUP BY started, finished"
echo "concurrency: ok"
