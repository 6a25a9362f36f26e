#!/usr/bin/env bash
# The default lease settings (snowflake.claim_lease 10 min, renewed every 30 s;
# claim_clock_error 1 s; max_clock_ahead 10 s) against a registry that is down, and what they
# cost. Two servers claim from a registry and generate without pause, each in a loop that
# records every value and every refusal.
#  1. The registry stopped (immediate) for OUTAGE_S seconds (default 120: a restart for a
#     minor release, a failover, four times Patroni's default ttl; OUTAGE_S=540 tries the
#     longest outage the default lease rides out), then started again: neither server
#     fails a call meanwhile, and both renew their claims once it is back (up to 0.4.0, with
#     its 10 s lease, both stopped about 9 s after the registry did).
#  2. The cost, as the registry records it: a number whose holder stops renewing (dies, or is
#     cut off) is taken until lease + max_clock_ahead + 2 x clock error after its last renewal
#     (612 s for a node number, 602 s for an authority).
#  3. A server shut down cleanly gives its numbers back: they are free again once the hold
#     after the release has passed (12 s, 2 s), not a lease later, so a server restarted
#     (a new holder: its postmaster's start is part of its name) leaves no number taken for
#     10 minutes; a new server takes the lowest numbers again once they are free.
# majors: 15 (the claim's timing does not depend on the major; one is enough for its run time)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

OUTAGE_S=${OUTAGE_S:-120}
LOOPS=()
on_exit() {
    local status=$? pid
    set +e
    for pid in "${LOOPS[@]}"; do
        pkill -P "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null
    done
    (exit "$status")
    cleanup
}
trap on_exit EXIT

registry=$(instance registry "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1000" \
    "gdid.authority = 15" "password_encryption = 'scram-sha-256'")
sed -i '1i host all claims 127.0.0.1/32 scram-sha-256' "$registry/data/pg_hba.conf"
pg_start "$registry"
pg_psql "$registry" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE ROLE claims LOGIN PASSWORD 'claims-secret';
GRANT EXECUTE ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval),
    snowflake_registry_renew(text, text, text, integer, interval, interval),
    snowflake_registry_release(text, text, text, integer, interval),
    snowflake_registry_release(text, text, text, integer, interval, bigint) TO claims;
SQL
REGISTRY="host=127.0.0.1 port=$(pg_port_of "$registry") dbname=postgres user=claims password=claims-secret connect_timeout=2"
claimant() {
    instance "$1" "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
        "gdid.authority = auto" "snowflake.registry = '$REGISTRY'"
}
held() { sql_is "$1" "SELECT count(*) FROM snowflake_node_claims WHERE state = 'held'" 2; }
numbers() { sql "$1" "SELECT string_agg(number::text, ' ' ORDER BY kind DESC) FROM snowflake_node_claims"; }

TABLES=$GENERATING_TABLES
LOOP=$(generating_loop "$((OUTAGE_S + 120))" 0.02)
made_after() { sql_is "$1" "SELECT count(*) >= $3 FROM made WHERE at > to_timestamp($2)" t; }

s1=$(claimant s1)
s2=$(claimant s2)
for s in "$s1" "$s2"; do pg_start "$s"; sql "$s" "CREATE EXTENSION snowflake_id" >/dev/null; done
for s in "$s1" "$s2"; do wait_until 10 "$(basename "$s") to hold its numbers" held "$s"; done
s1_numbers=$(numbers "$s1")
echo "s1: $s1_numbers, s2: $(numbers "$s2") (node authority)"
for s in "$s1" "$s2"; do
    sql "$s" "$TABLES" >/dev/null
    timeout $((OUTAGE_S + 180)) "$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$s" -p "$(pg_port_of "$s")" \
        -U postgres -d postgres -c "SET synchronous_commit = off" -c "$LOOP" >"$s/loop.log" 2>&1 &
    LOOPS+=($!)
done
begin=$(date +%s.%N)
for s in "$s1" "$s2"; do wait_until 10 "$(basename "$s") to generate" made_after "$s" "$begin" 100; done

