# shellcheck shell=bash
# Shared by the cluster tests: throwaway instances under one directory, removed on any exit.

# A function run inside $(...) keeps `set -e`: without it, a failed step there (a copy, a
# start) would be ignored and the function would go on to print a passing result.
shopt -s inherit_errexit
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/pgcluster.sh"

CLUSTER_ROOT=$(mktemp -d /tmp/snowflake_id_cluster.XXXXXX)
chmod 755 "$CLUSTER_ROOT"

cleanup() {
    local status=$? dir
    # A failed test shows the end of each server's log: the directory goes with it.
    if [ "$status" != 0 ]; then
        for dir in "$CLUSTER_ROOT"/*/; do
            [ -f "$dir/server.log" ] && { echo "--- $(basename "$dir")/server.log (end)"; tail -n 15 "$dir/server.log"; }
        done
    fi
    for dir in "$CLUSTER_ROOT"/*/; do
        [ -d "$dir/data" ] && pg_stop "${dir%/}" immediate
    done
    rm -rf "$CLUSTER_ROOT"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# free_port: a TCP port on loopback that nothing listens on, for a new instance.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# instance NAME [postgresql.conf lines...]: a new instance in $CLUSTER_ROOT/NAME on a free
# port (not started); prints its directory.
instance() {
    local dir="$CLUSTER_ROOT/$1"
    shift
    pg_init "$dir" "$(free_port)" "$@" >&2 || return 1
    echo "$dir"
}

# standby_of PRIMARY NAME [pg_basebackup args...]: a streaming standby of PRIMARY
# (pg_basebackup -R) in $CLUSTER_ROOT/NAME on a free port (not started); prints its directory.
standby_of() {
    local primary=$1 dir="$CLUSTER_ROOT/$2" port
    shift 2
    port=$(free_port)
    mkdir -p "$dir" && chown postgres: "$dir" && chmod 700 "$dir"
    as_postgres "$PG_BINDIR/pg_basebackup" -h "$primary" -p "$(pg_port_of "$primary")" \
        -U postgres -D "$dir/data" -R -X stream --checkpoint=fast "$@" >&2 ||
        { echo "pg_basebackup failed" >&2; return 1; }
    {
        echo "port = $port"
        echo "unix_socket_directories = '$dir'"
    } >>"$dir/data/postgresql.conf"
    echo "port = $port" >"$dir/postgresql.conf"
    echo "$dir"
}

# sql DIR QUERY [DB]: what QUERY returns, unaligned, without headers (database postgres by
# default).
sql() {
    pg_psql "$1" -d "${3:-postgres}" -Atc "$2"
}

# session DIR [psql args...]: a psql session on DIR that stops at the first error, bounded by
# 120 s: for work in the background.
session() {
    local dir=$1
    shift
    timeout 120 "$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$(pg_port_of "$dir")" \
        -U postgres -d postgres "$@"
}

# dsn DIR [DB]: a libpq connection string to DIR.
dsn() {
    echo "host=$1 port=$(pg_port_of "$1") user=postgres dbname=${2:-postgres}"
}

# lines_at_least N FILES...: whether the files hold N lines or more together; for wait_until
# (the files must exist when it is called: a glob is expanded once).
lines_at_least() {
    local n=$1
    shift
    [ "$(cat "$@" 2>/dev/null | wc -l)" -ge "$n" ]
}

# wait_until SECONDS DESCRIPTION COMMAND...: runs COMMAND every 0.1 s until it succeeds; fails
# the test with DESCRIPTION after SECONDS.
wait_until() {
    local seconds=$1 what=$2 i
    shift 2
    for ((i = 0; i < seconds * 10; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    fail "timed out after $seconds s waiting for $what"
}

# sql_is DIR SQL EXPECTED: whether the single value SQL returns (in database postgres) equals
# EXPECTED; for wait_until.
sql_is() {
    [ "$(pg_psql "$1" -d postgres -Atc "$2" 2>/dev/null)" = "$3" ]
}

# expect DIR SQL EXPECTED [DB]: the single value SQL returns must equal EXPECTED.
expect() {
    local got
    got=$(sql "$1" "$2" "${4:-postgres}") || fail "query failed: $2"
    [ "$got" = "$3" ] || fail "$2: expected $3, got $got"
    echo "ok: $2 = $got"
}

# libfaketime from Debian's faketime package: FAKETIME=-30s makes a process's clock run
# 30 s behind (all clocks, including the coarse ones the generator reads).
FAKETIME_LIB=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
[ -n "$FAKETIME_LIB" ] || fail "libfaketime not found (apt-get install faketime)"

# stream DIR OUT N SQL: one session running SQL up to N times, every row appended to OUT
# as soon as psql has it, stopping at the first error (the server going away, say).
# Bounded by a 120 s timeout.
stream() {
    local dir=$1 out=$2 n=$3 query=$4
    for _ in $(seq 1 "$n"); do echo "$query"; done |
        session "$dir" -At >>"$out" 2>/dev/null || true
}

# load_ids DIR TABLE TYPE FILE...: a table of the IDs in the files, for checking with SQL.
load_ids() {
    local dir=$1 table=$2 type=$3 f
    shift 3
    pg_psql "$dir" -d postgres -qc "CREATE TABLE $table (id $type)"
    for f in "$@"; do
        pg_psql "$dir" -d postgres -qc "\\copy $table FROM '$f'"
    done
}

# The postmaster's clock, seconds behind this shell's.
clock_lag() {
    local theirs ours
    theirs=$(pg_psql "$1" -d postgres -Atc "SELECT floor(extract(epoch FROM clock_timestamp()))")
    ours=$(date +%s)
    echo $((ours - theirs))
}

# The table of the replication tests: both keys from their defaults, and where and in which
# order each row was made.
ORDERS_TABLE="CREATE TABLE orders (
    id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'),
    g gdid NOT NULL UNIQUE DEFAULT gdid_next('shop', 'orders'),
    node int NOT NULL, session int NOT NULL, pos int NOT NULL, note text)"

# The children of orders in the replication tests: keys of their own from the defaults, and
# both keys of an order (often another server's) in foreign-key columns.
ITEMS_TABLE="CREATE TABLE items (
    id snowflake PRIMARY KEY DEFAULT snowflake_next('items'),
    g gdid NOT NULL UNIQUE DEFAULT gdid_next('shop', 'items'),
    order_id snowflake NOT NULL REFERENCES orders (id),
    order_g gdid NOT NULL REFERENCES orders (g),
    node int NOT NULL)"

# touch_others DIR NODE SESSIONS: as server NODE (1 to 3), in one transaction, updates,
# deletes and adds items to orders that other servers made in sessions 1..SESSIONS (rows every
# server has): an update of each row whose pos % 10 = NODE, a delete of those with 3 + NODE,
# an item for those with 6 + NODE, so that no two servers change one row.
touch_others() {
    session "$1" -c "BEGIN" \
        -c "UPDATE orders SET note = 'updated on $2' WHERE node <> $2 AND session <= $3 AND pos % 10 = $2" \
        -c "INSERT INTO items (order_id, order_g, node)
            SELECT id, g, $2 FROM orders WHERE node <> $2 AND session <= $3 AND pos % 10 = 6 + $2" \
        -c "DELETE FROM orders WHERE node <> $2 AND session <= $3 AND pos % 10 = 3 + $2" \
        -c "COMMIT"
}

# The contents of orders and items, as one checksum: equal on servers that converged.
CONTENTS="SELECT md5((SELECT string_agg(id || ' ' || g || ' ' || node || ' ' || session || ' ' || pos || ' ' || coalesce(note, '-'), ',' ORDER BY id) FROM orders)
                  || (SELECT coalesce(string_agg(id || ' ' || g || ' ' || order_id || ' ' || order_g || ' ' || node, ',' ORDER BY id), '') FROM items))"

