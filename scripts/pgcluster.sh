# shellcheck shell=bash
# Throwaway PostgreSQL clusters for the demo, the tests and the benchmarks. Source it.
#
# Everything runs as root here while initdb refuses root, so clusters run as `postgres`, each
# in its own directory with its own socket directory, listening on loopback only.
#
#   pg_init DIR PORT [extra postgresql.conf lines...]   (PG_INITDB_ARGS: more initdb options)
#   pg_start DIR [env...]   (env such as FAKETIME=-30s LD_PRELOAD=... goes to the postmaster)
#   pg_stop DIR [mode]      pg_kill9 DIR     pg_psql DIR [psql args...]

# PG_CONFIG selects the PostgreSQL (default: Debian's 15).
PG_BINDIR=${PG_BINDIR:-$("${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}" --bindir)}

as_postgres() {
    runuser -u postgres -- "$@"
}

pg_port_of() {
    sed -n "s/^port = //p" "$1/postgresql.conf" | tail -n 1
}

pg_init() {
    local dir=$1 port=$2
    shift 2
    rm -rf "$dir"
    mkdir -p "$dir"
    chown postgres: "$dir"
    chmod 700 "$dir"
    # shellcheck disable=SC2086
    as_postgres "$PG_BINDIR/initdb" -D "$dir/data" -U postgres -A trust --no-sync ${PG_INITDB_ARGS:-} >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log"; return 1; }
    {
        echo "port = $port"
        echo "listen_addresses = '127.0.0.1'"
        echo "unix_socket_directories = '$dir'"
        echo "fsync = on"
        echo "shared_buffers = 128MB"
        echo "max_connections = 40"
        for line in "$@"; do echo "$line"; done
    } >>"$dir/data/postgresql.conf"
    # port is read back from the data directory's config; keep a copy next to it
    grep '^port = ' "$dir/data/postgresql.conf" >"$dir/postgresql.conf"
}

pg_start() {
    local dir=$1
    shift
    as_postgres env "$@" "$PG_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
        { tail -n 30 "$dir/server.log"; return 1; }
}

pg_stop() {
    local dir=$1 mode=${2:-fast}
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_postgres "$PG_BINDIR/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop >/dev/null 2>&1 || true
}

# The postmaster and all its children, without warning: a power cut as far as the data knows.
pg_kill9() {
    local dir=$1 pid
    pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null) || return 0
    pkill -KILL -P "$pid" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    # children of the postmaster exit on their own once it is gone
    sleep 0.5
}

pg_psql() {
    local dir=$1
    shift
    "$PG_BINDIR/psql" -X -v ON_ERROR_STOP=1 -h "$dir" -p "$(pg_port_of "$dir")" -U postgres "$@"
}
