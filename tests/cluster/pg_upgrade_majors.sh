#!/usr/bin/env bash
# pg_upgrade to a new major, the way users do it: `pg_upgrade --check`, then the upgrade, from
# servers whose clock ran 90 s ahead, both generators used by DEFAULTs in two databases
# (KEYS_FILL in lib.sh: a run-ahead burst 10 s further ahead, values handed out and never
# stored above the stored keys, sequences no table names), into servers whose clock is right.
#
# 1. The current release on both sides: 15 -> 17, 15 -> 18, 17 -> 18 and 18 -> 19, each with
#    --link and with --copy, and from 17 to 18 and 18 to 19 also with --swap (new in 18). Every sequence is a
#    relation that pg_upgrade carries with its value (no lease file, no step of the
#    extension's own): every relation has the value it had, and the defaults continue above
#    every key and every value handed out before. 18's pg_upgrade also carries a gdid column's
#    planner statistics; the detection triggers, not in pg_upgrade's dump, are made again.
# 2. From release 0.3.0 (scripts/old_release.sh builds it into private copies of 15.18 and
#    17): 15 -> 18 (--link) and 17 -> 18 (--copy), 0.3.0's lease file copied into the new data
#    directory before the new server first starts, as 0.3.0's README said; the new server
#    runs the current release, refuses to generate (55000) until ALTER EXTENSION snowflake_id
#    UPDATE in each database adopts the file's leases, then continues above everything 0.3.0
#    handed out, stored or not; no duplicate key.
#
# The 15 is PostgreSQL 15.18 from Debian 12's source package (scripts/pgversions.sh): Debian
# 12's own 15.20 stores an attribute option, pg_attver, on every column, which 17.11 and
# 18.6 do not know, so that pg_upgrade from it fails at the restore of any database (see
# docs/versions.md).
# majors: across (run once, after the pass of every major: it uses 15.18, 17, 18 and 19 itself)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../../scripts/pgversions.sh"

dbs=(app1 app2)
bindir() { "$1" --bindir; }

# old_server NAME BINDIR: a stopped server of that bindir, its clock 90 s ahead while each
# of dbs was filled by KEYS_FILL; prints its directory.
old_server() {
    local dir db
    dir=$(PG_BINDIR=$2 instance "$1" "${KEYS_SETTINGS[@]}")
    PG_BINDIR=$2 pg_start "$dir" FAKETIME=+90s LD_PRELOAD="$FAKETIME_LIB"
    for db in "${dbs[@]}"; do
        PG_BINDIR=$2 pg_psql "$dir" -d postgres -qc "CREATE DATABASE $db"
        PG_BINDIR=$2 pg_psql "$dir" -d "$db" -q <<<"$KEYS_FILL" || fail "$1: filling $db failed"
    done
    PG_BINDIR=$2 pg_stop "$dir"
    echo "$dir"
}

# relations BINDIR DIR DB: every sequence relation of the extension with its value.
relations() {
    PG_BINDIR=$1 pg_psql "$2" -d "$3" -Atc "SELECT string_agg(schemaname || '.' || sequencename || '=' || last_value, ' ' ORDER BY schemaname, sequencename COLLATE \"C\")
                                            FROM pg_sequences WHERE schemaname IN ('snowflake', 'gdid')"
}

