#!/usr/bin/env bash
# Watermarks: eight writers insert 1,000,000 committed rows (and more they roll back) in
# transactions of 1 to 200 rows that wait a random 0 to 10 ms before they end, some of them
# through PREPARE TRANSACTION and COMMIT PREPARED (or ROLLBACK PREPARED) a little later.
# Meanwhile three consumers page through the table: by snowflake_watermark('wm_events') on the
# snowflake key, by gdid_watermark('wm', 'events') on the gdid key, and naively by the largest
# ID read so far. Each watermark consumer must read every committed row exactly once; the
# naive one must skip some (else this test could not tell a watermark from none).
# Then: a long transaction holds the watermark and the view names it; a writer's backend
# killed with SIGKILL (a crash restart) and a server restart release what was in flight; a
# transaction prepared before the restart holds the watermarks of its database until it ends.
# majors: 15 19 (the values in flight are the extension's shared memory, the same on every major; the
# oldest and the newest are enough for its run time, pg_regress watermark runs on every major)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap cleanup_with_jobs EXIT

WRITERS=8
ROWS_PER_WRITER=125000

db=$(instance wm "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 7" \
    "gdid.authority = 3" "max_prepared_transactions = 20" "max_connections = 40")
pg_start "$db"
session "$db" <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE wm_events (id snowflake PRIMARY KEY DEFAULT snowflake_next('wm_events'),
                        g gdid NOT NULL UNIQUE DEFAULT gdid_next('wm', 'events'),
                        writer int NOT NULL, n int NOT NULL);
CREATE TABLE wm_done (done boolean NOT NULL);
INSERT INTO wm_done VALUES (false);
-- What each consumer read, committed page by page.
CREATE TABLE seen_sf (id bigint NOT NULL);
CREATE TABLE seen_gd (g gdid NOT NULL);
CREATE TABLE seen_naive (id bigint NOT NULL);
-- The names exist before the consumers start: a watermark never makes a sequence.
INSERT INTO wm_events (writer, n) VALUES (0, 0);
DELETE FROM wm_events;

-- A consumer pages by a mark taken in one statement and read below in the next (whose
-- snapshot is newer), committing each page, and starts the next page at the greater of the
-- two (a mark held at the lowest value reads nothing); it ends with a last page once the
-- writers are done. A mark never moves back but to the lowest value. The naive one reads
-- above the largest ID it has read.
CREATE PROCEDURE consume_sf() LANGUAGE plpgsql AS $$
DECLARE last bigint := 0; mark bigint; finished boolean := false;
BEGIN
    FOR i IN 1..200000 LOOP
        finished := (SELECT done FROM wm_done);
        mark := snowflake_watermark('wm_events');
        IF mark < last AND mark <> 0 THEN
            RAISE 'the watermark moved back from % to %', last, mark;
        END IF;
        INSERT INTO seen_sf SELECT id FROM wm_events WHERE id >= last AND id < mark;
        last := greatest(last, mark);
        COMMIT;
        EXIT WHEN finished;
        PERFORM pg_sleep(0.003);
    END LOOP;
END $$;
CREATE PROCEDURE consume_gd() LANGUAGE plpgsql AS $$
DECLARE last gdid := '0:0:0'; mark gdid; finished boolean := false;
BEGIN
    FOR i IN 1..200000 LOOP
        finished := (SELECT done FROM wm_done);
        mark := gdid_watermark('wm', 'events');
        IF mark < last AND mark <> '0:0:0' THEN
            RAISE 'the watermark moved back from % to %', last, mark;
        END IF;
        INSERT INTO seen_gd SELECT g FROM wm_events WHERE g >= last AND g < mark;
        last := greatest(last, mark);
        COMMIT;
        EXIT WHEN finished;
        PERFORM pg_sleep(0.003);
    END LOOP;
END $$;
CREATE PROCEDURE consume_naive() LANGUAGE plpgsql AS $$
DECLARE last bigint := 0; top bigint; finished boolean := false;
BEGIN
    FOR i IN 1..200000 LOOP
        finished := (SELECT done FROM wm_done);
        INSERT INTO seen_naive SELECT id FROM wm_events WHERE id > last;
        top := (SELECT max(id) FROM seen_naive);
        last := coalesce(top, 0);
        COMMIT;
        EXIT WHEN finished;
        PERFORM pg_sleep(0.003);
    END LOOP;
