#!/usr/bin/env bash
# A registry kept available by an HA manager, failed over while the servers that claimed from
# it generate: nothing stops. The registry is a Patroni 3.0 cluster (one etcd 3.4 member, two
# members on loopback, synchronous_mode, ttl 10 s, loop_wait 1 s, as ha_patroni.sh); two
# servers claim from it with the default lease settings (snowflake.claim_lease 10 min,
# claim_clock_error 1 s), through a multi-host connection string that takes the read-write
# member (target_session_attrs=read-write) and holds no password (a passfile, scram-sha-256).
#  1. Both servers claim distinct numbers and generate without pause, each in a loop that
#     records every value and every refusal.
#  2. kill -9 of the registry's leader (its Patroni and its postmaster): Patroni promotes the
#     synchronous replica once the leader key expires. Meanwhile neither server fails a call
#     (up to 0.4.0, with its 10 s lease, both stopped: the failover takes longer).
#  3. Both renew their claims on the promoted member (the same registry: its system
#     identifier and database), and a third server claims from it a number of its own.
#  4. The old leader rejoins as a replica; nothing the three servers made repeats.
# majors: 15 (the manager's side does not depend on the major; one is enough for its run time)
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
LOOPS=()
stop_all() {
    local status=$? n pid
    set +e
    if [ "$status" != 0 ]; then
        for n in etcd node1 node2; do
            [ -f "$R/$n.log" ] && { echo "--- $n.log (end)"; tail -n 40 "$R/$n.log"; }
        done
    fi
    for pid in "${LOOPS[@]}"; do
        pkill -P "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null
    done
    # Patroni and etcd each run in a session of their own; Patroni's postmaster in yet another
    # (Patroni starts it through a child that calls setsid): it goes by its pid file.
    for n in "${!session[@]}"; do kill -KILL -- "-${session[$n]}" 2>/dev/null; done
    for n in node1 node2; do kill_postmaster "$n"; done
    wait_until 30 "the managers and servers gone" no_process_left
    (exit "$status")
    cleanup
}
trap stop_all EXIT

start_etcd

# config NODE: the member's Patroni configuration; the registry's members generate nothing
# themselves, but carry the extension (its functions and table) like any registry.
config() {
    cat >"$R/$1.yml" <<YAML
scope: registry
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
        snowflake.node_id: 1000
        gdid.authority: 15
        wal_log_hints: 'on'
        max_connections: 40
        shared_buffers: 128MB
        password_encryption: scram-sha-256
  initdb:
    - encoding: UTF8
postgresql:
  listen: 127.0.0.1:${port[$1]}
  connect_address: 127.0.0.1:${port[$1]}
  data_dir: $R/$1/data
  bin_dir: $PG_BINDIR
  pgpass: $R/$1/pgpass
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
    - host all claims 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: '$R/$1'
YAML
    mkdir -p "$R/$1" && chown postgres: "$R/$1" "$R/$1.yml" && chmod 700 "$R/$1"
}
run() {
    setsid runuser -u postgres -- patroni "$R/$1.yml" >>"$R/$1.log" 2>&1 &
    session[$1]=$!
    disown
}
is() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${api[$1]}/$2")" = 200 ]; }
psql1() { "$PG_BINDIR/psql" -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${port[$1]}" -U postgres -d postgres "${@:2}"; }
preloaded() { [ "$(psql1 "$1" -Atq -c "SHOW shared_preload_libraries" 2>/dev/null)" = "snowflake_id" ]; }

config node1
config node2
run node1
wait_until 90 "node1 leader" is node1 primary
wait_until 30 "node1 with the extension preloaded" preloaded node1
psql1 node1 -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE ROLE claims LOGIN PASSWORD 'claims-secret';
GRANT EXECUTE ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval),
    snowflake_registry_renew(text, text, text, integer, interval, interval),
    snowflake_registry_release(text, text, text, integer, interval),
    snowflake_registry_release(text, text, text, integer, interval, bigint) TO claims;
SQL
run node2
wait_until 120 "node2 the synchronous standby" is node2 sync
echo "ok: etcd, the registry's leader node1 and its synchronous standby node2"

# The claiming servers: the default lease settings, no password in the setting.
PASSFILE=$CLUSTER_ROOT/pgpass
{
    echo "127.0.0.1:${port[node1]}:postgres:claims:claims-secret"
    echo "127.0.0.1:${port[node2]}:postgres:claims:claims-secret"
} >"$PASSFILE"
chown postgres: "$PASSFILE" && chmod 600 "$PASSFILE"
REGISTRY="host=127.0.0.1,127.0.0.1 port=${port[node1]},${port[node2]} dbname=postgres user=claims passfile=$PASSFILE target_session_attrs=read-write connect_timeout=2"
claimant() {
    instance "$1" "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
        "gdid.authority = auto" "snowflake.registry = '$REGISTRY'"
}
held() { sql_is "$1" "SELECT count(*) FROM snowflake_node_claims WHERE state = 'held'" 2; }
numbers() { sql "$1" "SELECT string_agg(number::text, ' ' ORDER BY kind DESC) FROM snowflake_node_claims"; }

