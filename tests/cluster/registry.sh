#!/usr/bin/env bash
# Numbers claimed from a registry (snowflake.node_id = auto, gdid.authority = auto), with a
# short lease (3 s, clock error 200 ms, max_clock_ahead 1 s) so that everything happens within
# seconds. The registry is a server of its own; the claims connect to it over TCP as a role
# that may only execute the three registry functions.
#  1. Eight servers started from one configuration claim eight distinct node numbers and
#     authorities and generate at once: nothing repeats.
#  2. The registry stopped: a server goes on generating until its lease ends, then refuses
#     (55000), and resumes when the registry is back (both measured).
#  3. A server frozen (SIGSTOP of every process) past its lease, its numbers given to a new
#     server, then woken (SIGCONT): it hands out nothing more under them, and nothing the two
#     made repeats (the new holder's gdids are of a later era).
#  4. snowflake_node_detach() stops generation at once and gives the numbers back (free once
#     the hold after the release has passed), also for a call that read its number before
#     and waited (for a lock) across the detach;
#     snowflake_node_attach() claims again. A session cannot set a number of its own, and the
#     view shows the holder and the registry only to those who may read the settings.
#  5. Every number of a group held: the next server is told so, naming the registry and the
#     holders.
#  6. A registry that cannot be reached, wrong credentials, a registry database without the
#     extension, a registry that is a standby, a registry database dropped and made again:
#     each a clear message in the view and the log, and generators refuse.
#  7. A standby promoted while its primary still runs claims numbers of its own and
#     generates within a second; the old primary goes on under its own: nothing repeats.
#  8. A restore (pg_dump) onto a new server with auto, and pg_upgrade of a server with auto:
#     each claims its own numbers and continues above every key it holds.
#  9. A registry database whose extension is still 0.4.0 (not updated): a server claims,
#     renews and gives back (the release of 0.4.0: free only after the lease).
# majors: 15 19 (the claim is libpq from a background worker, the same on every major; the
# oldest and the newest are enough for its run time, pg_regress claims runs on every major)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

CLAIMS=("snowflake.claim_lease = '3s'" "snowflake.claim_clock_error = '200ms'"
    "snowflake.max_clock_ahead = '1s'")

registry=$(instance registry "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1000" \
    "gdid.authority = 15" "password_encryption = 'scram-sha-256'")
# Password authentication for the claims role over TCP (pg_init's trust stays for local use).
sed -i '1i host all claims 127.0.0.1/32 scram-sha-256' "$registry/data/pg_hba.conf"
pg_start "$registry"
pg_psql "$registry" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE ROLE claims LOGIN PASSWORD 'claims-secret';
GRANT EXECUTE ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval),
    snowflake_registry_renew(text, text, text, integer, interval, interval),
    snowflake_registry_release(text, text, text, integer, interval),
    snowflake_registry_release(text, text, text, integer, interval, bigint) TO claims;
CREATE DATABASE noext;
SQL
REGPORT=$(pg_port_of "$registry")
REGISTRY="host=127.0.0.1 port=$REGPORT dbname=postgres user=claims password=claims-secret"

# claimant NAME [more postgresql.conf lines]: a server with both numbers auto (not started).
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
# held DIR: both numbers held.
held() {
    sql_is "$1" "SELECT count(*) FROM snowflake_node_claims WHERE state = 'held'" 2
}
numbers() {
    sql "$1" "SELECT string_agg(number::text, ' ' ORDER BY kind DESC) FROM snowflake_node_claims"
}

echo "--- 1. eight servers, one configuration"
servers=()
for i in 1 2 3 4 5 6 7 8; do
    servers+=("$(claimant "s$i")")
done
for s in "${servers[@]}"; do start "$s"; done
for s in "${servers[@]}"; do
    wait_until 10 "$(basename "$s") to hold its numbers" held "$s"
done
claimed=$(for s in "${servers[@]}"; do numbers "$s"; done)
echo "claimed (node authority): $(echo "$claimed" | tr '\n' ',')"
[ "$(echo "$claimed" | awk '{print $1}' | sort -u | wc -l)" = 8 ] || fail "node numbers repeat: $claimed"
[ "$(echo "$claimed" | awk '{print $2}' | sort -u | wc -l)" = 8 ] || fail "authorities repeat: $claimed"
out=$CLUSTER_ROOT/out
mkdir -p "$out"
for s in "${servers[@]}"; do
    session "$s" -At -c "SELECT snowflake_next('orders') || ',' || gdid_next('shop', 'orders') FROM generate_series(1, 5000)" \
        >"$out/$(basename "$s")" &