# same_contents DIRS...: whether orders and items are the same on all of them; for wait_until.
same_contents() {
    local d
    for d in "$@"; do pg_psql "$d" -d postgres -Atc "$CONTENTS" || return 1; done |
        sort -u | wc -l | grep -qx 1
}

# insert_orders DIR NODE SESSION ROUNDS: one session inserting ROUNDS x 100 rows into orders,
# committing every 100, each row marked with NODE, SESSION and its position. Bounded by a
# 120 s timeout.
insert_orders() {
    session "$1" -c "DO \$\$
BEGIN
    FOR r IN 0..$(($4 - 1)) LOOP
        INSERT INTO orders (node, session, pos) SELECT $2, $3, r * 100 + g FROM generate_series(1, 100) g;
        COMMIT;
    END LOOP;
END \$\$;"
}

# wait_for_orders DIR N: up to 60 s for orders to hold N rows.
wait_for_orders() {
    wait_until 60 "$2 rows in orders on $1" sql_is "$1" "SELECT count(*) FROM orders" "$2"
}

# check_orders DIR N: orders holds N rows, both keys unique, each stamped with the node number
# and authority of the server that made it (node), each session's rows in the order it made
# them, and no server reported as sharing a number.
check_orders() {
    expect "$1" "SELECT count(*) FROM orders" "$2"
    expect "$1" "SELECT count(DISTINCT id) + count(DISTINCT g) FROM orders" "$((2 * $2))"
    expect "$1" "SELECT count(*) FROM orders WHERE snowflake_node(id) <> node OR gdid_authority(g) <> node" "0"
    expect "$1" "SELECT count(*) FROM (SELECT id, g, lag(id) OVER w AS prev_id, lag(g) OVER w AS prev_g FROM orders WINDOW w AS (PARTITION BY node, session ORDER BY pos)) s WHERE id <= prev_id OR g <= prev_g" "0"
    expect "$1" "SELECT count(*) FROM snowflake_node_conflicts" "0"
}