# upgrade OLD_DIR OLD_BINDIR NEW_BINDIR NAME MODE: a new server of NEW_BINDIR upgraded from a
# copy of OLD_DIR with `pg_upgrade --check` then `pg_upgrade MODE` (--link, --copy or
# --swap); not started. Prints the new directory.
upgrade() {
    local old=$1 old_bin=$2 new_bin=$3 name=$4 mode=$5 new work copy step initdb_args=""
    copy="$CLUSTER_ROOT/$name.old"
    mkdir -p "$copy" && chown postgres: "$copy" && chmod 700 "$copy"
    as_postgres cp -a "$old/data" "$copy/data"
    # 18's initdb turns data checksums on, which pg_upgrade refuses to mix with an old
    # cluster without them: the new cluster is made as the old one is.
    if [ "$(pg_major_of "$new_bin/pg_config")" -ge 18 ] &&
        "$old_bin/pg_controldata" "$copy/data" | grep -q '^Data page checksum version: *0$'; then
        initdb_args=--no-data-checksums
    fi
    new=$(PG_INITDB_ARGS=$initdb_args PG_BINDIR=$new_bin instance "$name" "${KEYS_SETTINGS[@]}")
    work="$CLUSTER_ROOT/$name.work"
    mkdir -p "$work" && chown postgres: "$work"
    for step in --check "$mode"; do
        (cd "$work" && as_postgres "$new_bin/pg_upgrade" -b "$old_bin" -B "$new_bin" \
            -d "$copy/data" -D "$new/data" -p "$(free_port)" -P "$(free_port)" -s "$work" \
            -U postgres "$step" >"$work/pg_upgrade$step.log" 2>&1) ||
            { tail -n 30 "$work/pg_upgrade$step.log" >&2; fail "$name: pg_upgrade $step failed"; }
    done
    echo "$new"
}

# check NAME DIR BINDIR: the checks on the upgraded, started server that need no update.
check_upgraded() {
    local name=$1 dir=$2 bin=$3 db
    for db in "${dbs[@]}"; do
        # 18's pg_upgrade carries planner statistics, a gdid column's as any other.
        if [ "$(pg_major_of "$bin/pg_config")" -ge 18 ]; then
            PG_BINDIR=$bin expect "$dir" "SELECT histogram_bounds IS NOT NULL FROM pg_stats WHERE tablename = 'invoices' AND attname = 'id'" t "$db"
        fi
        # The detection triggers, internal and so not in pg_upgrade's dump, are made again.
        PG_BINDIR=$bin expect "$dir" "SELECT string_agg(tgrelid::regclass::text, ',' ORDER BY tgrelid::regclass::text) FROM pg_trigger WHERE tgfoid = 'snowflake_arrival_trigger'::regproc" \
            "invoices,orders" "$db"
    done
}

for config in "$PG15_OLD_CONFIG" "$PG17_CONFIG" "$PG18_CONFIG" "$PG19_CONFIG"; do
    [ -f "$("$config" --pkglibdir)/snowflake_id.so" ] || fail "snowflake_id is not installed into $config"
done
start=$SECONDS
bin15=$(bindir "$PG15_OLD_CONFIG")
bin17=$(bindir "$PG17_CONFIG")
bin18=$(bindir "$PG18_CONFIG")
bin19=$(bindir "$PG19_CONFIG")

## 1. The current release on both sides.
old15=$(old_server old15 "$bin15")
old17=$(old_server old17 "$bin17")
old18=$(old_server old18 "$bin18")
declare -A before
for old in old15 old17 old18; do
    case $old in old15) dir=$old15 bin=$bin15 ;; old17) dir=$old17 bin=$bin17 ;; old18) dir=$old18 bin=$bin18 ;; esac
    PG_BINDIR=$bin pg_start "$dir"
    for db in "${dbs[@]}"; do
        before[$old.$db]=$(relations "$bin" "$dir" "$db")
        [ "$(wc -w <<<"${before[$old.$db]}")" = 4 ] || fail "$old $db: expected four sequence relations, got: ${before[$old.$db]}"
    done
    PG_BINDIR=$bin pg_stop "$dir"
