#!/usr/bin/env bash
# The client libraries applications use, against a server of the extension: every example of
# docs/clients.md (psycopg, asyncpg, SQLAlchemy and Alembic, Django, node-postgres,
# Sequelize, TypeORM, pgjdbc, tokio-postgres), each of which must print what the page shows
# (tests/clients/run_docs.py), and of tests/clients/variants.md (the same written the other
# ways users write it), then the tests of the companion crate clients/rust
# (snowflake-id-client: Snowflake and Gdid for tokio-postgres) against the same server,
# including its gdid text reader against the server's on the same inputs.
# The libraries are installed once at pinned versions into .build/clients
# (tests/clients/setup.sh); they do not depend on the major, so this runs on one.
# majors: 18
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."

start=$SECONDS
timeout 1200 bash tests/clients/setup.sh || fail "installing the client libraries failed"
echo "figures: client libraries ready in $((SECONDS - start)) s"

# The server of the docs: the README's settings.
db=$(instance clients "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" \
    "gdid.authority = 1" "timezone = 'UTC'" "lc_messages = 'C'")
pg_start "$db"
port=$(pg_port_of "$db")

for doc in docs/clients.md tests/clients/variants.md; do
    start=$SECONDS
    CLIENTS_WORK="$CLUSTER_ROOT/work" PG_BINDIR=$PG_BINDIR \
        timeout 1200 python3 tests/clients/run_docs.py "$doc" 127.0.0.1 "$port" ||
        fail "an example of $doc printed something else than it shows"
    echo "figures: $doc examples in $((SECONDS - start)) s"
done

start=$SECONDS
sql "$db" "CREATE DATABASE clients_crate" >/dev/null
sql "$db" "CREATE EXTENSION snowflake_id" clients_crate >/dev/null
(cd clients/rust && DATABASE_URL="postgresql://postgres@127.0.0.1:$port/clients_crate" \
    CARGO_TARGET_DIR="$PWD/../../.build/clients/rust-target" timeout 900 cargo test --locked --quiet) ||
    fail "the tests of clients/rust failed"
echo "figures: clients/rust tests in $((SECONDS - start)) s"
echo "clients: ok"
