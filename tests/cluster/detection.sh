#!/usr/bin/env bash
# Servers that share a node number or an authority are noticed where their values meet, with
# no set-up beyond the publications and subscriptions themselves: a hub subscribed to four
# publishers reports, within seconds, two of them with one snowflake.node_id (generating
# under different sequence names, so no key has collided yet), two with one gdid.authority,
# and one whose node number is the hub's own: a WARNING in the hub's log and a row of
# snowflake_node_conflicts each. snowflake.refuse_shared_node then stops the hub's own
# generation. A cascade and a failover to a promoted standby (old primary gone, a new
# subscription) stay silent.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

TABLE="(id snowflake PRIMARY KEY DEFAULT snowflake_next('%s'), g gdid NOT NULL UNIQUE DEFAULT gdid_next('shop', '%s'), at timestamptz DEFAULT clock_timestamp())"
port=55570
# node NAME NODE_ID AUTHORITY: a server whose table t_NAME is published as pub_NAME.
node() {
    port=$((port + 1))
    pg_init "$CLUSTER_ROOT/$1" $port "shared_preload_libraries = 'snowflake_id'" \
        "snowflake.node_id = $2" "gdid.authority = $3" "wal_level = logical" \
        "wal_sender_timeout = '5s'" "wal_receiver_timeout = '5s'"
    pg_start "$CLUSTER_ROOT/$1"
    # shellcheck disable=SC2059
    pg_psql "$CLUSTER_ROOT/$1" -d postgres -q -c "CREATE EXTENSION snowflake_id" \
        -c "CREATE TABLE t_$1 $(printf "$TABLE" "$1" "$1")" -c "CREATE PUBLICATION pub_$1 FOR TABLE t_$1"
}
# subscribe SUBSCRIBER PUBLISHER [binary]: the subscriber gets t_PUBLISHER (no initial copy),
# in text or binary format.
subscribe() {
    local pport
    pport=$(pg_port_of "$CLUSTER_ROOT/$2")
    # shellcheck disable=SC2059
    pg_psql "$CLUSTER_ROOT/$1" -d postgres -q -c "CREATE TABLE IF NOT EXISTS t_$2 $(printf "$TABLE" "$2" "$2")"
    PGOPTIONS='-c client_min_messages=warning' pg_psql "$CLUSTER_ROOT/$1" -d postgres -qc \
        "CREATE SUBSCRIPTION sub_$2 CONNECTION 'host=$CLUSTER_ROOT/$2 port=$pport user=postgres dbname=postgres' PUBLICATION pub_$2 WITH (copy_data = false, binary = ${3:-false})"
}
# generate NAME SECONDS [TABLE]: inserts into t_NAME (or t_TABLE) with the defaults, 20 rows
# every 50 ms.
generate() {
    timeout 60 "$PG_BINDIR/psql" -X -q -h "$CLUSTER_ROOT/$1" -p "$(pg_port_of "$CLUSTER_ROOT/$1")" -U postgres \
        -d postgres -c "DO \$\$ DECLARE stop timestamptz := clock_timestamp() + interval '$2 s'; BEGIN
            WHILE clock_timestamp() < stop LOOP
                INSERT INTO t_${3:-$1} SELECT FROM generate_series(1, 20); COMMIT; PERFORM pg_sleep(0.05);
            END LOOP; END \$\$"
}
conflicts() { pg_psql "$CLUSTER_ROOT/$1" -d postgres -Atc "SELECT count(*) FROM snowflake_node_conflicts"; }
# wait_for NAME SQL: up to 20 s for SQL to return t on NAME; prints the seconds it took.
wait_for() {
    local start=$SECONDS
    for _ in $(seq 1 200); do
        [ "$(pg_psql "$CLUSTER_ROOT/$1" -d postgres -Atc "$2")" = t ] && { echo $((SECONDS - start)); return 0; }
        sleep 0.1
    done
    fail "waited 20 s for: $2"
}

