#!/usr/bin/env bash
# What the tests leave as they found it: the extension's installed files (each major's
# snowflake_id.so, control file and SQL scripts) and a running demo server. The tests install
# builds and a Debian package into the same directories and remove them again, and a new
# library must never be installed over one a running server has loaded; so the demo is
# stopped while they run (its data stays) and started again at the end, and the files are
# saved first and put back byte for byte. A server that is not the demo and has the library
# loaded cannot be kept working that way: the tests refuse to start and say what to stop.
#
# Sourced (scripts/test.sh):
#   machine_check         status 1, saying what to stop or remove, when a server other than a
#                         demo has one of our libraries loaded, or a snowflake-id package is
#                         installed (the package test would replace and remove it)
#   machine_keep          saves the files and stops the running demos; machine_restore (from an
#                         EXIT trap too) puts the files back and starts those demos again
#   machine_users LIBDIR...   the data directories of running servers with LIBDIR/snowflake_id.so
#                         mapped
# Run:
#   machine.sh run CMD [ARGS...]   CMD between machine_check + machine_keep and machine_restore;
#                         its status, or 1 when the machine could not be put back.
# The demos: MACHINE_DEMO_DIRS (space-separated), default that of `make demo` (scripts/demo.sh).
# MACHINE_KEPT=1 in the environment of what runs kept, for scripts that keep themselves when
# run alone.
source "$(dirname "${BASH_SOURCE[0]}")/pgversions.sh"
MACHINE_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MACHINE_DEMO_DIRS=${MACHINE_DEMO_DIRS:-${SNOWFLAKE_ID_DEMO_DIR:-/tmp/snowflake_id_demo}}
MACHINE_SAVED=""
MACHINE_STOPPED=()

# "PKGLIBDIR EXTENSION_DIR" of each PostgreSQL this project installs into that is there.
machine_locations() {
    local pg_config
    for pg_config in "${PG_CONFIGS[@]}" "$PG15_OLD_CONFIG"; do
        [ -x "$pg_config" ] || continue
        echo "$("$pg_config" --pkglibdir) $("$pg_config" --sharedir)/extension"
    done
}

