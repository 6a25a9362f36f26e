#!/usr/bin/env bash
# `make demo`: builds and installs snowflake_id, starts a local PostgreSQL 15 with it
# preloaded, and shows it working in a database of its own, `demo`; the database `postgres` has
# the extension and nothing else, for the README's examples. `make demo-stop` stops it and
# removes its data. Running `make demo` again rebuilds and starts afresh (its data goes).
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's PostgreSQL 15, whatever PG_CONFIG the caller has: the demo needs nothing else.
export PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
unset PG_BINDIR
source scripts/pgcluster.sh

# Named for this project: the directory is deleted, and a generic DEMO_DIR of someone else's
# in the environment must not be.
DEMO_DIR=${SNOWFLAKE_ID_DEMO_DIR:-/tmp/snowflake_id_demo}
DEMO_PORT=${SNOWFLAKE_ID_DEMO_PORT:-5499}

stop() {
    pg_stop "$DEMO_DIR"
    rm -rf "$DEMO_DIR"
}

case "${1:-start}" in
stop)
    stop
    echo "demo: stopped"
    exit 0
    ;;
start) ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac

mkdir -p .build
bash scripts/setup_demo.sh
stop # a running server must not have the library replaced under it
bash scripts/install.sh
pg_init "$DEMO_DIR" "$DEMO_PORT" \
    "shared_preload_libraries = 'snowflake_id'" \
    "snowflake.node_id = 1" \
    "gdid.authority = 1"
pg_start "$DEMO_DIR"

pg_psql "$DEMO_DIR" -d postgres -q -c 'CREATE EXTENSION snowflake_id' -c 'CREATE DATABASE demo'
pg_psql "$DEMO_DIR" -d demo -q <<'SQL'
CREATE EXTENSION snowflake_id;
SET timezone = 'UTC';
CREATE TABLE orders (
    id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'),
    item text NOT NULL
);
INSERT INTO orders (item) VALUES ('espresso'), ('croissant'), ('flat white');
INSERT INTO orders (item) SELECT 'batch ' || g FROM generate_series(1, 5000) g;
\echo
\echo 'CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next(''orders''), item text);'
\echo 'The first rows, decoded:'
SELECT o.id, d.ts, d.node, d.counter, o.item
  FROM orders o, snowflake_decode(o.id) d ORDER BY o.id LIMIT 3;
\echo 'As JSON (the ID as a string, safe for JavaScript):'
SELECT snowflake_decode_jsonb(id) FROM orders ORDER BY id LIMIT 1;
\echo 'Orders of the last minute, found through the primary key:'
SELECT count(*) FROM orders WHERE id >= snowflake_from_timestamp(now() - interval '1 minute');
\echo 'The sequence, as shared memory sees it:'
SELECT name, layout, last_id, issued, counter_exhausted, clock_ahead, lease_until FROM snowflake_sequences;
CREATE TABLE invoices (
    id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'),
    item text NOT NULL
);
INSERT INTO invoices (item) SELECT 'invoice ' || g FROM generate_series(1, 1000) g;
\echo
\echo 'CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next(''billing'', ''invoices''), item text);'
\echo 'gdids: era:authority:counter, 12 bytes each, and their compact form:'
SELECT id, gdid_to_hex(id), gdid_compress(id), pg_column_size(id) AS bytes, item
  FROM invoices ORDER BY id LIMIT 3;
\echo 'The gdid sequence and its durable lease:'
SELECT * FROM gdid_sequences;
SQL

# What the server says it is (not pg_config: Debian's /usr/bin/pg_config answers for the newest
# major installed).
server=$(pg_psql "$DEMO_DIR" -d postgres -At -F '|' -c \
    "SELECT current_setting('server_version'), current_setting('port'), current_setting('unix_socket_directories')")
IFS='|' read -r version port socket <<<"$server"
cat <<MSG

The demo server is running: PostgreSQL $version, port $port, socket directory $socket, data in $DEMO_DIR/data.
Connect:  psql -h $socket -p $port -U postgres postgres
          (the extension is created there and nothing else: the README's examples start here;
          the tables above are in database demo)
Stop:     make demo-stop   (make demo again starts afresh: the demo's data goes)
MSG