done
wait
cat "$out"/s? | awk -F, '{print $1}' >"$out/ids"
cat "$out"/s? | awk -F, '{print $2}' >"$out/gdids"
load_ids "$registry" ids bigint "$out/ids"
load_ids "$registry" gdids gdid "$out/gdids"
expect "$registry" "SELECT count(*) = 40000 AND count(DISTINCT id) = 40000 FROM ids" t
expect "$registry" "SELECT count(DISTINCT gdid_authority(id)) FROM gdids" 8
expect "$registry" "SELECT count(DISTINCT id) FROM gdids" 40000

echo "--- 2. the registry stopped, then back"
s1=${servers[0]}
pg_stop "$registry" immediate
stopped=$(date +%s%N)
refused_at=
for _ in $(seq 1 100); do
    if ! sql "$s1" "SELECT snowflake_next('orders')" >/dev/null 2>&1; then
        refused_at=$(date +%s%N)
        break
    fi
    sleep 0.05
done
[ -n "$refused_at" ] || fail "s1 still generates 5 s after the registry stopped"
after_ms=$(((refused_at - stopped) / 1000000))
# Renewed every second; the lease (3 s) less the clock error (0.2 s) from the last renewal.
[ "$after_ms" -ge 1500 ] && [ "$after_ms" -le 3000 ] ||
    fail "s1 stopped generating $after_ms ms after the registry stopped (expected within its lease)"
# The authority's lease was renewed a moment after the node number's: it runs out too.
refused() { ! sql "$1" "$2" >/dev/null 2>&1; }
wait_until 1 "s1 to refuse gdids too" refused "$s1" "SELECT gdid_next('shop', 'orders')"
msg=$(sql "$s1" "SELECT gdid_next('shop', 'orders')" 2>&1) && fail "s1 generated without a lease"
echo "$msg" | grep -q "ERROR:  the claim of gdid authority number .* has run out" || fail "unexpected: $msg"
pg_start "$registry"
started=$(date +%s%N)
wait_until 10 "s1 to generate again" sql "$s1" "SELECT snowflake_next('orders')"
echo "figures: registry stopped: s1 generated for $after_ms ms more (lease 3 s, clock error 0.2 s), then refused; generated again $(( ($(date +%s%N) - started) / 1000000 )) ms after the registry was back"

echo "--- 3. a server frozen past its lease"
# A small group whose every number but 0 is held by servers that are not there.
pg_psql "$registry" -d postgres -q <<'SQL'
INSERT INTO snowflake_id_registry.snowflake_registry
SELECT kind, 'small', n, 'elsewhere', now(), now(), now() + interval '1 hour', now() + interval '1 hour', 0, false
  FROM (VALUES ('node', 127), ('authority', 15)) k(kind, top), generate_series(1, top) n;
SQL
f1=$(claimant f1 "snowflake.registry_group = 'small'" "snowflake.node_bits = 7")
start "$f1"
wait_until 10 "f1 to hold its numbers" held "$f1"
[ "$(numbers "$f1")" = "0 0" ] || fail "f1 holds $(numbers "$f1")"
sql "$f1" "SELECT snowflake_next('orders') || ',' || gdid_next('shop', 'orders') FROM generate_series(1, 1000)" >"$out/f1"
# f1 generates without pause while frozen and woken: it must stop once its claim is gone.
(for _ in $(seq 1 200000); do echo "SELECT snowflake_next('orders') || ',' || gdid_next('shop', 'orders');"; done |
    session "$f1" -At >>"$out/f1" 2>"$out/f1.err" || true) &
