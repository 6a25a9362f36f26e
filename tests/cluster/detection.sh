#!/usr/bin/env bash
# Servers that share a node number or an authority are noticed where their values meet, with
# no set-up beyond the publications and subscriptions themselves: a hub subscribed to four
# publishers reports, within seconds, two of them with one snowflake.node_id (generating
# under different sequence names, so no key has collided yet), two with one gdid.authority,
# and one whose node number is the hub's own: a WARNING in the hub's log and a row of
# snowflake_node_conflicts each. snowflake.refuse_shared_node then stops the hub's own
# generation. Two servers with one node number that replicate into each other (16+) both
# report it and refuse. A cascade, an initial copy and a failover to a promoted standby (old
# primary gone, a new subscription) stay silent. Every subscriber's copy of a table has the
# publisher's defaults, as a replica's schema does: values are counted where they are new.
# majors: 15 19 (the sightings are the extension's, logical replication the oldest's and the newest's;
# both are enough for its run time)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

TABLE="(id snowflake PRIMARY KEY DEFAULT snowflake_next('%s'), g gdid NOT NULL UNIQUE DEFAULT gdid_next('shop', '%s'), at timestamptz DEFAULT clock_timestamp())"
# node NAME NODE_ID AUTHORITY [settings...]: a server whose table t_NAME is published as
# pub_NAME; its directory is $CLUSTER_ROOT/NAME.
node() {
    local name=$1 node=$2 authority=$3
    shift 3
    instance "$name" "shared_preload_libraries = 'snowflake_id'" \
        "snowflake.node_id = $node" "gdid.authority = $authority" "wal_level = logical" \
        "wal_sender_timeout = '5s'" "wal_receiver_timeout = '5s'" "$@" >/dev/null
    pg_start "$CLUSTER_ROOT/$name"
    # shellcheck disable=SC2059
    pg_psql "$CLUSTER_ROOT/$name" -d postgres -q -c "CREATE EXTENSION snowflake_id" \
        -c "CREATE TABLE t_$name $(printf "$TABLE" "$name" "$name")" -c "CREATE PUBLICATION pub_$name FOR TABLE t_$name"
}
# subscribe SUBSCRIBER PUBLISHER [binary [origin [enabled]]]: the subscriber gets t_PUBLISHER
# (no initial copy), in text or binary format; its copy of the table has the same defaults.
subscribe() {
    local origin=""
    [ -n "${4:-}" ] && origin=", origin = $4, enabled = ${5:-true}"
    # shellcheck disable=SC2059
    pg_psql "$CLUSTER_ROOT/$1" -d postgres -q -c "CREATE TABLE IF NOT EXISTS t_$2 $(printf "$TABLE" "$2" "$2")"
    PGOPTIONS='-c client_min_messages=warning' pg_psql "$CLUSTER_ROOT/$1" -d postgres -qc \
        "CREATE SUBSCRIPTION sub_$2 CONNECTION '$(dsn "$CLUSTER_ROOT/$2")' PUBLICATION pub_$2 WITH (copy_data = false, binary = ${3:-false}$origin)"
}
# generate NAME SECONDS [TABLE]: inserts into t_NAME (or t_TABLE) with the defaults, 20 rows
# every 50 ms.
generate() {
    session "$CLUSTER_ROOT/$1" -c "DO \$\$ DECLARE stop timestamptz := clock_timestamp() + interval '$2 s'; BEGIN
            WHILE clock_timestamp() < stop LOOP
                INSERT INTO t_${3:-$1} SELECT FROM generate_series(1, 20); COMMIT; PERFORM pg_sleep(0.05);
            END LOOP; END \$\$"
}
# arrived AT NAME: whether rows of t_NAME have reached server AT; for wait_until.
arrived() { sql_is "$CLUSTER_ROOT/$1" "SELECT count(*) > 0 FROM t_$2" t; }
conflicts() { pg_psql "$CLUSTER_ROOT/$1" -d postgres -Atc "SELECT count(*) FROM snowflake_node_conflicts"; }
node hub 7 7
node p1 5 1
node p2 5 2
node p3 6 1
node p4 7 9
# p2 and p3 come in binary format, p1 and p4 in text.
subscribe hub p1
subscribe hub p2 true
subscribe hub p3 true
subscribe hub p4
# The launcher starts apply workers one interval apart (seconds): rows made before a worker
# runs arrive later in one burst, and deliveries that overlap by less than a second are a
# hand-over, not two servers. So the cases below start once every worker runs.
wait_until 30 "the hub's apply workers" sql_is "$CLUSTER_ROOT/hub" \
    "SELECT count(*) FROM pg_stat_subscription WHERE pid IS NOT NULL AND relid IS NULL" 4