END $$;
SQL

# Each writer's transactions, from a fixed seed: the committed ones hold ROWS_PER_WRITER rows
# in all; about one in eight more is rolled back; one in ten ends through PREPARE TRANSACTION.
plans="$CLUSTER_ROOT/plans"
mkdir -p "$plans"
python3 - "$plans" "$WRITERS" "$ROWS_PER_WRITER" <<'PY'
import random, sys
out, writers, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for w in range(1, writers + 1):
    rnd = random.Random(w)
    left, n, lines = rows, 0, []
    while left > 0:
        size = min(left, rnd.randint(1, 200))
        fate = rnd.random()
        rollback = fate < 0.12
        prepared = 0.12 <= fate < 0.22 or fate > 0.98
        lines.append("BEGIN;")
        lines.append(f"INSERT INTO wm_events (writer, n) SELECT {w}, g FROM generate_series({n + 1}, {n + size}) g;")
        lines.append(f"SELECT pg_sleep({rnd.random() * 0.01:.4f});")
        if prepared:
            gid = f"w{w}_{n}"
            lines.append(f"PREPARE TRANSACTION '{gid}';")
            lines.append(f"SELECT pg_sleep({rnd.random() * 0.01:.4f});")
            lines.append(("ROLLBACK" if rollback else "COMMIT") + f" PREPARED '{gid}';")
        else:
            lines.append("ROLLBACK;" if rollback else "COMMIT;")
        if not rollback:
            left -= size
        n += size
    with open(f"{out}/writer_{w}.sql", "w") as f:
        f.write("\n".join(lines) + "\n")
PY
chmod -R a+r "$plans"

# psql on the server, bounded by 600 s.
long_psql() {
    timeout 600 "$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$db" -p "$(pg_port_of "$db")" \
        -U postgres -d postgres "$@"
}
consumers=()
for c in sf gd naive; do
    long_psql -c "CALL consume_$c()" >"$CLUSTER_ROOT/consumer_$c.log" 2>&1 &
    consumers+=($!)
done
writers=()
start=$(date +%s)
for w in $(seq 1 "$WRITERS"); do
    long_psql -f "$plans/writer_$w.sql" >/dev/null 2>"$CLUSTER_ROOT/writer_$w.log" &
    writers+=($!)
done
for p in "${writers[@]}"; do
    wait "$p" || { cat "$CLUSTER_ROOT"/writer_*.log; fail "a writer failed"; }
done
echo "writers done in $(($(date +%s) - start)) s"
sql "$db" "UPDATE wm_done SET done = true" >/dev/null
for p in "${consumers[@]}"; do
    wait "$p" || { cat "$CLUSTER_ROOT"/consumer_*.log; fail "a consumer failed"; }
done

expect "$db" "SELECT count(*) FROM wm_events" 1000000
expect "$db" "SELECT count(*) FROM pg_prepared_xacts" 0
# Every committed row read exactly once by each watermark consumer.
expect "$db" "SELECT count(*) FROM seen_sf" 1000000
expect "$db" "SELECT count(DISTINCT id) FROM seen_sf" 1000000
expect "$db" "SELECT count(*) FROM wm_events e WHERE NOT EXISTS (SELECT FROM seen_sf s WHERE s.id = e.id)" 0
expect "$db" "SELECT count(*) FROM seen_gd" 1000000
expect "$db" "SELECT count(DISTINCT g) FROM seen_gd" 1000000
expect "$db" "SELECT count(*) FROM wm_events e WHERE NOT EXISTS (SELECT FROM seen_gd s WHERE s.g = e.g)" 0
# The naive consumer skipped rows committed below an ID it had read.
skipped=$(sql "$db" "SELECT count(*) FROM wm_events e WHERE NOT EXISTS (SELECT FROM seen_naive s WHERE s.id = e.id)")
[ "$skipped" -gt 0 ] || fail "the consumer without a watermark skipped no row: the test cannot tell"
echo "figures: 1000000 committed rows; snowflake watermark consumer read $(sql "$db" "SELECT count(*) FROM seen_sf"), gdid watermark consumer $(sql "$db" "SELECT count(*) FROM seen_gd"), naive consumer skipped $skipped"

