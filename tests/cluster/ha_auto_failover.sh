#!/usr/bin/env bash
# Failover under a real HA manager: pg_auto_failover 2.0 (Debian's postgresql-15-auto-failover
# and pg-auto-failover-cli), a monitor and two data nodes on loopback, the data nodes with the
# extension preloaded and one node number and authority between them (a standby takes its
# primary's place). Two clients insert without pause with DEFAULT snowflake_next(...) and
# DEFAULT gdid_next(...) through a multi-host connection string
# (target_session_attrs=read-write), each keeping the keys its committed inserts returned.
#  1. kill -9 of the primary (its pg_autoctl and its postmaster): the monitor promotes the
#     standby, the clients reconnect and go on (time from the kill to the first insert);
#  2. the old primary's pg_autoctl starts again: it rejoins as a standby and, while one,
#     refuses to generate (25006);
#  3. a planned switchover (pg_autoctl perform switchover) makes it primary again; it
#     generates above everything.
# Synchronous replication, pg_auto_failover's default: no key returned to a client is ever
# returned again, none is repeated in the tables, each client's keys increase throughout.
#  4. Then asynchronous (the standby out of the replication quorum) and the same kill: the
#     keys returned before the kill that the new primary hands out again are counted, not
#     asserted (the guarantee holds only with synchronous replication).
# majors: 15 (pg_auto_failover is packaged for Debian's PostgreSQL 15 only)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

command -v pg_autoctl >/dev/null || fail "pg_autoctl not found (apt-get install pg-auto-failover-cli)"
R="$CLUSTER_ROOT/pgaf"
mkdir -p "$R" && chown postgres: "$R"
export XDG_CONFIG_HOME="$R/config" XDG_DATA_HOME="$R/state" XDG_RUNTIME_DIR="$R/run"
# autoctl ARGS...: pg_autoctl as postgres, with this test's configuration directories.
autoctl() {
    as_postgres env XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME" \
        XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" PATH="$PG_BINDIR:$PATH" pg_autoctl "$@"
}
declare -A port keeper
for n in monitor node1 node2; do port[$n]=$(free_port); done
stop_all() {
    local status=$? n pid
    if [ "$status" != 0 ]; then
        for n in monitor node1 node2; do
            [ -f "$R/$n.log" ] && { echo "--- $n.log (end)"; tail -n 30 "$R/$n.log"; }
        done
    fi
    touch "$R/stop"
    ha_kill_clients
    # Each pg_autoctl runs in a session of its own: its services rename themselves
    # ("pg_autoctl: start/stop postgres") and restart Postgres, so the whole group goes.
    for n in "${!keeper[@]}"; do kill -KILL -- "-${keeper[$n]}" 2>/dev/null || true; done
    for n in monitor node1 node2; do
        pid=$(head -n 1 "$R/$n/postmaster.pid" 2>/dev/null || true)
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    done
    wait_until 30 "the managers and servers gone" no_process_left || true
    cleanup
}
# no_process_left: nothing of this test's pg_autoctl sessions or servers runs.
no_process_left() {
    local n
    for n in "${!keeper[@]}"; do pgrep -s "${keeper[$n]}" >/dev/null && return 1; done
    ! pgrep -f -- "-D $R/" >/dev/null
}
trap stop_all EXIT
# run NODE: its pg_autoctl service, in the background.
run() {
    setsid runuser -u postgres -- env XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME" \
        XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" PATH="$PG_BINDIR:$PATH" pg_autoctl run --pgdata "$R/$1" >>"$R/$1.log" 2>&1 &
    keeper[$1]=$!
    disown  # killed on purpose; the shell need not report it
}
# state NODE: the state the monitor reports for NODE.
state() {
    autoctl show state --pgdata "$R/monitor" --json 2>/dev/null |
        python3 -c "import json, sys; print(next((n['current_group_state'] for n in json.load(sys.stdin) if n['nodename'] == '$1'), ''))"
}
is_state() { [ "$(state "$1")" = "$2" ]; }
# writable NODE: the monitor reports NODE as the primary, with its standby or waiting for one.
writable() { is_state "$1" primary || is_state "$1" wait_primary; }

autoctl create monitor --pgdata "$R/monitor" --pgport "${port[monitor]}" --hostname 127.0.0.1 \
    --auth trust --no-ssl --pgctl "$PG_BINDIR/pg_ctl" >"$R/monitor.log" 2>&1 || { tail "$R/monitor.log"; fail "no monitor"; }
# Failover within seconds rather than the default's tens of seconds.
cat >>"$R/monitor/postgresql.conf" <<CONF
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 3000
pgautofailover.primary_demote_timeout = 5000
CONF
run monitor
monitor_uri="postgres://autoctl_node@127.0.0.1:${port[monitor]}/pg_auto_failover?sslmode=disable"
wait_until 30 "the monitor" autoctl show state --pgdata "$R/monitor"

