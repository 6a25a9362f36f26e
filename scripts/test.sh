#!/usr/bin/env bash
# The whole test suite: formatting and clippy, pure Rust tests, then, for PostgreSQL 15, 17
# and 18 in turn, the installed extension under pg_regress, the SQL examples of the docs and
# the multi-instance cluster tests; then what spans majors (pg_upgrade from one to another)
# and the Debian packages.
# Prints "N passed, N failed" at the end.
#
# It leaves the machine as it found it (scripts/machine.sh): a running demo is stopped while
# it runs and started again at the end, the extension's installed files are put back as they
# were; where that cannot be (another server has the library loaded), it refuses to start.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build
source scripts/machine.sh
machine_check || exit 1
bash scripts/setup.sh || exit 1
trap machine_restore EXIT # also when a step fails or the run is interrupted
STEP_PID=
interrupted() {
    if [ -n "$STEP_PID" ]; then
        echo "=== interrupted: stopping the running step"
        kill -TERM -- -"$STEP_PID" 2>/dev/null || kill -TERM "$STEP_PID" 2>/dev/null
        wait "$STEP_PID" 2>/dev/null
    fi
    exit 130
}
trap interrupted INT TERM HUP
machine_keep || exit 1
export MACHINE_KEPT=1

passed=0
failed=0
step() {
    local name=$1
    shift
    echo "=== $name"
    local start=$SECONDS
    # Every step is bounded: a hang (a test waiting on something that never comes) fails
    # the step and the run goes on, instead of holding CI until its own limit. Functions of
    # this shell (machine_restore) run as they are.
    local ok=0
    if declare -F "$1" >/dev/null; then
        "$@" || ok=$?
    else
        # In the background, waited for: bash runs a trap (Ctrl-C, a CI cancel) only between
        # commands, and timeout puts the step in a process group of its own, which a Ctrl-C at
        # the terminal does not reach. interrupted() stops it before the machine is restored.
        timeout --kill-after=30 "${STEP_TIMEOUT:-1800}" "$@" &
        STEP_PID=$!
        wait "$STEP_PID" || ok=$?
        STEP_PID=
    fi
    if [ "$ok" = 0 ]; then
        passed=$((passed + 1))
        echo "=== $name: ok ($((SECONDS - start)) s)"
    else
        failed=$((failed + 1))
        echo "=== $name: FAILED ($((SECONDS - start)) s)"
    fi
}

source scripts/pgversions.sh
step "lint (rustfmt, clippy on PostgreSQL 15, 17, 18 and 19)" make --no-print-directory lint
step "unit and property tests (cargo test)" cargo test --ignore-rust-version --release --lib --quiet
step "model checks of the lock-free core (make loom)" make --no-print-directory loom
for pg_config in "${PG_CONFIGS[@]}"; do
    pg=$(pg_major_of "$pg_config")
    export PG_CONFIG=$pg_config
    step "build and install (PostgreSQL $pg)" bash scripts/install.sh
    step "pg_regress (PostgreSQL $pg)" bash scripts/regress.sh
    step "docs examples (PostgreSQL $pg)" bash tests/docs.sh
    for t in tests/cluster/*.sh; do
        [ "$(basename "$t")" = lib.sh ] && continue
        # A test that applies to some majors only says which ("# majors: 15"), and why.
        majors=$(test_majors "$t")
        [[ $majors == across* ]] && continue
        if [ -n "$majors" ] && ! grep -qw "$pg" <<<"$majors"; then
            continue
        fi
        step "cluster: $(basename "$t" .sh) (PostgreSQL $pg)" bash "$t"
    done
done
unset PG_CONFIG
# Across majors: the old server of pg_upgrade_majors.sh is PostgreSQL 15.18 (pgversions.sh).
step "install (PostgreSQL 15.18, for pg_upgrade)" env PG_CONFIG="$PG15_OLD_CONFIG" bash scripts/install.sh
for t in tests/cluster/*.sh; do
    grep -q '^# majors: across' "$t" || continue
    step "cluster: $(basename "$t" .sh) (across majors)" bash "$t"
done
# Last, as it removes what the builds installed: each major's Debian package, installed,
# checked with pg_regress and removed; on 15 with a demo running, which must still answer,
# and the installed files back, afterwards (tests/machine_state.sh).
step "package, with a demo running: install, installcheck, remove (PostgreSQL 15)" bash tests/machine_state.sh
for pg_config in "$PG17_CONFIG" "$PG18_CONFIG" "$PG19_CONFIG"; do
    step "package: install, installcheck, remove (PostgreSQL $(pg_major_of "$pg_config"))" \
        env PG_CONFIG="$pg_config" bash tests/packages.sh
done
step "dist: the PGXN archive and its META.json" bash scripts/dist.sh
step "the machine as it was: installed files back, a demo that ran running again" machine_restore

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
