#!/usr/bin/env bash
# The fallback of a fresh sequence on real schemas. A sequence that has never leased anything
# (made anew by the DEFAULT of a table restored alone, reset, or re-created after a drop)
# starts above this server's keys already stored in the columns whose DEFAULT depends on it,
# found by descents of each column's btree index (index-only, no user code, see
# tests/pg_regress/sql/fallback.sql). Here:
# 1. what a first use costs on large tables (ROWS keys each, ahead of the clock): one whose
#    keys are all another node's and authority's, which the search walks through one
#    millisecond at a time up to its bound of 10,000 descents (the worst case), and one whose
#    newest keys are this server's (found at once); medians of ROUNDS first inserts, each
#    after ALTER SEQUENCE ... RESTART made the sequences fresh again;
# 2. partitioned tables and inheritance children: their keys count;
# 3. 16 sessions meeting a fresh sequence at the same moment: none fails, none repeats a key;
# 4. a first use cut short, while its search waits for a table locked by another session, by
#    statement_timeout and by pg_cancel_backend: the session goes on, the sequence is still
#    fresh, and the next first use starts above every key;
# 5. another session's temporary table with the DEFAULT is not read (it cannot be), and does
#    not stop a first use;
# 6. 16 sessions meeting a name never used before at the same moment (its sequences made by
#    the first use): none fails, none repeats a value; then 16 sessions each meeting names of
#    its own at once (32 new sequences, more than max_worker_processes = 8 workers at once):
#    none fails;
# 7. a session waiting for another's making of a new name (whose worker waits here for a
#    sequence of that name made by hand and not yet committed): lock_timeout,
#    statement_timeout and pg_cancel_backend end the wait, the sessions go on, the server does
#    not restart; committed, the hand-made sequence counts as made (its worker's 23505).
# majors: 15 19 (the search of the columns is SPI, the same on every major; the oldest and the newest
# are enough for its run time, pg_regress fallback runs on every major)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap cleanup_with_jobs EXIT

ROWS=${FALLBACK_ROWS:-2000000}
ROUNDS=5
db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" \
    "gdid.authority = 1" "snowflake.max_clock_ahead = '10min'" "max_connections = 40")
pg_start "$db"

# The keys lie 60 to 70 s ahead of the clock, one millisecond every ROWS / 10,000 keys: node 2
# and authority 2 in other_node; the same in own_node but for the last 1,000 keys, which are
# node 1's and authority 1's.
pg_psql "$db" -d postgres -q <<SQL
CREATE EXTENSION snowflake_id;
CREATE TABLE other_node (id snowflake PRIMARY KEY DEFAULT snowflake_next('other_node'),
                         g gdid UNIQUE DEFAULT gdid_next('fallback', 'other_node'));
CREATE TABLE own_node (id snowflake PRIMARY KEY DEFAULT snowflake_next('own_node'),
                       g gdid UNIQUE DEFAULT gdid_next('fallback', 'own_node'));
CREATE FUNCTION key_of(i bigint, node int) RETURNS bigint LANGUAGE sql AS
    \$\$ SELECT snowflake_from_timestamp(now() + interval '60 s' + (i / ($ROWS / 10000)) * interval '1 ms')
                + (node << 12) + i % ($ROWS / 10000) \$\$;