# Clients writing through a failover (ha_*.sh). HA_DIR holds their files, HA_DSN is the
# multi-host connection string (target_session_attrs=read-write) they reconnect through.
# The orders table of an HA test: both keys generated, the client that inserted each row.
HA_ORDERS="CREATE TABLE orders (
    id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'),
    g gdid NOT NULL UNIQUE DEFAULT gdid_next('shop', 'orders'),
    client int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())"

# ha_client N: inserts one row per transaction until $HA_DIR/stop exists (at most 20,000
# attempts); each committed insert's time and keys go to $HA_DIR/client.N.
ha_client() {
    local i out
    for ((i = 0; i < 20000; i++)); do
        [ -f "$HA_DIR/stop" ] && return 0
        if out=$("$PG_BINDIR/psql" -X -Atq "$HA_DSN" -c "INSERT INTO orders (client) VALUES ($1) RETURNING id, g" 2>>"$HA_DIR/client.$1.err"); then
            echo "$(date +%s.%N) $out" | tr '|' ' ' >>"$HA_DIR/client.$1"
        else
            sleep 0.1
        fi
    done
}
HA_CLIENTS=()
# ha_start_clients: two clients, from no keys; ha_stop_clients: stops them and waits.
ha_start_clients() {
    rm -f "$HA_DIR"/client.[12] "$HA_DIR/stop"
    ha_client 1 &
    HA_CLIENTS=($!)
    ha_client 2 &
    HA_CLIENTS+=($!)
}
ha_stop_clients() {
    touch "$HA_DIR/stop"
    wait "${HA_CLIENTS[@]}"
    rm -f "$HA_DIR/stop"
}
# ha_kill_clients: for a test's EXIT trap: ends the clients (and their psql) at once, so that
# after a failure none goes on beside the following tests.
ha_kill_clients() {
    local pid
    for pid in "${HA_CLIENTS[@]}"; do
        pkill -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
    HA_CLIENTS=()
}
# ha_returned: the clients' lines, "time id gdid", one per committed insert.
ha_returned() { cat "$HA_DIR"/client.[12] 2>/dev/null; }
# ha_committed: how many inserts committed so far.
ha_committed() { ha_returned | wc -l; }
# ha_inserts_after TIME N: whether N inserts committed after TIME (seconds since the epoch).
ha_inserts_after() { [ "$(ha_returned | awk -v t="$1" '$1 > t' | wc -l)" -ge "$2" ]; }
# ha_first_after TIME: seconds from TIME to the first insert committed after it.
ha_first_after() {
    python3 -c "print(round($(ha_returned | awk -v t="$1" '$1 > t {print $1}' | sort -n | head -n 1) - $1, 1))"
}
# ha_check_returned PORT: on the primary at PORT, every key a client got was returned once and
# is in orders, each client's keys increased, and no client saw a duplicate key.
ha_check_returned() {
    local c q=("$PG_BINDIR/psql" -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d postgres -Atq)
    for c in 1 2; do awk -v c="$c" '{print c "\t" $1 "\t" $2 "\t" $3}' "$HA_DIR/client.$c"; done >"$HA_DIR/returned.tsv"
    "${q[@]}" -c "CREATE TABLE returned (client int, at numeric, id bigint, g gdid)" \
        -c "\\copy returned FROM '$HA_DIR/returned.tsv'"
    [ "$("${q[@]}" -c "SELECT count(*) - count(DISTINCT id) FROM returned")" = 0 ] || fail "a snowflake ID was returned twice"
    [ "$("${q[@]}" -c "SELECT count(*) - count(DISTINCT g) FROM returned")" = 0 ] || fail "a gdid was returned twice"
    [ "$("${q[@]}" -c "SELECT count(*) FROM returned r LEFT JOIN orders o USING (id, g) WHERE o.id IS NULL")" = 0 ] ||
        fail "a key returned by a committed insert is not in the table"
    [ "$("${q[@]}" -c "SELECT count(*) FROM (SELECT id <= lag(id) OVER w OR g <= lag(g) OVER w AS back
                                              FROM returned WINDOW w AS (PARTITION BY client ORDER BY at)) s
                         WHERE back")" = 0 ] || fail "a client's keys did not always increase"
    ! grep -h "duplicate key" "$HA_DIR"/client.*.err || fail "a duplicate key"
}
# ha_asynchronous_figures KILLED PORT: after an asynchronous failover at time KILLED to the
# primary at PORT, the keys returned before and after, those returned before and missing
# now, and those handed out twice; counted, not asserted.
ha_asynchronous_figures() {
    local before after lost again again_g
    before=$(ha_returned | awk -v k="$1" '$1 <= k' | wc -l)
    after=$(ha_returned | awk -v k="$1" '$1 > k' | wc -l)
    again=$(ha_returned | awk '{print $2}' | sort | uniq -d | wc -l)
    again_g=$(ha_returned | awk '{print $3}' | sort | uniq -d | wc -l)
    ha_returned | awk -v k="$1" '$1 <= k {print $2}' | sort >"$HA_DIR/before.ids"
    "$PG_BINDIR/psql" -X -Atq -h 127.0.0.1 -p "$2" -U postgres -d postgres -c "SELECT id FROM orders" |
        sort >"$HA_DIR/now.ids"
    lost=$(comm -23 "$HA_DIR/before.ids" "$HA_DIR/now.ids" | wc -l)
    echo "figures: asynchronous: $before keys returned before the kill, $after after it; returned before the kill and missing after the failover: $lost; handed out again after the failover: $again snowflake IDs, $again_g gdids"
}