node hub 7 7
node p1 5 1
node p2 5 2
node p3 6 1
node p4 7 9
# p2 and p3 come in binary format: their values pass the receive functions, p1's and p4's
# the input functions.
subscribe hub p1
subscribe hub p2 true
subscribe hub p3 true
subscribe hub p4
# When p2's rows reach the hub: a column only the hub's copy has is filled by its default.
pg_psql "$CLUSTER_ROOT/hub" -d postgres -qc "ALTER TABLE t_p2 ADD COLUMN arrived timestamptz DEFAULT clock_timestamp()"

# p1 alone: its node and authority arrive through one subscription; nothing to report.
generate p1 3
[ "$(conflicts hub)" = 0 ] || fail "a conflict reported for one publisher"
echo "ok: one publisher, no report"

# p2 uses p1's node number 5, under another sequence name: the IDs do not collide (yet).
generate p1 4 &
g1=$!
sleep 0.5
start=$(date +%s.%N)
generate p2 3
took=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
wait $g1
wait_for hub "SELECT EXISTS (SELECT FROM snowflake_node_conflicts WHERE kind = 'snowflake node' AND node_or_authority = 5)" >/dev/null
pg_psql "$CLUSTER_ROOT/hub" -d postgres -Atc "SELECT kind, node_or_authority, origins, rows_seen FROM snowflake_node_conflicts WHERE node_or_authority = 5"
[ "$(pg_psql "$CLUSTER_ROOT/hub" -d postgres -Atc "SELECT origins FROM snowflake_node_conflicts WHERE node_or_authority = 5 AND kind = 'snowflake node'")" = '{"subscription \"sub_p1\"","subscription \"sub_p2\""}' ] ||
    fail "the report does not name both subscriptions"
grep -q 'WARNING:  two servers use node number 5: values with it arrive through subscription "sub_p1" and subscription "sub_p2"' \
    "$CLUSTER_ROOT/hub/server.log" || fail "no WARNING in the hub's log"
grep -m1 -A2 'WARNING:  two servers use node number 5' "$CLUSTER_ROOT/hub/server.log"
same=$(pg_psql "$CLUSTER_ROOT/hub" -d postgres -Atc "SELECT count(*) FROM t_p1 JOIN t_p2 USING (id)")
# From p2's first row (its own clock, the same machine's) to the WARNING in the hub's log.
first=$(pg_psql "$CLUSTER_ROOT/hub" -d postgres -Atc "SELECT extract(epoch FROM min(at)) FROM t_p2")
warned=$(grep -m1 'WARNING:  two servers use node number 5' "$CLUSTER_ROOT/hub/server.log" | cut -c1-23)
arrived=$(pg_psql "$CLUSTER_ROOT/hub" -d postgres -Atc "SELECT extract(epoch FROM min(arrived)) FROM t_p2")
detected=$(python3 -c "import datetime as d; w = d.datetime.strptime('$warned', '%Y-%m-%d %H:%M:%S.%f').replace(tzinfo=d.timezone.utc).timestamp(); print(round(w - $first, 2), round(w - $arrived, 2), round($arrived - $first, 2))")
read -r after_made after_arrived lag <<<"$detected"
echo "figures: node 5 shared: the WARNING came ${after_made} s after p2 made its first row, ${after_arrived} s after that row reached the hub (${lag} s later; p2 generated for ${took} s); in separate tables no key collided, but $same IDs were made by both servers"

# p3 uses p1's authority 1.
generate p1 4 &
g1=$!
sleep 0.5
generate p3 3
wait $g1
wait_for hub "SELECT EXISTS (SELECT FROM snowflake_node_conflicts WHERE kind = 'gdid authority' AND node_or_authority = 1)" >/dev/null
grep -q 'WARNING:  two servers use authority 1: values with it arrive through subscription "sub_p1" and subscription "sub_p3"' \
    "$CLUSTER_ROOT/hub/server.log" || fail "no WARNING for authority 1"
