#!/usr/bin/env bash
# What a role can do with what a claiming server shows it, or with the registry's claiming
# role (snowflake.node_id = auto, gdid.authority = auto; lease 3 s, clock error 200 ms,
# max_clock_ahead 1 s, as registry.sh). Three servers claim from one registry, each through
# another form of connection string libpq reads: s1 keyword=value pairs whose password holds
# "://", s2 a URI with a percent-encoded keyword (?%70assword=) and an sslpassword, s3 no
# password at all (a passfile); s5 a string libpq cannot parse (an unquoted password with a
# blank).
#  1. No secret leaves snowflake.registry: the view shows each string as libpq reads it, every
#     password masked; a role without the privileges of pg_read_all_settings sees no holder,
#     registry or message, through the view or through the function behind it, and a
#     generator's error gives it no DETAIL (a superuser's does; the log has it, masked). A
#     string libpq cannot parse is not used, and libpq's error, which quotes pieces of it, is
#     shown nowhere. No server log holds a password.
#  2. The claiming role, in sessions of its own on the registry, cannot stop the servers: 40
#     claims in a transaction left open for 12 s (four leases), a claim in a statement that runs
#     8 s, 900 claims in one open transaction, arguments beyond the bounds (22023 at once).
#     Meanwhile all three generate without pause and never fail a call, their renewals go on,
#     and a server started during the open transaction claims a number within a second or two.
#  3. A role that may only connect to the registry's database cannot name the claims' table
#     (PREPARE of an UPDATE and CREATE RULE, which queue a lock before they check privileges,
#     behind which every renewal waited), cannot keep a new server from claiming with advisory
#     locks (any role may take those), and cannot plant an operator the worker's queries run;
#     the claiming role cannot pass a lease or hold of more than a day written with months.
#  4. A server frozen past its lease and hold, whose number the claiming role takes over in a
#     transaction it keeps open, is told it lost the number and claims another at once.
# majors: 15 19 (the registry's functions are the extension's SQL, the same on every major; the
# oldest and the newest are enough for its run time, pg_regress claims runs on every major)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap cleanup_with_jobs EXIT

CLAIMS=("snowflake.claim_lease = '3s'" "snowflake.claim_clock_error = '200ms'"
    "snowflake.max_clock_ahead = '1s'")
SECRET='cl://aims-secret'
SSL_SECRET='ssl-pass-phrase'

registry=$(instance registry "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1000" \
    "gdid.authority = 15" "password_encryption = 'scram-sha-256'")
sed -i '1i host all claims 127.0.0.1/32 scram-sha-256' "$registry/data/pg_hba.conf"
pg_start "$registry"
pg_psql "$registry" -d postgres -q <<SQL
CREATE EXTENSION snowflake_id;
CREATE ROLE claims LOGIN PASSWORD '$SECRET';
GRANT EXECUTE ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval),
    snowflake_registry_renew(text, text, text, integer, interval, interval),
    snowflake_registry_release(text, text, text, integer, interval),
    snowflake_registry_release(text, text, text, integer, interval, bigint) TO claims;
SQL
REGPORT=$(pg_port_of "$registry")
# A passfile for s3, readable by the server's user only (libpq ignores it otherwise); a ':'
# in a password is written '\:' there.
PASSFILE=$CLUSTER_ROOT/pgpass
echo "127.0.0.1:$REGPORT:postgres:claims:${SECRET//:/\\:}" >"$PASSFILE"
chown postgres: "$PASSFILE" && chmod 600 "$PASSFILE"
declare -A REGISTRY=(
    [s1]="host=127.0.0.1 port=$REGPORT dbname=postgres user=claims password=$SECRET"
    [s2]="postgresql://claims@127.0.0.1:$REGPORT/postgres?%70assword=cl%3A%2F%2Faims-secret&sslpassword=$SSL_SECRET&sslmode=disable"
    [s3]="host=127.0.0.1 port=$REGPORT dbname=postgres user=claims passfile=$PASSFILE"
)

claimant() {
    instance "$1" "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
        "gdid.authority = auto" "snowflake.registry = '${REGISTRY[$1]}'" "${CLAIMS[@]}"
}
held() {
    sql_is "$1" "SELECT count(*) FROM snowflake_node_claims WHERE state = 'held'" 2
}
declare -A dir
for s in s1 s2 s3; do
    dir[$s]=$(claimant "$s")
    pg_start "${dir[$s]}"
    sql "${dir[$s]}" "CREATE EXTENSION snowflake_id; CREATE ROLE plain LOGIN" >/dev/null
