#!/usr/bin/env bash
# A developer's loop: the quick checks, or one test on one major.
#
#   dev.sh check          make lint, cargo test, the build installed into PostgreSQL 15 and
#                         pg_regress on it; stops at the first failure
#   dev.sh regress NAME   tests/pg_regress/sql/NAME.sql against expected/NAME.out, under each
#                         schedule that lists it (preloaded, not preloaded)
#   dev.sh cluster NAME   tests/cluster/NAME.sh
#
# PG (15, 17 or 18; default 15) picks the major of regress and cluster: the build is installed
# into /usr/lib/postgresql/PG first, as scripts/test.sh does. Like make test, it leaves the
# machine as it found it (scripts/machine.sh): a running demo is stopped meanwhile and started
# again, the installed files are put back at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${MACHINE_KEPT:-}" ] || exec bash scripts/machine.sh run bash "$0" "$@"
source scripts/pgversions.sh
mkdir -p .build

usage() {
    echo "usage: $0 check | regress NAME | cluster NAME   (PG=15|17|18 for regress and cluster;" >&2
    echo "  from make: make check, make regress T=NAME [PG=18], make cluster T=NAME [PG=17])" >&2
    exit 2
}

PG=${PG:-15}
case $PG in
15 | 17 | 18) ;;
*)
    echo "dev: PG=$PG: one of 15, 17, 18" >&2
    exit 2
    ;;
esac
export PG_CONFIG=/usr/lib/postgresql/$PG/bin/pg_config

timed() {
    local start=$SECONDS
    "$@"
    echo "--- $* ($((SECONDS - start)) s)"
}

case "${1:-}" in
check)
    [ $# -eq 1 ] || usage
    [ "$PG" = 15 ] || { echo "dev: make check runs on PostgreSQL 15 only (PG=$PG)" >&2; exit 2; }
    start=$SECONDS
    bash scripts/setup.sh # lint builds for 17 and 18 too
    timed make --no-print-directory lint
    timed cargo test --ignore-rust-version --release --lib --quiet
    timed bash scripts/install.sh
    timed bash scripts/regress.sh
    echo "check: ok ($((SECONDS - start)) s)"
    ;;
regress)
    [ $# -eq 2 ] && [ -n "$2" ] || usage
    [ -f "tests/pg_regress/sql/$2.sql" ] ||
        { echo "dev: no tests/pg_regress/sql/$2.sql; there are: $(cd tests/pg_regress/sql && ls -- *.sql | sed 's/\.sql$//' | xargs)" >&2; exit 2; }
    # 15 is Debian's: what the demo needs is enough; 17 and 18 are built by the full setup.
    if [ "$PG" = 15 ]; then bash scripts/setup_demo.sh; else bash scripts/setup.sh; fi
    bash scripts/install.sh
    bash scripts/regress.sh "$2"
    ;;
cluster)
    [ $# -eq 2 ] && [ -n "$2" ] || usage
    t=tests/cluster/$2.sh
    [ -f "$t" ] && [ "$2" != lib ] ||
        { echo "dev: no tests/cluster/$2.sh; there are: $(cd tests/cluster && ls ./*.sh | sed 's|^\./||; s/\.sh$//' | grep -vx lib | xargs)" >&2; exit 2; }
    bash scripts/setup.sh
    # A test that applies to some majors only says which (as scripts/test.sh reads it).
    majors=$(test_majors "$t")
    if [[ $majors == across* ]]; then
        # It starts servers of 15.18, 17 and 18 itself: each needs the build.
        for pg_config in "${PG_CONFIGS[@]}" "$PG15_OLD_CONFIG"; do
            PG_CONFIG=$pg_config bash scripts/install.sh
        done
    elif [ -n "$majors" ] && ! grep -qw "$PG" <<<"$majors"; then
        echo "dev: $2 does not run on PostgreSQL $PG (# majors: $majors)" >&2
        exit 2
    else
        bash scripts/install.sh
    fi
    bash "$t"
    ;;
*) usage ;;
esac
