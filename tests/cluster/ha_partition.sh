#!/usr/bin/env bash
# Failover under pg_auto_failover while the old primary is cut off but still running and
# generating. Both data nodes claim their numbers from a registry (snowflake.node_id = auto,
# gdid.authority = auto; lease 3 s, clock error 200 ms, max_clock_ahead 1 s, as registry.sh).
# The registry, the monitor and node2 run on the host, the registry and the monitor listening
# on the host side of a veth pair; node1's pg_autoctl and Postgres run in a network namespace
# of their own, behind the other side, reaching the monitor, the registry and node2 through the
# pair. Two clients insert into node1 through its unix socket (so that they go on while its
# network is cut), one into node2 (refused while it is a standby), each row's keys from
# DEFAULT snowflake_next(...) and DEFAULT gdid_next(...), each committed key with the server's
# clock right after it was made, each refusal with its SQLSTATE.
# Asynchronous replication (node2 created with --replication-quorum false): with
# pg_auto_failover's default (synchronous, node2 in the quorum) node1's commits would wait
# for node2 once cut off, and node1's clients would hang instead of generating on; the case
# here is an old primary that still commits on its own.
# node1's pg_autoctl is given timeout.network_partition_timeout = 60 s (default 20 s), so that
# it does not fence its Postgres itself before the link is back: what stops node1's keys is
# the extension's lease alone.
#  1. node1 primary, holding its claims; node2 its standby, holding none.
#  2. node1's link down: node1 runs on; its clients' last key comes within the lease less the
#     clock error after its last renewal (and less than 3 s after the cut), then every insert is
#     refused with 55000.
#  3. The monitor promotes node2: it claims numbers (node1's too, once their lease has passed:
#     then its IDs come after node1's and its gdids are of a later era) and its client
#     commits within seconds of the cut. (pg_autoctl promotes node2's Postgres at
#     stop_replication, read-only until wait_primary, which comes once the monitor's
#     primary_demote_timeout, 5 s here, has passed: node2 claims at the promotion, its client
#     commits from wait_primary.)
#  4. The link back: the monitor demotes node1, which rejoins as node2's standby (pg_rewind)
#     and refuses to generate (25006). node1 reaches the registry before pg_autoctl stops it:
#     it renews a number nobody took meanwhile, claims another for one that was taken, and
#     generates until its demotion (counted, the numbers shown; those rows are lost to
#     pg_rewind, their keys are not repeated); after its postmaster exited, the registry
#     sees at most renewals of the numbers it held (sent before, delivered late), no claim.
# Nothing node1 made (before the cut, while cut off, after the heal) and nothing node2 made
# repeats, in snowflake IDs or gdids.
# Everything it makes (pg_autoctl sessions, servers, the namespace, the veth pair, the
# directories) is removed on any exit.
# majors: 15 (pg_auto_failover is packaged for Debian's PostgreSQL 15 only)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

command -v pg_autoctl >/dev/null || fail "pg_autoctl not found (apt-get install pg-auto-failover-cli)"
command -v ip >/dev/null || fail "ip (iproute2) not found"
[ -f "$("$PG_BINDIR/pg_config" --pkglibdir)/pgautofailover.so" ] ||
    fail "pgautofailover.so not in $("$PG_BINDIR/pg_config" --pkglibdir) (apt-get install postgresql-15-auto-failover)"

CLAIMS=("snowflake.claim_lease = '3s'" "snowflake.claim_clock_error = '200ms'" "snowflake.max_clock_ahead = '1s'")
LEASE_MS=3000 CLOCK_ERROR_MS=200

