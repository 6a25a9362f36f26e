#!/usr/bin/env bash
# Runs the pg_regress specification (tests/pg_regress) against the installed extension:
# once with the library preloaded, once without it; then the isolation specification
# (tests/isolation: what concurrent sessions see, through pg_isolation_regress). Each starts
# its own temporary instance. Exit status: 0 when every expected file matches.
#
#   regress.sh [NAME]   only sql/NAME.sql, under each schedule that lists it: alone, in a
#                       database with the extension created (unless the file creates it);
#                       a file that fails alone runs again after the tests before it in the
#                       schedule, as the whole run has it, and that run decides
#
# PG_CONFIG selects the PostgreSQL (default: Debian's 15). Where a major version prints
# something differently (an EXPLAIN detail, a message), expected/NAME_1.out holds its form.
#
# pg_regress refuses to run as root and the checkout may not be readable by postgres, so it
# runs as postgres in a copy; on failure the diffs are printed and left in .build/regress.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$("$PG_CONFIG" --bindir)
pg_regress="$(dirname "$("$PG_CONFIG" --pgxs)")/../test/regress/pg_regress"
pg_isolation_regress="$(dirname "$("$PG_CONFIG" --pgxs)")/../test/isolation/pg_isolation_regress"
major=$("$PG_CONFIG" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')
port=$((55300 + 2 * major))
failures="$root/.build/regress-$major"
only=${1:-}
listed() { # whether schedule $1 lists test $2
    awk -v t="$2" '$1 == "test:" { for (i = 2; i <= NF; i++) if ($i == t) found = 1 } END { exit !found }' "tests/pg_regress/$1"
}
if [ -n "$only" ] && ! listed schedule "$only" && ! listed schedule_not_preloaded "$only"; then
    echo "pg_regress: no schedule lists $only" >&2
    exit 2
fi

rm -rf "$failures" # what an earlier run left
work=$(mktemp -d /tmp/snowflake_id_regress.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r tests/pg_regress/. "$work/"
mkdir -p "$work/isolation" && cp -r tests/isolation/. "$work/isolation/"
: >"$work/not_preloaded.conf"
chown -R postgres: "$work"

# run SCHEDULE CONFIG PORT [alone|after]: the schedule's tests; or NAME alone; or the
# schedule's tests up to NAME.
run() {
    local schedule=$1 config=$2 port=$3 mode=${4:-all} out="$work/out_$1" tests
    case $mode in
    all) tests=(--schedule="$work/$schedule") ;;
    alone)
        out="$work/alone_$schedule"
        tests=("$only")
        awk '/^\\c/ { exit } /^CREATE EXTENSION snowflake_id/ { found = 1; exit } END { exit !found }' "$work/sql/$only.sql" ||
            tests=(--load-extension=snowflake_id "$only")
        ;;
    after)
        awk -v t="$only" '{ print } $1 == "test:" { for (i = 2; i <= NF; i++) if ($i == t) exit }' \
            "$work/$schedule" >"$work/${schedule}_to_$only"
        tests=(--schedule="$work/${schedule}_to_$only")
        ;;
    esac
    mkdir -p "$out" && chown postgres: "$out"
    (cd "$work" && runuser -u postgres -- "$pg_regress" \
        --temp-instance="$out/instance" --temp-config="$work/$config" \
        --port="$port" --bindir="$bindir" --inputdir="$work" --outputdir="$out" \
        --dbname=snowflake_regress "${tests[@]}")
}

# one SCHEDULE CONFIG PORT: NAME, when SCHEDULE lists it.
one() {
    listed "$1" "$only" || return 0
    run "$@" alone >"$work/alone_$1.log" 2>&1 && { cat "$work/alone_$1.log"; return 0; }
    grep '\.\.\.' "$work/alone_$1.log" || true
    echo "pg_regress: $only fails alone ($1); again after the tests before it in $1:"
    run "$@" after || return 1
    echo "pg_regress: $only passes after the tests before it in $1, not alone: it builds on what they leave"
}

isolation() {
    local out="$work/out_isolation"
    mkdir -p "$out" && chown postgres: "$out"
    (cd "$work/isolation" && runuser -u postgres -- "$pg_isolation_regress" \
        --temp-instance="$out/instance" --temp-config="$work/postgresql.conf" \
        --port="$1" --bindir="$bindir" --inputdir="$work/isolation" --outputdir="$out" \
        --schedule="$work/isolation/schedule" --load-extension=snowflake_id \
        --dbname=snowflake_isolation)
}

status=0
if [ -z "$only" ]; then
    echo "pg_regress: PostgreSQL $major ($bindir)"
    run schedule postgresql.conf "$port" || status=1
    run schedule_not_preloaded not_preloaded.conf $((port + 1)) || status=1
    isolation $((port + 100)) || status=1
else
    echo "pg_regress: PostgreSQL $major ($bindir), $only only"
    one schedule postgresql.conf "$port" || status=1
    one schedule_not_preloaded not_preloaded.conf $((port + 1)) || status=1
fi
if [ $status -ne 0 ]; then
    rm -rf "$failures" && mkdir -p "$failures/results"
    for out in "$work"/out_*; do
        cat "$out/regression.diffs" 2>/dev/null || true
        cp "$out"/results/*.out "$failures/results/" 2>/dev/null || true
        cat "$out/regression.diffs" >>"$failures/regression.diffs" 2>/dev/null || true
    done
    echo "pg_regress: FAILED on PostgreSQL $major (results and diffs in .build/regress-$major)"
fi
exit $status
