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
    "postgresql-$PG_MAJOR-partman"                           # pg_partman 4 (partitions by ID)
    "postgresql-$PG_MAJOR-auto-failover" pg-auto-failover-cli # failover under pg_auto_failover
    patroni etcd-server                                      # failover under Patroni
    libclang-dev clang                                       # bindgen, for pgrx's bindings
    pkg-config build-essential                               # the C side of the build
    sudo faketime curl ca-certificates                       # pgrx test runner; cluster tests
    unzip                                                    # make dist checks its archive
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

# PostgreSQL 17 and 18 from Debian's source packages, and the 15.18 that pg_upgrade tests
# start from: built once (about 3 minutes each on 2 cores), then found in place.
for build in PG17_SOURCE PG18_SOURCE PG15_OLD_SOURCE; do
    declare -n spec=$build
    bash "$(dirname "$0")/pgsource.sh" "${spec[@]}"
done
# pg_partman 5 for 17 and 18 (15 has Debian's pg_partman 4, above).
for pg_config in "$PG17_CONFIG" "$PG18_CONFIG"; do
    bash "$(dirname "$0")/partman.sh" "$pg_config"
done
PGRX_HOME=${PGRX_HOME:-$HOME/.pgrx}
if ! grep -qs "pg15 = \"$PG15_CONFIG\"" "$PGRX_HOME/config.toml" ||
    ! grep -qs "pg17 = \"$PG17_CONFIG\"" "$PGRX_HOME/config.toml" ||
    ! grep -qs "pg18 = \"$PG18_CONFIG\"" "$PGRX_HOME/config.toml"; then
    echo "setup: cargo pgrx init for PostgreSQL 15, 17 and 18"
    cargo pgrx init --pg15 "$PG15_CONFIG" --pg17 "$PG17_CONFIG" --pg18 "$PG18_CONFIG" >/dev/null
fi
