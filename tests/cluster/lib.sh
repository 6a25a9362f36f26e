# shellcheck shell=bash
# Shared by the cluster tests: throwaway instances under one directory, removed on any exit.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/pgcluster.sh"

CLUSTER_ROOT=$(mktemp -d /tmp/snowflake_id_cluster.XXXXXX)
chmod 755 "$CLUSTER_ROOT"

cleanup() {
    local dir
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
