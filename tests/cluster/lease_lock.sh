#!/usr/bin/env bash
# A backend waiting for a lease extension can be cancelled. Extensions of one sequence are
# serialised by one of 64 extension locks (chosen by the sequence's identity): the holder
# writes the new lease with setval and flushes its WAL record while holding it. If the holder
# stalls there (a slow disk, a stuck WAL flush), every backend that needs the same sequence's
# next lease queues behind it; they must still obey statement_timeout and pg_cancel_backend,
# show what they wait for (wait event Extension), and keep their sessions usable.
#
# The stall is made exact with gdb: attached to the holder's backend with a breakpoint on
# setval3_oid (setval, which only the extension calls here), the holder stops inside its
# extension, lock held, until the test lets it go. Then it finishes, and everyone generates.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap cleanup_with_jobs EXIT
command -v gdb >/dev/null || fail "gdb not found (apt-get install gdb)"

db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" \
    "gdid.authority = 1")
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id" -c "SELECT gdid_next('s', 'before')" >/dev/null
# A DEFAULT naming a new sequence makes it, fresh: its first use extends its lease.
pg_psql "$db" -d postgres -qc "CREATE TABLE t (g gdid DEFAULT gdid_next('s', 'held'))"
expect "$db" "SELECT is_called FROM gdid.\"s/held\"" f

# The holder: a session whose backend gdb stops at its first setval.
open_session holder "$db"
holder_pid=$(session_pid holder)
gdb -p "$holder_pid" -batch -nx \
    -ex 'handle all nostop noprint pass' \
    -ex 'break setval3_oid' \
    -ex "shell touch $CLUSTER_ROOT/attached" \
    -ex 'continue' \
    -ex "shell touch $CLUSTER_ROOT/stopped" \
    -ex "shell for i in \$(seq 1 900); do [ -f $CLUSTER_ROOT/release ] && break; sleep 0.1; done" \
    -ex 'delete' \
    -ex 'detach' >"$CLUSTER_ROOT/gdb.log" 2>&1 &
gdb_pid=$!
wait_until 30 "gdb to attach to the holder" test -f "$CLUSTER_ROOT/attached"
send holder "SELECT 'holder ' || gdid_next('s', 'held');"
wait_until 30 "the holder to stop in setval" test -f "$CLUSTER_ROOT/stopped"
grep -q 'setval3_oid' "$CLUSTER_ROOT/gdb.log" || fail "gdb stopped elsewhere: $(cat "$CLUSTER_ROOT/gdb.log")"
echo "holder $holder_pid stopped in setval3_oid, holding the extension lock of gdid.\"s/held\""

# 1. A waiter with a statement timeout gives up on time, and its session goes on.
start=$(date +%s.%N)
out=$(timeout 20 "$PG_BINDIR/psql" -X -qAt -h "$db" -p "$(pg_port_of "$db")" -U postgres -d postgres \
    -c "SET statement_timeout = '500ms'" -c "SELECT gdid_next('s', 'held')" \
    -c "SELECT 'usable after the timeout'" 2>&1 || true)
took=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
grep -q 'ERROR:  canceling statement due to statement timeout' <<<"$out" || fail "no timeout: $out"
grep -q '^usable after the timeout$' <<<"$out" || fail "the session did not go on: $out"
python3 -c "import sys; sys.exit(not $took < 5)" || fail "the timeout took $took s"
echo "statement_timeout 500 ms: gave up after $took s, the session went on"

# 2. A waiter shows the wait event Extension, pg_cancel_backend stops it, its session goes on.
open_session waiter "$db"
waiter_pid=$(session_pid waiter)
send waiter "SELECT 'waiter ' || gdid_next('s', 'held');"
waiting="SELECT wait_event_type || '/' || wait_event FROM pg_stat_activity WHERE pid = $waiter_pid AND state = 'active'"
wait_until 10 "the waiter to show the wait event Extension" sql_is "$db" "$waiting" "Extension/Extension"
echo "waiter $waiter_pid waits: $(sql "$db" "$waiting")"
start=$(date +%s.%N)
expect "$db" "SELECT pg_cancel_backend($waiter_pid)" "t"
wait_until 5 "the cancel" grep -q 'ERROR:  canceling statement due to user request' "$CLUSTER_ROOT/waiter.out"
took=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
send waiter "SELECT 'usable after the cancel';"
wait_until 10 "the cancelled session to go on" grep -q '^usable after the cancel$' "$CLUSTER_ROOT/waiter.out"
echo "pg_cancel_backend: stopped after $took s, the session went on"
grep -q '^waiter ' "$CLUSTER_ROOT/waiter.out" && fail "the cancelled waiter generated"

# 3. A waiter without a timeout waits as long as the holder, then generates.
send waiter "SELECT 'waiter ' || gdid_next('s', 'held');"
wait_until 10 "the waiter to wait again" sql_is "$db" "$waiting" "Extension/Extension"
grep -q '^holder ' "$CLUSTER_ROOT/holder.out" && fail "the holder generated while stopped"
touch "$CLUSTER_ROOT/release"
wait "$gdb_pid" || fail "gdb failed: $(cat "$CLUSTER_ROOT/gdb.log")"
wait_until 10 "the holder to finish" grep -q '^holder ' "$CLUSTER_ROOT/holder.out"
wait_until 10 "the waiter to finish" grep -q '^waiter ' "$CLUSTER_ROOT/waiter.out"
held=$(sed -n 's/^holder //p' "$CLUSTER_ROOT/holder.out")
waited=$(sed -n 's/^waiter //p' "$CLUSTER_ROOT/waiter.out")
echo "released: the holder got $held, the waiter $waited"
expect "$db" "SELECT '$waited'::gdid > '$held'::gdid" t
close_session holder
close_session waiter
# Nothing the timed-out or cancelled calls touched was lost: the sequence goes on above both.
expect "$db" "SELECT gdid_next('s', 'held') > '$waited'::gdid" t
expect "$db" "SELECT gdid_counter(gdid_next('s', 'before')) > 1" t
grep -q 'server process .* was terminated' "$db/server.log" && fail "a backend crashed"
echo "lease_lock: ok"