# Keys across updates and upgrades (update_from_0_3.sh, pg_upgrade.sh, pg_upgrade_majors.sh).
#
# release_bindir VERSION [PG_CONFIG]: the bindir of a private copy of that PostgreSQL (default:
# the one under test) with release VERSION of the extension installed (scripts/old_release.sh:
# built once, cached under .build/releases). A server started with it runs VERSION; started
# again with the PostgreSQL's own bindir, the same data directory runs the current release.
# (0.3.0 kept each sequence's lease in $PGDATA/snowflake_id/leases and in WAL records of its
# own; from 0.4.0 every sequence is a sequence relation, and ALTER EXTENSION snowflake_id
# UPDATE adopts the file's leases into them.)
release_bindir() {
    local config
    config=$(bash "$(dirname "${BASH_SOURCE[0]}")/../../scripts/old_release.sh" "$1" \
        "${2:-${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}}") || return 1
    "$config" --bindir
}

# The settings of a server of KEYS_FILL: 13 node bits leave 9 counter bits (512 IDs a
# millisecond), so that a burst of 5 M IDs runs about 10 s ahead of the clock.
KEYS_SETTINGS=("shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 5" "gdid.authority = 5"
    "snowflake.node_bits = 13" "snowflake.max_clock_ahead = '150s'")