echo "--- 1. the registry stopped for $OUTAGE_S s"
# Right after a renewal of s1's node number, so that the outage starts at a known point.
renewal() { sql "$s1" "SELECT last_renewal FROM snowflake_node_claims WHERE kind = 'snowflake node'"; }
renewed_after() { [ "$(renewal)" != "$1" ]; }
wait_until 40 "a renewal of s1's node number" renewed_after "$(renewal)"
pg_stop "$registry" immediate
stopped=$(date +%s.%N)
# Poll: each server still generating, every 10 s of the outage.
for ((i = 10; i <= OUTAGE_S; i += 10)); do
    sleep 10
    for s in "$s1" "$s2"; do
        made_after "$s" "$(python3 -c "print($stopped + $i - 10)")" 10 ||
            fail "$(basename "$s") stopped generating $i s into the outage: $(sql "$s" "SELECT state || ' ' || coalesce(message, '') FROM snowflake_node_claims")"
    done
done
pg_start "$registry"
back=$(date +%s.%N)
renewed_since() { sql_is "$1" "SELECT bool_and(last_renewal > to_timestamp($2)) FROM snowflake_node_claims" t; }
for s in "$s1" "$s2"; do wait_until 45 "$(basename "$s") to renew once the registry is back" renewed_since "$s" "$back"; done
renewed=$(date +%s.%N)
for s in "$s1" "$s2"; do sql "$s" "UPDATE control SET stop = true" >/dev/null; done
for pid in "${LOOPS[@]}"; do wait "$pid" || fail "a generating loop failed"; done
LOOPS=()
for s in "$s1" "$s2"; do
    expect "$s" "SELECT count(*) FROM refused" 0
    gap=$(sql "$s" "SELECT round(extract(epoch FROM max(gap)) * 1000) FROM (SELECT at - lag(at) OVER (ORDER BY at) gap FROM made) g")
    [ "$gap" -lt 1000 ] || fail "$(basename "$s") paused $gap ms"
    echo "$(basename "$s"): $(sql "$s" "SELECT count(*) FROM made WHERE at BETWEEN to_timestamp($stopped) AND to_timestamp($back)") values during the outage, longest pause $gap ms, no call failed"
done
echo "figures: registry down $(python3 -c "print(round($back - $stopped))") s (from right after a renewal of s1's node number): no call failed; renewed $(python3 -c "print(round($renewed - $back, 1))") s after it was back"

echo "--- 2. what a number costs whose holder stops renewing"
q() { sql "$registry" "$1"; }
expect "$registry" "SELECT string_agg(DISTINCT kind || ' ' || round(extract(epoch FROM reusable_after - renewed_at)), ', ' ORDER BY kind || ' ' || round(extract(epoch FROM reusable_after - renewed_at))) FROM snowflake_id_registry.snowflake_registry" \
    "authority 602, node 612"
echo "figures: a number whose holder stops renewing is free again 612 s (node number) or 602 s (authority) after its last renewal; a holder cut off generates for up to $(sql "$s1" "SELECT round(extract(epoch FROM lease_end - last_renewal)) - 1 FROM snowflake_node_claims LIMIT 1") s after it"

echo "--- 3. a clean shutdown gives the numbers back"
pg_stop "$s1" fast
shut=$(date +%s.%N)
expect "$registry" "SELECT bool_and(released) FROM snowflake_id_registry.snowflake_registry WHERE split_part(holder, ' #', 1) LIKE '%:$(pg_port_of "$s1"):%'" t
expect "$registry" "SELECT string_agg(kind || ' ' || (extract(epoch FROM reusable_after) - $shut < (CASE kind WHEN 'node' THEN 12 ELSE 2 END) + 2), ', ' ORDER BY kind) FROM snowflake_id_registry.snowflake_registry WHERE split_part(holder, ' #', 1) LIKE '%:$(pg_port_of "$s1"):%'" \
    "authority true, node true"
grep -q "gave snowflake node number .* back to the registry" "$s1/server.log" || fail "s1's log does not say it gave its numbers back"
# Free once the hold has passed: a new server takes them (the lowest numbers nobody holds).
free() { sql_is "$registry" "SELECT bool_and(reusable_after < now()) FROM snowflake_id_registry.snowflake_registry WHERE split_part(holder, ' #', 1) LIKE '%:$(pg_port_of "$s1"):%'" t; }
wait_until 30 "s1's numbers to come free" free
freed=$(date +%s.%N)
s3=$(claimant s3)
pg_start "$s3"
sql "$s3" "CREATE EXTENSION snowflake_id" >/dev/null
wait_until 10 "s3 to hold numbers" held "$s3"
[ "$(numbers "$s3")" = "$s1_numbers" ] || fail "s3 holds $(numbers "$s3"), not s1's $s1_numbers"
echo "figures: s1 shut down (fast): its numbers free again $(python3 -c "print(round($freed - $shut, 1))") s after the shutdown (not 10 min), and s3 took them"
echo "ok"
