#!/usr/bin/env bash
# What noticing shared node numbers and authorities costs (see src/detection), from one run
# on one throwaway cluster (PG_CONFIG selects the PostgreSQL, default 15). A table whose keys
# come from DEFAULT snowflake_next and DEFAULT gdid_next has an internal AFTER INSERT trigger
# that fires only where session_replication_role is replica, as in apply workers; a table
# with the same columns and no generating DEFAULT has none. Measured per 1,000,000 rows of
# explicit keys, as replication brings them:
#   - INSERT ... SELECT in a session with a replication origin and the replica role (the
#     apply worker's path: the trigger fires and counts each row), into each table;
#   - the same INSERT and a COPY in an ordinary session (the trigger is passed by).
# Unlogged tables (made logged, then unlogged: the trigger stays), so that the WAL does not
# drown the difference. Rotated order, medians and
# spread of ROUNDS (default 7). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
source scripts/pgcluster.sh
ROUNDS=${ROUNDS:-7}
dir=$(mktemp -d /tmp/snowflake_id_bench_detection.XXXXXX)
trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
chmod 755 "$dir"
pg_init "$dir/node" "$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')" \
    "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" \
    "gdid.authority = 1" "shared_buffers = '512MB'" "work_mem = '64MB'" "jit = off"
pg_start "$dir/node"
pg_psql "$dir/node" -d postgres -v rounds="$ROUNDS" -v copyfile="$dir/node/ids.copy" <<'SQL'
\pset footer off
CREATE EXTENSION snowflake_id;
CREATE UNLOGGED TABLE ids AS SELECT 4194304::bigint * (1000000 + g) + 4096 * 2 AS id,
                                    gdid(0, 2, g) AS g FROM generate_series(1, 1000000) g;
COPY ids TO :'copyfile';
CREATE TABLE t_watched (id snowflake PRIMARY KEY DEFAULT snowflake_next('bench'),
                        g gdid DEFAULT gdid_next('bench', 'bench'));
CREATE TABLE t_plain (id snowflake PRIMARY KEY, g gdid);
-- Made logged, as replicated tables are, t_watched got its trigger; it keeps it unlogged.
ALTER TABLE t_watched SET UNLOGGED;
ALTER TABLE t_plain SET UNLOGGED;
SELECT tgrelid::regclass, tgenabled AS fires_on FROM pg_trigger
 WHERE tgfoid = 'snowflake_arrival_trigger'::regproc;
SELECT pg_replication_origin_create('bench_origin') > 0 AS origin_created;
CREATE TEMP TABLE cases (ord int, label text, apply bool, query text);
INSERT INTO cases VALUES
    (1, 'apply session: INSERT, table with the trigger', true, 'INSERT INTO t_watched SELECT id, g FROM ids'),
    (2, 'apply session: INSERT, table without', true, 'INSERT INTO t_plain SELECT id, g FROM ids'),
    (3, 'local: INSERT, table with the trigger', false, 'INSERT INTO t_watched SELECT id, g FROM ids'),
    (4, 'local: INSERT, table without', false, 'INSERT INTO t_plain SELECT id, g FROM ids'),
    (5, 'local: COPY, table with the trigger', false, format('COPY t_watched FROM %L', :'copyfile')),
    (6, 'local: COPY, table without', false, format('COPY t_plain FROM %L', :'copyfile'));
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
            TRUNCATE t_watched, t_plain;
            IF c.apply THEN
                PERFORM pg_replication_origin_session_setup('bench_origin');
                PERFORM set_config('session_replication_role', 'replica', true);
            END IF;
            t0 := clock_timestamp();
            EXECUTE c.query;
            IF r > 0 THEN
                INSERT INTO timings VALUES (c.ord, extract(epoch FROM clock_timestamp() - t0) * 1000);
            END IF;
            IF c.apply THEN
                PERFORM set_config('session_replication_role', 'origin', true);
                PERFORM pg_replication_origin_session_reset();
            END IF;
        END LOOP;
    END LOOP;
END $$;
WITH m AS (
    SELECT c.ord, c.label, percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ms) AS median,
           min(t.ms) AS lo, max(t.ms) AS hi
      FROM timings t JOIN cases c USING (ord) GROUP BY c.ord, c.label)
SELECT label, round(median::numeric, 1) AS median_ms,
       round(lo::numeric, 1) || ' .. ' || round(hi::numeric, 1) AS spread_ms,
       -- (ms per 1,000,000 rows are ns per row)
       CASE WHEN ord % 2 = 1 THEN round((median - lead(median) OVER (ORDER BY ord))::numeric, 1) END
           AS ns_per_row_more
  FROM m ORDER BY ord;
SQL