echo "ok: authority 1 shared by p1 and p3 reported"

# p4 uses the hub's own node number 7: reported at once.
generate p4 1
wait_for hub "SELECT EXISTS (SELECT FROM snowflake_node_conflicts WHERE kind = 'snowflake node' AND node_or_authority = 7 AND 'this server' = ANY (origins))" >/dev/null
grep -q 'WARNING:  node number 7 of this server (snowflake.node_id) also arrives from another server, through subscription "sub_p4"' \
    "$CLUSTER_ROOT/hub/server.log" || fail "no WARNING for the hub's own node"
pg_psql "$CLUSTER_ROOT/hub" -d postgres -c "SELECT kind, node_or_authority, origins, rows_seen, last_seen >= first_seen AS ordered FROM snowflake_node_conflicts ORDER BY 1, 2"

# The hub generates on; with snowflake.refuse_shared_node it refuses its shared node number,
# not its authority, which nobody else uses.
expect "$CLUSTER_ROOT/hub" "SELECT snowflake_next('hub_own') > 0" "t"
pg_psql "$CLUSTER_ROOT/hub" -d postgres -qc "ALTER SYSTEM SET snowflake.refuse_shared_node = on" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
msg=$(pg_psql "$CLUSTER_ROOT/hub" -d postgres -Atc "SELECT snowflake_next('hub_own')" 2>&1) && fail "generated with a shared node number"
echo "$msg" | grep -q 'ERROR:  snowflake.node_id of this server is used by another server too' || fail "unexpected: $msg"
echo "refused: $(echo "$msg" | head -n 1)"
expect "$CLUSTER_ROOT/hub" "SELECT gdid_authority(gdid_next('shop', 'hub_own'))" "7"

# A cascade: c1 -> c2 -> c3. c3 gets c1's and c2's values through one subscription.
node c1 21 11
node c2 22 12
node c3 23 13
subscribe c2 c1
subscribe c3 c2
pg_psql "$CLUSTER_ROOT/c2" -d postgres -qc "ALTER PUBLICATION pub_c2 ADD TABLE t_c1"
# shellcheck disable=SC2059
pg_psql "$CLUSTER_ROOT/c3" -d postgres -qc "CREATE TABLE t_c1 $(printf "$TABLE" c1 c1)" \
    -c "ALTER SUBSCRIPTION sub_c2 REFRESH PUBLICATION WITH (copy_data = false)"
generate c1 3 &
g1=$!
generate c2 3
wait $g1
sleep 1
[ "$(pg_psql "$CLUSTER_ROOT/c3" -d postgres -Atc "SELECT count(*) FROM t_c1")" -gt 0 ] || fail "the cascade did not reach c3"
[ "$(conflicts c2)" = 0 ] && [ "$(conflicts c3)" = 0 ] || fail "a cascade was reported"
echo "ok: a cascade (c1 -> c2 -> c3, $(pg_psql "$CLUSTER_ROOT/c3" -d postgres -Atc "SELECT count(*) FROM t_c1") of c1's rows at c3), no report"

# The initial copy of a subscription is not inspected: r (node 33, authority 10) subscribes
# with copy_data to c1's table, which holds rows carrying r's own node number and authority
# (copied there earlier, say); nothing is reported, and c1's new rows then apply as usual.
pg_psql "$CLUSTER_ROOT/c1" -d postgres -qc "INSERT INTO t_c1 (id, g) SELECT snowflake_from_timestamp(now() - interval '1 day') + 4096 * 33 + k, gdid(0, 10, k) FROM generate_series(1, 100) k"
node r 33 10
# shellcheck disable=SC2059
pg_psql "$CLUSTER_ROOT/r" -d postgres -qc "CREATE TABLE t_c1 $(printf "$TABLE" c1 c1)"
PGOPTIONS='-c client_min_messages=warning' pg_psql "$CLUSTER_ROOT/r" -d postgres -qc \
    "CREATE SUBSCRIPTION r_from_c1 CONNECTION 'host=$CLUSTER_ROOT/c1 port=$(pg_port_of "$CLUSTER_ROOT/c1") user=postgres dbname=postgres' PUBLICATION pub_c1"
