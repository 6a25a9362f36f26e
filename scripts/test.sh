#!/usr/bin/env bash
# The whole test suite: pure Rust tests, then the installed extension under pg_regress, then
# the multi-instance cluster tests. Prints "N passed, N failed" at the end.
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

step "unit and property tests (cargo test)" cargo test --release --lib --quiet
bash scripts/demo.sh stop >/dev/null 2>&1 || true  # never install under a running server
step "build and install" bash scripts/install.sh
step "pg_regress" bash scripts/regress.sh
for t in tests/cluster/*.sh; do
    [ "$(basename "$t")" = lib.sh ] && continue
    step "cluster: $(basename "$t" .sh)" bash "$t"
done

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
