#!/usr/bin/env bash
# Seeding on real schemas: what it costs on large tables, many sessions meeting a sequence at
# once, seeds cut short by statement_timeout and cancels, other sessions' temporary tables,
# and the queries it runs (plain ones, with constant bounds, as pg_stat_statements shows).
#
# The sequences are dropped before each case (snowflake_drop_sequence, gdid_drop_sequence),
# so that the next use is a first meeting, as after a restore.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ROWS=${SEED_ROWS:-2000000}
ROUNDS=5
db=$(instance node "shared_preload_libraries = 'pg_stat_statements, snowflake_id'" \
    "snowflake.node_id = 1" "gdid.authority = 1" "snowflake.max_sequences = 1024" \
    "snowflake.max_sequences_per_database = 1024" "pg_stat_statements.track = all" \
    "max_connections = 40")
pg_start "$db"

# Two tables of ROWS keys each: one holds only keys of node 2 / authority 2 (a node joining a
# mesh, a restore onto a new node_id), the other's newest keys are this server's (node 1 /
# authority 1). The keys are a day old.
pg_psql "$db" -d postgres -q <<SQL
CREATE EXTENSION snowflake_id;
CREATE EXTENSION pg_stat_statements;
CREATE TABLE other_node (id snowflake PRIMARY KEY DEFAULT snowflake_next('other_node'),
                         g gdid UNIQUE DEFAULT gdid_next('seed', 'other_node'));
CREATE TABLE own_node (id snowflake PRIMARY KEY DEFAULT snowflake_next('own_node'),
                       g gdid UNIQUE DEFAULT gdid_next('seed', 'own_node'));
INSERT INTO other_node
SELECT snowflake_from_timestamp(now() - interval '1 day') + ((i / 4096)::bigint << 22) + (2 << 12) + i % 4096,
       gdid(0, 2, i)
  FROM generate_series(1, $ROWS) i;
INSERT INTO own_node
SELECT snowflake_from_timestamp(now() - interval '1 day') + ((i / 4096)::bigint << 22)
           + ((CASE WHEN i > $ROWS - 1000 THEN 1 ELSE 2 END) << 12) + i % 4096,
       gdid(0, CASE WHEN i > $ROWS - 1000 THEN 1 ELSE 2 END, i)
  FROM generate_series(1, $ROWS) i;
VACUUM ANALYZE other_node, own_node;
-- One insert into TABLE: milliseconds.
CREATE FUNCTION insert_ms(tbl text) RETURNS numeric LANGUAGE plpgsql AS \$\$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    EXECUTE format('INSERT INTO %I DEFAULT VALUES', tbl);
    RETURN round(extract(epoch FROM clock_timestamp() - t0)::numeric * 1000, 2);
END \$\$;
SQL
# first_insert_ms TABLE: one first insert into TABLE, its sequences dropped just before (a
# drop takes effect at commit): milliseconds.
first_insert_ms() {
    sql "$db" "SELECT snowflake_drop_sequence('$1'), gdid_drop_sequence('seed', '$1')" >/dev/null
    sql "$db" "SELECT insert_ms('$1')"
}

# 1. Cost: first inserts into each table, alternating, ROUNDS times; medians.
: >"$CLUSTER_ROOT/times"
for r in $(seq 1 $ROUNDS); do
    for t in other_node own_node; do
        echo "$t $(first_insert_ms "$t")" >>"$CLUSTER_ROOT/times"
    done
