#!/usr/bin/env bash
# Installs what building and testing need, on Debian 12 as root. Idempotent: every step
# checks first and does nothing when its part is already there.
set -euo pipefail

PGRX_VERSION=0.18.1
PG_MAJOR=15
packages=(
    "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR"  # server, headers, pg_config, pgxs
    libclang-dev clang                                       # bindgen, for pgrx's bindings
    pkg-config build-essential                               # the C side of the build
    sudo faketime curl ca-certificates                       # pgrx test runner; cluster tests
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

PGRX_HOME=${PGRX_HOME:-$HOME/.pgrx}
if ! grep -qs "pg$PG_MAJOR = \"/usr/bin/pg_config\"" "$PGRX_HOME/config.toml"; then
    echo "setup: cargo pgrx init for PostgreSQL $PG_MAJOR"
    cargo pgrx init --pg$PG_MAJOR /usr/bin/pg_config >/dev/null
fi