# Names of this run's own: a network namespace and the two ends of a veth pair.
NS=sfhap$$
VETH_HOST=sfh$$h
VETH_NS=sfh$$n
R="$CLUSTER_ROOT/pgaf"
mkdir -p "$R" && chown postgres: "$R"
export XDG_CONFIG_HOME="$R/config" XDG_DATA_HOME="$R/state" XDG_RUNTIME_DIR="$R/run"
AUTOCTL_ENV=(env XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME"
    XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" PATH="$PG_BINDIR:$PATH")
# autoctl ARGS...: pg_autoctl as postgres on the host; ns_autoctl: the same in the namespace.
autoctl() { runuser -u postgres -- "${AUTOCTL_ENV[@]}" pg_autoctl "$@"; }
ns_autoctl() { ip netns exec "$NS" runuser -u postgres -- "${AUTOCTL_ENV[@]}" pg_autoctl "$@"; }
declare -A port keeper
for n in monitor node1 node2; do port[$n]=$(free_port); done
CLIENTS=()

on_exit() {
    local status=$? n pid
    set +e
    if [ "$status" != 0 ]; then
        for n in monitor node1 node2; do
            [ -f "$R/$n.log" ] && { echo "--- $n.log (end)"; tail -n 30 "$R/$n.log"; }
            for f in "$R/$n"/log/*.log; do [ -f "$f" ] && { echo "--- $n/log (end)"; tail -n 15 "$f"; }; done
        done
        [ -f "$R/claims.node1" ] && { echo "--- node1's claims, claims workers, connections to the registry (ms from the cut)"; cat "$R/claims.node1"; }
        pid=$(head -n 1 "$R/node1/postmaster.pid" 2>/dev/null)
        if [ -n "$pid" ]; then
            echo "--- node1's postmaster ($pid) and its children"
            ps -o pid,stat,wchan:24,etime,args -p "$pid" --ppid "$pid"
            for c in $(pgrep -P "$pid"); do echo "$c: $(tr '\0' ' ' <"/proc/$c/cmdline") stack: $(head -c 600 "/proc/$c/stack" 2>/dev/null | tr '\n' ' ')"; done
            ip netns exec "$NS" ss -tnop state all 2>/dev/null | head -20
        fi
    fi
    touch "$R/stop"
    for pid in "${CLIENTS[@]}"; do
        pkill -P "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null
    done
    # Each pg_autoctl runs in a session of its own: its services rename themselves and restart
    # Postgres, so the whole group goes, then any postmaster left.
    for n in "${!keeper[@]}"; do kill -KILL -- "-${keeper[$n]}" 2>/dev/null; done
    for n in monitor node1 node2; do
        pid=$(head -n 1 "$R/$n/postmaster.pid" 2>/dev/null)
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    done
    for _ in $(seq 1 300); do no_process_left && break; sleep 0.1; done
    no_process_left || echo "warning: processes of this test are still running" >&2
    # The registry (an instance of lib.sh), then the namespace and the link.
    (exit "$status")
    cleanup
    ip netns del "$NS" 2>/dev/null
    ip link del "$VETH_HOST" 2>/dev/null
    ! ip link show "$VETH_HOST" >/dev/null 2>&1 || echo "warning: $VETH_HOST is still there" >&2
    return "$status"
}
# no_process_left: nothing of this test's pg_autoctl sessions or data nodes runs.
no_process_left() {
    local n
    for n in "${!keeper[@]}"; do pgrep -s "${keeper[$n]}" >/dev/null && return 1; done
    ! pgrep -f -- "-D $R/" >/dev/null
}
trap on_exit EXIT

# A /30 of 169.254.0.0/16 (link-local; not 169.254.169.0/24, the metadata address of many
# clouds) that no interface or route of this machine uses, derived from this shell's process
# ID so that parallel runs take different ones (as partition.sh).
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
echo "network: registry, monitor and node2 on $HOST_ADDR ($VETH_HOST), node1 in namespace $NS on $NS_ADDR ($VETH_NS)"

# The registry: on the host side of the pair, a password for claims (as partition.sh).
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
-- Every version of every claim, with when the registry wrote it.
CREATE TABLE claims_history AS SELECT *, clock_timestamp() AS seen FROM snowflake_id_registry.snowflake_registry WITH NO DATA;
CREATE FUNCTION keep_claim() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
    INSERT INTO claims_history SELECT (NEW).*, clock_timestamp();
    RETURN NULL;
END $$;
CREATE TRIGGER keep_claim AFTER INSERT OR UPDATE ON snowflake_id_registry.snowflake_registry FOR EACH ROW EXECUTE FUNCTION keep_claim();
SQL
REGPORT=$(pg_port_of "$registry")
REGISTRY="host=$HOST_ADDR port=$REGPORT dbname=postgres user=claims password=claims-secret"

# The monitor, on the host side of the pair; failover within seconds (as ha_auto_failover.sh).
autoctl create monitor --pgdata "$R/monitor" --pgport "${port[monitor]}" --hostname "$HOST_ADDR" \
    --auth trust --no-ssl --pgctl "$PG_BINDIR/pg_ctl" >"$R/monitor.log" 2>&1 || { tail "$R/monitor.log"; fail "no monitor"; }
cat >>"$R/monitor/postgresql.conf" <<CONF
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 3000
pgautofailover.primary_demote_timeout = 5000
CONF
echo "host pg_auto_failover autoctl_node $net/30 trust" >>"$R/monitor/pg_hba.conf"
# run NODE [ns]: its pg_autoctl service in the background, in a session of its own (in the
# namespace with ns).
run() {
    local in_ns=()
    [ "${2:-}" = ns ] && in_ns=(ip netns exec "$NS")
    "${in_ns[@]}" setsid runuser -u postgres -- "${AUTOCTL_ENV[@]}" pg_autoctl run --pgdata "$R/$1" >>"$R/$1.log" 2>&1 &
    keeper[$1]=$!
    disown # killed on purpose; the shell need not report it
}
run monitor
monitor_uri="postgres://autoctl_node@$HOST_ADDR:${port[monitor]}/pg_auto_failover?sslmode=disable"
wait_until 30 "the monitor" autoctl show state --pgdata "$R/monitor"
state() {
    autoctl show state --pgdata "$R/monitor" --json 2>/dev/null |
        python3 -c "import json, sys; print(next((n['current_group_state'] for n in json.load(sys.stdin) if n['nodename'] == '$1'), ''))"
}
is_state() { [ "$(state "$1")" = "$2" ]; }
writable() { is_state "$1" primary || is_state "$1" wait_primary; }
stamp() { date +%s.%N; }
ms_between() { python3 -c "print(round(($2 - $1) * 1000))"; }

echo "--- 1. node1 (in the namespace) primary, node2 its asynchronous standby"
ns_autoctl create postgres --pgdata "$R/node1" --pgport "${port[node1]}" --hostname "$NS_ADDR" --name node1 \
    --monitor "$monitor_uri" --auth trust --no-ssl --pgctl "$PG_BINDIR/pg_ctl" >>"$R/node1.log" 2>&1 ||
    { tail "$R/node1.log"; fail "node1 was not created"; }
# What pg_autoctl preloads, plus the extension; both numbers claimed. node2 gets all of it
# (and the pg_hba.conf lines for the pair) from node1 through pg_basebackup.
autoctl_libraries=$(sed -n "s/^shared_preload_libraries = //p" "$R/node1/postgresql-auto-failover.conf" | tail -n 1 | tr -d "'")
libraries="${autoctl_libraries:+$autoctl_libraries, }snowflake_id"
cat >>"$R/node1/postgresql.conf" <<CONF
shared_preload_libraries = '$libraries'
snowflake.node_id = auto
gdid.authority = auto
snowflake.registry = '$REGISTRY'
$(printf '%s\n' "${CLAIMS[@]}")
CONF
printf '%s\n' "host all all $net/30 trust" "host replication all $net/30 trust" >>"$R/node1/pg_hba.conf"
autoctl config set --pgdata "$R/node1" timeout.network_partition_timeout 60 >>"$R/node1.log" 2>&1
run node1 ns
# socket NODE: the unix socket directory of NODE's Postgres (read once from its
# postmaster.pid: it stays when pg_autoctl restarts it); psqln NODE ARGS: psql through it.
declare -A SOCKET=()
socket() {
    [ -n "${SOCKET[$1]:-}" ] || SOCKET[$1]=$(sed -n 5p "$R/$1/postmaster.pid")
    echo "${SOCKET[$1]}"
}
psqln() { "$PG_BINDIR/psql" -X -v ON_ERROR_STOP=1 -h "$(socket "$1")" -p "${port[$1]}" -U postgres -d postgres "${@:2}"; }
q1() { psqln "$1" -Atq -c "$2"; }
preloaded() { [ "$(q1 "$1" "SHOW shared_preload_libraries" 2>/dev/null)" = "$libraries" ]; }
wait_until 60 "node1 single" is_state node1 single
wait_until 60 "node1 with the extension preloaded" preloaded node1
socket node1 >/dev/null
psqln node1 -q -c "CREATE EXTENSION snowflake_id" -c "$HA_ORDERS"
held() { [ "$(q1 "$1" "SELECT count(*) FROM snowflake_node_claims WHERE state = 'held'" 2>/dev/null)" = 2 ]; }
wait_until 15 "node1 to hold its numbers" held node1
# number NODE KIND: the number of that kind ('snowflake node', 'gdid authority') NODE holds.
number() { q1 "$1" "SELECT number FROM snowflake_node_claims WHERE kind = '$2'"; }
n1_node=$(number node1 "snowflake node")
n1_auth=$(number node1 "gdid authority")
autoctl create postgres --pgdata "$R/node2" --pgport "${port[node2]}" --hostname "$HOST_ADDR" --name node2 \
    --monitor "$monitor_uri" --auth trust --no-ssl --pgctl "$PG_BINDIR/pg_ctl" --replication-quorum false \
    >>"$R/node2.log" 2>&1 || { tail "$R/node2.log"; fail "node2 was not created"; }
run node2
wait_until 120 "node2 secondary" is_state node2 secondary
wait_until 30 "node1 primary" is_state node1 primary
asynchronous() { [ -z "$(q1 node1 'SHOW synchronous_standby_names')" ]; }
wait_until 30 "asynchronous replication (no synchronous_standby_names on node1)" asynchronous
wait_until 30 "node2 with the extension preloaded" preloaded node2
socket node2 >/dev/null
expect_n() { # NODE SQL EXPECTED
    local got
    got=$(q1 "$1" "$2") || fail "$1: query failed: $2"
    [ "$got" = "$3" ] || fail "$1: $2: expected $3, got $got"
}
expect_n node2 "SELECT string_agg(state, ',' ORDER BY kind) FROM snowflake_node_claims" "unclaimed,unclaimed"
echo "ok: node1 primary, holding node $n1_node and authority $n1_auth; node2 its asynchronous standby, holding none"

# client NAME NODE: inserts one row per transaction into NODE through its unix socket until
# $R/stop exists (at most 40,000 tries, 300 s). Each committed insert: "server-time id gdid"
# in $R/NAME.ok (the server's clock right after the keys were made); each failure:
# "client-time SQLSTATE" in $R/NAME.err (conn: no connection).
client() {
    local name=$1 node=$2 i out code started=$SECONDS
    for ((i = 0; i < 40000 && SECONDS - started < 300; i++)); do
        [ -f "$R/stop" ] && return 0
        if out=$("$PG_BINDIR/psql" -X -Atq -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -F ' ' \
            "host=$(socket "$node") port=${port[$node]} user=postgres dbname=postgres connect_timeout=2" \
            -c "INSERT INTO orders (client) VALUES (${name#c}) RETURNING extract(epoch FROM clock_timestamp()), id, g" \
            2>"$R/$name.last"); then
            echo "$out" >>"$R/$name.ok"
        else
            code=$(sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\): .*/\1/p' "$R/$name.last" | head -n 1)
            echo "$(stamp) ${code:-conn} $(head -n 1 "$R/$name.last")" >>"$R/$name.err"
            sleep 0.02
        fi
    done
}
touch "$R/c1.ok" "$R/c2.ok" "$R/c3.ok" "$R/c1.err" "$R/c2.err" "$R/c3.err"
client c1 node1 &
CLIENTS+=($!)
client c2 node1 &
CLIENTS+=($!)
client c3 node2 &
CLIENTS+=($!)
wait_until 30 "inserts on node1" lines_at_least 200 "$R/c1.ok" "$R/c2.ok"
# ok_after FILES TIME N: N committed inserts in FILES after TIME.
ok_after() {
    local t=$1 n=$2
    shift 2
    [ "$(cat "$@" | awk -v t="$t" '$1 > t' | wc -l)" -ge "$n" ]
}
# err_after FILE TIME CODE: a failure with CODE in FILE after TIME.
err_after() { [ -n "$(awk -v t="$2" -v c="$3" '$1 > t && $2 == c' "$1")" ]; }

echo "--- 2. node1 cut off"
# watch_claims: from the cut until $R/stop (at most 90 s), in $R/claims.node1, each time one
# changes: node1's view of its claims (its server log would not tell: pg_rewind replaces it
# with node2's), the claims workers running, node1's TCP connections to the registry.
watch_claims() {
    local last='' last_workers='' last_tcp='' now workers tcp i
    for ((i = 0; i < 900; i++)); do
        [ -f "$R/stop" ] && return 0
        now=$(q1 node1 "SELECT string_agg(kind || ' ' || coalesce(number::text, '-') || ' ' || state || coalesce(' (' || message || ')', ''), '; ' ORDER BY kind DESC) FROM snowflake_node_claims" 2>&1 | head -n 1) || true
        if [ ! -f "$R/node1.exited" ] && ! kill -0 "$node1_pid" 2>/dev/null; then
            stamp >"$R/node1.exited"
            echo "+$(ms_between "$cut" "$(cat "$R/node1.exited")") ms: node1's postmaster (the one cut off) exited" >>"$R/claims.node1"
        fi
        # node1's first postmaster's claims worker (or one left without a postmaster).
        workers=$(ps -eo pid=,ppid=,args= | awk -v p="$node1_pid" '/snowflake_id claims/ && !/awk/ && ($2 == p || $2 == 1) {print $1 " (parent " $2 (($2 == p) ? ", node1'"'"'s first postmaster" : "") ")"}' | paste -sd, || true)
        if [ "$workers" != "$last_workers" ]; then
            echo "+$(ms_between "$cut" "$(stamp)") ms: claims workers: ${workers:-none}" >>"$R/claims.node1"
            last_workers=$workers
        fi
        # node1's TCP connections to the registry: state, bytes not yet acknowledged, timer.
        tcp=$(ip netns exec "$NS" ss -tnoH state all dst "$HOST_ADDR:$REGPORT" 2>/dev/null |
            awk '{t = ""; for (i = 1; i <= NF; i++) if ($i ~ /^timer:/) t = " " $i; print $1 " send-q " $3 t}' | sed 's/,[0-9.]*[a-z]*,[0-9]*)/)/' | paste -sd, || true)
        if [ "$tcp" != "$last_tcp" ]; then
            echo "+$(ms_between "$cut" "$(stamp)") ms: node1's connections to the registry: ${tcp:-none}" >>"$R/claims.node1"
            last_tcp=$tcp
        fi
        if [ "$now" != "$last" ]; then
            echo "+$(ms_between "$cut" "$(stamp)") ms: $now" >>"$R/claims.node1"
            last=$now
        fi
        sleep 0.1
    done
}
# Right after a renewal of node1's node number (every second), so that the cut comes at a
# known point of the lease.
renewal() { q1 node1 "SELECT last_renewal FROM snowflake_node_claims WHERE kind = 'snowflake node'"; }
renewed_after() { [ "$(renewal)" != "$1" ]; }
wait_until 3 "a renewal of node1's node number" renewed_after "$(renewal)"
node1_pid=$(head -n 1 "$R/node1/postmaster.pid")
cut=$(stamp)
ip netns exec "$NS" ip link set "$VETH_NS" down
watch_claims &
CLIENTS+=($!)
wait_until 6 "node1's clients to be refused (55000)" err_after "$R/c1.err" "$cut" 55000
wait_until 3 "both node1 clients refused (55000)" err_after "$R/c2.err" "$cut" 55000
expect_n node1 "SELECT string_agg(state, ',' ORDER BY kind) FROM snowflake_node_claims" "expired,expired"
renewed_node=$(q1 node1 "SELECT extract(epoch FROM last_renewal) FROM snowflake_node_claims WHERE kind = 'snowflake node'")
renewed_auth=$(q1 node1 "SELECT extract(epoch FROM last_renewal) FROM snowflake_node_claims WHERE kind = 'gdid authority'")
n1_holder=$(q1 node1 "SELECT holder FROM snowflake_node_claims WHERE kind = 'snowflake node'")
echo "node1 refused: $(awk -v t="$cut" '$1 > t && $2 == "55000"' "$R/c1.err" | head -n 1 | cut -d' ' -f2-)"

echo "--- 3. the monitor promotes node2"
wait_until 90 "node2 to commit inserts" ok_after "$cut" 1 "$R/c3.ok"
first_node2=$(awk '{print $1}' "$R/c3.ok" | sort -n | head -n 1)
wait_until 60 "node2 the primary" writable node2
wait_until 15 "node2 to hold its numbers" held node2
n2_node=$(number node2 "snowflake node")
n2_auth=$(number node2 "gdid authority")
n2_since=$(q1 node2 "SELECT extract(epoch FROM min(since)) FROM snowflake_node_claims")
wait_until 30 "node2 to commit 200 inserts" ok_after "$cut" 200 "$R/c3.ok"
# node1 runs on, cut off, its clients refused.
[ "$(head -n 1 "$R/node1/postmaster.pid")" = "$node1_pid" ] && kill -0 "$node1_pid" || fail "node1's Postgres did not keep running"
before_heal=$(stamp)
wait_until 3 "node1's clients refused still" err_after "$R/c1.err" "$before_heal" 55000
! ok_after "$(python3 -c "print($cut + 3)")" 1 "$R/c1.ok" "$R/c2.ok" || fail "node1 committed inserts 3 s or more after the cut"
n1_state_cut=$(state node1)

echo "--- 4. the link back"
log_lines=$(wc -l <"$R/node1.log")
healed=$(stamp)
ip netns exec "$NS" ip link set "$VETH_NS" up
echo "+$(ms_between "$cut" "$healed") ms: the link back" >>"$R/claims.node1"
wait_until 120 "node1 secondary" is_state node1 secondary
secondary_at=$(stamp)
refusal=$("$PG_BINDIR/psql" -X -Atq -v VERBOSITY=verbose -h "$(socket node1)" -p "${port[node1]}" -U postgres -d postgres \
    -c "SELECT gdid_next('shop', 'orders')" 2>&1 || true)
grep -q "ERROR:  25006" <<<"$refusal" || fail "node1 generated (or failed otherwise) as a standby: $refusal"
wait_until 30 "node2 to go on" ok_after "$secondary_at" 50 "$R/c3.ok"
touch "$R/stop"
for pid in "${CLIENTS[@]}"; do wait "$pid" || fail "a client loop failed"; done
CLIENTS=()

# Everything in tables on the registry.
pg_psql "$registry" -d postgres -q <<'SQL'
CREATE TABLE made (client int, at numeric, id snowflake, g gdid);
CREATE TABLE failed (client int, at numeric, code text);
SQL
for c in 1 2 3; do
    awk -v c="$c" '{print c "\t" $1 "\t" $2 "\t" $3}' "$R/c$c.ok" |
        pg_psql "$registry" -d postgres -qc "\\copy made FROM STDIN"
    awk -v c="$c" '{print c "\t" $1 "\t" $2}' "$R/c$c.err" |
        pg_psql "$registry" -d postgres -qc "\\copy failed FROM STDIN"
done
q() { sql "$registry" "$1"; }
# Nothing repeats, across both nodes and all phases.
expect "$registry" "SELECT count(*) - count(DISTINCT id) FROM made" 0
expect "$registry" "SELECT count(*) - count(DISTINCT g) FROM made" 0
! grep -h "duplicate key" "$R"/c?.err || fail "a duplicate key"
# node1's keys under its numbers until the heal, node2's under its own.
expect "$registry" "SELECT count(*) FROM made WHERE client < 3 AND at < $healed AND (snowflake_node(id) <> $n1_node OR gdid_authority(g) <> $n1_auth)" 0
expect "$registry" "SELECT count(*) FROM made WHERE client = 3 AND (snowflake_node(id) <> $n2_node OR gdid_authority(g) <> $n2_auth)" 0
expect "$registry" "SELECT count(*) FROM made WHERE client = 3 AND at < $cut" 0
# A number of node1's that node2 got once node1's lease had passed (a new claim may take it,
# as registry.sh's frozen holder): node2's IDs under it later than all of node1's, its gdids of
# a later era.
if [ "$n2_node" = "$n1_node" ]; then
    expect "$registry" "SELECT max(id) FILTER (WHERE client < 3 AND snowflake_node(id) = $n1_node) < min(id) FILTER (WHERE client = 3) FROM made" t
fi
if [ "$n2_auth" = "$n1_auth" ]; then
    expect "$registry" "SELECT max(gdid_era(g)) FILTER (WHERE client < 3 AND gdid_authority(g) = $n1_auth) < min(gdid_era(g)) FILTER (WHERE client = 3) FROM made" t
fi
# node1's last key while cut off: within the lease less the clock error after the last renewal
# of either number, and less than 3 s after the cut; between the cut and the heal node1
# failed with 55000 only.
last_cut=$(q "SELECT max(at) FROM made WHERE client < 3 AND at < $healed")
bound="$((LEASE_MS - CLOCK_ERROR_MS)) / 1000.0"
expect "$registry" "SELECT $last_cut <= $renewed_node + $bound AND $last_cut <= $renewed_auth + $bound" t
expect "$registry" "SELECT $last_cut < $cut + 3" t
expect "$registry" "SELECT coalesce(string_agg(DISTINCT code, ','), '') FROM failed WHERE client < 3 AND at > $cut AND at < $healed" 55000
# After the heal: node1 demoted; whatever it made meanwhile, under which numbers.
after_heal=$(q "SELECT count(*) FROM made WHERE client < 3 AND at >= $healed")
after_heal_numbers=$(q "SELECT coalesce(string_agg(DISTINCT snowflake_node(id) || '/' || gdid_authority(g), ','), 'none') FROM made WHERE client < 3 AND at >= $healed")
heal_codes=$(q "SELECT coalesce(string_agg(code || ' x' || n, ', ' ORDER BY code), 'none') FROM (SELECT code, count(*) n FROM failed WHERE client < 3 AND at >= $healed GROUP BY code) s")
first_refused_heal=$(q "SELECT min(at) FROM failed WHERE client < 3 AND at >= $healed AND code <> '55000'")
# The registry's rows of node1's first numbers: still node1's (its lease's end against the
# heal, given back or not) or another holder's.
reg_n1=$(q "SELECT string_agg(kind || ' ' || number || CASE WHEN split_part(holder, ' #', 1) <> '$n1_holder' THEN ' held by another'
                                                          WHEN released THEN ' given back by node1'
                                                          ELSE ' node1''s, its lease ending ' || round(extract(epoch FROM lease_until) - $healed, 1) || ' s after the heal' END,
                                    ', ' ORDER BY kind DESC)
              FROM snowflake_id_registry.snowflake_registry WHERE (kind, number) IN (('node', $n1_node), ('authority', $n1_auth))")
# node1's postmaster (the one that was cut off) gone with its demotion.
[ -f "$R/node1.exited" ] || fail "node1's postmaster (pid $node1_pid) did not exit on its demotion"
exited=$(cat "$R/node1.exited")
last_write=$(q "SELECT coalesce(extract(epoch FROM max(seen)), 0) FROM claims_history WHERE split_part(holder, ' #', 1) = '$n1_holder'")
# Writes to the registry as node1's first postmaster after it exited: only renewals of numbers it
# held (a renewal sent before and delivered late by TCP, see node1's connections above), never a
# claim of another number.
h1="split_part(holder, ' #', 1) = '$n1_holder'"
late=$(q "SELECT count(*) FROM claims_history WHERE $h1 AND seen > to_timestamp($exited)")
expect "$registry" "SELECT count(*) FROM claims_history h WHERE $h1 AND seen > to_timestamp($exited)
                      AND NOT EXISTS (SELECT FROM claims_history e WHERE $h1 AND e.seen <= to_timestamp($exited) AND (e.kind, e.number) = (h.kind, h.number))" 0
if [ "$late" != 0 ]; then
    echo "the registry's rows written as node1's first postmaster from 2 s before the heal (ms from the cut; kind, number, lease until, released):"
    q "SELECT round((extract(epoch FROM seen) - $cut) * 1000), kind, number, round((extract(epoch FROM lease_until) - $cut) * 1000), released FROM claims_history WHERE $h1 AND seen > to_timestamp($healed) - interval '2 s' ORDER BY seen" | sed 's/^/  /'
fi
renewals_after=$(q "SELECT count(*) FROM claims_history WHERE split_part(holder, ' #', 1) = '$n1_holder' AND seen > to_timestamp($healed)")
# What node1's pg_autoctl did once the link was back.
transitions=$(tail -n +"$((log_lines + 1))" "$R/node1.log" | grep -o 'FSM transition from "[a-z_]*" to "[a-z_]*"' |
    sed 's/FSM transition from "\([a-z_]*\)" to "\([a-z_]*\)"/\1 -> \2/' | paste -sd, | sed 's/,/, /g')
# Rows node1 committed after the last one node2 replayed are gone from the tables (asynchronous).
lost=$(q1 node2 "SELECT count(*) FROM orders WHERE client < 3" | awk -v m="$(q "SELECT count(*) FROM made WHERE client < 3")" '{print m - $1}')

echo "figures: cut off: node1 ran on (monitor: $n1_state_cut); its last key $(ms_between "$cut" "$last_cut") ms after the cut," \
    "$(ms_between "$renewed_node" "$last_cut") ms after its node number's last renewal and $(ms_between "$renewed_auth" "$last_cut") ms after its authority's" \
    "(bound: lease less clock error, $((LEASE_MS - CLOCK_ERROR_MS)) ms); then $(q "SELECT count(*) FROM failed WHERE client < 3 AND at > $cut AND at < $healed") refusals, all 55000, until the heal"
echo "figures: failover: node2 claimed node $n2_node and authority $n2_auth (node1: $n1_node, $n1_auth; gdid eras: node1 $(q "SELECT max(gdid_era(g)) FROM made WHERE client < 3 AND at < $healed"), node2 $(q "SELECT min(gdid_era(g)) FROM made WHERE client = 3")) $(ms_between "$cut" "$n2_since") ms after the cut," \
    "its first committed insert $(ms_between "$cut" "$first_node2") ms after the cut"
echo "figures: healed: node1 secondary $(ms_between "$healed" "$secondary_at") ms after the link was back;" \
    "it committed $after_heal inserts in between (node/authority: $after_heal_numbers), first refusal other than 55000 after $( [ -n "$first_refused_heal" ] && ms_between "$healed" "$first_refused_heal" || echo -) ms;" \
    "its clients' failures after the heal: $heal_codes; pg_autoctl on node1: ${transitions:-no transition};" \
    "in the registry: $reg_n1; $renewals_after claims and renewals by node1 after the heal, the last $(ms_between "$healed" "$last_write") ms after it," \
    "its postmaster exited $(ms_between "$healed" "$exited") ms after it ($late of them after that)"
echo "node1's claims (snowflake_node_claims), the claims workers and node1's connections to the registry from the cut on, as they changed:"
sed 's/^/  /' "$R/claims.node1"
echo "figures: $(q "SELECT count(*) FROM made WHERE client < 3") keys from node1 ($(q "SELECT count(*) FROM made WHERE client < 3 AND at > $cut AND at < $healed") after the cut," \
    "$lost not in node2's table: asynchronous), $(q "SELECT count(*) FROM made WHERE client = 3") from node2; no snowflake ID or gdid repeated"
echo "ha_partition: ok"
