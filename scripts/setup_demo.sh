#!/usr/bin/env bash
# Installs what building the extension for Debian's PostgreSQL 15 needs, and no more: what
# `make demo` and `make install` use. scripts/setup.sh builds on it with what the tests need.
# On Debian 12 as root. Idempotent: every step checks first and does nothing when its part is
# already there.
set -euo pipefail
source "$(dirname "$0")/pgversions.sh"

# cargo-pgrx must be the version of the pgrx the crate depends on.
PGRX_VERSION=$(sed -n 's/^pgrx = "=\(.*\)"/\1/p' "$(dirname "$0")/../Cargo.toml")
packages=(
    postgresql-15 postgresql-server-dev-15 # server, headers, pg_config, pgxs, pg_regress
    libclang-dev clang                     # bindgen, for pgrx's bindings
    pkg-config build-essential             # the C side of the build
    ca-certificates                        # cargo fetches crates over https
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
    echo "setup: installing cargo-pgrx $PGRX_VERSION (about 5 minutes)"
    # pgrx 0.19 declares rust-version 1.96; stable 1.95 builds it (CONTRIBUTING.md, "Toolchain").
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked --quiet --ignore-rust-version
fi

# 15 only: `cargo pgrx init` with no --pgNN downloads and builds every major. The full setup
# adds 17 and 18 (it rewrites the file with all three), which this check then accepts.
PGRX_HOME=${PGRX_HOME:-$HOME/.pgrx}
if ! grep -qs "pg15 = \"$PG15_CONFIG\"" "$PGRX_HOME/config.toml"; then
    echo "setup: cargo pgrx init for PostgreSQL 15"
    cargo pgrx init --pg15 "$PG15_CONFIG" >/dev/null
fi