done
median() { grep "^$1 " "$CLUSTER_ROOT/times" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
spread() { grep "^$1 " "$CLUSTER_ROOT/times" | awk '{print $2}' | sort -n | awk 'NR==1{lo=$1} {hi=$1} END {print lo " .. " hi}'; }
other=$(median other_node)
own=$(median own_node)
echo "figures: first insert (both sequences seeded) into $ROWS rows of another node: $other ms ($(spread other_node)); into $ROWS rows whose newest are this node's: $own ms ($(spread own_node)); medians of $ROUNDS"
awk -v a="$other" -v b="$own" 'BEGIN { exit !(a <= 3 * b) }' ||
    fail "a first insert into another node's rows costs more than 3x one into this node's ($other vs $own ms)"
expect "$db" "SELECT count(*) - count(DISTINCT id) + count(*) - count(DISTINCT g) FROM other_node" "0"
expect "$db" "SELECT count(*) - count(DISTINCT id) + count(*) - count(DISTINCT g) FROM own_node" "0"
# The keys of this server made after the own_node seeds are above its stored ones.
expect "$db" "SELECT count(*) FROM own_node WHERE gdid_authority(g) = 1 AND gdid_counter(g) <= $ROWS AND snowflake_timestamp(id) > now() - interval '1 hour'" "0"

# 2. Many sessions meeting a sequence at once: 8 sessions insert into other_node the moment
# its sequences are dropped. One seeds, the others wait for it: the seed queries run once.
sql "$db" "SELECT snowflake_drop_sequence('other_node'), gdid_drop_sequence('seed', 'other_node'), pg_stat_statements_reset()" >/dev/null
pids=()
for s in $(seq 1 8); do
    session "$db" -At \
        -c "SELECT insert_ms('other_node')" >"$CLUSTER_ROOT/session_$s" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a session's first insert failed"; done
slowest=$(cat "$CLUSTER_ROOT"/session_* | sort -n | tail -n 1)
probes=$(sql "$db" "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '%FROM ONLY public.other_node%'")
echo "figures: 8 sessions meeting the sequences at once: slowest first insert $slowest ms; the seed's table probes ran $probes time(s)"
# One snowflake probe, and for the gdid one era: the top key, then the era's range.
[ "$probes" = 3 ] || fail "the seed ran $probes probes for 8 sessions (expected one seed: 3)"

# 3. The queries: plain ones with constant bounds (no recursive CTE, which Citus refuses on a
# distributed table), and only plain tables.
expect "$db" "SELECT count(*) FROM pg_stat_statements WHERE query ILIKE '%recursive%'" "0"
sql "$db" "SELECT '  ' || calls || 'x ' || regexp_replace(query, '\s+', ' ', 'g') FROM pg_stat_statements WHERE query LIKE '%FROM ONLY%' ORDER BY query"

# 4. A seed cut short: while another session holds a lock on a second table whose defaults
# name the same sequences (an archive), a first insert into other_node waits in its seed;
# statement_timeout ends it, and pg_cancel_backend ends a session queued behind it on the
# seeding lock. Once the lock is gone, the next attempt seeds and inserts.
sql "$db" "CREATE TABLE archive (LIKE other_node INCLUDING DEFAULTS)" >/dev/null
sql "$db" "SELECT snowflake_drop_sequence('other_node'), gdid_drop_sequence('seed', 'other_node')" >/dev/null
session "$db" -At \
    -c "BEGIN" -c "LOCK TABLE archive IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(30)" >/dev/null 2>&1 &
locker=$!
wait_until 10 "the lock" sql_is "$db" "SELECT count(*) FROM pg_locks WHERE relation = 'archive'::regclass AND mode = 'AccessExclusiveLock' AND granted" 1
out=$(session "$db" -At \
    -c "SET statement_timeout = '500ms'" -c "INSERT INTO other_node DEFAULT VALUES" 2>&1 || true)
grep -q "canceling statement due to statement timeout" <<<"$out" || fail "statement_timeout did not end the seed: $out"
echo "ok: statement_timeout ended a seed waiting for the table"
# A first user waiting for the seeding lock of a seed that waits for the table: cancelled.
session "$db" -At \
    -c "INSERT INTO other_node DEFAULT VALUES" >/dev/null 2>&1 &
seeder=$!
wait_until 10 "the seeder" sql_is "$db" "SELECT count(*) FROM pg_stat_activity WHERE query = 'INSERT INTO other_node DEFAULT VALUES' AND wait_event_type = 'Lock'" 1
session "$db" -At \
    -c "INSERT INTO other_node DEFAULT VALUES" >"$CLUSTER_ROOT/queued" 2>&1 &
queued=$!
wait_until 10 "the queued session" sql_is "$db" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21318 AND NOT granted" 1
sql "$db" "SELECT pg_cancel_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21318 AND NOT granted" >/dev/null
wait "$queued" || true
grep -q "canceling statement due to user request" "$CLUSTER_ROOT/queued" || fail "the queued session was not cancelled: $(cat "$CLUSTER_ROOT/queued")"
echo "ok: pg_cancel_backend ended a session waiting for another's seed"
sql "$db" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%'" >/dev/null
wait "$locker" || true
wait "$seeder" || fail "the seed did not finish once the table was free"
sql "$db" "INSERT INTO other_node DEFAULT VALUES" >/dev/null
expect "$db" "SELECT count(*) - count(DISTINCT id) + count(*) - count(DISTINCT g) FROM other_node" "0"
echo "ok: the seeds went on once the lock was gone"

# 5. Another session's temporary table with the defaults (CREATE TEMP TABLE ... LIKE ...
# INCLUDING DEFAULTS) is not this session's to read: it is skipped.
sql "$db" "SELECT snowflake_drop_sequence('own_node'), gdid_drop_sequence('seed', 'own_node')" >/dev/null
session "$db" -At \
    -c "CREATE TEMP TABLE stage (LIKE own_node INCLUDING DEFAULTS)" -c "SELECT pg_sleep(30)" >/dev/null 2>&1 &
stager=$!
wait_until 10 "the temporary table" sql_is "$db" "SELECT count(*) FROM pg_class WHERE relname = 'stage' AND relpersistence = 't'" 1
sql "$db" "INSERT INTO own_node DEFAULT VALUES" >/dev/null || fail "another session's temporary table stopped the first insert"
echo "ok: another session's temporary table is skipped"
sql "$db" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%'" >/dev/null
wait "$stager" || true

# 6. Keys typed and defaulted as users write them: a domain with the DEFAULT (and a domain
# over it, which copies it), a domain over a domain with the column's own DEFAULT, a domain
# over snowflake. A template copy is a new database: each sequence is new there and must
# continue above the copied keys.
sql "$db" "CREATE DATABASE forms" >/dev/null
pg_psql "$db" -d forms -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE DOMAIN order_key AS gdid DEFAULT gdid_next('forms', 'orders');
CREATE DOMAIN order_key2 AS order_key;
CREATE DOMAIN g1 AS gdid;
CREATE DOMAIN g2 AS g1;
CREATE DOMAIN positive_id AS snowflake CHECK (VALUE > 0);
CREATE TABLE by_domain (id order_key PRIMARY KEY, n int);
CREATE TABLE by_domain2 (id order_key2 PRIMARY KEY, n int);
CREATE TABLE by_nested (id g2 PRIMARY KEY DEFAULT gdid_next('forms', 'nested'), n int);
CREATE TABLE by_snowflake_domain (id positive_id PRIMARY KEY DEFAULT snowflake_next('forms'), n int);
INSERT INTO by_domain (n) SELECT g FROM generate_series(1, 5) g;
INSERT INTO by_domain2 (n) SELECT g FROM generate_series(1, 5) g;
INSERT INTO by_nested (n) SELECT g FROM generate_series(1, 5) g;
INSERT INTO by_snowflake_domain (n) SELECT g FROM generate_series(1, 5) g;
SQL
sql "$db" "CREATE DATABASE forms_copy TEMPLATE forms" >/dev/null
for t in by_domain by_domain2 by_nested by_snowflake_domain; do
    sql "$db" "INSERT INTO $t (n) VALUES (6)" forms_copy >/dev/null ||
        fail "$t: the first insert in a template copy repeated a key"
    expect "$db" "SELECT count(*) FROM pg_trigger WHERE tgrelid = '$t'::regclass AND tgfoid = 'snowflake_arrival_trigger'::regproc" "1" forms_copy
done
echo "ok: domain defaults, domains over domains and a domain over snowflake are seeded and watched"
echo "seeding: ok"
