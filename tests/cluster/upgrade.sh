#!/usr/bin/env bash
# Every released version stays installable and updatable. For each install script of an
# earlier release in sql/, a database installs that version and gets tables whose DEFAULTs
# name sequences of both kinds, holding keys of this server (node 9, authority 9) as that
# version would have stored them; then, with the current library preloaded:
# - before 0.4.0, generating there is refused until the update, with exactly the error that
#   says so (55000, HINT "Run ALTER EXTENSION snowflake_id UPDATE"): the database has no
#   sequences yet, and nothing may be handed out under a lease before the update has carried
#   it over; from 0.4.0 on it generates (the library serves the release before it);
# - ALTER EXTENSION snowflake_id UPDATE makes its extension objects (every function with its
#   markings, C symbol and privileges, operators, classes, casts, types, views, comments)
#   exactly those of a fresh install of the current version, gives each DEFAULT its sequence
#   and the dependency on it, and the detection trigger to each generating table. A function's
#   privileges are compared as who may run it: where an earlier release REVOKEd EXECUTE and
#   the update GRANTs it back, the ACL stays explicit, equal to the default a fresh install
#   leaves NULL; pg_dump writes the same privileges for the extension's objects of both;
# - generation then continues above the stored keys: without a lease file (these databases
#   never generated through a library of their version), each sequence is fresh and starts
#   above the keys in its column's index, a snowflake key 60 s ahead of the clock included.
#   (tests/cluster/update_from_0_3.sh runs release 0.3.0's own library, whose leases the
#   update adopts.)
#
# The keys of a release before 0.4.0 are written while the library is not preloaded: such a
# database refuses statements that store such a DEFAULT under the current library until its
# update; a database of 0.4.0 or later is made with it preloaded, as its own library was.
#
# A release that changes the SQL adds sql/snowflake_id--OLD--NEW.sql (and keeps
# sql/snowflake_id--OLD.sql); a forgotten script fails here, as "no update path" or as a
# difference in the objects.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."

current=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml)
db=$(instance node "include_if_exists = 'preload.conf'")
preload="$db/data/preload.conf"
objects() {
    pg_psql "$db" -d "$1" -q -f tests/cluster/extension_objects.sql
}
versions=$(ls sql | sed -n 's/^snowflake_id--\([^-]*\)\.sql$/\1/p' | grep -vx "$current" || true)
[ -n "$versions" ] || fail "no earlier release in sql/"

# A database of release $1, its tables filled with keys of node 9 and authority 9: 5000 of
# each, the newest snowflake key 60 s ahead of the clock, and keys of another server (node 8,
# authority 8) above them, which must not count.
make_db() {
    local v=$1
    name="from_${v//./_}"
    pg_psql "$db" -d postgres -qc "CREATE DATABASE $name"
    pg_psql "$db" -d "$name" -q <<SQL
CREATE EXTENSION snowflake_id VERSION '$v';
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), at text DEFAULT 'before');
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), at text DEFAULT 'before');
-- The IDs of the default layout (epoch 2025-01-01, 10 node bits) by hand: the decoders need
-- the library preloaded.
CREATE FUNCTION pg_temp.id(t timestamptz, node int, counter int) RETURNS bigint
    LANGUAGE sql AS \$\$ SELECT (((extract(epoch FROM t) * 1000)::bigint - 1735689600000) << 22) | (node << 12) | counter \$\$;
INSERT INTO orders (id)
SELECT pg_temp.id(now() - interval '1 hour' + i * interval '1 ms', 9, 0) FROM generate_series(1, 4999) i
UNION ALL SELECT pg_temp.id(now() + interval '60 s', 9, 17)
UNION ALL SELECT pg_temp.id(now() + interval '90 s', 8, 0);
INSERT INTO invoices (id) SELECT gdid(0, 9, i) FROM generate_series(1, 5000) i
UNION ALL SELECT gdid(0, 8, 70000000);
SQL
    [ "$(pg_psql "$db" -d "$name" -Atc "SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'")" = "$v" ] ||
        fail "did not install $v"
}
# Whether release $1 keeps its sequences as relations (0.4.0 and later): its library recorded
# each DEFAULT's dependency as the table was made, and the library of the next release
# generates for it (tests/cluster/library_upgrade.sh).
relations_since() { [ "$(printf '%s\n' "$1" 0.4.0 | sort -V | head -n 1)" = 0.4.0 ]; }

