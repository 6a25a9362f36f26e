#!/usr/bin/env bash
# Builds the extension (release) and installs it into Debian's PostgreSQL 15.
# Never install over a library a running server has loaded: stop those servers first.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build
cargo pgrx install --release --pg-config /usr/bin/pg_config >.build/install.log 2>&1 ||
    { tail -n 40 .build/install.log; exit 1; }
echo "install: snowflake_id installed into $(pg_config --pkglibdir)"
