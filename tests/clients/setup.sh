#!/usr/bin/env bash
# Installs the client libraries docs/clients.md is run with into .build/clients, at the
# versions pinned beside this script: a Python venv (requirements.txt), node_modules
# (package.json), and the Rust crate's dependencies (clients/rust/Cargo.lock, fetched by
# cargo). pgjdbc is Debian's libpostgresql-jdbc-java and the JDK Debian's (scripts/setup.sh).
# Idempotent: each part is installed again only when its pin file changed (a stamp holds the
# pin file's checksum). Bounded: each install step has a time limit.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/clients
cache=.build/clients
mkdir -p "$cache"

# stamp_ok PART FILE: whether PART was installed from this FILE's content.
stamp_ok() { [ -f "$cache/$1.stamp" ] && [ "$(cat "$cache/$1.stamp")" = "$(sha256sum "$2" | cut -d' ' -f1)" ]; }
stamp() { sha256sum "$2" | cut -d' ' -f1 >"$cache/$1.stamp"; }

if ! stamp_ok python "$here/requirements.txt"; then
    echo "clients: installing the Python libraries ($here/requirements.txt)"
    rm -rf "$cache/venv"
    python3 -m venv "$cache/venv"
    timeout 600 "$cache/venv/bin/pip" install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt"
    stamp python "$here/requirements.txt"
fi

if ! stamp_ok node "$here/package.json"; then
    echo "clients: installing the JavaScript libraries ($here/package.json)"
    command -v npm >/dev/null || { echo "clients: npm (Node.js) is required" >&2; exit 1; }
    rm -rf "$cache/node"
    mkdir -p "$cache/node"
    cp "$here/package.json" "$cache/node/"
    # No lock file written: package.json pins every library exactly.
    (cd "$cache/node" && timeout 600 npm install --no-audit --no-fund --no-package-lock --loglevel=error)
    stamp node "$here/package.json"
fi

jar=${PGJDBC_JAR:-/usr/share/java/postgresql.jar}
[ -f "$jar" ] || { echo "clients: $jar missing (apt-get install libpostgresql-jdbc-java)" >&2; exit 1; }
command -v java >/dev/null || { echo "clients: java missing (apt-get install default-jdk-headless)" >&2; exit 1; }

if ! stamp_ok rust clients/rust/Cargo.lock; then
    echo "clients: fetching the Rust crates (clients/rust/Cargo.lock)"
    (cd clients/rust && timeout 600 cargo fetch --locked --quiet)
    stamp rust clients/rust/Cargo.lock
fi