# When p2's rows reach the hub: a column only the hub's copy has is filled by its default.
pg_psql "$CLUSTER_ROOT/hub" -d postgres -qc "ALTER TABLE t_p2 ADD COLUMN arrived timestamptz DEFAULT clock_timestamp()"

# p1 alone: its node and authority arrive through one subscription; nothing to report.
generate p1 3
[ "$(conflicts hub)" = 0 ] || fail "a conflict reported for one publisher"
echo "ok: one publisher, no report"

# p2 uses p1's node number 5, under another sequence name: the IDs do not collide (yet).
generate p1 4 &
g1=$!
wait_until 10 "p1's rows at the hub" arrived hub p1
start=$(date +%s.%N)
generate p2 3
took=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
wait $g1
wait_until 20 "a report on hub" sql_is "$CLUSTER_ROOT/hub" "SELECT EXISTS (SELECT FROM snowflake_node_conflicts WHERE kind = 'snowflake node' AND node_or_authority = 5)" t
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
had=$(sql "$CLUSTER_ROOT/hub" "SELECT count(*) FROM t_p1")
generate p1 4 &
g1=$!
wait_until 10 "p1's new rows at the hub" sql_is "$CLUSTER_ROOT/hub" "SELECT count(*) > $had FROM t_p1" t
generate p3 3
wait $g1
wait_until 20 "a report on hub" sql_is "$CLUSTER_ROOT/hub" "SELECT EXISTS (SELECT FROM snowflake_node_conflicts WHERE kind = 'gdid authority' AND node_or_authority = 1)" t
grep -q 'WARNING:  two servers use authority 1: values with it arrive through subscription "sub_p1" and subscription "sub_p3"' \
    "$CLUSTER_ROOT/hub/server.log" || fail "no WARNING for authority 1"
echo "ok: authority 1 shared by p1 and p3 reported"

# p4 uses the hub's own node number 7: reported at once.
generate p4 1
wait_until 20 "a report on hub" sql_is "$CLUSTER_ROOT/hub" "SELECT EXISTS (SELECT FROM snowflake_node_conflicts WHERE kind = 'snowflake node' AND node_or_authority = 7 AND 'this server' = ANY (origins))" t
grep -q 'WARNING:  node number 7 of this server (snowflake.node_id) also arrives from another server, through subscription "sub_p4"' \
    "$CLUSTER_ROOT/hub/server.log" || fail "no WARNING for the hub's own node"
pg_psql "$CLUSTER_ROOT/hub" -d postgres -c "SELECT kind, node_or_authority, origins, rows_seen, last_seen >= first_seen AS ordered FROM snowflake_node_conflicts ORDER BY 1, 2"

# The hub generates on; with snowflake.refuse_shared_node it refuses its shared node number,
# not its authority, which nobody else uses.
expect "$CLUSTER_ROOT/hub" "SELECT snowflake_next('hub_own') > 0" "t"
pg_psql "$CLUSTER_ROOT/hub" -d postgres -qc "ALTER SYSTEM SET snowflake.refuse_shared_node = on" -c "SELECT pg_reload_conf()" >/dev/null
wait_until 10 "the reloaded setting" sql_is "$CLUSTER_ROOT/hub" "SHOW snowflake.refuse_shared_node" on
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
wait_until 20 "all of c1's rows at c3" sql_is "$CLUSTER_ROOT/c3" "SELECT count(*) FROM t_c1" "$(sql "$CLUSTER_ROOT/c1" "SELECT count(*) FROM t_c1")"
wait_until 20 "all of c2's rows at c3" sql_is "$CLUSTER_ROOT/c3" "SELECT count(*) FROM t_c2" "$(sql "$CLUSTER_ROOT/c2" "SELECT count(*) FROM t_c2")"
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
    "CREATE SUBSCRIPTION r_from_c1 CONNECTION '$(dsn "$CLUSTER_ROOT/c1")' PUBLICATION pub_c1"
wait_until 20 "the initial copy at r" sql_is "$CLUSTER_ROOT/r" "SELECT count(*) >= 100 FROM t_c1 WHERE snowflake_node(id) = 33" t
generate c1 2
wait_until 20 "c1's new rows at r" sql_is "$CLUSTER_ROOT/r" "SELECT count(*) FROM t_c1" "$(sql "$CLUSTER_ROOT/c1" "SELECT count(*) FROM t_c1")"
[ "$(conflicts r)" = 0 ] || fail "the initial copy was reported: $(pg_psql "$CLUSTER_ROOT/r" -d postgres -Atc "SELECT * FROM snowflake_node_conflicts")"
echo "ok: an initial copy holding r's own node number and authority, no report"

