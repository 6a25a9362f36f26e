#!/usr/bin/env bash
# Installs the client libraries docs/clients.md is run with into .build/clients, at the
# versions pinned beside this script: a Python venv (requirements.txt), node_modules
# (package.json), and the Rust crate's dependencies, built (clients/rust/Cargo.lock). pgjdbc
# is Debian's libpostgresql-jdbc-java and the JDK Debian's (scripts/setup.sh).
# Idempotent: the Python and JavaScript parts are installed again only when their pin file
# changed (a stamp holds its checksum); cargo does nothing when the build is there. Bounded:
# each step has a time limit. The downloads run beside the Rust build, which needs the cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/clients
cache=.build/clients
mkdir -p "$cache"

jar=${PGJDBC_JAR:-/usr/share/java/postgresql.jar}
[ -f "$jar" ] || { echo "clients: $jar missing (apt-get install libpostgresql-jdbc-java)" >&2; exit 1; }
command -v java >/dev/null || { echo "clients: java missing (apt-get install default-jdk-headless)" >&2; exit 1; }
command -v npm >/dev/null || { echo "clients: npm (Node.js) missing (apt-get install nodejs npm)" >&2; exit 1; }

# stamp_ok PART FILE: whether PART was installed from this FILE's content.
stamp_ok() { [ -f "$cache/$1.stamp" ] && [ "$(cat "$cache/$1.stamp")" = "$(sha256sum "$2" | cut -d' ' -f1)" ]; }
stamp() { sha256sum "$2" | cut -d' ' -f1 >"$cache/$1.stamp"; }

python_libraries() {
    stamp_ok python "$here/requirements.txt" && return 0
    echo "clients: installing the Python libraries ($here/requirements.txt)"
    rm -rf "$cache/venv" "$cache/python.stamp"
    python3 -m venv "$cache/venv"
    timeout 600 "$cache/venv/bin/pip" install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt"
    stamp python "$here/requirements.txt"
}

node_libraries() {
    stamp_ok node "$here/package.json" && return 0
    echo "clients: installing the JavaScript libraries ($here/package.json)"
    rm -rf "$cache/node" "$cache/node.stamp"
    mkdir -p "$cache/node"
    cp "$here/package.json" "$cache/node/"
    # No lock file written: package.json pins every library exactly.
    (cd "$cache/node" && timeout 600 npm install --no-audit --no-fund --no-package-lock --loglevel=error)
    stamp node "$here/package.json"
}

python_libraries >"$cache/python.log" 2>&1 &
python_job=$!
node_libraries >"$cache/node.log" 2>&1 &
node_job=$!
# The crate and what its tests and the docs' programs build on (the same target directory).
(cd clients/rust && CARGO_TARGET_DIR="$PWD/../../$cache/rust-target" timeout 900 cargo test --locked --no-run --quiet) ||
    { echo "clients: building clients/rust failed" >&2; exit 1; }
status=0
wait "$python_job" || { echo "clients: the Python libraries failed:" >&2; cat "$cache/python.log" >&2; status=1; }
wait "$node_job" || { echo "clients: the JavaScript libraries failed:" >&2; cat "$cache/node.log" >&2; status=1; }
cat "$cache/python.log" "$cache/node.log"
exit $status