# The same through real logical replication, end to end: a publisher inserts N rows in one
# transaction into each table, and the time until the subscriber holds them all is taken
# (apply workers: the trigger fires on t_watched, not on t_plain); then an initial copy
# (copy_data) of N rows into each, whose table synchronisation worker queues the trigger's
# events too (not counted: see src/detection). Rotated order, medians of ROUNDS.
N=${N:-300000}
sub_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pg_init "$dir/sub" "$sub_port" "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 2" \
    "gdid.authority = 2" "shared_buffers = '512MB'" "synchronous_commit = off"
pg_stop "$dir/node"
echo "wal_level = logical" >>"$dir/node/data/postgresql.conf"
pg_start "$dir/node"
pg_start "$dir/sub"
trap 'pg_stop "$dir/node" immediate; pg_stop "$dir/sub" immediate; rm -rf "$dir"' EXIT
tables="CREATE TABLE t_watched (id snowflake PRIMARY KEY DEFAULT snowflake_next('bench'), g gdid DEFAULT gdid_next('bench', 'bench'), v int);
        CREATE TABLE t_plain (id snowflake PRIMARY KEY, g gdid, v int);"
pg_psql "$dir/node" -d postgres -qc "DROP TABLE t_watched, t_plain" -c "$tables" -c "CREATE PUBLICATION bench FOR TABLE t_watched, t_plain"
pg_psql "$dir/sub" -d postgres -qc "CREATE EXTENSION snowflake_id" -c "$tables"
pg_psql "$dir/sub" -d postgres -qc "CREATE SUBSCRIPTION bench CONNECTION 'host=$dir/node port=$(pg_port_of "$dir/node") user=postgres dbname=postgres' PUBLICATION bench WITH (copy_data = false)" 2>/dev/null
# wait_rows DIR TABLE N: until TABLE holds N rows (at most 300 s); prints the milliseconds.
wait_rows() {
    local start=$(date +%s%N)
    for _ in $(seq 1 6000); do
        [ "$(pg_psql "$1" -d postgres -Atc "SELECT count(*) FROM $2")" = "$3" ] && break
        sleep 0.05
    done
    echo $((($(date +%s%N) - start) / 1000000))
}
results=()
for r in $(seq 1 "$ROUNDS"); do
    order="t_watched t_plain"
    [ $((r % 2)) = 0 ] && order="t_plain t_watched"
    for t in $order; do
        pg_psql "$dir/node" -d postgres -qc "TRUNCATE t_watched, t_plain"
        wait_rows "$dir/sub" "$t" 0 >/dev/null
        pg_psql "$dir/node" -d postgres -qc "INSERT INTO $t SELECT snowflake_next('bench'), gdid_next('bench', 'bench'), i FROM generate_series(1, $N) i"
        results+=("apply $t $(wait_rows "$dir/sub" "$t" "$N")")
    done
done
pg_psql "$dir/sub" -d postgres -qc "DROP SUBSCRIPTION bench" 2>/dev/null
pg_psql "$dir/node" -d postgres -qc "TRUNCATE t_watched, t_plain" \
    -c "INSERT INTO t_watched SELECT snowflake_next('bench'), gdid_next('bench', 'bench'), i FROM generate_series(1, $N) i" \
    -c "INSERT INTO t_plain SELECT * FROM t_watched"
for r in $(seq 1 "$ROUNDS"); do
    order="t_watched t_plain"
    [ $((r % 2)) = 0 ] && order="t_plain t_watched"
    for t in $order; do
        pg_psql "$dir/sub" -d postgres -qc "TRUNCATE $t"
        pg_psql "$dir/node" -d postgres -qc "DROP PUBLICATION IF EXISTS copy_$t" -c "CREATE PUBLICATION copy_$t FOR TABLE $t"
        pg_psql "$dir/sub" -d postgres -qc "CREATE SUBSCRIPTION copy_$t CONNECTION 'host=$dir/node port=$(pg_port_of "$dir/node") user=postgres dbname=postgres' PUBLICATION copy_$t" 2>/dev/null
        results+=("copy $t $(wait_rows "$dir/sub" "$t" "$N")")
        pg_psql "$dir/sub" -d postgres -qc "DROP SUBSCRIPTION copy_$t" 2>/dev/null
    done
done
echo
echo "Through logical replication, $N rows per round, $ROUNDS rounds: median ms (lowest .. highest)"
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics as st
rows = {}
for line in sys.stdin:
    kind, table, ms = line.split()
    rows.setdefault((kind, table), []).append(int(ms))
for kind in ("apply", "copy"):
    w, p = rows[(kind, "t_watched")], rows[(kind, "t_plain")]
    mw, mp = st.median(w), st.median(p)
    print(f"{kind:5} with the trigger {mw:8.0f} ({min(w)} .. {max(w)})   without {mp:8.0f} ({min(p)} .. {max(p)})   "
          f"{(mw - mp) * 1e6 / int(sys.argv[1]):6.0f} ns per row, x{mw / mp:.2f}")
' "$N"