TABLES=$GENERATING_TABLES
LOOP=$(generating_loop "240" 0.005)
generate() {
    sql "$1" "$TABLES" >/dev/null
    timeout 300 "$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$1" -p "$(pg_port_of "$1")" -U postgres -d postgres \
        -c "SET synchronous_commit = off" -c "$LOOP" >"$1/loop.log" 2>&1 &
    LOOPS+=($!)
}
made_after() { sql_is "$1" "SELECT count(*) >= $3 FROM made WHERE at > to_timestamp($2)" t; }

echo "--- 1. two servers claim and generate"
s1=$(claimant s1)
s2=$(claimant s2)
for s in "$s1" "$s2"; do pg_start "$s"; sql "$s" "CREATE EXTENSION snowflake_id" >/dev/null; done
for s in "$s1" "$s2"; do wait_until 20 "$(basename "$s") to hold its numbers" held "$s"; done
echo "s1: $(numbers "$s1"), s2: $(numbers "$s2") (node authority)"
[ "$(numbers "$s1" | cut -d' ' -f1)" != "$(numbers "$s2" | cut -d' ' -f1)" ] || fail "s1 and s2 share a node number"
[ "$(numbers "$s1" | cut -d' ' -f2)" != "$(numbers "$s2" | cut -d' ' -f2)" ] || fail "s1 and s2 share an authority"
expect "$s1" "SELECT round(extract(epoch FROM lease_end - last_renewal)) FROM snowflake_node_claims WHERE kind = 'snowflake node'" 600
generate "$s1"
generate "$s2"
start=$(date +%s.%N)
for s in "$s1" "$s2"; do wait_until 10 "$(basename "$s") to generate" made_after "$s" "$start" 200; done

echo "--- 2. the registry's leader killed"
killed=$(date +%s.%N)
kill -KILL -- "-${session[node1]}"
unset "session[node1]"
kill_postmaster node1
wait_until 90 "node2 the registry's leader" is node2 primary
promoted=$(date +%s.%N)
echo "figures: the registry's failover: node2 leader $(python3 -c "print(round($promoted - $killed, 1))") s after the kill"

echo "--- 3. renewals on the new leader, and a new server"
# Renewed every 30 s with the default lease.
renewed_after() {
    sql_is "$1" "SELECT bool_and(last_renewal > to_timestamp($2)) FROM snowflake_node_claims" t
}
for s in "$s1" "$s2"; do wait_until 60 "$(basename "$s") to renew on node2" renewed_after "$s" "$promoted"; done
renewed=$(date +%s.%N)
s3=$(claimant s3)
pg_start "$s3"
sql "$s3" "CREATE EXTENSION snowflake_id" >/dev/null
wait_until 20 "s3 to claim from node2" held "$s3"
generate "$s3"
wait_until 10 "s3 to generate" made_after "$s3" "$promoted" 200
echo "s3: $(numbers "$s3")"

echo "--- 4. the old leader back as a replica"
run node1
wait_until 180 "node1 a replica" is node1 replica
for s in "$s1" "$s2" "$s3"; do sql "$s" "UPDATE control SET stop = true" >/dev/null; done
for pid in "${LOOPS[@]}"; do wait "$pid" || fail "a generating loop failed"; done
LOOPS=()
for s in "$s1" "$s2" "$s3"; do
    expect "$s" "SELECT count(*) FROM refused" 0
    gap=$(sql "$s" "SELECT round(extract(epoch FROM max(gap)) * 1000) FROM (SELECT at - lag(at) OVER (ORDER BY at) gap FROM made) g")
    [ "$gap" -lt 1000 ] || fail "$(basename "$s") paused $gap ms"
    echo "$(basename "$s"): $(sql "$s" "SELECT count(*) FROM made") values, longest pause $gap ms, no call failed"
done
psql1 node2 -q -c "CREATE TABLE all_made (id bigint, g gdid)"
for s in "$s1" "$s2" "$s3"; do
    sql "$s" "COPY (SELECT id, g FROM made) TO STDOUT" | psql1 node2 -q -c "\\copy all_made FROM STDIN"
done
[ "$(psql1 node2 -Atq -c "SELECT count(*) - count(DISTINCT id) FROM all_made")" = 0 ] || fail "a snowflake ID repeats"
[ "$(psql1 node2 -Atq -c "SELECT count(*) - count(DISTINCT g) FROM all_made")" = 0 ] || fail "a gdid repeats"
during=$(for s in "$s1" "$s2"; do sql "$s" "SELECT count(*) FROM made WHERE at BETWEEN to_timestamp($killed) AND to_timestamp($promoted)"; done | awk '{n += $1} END {print n}')
echo "figures: registry failed over by Patroni (kill -9 of its leader, new leader after $(python3 -c "print(round($promoted - $killed, 1))") s, renewals on it $(python3 -c "print(round($renewed - $killed, 1))") s after the kill): s1 and s2 made $during values during the failover, none refused; $(psql1 node2 -Atq -c "SELECT count(*) FROM all_made") values of three servers, none repeated"
echo "registry_failover: ok"