machine_users() {
    local maps pid
    [ $# -gt 0 ] || return 0
    # One pass over every process's mappings; a postgres process's working directory is its
    # server's data directory.
    for maps in $(grep -lF /snowflake_id.so /proc/[0-9]*/maps 2>/dev/null); do
        awk -v libs="$*" 'BEGIN { n = split(libs, l, " "); for (i = 1; i <= n; i++) want[l[i] "/snowflake_id.so"] = 1 }
            ($6 in want) { found = 1 } END { exit !found }' "$maps" || continue
        pid=${maps#/proc/}
        readlink "/proc/${pid%/maps}/cwd" 2>/dev/null || true
    done | sort -u
}

# The postmaster of a data directory, when it runs.
machine_postmaster() {
    local pid
    pid=$(head -n 1 "$1/postmaster.pid" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$(realpath -m "$1")" ] && echo "$pid"
}

machine_is_demo() {
    local demo
    for demo in $MACHINE_DEMO_DIRS; do
        [ "$(realpath -m "$demo/data")" = "$1" ] && return 0
    done
    return 1
}

machine_check() {
    local refuse=0 dir pid bindir pg_config package
    # Refuses for every server but a demo, a test instance too: a run that left one behind was
    # killed, or another run is going, and installing under it would crash it.
    local -a libdirs
    mapfile -t libdirs < <(machine_locations | cut -d ' ' -f 1)
    while read -r dir; do
        [ -n "$dir" ] || continue
        machine_is_demo "$dir" && continue
        pid=$(machine_postmaster "$dir") || pid="?"
        bindir=$(dirname "$(readlink "/proc/$pid/exe" 2>/dev/null || echo /usr/lib/postgresql/NN/bin/postgres)")
        echo "refusing to start: the PostgreSQL server with data directory $dir (postmaster $pid) has snowflake_id loaded;" >&2
        echo "  the tests install and remove the library under it. Stop it first:" >&2
        echo "  runuser -u postgres -- $bindir/pg_ctl -D $dir stop" >&2
        case $dir in
        /tmp/snowflake_id_*) echo "  (a test instance: another run of the tests is still going, or one was killed)" >&2 ;;
        esac
        refuse=1
    done < <(machine_users "${libdirs[@]}")
    for pg_config in "${PG_CONFIGS[@]}"; do
        # /usr/lib/postgresql/NN/bin/pg_config: NN, built or not yet
        package="postgresql-$(basename "$(dirname "$(dirname "$pg_config")")")-snowflake-id"
        if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
            echo "refusing to start: the package $package is installed; the package test installs and removes" >&2
            echo "  its own build of it. Remove it first: apt-get remove $package" >&2
            refuse=1
        fi
    done
    return $refuse
}

# Each location's files into MACHINE_SAVED/N/, with cp -a (modes, owners, times).
machine_keep() {
    local i=0 lib ext f dir pid bindir
    MACHINE_SAVED=$(mktemp -d /tmp/snowflake_id_saved.XXXXXX)
    # Sourced by scripts/test.sh, which runs without set -e: every failure returns.
    while read -r lib ext; do
        i=$((i + 1))
        mkdir -p "$MACHINE_SAVED/$i/lib" "$MACHINE_SAVED/$i/ext" || return 1
        echo "$lib $ext" >"$MACHINE_SAVED/$i/where" || return 1
        # The directories' times too, put back after the files.
        touch -r "$lib" "$MACHINE_SAVED/$i/lib.times" && touch -r "$ext" "$MACHINE_SAVED/$i/ext.times" || return 1
        for f in "$lib/snowflake_id.so"; do
            if [ -e "$f" ]; then cp -a "$f" "$MACHINE_SAVED/$i/lib/" || return 1; fi
        done
        for f in "$ext"/snowflake_id.control "$ext"/snowflake_id--*.sql; do
            if [ -e "$f" ]; then cp -a "$f" "$MACHINE_SAVED/$i/ext/" || return 1; fi
        done
    done < <(machine_locations)
    # Only a complete save is put back: until then the tests have changed nothing, and a
    # restore of half a save would delete what was not saved yet.
    touch "$MACHINE_SAVED/complete" || return 1
    for dir in $MACHINE_DEMO_DIRS; do
        pid=$(machine_postmaster "$dir/data") || continue
        # Stopped with the PostgreSQL it runs, started again with it.
        bindir=$(dirname "$(readlink "/proc/$pid/exe")")
        MACHINE_STOPPED+=("$bindir|$dir")
        (PG_BINDIR=$bindir && source "$MACHINE_SCRIPTS/pgcluster.sh" && pg_stop "$dir")
        ! machine_postmaster "$dir/data" >/dev/null || { echo "machine: the demo server in $dir did not stop" >&2; return 1; }
        echo "machine: the demo server ($dir) is stopped while the tests run, and starts again at the end"
    done
}

# Removes what the tests left in each location and puts back what was there (new files, never
# written over in place), then starts the demos that were running.
machine_restore() {
    local status=0 saved lib ext entry pg_config package f
    # Not interrupted half-way by a second Ctrl-C or a CI cancel: it takes seconds.
    trap '' INT TERM HUP
    [ -n "$MACHINE_SAVED" ] || { machine_start_demos; return; }
    if [ ! -e "$MACHINE_SAVED/complete" ]; then
        rm -rf "$MACHINE_SAVED"
        MACHINE_SAVED=""
        machine_start_demos
        return
    fi
    # A package test that failed half-way leaves its package installed (none was, machine_check
    # made sure): removed first, or removing it later would take the files put back with it.
    for pg_config in "${PG_CONFIGS[@]}"; do
        package="postgresql-$(basename "$(dirname "$(dirname "$pg_config")")")-snowflake-id"
        if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
            DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq "$package" >/dev/null 2>&1 ||
                { echo "machine: could not remove $package" >&2; status=1; }
        fi
    done
    while read -r lib ext; do
        rm -f "$lib/snowflake_id.so" "$ext/snowflake_id.control" "$ext"/snowflake_id--*.sql
        saved=$(grep -lxF "$lib $ext" "$MACHINE_SAVED"/*/where 2>/dev/null | head -n 1) || true
        [ -n "$saved" ] || continue # a PostgreSQL built since: nothing was installed in it
        # File by file: a copy of the saved directory itself would give the library and
        # extension directories its mode and times.
        for f in "$(dirname "$saved")"/lib/* "$(dirname "$saved")"/ext/*; do
            [ -e "$f" ] || continue
            case $f in */lib/*) cp -a "$f" "$lib/" ;; *) cp -a "$f" "$ext/" ;; esac || {
                echo "machine: could not put back $f into $lib or $ext (the save stays in $MACHINE_SAVED)" >&2
                machine_start_demos
                return 1
            }
        done
        touch -r "$(dirname "$saved")/lib.times" "$lib" && touch -r "$(dirname "$saved")/ext.times" "$ext" ||
            echo "machine: could not put back the times of $lib and $ext" >&2
    done < <(machine_locations)
    MACHINE_SAVED_DONE=$MACHINE_SAVED
    MACHINE_SAVED=""
    rm -rf "$MACHINE_SAVED_DONE"
    machine_start_demos || status=1
    return $status
}

# Starts the demos machine_keep stopped (each once).
machine_start_demos() {
    local entry status=0
    for entry in "${MACHINE_STOPPED[@]}"; do
        if (PG_BINDIR=${entry%%|*} && source "$MACHINE_SCRIPTS/pgcluster.sh" && pg_start "${entry#*|}"); then
            echo "machine: the demo server (${entry#*|}) runs again"
        else
            echo "machine: the demo server (${entry#*|}) did not start again: see ${entry#*|}/server.log" >&2
            status=1
        fi
    done
    MACHINE_STOPPED=()
    return $status
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    [ "${1:-}" = run ] && [ $# -gt 1 ] || { echo "usage: $0 run CMD [ARGS...]" >&2; exit 2; }
    shift
    machine_check || exit 1
    trap 'machine_restore || exit 1' EXIT
    machine_keep
    status=0
    MACHINE_KEPT=1 "$@" || status=$?
    machine_restore || status=1
    exit $status
fi