loop=$!
sleep 0.3
pids=$(pgrep -f -- "-D $f1/data" || true; pgrep -P "$(head -n 1 "$f1/data/postmaster.pid")" || true)
kill -STOP $pids
frozen=$(date +%s%N)
f2=$(claimant f2 "snowflake.registry_group = 'small'" "snowflake.node_bits = 7")
start "$f2"
wait_until 20 "f2 to take the numbers f1 held" held "$f2"
[ "$(numbers "$f2")" = "0 0" ] || fail "f2 holds $(numbers "$f2")"
taken_ms=$((($(date +%s%N) - frozen) / 1000000))
sql "$f2" "SELECT snowflake_next('orders') || ',' || gdid_next('shop', 'orders') FROM generate_series(1, 1000)" >"$out/f2"
kill -CONT $pids
wait $loop || true
msg=$(sql "$f1" "SELECT snowflake_next('orders')" 2>&1) && fail "f1 generated after it woke"
echo "f1 after waking: $msg" | head -n 1
grep -q "ERROR:  " "$out/f1.err" || fail "f1's loop was not stopped by an error"
sql "$f2" "SELECT snowflake_next('orders') || ',' || gdid_next('shop', 'orders') FROM generate_series(1, 1000)" >>"$out/f2"
pg_psql "$registry" -d postgres -qc "CREATE TABLE frozen (server text, id bigint, g gdid)"
for f in f1 f2; do
    awk -F, -v s=$f '{print s "," $1 "," $2}' "$out/$f" |
        pg_psql "$registry" -d postgres -qc "\\copy frozen FROM STDIN WITH (FORMAT csv)"
done
expect "$registry" "SELECT count(*) - count(DISTINCT id) FROM frozen" 0
expect "$registry" "SELECT count(*) - count(DISTINCT g) FROM frozen" 0
expect "$registry" "SELECT count(DISTINCT snowflake_node(id, 'snowflake_id')) FROM frozen" 1
expect "$registry" "SELECT max(gdid_era(g)) FILTER (WHERE server = 'f1') < min(gdid_era(g)) FILTER (WHERE server = 'f2') FROM frozen" t
echo "figures: frozen: f2 held f1's numbers $taken_ms ms after f1 froze (lease 3 s + 1 s ahead + 2 x 0.2 s); f1 made $(wc -l <"$out/f1") values, none after waking"

echo "--- 4. detach and attach"
s2=${servers[1]}
before=$(numbers "$s2")
expect "$s2" "SELECT snowflake_node_detach()::text" ""
msg=$(sql "$s2" "SELECT snowflake_next('orders')" 2>&1) && fail "s2 generated after detach"
echo "$msg" | grep -q "gave its snowflake node number back" || fail "unexpected: $msg"
expect "$registry" "SELECT bool_and(released) FROM snowflake_id_registry.snowflake_registry WHERE holder LIKE '%:$(pg_port_of "$s2"):%'" t
# Given back naming the lease they ended: free once the hold has passed (node number: 1 s
# ahead + 2 x 0.2 s; authority 0.4 s), not the lease (3 s) after the last renewal.
expect "$registry" "SELECT bool_and(reusable_after < now() + interval '1.5 s') FROM snowflake_id_registry.snowflake_registry WHERE holder LIKE '%:$(pg_port_of "$s2"):%'" t
expect "$s2" "SELECT snowflake_node_attach()::text" ""
expect "$s2" "SELECT count(*) FROM snowflake_node_claims WHERE state = 'held'" 2
sql "$s2" "SELECT snowflake_next('orders')" >/dev/null
echo "s2: $before detached, then attached as $(numbers "$s2")"
msg=$(pg_psql "$s2" -d postgres -Atc "CREATE ROLE nobody LOGIN; SET ROLE nobody; SELECT snowflake_node_detach()" 2>&1) &&
    fail "a role without the privilege detached"
echo "$msg" | grep -q "permission denied" || fail "unexpected: $msg"
# The holder (a data directory) and the registry (a host, a user) are for those who may read
# the server's settings.
sql "$s2" "CREATE ROLE plain LOGIN" >/dev/null
hidden=$(pg_psql "$s2" -d postgres -Atq -c "SET ROLE plain" \
    -c "SELECT count(*) FROM snowflake_node_claims WHERE holder IS NULL AND registry IS NULL")