done
for s in s1 s2 s3; do wait_until 10 "$s to hold its numbers" held "${dir[$s]}"; done

echo "--- 1. no secret leaves snowflake.registry"
for s in s1 s2 s3; do
    shown=$(sql "${dir[$s]}" "SELECT registry FROM snowflake_node_claims LIMIT 1")
    echo "$s: $shown"
    case $shown in *aims-secret* | *"$SSL_SECRET"*) fail "$s's view shows a password: $shown" ;; esac
done
sql "${dir[s1]}" "SELECT registry FROM snowflake_node_claims LIMIT 1" | grep -q "password=\*\*\*\*\*\*\*\*" ||
    fail "s1's password is not shown masked"
sql "${dir[s2]}" "SELECT registry FROM snowflake_node_claims LIMIT 1" | grep -q "sslpassword=\*\*\*\*\*\*\*\*" ||
    fail "s2's sslpassword is not shown masked"
# as_plain DIR SQL...: what a role without pg_read_all_settings gets (errors verbose).
as_plain() {
    local d=$1
    shift
    "$PG_BINDIR/psql" -X -At -v VERBOSITY=verbose -h "$d" -p "$(pg_port_of "$d")" -U plain -d postgres "$@" 2>&1
}
for s in s1 s2 s3; do
    [ "$(as_plain "${dir[$s]}" -c "SELECT count(*) FROM snowflake_node_claims_rows() WHERE holder IS NULL AND registry IS NULL AND message IS NULL")" = 2 ] ||
        fail "$s: a plain role reads the holder, the registry or the message through snowflake_node_claims_rows()"
    [ "$(as_plain "${dir[$s]}" -c "SELECT count(*) FROM snowflake_node_claims WHERE holder IS NULL AND registry IS NULL AND message IS NULL AND state = 'held'")" = 2 ] ||
        fail "$s: a plain role reads the holder, the registry or the message through the view"
done
# A generator refused (the numbers given back): to a plain role, the reason without a DETAIL
# naming the registry; to a superuser, the claim's message.
expect "${dir[s1]}" "SELECT snowflake_node_detach()::text" ""
sql "${dir[s1]}" "GRANT CREATE ON SCHEMA snowflake TO plain" >/dev/null
plain_err=$(as_plain "${dir[s1]}" -c "SELECT snowflake_next('orders')") && fail "s1 generated after detach"
echo "plain role: $plain_err"
grep -q "55000" <<<"$plain_err" || fail "not 55000: $plain_err"
! grep -q "DETAIL\|127.0.0.1\|host=\|registry:" <<<"$plain_err" || fail "a plain role's error names the registry: $plain_err"
super_err=$(pg_psql "${dir[s1]}" -d postgres -At -v VERBOSITY=verbose -c "SELECT snowflake_next('orders')" 2>&1) &&
    fail "s1 generated after detach"
grep -q "DETAIL:  number .* given back" <<<"$super_err" || fail "a superuser's error lacks the claim's message: $super_err"
grep -A2 "ERROR:  this server gave its snowflake node number back" "${dir[s1]}/server.log" |
    grep -q "DETAIL:  .*registry: .*password=\*\*\*\*\*\*\*\*" || fail "s1's log lacks the refusal's DETAIL"
expect "${dir[s1]}" "SELECT snowflake_node_attach()::text" ""
# An unparsable string: libpq would say 'missing "=" after "phrase"', a piece of the password.
s5=$(instance s5 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
    "gdid.authority = auto" "snowflake.registry = 'host=127.0.0.1 port=$REGPORT user=claims password=pass phrase'" "${CLAIMS[@]}")
pg_start "$s5"
sql "$s5" "CREATE EXTENSION snowflake_id" >/dev/null
wait_until 10 "s5 to say why it claims nothing" sql_is "$s5" \
    "SELECT count(*) FROM snowflake_node_claims WHERE state = 'unclaimed' AND message LIKE '%not a connection string libpq can parse%'" 2
