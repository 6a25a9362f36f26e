#!/usr/bin/env bash
# Installs what the tests, the benchmarks and the packages need, on Debian 12 as root: what
# scripts/setup_demo.sh installs for the demo (Debian's PostgreSQL 15, cargo-pgrx), then the
# packages only tests use, PostgreSQL 17, 18 and 15.18 built from source, 19 from Debian's
# binary packages, pg_partman 5, and `cargo pgrx init` for 15, 17, 18 and 19. Idempotent: every step checks first and does nothing
# when its part is already there.
set -euo pipefail
source "$(dirname "$0")/pgversions.sh"
bash "$(dirname "$0")/setup_demo.sh"

packages=(
    postgresql-15-pglogical                          # active-active test with pglogical
    postgresql-15-partman                            # pg_partman 4 (partitions by ID)
    postgresql-15-auto-failover pg-auto-failover-cli # failover under pg_auto_failover
    patroni etcd-server                              # failover under Patroni
    procps iproute2                                  # pkill, pgrep, ps; ip and ss (partition tests)
    python3                                          # the docs test, layer checks, scripts
    sudo faketime curl                               # pgrx test runner; cluster tests
    unzip                                            # make dist checks its archive
    gnuplot-nox                                      # the benchmark chart
    python3-venv libpostgresql-jdbc-java             # the client libraries' test (pgjdbc 42.5)
)
# The client test's Java and JavaScript: the machine's own when it has them, Debian's if not.
command -v javac >/dev/null || packages+=(default-jdk-headless)
command -v npm >/dev/null || packages+=(nodejs npm)

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

if ! command -v cargo >/dev/null; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null || { echo "setup: cargo (Rust) is required" >&2; exit 1; }

# PostgreSQL 17 and 18 from Debian's source packages, and the 15.18 that pg_upgrade tests
# start from: built once (about 3 minutes each on 2 cores), then found in place. 19 from
# Debian's binary packages, whose source the archive's pool does not hold (pgversions.sh).
for build in PG17_SOURCE PG18_SOURCE PG15_OLD_SOURCE; do
    declare -n spec=$build
    bash "$(dirname "$0")/pgsource.sh" "${spec[@]}"
done
bash "$(dirname "$0")/pgbinary.sh" "${PG19_BINARY[@]}" >/dev/null
# pg_partman 5 for 17, 18 and 19 (15 has Debian's pg_partman 4, above).
for pg_config in "$PG17_CONFIG" "$PG18_CONFIG" "$PG19_CONFIG"; do
    bash "$(dirname "$0")/partman.sh" "$pg_config"
done
PGRX_HOME=${PGRX_HOME:-$HOME/.pgrx}
init=()
for pg_config in "${PG_CONFIGS[@]}"; do
    major=$(pg_major_of "$pg_config")
    init+=("--pg$major" "$pg_config")
    grep -qs "pg$major = \"$pg_config\"" "$PGRX_HOME/config.toml" || missing_init=1
done
if [ -n "${missing_init:-}" ]; then
    echo "setup: cargo pgrx init for PostgreSQL ${init[*]}"
    cargo pgrx init "${init[@]}" >/dev/null
fi
