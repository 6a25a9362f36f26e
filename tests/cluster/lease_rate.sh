#!/usr/bin/env bash
# A sequence held at the run-ahead bound by a long burst extends its lease about once per
# lease window (1 s, or snowflake.max_clock_ahead when that is smaller), like any busy
# sequence: each extension is an fsync and a WAL flush under the one lease lock. (Capped at
# the bound, the lease was extended once per wall-clock millisecond, some 800 times a second.)
# With snowflake.node_bits = 13 a millisecond holds 512 IDs, so one session outruns the clock.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 5" \
    "gdid.authority = 5" "snowflake.node_bits = 13")
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id"

# burst MAX_AHEAD_MS NAME N: N IDs in one statement; prints "seconds extensions ahead".
burst() {
    pg_psql "$db" -d postgres -qc "ALTER SYSTEM SET snowflake.max_clock_ahead = '${1}ms'" -c "SELECT pg_reload_conf()" >/dev/null
    wait_until 10 "the reload" \
        sql_is "$db" "SELECT setting FROM pg_settings WHERE name = 'snowflake.max_clock_ahead'" "$1"
    sql "$db" "
        SELECT round(extract(epoch FROM clock_timestamp() - statement_timestamp())::numeric, 1)
               || ' ' || lease_extensions || ' ' || round(extract(epoch FROM clock_ahead)::numeric, 2)
          FROM (SELECT count(snowflake_next('$2')) AS n FROM generate_series(1, $3)) b,
               snowflake_sequences WHERE name = '$2'"
}

# 1,500,000 IDs at 512 a millisecond are 2.9 s of IDs, made in well under a second: the
# sequence reaches the bound and stays there for about two seconds.
for case in "1000 burst_1s" "200 burst_200ms"; do
    # shellcheck disable=SC2086
    set -- $case
    read -r seconds extensions ahead <<<"$(burst "$1" "$2" 1500000)"
    window_ms=$(( $1 < 1000 ? $1 : 1000 ))
    # One extension per window of the burst, plus the first and the one that reaches past it.
    allowed=$(python3 -c "import math; print(math.ceil($seconds * 1000 / $window_ms) + 3)")
    echo "figures: max_clock_ahead $1 ms: 1500000 IDs in $seconds s, $extensions lease extensions (at most $allowed), $ahead s ahead at the end"
    [ "$extensions" -le "$allowed" ] || fail "$extensions lease extensions in $seconds s with max_clock_ahead $1 ms"
    # It did reach the bound, and stayed within it.
    python3 -c "import sys; sys.exit(not ($1 / 2000 <= $ahead <= $1 / 1000))" ||
        fail "the burst ended $ahead s ahead with max_clock_ahead $1 ms"
done
echo "lease_rate: ok"