# 1. Without the library preloaded: each release before 0.4.0 installed (a database of one
# refuses statements that store such a DEFAULT under the current library until its update).
pg_start "$db"
for v in $versions; do
    relations_since "$v" || make_db "$v"
done
pg_stop "$db"

# 2. The current library preloaded.
printf '%s\n' "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 9" "gdid.authority = 9" \
    "snowflake.max_clock_ahead = '150s'" >"$preload"
chown postgres: "$preload"
pg_start "$db"
# Releases from 0.4.0 on, made as their library made them: preloaded.
for v in $versions; do
    if relations_since "$v"; then make_db "$v"; fi
done
pg_psql "$db" -d postgres -qc "CREATE DATABASE fresh" -c "ALTER DATABASE fresh SET timezone = 'UTC'"
pg_psql "$db" -d fresh -qc "CREATE EXTENSION snowflake_id"
objects fresh >"$CLUSTER_ROOT/fresh.txt"
# The privilege statements pg_dump writes for database $1, but for its sequences (not objects
# of the extension: the update grants USAGE on those it adopts to PUBLIC, as 0.3.0 let every
# role use every name).
dumped_grants() {
    as_postgres "$PG_BINDIR/pg_dump" -h "$db" -p "$(pg_port_of "$db")" -U postgres --schema-only "$1" |
        grep -E '^(GRANT|REVOKE) ' | grep -vE ' ON SEQUENCE (snowflake|gdid)\.' || true
}
dumped_grants fresh >"$CLUSTER_ROOT/fresh.grants.txt"
[ "$(wc -l <"$CLUSTER_ROOT/fresh.txt")" -gt 60 ] || fail "the object listing is too short"
echo "a fresh $current install has $(wc -l <"$CLUSTER_ROOT/fresh.txt") object properties"

for v in $versions; do
    name="from_${v//./_}"
    q() { pg_psql "$db" -d "$name" -Atc "$1"; }
    calls=("SELECT snowflake_next('orders')" "SELECT gdid_next('billing', 'invoices')"
        "INSERT INTO orders DEFAULT VALUES" "SELECT count(*) FROM snowflake_next_batch('new_name', 10)")
    if relations_since "$v"; then
        # From 0.4.0 on (sequences are relations), the library of the next release generates
        # for a database still at the previous one (tests/cluster/library_upgrade.sh).
        # (In a transaction rolled back: the rows stay as they were, the values are used.)
        for call in "${calls[@]}"; do
            pg_psql "$db" -d "$name" -qAt -c "BEGIN" -c "$call" -c "ROLLBACK" >/dev/null ||
                fail "$v: refused before the update: $call"
        done
        fresh_after_update=f
        echo "ok: $v: generating before the update"
    else
        fresh_after_update=t
        # Refused before the update, with the error that says what to do.
        for call in "${calls[@]}"; do
            msg=$(pg_psql "$db" -d "$name" -v VERBOSITY=verbose -Atc "$call" 2>&1) && fail "$v: generated before the update: $call"
            grep -q '^ERROR:  55000: ' <<<"$msg" && grep -q '^HINT:  Run ALTER EXTENSION snowflake_id UPDATE' <<<"$msg" ||
                fail "$v: unexpected refusal of $call: $msg"
        done
        echo "ok: $v: generating is refused until the update ($(head -n 1 <<<"$msg"))"
    fi
    objects "$name" >"$CLUSTER_ROOT/$name.before.txt"
    pg_psql "$db" -d "$name" -qc "ALTER EXTENSION snowflake_id UPDATE"
    q "SELECT 'updated $v -> ' || extversion FROM pg_extension WHERE extname = 'snowflake_id'"
    objects "$name" >"$CLUSTER_ROOT/$name.txt"
    if ! diff -u "$CLUSTER_ROOT/fresh.txt" "$CLUSTER_ROOT/$name.txt"; then
        fail "after the update from $v the extension differs from a fresh $current install"
    fi
    echo "ok: after the update from $v the objects are exactly those of a fresh install"
    dumped_grants "$name" >"$CLUSTER_ROOT/$name.grants.txt"
    diff -u "$CLUSTER_ROOT/fresh.grants.txt" "$CLUSTER_ROOT/$name.grants.txt" ||
        fail "after the update from $v pg_dump writes other privileges than for a fresh install"
    echo "ok: pg_dump writes the same $(wc -l <"$CLUSTER_ROOT/$name.grants.txt") GRANT/REVOKE statements as for a fresh install"
    changed=$(diff "$CLUSTER_ROOT/$name.before.txt" "$CLUSTER_ROOT/$name.txt" | grep -c '^[<>]' || true)
    echo "($changed object properties changed by the update)"
    # Tables with a generating column that existed before the update get the trigger that
    # detection counts new values with. (A release that had the trigger gave it to each
    # table as it was made, with its library preloaded: those of 0.4.0 on were made so, and
    # snowflake_watch_tables() finds nothing left; the earlier ones were made without it.)
    if grep -q snowflake_watch_tables "sql/snowflake_id--$v.sql"; then
        if relations_since "$v"; then unwatched=0; else unwatched=2; fi
        [ "$(q "SELECT snowflake_watch_tables()")" = "$unwatched" ] ||
            fail "$v: snowflake_watch_tables() did not watch the $unwatched tables made without the library"
    fi
    [ "$(q "SELECT string_agg(tgrelid::regclass::text || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text) FROM pg_trigger WHERE tgfoid = 'snowflake_arrival_trigger'::regproc")" = "invoices:R,orders:R" ] ||
        fail "after the update from $v: triggers $(q "SELECT string_agg(tgrelid::regclass::text, ',') FROM pg_trigger WHERE tgfoid = 'snowflake_arrival_trigger'::regproc")"
    # Each DEFAULT has its sequence, fresh (unless it generated before the update), and
    # depends on it.
    for pair in "orders snowflake.orders" "invoices gdid.\"billing/invoices\""; do
        read -r table rel <<<"$pair"
        [ "$(q "SELECT NOT is_called FROM $rel")" = "$fresh_after_update" ] || fail "$v: $rel is missing, or fresh where it should not be, or not where it should"
        [ "$(q "SELECT count(*) FROM pg_depend d JOIN pg_attrdef ad ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid WHERE ad.adrelid = '$table'::regclass AND d.refobjid = '$rel'::regclass")" = 1 ] ||
            fail "$v: the DEFAULT of $table does not depend on $rel"
    done
    msg=$(pg_psql "$db" -d "$name" -v VERBOSITY=verbose -Atc "DROP SEQUENCE snowflake.orders" 2>&1) &&
        fail "$v: dropped the sequence a DEFAULT names"
    grep -q '^ERROR:  2BP01: ' <<<"$msg" || fail "$v: unexpected: $msg"
    pg_psql "$db" -d "$name" -q <<'SQL'
