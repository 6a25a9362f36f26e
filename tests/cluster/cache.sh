#!/usr/bin/env bash
# Shared memory is only a cache of sequences: a server with snowflake.max_sequences = 16 and
# 64 names in use, so that nearly every use finds its sequence evicted and reads it back from
# its relation. Four sessions generate in rotation, one transaction per row: through the
# DEFAULTs of eight tables (16 sequences, both kinds), and by calling the generators for 24
# more names of each kind, which no DEFAULT names; meanwhile a fifth session drops those 48
# sequences again and again (one drop per transaction; the next use makes the name's
# sequence anew) and tries to drop the sequences the DEFAULTs depend on (refused, 2BP01).
# Then:
# - no session failed (no full cache, no stale entry, no error of a drop under a user);
# - no key repeats in any table (their keys are unique: a repeat would have failed an
#   insert, and is counted again);
# - every value of a sequence, while that sequence lived (one relation), was new: none
#   repeated, and none was below a value of the same sequence that a call had returned
#   before it started (for the dropped names: gdids and snowflake IDs; a re-created name is
#   a new sequence, PostgreSQL's DROP SEQUENCE semantics, and starts afresh);
# - every drop of a sequence a DEFAULT depends on was refused.
# Figures: rows, drops, the sequences' WAL records (each entry into the cache extends the
# lease once), and how far the snowflake IDs ran ahead of the clock.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap cleanup_with_jobs EXIT

ROWS=${CACHE_ROWS:-1500}
DROPS=${CACHE_DROPS:-300}
db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 2" \
    "gdid.authority = 2" "snowflake.max_sequences = 16")
pg_start "$db"
pg_psql "$db" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
DO $$
BEGIN
    FOR k IN 1..8 LOOP
        EXECUTE format('CREATE TABLE t%s (id snowflake PRIMARY KEY DEFAULT snowflake_next(%L),
                        g gdid NOT NULL UNIQUE DEFAULT gdid_next(%L, %L), session int, pos int,
                        at timestamptz DEFAULT clock_timestamp())',
                       k, 'c' || k, 'cache', 'c' || k);
    END LOOP;
END $$;
-- The values of the names no DEFAULT names: which relation made them, and when the call
-- started and ended.
CREATE TABLE free_log (name int, sf_rel oid, g_rel oid, id bigint, g gdid, session int, pos int,
                       called timestamptz, returned timestamptz);
