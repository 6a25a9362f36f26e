#!/usr/bin/env bash
# The whole test suite: formatting and clippy, pure Rust tests, then, for PostgreSQL 15 and 18 in turn, the
# installed extension under pg_regress and the multi-instance cluster tests. Prints
# "N passed, N failed" at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build
bash scripts/setup.sh || exit 1

passed=0
failed=0
step() {
    local name=$1
    shift
    echo "=== $name"
    local start=$SECONDS
    if "$@"; then
        passed=$((passed + 1))
        echo "=== $name: ok ($((SECONDS - start)) s)"
    else
        failed=$((failed + 1))
        echo "=== $name: FAILED ($((SECONDS - start)) s)"
    fi
}

source scripts/pgversions.sh
step "lint (rustfmt, clippy on PostgreSQL 15 and 18)" make --no-print-directory lint
step "unit and property tests (cargo test)" cargo test --release --lib --quiet
bash scripts/demo.sh stop >/dev/null 2>&1 || true  # never install under a running server
for pg_config in "${PG_CONFIGS[@]}"; do
    pg=$(pg_major_of "$pg_config")
    export PG_CONFIG=$pg_config
    step "build and install (PostgreSQL $pg)" bash scripts/install.sh
    step "pg_regress (PostgreSQL $pg)" bash scripts/regress.sh
    for t in tests/cluster/*.sh; do
        [ "$(basename "$t")" = lib.sh ] && continue
        # A test that applies to some majors only says which ("# majors: 15"), and why.
        majors=$(sed -n 's/^# majors: //p' "$t")
        if [ -n "$majors" ] && ! grep -qw "$pg" <<<"$majors"; then
            continue
        fi
        step "cluster: $(basename "$t" .sh) (PostgreSQL $pg)" bash "$t"
    done
done

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