# A failover: f1 with a streaming standby f2; fs subscribes to f1. f1 dies, f2 is promoted,
# and fs subscribes to f2 anew: node 31 arrives through a second subscription, after the
# first has gone quiet.
node f1 31 14
standby_of "$CLUSTER_ROOT/f1" f2 >/dev/null || fail "no standby"
pg_start "$CLUSTER_ROOT/f2"
node fs 32 15
subscribe fs f1
generate f1 2
pg_kill9 "$CLUSTER_ROOT/f1"
as_postgres "$PG_BINDIR/pg_ctl" -D "$CLUSTER_ROOT/f2/data" -w -t 60 promote >/dev/null || fail "promotion failed"
pg_psql "$CLUSTER_ROOT/fs" -d postgres -qc "ALTER SUBSCRIPTION sub_f1 DISABLE"
PGOPTIONS='-c client_min_messages=warning' pg_psql "$CLUSTER_ROOT/fs" -d postgres -qc \
    "CREATE SUBSCRIPTION sub_f2 CONNECTION '$(dsn "$CLUSTER_ROOT/f2")' PUBLICATION pub_f1 WITH (copy_data = false)"
before=$(pg_psql "$CLUSTER_ROOT/fs" -d postgres -Atc "SELECT count(*) FROM t_f1")
generate f2 3 f1
# The new subscription's worker starts within wal_retrieve_retry_interval (5 s).
wait_until 20 "the promoted standby's rows at fs" sql_is "$CLUSTER_ROOT/fs" "SELECT count(*) FROM t_f1" "$(sql "$CLUSTER_ROOT/f2" "SELECT count(*) FROM t_f1")"
after=$(pg_psql "$CLUSTER_ROOT/fs" -d postgres -Atc "SELECT count(*) FROM t_f1")
[ "$after" -gt "$before" ] || { tail -n 15 "$CLUSTER_ROOT/fs/server.log" "$CLUSTER_ROOT/f2/server.log"; fail "the promoted standby's rows did not arrive"; }
[ "$(conflicts fs)" = 0 ] || fail "a failover was reported: $(pg_psql "$CLUSTER_ROOT/fs" -d postgres -Atc "SELECT * FROM snowflake_node_conflicts")"
grep -q 'WARNING:  .*node number\|WARNING:  .*authority' "$CLUSTER_ROOT/fs/server.log" && fail "a WARNING after a failover"
echo "ok: a failover ($before rows from f1, then $((after - before)) from the promoted f2 through a new subscription), no report"

# Two servers with one node number that replicate into each other (origin = none, 16+):
# each sees its own number arrive, and with refuse_shared_node stops generating under it.
if [ "$("$PG_BINDIR/postgres" --version | sed 's/.* \([0-9]*\)\..*/\1/')" -ge 16 ]; then
    node m1 41 3 "snowflake.refuse_shared_node = on"
    node m2 41 4 "snowflake.refuse_shared_node = on"
    # Both make rows before either sees the other's: otherwise the first to see them refuses
    # before it has made any, and the other has nothing to see.
    subscribe m1 m2 false none false
    subscribe m2 m1 false none false
    generate m1 1 &
    g1=$!
    generate m2 1
    wait $g1
    pg_psql "$CLUSTER_ROOT/m1" -d postgres -qc "ALTER SUBSCRIPTION sub_m2 ENABLE"
    pg_psql "$CLUSTER_ROOT/m2" -d postgres -qc "ALTER SUBSCRIPTION sub_m1 ENABLE"
    for m in m1 m2; do
        wait_until 20 "a report on $m" sql_is "$CLUSTER_ROOT/$m" "SELECT count(*) FROM snowflake_node_conflicts WHERE node_or_authority = 41 AND 'this server' = ANY (origins)" 1
        msg=$(sql "$CLUSTER_ROOT/$m" "SELECT snowflake_next('again')" 2>&1) && fail "$m generated with a shared node number"
        echo "$msg" | grep -q 'snowflake.node_id of this server is used by another server too' || fail "unexpected on $m: $msg"
    done
    echo "ok: two servers with node number 41 replicating into each other: both report it and refuse"
fi
echo "detection: ok"