CREATE FUNCTION free_next(k int, s int, i int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    called timestamptz := clock_timestamp();
    g gdid := gdid_next('cache', 'f' || k);
    id bigint := snowflake_next('f' || k);
BEGIN
    -- Each sequence stays locked until the transaction ends: the relations found now are
    -- the ones that made the values.
    INSERT INTO free_log VALUES (k, to_regclass(format('snowflake.%I', 'f' || k)),
                                 to_regclass(format('gdid.%I', 'cache/f' || k)), id, g, s, i,
                                 called, clock_timestamp());
END $$;
SQL
dboid=$(sql "$db" "SELECT oid FROM pg_database WHERE datname = 'postgres'")
lsn0=$(sql "$db" "SELECT pg_current_wal_insert_lsn()")

start=$(date +%s.%N)
pids=()
for s in 1 2 3 4; do
    session "$db" -c "DO \$\$
BEGIN
    FOR i IN 1..$ROWS LOOP
        EXECUTE format('INSERT INTO t%s (session, pos) VALUES ($s, %s)', (i + $s) % 8 + 1, i);
        COMMIT;
        PERFORM free_next((i * 7 + $s * 5) % 24 + 1, $s, i);
        COMMIT;
    END LOOP;
END \$\$" >"$CLUSTER_ROOT/session_$s.log" 2>&1 &
    pids+=($!)
done
session "$db" -c "CREATE TABLE refusals (n int)" -c "DO \$\$
DECLARE
    refused int := 0;
BEGIN
    FOR j IN 1..$DROPS LOOP
        PERFORM snowflake_drop_sequence('f' || j % 24 + 1);
        COMMIT;
        PERFORM gdid_drop_sequence('cache', 'f' || (j + 12) % 24 + 1);
        COMMIT;
        IF j % 10 = 0 THEN
            BEGIN
                IF j % 20 = 0 THEN
                    PERFORM snowflake_drop_sequence('c' || j % 8 + 1);
                ELSE
                    PERFORM gdid_drop_sequence('cache', 'c' || j % 8 + 1);
                END IF;
                RAISE EXCEPTION 'dropped sequence c% that a DEFAULT depends on', j % 8 + 1;
            EXCEPTION WHEN dependent_objects_still_exist THEN
                refused := refused + 1;
            END;
            COMMIT;
        END IF;
        PERFORM pg_sleep(0.005);
    END LOOP;
    INSERT INTO refusals VALUES (refused);
END \$\$" >"$CLUSTER_ROOT/dropper.log" 2>&1 &
dropper=$!
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
wait "$dropper" || { cat "$CLUSTER_ROOT/dropper.log"; fail "the dropping session failed"; }
[ "$failed" = 0 ] || { grep -h ERROR -A3 "$CLUSTER_ROOT"/session_*.log | head -n 20 || true; fail "$failed of 4 sessions failed"; }
took=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
lsn1=$(sql "$db" "SELECT pg_current_wal_insert_lsn()")

expect "$db" "SELECT n FROM refusals" "$((DROPS / 10))"
rows=$(for k in 1 2 3 4 5 6 7 8; do echo "SELECT $k AS tbl, * FROM t$k"; done | sed ':a;N;$!ba;s/\n/ UNION ALL /g')
expect "$db" "SELECT count(*) FROM ($rows) r" "$((4 * ROWS))"
for k in 1 2 3 4 5 6 7 8; do
    expect "$db" "SELECT count(*) - count(DISTINCT id) + count(*) - count(DISTINCT g) FROM t$k" "0"
done
expect "$db" "SELECT count(*) FROM ($rows) r WHERE snowflake_node(id) <> 2 OR gdid_authority(g) <> 2" "0"
# Each session's keys in each table increase.
expect "$db" "SELECT count(*) FROM (SELECT id <= lag(id) OVER w OR g <= lag(g) OVER w AS back FROM ($rows) r WINDOW w AS (PARTITION BY tbl, session ORDER BY pos)) s WHERE back" "0"

expect "$db" "SELECT count(*) FROM free_log" "$((4 * ROWS))"
expect "$db" "SELECT count(*) FROM free_log WHERE sf_rel IS NULL OR g_rel IS NULL" "0"
expect "$db" "SELECT count(*) - count(DISTINCT (g_rel, g)) FROM free_log" "0"
expect "$db" "SELECT count(*) - count(DISTINCT (sf_rel, id)) FROM free_log" "0"
pg_psql "$db" -d postgres -qc "CREATE INDEX ON free_log (g_rel, returned)" -c "CREATE INDEX ON free_log (sf_rel, returned)"
expect "$db" "SELECT count(*) FROM free_log r WHERE EXISTS (SELECT FROM free_log p WHERE p.g_rel = r.g_rel AND p.returned < r.called AND p.g >= r.g)" "0"
expect "$db" "SELECT count(*) FROM free_log r WHERE EXISTS (SELECT FROM free_log p WHERE p.sf_rel = r.sf_rel AND p.returned < r.called AND p.id >= r.id)" "0"

lives=$(sql "$db" "SELECT count(DISTINCT g_rel) || ' gdid and ' || count(DISTINCT sf_rel) || ' snowflake' FROM free_log")
records=$("$PG_BINDIR/pg_waldump" -p "$db/data/pg_wal" -s "$lsn0" -e "$lsn1" -r Sequence 2>/dev/null | grep -c 'rmgr: Sequence' || true)
ahead=$(sql "$db" "SELECT round(extract(epoch FROM max(snowflake_timestamp(id) - at))::numeric, 2) FROM ($rows) r")
echo "figures: $((8 * ROWS)) rows in $took s by 4 sessions, one transaction each, through a cache of $(sql "$db" "SHOW snowflake.max_sequences") for 64 names, while $((2 * DROPS)) drops went by ($lives relations of the dropped names used); none repeated; $records WAL records of sequences (lease extensions and entries into the cache); snowflake IDs at most $ahead s ahead of the clock"
# A first use that waits for a table's lock (the fallback of a fresh sequence reads the index
# of its column) waits outside the cache's epoch: meanwhile another session enters 64 new
# names, four times the cache, each evicting one (a waiting backend kept inside the epoch kept
# every evicted entry from reuse: 53400 for everyone).
pg_psql "$db" -d postgres -qc "CREATE TABLE locked (id bigint PRIMARY KEY DEFAULT snowflake_next('locked_fresh'))"
open_session locker "$db"
send locker "BEGIN; LOCK TABLE locked IN ACCESS EXCLUSIVE MODE; SELECT 'locked';"
wait_until 10 "the lock" grep -q '^locked' "$CLUSTER_ROOT/locker.out"
open_session waiter "$db"
send waiter "SELECT 'first ' || snowflake_next('locked_fresh');"
wait_until 10 "the first use to wait for the lock" sql_is "$db" \
    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%locked_fresh%'" 1
session "$db" -c "SELECT count(snowflake_next('during_wait_' || g)) FROM generate_series(1, 64) g" >/dev/null ||
    fail "new names failed while a first use waited for a lock"
grep -q '^first ' "$CLUSTER_ROOT/waiter.out" && fail "the first use did not wait for the lock"
send locker "COMMIT;"
wait_until 20 "the first use after the lock" grep -q '^first ' "$CLUSTER_ROOT/waiter.out"
close_session locker
close_session waiter
echo "ok: 64 new names entered the cache of 16 while a first use waited for a table's lock"
echo "cache: ok"