[ "$hidden" = 2 ] || fail "a plain role saw the holder or the registry ($hidden rows hidden of 2)"
# A session's number would bypass the registry: refused on a server that claims.
msg=$(sql "$s2" "SET gdid.authority = 5" 2>&1) && fail "a session set gdid.authority on a server that claims it"
echo "$msg" | grep -q "claims its gdid authority from snowflake.registry" || fail "unexpected: $msg"
# A call that waits (for a lock on its sequence) while the claim ends hands out nothing under
# the number it read before the wait.
sql "$s2" "SELECT snowflake_next('waits'), gdid_next('waits', 'g')" >/dev/null
open_session locker "$s2"
send locker "BEGIN; ALTER SEQUENCE snowflake.waits CACHE 1; ALTER SEQUENCE gdid.\"waits/g\" CACHE 1; SELECT 'locked';"
wait_until 10 "the lock" grep -q '^locked' "$CLUSTER_ROOT/locker.out"
(sql "$s2" "SELECT snowflake_next('waits')" >"$out/waiter" 2>&1 || true) &
waiter=$!
(sql "$s2" "SELECT gdid_next('waits', 'g')" >"$out/gwaiter" 2>&1 || true) &
gwaiter=$!
wait_until 10 "the calls to wait for the locks" sql_is "$s2" \
    "SELECT count(*) FROM pg_locks WHERE relation IN ('snowflake.waits'::regclass, 'gdid.\"waits/g\"'::regclass) AND NOT granted" 2
expect "$s2" "SELECT snowflake_node_detach()::text" ""
send locker "COMMIT;"
wait "$waiter" "$gwaiter"
grep -q "gave its snowflake node number back" "$out/waiter" ||
    fail "a snowflake call that waited across the detach: $(cat "$out/waiter")"
grep -q "gave its gdid authority number back" "$out/gwaiter" ||
    fail "a gdid call that waited across the detach: $(cat "$out/gwaiter")"
close_session locker
expect "$s2" "SELECT snowflake_node_attach()::text" ""
echo "s2: calls waiting across a detach were refused: $(grep -m1 ERROR "$out/waiter"); $(grep -m1 ERROR "$out/gwaiter")"
# The claims worker ended by a signal (it is no backend: pg_terminate_backend cannot) comes
# back, and the same postmaster's holder finds its numbers again.
held_before=$(numbers "$s2")
worker=$(pgrep -P "$(head -n 1 "$s2/data/postmaster.pid")" -f "snowflake_id claims")
kill -TERM "$worker"
wait_until 10 "the worker to come back" sh -c "pgrep -P $(head -n 1 "$s2/data/postmaster.pid") -f 'snowflake_id claims' | grep -vqx $worker"
wait_until 10 "s2 to hold its numbers again" held "$s2"
[ "$(numbers "$s2")" = "$held_before" ] || fail "s2 holds $(numbers "$s2") after its worker came back, not $held_before"
sql "$s2" "SELECT snowflake_next('orders'), gdid_next('shop', 'orders')" >/dev/null
echo "s2: its claims worker ended by SIGTERM came back, holding $held_before again"

echo "--- 5. every number held"
f3=$(claimant f3 "snowflake.registry_group = 'small'" "snowflake.node_bits = 7")
start "$f3"
wait_until 10 "f3 to be refused" sql_is "$f3" \
    "SELECT count(*) FROM snowflake_node_claims WHERE message LIKE '%every node number of group \"small\" (0 .. 127) is held%Holders: 0 (%'" 1
sql "$f3" "SELECT message FROM snowflake_node_claims WHERE kind = 'snowflake node'"