INSERT INTO other_node SELECT key_of(i, 2), gdid(0, 2, i) FROM generate_series(1, $ROWS) i;
INSERT INTO own_node
SELECT key_of(i, CASE WHEN i > $ROWS - 1000 THEN 1 ELSE 2 END),
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
# restart TABLE: both sequences of TABLE fresh again (new storage, never leased).
restart() {
    pg_psql "$db" -d postgres -qc "ALTER SEQUENCE snowflake.$1 RESTART" -c "ALTER SEQUENCE gdid.\"fallback/$1\" RESTART"
    [ "$(sql "$db" "SELECT (SELECT NOT is_called FROM snowflake.$1) AND (SELECT NOT is_called FROM gdid.\"fallback/$1\")")" = t ] ||
        fail "the sequences of $1 are not fresh after RESTART"
}
# distinct TABLE: no key repeats in TABLE.
distinct() {
    expect "$db" "SELECT count(*) - count(DISTINCT id) + count(*) - count(DISTINCT g) FROM $1" "0"
}

# 1. Cost: first inserts into each table, alternating, ROUNDS times; medians. And the insert
# right after a first one, for comparison.
: >"$CLUSTER_ROOT/times"
for r in $(seq 1 $ROUNDS); do
    for t in other_node own_node; do
        restart "$t"
        echo "$t $(sql "$db" "SELECT insert_ms('$t')") $(sql "$db" "SELECT insert_ms('$t')")" >>"$CLUSTER_ROOT/times"
    done
done
median() { grep "^$1 " "$CLUSTER_ROOT/times" | awk -v c="$2" '{print $c}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
spread() { grep "^$1 " "$CLUSTER_ROOT/times" | awk '{print $2}' | sort -n | awk 'NR==1{lo=$1} {hi=$1} END {print lo " .. " hi}'; }
other=$(median other_node 2)
own=$(median own_node 2)
echo "figures: first insert (both sequences fresh) into $ROWS rows of another node: $other ms ($(spread other_node)); into $ROWS rows whose newest are this node's: $own ms ($(spread own_node)); the next insert: $(median other_node 3) and $(median own_node 3) ms; medians of $ROUNDS"
awk -v a="$other" 'BEGIN { exit !(a < 2000) }' || fail "a first insert into another node's rows took $other ms"
distinct other_node
distinct own_node
# This server's new keys in own_node are above its stored ones; in other_node, above the
# keys the bounded search saw.
expect "$db" "SELECT count(*) FROM own_node WHERE gdid_authority(g) = 1 AND gdid_counter(g) > $ROWS" "$((ROUNDS * 2))"
expect "$db" "SELECT min(id) FILTER (WHERE gdid_counter(g) > $ROWS) > max(id) FILTER (WHERE gdid_counter(g) <= $ROWS AND snowflake_node(id) = 1) FROM own_node" t

# 2. Partitions and inheritance children: the newest key of node 1 and authority 1 is in a
# partition (or a child), 30 s ahead of the clock; the parent's fresh sequence starts above it.
pg_psql "$db" -d postgres -q <<'SQL'
CREATE TABLE events (id snowflake PRIMARY KEY DEFAULT snowflake_next('events'),
                     g gdid NOT NULL DEFAULT gdid_next('fallback', 'events')) PARTITION BY RANGE (id);
CREATE UNIQUE INDEX ON events (g, id);
DO $$
DECLARE
    lo bigint := 0;
BEGIN
    FOR p IN 1..8 LOOP
        EXECUTE format('CREATE TABLE events_%s PARTITION OF events FOR VALUES FROM (%s) TO (%s)',
                       p, lo, CASE WHEN p = 8 THEN 'MAXVALUE' ELSE snowflake_from_timestamp(now() + p * interval '10 s')::text END);
        lo := snowflake_from_timestamp(now() + p * interval '10 s');
    END LOOP;
END $$;
INSERT INTO events SELECT snowflake_from_timestamp(now() + (i % 80) * interval '1 s') + (2 << 12) + i / 80,
                          gdid(0, 2, i) FROM generate_series(1, 100000) i;
INSERT INTO events VALUES (snowflake_from_timestamp(now() + interval '30 s') + (1 << 12) + 5, gdid(0, 1, 777777));
CREATE TABLE base (id snowflake PRIMARY KEY DEFAULT snowflake_next('base'),
                   g gdid UNIQUE DEFAULT gdid_next('fallback', 'base'));
SET client_min_messages = warning;
CREATE TABLE derived (id snowflake PRIMARY KEY, g gdid UNIQUE, extra text) INHERITS (base);
INSERT INTO derived (id, g) SELECT snowflake_from_timestamp(now() + interval '30 s') + (1 << 12) + i, gdid(0, 1, 555000 + i)
  FROM generate_series(1, 1000) i;
SQL
for t in events base; do
    restart "$t"
    stored=$(sql "$db" "SELECT max(id) FILTER (WHERE snowflake_node(id) = 1) || ' ' || max(g) FILTER (WHERE gdid_authority(g) = 1) FROM $t")
    read -r new_id new_g <<<"$(sql "$db" "INSERT INTO $t DEFAULT VALUES RETURNING id || ' ' || g")"
    read -r max_id max_g <<<"$stored"
    expect "$db" "SELECT $new_id > $max_id AND '$new_g'::gdid > '$max_g'::gdid" t
    echo "figures: $t: the first new ID is $(sql "$db" "SELECT snowflake_timestamp($new_id) - snowflake_timestamp($max_id)") after the newest stored one of node 1, gdid $max_g -> $new_g"
done
echo "ok: keys in partitions and in inheritance children count"

# 3. 16 sessions meeting both fresh sequences of own_node at once: each waits for an advisory
# lock the test holds, then inserts 100 rows, one transaction each.
restart own_node
before=$(sql "$db" "SELECT count(*) FROM own_node")
open_session gate "$db"
send gate "SELECT pg_advisory_lock(42);"
wait_until 10 "the gate" sql_is "$db" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 42 AND granted" 1
pids=()
for s in $(seq 1 16); do
    session "$db" -c "SELECT pg_advisory_lock_shared(42)" -c "DO \$\$
BEGIN
    FOR i IN 1..100 LOOP
        INSERT INTO own_node DEFAULT VALUES;
        COMMIT;
    END LOOP;
END \$\$" >"$CLUSTER_ROOT/session_$s.log" 2>&1 &
    pids+=($!)
done
wait_until 30 "16 sessions at the gate" sql_is "$db" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 42 AND NOT granted" 16
send gate "SELECT pg_advisory_unlock(42);"
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
[ "$failed" = 0 ] || { cat "$CLUSTER_ROOT"/session_*.log; fail "$failed of 16 sessions failed"; }
expect "$db" "SELECT count(*) - $before FROM own_node" "1600"
distinct own_node
expect "$db" "SELECT count(*) FROM own_node WHERE gdid_authority(g) = 1 AND gdid_counter(g) <= $ROWS" "1000"
echo "ok: 16 sessions met the fresh sequences at once; 1600 rows, none repeated"

# 4. A first use cut short. archive takes its DEFAULTs from other_node's sequences, and holds
# the newest key of node 1 (20 s further ahead than any other); while another session holds
# it locked, the first use's search waits for it.
pg_psql "$db" -d postgres -qc "CREATE TABLE archive (LIKE other_node INCLUDING DEFAULTS INCLUDING INDEXES)" \
    -c "INSERT INTO archive VALUES (snowflake_from_timestamp(now() + interval '90 s') + (1 << 12), gdid(0, 1, 9000000))"
restart other_node
open_session locker "$db"
send locker "BEGIN; LOCK TABLE archive IN ACCESS EXCLUSIVE MODE; SELECT 'locked';"
wait_until 10 "the lock on archive" grep -q '^locked$' "$CLUSTER_ROOT/locker.out"
out=$(session "$db" -At -v ON_ERROR_STOP=0 -c "SET statement_timeout = '500ms'" -c "INSERT INTO other_node DEFAULT VALUES" \
    -c "SELECT 'usable after the timeout'" 2>&1 || true)
grep -q "ERROR:  canceling statement due to statement timeout" <<<"$out" || fail "statement_timeout did not end the first use: $out"
grep -q "^usable after the timeout$" <<<"$out" || fail "the session did not go on: $out"
echo "ok: statement_timeout ended a first use waiting for a locked table; the session went on"
open_session first "$db"
first_pid=$(session_pid first)
send first "INSERT INTO other_node DEFAULT VALUES RETURNING 'inserted ' || id;"
wait_until 10 "the first use to wait for archive" \
    sql_is "$db" "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $first_pid" Lock
expect "$db" "SELECT pg_cancel_backend($first_pid)" t
wait_until 10 "the cancel" grep -q 'ERROR:  canceling statement due to user request' "$CLUSTER_ROOT/first.out"
send first "SELECT 'usable after the cancel';"
wait_until 10 "the cancelled session to go on" grep -q '^usable after the cancel$' "$CLUSTER_ROOT/first.out"
echo "ok: pg_cancel_backend ended a first use waiting for a locked table; the session went on"
[ "$(sql "$db" "SELECT (SELECT NOT is_called FROM snowflake.other_node) AND (SELECT NOT is_called FROM gdid.\"fallback/other_node\")")" = t ] ||
    fail "a cut short first use left the sequences leased"
# Once the lock is gone, the same session's first use starts above archive's keys.
send locker "COMMIT;"
send first "INSERT INTO other_node DEFAULT VALUES RETURNING 'inserted ' || id || ' ' || g;"
wait_until 10 "the first use after the lock" grep -q '^inserted ' "$CLUSTER_ROOT/first.out"
read -r new_id new_g <<<"$(sed -n 's/^inserted //p' "$CLUSTER_ROOT/first.out")"
expect "$db" "SELECT $new_id > max(id) AND '$new_g'::gdid > max(g) FROM archive" t
distinct other_node
close_session first
close_session locker
echo "ok: after the lock, the first use started above the locked table's keys"

# 5. Another session's temporary table with the same DEFAULTs, holding a key of node 1 far
# ahead: not read, and no obstacle.
restart own_node
open_session stager "$db"
send stager "CREATE TEMP TABLE stage (LIKE own_node INCLUDING DEFAULTS INCLUDING INDEXES);
INSERT INTO stage VALUES (snowflake_from_timestamp(now() + interval '5 min') + (1 << 12), gdid(0, 1, 99000000));
SELECT 'staged';"
wait_until 10 "the temporary table" grep -q '^staged$' "$CLUSTER_ROOT/stager.out"
sql "$db" "INSERT INTO own_node DEFAULT VALUES" >/dev/null || fail "another session's temporary table stopped the first use"
expect "$db" "SELECT max(gdid_counter(g)) < 99000000 FROM own_node WHERE gdid_authority(g) = 1" t
distinct own_node
close_session stager
echo "ok: another session's temporary table is not read"
# 6. 16 sessions meeting a name never used before at the same moment: its sequences are made
# by the first use.
pg_psql "$db" -d postgres -qc "CREATE TABLE met (id bigint, g gdid)"
send gate "SELECT pg_advisory_lock(43);"
wait_until 10 "the gate" sql_is "$db" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 43 AND granted" 1
pids=()
for s in $(seq 1 16); do
    session "$db" -c "SELECT pg_advisory_lock_shared(43)" \
        -c "INSERT INTO met SELECT snowflake_next('met_at_once'), gdid_next('fallback', 'met_at_once')" \
        >"$CLUSTER_ROOT/met_$s.log" 2>&1 &
    pids+=($!)
done
wait_until 30 "16 sessions at the gate" sql_is "$db" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 43 AND NOT granted" 16
send gate "SELECT pg_advisory_unlock(43);"
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
[ "$failed" = 0 ] || { grep -h ERROR "$CLUSTER_ROOT"/met_*.log | sort | uniq -c || true; fail "$failed of 16 sessions failed to meet a new name at once"; }
expect "$db" "SELECT count(DISTINCT id) || ' ' || count(DISTINCT g) FROM met" "16 16"
echo "ok: 16 sessions met a new name at once"
send gate "SELECT pg_advisory_lock(44);"
wait_until 10 "the gate" sql_is "$db" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 44 AND granted" 1
pids=()
for s in $(seq 1 16); do
    session "$db" -c "SELECT pg_advisory_lock_shared(44)" \
        -c "INSERT INTO met SELECT snowflake_next('own_$s'), gdid_next('fallback', 'own_$s')" \
        >"$CLUSTER_ROOT/own_$s.log" 2>&1 &
    pids+=($!)
done
wait_until 30 "16 sessions at the gate" sql_is "$db" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 44 AND NOT granted" 16
send gate "SELECT pg_advisory_unlock(44);"
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
[ "$failed" = 0 ] || { grep -h ERROR "$CLUSTER_ROOT"/own_*.log | sort | uniq -c || true; fail "$failed of 16 sessions failed to meet new names of their own at once"; }
expect "$db" "SELECT count(*) FROM pg_class WHERE relname ~ '^(fallback/)?own_[0-9]+$' AND relkind = 'S'" 32
echo "ok: 16 sessions met 32 new names at once"
close_session gate

# 7. Waiting for another session's making of a name.
open_session maker "$db"
send maker "BEGIN; CREATE SEQUENCE snowflake.by_hand AS bigint INCREMENT 10 MINVALUE 1735689600000
    MAXVALUE 3934712855552 START 1735689600000; SELECT 'made';"
wait_until 10 "the sequence made by hand" grep -q '^made$' "$CLUSTER_ROOT/maker.out"
open_session new_use "$db"
send new_use "SELECT 'first ' || snowflake_next('by_hand');"
wait_until 10 "the first use's worker to wait for the sequence made by hand" \
    sql_is "$db" "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'snowflake_id sequence creator' AND wait_event_type = 'Lock'" 1
for how in "lock_timeout" "statement_timeout"; do
    out=$(session "$db" -At -v ON_ERROR_STOP=0 -c "SET $how = '300ms'" -c "SELECT snowflake_next('by_hand')" \
        -c "SELECT 'usable after the $how'" 2>&1 || true)
    grep -q "ERROR:  canceling statement due to ${how/_timeout/ timeout}" <<<"$out" || fail "$how did not end the wait for the making: $out"
    grep -q "^usable after the $how$" <<<"$out" || fail "the session did not go on after $how: $out"
done
open_session waiter "$db"
waiter_pid=$(session_pid waiter)
send waiter "SELECT 'waiter ' || snowflake_next('by_hand');"
# It waits outside the lock manager (see sequences/creator.rs): the wait event is the
# extension's.
wait_until 10 "the waiter to wait for the name's lock" \
    sql_is "$db" "SELECT wait_event_type || ' ' || wait_event FROM pg_stat_activity WHERE pid = $waiter_pid" "Extension Extension"
expect "$db" "SELECT pg_cancel_backend($waiter_pid)" t
wait_until 10 "the cancel" grep -q 'ERROR:  canceling statement due to user request' "$CLUSTER_ROOT/waiter.out"
echo "ok: lock_timeout, statement_timeout and pg_cancel_backend ended waits for another session's making of a name"
send maker "COMMIT;"
wait_until 15 "the first use after the commit" grep -q '^first ' "$CLUSTER_ROOT/new_use.out"
send waiter "SELECT 'waiter ' || snowflake_next('by_hand');"
wait_until 10 "the cancelled session to go on" grep -q '^waiter ' "$CLUSTER_ROOT/waiter.out"
grep -q 'ERROR' "$CLUSTER_ROOT/new_use.out" && fail "the first use failed: $(cat "$CLUSTER_ROOT/new_use.out")"
expect "$db" "SELECT count(*) FROM pg_class WHERE relname = 'by_hand'" 1
! grep -q 'terminated by signal' "$db/server.log" || fail "the server restarted: $(grep 'terminated by signal' "$db/server.log")"
close_session new_use
close_session waiter
close_session maker
echo "ok: the sequence made by hand meanwhile counted as made"
echo "fallback: ok"
