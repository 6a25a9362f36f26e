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
