# shellcheck shell=bash
# Shared by the cluster tests: throwaway instances under one directory, removed on any exit.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/pgcluster.sh"

CLUSTER_ROOT=$(mktemp -d /tmp/snowflake_id_cluster.XXXXXX)
chmod 755 "$CLUSTER_ROOT"

cleanup() {
    local dir
    for dir in "$CLUSTER_ROOT"/*/; do
        [ -d "$dir/data" ] && pg_stop "${dir%/}" immediate
    done
    rm -rf "$CLUSTER_ROOT"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# expect DIR SQL EXPECTED: the single value SQL returns must equal EXPECTED.
expect() {
    local got
    got=$(pg_psql "$1" -d postgres -Atc "$2") || fail "query failed: $2"
    [ "$got" = "$3" ] || fail "$2: expected $3, got $got"
    echo "ok: $2 = $got"
}

# libfaketime from Debian's faketime package: FAKETIME=-30s makes a process's clock run
# 30 s behind (all clocks, including the coarse ones the generator reads).
FAKETIME_LIB=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
[ -n "$FAKETIME_LIB" ] || fail "libfaketime not found (apt-get install faketime)"

# stream DIR OUT N SQL: one session running SQL up to N times, every row appended to OUT
# as soon as psql has it, stopping at the first error (the server going away, say).
# Bounded by a 120 s timeout.
stream() {
    local dir=$1 out=$2 n=$3 sql=$4
    for _ in $(seq 1 "$n"); do echo "$sql"; done |
        timeout 120 "$PG_BINDIR/psql" -X -qAt -v ON_ERROR_STOP=1 -h "$dir" -p "$(pg_port_of "$dir")" \
            -U postgres -d postgres >>"$out" 2>/dev/null || true
}

# load_ids DIR TABLE TYPE FILE...: a table of the IDs in the files, for checking with SQL.
load_ids() {
    local dir=$1 table=$2 type=$3 f
    shift 3
    pg_psql "$dir" -d postgres -qc "CREATE TABLE $table (id $type)"
    for f in "$@"; do
        pg_psql "$dir" -d postgres -qc "\\copy $table FROM '$f'"
    done
}

# The postmaster's clock, seconds behind this shell's.
clock_lag() {
    local theirs ours
    theirs=$(pg_psql "$1" -d postgres -Atc "SELECT floor(extract(epoch FROM clock_timestamp()))")
    ours=$(date +%s)
    echo $((ours - theirs))
}