echo "--- 6. registries that cannot serve"
bad() { # NAME REGISTRY EXPECTED-MESSAGE
    local dir
    dir=$(instance "$1" "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
        "gdid.authority = auto" "snowflake.registry = '$2'" "${CLAIMS[@]}")
    start "$dir"
    wait_until 15 "$1: $3" sql_is "$dir" \
        "SELECT count(*) FROM snowflake_node_claims WHERE state = 'unclaimed' AND message LIKE '%$3%'" 2
    msg=$(sql "$dir" "SELECT gdid_next('a', 'b')" 2>&1) && fail "$1 generated"
    echo "$msg" | grep -q "holds no gdid authority number yet" || fail "$1: unexpected: $msg"
    grep -q "WARNING: .*claim: .*$3" "$dir/server.log" || fail "$1: the log does not say $3"
    echo "$1: $(sql "$dir" "SELECT message FROM snowflake_node_claims LIMIT 1")"
    pg_stop "$dir" immediate
}
bad unreachable "host=127.0.0.1 port=$(free_port) dbname=postgres user=claims connect_timeout=2" "cannot be reached"
bad credentials "host=127.0.0.1 port=$REGPORT dbname=postgres user=claims password=wrong" "password authentication failed"
bad noextension "host=127.0.0.1 port=$REGPORT dbname=noext user=claims password=claims-secret" "no snowflake_id extension"
# A registry database dropped and made again under the same name is another registry: the
# claims made with the old one end (failed) instead of being made again in the new one.
regdb_setup() {
    pg_psql "$registry" -d postgres -q <<'SQL'
CREATE DATABASE regdb;
\c regdb
CREATE EXTENSION snowflake_id;
GRANT EXECUTE ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval),
    snowflake_registry_renew(text, text, text, integer, interval, interval),
    snowflake_registry_release(text, text, text, integer, interval),
    snowflake_registry_release(text, text, text, integer, interval, bigint) TO claims;
SQL
}
regdb_setup
rd=$(instance redone "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
    "gdid.authority = auto" "snowflake.registry = 'host=127.0.0.1 port=$REGPORT dbname=regdb user=claims password=claims-secret'" "${CLAIMS[@]}")
start "$rd"
wait_until 10 "redone to hold its numbers" held "$rd"
pg_psql "$registry" -d postgres -qc "DROP DATABASE regdb WITH (FORCE)"
regdb_setup
wait_until 15 "redone's claims to fail" sql_is "$rd" "SELECT count(*) FROM snowflake_node_claims WHERE state = 'failed'" 2
msg=$(sql "$rd" "SELECT snowflake_next('x')" 2>&1) && fail "redone generated with a registry made again"
echo "redone: $(sql "$rd" "SELECT message FROM snowflake_node_claims LIMIT 1")"
pg_stop "$rd" immediate

regstandby=$(standby_of "$registry" regstandby)
pg_start "$regstandby"
bad standby "host=127.0.0.1 port=$(pg_port_of "$regstandby") dbname=postgres user=claims password=claims-secret" "is a standby"
pg_stop "$regstandby" immediate

echo "--- 7. a standby promoted while its primary runs"
s3=${servers[2]}
sql "$s3" "CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), g gdid UNIQUE DEFAULT gdid_next('shop', 'orders'))" >/dev/null
sql "$s3" "INSERT INTO orders SELECT FROM generate_series(1, 1000)" >/dev/null
standby=$(standby_of "$s3" s3standby)
pg_start "$standby"
wait_until 10 "the standby to replay" sql_is "$standby" "SELECT count(*) FROM orders" 1000
expect "$standby" "SELECT state FROM snowflake_node_claims WHERE kind = 'snowflake node'" unclaimed
as_postgres "$PG_BINDIR/pg_ctl" -D "$standby/data" promote -w >/dev/null
promoted=$(date +%s%N)
wait_until 10 "the promoted standby to generate" sql "$standby" "INSERT INTO orders DEFAULT VALUES"
echo "figures: promoted standby generating $(( ($(date +%s%N) - promoted) / 1000000 )) ms after promotion, as $(numbers "$standby") (its primary: $(numbers "$s3"))"
[ "$(numbers "$standby" | cut -d' ' -f1)" != "$(numbers "$s3" | cut -d' ' -f1)" ] || fail "the promoted standby took its primary's node number"
sql "$s3" "INSERT INTO orders SELECT FROM generate_series(1, 1000)" >/dev/null
sql "$standby" "INSERT INTO orders SELECT FROM generate_series(1, 1000)" >/dev/null
sql "$s3" "SELECT id || ',' || g FROM orders" >"$out/s3"
sql "$standby" "SELECT id || ',' || g FROM orders" >"$out/s3standby"
pg_psql "$registry" -d postgres -qc "CREATE TABLE split (id bigint, g gdid)"
# The 1000 rows from before the promotion are in both; every other key once.
cat "$out/s3" "$out/s3standby" | sort -u | pg_psql "$registry" -d postgres -qc "\\copy split FROM STDIN WITH (FORMAT csv)"
expect "$registry" "SELECT count(*) - count(DISTINCT id) FROM split" 0
expect "$registry" "SELECT count(*) - count(DISTINCT g) FROM split" 0
expect "$registry" "SELECT count(*) >= 3000 FROM split" t