echo "s5: $(sql "$s5" "SELECT registry || ': ' || message FROM snowflake_node_claims LIMIT 1")"
! grep -q "phrase" "$s5/server.log" || fail "s5's log quotes a piece of its password"
! sql "$s5" "SELECT registry || message FROM snowflake_node_claims" | grep -q "phrase" || fail "s5's view quotes a piece of its password"
pg_stop "$s5" immediate

echo "--- 2. the claiming role cannot stop the servers"
TABLES=$GENERATING_TABLES
LOOP=$(generating_loop "110" 0.005)
LOOPS=()
for s in s1 s2 s3; do
    sql "${dir[$s]}" "$TABLES" >/dev/null
    session "${dir[$s]}" -c "SET synchronous_commit = off" -c "$LOOP" >"${dir[$s]}/loop.log" 2>&1 &
    LOOPS+=($!)
done
made_some() { sql_is "$1" "SELECT count(*) > 100 FROM made" t; }
for s in s1 s2 s3; do wait_until 10 "$s to generate" made_some "${dir[$s]}"; done
# as_claims SQL...: a session of the claiming role on the registry, over TCP with its password.
as_claims() {
    PGPASSWORD=$SECRET "$PG_BINDIR/psql" -X -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$REGPORT" -U claims -d postgres "$@"
}
last_renewals() {
    local s
    for s in s1 s2 s3; do
        sql "${dir[$s]}" "SELECT extract(epoch FROM min(last_renewal)) FROM snowflake_node_claims"
    done
}
renewed_since() { # every server renewed both numbers after time $1
    local t
    for t in $(last_renewals); do
        python3 -c "import sys; sys.exit(0 if $t > $1 else 1)" || return 1
    done
}
# before TIME: whether it is still earlier than TIME (seconds since the epoch): renewals seen
# by then came while the intruder's transaction or statement was still running.
before() { python3 -c "import sys, time; sys.exit(0 if time.time() < $1 else 1)"; }
attack_start=$(date +%s.%N)
# 40 claims of the lowest free numbers in a transaction that stays open for 12 s; meanwhile a
# new server claims (each number costs its claim 10 ms, within a quarter of its 3 s lease; at
# 100 ms each, as before, it could not claim until the transaction ended).
as_claims -c "BEGIN" -c "SELECT count(*) FROM generate_series(1, 40) i, LATERAL snowflake_registry_claim('node', 'default', 'intruder open ' || i, 1023, '10s', '12s') c" \
    -c "SELECT pg_sleep(12)" -c "COMMIT" >"$CLUSTER_ROOT/open.out" 2>&1 &
open_tx=$!
open_ends=$(python3 -c "print($attack_start + 12)")
sleep 1
s4=$(instance s4 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
    "gdid.authority = auto" "snowflake.registry = '${REGISTRY[s3]}'" "${CLAIMS[@]}")
s4_start=$(date +%s%N)
pg_start "$s4"
sql "$s4" "CREATE EXTENSION snowflake_id" >/dev/null
wait_until 5 "s4 to claim during the open transaction" held "$s4"
s4_ms=$((($(date +%s%N) - s4_start) / 1000000))
mid=$(date +%s.%N)
wait_until 5 "renewals during the open transaction" renewed_since "$mid"
before "$open_ends" || fail "the servers renewed only once the open transaction had ended"
wait "$open_tx" || fail "the open transaction failed: $(cat "$CLUSTER_ROOT/open.out")"
# A claim inside a statement that runs 8 s.
as_claims -c "SELECT c.number, pg_sleep(8) FROM snowflake_registry_claim('node', 'default', 'intruder long', 1023, '10s', '12s') c" \
    >"$CLUSTER_ROOT/long.out" 2>&1 &
long=$!
long_ends=$(python3 -c "print($(date +%s.%N) + 8)")
sleep 1
mid=$(date +%s.%N)
wait_until 5 "renewals during the long statement" renewed_since "$mid"
before "$long_ends" || fail "the servers renewed only once the long statement had ended"
wait "$long" || fail "the long statement failed: $(cat "$CLUSTER_ROOT/long.out")"
# 900 claims in one transaction, open for 8 s (the group is 1024 numbers, 44 of them held).
as_claims -c "BEGIN" -c "SELECT count(*) FROM generate_series(1, 900) i, LATERAL snowflake_registry_claim('node', 'default', 'intruder ' || i, 1023, '10s', '12s') c" \
    -c "SELECT pg_sleep(8)" -c "COMMIT" >"$CLUSTER_ROOT/many.out" 2>&1 &
