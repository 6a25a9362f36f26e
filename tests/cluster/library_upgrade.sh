#!/usr/bin/env bash
# Upgrading the library never stops generation: a server runs the previous release (the
# newest install script in sql/ below the current version, built by scripts/old_release.sh
# into a private copy of this PostgreSQL); while clients insert continuously into two
# databases, the package is replaced (the current release's library, control file and scripts
# written over the copy's as dpkg does, a new file renamed into place), the server restarts,
# and ALTER EXTENSION snowflake_id UPDATE runs in one database, then, a while later, in the
# other. Proved: no insert fails except those that reach the server while it restarts (a
# connection refused), so the current library generates for a database still at the previous
# release, before and after the other one is updated; nothing repeats, and every key made
# after the restart is above every key made before it, per sequence.
#
# Each client is a loop of new connections (as a pool reconnects after a restart), one
# attempt each 10 ms; each attempt inserts a row into orders (snowflake key) and invoices
# (gdid key) and reports "TIME ok ID GDID" or "TIME error SQLSTATE" (caught in the function),
# or psql's failure to connect.
# majors: 15 (one is enough: the package and the restart do not depend on the major)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
end_clients_then_cleanup() {
    local status=$? pid
    set +e
    touch "$CLUSTER_ROOT/stop" 2>/dev/null
    for pid in $(jobs -p); do
        pkill -P "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null
    done
    wait 2>/dev/null
    (exit "$status")
    cleanup
}
trap end_clients_then_cleanup EXIT

current=$(sed -n 's/^version = "\(.*\)"/\1/p' "$(dirname "$0")/../../Cargo.toml")
previous=$(ls "$(dirname "$0")/../../sql" | sed -n 's/^snowflake_id--\([0-9.]*\)\.sql$/\1/p' |
    sort -V | awk -v c="$current" '$0 != c' | tail -n 1)
[ -n "$previous" ] || fail "no release before $current in sql/"
start=$SECONDS
old_config=$(bash "$(dirname "$0")/../../scripts/old_release.sh" "$previous" "$PG_CONFIG") ||
    fail "could not build release $previous"
echo "figures: release $previous ready in $((SECONDS - start)) s"

# The "installed package": a copy of the previous release's private installation, whose
# extension files are then replaced by the current release's.
pkg=$CLUSTER_ROOT/pkg
release_root=${old_config%"$("$PG_CONFIG" --bindir)/pg_config"}
cp -a "$release_root" "$pkg"
bin=$pkg$("$PG_CONFIG" --bindir)
[ "$("$bin/pg_config" --pkglibdir)" = "$pkg$("$PG_CONFIG" --pkglibdir)" ] || fail "the package copy does not find its own files"
chmod -R a+rX "$pkg"

dir=$(PG_BINDIR=$bin instance server "shared_preload_libraries = 'snowflake_id'" \
    "snowflake.node_id = 3" "gdid.authority = 3" "max_connections = 60")
PG_BINDIR=$bin pg_start "$dir"
dbs=(app1 app2)
for db in "${dbs[@]}"; do
    PG_BINDIR=$bin pg_psql "$dir" -d postgres -qc "CREATE DATABASE $db"
    PG_BINDIR=$bin pg_psql "$dir" -d "$db" -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), at timestamptz DEFAULT clock_timestamp());
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), at timestamptz DEFAULT clock_timestamp());
INSERT INTO orders SELECT FROM generate_series(1, 1000);
INSERT INTO invoices SELECT FROM generate_series(1, 1000);
CREATE FUNCTION attempt() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    keys text;
BEGIN
    WITH o AS (INSERT INTO orders DEFAULT VALUES RETURNING id),
         i AS (INSERT INTO invoices DEFAULT VALUES RETURNING id)
    SELECT o.id || ' ' || i.id INTO keys FROM o, i;
    RETURN extract(epoch FROM clock_timestamp()) || ' ok ' || keys;
EXCEPTION WHEN OTHERS THEN
    RETURN extract(epoch FROM clock_timestamp()) || ' error ' || SQLSTATE;