echo "--- 8. a restore and pg_upgrade onto new servers"
restored=$(claimant restored)
pg_start "$restored"
wait_until 10 "the new server to claim" sql_is "$registry" "SELECT count(*) FROM snowflake_id_registry.snowflake_registry WHERE holder LIKE '%:$(pg_port_of "$restored"):%'" 2
"$PG_BINDIR/pg_dump" -h "$s3" -p "$(pg_port_of "$s3")" -U postgres -Fc -f "$out/s3.dump" postgres
"$PG_BINDIR/pg_restore" -h "$restored" -p "$(pg_port_of "$restored")" -U postgres -d postgres "$out/s3.dump"
sql "$restored" "INSERT INTO orders SELECT FROM generate_series(1, 1000)" >/dev/null
expect "$restored" "SELECT count(*) FROM orders" 3000
[ "$(numbers "$restored")" != "$(numbers "$s3")" ] || fail "the restored server holds s3's numbers"
s4=${servers[3]}
sql "$s4" "CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), g gdid UNIQUE DEFAULT gdid_next('shop', 'orders'))" >/dev/null
sql "$s4" "INSERT INTO orders SELECT FROM generate_series(1, 1000)" >/dev/null
old_numbers=$(numbers "$s4")
pg_stop "$s4"
upgraded=$(claimant upgraded)
work=$CLUSTER_ROOT/upgrade.work
mkdir -p "$work" && chown postgres: "$work"
(cd "$work" && as_postgres "$PG_BINDIR/pg_upgrade" -b "$PG_BINDIR" -B "$PG_BINDIR" \
    -d "$s4/data" -D "$upgraded/data" -p "$(free_port)" -P "$(free_port)" -s "$work" -U postgres \
    --link >"$work/pg_upgrade.log" 2>&1) ||
    { tail -n 20 "$work/pg_upgrade.log"; fail "pg_upgrade failed"; }
pg_start "$upgraded"
wait_until 10 "the upgraded server to hold its numbers" held "$upgraded"
sql "$upgraded" "INSERT INTO orders SELECT FROM generate_series(1, 1000)" >/dev/null
expect "$upgraded" "SELECT count(*) FROM orders" 2000
echo "figures: restored as $(numbers "$restored") (s3: $(numbers "$s3")); upgraded as $(numbers "$upgraded") (before: $old_numbers); both continue without a duplicate key"

echo "--- 9. a registry still at 0.4.0"
pg_psql "$registry" -d postgres -q <<'SQL'
CREATE DATABASE old040;
\c old040
CREATE EXTENSION snowflake_id VERSION '0.4.0';
GRANT EXECUTE ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval),
    snowflake_registry_renew(text, text, text, integer, interval, interval),
    snowflake_registry_release(text, text, text, integer, interval) TO claims;
SQL
o=$(instance old040 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
    "gdid.authority = auto" "snowflake.registry = 'host=127.0.0.1 port=$REGPORT dbname=old040 user=claims password=claims-secret'" "${CLAIMS[@]}")
start "$o"
wait_until 10 "a server to claim from the 0.4.0 registry" held "$o"
sql "$o" "SELECT snowflake_next('orders'), gdid_next('shop', 'orders')" >/dev/null
renewed=$(sql "$o" "SELECT max(last_renewal) FROM snowflake_node_claims")
wait_until 5 "a renewal by the 0.4.0 registry" sql_is "$o" "SELECT min(last_renewal) > '$renewed' FROM snowflake_node_claims" t
expect "$o" "SELECT snowflake_node_detach()::text" ""
expect "$registry" "SELECT bool_and(released) AND bool_and(reusable_after > now() + interval '1.9 s') FROM snowflake_registry" t old040
expect "$o" "SELECT snowflake_node_attach()::text" ""
sql "$o" "SELECT snowflake_next('orders'), gdid_next('shop', 'orders')" >/dev/null
echo "old040: claimed, renewed, gave back (after the lease) and claimed again from a 0.4.0 registry"
echo "ok"