many=$!
many_ends=$(python3 -c "print($(date +%s.%N) + 8)")
sleep 2
mid=$(date +%s.%N)
wait_until 5 "renewals during the 900 open claims" renewed_since "$mid"
before "$many_ends" || fail "the servers renewed only once the 900 open claims had ended"
wait "$many" || fail "the 900 claims failed: $(cat "$CLUSTER_ROOT/many.out")"
# Arguments beyond the bounds: refused at once.
for call in "snowflake_registry_claim('node', 'default', 'intruder x', 2147483647, '10s', '12s')" \
    "snowflake_registry_claim('node', 'default', 'intruder x', 1023, '100 years', '12s')" \
    "snowflake_registry_renew('node', 'default', 'intruder x', 0, '10s', '100 years')"; do
    t0=$(date +%s%N)
    msg=$(as_claims -v VERBOSITY=verbose -c "SET statement_timeout = '10s'" -c "SELECT * FROM $call" 2>&1) && fail "accepted: $call"
    grep -q "22023" <<<"$msg" || fail "$call: $msg"
    [ $((($(date +%s%N) - t0) / 1000000)) -lt 2000 ] || fail "$call took more than 2 s"
done
attack_end=$(date +%s.%N)
sleep 2
for s in s1 s2 s3; do sql "${dir[$s]}" "UPDATE control SET stop = true" >/dev/null; done
for pid in "${LOOPS[@]}"; do wait "$pid" || fail "a generating loop failed"; done
for s in s1 s2 s3; do
    expect "${dir[$s]}" "SELECT count(*) FROM refused" 0
    gap=$(sql "${dir[$s]}" "SELECT round(extract(epoch FROM max(gap)) * 1000) FROM (SELECT at - lag(at) OVER (ORDER BY at) gap FROM made) g")
    [ "$gap" -lt 1000 ] || fail "$s paused $gap ms while the claiming role attacked"
    echo "$s: $(sql "${dir[$s]}" "SELECT count(*) FROM made") values, longest pause $gap ms, no call failed"
done
echo "figures: the claiming role's 40 claims in an open transaction, long statement and 900 open claims ($(python3 -c "print(round($attack_end - $attack_start, 1))") s): no server failed a call; s4 claimed $s4_ms ms after its start during the open transaction"

echo "--- 3. a role that may only connect, and month-long intervals"
pg_psql "$registry" -d postgres -q -c "CREATE ROLE nobody LOGIN" -c "GRANT CREATE ON SCHEMA public TO nobody" \
    -c "CREATE TABLE public.planted_calls (at timestamptz)" -c "GRANT INSERT ON public.planted_calls TO nobody"
as_nobody() { "$PG_BINDIR/psql" -X -At -v ON_ERROR_STOP=1 -h "$registry" -p "$REGPORT" -U nobody -d postgres "$@"; }
for stmt in "PREPARE u AS UPDATE snowflake_id_registry.snowflake_registry SET holder = holder" \
    "CREATE RULE r AS ON INSERT TO snowflake_id_registry.snowflake_registry DO INSTEAD NOTHING"; do
    msg=$(as_nobody -v VERBOSITY=verbose -c "$stmt" 2>&1) && fail "nobody could: $stmt"
    grep -q "42501: permission denied for schema snowflake_id_registry" <<<"$msg" || fail "$stmt: $msg"
done
# An operator the worker's '* 1000' would have bound to in public (float8 * integer has no
# exact match in pg_catalog).
as_nobody -q <<'SQL'
CREATE FUNCTION public.planted(float8, integer) RETURNS float8 LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO public.planted_calls VALUES (now()); RETURN $1 * $2::float8; END $$;
CREATE OPERATOR public.* (LEFTARG = float8, RIGHTARG = integer, FUNCTION = public.planted);
SQL
# Every advisory lock of the keys a claim used to take for a group's numbers, held by nobody
# while a new server of that group claims.
as_nobody -c "SELECT count(pg_advisory_lock(hashtext('snowflake_registry ' || k || ' locked'), n))
                FROM unnest(ARRAY['node', 'authority']) k, generate_series(0, 1023) n" -c "SELECT pg_sleep(20)" \
    >"$CLUSTER_ROOT/advisory.out" 2>&1 &
