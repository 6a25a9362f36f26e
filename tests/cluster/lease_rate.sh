#!/usr/bin/env bash
# A sequence held at the run-ahead bound by a long burst extends its lease about once per
# lease window (1 s, or snowflake.max_clock_ahead when that is smaller), like any busy
# sequence: each extension is a setval of its relation, one WAL record, flushed under the
# sequence's extension lock before the values it covers are used. (Capped at the bound, the
# lease was once extended every wall-clock millisecond, some 800 times a second.)
# The extensions are counted twice: the sequence's WAL records between the start and the end
# of the burst (pg_waldump, Sequence records of its relation's storage), and the counter of
# snowflake_sequences; the two must agree.
# With snowflake.node_bits = 13 a millisecond holds 512 IDs, so one session outruns the clock.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 5" \
    "gdid.authority = 5" "snowflake.node_bits = 13")
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id"
dboid=$(sql "$db" "SELECT oid FROM pg_database WHERE datname = 'postgres'")

# burst MAX_AHEAD_MS NAME N: N IDs in one statement from a sequence made (and used once)
# just before; prints "seconds extensions wal_records ahead".
burst() {
    local max=$1 name=$2 n=$3 filenode lsn0 lsn1 ext0 timing records
    pg_psql "$db" -d postgres -qc "ALTER SYSTEM SET snowflake.max_clock_ahead = '${max}ms'" -c "SELECT pg_reload_conf()" >/dev/null
    wait_until 10 "the reload" \
        sql_is "$db" "SELECT setting FROM pg_settings WHERE name = 'snowflake.max_clock_ahead'" "$max"
    # The relation is made by the first use, in a transaction of its own: visible from the
    # next statement on.
    sql "$db" "SELECT snowflake_next('$name')" >/dev/null
    filenode=$(sql "$db" "SELECT pg_relation_filenode('snowflake.$name')")
    ext0=$(sql "$db" "SELECT lease_extensions FROM snowflake_sequences WHERE name = '$name'")
    lsn0=$(sql "$db" "SELECT pg_current_wal_flush_lsn()")
    timing=$(sql "$db" "SELECT round(extract(epoch FROM clock_timestamp() - statement_timestamp())::numeric, 2)
                          FROM (SELECT count(snowflake_next('$name')) FROM generate_series(1, $n)) b")
    lsn1=$(sql "$db" "SELECT pg_current_wal_flush_lsn()")
    records=$("$PG_BINDIR/pg_waldump" -p "$db/data/pg_wal" -s "$lsn0" -e "$lsn1" -r Sequence \
        -R "1663/$dboid/$filenode" 2>/dev/null | grep -c 'rmgr: Sequence' || true)
    sql "$db" "SELECT '$timing ' || lease_extensions - $ext0 || ' $records '
                      || round(extract(epoch FROM clock_ahead)::numeric, 2)
                 FROM snowflake_sequences WHERE name = '$name'"
}

# 1,500,000 IDs at 512 a millisecond are 2.9 s of IDs, made in well under a second: the
# sequence reaches the bound and stays there for about two seconds.
for case in "1000 burst_1s" "200 burst_200ms"; do
    # shellcheck disable=SC2086
    set -- $case
    out=$(burst "$1" "$2" 1500000)
    read -r seconds extensions records ahead <<<"$out"
    [ -n "${ahead:-}" ] || fail "max_clock_ahead $1 ms: unexpected output: $out"
    window_ms=$(($1 < 1000 ? $1 : 1000))
    # One extension per window of the burst, plus the first and the one that reaches past it.
    allowed=$(python3 -c "import math; print(math.ceil($seconds * 1000 / $window_ms) + 3)")
    echo "figures: max_clock_ahead $1 ms: 1500000 IDs in $seconds s, $extensions lease extensions (at most $allowed), $records WAL records of the sequence, $ahead s ahead at the end"
    [ "$extensions" -ge 1 ] || fail "no lease extension counted in a burst of 1500000 IDs"
    [ "$extensions" -le "$allowed" ] || fail "$extensions lease extensions in $seconds s with max_clock_ahead $1 ms"
    [ "$records" = "$extensions" ] ||
        fail "the sequence wrote $records WAL records for $extensions lease extensions"
    # It did reach the bound, and stayed within it.
    python3 -c "import sys; sys.exit(not ($1 / 2000 <= $ahead <= $1 / 1000))" ||
        fail "the burst ended $ahead s ahead with max_clock_ahead $1 ms"
done
echo "lease_rate: ok"
