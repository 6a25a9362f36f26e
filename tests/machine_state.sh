#!/usr/bin/env bash
# What `make test` promises the machine (scripts/machine.sh), around the package test of
# PostgreSQL 15 (tests/packages.sh: it removes the files a build installed, installs the
# package, runs pg_regress against it and removes it again):
# - a demo server running before it still answers afterwards, with its data;
# - the extension's installed files are back, byte for byte, with their modes and times;
# - a server that is not a demo and has the library loaded makes the tests refuse to start,
#   naming it, and scripts/install.sh refuses to install under a running server.
# The demo is one of its own (scripts/demo.sh with a directory and port of its own). Run alone,
# it first keeps the machine around itself as make test does (the demo of `make demo` stopped
# meanwhile, the installed files put back at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${MACHINE_KEPT:-}" ] || exec bash scripts/machine.sh run bash "$0" "$@"
source scripts/machine.sh
export PG_CONFIG=$PG15_CONFIG
source tests/cluster/lib.sh

# Every installed file of the extension, with its checksum, mode, owner and time.
installed() {
    local lib ext f
    while read -r lib ext; do
        for f in "$lib/snowflake_id.so" "$ext"/snowflake_id.control "$ext"/snowflake_id--*.sql; do
            [ -e "$f" ] || continue
            echo "$(sha256sum <"$f" | cut -c 1-16) $(stat -c '%a %U:%G %Y' "$f") $f"
        done
    done < <(machine_locations)
}

demo=$CLUSTER_ROOT/demo
port=$(free_port)
SNOWFLAKE_ID_DEMO_DIR=$demo SNOWFLAKE_ID_DEMO_PORT=$port bash scripts/demo.sh start >"$CLUSTER_ROOT/demo.out" 2>&1 ||
    { tail -n 30 "$CLUSTER_ROOT/demo.out"; fail "the demo did not start"; }
# Its closing line names the server that runs, as that server reports itself.
grep -q "^The demo server is running: PostgreSQL 15\.[0-9]* .*, port $port, socket directory $demo," "$CLUSTER_ROOT/demo.out" ||
    { tail -n 4 "$CLUSTER_ROOT/demo.out"; fail "the demo's closing message does not name its server"; }
echo "ok: a demo runs ($(sed -n 's/^The demo server is running: \(PostgreSQL [^,]*\),.*/\1/p' "$CLUSTER_ROOT/demo.out"), port $port)"
expect "$demo" "SELECT count(*) FROM orders" 5003 demo
# The database the README sends users to has the extension and nothing of the demo's.
expect "$demo" "SELECT count(*) FROM pg_class WHERE relname IN ('orders', 'invoices')" 0
first=$(sql "$demo" "SELECT snowflake_next('demo_check')")
before=$(installed)
grep -q " $("$PG_CONFIG" --pkglibdir)/snowflake_id.so$" <<<"$before" ||
    fail "no snowflake_id.so installed for PostgreSQL 15 after the demo"

# Refusals: a server that is not a demo has the library loaded.
other=$(instance other "shared_preload_libraries = 'snowflake_id'")
pg_start "$other"
if out=$(MACHINE_DEMO_DIRS=$demo bash scripts/machine.sh run true 2>&1); then
    fail "the tests would have run with another server using the library"
fi
grep -qF "data directory $(realpath "$other/data")" <<<"$out" || { echo "$out"; fail "the refusal does not name the server"; }
grep -qF "$demo/data" <<<"$out" && { echo "$out"; fail "the refusal names the demo, which the tests stop and start"; }
echo "ok: the tests refuse to start while another server has the library loaded:"
sed 's/^/    /' <<<"$out"
if out=$(bash scripts/install.sh 2>&1); then
    fail "install.sh installed under running servers"
fi
grep -qF "$(realpath "$other/data")" <<<"$out" || { echo "$out"; fail "install.sh's refusal does not name the server"; }
echo "ok: scripts/install.sh refuses to install under a server that has the library loaded"
pg_stop "$other"
[ "$(installed)" = "$before" ] || fail "the installed files changed although the tests refused"
[ "$(sql "$demo" "SELECT count(*) FROM orders" demo 2>/dev/null)" = 5003 ] || fail "the demo stopped answering although the tests refused"

# The package test, kept as make test keeps it.
MACHINE_DEMO_DIRS=$demo bash scripts/machine.sh run bash tests/packages.sh ||
    fail "the package test, or putting the machine back after it, failed"

machine_postmaster "$demo/data" >/dev/null || fail "the demo does not run after the package test"
expect "$demo" "SELECT count(*) FROM orders" 5003 demo
expect "$demo" "SELECT count(*) FROM invoices" 1000 demo
expect "$demo" "SELECT snowflake_next('demo_check') > $first" t
expect "$demo" "SELECT gdid_next('demo', 'check') IS NOT NULL" t
after=$(installed)
if [ "$after" != "$before" ]; then
    diff <(echo "$before") <(echo "$after") || true
    fail "the installed files are not as they were before the package test"
fi
echo "ok: the installed files are back as they were ($(grep -c . <<<"$after") files)"
! dpkg-query -W -f='${Status}' postgresql-15-snowflake-id 2>/dev/null | grep -q "install ok installed" ||
    fail "postgresql-15-snowflake-id is still installed"
echo "machine state: ok"
