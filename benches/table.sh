#!/usr/bin/env bash
# A key on a large table, each of snowflake, gdid, bigserial, UUIDv4 and UUIDv7, in one run on
# one throwaway PostgreSQL 18 cluster (uuidv7() is 18's): a table of ROWS rows (default
# 2,000,000; 10,000,000 is the published comparisons' size, too long for 2 cores, ROWS=10000000
# runs it) keyed by each, then INSERTS single-row inserts (default 200,000) from 8 pgbench
# clients while 2 more read recent rows by key. Per key: insert throughput, read latency,
# the primary key's size, WAL bytes and buffer accesses of the insert phase; ratios to
# bigserial; and a chart (benches/table.png, which the README shows). Commits are asynchronous
# (synchronous_commit = off), so that the WAL flush of 2 cores does not hide the index's
# cost. Keys in a rotated order over ROUNDS rounds (default 2); medians. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pgversions.sh
PG_CONFIG=${PG_CONFIG:-$PG18_CONFIG}
source scripts/pgcluster.sh
ROWS=${ROWS:-2000000}
INSERTS=${INSERTS:-200000}
ROUNDS=${ROUNDS:-2}
pgbench="$PG_BINDIR/pgbench"
dir=$(mktemp -d /tmp/snowflake_id_bench_table.XXXXXX)
trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
chmod 755 "$dir"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pg_init "$dir/node" "$port" "shared_preload_libraries = 'snowflake_id, pg_stat_statements'" \
    "snowflake.node_id = 1" "gdid.authority = 1" "shared_buffers = '1GB'" "max_wal_size = '8GB'" \
    "synchronous_commit = off" "jit = off" "max_connections = 40" "autovacuum = off"
pg_start "$dir/node"
export PGOPTIONS="-c client_min_messages=warning"
q() { pg_psql "$dir/node" -d postgres -Atqc "$1"; }
keys=(bigserial snowflake gdid uuidv4 uuidv7)
declare -A ddl=(
    [bigserial]="id bigserial PRIMARY KEY"
    [snowflake]="id snowflake PRIMARY KEY DEFAULT snowflake_next('bench')"
    [gdid]="id gdid PRIMARY KEY DEFAULT gdid_next('bench', 'bench')"
    [uuidv4]="id uuid PRIMARY KEY DEFAULT gen_random_uuid()"
    [uuidv7]="id uuid PRIMARY KEY DEFAULT uuidv7()"
)
q "CREATE EXTENSION snowflake_id" >/dev/null
q "CREATE EXTENSION pg_stat_statements" >/dev/null
q "CREATE TABLE results (key text, round int, metric text, value float8)" >/dev/null
scripts="$dir/scripts"
mkdir -p "$scripts"
chmod 755 "$scripts"
record() { q "INSERT INTO results VALUES ('$1', $2, '$3', $4)" >/dev/null; }