wait_for r "SELECT count(*) >= 100 FROM t_c1 WHERE snowflake_node(id) = 33" >/dev/null
generate c1 2
[ "$(conflicts r)" = 0 ] || fail "the initial copy was reported: $(pg_psql "$CLUSTER_ROOT/r" -d postgres -Atc "SELECT * FROM snowflake_node_conflicts")"
echo "ok: an initial copy holding r's own node number and authority, no report"

# A failover: f1 with a streaming standby f2; fs subscribes to f1. f1 dies, f2 is promoted,
# and fs subscribes to f2 anew: node 31 arrives through a second subscription, after the
# first has gone quiet.
node f1 31 14
mkdir -p "$CLUSTER_ROOT/f2" && chown postgres: "$CLUSTER_ROOT/f2" && chmod 700 "$CLUSTER_ROOT/f2"
as_postgres "$PG_BINDIR/pg_basebackup" -h "$CLUSTER_ROOT/f1" -p "$(pg_port_of "$CLUSTER_ROOT/f1")" -U postgres \
    -D "$CLUSTER_ROOT/f2/data" -R -X stream || fail "pg_basebackup failed"
port=$((port + 1))
{ echo "port = $port"; echo "unix_socket_directories = '$CLUSTER_ROOT/f2'"; } >>"$CLUSTER_ROOT/f2/data/postgresql.conf"
echo "port = $port" >"$CLUSTER_ROOT/f2/postgresql.conf"
pg_start "$CLUSTER_ROOT/f2"
node fs 32 15
subscribe fs f1
generate f1 2
pg_kill9 "$CLUSTER_ROOT/f1"
as_postgres "$PG_BINDIR/pg_ctl" -D "$CLUSTER_ROOT/f2/data" -w -t 60 promote >/dev/null || fail "promotion failed"
pg_psql "$CLUSTER_ROOT/fs" -d postgres -qc "ALTER SUBSCRIPTION sub_f1 DISABLE"
fport=$(pg_port_of "$CLUSTER_ROOT/f2")
PGOPTIONS='-c client_min_messages=warning' pg_psql "$CLUSTER_ROOT/fs" -d postgres -qc \
    "CREATE SUBSCRIPTION sub_f2 CONNECTION 'host=$CLUSTER_ROOT/f2 port=$fport user=postgres dbname=postgres' PUBLICATION pub_f1 WITH (copy_data = false)"
before=$(pg_psql "$CLUSTER_ROOT/fs" -d postgres -Atc "SELECT count(*) FROM t_f1")
generate f2 3 f1
# The new subscription's worker starts within wal_retrieve_retry_interval (5 s).
wait_for fs "SELECT count(*) > $before FROM t_f1" >/dev/null
sleep 1
after=$(pg_psql "$CLUSTER_ROOT/fs" -d postgres -Atc "SELECT count(*) FROM t_f1")
[ "$after" -gt "$before" ] || { tail -n 15 "$CLUSTER_ROOT/fs/server.log" "$CLUSTER_ROOT/f2/server.log"; fail "the promoted standby's rows did not arrive"; }
[ "$(conflicts fs)" = 0 ] || fail "a failover was reported: $(pg_psql "$CLUSTER_ROOT/fs" -d postgres -Atc "SELECT * FROM snowflake_node_conflicts")"
grep -q 'WARNING:  .*node number\|WARNING:  .*authority' "$CLUSTER_ROOT/fs/server.log" && fail "a WARNING after a failover"
echo "ok: a failover ($before rows from f1, then $((after - before)) from the promoted f2 through a new subscription), no report"
echo "detection: ok"