# KEYS_FILL, for psql on a server running release 0.3.0 or the current one, in a database
# without the extension: orders (snowflake key) and invoices (gdid key) filled by their DEFAULTs (every
# row era 'old'); values handed out and never stored: a run-ahead burst of 5 M snowflake IDs
# (so that the sequence, and its lease, run about 10 s ahead of the clock, above which more
# rows are then stored), a block of 100,000 gdids, then more rows, then values above all of
# them again (so that only the lease knows the largest), and two sequences no table names
# (tickets, billing/vouchers), which only their leases can carry. handed_out keeps the
# largest value each sequence handed out.
KEYS_FILL="CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), era text NOT NULL DEFAULT 'old');
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), era text NOT NULL DEFAULT 'old');
CREATE TABLE handed_out (seq text PRIMARY KEY, snowflake_max snowflake, gdid_max gdid);
INSERT INTO orders SELECT FROM generate_series(1, 5000);
INSERT INTO invoices SELECT FROM generate_series(1, 5000);
SELECT count(*) FROM snowflake_next_batch('orders', 5000000) \\g /dev/null
SELECT count(*) FROM gdid_next_block('billing', 'invoices', 100000) \\g /dev/null
INSERT INTO orders SELECT FROM generate_series(1, 2000);
INSERT INTO invoices SELECT FROM generate_series(1, 2000);
INSERT INTO handed_out SELECT 'orders', max(id), NULL FROM snowflake_next_batch('orders', 1000) id;
INSERT INTO handed_out SELECT 'invoices', NULL, max(g) FROM gdid_next_block('billing', 'invoices', 1000) g;
INSERT INTO handed_out SELECT 'tickets', max(id), NULL FROM snowflake_next_batch('tickets', 1000) id;
INSERT INTO handed_out SELECT 'vouchers', NULL, max(g) FROM gdid_next_block('billing', 'vouchers', 1000) g;
ANALYZE orders, invoices;"

