#!/usr/bin/env bash
# Builds the extension (release) and installs it into the PostgreSQL of PG_CONFIG (default:
# Debian's PostgreSQL 15; scripts/setup.sh also provides 17 and 18, see pgversions.sh).
# Each major builds in a target directory of its own (15: target/, the one cargo test and
# lint share), so that switching majors does not rebuild pgrx's bindings every time.
# Never install over a library a running server has loaded: it refuses, naming those servers.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
major=$("$PG_CONFIG" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')
mkdir -p .build
# cargo pgrx install writes over the library in place, and a server that has it mapped crashes.
source scripts/machine.sh
users=$(machine_users "$("$PG_CONFIG" --pkglibdir)")
if [ -n "$users" ]; then
    echo "install: refusing to install into $("$PG_CONFIG" --pkglibdir): running servers have its snowflake_id.so loaded," >&2
    echo "  with these data directories (stop them first; make demo-stop for the demo's):" >&2
    sed 's/^/  /' <<<"$users" >&2
    exit 1
fi
[ "$major" = 15 ] || export CARGO_TARGET_DIR="$PWD/target/pg$major"
CARGO="$PWD/scripts/cargo-ignoring-rust-version" cargo-pgrx pgrx install --release --pg-config "$PG_CONFIG" \
    >".build/install-$major.log" 2>&1 ||
    { tail -n 40 ".build/install-$major.log"; exit 1; }
# cargo pgrx install writes the current version's install script and copies the upgrade
# scripts of sql/; the install scripts of earlier releases, which keep them installable
# (CREATE EXTENSION snowflake_id VERSION '0.1.0'), are ours to copy.
cp sql/snowflake_id--*.sql "$("$PG_CONFIG" --sharedir)/extension/"
echo "install: snowflake_id $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml) installed into $("$PG_CONFIG" --pkglibdir) (PostgreSQL $major)"
