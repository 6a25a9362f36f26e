#!/usr/bin/env bash
# A claiming server cut off from its registry by a network partition (snowflake.node_id = auto,
# gdid.authority = auto; lease 3 s, clock error 200 ms, max_clock_ahead 1 s, as registry.sh).
# The registry listens on the host side of a veth pair; s1 runs in a network namespace of its
# own, behind the other side, and is reached by its clients through its unix socket, so that
# they go on while its network is cut; s2 and, later, s3 run on the host. s1, s2 and s3
# generate snowflake IDs and gdids continuously, each in a loop that records the time of every
# value it got and of every refusal.
#  1. s1 and s2 claim distinct numbers and generate.
#  2. s1's link is taken down. s1 refuses (55000) before its lease ends: its last value comes
#     within the lease less the clock error after its last renewal, at least the clock error
#     before the registry's lease ends, and less than 3 s after the cut; its view shows both
#     claims expired. s2 generates on throughout (no pause of 1 s).
#  3. s3, started at the cut, gets s1's node number and authority (every other number of the
#     group is held), no earlier than the registry may give them (lease + max_clock_ahead +
#     2 x clock error after s1's last renewal), and generates under them: its snowflake IDs
#     above every one s1 made, its gdids of a later era.
#  4. The link is back (and another number of the group free): s1 learns that its numbers
#     are gone (its log says so), claims that one and generates again. Nothing any of the
#     three made repeats, in snowflake IDs or gdids.
# Everything it makes (servers, the namespace, the veth pair) is removed on any exit.
# majors: 15 19 (the claim is libpq from a background worker, the same on every major, as registry)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

CLAIMS=("snowflake.claim_lease = '3s'" "snowflake.claim_clock_error = '200ms'"
    "snowflake.max_clock_ahead = '1s'" "snowflake.registry_group = 'part'" "snowflake.node_bits = 7")
LEASE_MS=3000 CLOCK_ERROR_MS=200 AHEAD_MS=1000

# Names of this run's own: a network namespace and the two ends of a veth pair.
NS=sfpart$$
VETH_HOST=sfp$$h
VETH_NS=sfp$$n
LOOPS=()

on_exit() {
    local status=$? pid
    set +e
    for pid in "${LOOPS[@]}"; do
        pkill -P "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null
    done
    # The servers first (s1 runs in the namespace), then the namespace and the link.
    (exit "$status")
    cleanup
    ip netns del "$NS" 2>/dev/null
    ip link del "$VETH_HOST" 2>/dev/null
    ! ip link show "$VETH_HOST" >/dev/null 2>&1 || echo "warning: $VETH_HOST is still there" >&2
    return "$status"
}
trap on_exit EXIT

command -v ip >/dev/null || fail "ip (iproute2) not found"

# A /30 of 169.254.0.0/16 (link-local; not 169.254.169.0/24, the metadata address of many
# clouds) that no interface or route of this machine uses, derived from this shell's process
# ID so that parallel runs take different ones.
net=
for i in $(seq 0 63); do
    n=$((($$ + i * 977) % (253 * 64)))
    third=$((n / 64 + 1))
    [ "$third" -ge 169 ] && third=$((third + 1))
    base=169.254.$third.$((n % 64 * 4))
    if ! ip -4 -o addr show | grep -qF " 169.254.$third." && ! ip -4 route show table all | grep -qF "169.254.$third."; then
        net=$base
        break
    fi
