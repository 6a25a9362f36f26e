#!/usr/bin/env bash
# The update from release 0.3.0, as the README tells users to do it: a server ran 0.3.0 (its
# leases in $PGDATA/snowflake_id/leases and in WAL records of resource manager 128); the
# package is replaced (here: the same data directory started with the bindir that has the
# current release, scripts/old_release.sh builds 0.3.0 into a private copy of this
# PostgreSQL), the server restarts, and ALTER EXTENSION snowflake_id UPDATE runs in every
# database. Every database was filled by KEYS_FILL (lib.sh) while the 0.3.0 server's clock
# ran 90 s ahead (libfaketime; the current release then starts with the right clock): both
# kinds from DEFAULTs into tables with primary keys, a run-ahead burst that left the
# snowflake sequence and its lease about 10 s further ahead, values handed out and never
# stored, sequences no table names. Proved here:
#
# 1. live: in each of two databases three sessions, connections held open across the update
#    (a pool's), keep trying to insert while the databases are updated one after the other.
#    Until its database is updated every insert is refused with 55000 (the current library
#    does not generate for a 0.3.0 database), afterwards every one succeeds, in the same
#    backend; no other error, no duplicate key, and every key made after the update is above
#    every key and every value handed out before it, per sequence (also those of sequences
#    no table names). The server starts with 0.3.0's configuration, two settings the current
#    release ignores included. Then, after a checkpoint, the
#    lease file is removed (the README's last step) and after a restart generation goes on
#    above everything, without resource manager 128.
# 2. crash: kill -9 of the 0.3.0 server right after it generated, then the current release
#    starts (crash recovery replays 0.3.0's WAL records into the lease file) and the update
#    adopts: nothing repeats. 0.3.0 writes a lease to the file (fsync) before its WAL record,
#    so a crash alone leaves the file current; a second case puts back the file as it was at
#    the last checkpoint (what a base backup taken then holds), so that the leases made since
#    exist only in the WAL, and replay must bring them.
# 3. dump: a pg_dump of a 0.3.0 database (taken with 0.3.0's pg_dump from the 0.3.0 server)
#    restored into a new server of the current release: inserts continue above the restored
#    keys (the fallback, no lease travels in a 0.3.0 dump), no duplicate key.
# majors: 15 18 (release 0.3.0 has no build for 19: a 0.3.0 database reaches 19 through 18;
# 17 lies between the two, whose run time the suite saves)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# On exit, the sessions of case 1 end before cleanup. (Not lib.sh's cleanup_with_jobs: its
# `(exit "$status")` ends the trap under set -e when a test failed, and cleanup never ran.)
end_sessions_then_cleanup() {
    local status=$? pid
    set +e
    for pid in $(jobs -p); do
        pkill -P "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null
    done
    (exit "$status")
    cleanup
}
trap end_sessions_then_cleanup EXIT

new_bin=$PG_BINDIR
start=$SECONDS
old_bin=$(release_bindir 0.3.0) || fail "could not build release 0.3.0"
echo "figures: release 0.3.0 ready in $((SECONDS - start)) s ($old_bin)"
# With two settings 0.3.0 had and the current release ignores, as a 0.3.0 configuration may.
settings=("${KEYS_SETTINGS[@]}" "checkpoint_timeout = '1h'" "max_wal_size = '1GB'"
    "snowflake.max_sequences = 8192" "snowflake.max_sequences_per_database = 256")