done
upgrades=0
for path in "15 17" "15 18" "17 18" "18 19"; do
    read -r from to <<<"$path"
    case $from in 15) old=$old15 old_bin=$bin15 ;; 17) old=$old17 old_bin=$bin17 ;; 18) old=$old18 old_bin=$bin18 ;; esac
    case $to in 17) new_bin=$bin17 ;; 18) new_bin=$bin18 ;; 19) new_bin=$bin19 ;; esac
    modes=(--link --copy)
    [ "$to" -ge 18 ] && [ "$from" != 15 ] && modes+=(--swap)
    for mode in "${modes[@]}"; do
        name="${from}_to_${to}${mode/--/_}"
        t0=$SECONDS
        new=$(upgrade "$old" "$old_bin" "$new_bin" "$name" "$mode")
        [ ! -e "$new/data/snowflake_id" ] || fail "$name: the new data directory has a snowflake_id/ after all"
        PG_BINDIR=$new_bin pg_start "$new"
        echo "$name: pg_upgrade in $((SECONDS - t0)) s"
        for db in "${dbs[@]}"; do
            [ "$(relations "$new_bin" "$new" "$db")" = "${before[old$from.$db]}" ] ||
                fail "$name ($db): the sequences are not as they were: $(relations "$new_bin" "$new" "$db") (before: ${before[old$from.$db]})"
        done
        check_upgraded "$name" "$new" "$new_bin"
        for db in "${dbs[@]}"; do
            PG_BINDIR=$new_bin keys_check "$name" "$new" "$db" 10000
        done
        PG_BINDIR=$new_bin pg_stop "$new"
        upgrades=$((upgrades + 1))
    done
done
echo "figures: $upgrades upgrades of the current release across majors in $((SECONDS - start)) s"

## 2. From release 0.3.0.
start=$SECONDS
legacy_bin15=$(release_bindir 0.3.0 "$PG15_OLD_CONFIG") || fail "could not build 0.3.0 for 15.18"
legacy_bin17=$(release_bindir 0.3.0 "$PG17_CONFIG") || fail "could not build 0.3.0 for 17"
legacy15=$(old_server legacy15 "$legacy_bin15")
legacy17=$(old_server legacy17 "$legacy_bin17")
for variant in "15 --link" "17 --copy"; do
    read -r from mode <<<"$variant"
    case $from in 15) old=$legacy15 old_bin=$legacy_bin15 ;; 17) old=$legacy17 old_bin=$legacy_bin17 ;; esac
    name="0.3.0_${from}_to_18${mode/--/_}"
    t0=$SECONDS
    new=$(upgrade "$old" "$old_bin" "$bin18" "$name" "$mode")
    # 0.3.0's README: copy the lease file, as postgres, before the new server first starts.
    as_postgres mkdir -p "$new/data/snowflake_id"
    as_postgres cp "$CLUSTER_ROOT/$name.old/data/snowflake_id/leases" "$new/data/snowflake_id/leases"
    PG_BINDIR=$bin18 pg_start "$new"
    echo "$name: pg_upgrade and the lease file in $((SECONDS - t0)) s"
    for db in "${dbs[@]}"; do
        PG_BINDIR=$bin18 expect "$new" "SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'" 0.3.0 "$db"
        out=$(PG_BINDIR=$bin18 pg_psql "$new" -d "$db" -Atc '\set VERBOSITY sqlstate' -c "INSERT INTO orders DEFAULT VALUES" 2>&1) &&
            fail "$name ($db): generating before the update: $out"
        grep -q 55000 <<<"$out" || fail "$name ($db): before the update: $out (expected 55000)"
        PG_BINDIR=$bin18 pg_psql "$new" -d "$db" -qc "ALTER EXTENSION snowflake_id UPDATE" ||
            fail "$name ($db): ALTER EXTENSION snowflake_id UPDATE failed"
    done
    check_upgraded "$name" "$new" "$bin18"
    for db in "${dbs[@]}"; do
        PG_BINDIR=$bin18 keys_check "$name" "$new" "$db" 10000
    done
    PG_BINDIR=$bin18 pg_stop "$new"
done
echo "figures: two upgrades from 0.3.0 to 18 with the update in $((SECONDS - start)) s (0.3.0's builds included)"
echo "pg_upgrade_majors: ok"