done
[ -n "$net" ] || fail "no free 169.254.x.y/30 found"
HOST_ADDR=${net%.*}.$((${net##*.} + 1))
NS_ADDR=${net%.*}.$((${net##*.} + 2))

ip netns add "$NS"
ip link add "$VETH_HOST" type veth peer name "$VETH_NS"
ip link set "$VETH_NS" netns "$NS"
ip addr add "$HOST_ADDR/30" dev "$VETH_HOST"
ip link set "$VETH_HOST" up
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" ip addr add "$NS_ADDR/30" dev "$VETH_NS"
ip netns exec "$NS" ip link set "$VETH_NS" up
echo "network: registry on $HOST_ADDR ($VETH_HOST), s1 in namespace $NS on $NS_ADDR ($VETH_NS)"

# The registry: on the host side of the pair (and its unix socket), a password for claims.
registry=$(instance registry "listen_addresses = '$HOST_ADDR'" "password_encryption = 'scram-sha-256'" \
    "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1000" "gdid.authority = 15")
sed -i "1i host all claims $net/30 scram-sha-256" "$registry/data/pg_hba.conf"
pg_start "$registry"
pg_psql "$registry" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE ROLE claims LOGIN PASSWORD 'claims-secret';
GRANT EXECUTE ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval),
    snowflake_registry_renew(text, text, text, integer, interval, interval),
    snowflake_registry_release(text, text, text, integer, interval) TO claims;
-- Every number of group part but 0 and 1 held by servers that are not there, so that s3 can
-- only get what s1 held.
INSERT INTO snowflake_id_registry.snowflake_registry
SELECT kind, 'part', n, 'elsewhere', now(), now(), now() + interval '1 hour', now() + interval '1 hour', 0, false
  FROM (VALUES ('node', 127), ('authority', 15)) k(kind, top), generate_series(2, top) n;
-- Every version of every claim, to read what the registry had of s1 once s3 replaced it.
CREATE TABLE claims_history AS SELECT *, clock_timestamp() AS seen FROM snowflake_id_registry.snowflake_registry WITH NO DATA;
CREATE FUNCTION keep_claim() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
    INSERT INTO claims_history SELECT (NEW).*, clock_timestamp();
    RETURN NULL;
END $$;
CREATE TRIGGER keep_claim AFTER INSERT OR UPDATE ON snowflake_id_registry.snowflake_registry FOR EACH ROW EXECUTE FUNCTION keep_claim();
SQL
REGISTRY="host=$HOST_ADDR port=$(pg_port_of "$registry") dbname=postgres user=claims password=claims-secret"

# claimant NAME [more lines]: a server with both numbers auto (not started).
claimant() {
    local name=$1
    shift
    instance "$name" "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
        "gdid.authority = auto" "snowflake.registry = '$REGISTRY'" "${CLAIMS[@]}" "$@"
}
# start DIR: starts a server and creates the extension (its view shows the claims).
start() {
    pg_start "$1"
    sql "$1" "CREATE EXTENSION snowflake_id" >/dev/null
}
# ns_start DIR: the same, the server in the namespace.
ns_start() {
    ip netns exec "$NS" runuser -u postgres -- "$PG_BINDIR/pg_ctl" -D "$1/data" -l "$1/server.log" -w -t 60 start >/dev/null ||
        { tail -n 30 "$1/server.log"; return 1; }
    sql "$1" "CREATE EXTENSION snowflake_id" >/dev/null
}
held() {
    sql_is "$1" "SELECT count(*) FROM snowflake_node_claims WHERE state = 'held'" 2
}
# number DIR KIND: the number of that kind ('snowflake node', 'gdid authority') in the view.
number() {
    sql "$1" "SELECT number FROM snowflake_node_claims WHERE kind = '$2'"
}
stamp() { date +%s.%N; }
# ms_between FROM TO: milliseconds from one time (seconds since the epoch) to another.
ms_between() { python3 -c "print(round(($2 - $1) * 1000))"; }

# The tables of the generating loop, and the loop: each value with the time it was got, each
# refusal with its SQLSTATE, until control.stop (at most 100 s, 100,000 rounds).
TABLES="CREATE TABLE control (stop boolean NOT NULL);
INSERT INTO control VALUES (false);
CREATE TABLE made_sf (id bigint NOT NULL, node int NOT NULL, at timestamptz NOT NULL);
CREATE TABLE made_g (g gdid NOT NULL, at timestamptz NOT NULL);
CREATE TABLE refused (kind text, state text, message text, at timestamptz NOT NULL);"
LOOP="DO \$\$
DECLARE
    started timestamptz := clock_timestamp();
    v bigint;
    g gdid;
BEGIN
    FOR i IN 1..100000 LOOP
        EXIT WHEN clock_timestamp() > started + interval '100 s' OR (SELECT stop FROM control);
        BEGIN
            v := snowflake_next('orders');
            INSERT INTO made_sf VALUES (v, snowflake_node(v), clock_timestamp());
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO refused VALUES ('snowflake', SQLSTATE, SQLERRM, clock_timestamp());
        END;
        BEGIN
            g := gdid_next('shop', 'orders');
            INSERT INTO made_g VALUES (g, clock_timestamp());
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO refused VALUES ('gdid', SQLSTATE, SQLERRM, clock_timestamp());
        END;
        COMMIT;
        PERFORM pg_sleep(0.002);
    END LOOP;
END \$\$"
# generate DIR: the loop on DIR, in the background.
generate() {
    sql "$1" "$TABLES" >/dev/null
    session "$1" -c "SET synchronous_commit = off" -c "$LOOP" >"$1/loop.log" 2>&1 &
    LOOPS+=($!)
}
made() { sql "$1" "SELECT count(*) FROM made_sf WHERE $2"; }
made_at_least() { [ "$(made "$1" "$2")" -ge "$3" ]; }

echo "--- 1. s1 (in the namespace) and s2 claim and generate"
s1=$(claimant s1 "listen_addresses = ''")
s2=$(claimant s2)
ns_start "$s1"
wait_until 10 "s1 to hold its numbers" held "$s1"
start "$s2"
wait_until 10 "s2 to hold its numbers" held "$s2"
s1_node=$(number "$s1" "snowflake node")
s1_auth=$(number "$s1" "gdid authority")
s2_node=$(number "$s2" "snowflake node")
s2_auth=$(number "$s2" "gdid authority")
echo "s1: node $s1_node, authority $s1_auth; s2: node $s2_node, authority $s2_auth"
[ "$s1_node" != "$s2_node" ] || fail "s1 and s2 share node number $s1_node"
[ "$s1_auth" != "$s2_auth" ] || fail "s1 and s2 share authority $s1_auth"
generate "$s1"
generate "$s2"
wait_until 10 "s1 to generate" made_at_least "$s1" true 200
wait_until 10 "s2 to generate" made_at_least "$s2" true 200

echo "--- 2. s1 cut off"
s3=$(claimant s3)
# Right after a renewal of the node number (renewed every second), so that the cut comes
# at a known point of the lease.
renewal() { sql "$s1" "SELECT last_renewal FROM snowflake_node_claims WHERE kind = 'snowflake node'"; }
renewed_after() { [ "$(renewal)" != "$1" ]; }
wait_until 3 "a renewal of s1's node number" renewed_after "$(renewal)"
cut=$(stamp)
ip netns exec "$NS" ip link set "$VETH_NS" down
# s3 at once: it claims again every second until it gets a number.
start "$s3"
s3_started=$(stamp)
refusing() { sql_is "$1" "SELECT count(*) > 0 FROM refused WHERE at > to_timestamp($cut)" t; }
wait_until 6 "s1 to refuse" refusing "$s1"
# Both kinds refused, and the view says the claims ran out.
wait_until 6 "s1 to refuse gdids" sql_is "$s1" "SELECT count(DISTINCT kind) FROM refused WHERE at > to_timestamp($cut)" 2
expect "$s1" "SELECT string_agg(DISTINCT state, ',') FROM refused" 55000
expect "$s1" "SELECT string_agg(state, ',' ORDER BY kind) FROM snowflake_node_claims" "expired,expired"
sql "$s1" "SELECT kind || ': ' || message FROM refused WHERE at > to_timestamp($cut) ORDER BY at LIMIT 1"
# s1's last renewals (unix time at which each answer came) and the registry's view of them.
renewed_node=$(sql "$s1" "SELECT extract(epoch FROM last_renewal) FROM snowflake_node_claims WHERE kind = 'snowflake node'")
renewed_auth=$(sql "$s1" "SELECT extract(epoch FROM last_renewal) FROM snowflake_node_claims WHERE kind = 'gdid authority'")
s1_holder=$(sql "$s1" "SELECT holder FROM snowflake_node_claims LIMIT 1")
# registry_time KIND COLUMN: the end of the last lease the registry gave s1 (lease_until), or
# when it may give the number to another holder after it (reusable_after).
registry_time() {
    sql "$registry" "SELECT extract(epoch FROM max($2)) FROM claims_history WHERE kind = '$1' AND registry_group = 'part' AND split_part(holder, ' #', 1) = '$s1_holder'"
}
reusable() { registry_time "$1" reusable_after; }
lease_end_node=$(registry_time node lease_until)
lease_end_auth=$(registry_time authority lease_until)
reusable_node=$(reusable node)
reusable_auth=$(reusable authority)
for t in "$reusable_node" "$reusable_auth" "$lease_end_node" "$lease_end_auth"; do
    [ -n "$t" ] || fail "the registry has no claims of s1 ($s1_holder)"
done

echo "--- 3. s3 takes s1's numbers"
wait_until 15 "s3 to hold s1's numbers" held "$s3"
took=$(stamp)
[ "$(number "$s3" "snowflake node")" = "$s1_node" ] || fail "s3 holds node $(number "$s3" "snowflake node"), not s1's $s1_node"
[ "$(number "$s3" "gdid authority")" = "$s1_auth" ] || fail "s3 holds authority $(number "$s3" "gdid authority"), not s1's $s1_auth"
since_node=$(sql "$s3" "SELECT extract(epoch FROM since) FROM snowflake_node_claims WHERE kind = 'snowflake node'")
since_auth=$(sql "$s3" "SELECT extract(epoch FROM since) FROM snowflake_node_claims WHERE kind = 'gdid authority'")
generate "$s3"
wait_until 10 "s3 to generate" made_at_least "$s3" true 500
# A number of the group given back meanwhile, for s1 to claim once it is back.
sql "$registry" "DELETE FROM snowflake_id_registry.snowflake_registry WHERE registry_group = 'part' AND number = 2" >/dev/null

echo "--- 4. the link back"
healed=$(stamp)
ip netns exec "$NS" ip link set "$VETH_NS" up
moved() {
    [ "$(number "$s1" "snowflake node")" = 2 ] && [ "$(number "$s1" "gdid authority")" = 2 ] && held "$s1"
}
wait_until 15 "s1 to claim other numbers" moved
reclaimed=$(stamp)
grep -q "snowflake node number $s1_node is no longer this server's" "$s1/server.log" || fail "s1's log does not say its node number is gone"
grep -q "gdid authority number $s1_auth is no longer this server's" "$s1/server.log" || fail "s1's log does not say its authority is gone"
wait_until 10 "s1 to generate again" made_at_least "$s1" "node = 2" 500
after_heal=$(stamp)
wait_until 10 "s3 to go on generating" made_at_least "$s3" "at > to_timestamp($after_heal)" 200
for s in "$s1" "$s2" "$s3"; do sql "$s" "UPDATE control SET stop = true" >/dev/null; done
for pid in "${LOOPS[@]}"; do
    wait "$pid" || fail "a generating loop failed: $(cat "$s1/loop.log" "$s2/loop.log" "$s3/loop.log")"
done
LOOPS=()

# Everything in one table on the registry.
pg_psql "$registry" -d postgres -q <<'SQL'
CREATE TABLE sf (server text, id bigint, node int, at numeric);
CREATE TABLE g (server text, g gdid, at numeric);
CREATE TABLE refusals (server text, kind text, state text, at numeric);
SQL
for s in "$s1" "$s2" "$s3"; do
    name=$(basename "$s")
    sql "$s" "COPY (SELECT '$name', id, node, extract(epoch FROM at) FROM made_sf) TO STDOUT" |
        pg_psql "$registry" -d postgres -qc "\\copy sf FROM STDIN"
    sql "$s" "COPY (SELECT '$name', g, extract(epoch FROM at) FROM made_g) TO STDOUT" |
        pg_psql "$registry" -d postgres -qc "\\copy g FROM STDIN"
    sql "$s" "COPY (SELECT '$name', kind, state, extract(epoch FROM at) FROM refused) TO STDOUT" |
        pg_psql "$registry" -d postgres -qc "\\copy refusals FROM STDIN"
done
q() { sql "$registry" "$1"; }
echo "values: $(q "SELECT string_agg(server || ' ' || n, ', ' ORDER BY server) FROM (SELECT server, count(*) n FROM sf GROUP BY server) s") snowflake IDs;" \
    "$(q "SELECT string_agg(server || ' ' || n, ', ' ORDER BY server) FROM (SELECT server, count(*) n FROM g GROUP BY server) s") gdids"
# Nothing repeats.
expect "$registry" "SELECT count(*) - count(DISTINCT id) FROM sf" 0
expect "$registry" "SELECT count(*) - count(DISTINCT g) FROM g" 0
# Every server's values under the numbers it held: s1 under its first ones until the cut, then
# under 2; s3 under s1's first ones.
sorted() { printf '%s\n' "$@" | LC_ALL=C sort | paste -sd,; }
expect "$registry" "SELECT string_agg(DISTINCT server || ':' || node, ',' ORDER BY server || ':' || node) FROM sf" \
    "$(sorted "s1:$s1_node" s1:2 "s2:$s2_node" "s3:$s1_node")"
expect "$registry" "SELECT string_agg(DISTINCT server || ':' || gdid_authority(g), ',' ORDER BY server || ':' || gdid_authority(g)) FROM g" \
    "$(sorted "s1:$s1_auth" s1:2 "s2:$s2_auth" "s3:$s1_auth")"
# s1 refused only with 55000, only while cut off; s2 and s3 never.
expect "$registry" "SELECT string_agg(DISTINCT server || ':' || state, ',') FROM refusals" "s1:55000"
expect "$registry" "SELECT count(*) FROM refusals WHERE at < $cut OR at > $reclaimed" 0
# s1's last values under its first numbers: within the lease less the clock error after the
# last renewal, less than 3 s after the cut, and before s3 held the numbers.
last_sf=$(q "SELECT max(at) FROM sf WHERE server = 's1' AND node = $s1_node")
last_g=$(q "SELECT max(at) FROM g WHERE server = 's1' AND gdid_authority(g) = $s1_auth")
bound="$((LEASE_MS - CLOCK_ERROR_MS)) / 1000.0"
expect "$registry" "SELECT $last_sf <= $renewed_node + $bound AND $last_g <= $renewed_auth + $bound" t
expect "$registry" "SELECT $last_sf < $cut + 3 AND $last_g < $cut + 3" t
# ... and the clock error before the end of the registry's lease.
expect "$registry" "SELECT $last_sf <= $lease_end_node - $CLOCK_ERROR_MS / 1000.0 AND $last_g <= $lease_end_auth - $CLOCK_ERROR_MS / 1000.0" t
expect "$registry" "SELECT $last_sf < $since_node AND $last_g < $since_auth" t
# s3 held them no earlier than the registry may give them.
expect "$registry" "SELECT $since_node >= $reusable_node AND $since_auth >= $reusable_auth" t
hold_node_ms=$((LEASE_MS + AHEAD_MS + 2 * CLOCK_ERROR_MS))
expect "$registry" "SELECT $since_node - $renewed_node >= $hold_node_ms / 1000.0 - 0.1" t
# Under s1's first numbers, s3's values after all of s1's: IDs with later times, a later era.
expect "$registry" "SELECT (SELECT max(id) FROM sf WHERE server = 's1' AND node = $s1_node) < (SELECT min(id) FROM sf WHERE server = 's3')" t
expect "$registry" "SELECT (SELECT max(gdid_era(g)) FROM g WHERE server = 's1' AND gdid_authority(g) = $s1_auth) < (SELECT min(gdid_era(g)) FROM g WHERE server = 's3')" t
# s2 went on throughout: its longest pause between two values.
s2_gap=$(q "SELECT round(max(gap) * 1000) FROM (SELECT at - lag(at) OVER (ORDER BY at) gap FROM sf WHERE server = 's2') s")
[ "$s2_gap" -lt 1000 ] || fail "s2 paused $s2_gap ms while s1 was cut off"
first_after_heal=$(q "SELECT min(at) FROM sf WHERE server = 's1' AND node = 2")

echo "figures: cut off: s1's last snowflake ID $(ms_between "$cut" "$last_sf") ms and last gdid $(ms_between "$cut" "$last_g") ms after the cut," \
    "$(ms_between "$renewed_node" "$last_sf") and $(ms_between "$renewed_auth" "$last_g") ms after their last renewals (bound $((LEASE_MS - CLOCK_ERROR_MS)) ms)," \
    "$(ms_between "$last_sf" "$lease_end_node") and $(ms_between "$last_g" "$lease_end_auth") ms before the registry's leases ended;" \
    "$(q "SELECT count(*) FROM refusals WHERE server = 's1'") refusals (55000); s2's longest pause $s2_gap ms"
echo "figures: taken over: s3 (started $(ms_between "$cut" "$s3_started") ms after the cut) held s1's node $s1_node and authority $s1_auth" \
    "$(ms_between "$cut" "$took") ms after the cut, $(ms_between "$renewed_node" "$since_node") ms after s1's last renewal" \
    "(the registry's earliest: $(ms_between "$renewed_node" "$reusable_node") ms; lease + 1 s ahead + 2 x 0.2 s = $hold_node_ms ms);" \
    "gdid eras: s1 $(q "SELECT max(gdid_era(g)) FROM g WHERE server = 's1' AND gdid_authority(g) = $s1_auth"), s3 $(q "SELECT min(gdid_era(g)) FROM g WHERE server = 's3'")"
echo "figures: healed: s1 held node 2 and authority 2 (era $(q "SELECT min(gdid_era(g)) FROM g WHERE server = 's1' AND gdid_authority(g) = 2")) $(ms_between "$healed" "$reclaimed") ms after the link was back," \
    "generated again $(ms_between "$healed" "$first_after_heal") ms after it;" \
    "$(q "SELECT count(*) FROM sf") snowflake IDs and $(q "SELECT count(*) FROM g") gdids of three servers, none repeated"
echo "ok"