for r in $(seq 1 "$ROUNDS"); do
    for i in "${!keys[@]}"; do
        k=${keys[$(((i + r) % ${#keys[@]}))]}
        q "DROP TABLE IF EXISTS t, recent" >/dev/null
        q "CREATE TABLE t (${ddl[$k]}, payload int NOT NULL, at timestamptz NOT NULL DEFAULT now())" >/dev/null
        q "INSERT INTO t (payload) SELECT g FROM generate_series(1, $ROWS) g" >/dev/null
        q "VACUUM ANALYZE t" >/dev/null
        q "CHECKPOINT" >/dev/null
        # The recent rows the readers look up: the newest 1,000 keys by insertion.
        q "CREATE TABLE recent AS SELECT row_number() OVER () AS n, id FROM (SELECT id FROM t ORDER BY at DESC, payload DESC LIMIT 1000) s" >/dev/null
        echo "INSERT INTO t (payload) VALUES (1);" >"$scripts/insert.sql"
        printf '%s\n' '\set n random(1, 1000)' 'SELECT payload FROM t WHERE id = (SELECT id FROM recent WHERE n = :n);' >"$scripts/read.sql"
        chmod 644 "$scripts"/*.sql
        q "SELECT pg_stat_statements_reset()" >/dev/null
        q "SELECT pg_stat_reset()" >/dev/null
        wal0=$(q "SELECT pg_current_wal_insert_lsn()")
        "$pgbench" -n -h "$dir/node" -p "$port" -U postgres -c 2 -j 1 -T 3600 -f "$scripts/read.sql" \
            postgres >"$dir/read.log" 2>&1 &
        reader=$!
        start=$(date +%s.%N)
        "$pgbench" -n -h "$dir/node" -p "$port" -U postgres -c 8 -j 2 -t $((INSERTS / 8)) \
            -f "$scripts/insert.sql" postgres >"$dir/insert.log" 2>&1
        took=$(python3 -c "print($(date +%s.%N) - $start)")
        kill -TERM "$reader" 2>/dev/null || true
        wait "$reader" || true
        wal=$(q "SELECT pg_current_wal_insert_lsn() - '$wal0'::pg_lsn")
        record "$k" "$r" "inserts per second" "$(python3 -c "print($INSERTS / $took)")"
        record "$k" "$r" "read latency, ms" "$(q "SELECT mean_exec_time FROM pg_stat_statements WHERE query LIKE 'SELECT payload FROM t WHERE id =%'")"
        record "$k" "$r" "WAL per insert, bytes" "$(python3 -c "print($wal / $INSERTS)")"
        record "$k" "$r" "buffers per insert" "$(q "SELECT (shared_blks_hit + shared_blks_read)::float8 / calls FROM pg_stat_statements WHERE query LIKE 'INSERT INTO t %'")"
        record "$k" "$r" "buffers read per insert" "$(q "SELECT shared_blks_read::float8 / calls FROM pg_stat_statements WHERE query LIKE 'INSERT INTO t %'")"
        record "$k" "$r" "key index, MB" "$(q "SELECT pg_relation_size('t_pkey') / 1048576.0")"
        echo "round $r: $k done in $(python3 -c "print(round($took, 1))") s"
    done
done

# BRIN beside the btree on a snowflake key: ROWS keys spread over 30 days (made in time order,
# as a table fills), the sizes of both indexes, and the buffers a query for the last day
# reads with each (the other one disabled).
q "DROP TABLE IF EXISTS t, recent" >/dev/null
q "CREATE TABLE brin_t (id snowflake NOT NULL, payload int NOT NULL)" >/dev/null
q "INSERT INTO brin_t SELECT snowflake_from_timestamp(now() - interval '30 days' + g * (interval '30 days' / $ROWS)) | (1 << 12), g
     FROM generate_series(1, $ROWS) g" >/dev/null
q "ALTER TABLE brin_t ADD PRIMARY KEY (id)" >/dev/null
q "CREATE INDEX brin_t_brin ON brin_t USING brin (id)" >/dev/null
q "VACUUM ANALYZE brin_t" >/dev/null
brin_query="SELECT count(*), sum(payload) FROM brin_t WHERE id >= snowflake_from_timestamp(now() - interval '1 day')"
# with_only DROP: the query's shared buffers and milliseconds with the other index dropped, in
# a transaction rolled back.
with_only() {
    pg_psql "$dir/node" -d postgres -Atq -c "BEGIN" -c "$1" -c "SET enable_seqscan = off" \
        -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) $brin_query" -c "ROLLBACK" |
        python3 -c "import json, sys; t = sys.stdin.read(); p = json.loads(t[t.index('['):t.rindex(']') + 1])[0]; \
print(p['Plan'].get('Shared Hit Blocks', 0) + p['Plan'].get('Shared Read Blocks', 0), round(p['Execution Time'], 1))"
}
with_only "DROP INDEX brin_t_brin" >/dev/null   # warm the cache alike for both
read -r btree_buffers btree_ms <<<"$(with_only "DROP INDEX brin_t_brin")"
read -r brin_buffers brin_ms <<<"$(with_only "ALTER TABLE brin_t DROP CONSTRAINT brin_t_pkey")"
echo
echo "BRIN beside the btree, $ROWS snowflake keys over 30 days; the last day's rows (1/30):"
echo "  btree (primary key): $(q "SELECT pg_size_pretty(pg_relation_size('brin_t_pkey'))"), the query reads $btree_buffers buffers in $btree_ms ms"
echo "  BRIN:                $(q "SELECT pg_size_pretty(pg_relation_size('brin_t_brin'))"), the query reads $brin_buffers buffers in $brin_ms ms"
echo "  table:               $(q "SELECT pg_size_pretty(pg_relation_size('brin_t'))")"

echo
echo "PostgreSQL $("$PG_CONFIG" --version | cut -d' ' -f2), $ROWS rows, then $INSERTS single-row inserts (8 clients) while 2 clients read recent rows; medians of $ROUNDS rounds; ratio to bigserial"
q "CREATE TABLE medians AS SELECT key, metric, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS m,
                                  min(value) AS lo, max(value) AS hi
                             FROM results GROUP BY key, metric" >/dev/null
pg_psql "$dir/node" -d postgres -P footer=off -c "
    SELECT m.metric, m.key, round(m.m::numeric, 2) AS median,
           round(m.lo::numeric, 2) || ' .. ' || round(m.hi::numeric, 2) AS spread,
           round((m.m / nullif(b.m, 0))::numeric, 2) AS vs_bigserial
      FROM medians m JOIN medians b ON b.metric = m.metric AND b.key = 'bigserial'
     ORDER BY m.metric, array_position(ARRAY['bigserial','snowflake','gdid','uuidv7','uuidv4'], m.key)"
mkdir -p .build
q "COPY (SELECT m.key, m.metric, m.m / nullif(b.m, 0) FROM medians m JOIN medians b ON b.metric = m.metric AND b.key = 'bigserial') TO STDOUT" >"$dir/ratios.tsv"
python3 - "$dir/ratios.tsv" "$dir/chart.dat" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
keys = ["bigserial", "snowflake", "gdid", "uuidv7", "uuidv4"]
metrics = sorted({m for _, m, _ in rows})
val = {(k, m): float(v) if v not in ("\\N", "") else 0.0 for k, m, v in rows}
with open(sys.argv[2], "w") as f:
    f.write("metric " + " ".join(keys) + "\n")
    for m in metrics:
        f.write('"%s" ' % m + " ".join("%.3f" % val.get((k, m), 0) for k in keys) + "\n")
PY
gnuplot <<GP
set terminal png size 1100,500
set output 'benches/table.png'
set title "Keys on a $ROWS-row table, ratio to bigserial (lower is better except inserts per second)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right
set xtics rotate by -20
set yrange [0:*]
plot for [i=2:6] '$dir/chart.dat' using i:xtic(1) title columnheader(i)
GP
echo "chart: benches/table.png"
