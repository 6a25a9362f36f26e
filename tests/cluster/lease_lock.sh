#!/usr/bin/env bash
# A backend waiting for the lease lock can be cancelled. Lease extensions are serialised by
# one lock; if the one holding it stalls in the file system (here: the lease file replaced
# by a FIFO, so that opening it blocks), the others queue behind it. They must still obey
# statement_timeout and pg_cancel_backend, and show what they wait for.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" \
    "gdid.authority = 1")
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id" -c "SELECT gdid_next('s', 'before')" >/dev/null
leases="$db/data/snowflake_id/leases"
cp -p "$leases" "$CLUSTER_ROOT/leases.good"
as_postgres mkfifo "$db/data/snowflake_id/fifo"
mv "$db/data/snowflake_id/fifo" "$leases"

psql_bg() {
    session "$db" -At -c "$1" >"$2" 2>&1 &
}

# The holder: a new sequence needs its first lease; opening the file blocks.
psql_bg "SELECT gdid_next('s', 'holder')" "$CLUSTER_ROOT/holder.out"
holder=$!
wait_until 10 "the holder" \
    sql_is "$db" "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%''holder''%' AND pid <> pg_backend_pid()" 1
holder_pid=$(sql "$db" "SELECT pid FROM pg_stat_activity WHERE query LIKE '%''holder''%' AND pid <> pg_backend_pid()")
# It holds the lease lock while it waits for the FIFO's other end, in the kernel.
wait_until 10 "the holder to block on the lease file" grep -q wait_for_partner "/proc/$holder_pid/wchan"

# A waiter with a statement timeout gives up on time.
start=$(date +%s.%N)
msg=$(timeout 20 "$PG_BINDIR/psql" -X -qAt -h "$db" -p "$(pg_port_of "$db")" -U postgres -d postgres \
    -c "SET statement_timeout = '500ms'" -c "SELECT gdid_next('s', 'timeout')" 2>&1) &&
    fail "generated while the lease lock was held: $msg"
took=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
echo "$msg" | grep -q 'canceling statement due to statement timeout' || fail "unexpected: $msg"
python3 -c "import sys; sys.exit(not $took < 5)" || fail "the timeout took $took s"
echo "statement_timeout 500 ms: gave up after $took s: $msg"

# A waiter shows the wait, and pg_cancel_backend stops it.
psql_bg "SELECT gdid_next('s', 'cancelled')" "$CLUSTER_ROOT/cancelled.out"
waiter=$!
waiting="SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%''cancelled''%' AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()"
wait_until 10 "the waiter to show an Extension wait" sql_is "$db" "$waiting" 1
pid=$(sql "$db" "SELECT pid FROM pg_stat_activity WHERE query LIKE '%''cancelled''%' AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()")
echo "waiter $pid: $(sql "$db" "SELECT wait_event_type || '/' || wait_event FROM pg_stat_activity WHERE pid = $pid")"
start=$(date +%s.%N)
expect "$db" "SELECT pg_cancel_backend($pid)" "t"
wait "$waiter" && fail "the cancelled call succeeded"
took=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
grep -q 'canceling statement due to user request' "$CLUSTER_ROOT/cancelled.out" ||
    fail "unexpected: $(cat "$CLUSTER_ROOT/cancelled.out")"
python3 -c "import sys; sys.exit(not $took < 5)" || fail "the cancel took $took s"
echo "pg_cancel_backend: stopped after $took s: $(cat "$CLUSTER_ROOT/cancelled.out")"

# Unblock the holder: its write to the FIFO fails (58030), nothing is handed out, the lock
# is released; with the file back, generation goes on.
timeout 10 cat "$leases" >/dev/null || true
wait "$holder" && fail "the holder generated without a lease file"
grep -q 'could not write lease file' "$CLUSTER_ROOT/holder.out" || fail "unexpected: $(cat "$CLUSTER_ROOT/holder.out")"
echo "holder: $(cat "$CLUSTER_ROOT/holder.out")"
mv "$CLUSTER_ROOT/leases.good" "$leases"
expect "$db" "SELECT gdid_counter(gdid_next('s', 'after')) = 1" "t"
expect "$db" "SELECT gdid_counter(gdid_next('s', 'before')) > 1" "t"
echo "lease_lock: ok"