advisory=$!
sleep 1
s6=$(instance s6 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = auto" \
    "gdid.authority = auto" "snowflake.registry = '${REGISTRY[s3]}'" "snowflake.registry_group = 'locked'" "${CLAIMS[@]}")
pg_start "$s6"
sql "$s6" "CREATE EXTENSION snowflake_id" >/dev/null
wait_until 10 "s6 to claim while every advisory key of its group is held" held "$s6"
mid=$(date +%s.%N)
wait_until 5 "renewals after the planted operator" renewed_since "$mid"
expect "$registry" "SELECT count(*) FROM public.planted_calls" 0
kill "$advisory" 2>/dev/null || true
for call in "snowflake_registry_claim('node', 'default', 'intruder m', 1023, '12000 months -359999 days', '12s')" \
    "snowflake_registry_claim('node', 'default', 'intruder m', 1023, '10s', '3000000 months -89999999 days')" \
    "snowflake_registry_renew('node', 'default', 'intruder m', 0, '10s', '12000 months -359999 days')" \
    "snowflake_registry_release('node', 'default', 'intruder m', 0, '12000 months -359999 days')"; do
    msg=$(as_claims -v VERBOSITY=verbose -c "SELECT * FROM $call" 2>&1) && fail "accepted: $call"
    grep -q "22023" <<<"$msg" || fail "$call: $msg"
done
echo "ok: a role that may only connect named no claim, held up no claim, planted no operator; leases and holds written with months refused"

echo "--- 4. a holder past its lease, whose row another claim is taking over"
# s3's claims worker frozen past its lease and the hold after it (as in a registry outage
# longer than both), then the claiming role takes its node number over in a transaction it
# keeps open: the worker, thawed, learns at once that the number is lost (its renewal does not
# wait for that transaction) and claims another, while the transaction is still open.
worker=$(ps -o pid=,args= --ppid "$(head -n 1 "${dir[s3]}/data/postmaster.pid")" | awk '/snowflake_id claims/ {print $1}')
[ -n "$worker" ] || fail "s3 has no claims worker"
old=$(sql "${dir[s3]}" "SELECT number FROM snowflake_node_claims WHERE kind = 'snowflake node'")
kill -STOP "$worker"
sleep 6 # past the 3 s lease and the 1.4 s hold after it
takeover_ends=$(python3 -c "print($(date +%s.%N) + 15)")
# (Claims up to s3's number, the lowest free first, until one is s3's.)
as_claims -c "BEGIN" -c "SELECT n FROM (SELECT i, (snowflake_registry_claim('node', 'default', 'intruder takeover ' || i, $old, '10s', '12s')).number n
                             FROM generate_series(1, $((old + 1))) i) c WHERE n = $old LIMIT 1" \
    -c "SELECT pg_sleep(15)" -c "COMMIT" >"$CLUSTER_ROOT/takeover.out" 2>&1 &
takeover=$!
sleep 1
kill -CONT "$worker"
another_number() {
    sql_is "${dir[s3]}" "SELECT state = 'held' AND number <> $old FROM snowflake_node_claims WHERE kind = 'snowflake node'" t
}
wait_until 8 "s3 to hold another node number while the takeover's transaction is open" another_number
before "$takeover_ends" || fail "s3 claimed another number only once the takeover's transaction had ended"
wait "$takeover" || fail "the takeover failed: $(cat "$CLUSTER_ROOT/takeover.out")"
grep -qx "$old" "$CLUSTER_ROOT/takeover.out" || fail "the claiming role did not take s3's number $old: $(cat "$CLUSTER_ROOT/takeover.out")"
echo "ok: s3, past its lease, lost number $old to an open takeover and holds $(sql "${dir[s3]}" "SELECT number FROM snowflake_node_claims WHERE kind = 'snowflake node'") instead"

# No server's log, nor the registry's, holds a password.
for d in "${dir[@]}" "$s4" "$s5" "$s6" "$registry"; do
    ! grep -l "aims-secret\|$SSL_SECRET" "$d/server.log" || fail "$(basename "$d")'s log holds a password"
done
echo "ok"