# keys_check NAME DIR DB ROWS [stored-only]: in DB of DIR (filled by KEYS_FILL, now at the
# current release), ROWS more rows of each table with era 'new' (0: rows made otherwise), then:
# every key unique, every new key above every old one and above every value the old release
# handed out (stored-only: above the stored ones only, for a copy that carried no lease), and
# the next value of tickets and billing/vouchers above theirs. Prints a figures line.
keys_check() {
    local name=$1 dir=$2 db=$3 rows=$4 scope=${5:-} got
    lq() { pg_psql "$dir" -d "$db" -Atc "$1"; }
    lis() {
        got=$(lq "$1") || fail "$name: $1 failed"
        [ "$got" = "$2" ] || fail "$name ($db): $1: expected $2, got $got"
    }
    lis "SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'" \
        "$(sed -n 's/^version = "\(.*\)"/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../../Cargo.toml")"
    if [ "$rows" -gt 0 ]; then
        lq "INSERT INTO orders (era) SELECT 'new' FROM generate_series(1, $rows)" >/dev/null &&
            lq "INSERT INTO invoices (era) SELECT 'new' FROM generate_series(1, $rows)" >/dev/null ||
            fail "$name ($db): inserting with the defaults failed (a duplicate key: a sequence started below the old keys)"
    fi
    lis "SELECT count(*) FILTER (WHERE era = 'new') > 0 AND count(*) = count(DISTINCT id) FROM orders" t
    lis "SELECT count(*) FILTER (WHERE era = 'new') > 0 AND count(*) = count(DISTINCT id) FROM invoices" t
    lis "SELECT min(id) FILTER (WHERE era = 'new') > max(id) FILTER (WHERE era = 'old') FROM orders" t
    lis "SELECT min(id) FILTER (WHERE era = 'new') > max(id) FILTER (WHERE era = 'old') FROM invoices" t
    if [ "$scope" != stored-only ]; then
        lis "SELECT min(id) FILTER (WHERE era = 'new') > (SELECT snowflake_max FROM handed_out WHERE seq = 'orders') FROM orders" t
        lis "SELECT min(id) FILTER (WHERE era = 'new') > (SELECT gdid_max FROM handed_out WHERE seq = 'invoices') FROM invoices" t
        lis "SELECT snowflake_next('tickets') > snowflake_max FROM handed_out WHERE seq = 'tickets'" t
        lis "SELECT gdid_next('billing', 'vouchers') > gdid_max FROM handed_out WHERE seq = 'vouchers'" t
    fi
    # The largest value before: stored or handed out (stored only, for stored-only).
    local sf_before="(SELECT max(id) FROM orders WHERE era = 'old')" g_before="(SELECT max(id) FROM invoices WHERE era = 'old')"
    if [ "$scope" != stored-only ]; then
        sf_before="greatest($sf_before, (SELECT snowflake_max FROM handed_out WHERE seq = 'orders'))"
        g_before="greatest($g_before, (SELECT gdid_max FROM handed_out WHERE seq = 'invoices'))"
    fi
    echo "figures: $name ($db, $(lq "SHOW server_version" | cut -d' ' -f1)):" \
        "$(lq "SELECT count(*) FILTER (WHERE era = 'old') || ' + ' || count(*) FILTER (WHERE era = 'new') FROM orders") snowflake rows" \
        "and $(lq "SELECT count(*) FILTER (WHERE era = 'old') || ' + ' || count(*) FILTER (WHERE era = 'new') FROM invoices") gdid rows before + after, none repeated;" \
        "the largest ID before ${scope:+($scope) }$(lq "SELECT round(extract(epoch FROM snowflake_timestamp($sf_before) - now())::numeric, 1)") s ahead of the clock now," \
        "the first after it $(lq "SELECT round(extract(epoch FROM snowflake_timestamp(min(id)) - snowflake_timestamp($sf_before))::numeric, 3) FROM orders WHERE era = 'new'") s later;" \
        "gdid counters $(lq "SELECT gdid_counter($g_before) || ' -> ' || min(gdid_counter(id)) FROM invoices WHERE era = 'new'")"
}

# cleanup_with_jobs: cleanup, after ending the test's background jobs and their children (by
# their process IDs), so that none writes into the directories cleanup removes. A test with
# background loops sets it as its trap: trap cleanup_with_jobs EXIT.
cleanup_with_jobs() {
    local status=$? pid
    # errexit off: (exit "$status") hands cleanup the test's status, and must not end the trap.
    set +e
    for pid in $(jobs -p); do
        pkill -P "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null
    done
    (exit "$status")
    cleanup
}

# open_session NAME DIR [DB]: a psql session on DIR that stays open, fed through a FIFO:
# send NAME SQL runs SQL in it (errors do not end it), and its output and errors go to
# $CLUSTER_ROOT/NAME.out; session_pid NAME prints its backend's process ID; close_session
# NAME ends it. Bounded by a 300 s timeout.
declare -A SESSION_FD=()
open_session() {
    local name=$1 dir=$2 fd
    mkfifo "$CLUSTER_ROOT/$name.in"
    timeout 300 "$PG_BINDIR/psql" -X -q -At -h "$dir" -p "$(pg_port_of "$dir")" -U postgres \
        -d "${3:-postgres}" <"$CLUSTER_ROOT/$name.in" >"$CLUSTER_ROOT/$name.out" 2>&1 &
    exec {fd}>"$CLUSTER_ROOT/$name.in"
    SESSION_FD[$name]=$fd
}
send() {
    echo "$2" >&"${SESSION_FD[$1]}"
}
session_pid() {
    send "$1" "SELECT 'backend ' || pg_backend_pid();"
    wait_until 10 "the backend of session $1" grep -q '^backend ' "$CLUSTER_ROOT/$1.out"
    sed -n 's/^backend //p' "$CLUSTER_ROOT/$1.out" | head -n 1
}
close_session() {
    local fd=${SESSION_FD[$1]}
    exec {fd}>&-
    unset "SESSION_FD[$1]"
}