# node NAME: a data node registered with the monitor; the first one is the primary, the
# second its standby (pg_basebackup, so it has the first one's settings).
node() {
    autoctl create postgres --pgdata "$R/$1" --pgport "${port[$1]}" --hostname 127.0.0.1 --name "$1" \
        --monitor "$monitor_uri" --auth trust --no-ssl --pgctl "$PG_BINDIR/pg_ctl" >>"$R/$1.log" 2>&1 ||
        { tail "$R/$1.log"; fail "$1 was not created"; }
}
node node1
cat >>"$R/node1/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_stat_statements, snowflake_id'
snowflake.node_id = 7
gdid.authority = 7
CONF
run node1
psql1() { "$PG_BINDIR/psql" -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${port[$1]}" -U postgres -d postgres "${@:2}"; }
preloaded() { [ "$(psql1 "$1" -Atq -c "SHOW shared_preload_libraries" 2>/dev/null)" = "pg_stat_statements, snowflake_id" ]; }
wait_until 60 "node1 single" is_state node1 single
wait_until 60 "node1 with the extension preloaded" preloaded node1
psql1 node1 -q -c "CREATE EXTENSION snowflake_id" -c "$HA_ORDERS"
node node2
run node2
wait_until 120 "node2 secondary" is_state node2 secondary
wait_until 30 "node1 primary" is_state node1 primary
echo "ok: monitor, node1 primary, node2 secondary ($(psql1 node1 -Atc "SHOW synchronous_standby_names"))"

HA_DSN="host=127.0.0.1,127.0.0.1 port=${port[node1]},${port[node2]} user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2"
HA_DIR=$R
ha_start_clients
wait_until 30 "inserts" lines_at_least 100 "$R/client.1" "$R/client.2"
phase1=$(ha_committed)

# 1. The primary dies.
before_kill=$(ha_committed)
kill_primary() {
    local pid
    pid=$(head -n 1 "$R/node1/postmaster.pid" 2>/dev/null || true)
    kill -KILL -- "-${keeper[node1]}"
    unset 'keeper[node1]'
    [ -n "$pid" ] && { kill -KILL "$pid" 2>/dev/null || true; pkill -KILL -P "$pid" 2>/dev/null || true; }
    date +%s.%N
}
killed=$(kill_primary)
wait_until 90 "an insert through the new primary" ha_inserts_after "$killed" 1
failover=$(ha_first_after "$killed")
echo "figures: kill -9 of the primary: first committed insert through the new primary after ${failover} s ($before_kill inserts before)"
wait_until 60 "node2 the primary" writable node2
phase2_start=$(ha_committed)

# 2. The old primary comes back: a standby, which refuses to generate.
run node1
wait_until 120 "node1 secondary" is_state node1 secondary
refusal=$("$PG_BINDIR/psql" -X -Atq -h 127.0.0.1 -p "${port[node1]}" -U postgres -d postgres \
    -c "SELECT snowflake_next('orders')" 2>&1 || true)
grep -q "during recovery" <<<"$refusal" || fail "node1 generated while a standby: $refusal"
code=$(psql1 node1 -Atq -v ON_ERROR_STOP=0 -c "SELECT gdid_next('shop', 'orders')" -c '\echo :LAST_ERROR_SQLSTATE' 2>/dev/null | tail -n 1)
[ "$code" = 25006 ] || fail "node1 as a standby: gdid_next gave $code, not 25006"
echo "ok: node1 rejoined as a standby and refuses to generate (25006)"
phase2=$(($(ha_committed) - phase2_start))

# 3. A planned switchover: node1 primary again. The monitor takes it only once node2 is
# "primary" (not "wait_primary"), which follows node1's return by a health check or two.
wait_until 60 "node2 primary with node1 its standby" is_state node2 primary
before_switch=$(ha_committed)
switched_at=$(date +%s.%N)
autoctl perform switchover --pgdata "$R/monitor" >>"$R/switchover.log" 2>&1 || { tail "$R/switchover.log"; fail "switchover failed"; }
wait_until 60 "node1 primary" is_state node1 primary
wait_until 60 "inserts through node1" ha_inserts_after "$switched_at" 50
ha_stop_clients
phase3=$(($(ha_committed) - before_switch))
total=$(ha_committed)

# Every key returned once, in the table once, each client's keys increasing.
ha_check_returned "${port[node1]}"
echo "figures: synchronous: $total committed inserts, none repeated (phase 1: $phase1; during the failover and node1's return: $phase2; switchover and after: $phase3); failover ${failover} s"

# 4. Asynchronous: node2 (now the standby) out of the replication quorum, the same kill.
autoctl set node replication-quorum false --pgdata "$R/node2" >>"$R/node2.log" 2>&1 || fail "could not make node2 asynchronous"
asynchronous() { [ -z "$(psql1 node1 -Atq -c 'SHOW synchronous_standby_names')" ]; }
wait_until 30 "asynchronous replication" asynchronous
ha_start_clients
wait_until 30 "inserts" lines_at_least 200 "$R/client.1" "$R/client.2"
killed=$(kill_primary)
wait_until 90 "inserts through the promoted asynchronous standby" ha_inserts_after "$killed" 100
ha_stop_clients
ha_asynchronous_figures "$killed" "${port[node2]}"
echo "ha_auto_failover: ok"
