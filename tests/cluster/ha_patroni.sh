#!/usr/bin/env bash
# Failover under a real HA manager: Patroni 3.0 (Debian's patroni) with a single etcd 3.4
# member (etcd-server), two members on loopback, the extension preloaded and one node number
# and authority between them, all from postgresql.parameters of the dynamic configuration (a
# replica takes its leader's place). Two clients insert without pause with DEFAULT
# snowflake_next(...) and DEFAULT gdid_next(...) through a multi-host connection string
# (target_session_attrs=read-write), each keeping the keys its committed inserts returned.
#  1. kill -9 of the leader (its Patroni and its postmaster): once the leader key expires the
#     synchronous standby is promoted, the clients reconnect and go on (time from the kill to
#     the first insert);
#  2. the old leader's Patroni starts again: it rejoins as a replica (pg_rewind) and, while
#     one, refuses to generate (25006);
#  3. a planned switchover (patronictl switchover) makes it leader again; it generates above
#     everything.
# With synchronous_mode: true no key returned to a client is ever returned again, none is
# repeated in the table, each client's keys increase throughout. (Patroni's synchronous_mode,
# unlike synchronous_mode_strict, is asynchronous while the leader has no healthy replica:
# after the kill until the old leader is back, after the switchover until node2 follows.)
#  4. Then asynchronous (synchronous_mode: false) and the same kill: the keys returned before
#     the kill that are missing afterwards, and those handed out again, are counted, not
#     asserted (the guarantee holds only with synchronous replication).
# majors: 15 19 (the manager's side does not depend on the major: the oldest and the newest)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

command -v patroni >/dev/null || fail "patroni not found (apt-get install patroni)"
command -v etcd >/dev/null || fail "etcd not found (apt-get install etcd-server)"
R="$CLUSTER_ROOT/patroni"
mkdir -p "$R" && chown postgres: "$R"
declare -A port api session
for n in node1 node2; do port[$n]=$(free_port); api[$n]=$(free_port); done
etcd_port=$(free_port)
etcd_peer=$(free_port)
stop_all() {
    local status=$? n pid sid
    if [ "$status" != 0 ]; then
        for n in etcd node1 node2; do
            [ -f "$R/$n.log" ] && { echo "--- $n.log (end)"; tail -n 40 "$R/$n.log"; }
        done
    fi
    touch "$R/stop"
    ha_kill_clients
    # Patroni and etcd each run in a session of their own; Patroni's postmaster runs in yet
    # another (Patroni starts it through a child that calls setsid), so it goes by its pid
    # file and its session.
    for n in "${!session[@]}"; do kill -KILL -- "-${session[$n]}" 2>/dev/null || true; done
    for n in node1 node2; do
        kill_postmaster "$n"
    done
    wait_until 30 "the managers and servers gone" no_process_left || true
    cleanup
}
trap stop_all EXIT

# The DCS: one etcd member, v3 API (Patroni's etcd3, since etcd 3.4 serves v2 only on request).
start_etcd