# The synchronisation errors of a row s of pg_stat_subscription_stats, on every major: 19 counts
# them apart for tables and sequences (sync_table_error_count, sync_seq_error_count) where 15
# to 18 have sync_error_count.
SYNC_ERRORS="coalesce((to_jsonb(s) ->> 'sync_error_count')::bigint,
    (to_jsonb(s) ->> 'sync_table_error_count')::bigint + (to_jsonb(s) ->> 'sync_seq_error_count')::bigint)"

# A server generating without pause while something happens to its numbers (the registry
# tests): GENERATING_TABLES makes the tables; generating_loop SECONDS PAUSE prints a DO block
# that makes a snowflake ID and a gdid, or records the refusal, in a transaction every PAUSE
# seconds, until SECONDS have passed or control.stop is set.
GENERATING_TABLES="CREATE TABLE control (stop boolean NOT NULL);
INSERT INTO control VALUES (false);
CREATE TABLE made (id bigint NOT NULL, g gdid NOT NULL, at timestamptz NOT NULL);
CREATE TABLE refused (state text, message text, at timestamptz NOT NULL);"
generating_loop() {
    cat <<SQL
DO \$\$
DECLARE
    started timestamptz := clock_timestamp();
BEGIN
    FOR i IN 1..10000000 LOOP
        EXIT WHEN clock_timestamp() > started + interval '$1 s' OR (SELECT stop FROM control);
        BEGIN
            INSERT INTO made VALUES (snowflake_next('orders'), gdid_next('shop', 'orders'), clock_timestamp());
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO refused VALUES (SQLSTATE, SQLERRM, clock_timestamp());
        END;
        COMMIT;
        PERFORM pg_sleep($2);
    END LOOP;
END \$\$
SQL
}

# Tests that run Patroni with etcd (ha_patroni, registry_failover) keep their files under $R
# and the process group of each manager, and of etcd, in the array session.
# kill_postmaster NODE: kill -9 of its postmaster and everything in its session, once sure
# that the pid in postmaster.pid (left behind by an earlier kill) is still this test's server.
kill_postmaster() {
    local pid sid
    pid=$(head -n 1 "$R/$1/data/postmaster.pid" 2>/dev/null || true)
    [ -n "$pid" ] && ps -o args= -p "$pid" 2>/dev/null | grep -q -- "-D $R/$1/data" || return 0
    sid=$(ps -o sid= -p "$pid" | tr -d ' ')
    kill -KILL "$pid" 2>/dev/null || true
    [ -n "$sid" ] && pkill -KILL -s "$sid" 2>/dev/null || true
}
# no_process_left: nothing of the test's sessions or servers runs.
no_process_left() {
    local n
    for n in "${!session[@]}"; do pgrep -s "${session[$n]}" >/dev/null && return 1; done
    ! pgrep -f -- "-D $R/" >/dev/null
}
# start_etcd: one etcd member (v3 API, Patroni's etcd3) on $etcd_port and $etcd_peer, in a
# session of its own, healthy.
start_etcd() {
    setsid runuser -u postgres -- etcd --name e1 --data-dir "$R/etcd" \
        --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-cluster "e1=http://127.0.0.1:$etcd_peer" >>"$R/etcd.log" 2>&1 &
    session[etcd]=$!
    disown
    wait_until 30 "etcd" etcd_healthy
}
etcd_healthy() { curl -sf "http://127.0.0.1:$etcd_port/health" | grep -q '"health":"true"'; }