# legacy_server NAME DBS...: a new server running 0.3.0 (started), its clock 90 s ahead, each
# of DBS filled by KEYS_FILL; prints its directory.
ahead=(FAKETIME=+90s LD_PRELOAD="$FAKETIME_LIB")
legacy_server() {
    local dir db
    dir=$(PG_BINDIR=$old_bin instance "$1" "${settings[@]}")
    shift
    PG_BINDIR=$old_bin pg_start "$dir" "${ahead[@]}"
    for db in "$@"; do
        PG_BINDIR=$old_bin pg_psql "$dir" -d postgres -qc "CREATE DATABASE $db"
        PG_BINDIR=$old_bin pg_psql "$dir" -d "$db" -q <<<"$KEYS_FILL" || fail "filling $db on 0.3.0 failed"
        [ "$(PG_BINDIR=$old_bin sql "$dir" "SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'" "$db")" = 0.3.0 ] ||
            fail "$db: not at 0.3.0"
    done
    [ -s "$dir/data/snowflake_id/leases" ] || fail "0.3.0 wrote no lease file"
    echo "$dir"
}

# update DIR DB [HOLD]: ALTER EXTENSION snowflake_id UPDATE in DB, its transaction held open
# HOLD seconds more (default 0). Prints how long the update took (ms), when it had run and
# when COMMIT was about to be sent (seconds since the epoch).
update() {
    local t0 t1 t2
    t0=$(date +%s.%N)
    pg_psql "$1" -d "$2" -q -c "BEGIN" -c "ALTER EXTENSION snowflake_id UPDATE" \
        -c "\\set t1 \`date +%s.%N\`" -c "SELECT pg_sleep(${3:-0})" \
        -c "\\set t2 \`date +%s.%N\`" -c "COMMIT" -c "\\echo :t1 :t2" >"$CLUSTER_ROOT/update.out" ||
        fail "ALTER EXTENSION UPDATE in $2 failed"
    read -r t1 t2 <<<"$(tail -n 1 "$CLUSTER_ROOT/update.out")"
    echo "$(python3 -c "print(round(($t1 - $t0) * 1000))") $t1 $t2"
}

## 1. live
dbs=(app1 app2)
live=$(legacy_server live "${dbs[@]}")
for db in "${dbs[@]}"; do
    PG_BINDIR=$old_bin pg_psql "$live" -d "$db" -q <<'SQL'
CREATE FUNCTION attempt() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    keys text;
BEGIN
    WITH o AS (INSERT INTO orders (era) VALUES ('new') RETURNING id),
         i AS (INSERT INTO invoices (era) VALUES ('new') RETURNING id)
    SELECT o.id || ' ' || i.id INTO keys FROM o, i;
    RETURN pg_backend_pid() || ' ' || extract(epoch FROM clock_timestamp()) || ' ok ' || keys;
EXCEPTION WHEN OTHERS THEN
    RETURN pg_backend_pid() || ' ' || extract(epoch FROM clock_timestamp()) || ' error ' || SQLSTATE;
END $$;
SQL
done
# A 0.3.0 dump for case 3, taken now, with 0.3.0's own pg_dump.
"$old_bin/pg_dump" -h "$live" -p "$(pg_port_of "$live")" -U postgres -d app1 >"$CLUSTER_ROOT/app1.sql" ||
    fail "pg_dump of 0.3.0 failed"
PG_BINDIR=$old_bin pg_stop "$live"
pg_start "$live" # the current release, same data directory
grep -q 'registered custom resource manager "snowflake_id" with ID 128' "$live/server.log" ||
    fail "the current release did not register 0.3.0's resource manager, with the lease file present"

# The sessions are connections held open across the update (a pool's), each a psql fed one
# statement every 10 ms: attempt(), which inserts a row into orders and invoices in one
# statement and reports the outcome on one line, "PID TIME ok ID GDID" or "PID TIME error
# SQLSTATE" (an error is caught in the function: the next attempt goes on in the same
# backend).
work=$CLUSTER_ROOT/sessions
mkdir -p "$work"
# session_loop DB N: a session of DB until $work/stop exists (at most 5000 attempts, 90 s);
# its lines go to $work/DB.N.
session_loop() {
    local i deadline=$((SECONDS + 90))
    for ((i = 0; i < 5000 && SECONDS < deadline; i++)); do
        [ -f "$work/stop" ] && break
        echo "SELECT attempt();"
        sleep 0.01
    done | "$new_bin/psql" -X -Atq -h "$live" -p "$(pg_port_of "$live")" -U postgres -d "$1" \
        >>"$work/$1.$2" 2>>"$work/$1.$2.err"
}
# refused_in DB N / ok_in DB N COUNT: what session N of DB has seen so far; for wait_until.
refused_in() { grep -q "^[0-9]* [0-9.]* error " "$work/$1.$2"; }
ok_in() { [ "$(grep -c "^[0-9]* [0-9.]* ok " "$work/$1.$2")" -ge "$3" ]; }

sessions=()
for db in "${dbs[@]}"; do
    for n in 1 2 3; do
        touch "$work/$db.$n"
        session_loop "$db" "$n" &
        sessions+=($!)
    done
done
for db in "${dbs[@]}"; do
    for n in 1 2 3; do
        wait_until 30 "session $n of $db refused before the update" refused_in "$db" "$n"
    done
done
took=()
declare -A window
for db in "${dbs[@]}"; do
    read -r ms altered committed <<<"$(update "$live" "$db" 0.5)"
    took+=("$db $ms ms")
    window[$db]="$altered $committed"
    echo "updated $db while three sessions try to insert into it (its transaction held open 0.5 s more)"
done
for db in "${dbs[@]}"; do
    for n in 1 2 3; do
        wait_until 60 "20 inserts by session $n of $db after the update" ok_in "$db" "$n" 20
    done
done
touch "$work/stop"
wait "${sessions[@]}"

refused=0
inserted=0
during=0
for db in "${dbs[@]}"; do
    for n in 1 2 3; do
        f=$work/$db.$n
        ! grep . "$f.err" || fail "session $n of $db: psql reported an error (above)"
        if grep -v '^[0-9]* [0-9.]* ok \|^[0-9]* [0-9.]* error 55000$' "$f" | head -n 5 | grep .; then
            fail "session $n of $db: an insert failed otherwise than with 55000 (above)"
        fi
        # One backend throughout; refused until its database was updated, then never again.
        [ "$(awk '{print $1}' "$f" | sort -u | wc -l)" = 1 ] || fail "session $n of $db: more than one backend"
        awk '{print $3}' "$f" | uniq | tr '\n' ' ' | grep -qx 'error ok ' ||
            fail "session $n of $db: not refused until the update and then inserting: $(awk '{print $3}' "$f" | uniq -c | tr '\n' ' ')"
        # Refused while the update's transaction was open, from the ALTER to the COMMIT.
        read -r altered committed <<<"${window[$db]}"
        awk -v a="$altered" -v c="$committed" '$2 >= a && $2 < c && $3 == "ok" {exit 1}' "$f" ||
            fail "session $n of $db: inserted before the update committed"
        during=$((during + $(awk -v a="$altered" -v c="$committed" '$2 >= a && $2 < c' "$f" | wc -l)))
        refused=$((refused + $(grep -c ' error ' "$f")))
        inserted=$((inserted + $(grep -c ' ok ' "$f")))
    done
done
echo "ok: $refused inserts refused with 55000 before the update of their database ($during of them while its transaction was open), $inserted inserted after it, each session in one backend throughout; no other error, no duplicate key"
for db in "${dbs[@]}"; do
    keys_check live "$live" "$db" 0
done
echo "figures: ALTER EXTENSION snowflake_id UPDATE while three sessions try to insert: ${took[*]}"

# The README's last step: after a checkpoint the lease file is no longer needed. After a
# restart without it, what the updated sequences make is above what they made before.
pg_psql "$live" -d postgres -qc "CHECKPOINT"
declare -A last
for db in "${dbs[@]}"; do
    last[$db]=$(pg_psql "$live" -d "$db" -Atc "SELECT (SELECT max(id) FROM orders) || ' ' || (SELECT max(id) FROM invoices)")
done
pg_stop "$live"
as_postgres rm -r "$live/data/snowflake_id"
: >"$live/server.log"
pg_start "$live"
! grep -q 'custom resource manager' "$live/server.log" || fail "resource manager 128 registered without the lease file"
for db in "${dbs[@]}"; do
    keys_check "live, restarted without the lease file" "$live" "$db" 1000
    read -r sf g <<<"${last[$db]}"
    expect "$live" "SELECT count(*) FILTER (WHERE id > $sf) || ' ' || (SELECT count(*) FILTER (WHERE id > '$g') FROM invoices) FROM orders" "1000 1000" "$db"
done
pg_stop "$live"

## 2. crash
# crash NAME [file-behind-wal]: a 0.3.0 server filled, killed at once, started with the
# current release, updated.
crash() {
    local dir copy redo ms
    dir=$(PG_BINDIR=$old_bin instance "$1" "${settings[@]}")
    PG_BINDIR=$old_bin pg_start "$dir" "${ahead[@]}"
    PG_BINDIR=$old_bin pg_psql "$dir" -d postgres -qc "CREATE DATABASE app"
    if [ "${2:-}" = file-behind-wal ]; then
        # The file as of a checkpoint before any lease of app was made (0.3.0 makes it, empty,
        # at start).
        PG_BINDIR=$old_bin pg_psql "$dir" -d postgres -qc "CHECKPOINT"
        copy=$dir/leases.at_checkpoint
        as_postgres cp -p "$dir/data/snowflake_id/leases" "$copy" || fail "$1: no lease file to copy"
        redo=$(PG_BINDIR=$old_bin sql "$dir" "SELECT redo_lsn FROM pg_control_checkpoint()")
    fi
    PG_BINDIR=$old_bin pg_psql "$dir" -d app -q <<<"$KEYS_FILL" || fail "$1: filling app on 0.3.0 failed"
    if [ "${2:-}" = file-behind-wal ]; then
        [ "$(PG_BINDIR=$old_bin sql "$dir" "SELECT redo_lsn FROM pg_control_checkpoint()")" = "$redo" ] ||
            fail "$1: a checkpoint came between the copy of the lease file and the crash"
    fi
    pg_kill9 "$dir"
    if [ "${2:-}" = file-behind-wal ]; then
        cmp -s "$copy" "$dir/data/snowflake_id/leases" && fail "$1: the leases did not change after the copy"
        as_postgres cp -p "$copy" "$dir/data/snowflake_id/leases"
    fi
    pg_start "$dir" # the current release: crash recovery
    grep -q 'redo starts' "$dir/server.log" || fail "$1: no crash recovery"
    # Replay wrote 0.3.0's lease records into the file (into the empty one: all of them).
    [ -s "$dir/data/snowflake_id/leases" ] || fail "$1: the lease file is empty after replay"
    read -r ms _ <<<"$(update "$dir" app)"
    echo "$1: the current release recovered from 0.3.0's crash; the update took $ms ms"
    keys_check "$1" "$dir" app 5000
    pg_stop "$dir"
}
crash crash
crash crash_file_behind_wal file-behind-wal

## 3. dump
restored=$(instance restored "${settings[@]}")
pg_start "$restored"
pg_psql "$restored" -d postgres -qc "CREATE DATABASE app1"
pg_psql "$restored" -d app1 -q -f "$CLUSTER_ROOT/app1.sql" >"$CLUSTER_ROOT/restore.log" 2>&1 ||
    { tail -n 20 "$CLUSTER_ROOT/restore.log"; fail "restoring 0.3.0's dump into the current release failed"; }
keys_check "0.3.0 dump restored" "$restored" app1 5000 stored-only
pg_stop "$restored"
echo "figures: update_from_0_3 in $((SECONDS - start)) s"
echo "update_from_0_3: ok"