INSERT INTO orders (at) SELECT 'after' FROM generate_series(1, 5000);
INSERT INTO invoices (at) SELECT 'after' FROM generate_series(1, 5000);
SQL
    [ "$(q "SELECT count(*) || '/' || count(DISTINCT id) FROM orders")" = 10001/10001 ] ||
        fail "orders: $(q "SELECT count(*) || '/' || count(DISTINCT id) FROM orders")"
    [ "$(q "SELECT count(*) || '/' || count(DISTINCT id) FROM invoices")" = 10001/10001 ] ||
        fail "invoices: $(q "SELECT count(*) || '/' || count(DISTINCT id) FROM invoices")"
    [ "$(q "SELECT min(id) FILTER (WHERE at = 'after') > max(id) FILTER (WHERE at = 'before' AND snowflake_node(id) = 9) FROM orders")" = t ] ||
        fail "snowflake IDs after the update from $v are not above those before"
    [ "$(q "SELECT min(id) FILTER (WHERE at = 'after') > max(id) FILTER (WHERE at = 'before' AND gdid_authority(id) = 9) FROM invoices")" = t ] ||
        fail "gdids after the update from $v are not above those before"
    [ "$(q "SELECT max(gdid_counter(id)) < 70000000 FROM invoices WHERE gdid_authority(id) = 9")" = t ] ||
        fail "the keys of authority 8 pushed authority 9's counters up"
    echo "figures: from $v: 5000 + 5000 keys of each kind before the update, 5000 + 5000 after, none repeated; first new ID $(q "SELECT min(snowflake_timestamp(id)) FILTER (WHERE at = 'after') - max(snowflake_timestamp(id)) FILTER (WHERE at = 'before' AND snowflake_node(id) = 9) FROM orders") after the newest stored one (then $(q "SELECT date_trunc('second', max(snowflake_timestamp(id)) FILTER (WHERE at = 'before' AND snowflake_node(id) = 9) - now()) FROM orders") ahead of the clock); gdid counters $(q "SELECT max(gdid_counter(id)) FILTER (WHERE at = 'before' AND gdid_authority(id) = 9) || ' -> ' || min(gdid_counter(id)) FILTER (WHERE at = 'after') FROM invoices")"
done
echo "upgrade: ok"