END $$;
SQL
    [ "$(PG_BINDIR=$bin sql "$dir" "SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'" "$db")" = "$previous" ] ||
        fail "$db: not at $previous"
done

work=$CLUSTER_ROOT/clients
mkdir -p "$work"
# client DB N: new connections until $work/stop exists (at most 6000 attempts, 120 s); each
# line "TIME ok ..." / "TIME error SQLSTATE", or "TIME refused" when psql could not connect.
client() {
    local i deadline=$((SECONDS + 120)) out
    for ((i = 0; i < 6000 && SECONDS < deadline; i++)); do
        [ -f "$work/stop" ] && break
        if out=$("$bin/psql" -X -Atq -h "$dir" -p "$(pg_port_of "$dir")" -U postgres -d "$1" \
            -c "SELECT attempt()" 2>"$work/$1.$2.last_err"); then
            echo "$out"
        else
            echo "$(date +%s.%N) refused $(tr '\n' ' ' <"$work/$1.$2.last_err")"
        fi
        sleep 0.01
    done >>"$work/$1.$2"
}
ok_in() { [ "$(grep -c " ok " "$work/$1.$2" 2>/dev/null)" -ge "$3" ]; }
now() { date +%s.%N; }

for db in "${dbs[@]}"; do
    for n in 1 2; do
        : >"$work/$db.$n"
        client "$db" "$n" &
    done
done
for db in "${dbs[@]}"; do
    for n in 1 2; do wait_until 30 "inserts by client $n of $db" ok_in "$db" "$n" 20; done
done

# The package of the current release replaces the previous one's, as dpkg writes a file: a
# new file renamed over the old one (the running server keeps the library it mapped).
t_replaced=$(now)
for f in "$("$PG_CONFIG" --pkglibdir)/snowflake_id.so" "$("$PG_CONFIG" --sharedir)"/extension/snowflake_id*; do
    target=$pkg$f
    cp "$f" "$target.dpkg-new"
    mv -f "$target.dpkg-new" "$target"
done
for db in "${dbs[@]}"; do
    for n in 1 2; do wait_until 30 "inserts by client $n of $db after the package was replaced" ok_in "$db" "$n" 60; done
done

# The restart, as the package's postinst or the administrator does it.
t_stop=$(now)
PG_BINDIR=$bin pg_stop "$dir"
PG_BINDIR=$bin pg_start "$dir"
t_started=$(now)
[ "$(PG_BINDIR=$bin sql "$dir" "SELECT count(*) FROM pg_extension WHERE extversion = '$previous'" app1)" = 1 ] ||
    fail "app1 is no longer at $previous after the restart"
for db in "${dbs[@]}"; do
    for n in 1 2; do wait_until 30 "inserts by client $n of $db under the new library" ok_in "$db" "$n" 120; done
done

# The databases are updated one at a time, a while apart: until then each runs at the
# previous release under the current library.
t_update1=$(now)
PG_BINDIR=$bin pg_psql "$dir" -d app1 -qc "ALTER EXTENSION snowflake_id UPDATE"
for n in 1 2; do wait_until 30 "inserts into app1 after its update" ok_in app1 "$n" 180; done
t_update2=$(now)
PG_BINDIR=$bin pg_psql "$dir" -d app2 -qc "ALTER EXTENSION snowflake_id UPDATE"
for db in "${dbs[@]}"; do
    for n in 1 2; do wait_until 30 "inserts by client $n of $db after both updates" ok_in "$db" "$n" 240; done
    [ "$(PG_BINDIR=$bin sql "$dir" "SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'" "$db")" = "$current" ] ||
        fail "$db: not at $current after the update"
done
touch "$work/stop"
wait

made=0
failed=0
for db in "${dbs[@]}"; do
    for n in 1 2; do
        f=$work/$db.$n
        # Every failure is a refused connection while the server restarted.
        if awk -v a="$t_stop" -v b="$t_started" '$2 != "ok" && !($2 == "refused" && $1 >= a && $1 <= b)' "$f" |
            head -n 5 | grep .; then
            fail "client $n of $db: an attempt failed outside the restart (above)"
        fi
        made=$((made + $(grep -c " ok " "$f")))
        failed=$((failed + $(grep -vc " ok " "$f" || true)))
    done
    # No key twice, and everything made after the restart above everything made before it.
    read -r dup_o dup_i below_o below_i <<<"$(PG_BINDIR=$bin sql "$dir" "
        SELECT (SELECT count(*) - count(DISTINCT id) FROM orders),
               (SELECT count(*) - count(DISTINCT id) FROM invoices),
               (SELECT count(*) FROM orders WHERE at > to_timestamp($t_started)
                   AND id <= (SELECT max(id) FROM orders WHERE at < to_timestamp($t_stop))),
               (SELECT count(*) FROM invoices WHERE at > to_timestamp($t_started)
                   AND id <= (SELECT max(id) FROM invoices WHERE at < to_timestamp($t_stop)))" "$db" | tr '|' ' ')"
    [ "$dup_o $dup_i $below_o $below_i" = "0 0 0 0" ] ||
        fail "$db: duplicates $dup_o/$dup_i, keys after the restart not above those before: $below_o/$below_i"
done
per_phase=$(cat "$work"/*.? | awk -v r="$t_replaced" -v s="$t_stop" -v b="$t_started" -v u1="$t_update1" -v u2="$t_update2" '
    $2 == "ok" { if ($1 < r) p = "before"; else if ($1 < s) p = "replaced"; else if ($1 < u1) p = "restarted";
                 else if ($1 < u2) p = "one_updated"; else p = "both_updated"; n[p]++ }
    END { printf "%d before, %d with the package replaced, %d after the restart (both at the previous release), %d with app1 updated, %d with both", n["before"], n["replaced"], n["restarted"], n["one_updated"], n["both_updated"] }')
echo "ok: $previous -> $current under load: $made inserts made ($per_phase), $failed failed, all while the server restarted ($(python3 -c "print(round(($t_started - $t_stop) * 1000))") ms); no duplicate, every key after the restart above every key before it"