# config NODE: the member's Patroni configuration. The bootstrap section only counts for the
# member that initialises the cluster; it becomes the dynamic configuration every member
# follows. ttl 10 and loop_wait 1: a dead leader's key expires within 10 s.
config() {
    cat >"$R/$1.yml" <<YAML
scope: snowflake
name: $1
restapi:
  listen: 127.0.0.1:${api[$1]}
  connect_address: 127.0.0.1:${api[$1]}
etcd3:
  hosts: 127.0.0.1:$etcd_port
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 5
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        shared_preload_libraries: 'snowflake_id'
        snowflake.node_id: 7
        gdid.authority: 7
        wal_log_hints: 'on'
        max_connections: 40
        shared_buffers: 128MB
  initdb:
    - encoding: UTF8
postgresql:
  listen: 127.0.0.1:${port[$1]}
  connect_address: 127.0.0.1:${port[$1]}
  data_dir: $R/$1/data
  bin_dir: $PG_BINDIR
  pgpass: $R/$1/pgpass
  # A replica's base backup otherwise waits for a spread checkpoint (16 s here).
  basebackup:
    - checkpoint: fast
  authentication:
    superuser:
      username: postgres
    replication:
      username: replicator
    rewind:
      username: postgres
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: '$R/$1'
YAML
    mkdir -p "$R/$1" && chown postgres: "$R/$1" "$R/$1.yml" && chmod 700 "$R/$1"
}
# run NODE: its Patroni, in the background, in a session of its own.
run() {
    setsid runuser -u postgres -- patroni "$R/$1.yml" >>"$R/$1.log" 2>&1 &
    session[$1]=$!
    disown  # killed on purpose; the shell need not report it
}
# Patroni's health endpoints: 200 for the leader (/primary), a running replica (/replica),
# the synchronous standby (/sync).
is() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${api[$1]}/$2")" = 200 ]; }
ctl() { patronictl -c "$R/node1.yml" "$@"; }
psql1() { "$PG_BINDIR/psql" -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${port[$1]}" -U postgres -d postgres "${@:2}"; }
preloaded() { [ "$(psql1 "$1" -Atq -c "SHOW shared_preload_libraries" 2>/dev/null)" = "snowflake_id" ]; }
sync_names() { psql1 "$1" -Atq -c "SHOW synchronous_standby_names"; }

config node1
config node2
run node1
wait_until 90 "node1 leader" is node1 primary
wait_until 30 "node1 with the extension preloaded" preloaded node1
psql1 node1 -q -c "CREATE EXTENSION snowflake_id" -c "$HA_ORDERS"
run node2
wait_until 120 "node2 the synchronous standby" is node2 sync
sync_on() { [ "$(sync_names "$1")" = "$2" ]; }
wait_until 30 "node1 waiting for node2" sync_on node1 node2
echo "ok: etcd, node1 leader, node2 synchronous standby (synchronous_standby_names = $(sync_names node1); node_id $(psql1 node2 -Atq -c 'SHOW snowflake.node_id'))"

HA_DSN="host=127.0.0.1,127.0.0.1 port=${port[node1]},${port[node2]} user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2"
HA_DIR=$R
ha_start_clients
wait_until 30 "inserts" lines_at_least 100 "$R/client.1" "$R/client.2"
phase1=$(ha_committed)

# kill_leader NODE: kill -9 of its Patroni and its postmaster (the whole session Patroni
# started it in, so no backend outlives it); prints the time.
kill_leader() {
    kill -KILL -- "-${session[$1]}"
    unset "session[$1]"
    kill_postmaster "$1"
    date +%s.%N
}
# down NODE: nothing answers on its port (a leader left running would take the clients'
# inserts and make the failover look instant).
down() { ! "$PG_BINDIR/pg_isready" -q -h 127.0.0.1 -p "${port[$1]}"; }

# 1. The leader dies.
before_kill=$(ha_committed)
killed=$(kill_leader node1)
wait_until 5 "node1's server gone" down node1
wait_until 90 "an insert through the new leader" ha_inserts_after "$killed" 1
failover=$(ha_first_after "$killed")
echo "figures: kill -9 of the leader: first committed insert through the new leader after ${failover} s ($before_kill inserts before; ttl 10 s, loop_wait 1 s)"
wait_until 30 "node2 the leader" is node2 primary
phase2_start=$(ha_committed)

# 2. The old leader comes back: a replica, which refuses to generate.
run node1
wait_until 180 "node1 a replica" is node1 replica
# answer CALL: node1's answer to SELECT CALL, its SQLSTATE last ("00000": it generated), in
# $answer; fails while node1 does not answer, since Patroni may yet restart a member it has
# just reported as a replica (to rewind it).
answer() {
    answer=$(psql1 node1 -Atq -v ON_ERROR_STOP=0 -c "SELECT $1" -c '\echo :LAST_ERROR_SQLSTATE' 2>&1)
}
wait_until 60 "node1 answering" answer "snowflake_next('orders')"
[ "$(tail -n 1 <<<"$answer")" = 25006 ] && grep -q "during recovery" <<<"$answer" ||
    fail "node1 as a replica: snowflake_next gave $answer"
wait_until 60 "node1 answering" answer "gdid_next('shop', 'orders')"
[ "$(tail -n 1 <<<"$answer")" = 25006 ] || fail "node1 as a replica: gdid_next gave $answer, not 25006"
# Patroni rewinds only when node1's WAL went past the point node2 was promoted at, which with
# synchronous replication is often not the case.
rewind="no pg_rewind needed"
grep -q "pg_rewind exit code=0" "$R/node1.log" && rewind="after pg_rewind"
echo "ok: node1 rejoined as a replica ($rewind) and refuses to generate (25006)"
phase2=$(($(ha_committed) - phase2_start))

# 3. A planned switchover: node1 leader again. Patroni switches over only to the synchronous
# standby in synchronous mode.
wait_until 60 "node1 the synchronous standby" is node1 sync
before_switch=$(ha_committed)
switched_at=$(date +%s.%N)
ctl switchover --leader node2 --candidate node1 --force >>"$R/switchover.log" 2>&1 || { tail "$R/switchover.log"; fail "switchover failed"; }
wait_until 60 "node1 the leader" is node1 primary
# Patroni's synchronous_mode (not _strict) turns synchronous replication off while the leader
# has no healthy standby, as after the switchover until node2 follows node1: the check below
# covers inserts made once it is on again.
wait_until 60 "node2 the synchronous standby again" is node2 sync
wait_until 30 "node1 waiting for node2" sync_on node1 node2
resynced_at=$(date +%s.%N)
echo "figures: switchover: node1 leader, node2 its synchronous standby after $(python3 -c "print(round($resynced_at - $switched_at, 1))") s"
wait_until 60 "inserts through node1" ha_inserts_after "$resynced_at" 50
ha_stop_clients
phase3=$(($(ha_committed) - before_switch))
total=$(ha_committed)

# Every key returned once, in the table once, each client's keys increasing.
ha_check_returned "${port[node1]}"
echo "ok: $total keys returned, each once, all in orders, each client's increasing"
echo "figures: synchronous: $total committed inserts, none repeated (phase 1: $phase1; during the failover and node1's return: $phase2; switchover and after: $phase3); failover ${failover} s"

# 4. Asynchronous: the same kill with synchronous_mode off.
ctl edit-config --set synchronous_mode=false --force >>"$R/edit-config.log" 2>&1 || { tail "$R/edit-config.log"; fail "could not turn synchronous_mode off"; }
wait_until 30 "asynchronous replication" sync_on node1 ""
wait_until 30 "node2 an asynchronous replica" is node2 async
ha_start_clients
wait_until 30 "inserts" lines_at_least 200 "$R/client.1" "$R/client.2"
killed=$(kill_leader node1)
wait_until 5 "node1's server gone" down node1
wait_until 90 "inserts through the promoted asynchronous replica" ha_inserts_after "$killed" 100
ha_stop_clients
ha_asynchronous_figures "$killed" "${port[node2]}"
echo "ha_patroni: ok"
