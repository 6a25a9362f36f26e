#!/usr/bin/env bash
# pg_upgrade within one major (pg_upgrade accepts the same major) carries every sequence of
# the extension, a relation of schema snowflake or gdid, with its value: the durable lease.
# Nothing of the extension needs a step of its own (no file to copy: the new data directory
# has no snowflake_id/). The old server ran with its clock 90 s ahead (as a server does whose
# clock was then corrected), both generators used by DEFAULTs in two databases (KEYS_FILL in
# lib.sh: a run-ahead burst 10 s further ahead, values handed out and never stored above the
# stored keys, sequences no table names). After `pg_upgrade --copy` and `--link` (each from a
# copy of the old data directory), every relation has the value it had, and the defaults
# continue above every key and every value handed out before; the detection triggers, not in
# pg_upgrade's dump, are made again.
#
# On each major; pg_upgrade_majors.sh goes from one major to another, and from release 0.3.0.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../../scripts/pgversions.sh"

dbs=(app1 app2)
old=$(instance old "${KEYS_SETTINGS[@]}")
pg_start "$old" FAKETIME=+90s LD_PRELOAD="$FAKETIME_LIB"
for db in "${dbs[@]}"; do
    pg_psql "$old" -d postgres -qc "CREATE DATABASE $db"
    pg_psql "$old" -d "$db" -q <<<"$KEYS_FILL" || fail "filling $db failed"
done
# relations DIR DB: every sequence relation of the extension with its value.
relations() {
    pg_psql "$1" -d "$2" -Atc "SELECT string_agg(schemaname || '.' || sequencename || '=' || last_value, ' ' ORDER BY schemaname, sequencename COLLATE \"C\")
                                 FROM pg_sequences WHERE schemaname IN ('snowflake', 'gdid')"
}
declare -A before
for db in "${dbs[@]}"; do
    before[$db]=$(relations "$old" "$db")
    [ "$(wc -w <<<"${before[$db]}")" = 4 ] || fail "$db: expected four sequence relations, got: ${before[$db]}"
done
echo "the old server ran with its clock 90 s ahead; app1's sequences: ${before[app1]}"
pg_stop "$old"

# upgrade NAME MODE: a new data directory upgraded from a copy of the old one, started.
upgrade() {
    local copy="$CLUSTER_ROOT/$1.old" new work step t0 mode
    mkdir -p "$copy" && chown postgres: "$copy" && chmod 700 "$copy"
    as_postgres cp -a "$old/data" "$copy/data"
    new=$(instance "$1" "${KEYS_SETTINGS[@]}")
    work="$CLUSTER_ROOT/$1.work"
    mkdir -p "$work" && chown postgres: "$work"
    t0=$SECONDS
    # Copy mode is pg_upgrade's default; 15's has no --copy (16 added it).
    mode=$2
    [ "$mode" = --copy ] && [ "$(pg_major_of "$PG_BINDIR/pg_config")" -lt 16 ] && mode=
    for step in --check "${mode:-copy}"; do
        [ "$step" = copy ] && step= # the default mode
        (cd "$work" && as_postgres "$PG_BINDIR/pg_upgrade" -b "$PG_BINDIR" -B "$PG_BINDIR" \
            -d "$copy/data" -D "$new/data" -p "$(free_port)" -P "$(free_port)" -s "$work" \
            -U postgres ${step:+"$step"} >"$work/pg_upgrade${step:-_copy}.log" 2>&1) ||
            { tail -n 30 "$work/pg_upgrade${step:-_copy}.log" >&2; fail "$1: pg_upgrade ${step:-(copy)} failed"; }
    done
    [ ! -e "$new/data/snowflake_id" ] || fail "$1: the new data directory has a snowflake_id/ after all"
    pg_start "$new"
    echo "$1: pg_upgrade $2 in $((SECONDS - t0)) s" >&2
    echo "$new"
}

for mode in --copy --link; do
    name=same_major${mode/--/_}
    new=$(upgrade "$name" "$mode")
    for db in "${dbs[@]}"; do
        [ "$(relations "$new" "$db")" = "${before[$db]}" ] ||
            fail "$name ($db): the sequences are not as they were: $(relations "$new" "$db") (before: ${before[$db]})"
        expect "$new" "SELECT string_agg(tgrelid::regclass::text, ',' ORDER BY tgrelid::regclass::text) FROM pg_trigger WHERE tgfoid = 'snowflake_arrival_trigger'::regproc" \
            "invoices,orders" "$db"
        keys_check "$name" "$new" "$db" 10000
    done
    pg_stop "$new"
done
echo "pg_upgrade: ok"