# A long transaction holds the watermark at its first ID, and the view names it.
open_session long "$db"
long_pid=$(session_pid long)
send long "BEGIN; INSERT INTO wm_events (writer, n) VALUES (100, 1) RETURNING 'first ' || id;"
wait_until 10 "the long transaction's first ID" grep -q '^first ' "$CLUSTER_ROOT/long.out"
long_first=$(sed -n 's/^first //p' "$CLUSTER_ROOT/long.out")
sql "$db" "INSERT INTO wm_events (writer, n) SELECT 101, g FROM generate_series(1, 100) g" >/dev/null
expect "$db" "SELECT snowflake_watermark('wm_events')" "$long_first"
expect "$db" "SELECT pid || ' ' || first_id || ' ' || prepared FROM snowflake_watermark_holders" "$long_pid $long_first false"
expect "$db" "SELECT (SELECT count(*) FROM wm_events WHERE id < snowflake_watermark('wm_events')) = 1000000" t

# Its backend killed with SIGKILL: the postmaster restarts every process, and nothing is in
# flight afterwards.
kill -KILL "$long_pid"
close_session long
wait_until 60 "the server back after the crash restart" sql_is "$db" "SELECT 1" 1
expect "$db" "SELECT snowflake_watermark('wm_events') > max(id) FROM wm_events" t
expect "$db" "SELECT gdid_watermark('wm', 'events') > max(g) FROM wm_events" t
expect "$db" "SELECT count(*) FROM snowflake_watermark_holders" 0

# A server restart (fast shutdown) ends a transaction in flight; one prepared before the
# restart survives it with nobody knowing its IDs, so it holds the database's watermarks at
# the lowest value until COMMIT PREPARED.
open_session open "$db"
send open "BEGIN; INSERT INTO wm_events (writer, n) VALUES (102, 1);"
session "$db" -c "BEGIN; INSERT INTO wm_events (writer, n) VALUES (103, 1); PREPARE TRANSACTION 'across';"
wait_until 10 "two transactions in flight" sql_is "$db" "SELECT count(*) FROM snowflake_watermark_holders" 2
pg_stop "$db"
close_session open
pg_start "$db"
expect "$db" "SELECT snowflake_watermark('wm_events')" 0
expect "$db" "SELECT prepared::text || ' ' || (sequence IS NULL) || ' ' || (first_id IS NULL) FROM snowflake_watermark_holders" "true true true"
sql "$db" "COMMIT PREPARED 'across'" >/dev/null
expect "$db" "SELECT snowflake_watermark('wm_events') > max(id) FROM wm_events" t
expect "$db" "SELECT count(*) FROM wm_events WHERE writer IN (102, 103)" 1

# After a restart, a first use waiting for a lock while a mark is taken: the mark does not move
# back below the last one (the cache entry exists before it is brought up to its lease), but
# to the lowest value (0) at most, while nobody can say where the sequence stands.
before=$(sql "$db" "SELECT snowflake_watermark('wm_events')")
pg_stop "$db"
pg_start "$db"
open_session x "$db"
send x "BEGIN; ALTER SEQUENCE snowflake.wm_events OWNER TO postgres; SELECT 'locked';"
wait_until 10 "the lock" grep -q '^locked' "$CLUSTER_ROOT/x.out"
open_session a "$db"
send a "BEGIN; SELECT 'first ' || snowflake_next('wm_events');"
open_session c "$db"
send c "SELECT 'mark ' || snowflake_watermark('wm_events');"
wait_until 10 "two sessions waiting for the lock" sql_is "$db" "SELECT count(*) FROM pg_locks WHERE NOT granted" 2
send x "COMMIT;"
wait_until 10 "the mark" grep -q '^mark ' "$CLUSTER_ROOT/c.out"
wait_until 10 "the first ID" grep -q '^first ' "$CLUSTER_ROOT/a.out"
mark=$(sed -n 's/^mark //p' "$CLUSTER_ROOT/c.out")
[ "$mark" = 0 ] || [ "$mark" -ge "$before" ] || fail "the mark moved back from $before to $mark during a first use"
echo "ok: a mark taken during a first use after a restart: $mark (the one before: $before; 0 is the lowest value)"
send a "COMMIT;"
for s in x a c; do close_session "$s"; done
echo "watermark: ok"
