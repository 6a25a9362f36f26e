#!/usr/bin/env bash
# Settings a server was not given are never used. PostgreSQL itself would start with only a
# WARNING and the default for an invalid value of an extension's setting in postgresql.conf,
# and drop a misspelt name the same way; then every ID would carry node 0 and every gdid
# authority 0, colliding silently with the real node 0. Here each such configuration stops
# the server at start with a FATAL that names the setting; a configuration without a node
# number or authority starts, but the generators refuse until they are set. A number to be
# claimed (auto) without a registry, or with a clock error that would use up a third of the
# claim's lease, is refused at start too.
# snowflake.max_sequences_per_database is obsolete since 0.4.0 (sequences are relations of
# their databases, without a limit of their own): a valid value is accepted and has no effect,
# an invalid one is still refused like any other.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

db=$(instance node "shared_preload_libraries = 'snowflake_id'" "include_if_exists = 'case.conf'")
case_conf="$db/data/case.conf"

# refuses "SETTING LINES" "EXPECTED FATAL": the server does not start and says why.
refuses() {
    printf '%s\n' "$1" >"$case_conf"
    chown postgres: "$case_conf"
    rm -f "$db/server.log"
    if pg_start "$db" >/dev/null 2>&1; then
        pg_stop "$db"
        fail "the server started with: $1"
    fi
    grep -qF "FATAL:  $2" "$db/server.log" || { cat "$db/server.log"; fail "no FATAL \"$2\" for: $1"; }
    echo "refused to start with $(echo "$1" | tr '\n' ' '): $(grep -m1 'FATAL:' "$db/server.log" | sed 's/.*FATAL:  //')"
    grep -m1 -A2 'FATAL:' "$db/server.log" | grep 'DETAIL:' | sed 's/^.*DETAIL:  /    /' || true
}

refuses $'snowflake.node_bits = 7\nsnowflake.node_id = 500' \
    'invalid value for parameter "snowflake.node_id": "500"'
refuses 'snowflake.node_id = -1' 'invalid value for parameter "snowflake.node_id": "-1"'
refuses 'snowflake.node_id = one' 'invalid value for parameter "snowflake.node_id": "one"'
refuses 'snowflake.node_bits = 14' 'invalid value for parameter "snowflake.node_bits": "14"'
refuses 'gdid.authority = 16' 'invalid value for parameter "gdid.authority": "16"'
# The node number and the authority are plain decimal: PostgreSQL reads an integer setting's
# 010 as 8 (octal), 0x10 as 16, 1.5 as 2; here each is refused, naming the setting.
refuses 'snowflake.node_id = 010' 'invalid value for parameter "snowflake.node_id": "010"'
refuses 'snowflake.node_id = 0x10' 'invalid value for parameter "snowflake.node_id": "0x10"'
refuses 'snowflake.node_id = 1.5' 'invalid value for parameter "snowflake.node_id": "1.5"'
refuses "snowflake.node_id = '+2'" 'invalid value for parameter "snowflake.node_id": "+2"'
refuses "snowflake.node_id = '1e1'" 'invalid value for parameter "snowflake.node_id": "1e1"'
refuses 'gdid.authority = 15.4' 'invalid value for parameter "gdid.authority": "15.4"'
refuses 'gdid.authority = 07' 'invalid value for parameter "gdid.authority": "07"'
refuses "snowflake.epoch = '2026-13-01'" 'invalid value for parameter "snowflake.epoch": "2026-13-01"'
refuses "snowflake.epoch = '1970-01-01 00:00:00+01'" \
    'invalid value for parameter "snowflake.epoch": "1970-01-01 00:00:00+01"'
refuses "snowflake.max_clock_ahead = '2h'" 'invalid value for parameter "snowflake.max_clock_ahead": "2h"'
refuses 'snowflake.max_sequences = 0' 'invalid value for parameter "snowflake.max_sequences": "0"'
refuses 'snowflake.max_sequences_per_database = 0' \
    'invalid value for parameter "snowflake.max_sequences_per_database": "0"'
# A number claimed from a registry needs one, and a lease the clock error leaves time in.
refuses 'snowflake.node_id = auto' 'invalid value for parameter "snowflake.registry": ""'
refuses $'gdid.authority = auto\nsnowflake.registry = \'   \'' \
    'invalid value for parameter "snowflake.registry": "   "'
refuses $'snowflake.node_id = auto\nsnowflake.registry = \'host=127.0.0.1\'\nsnowflake.claim_lease = \'3s\'\nsnowflake.claim_clock_error = \'1s\'' \
    'invalid value for parameter "snowflake.claim_clock_error": "1000ms"'
refuses "snowflake.claim_lease = '500ms'" 'invalid value for parameter "snowflake.claim_lease": "500ms"'
refuses 'snowflake.nodeid = 3' 'unrecognized configuration parameter "snowflake.nodeid"'
refuses 'gdid.authorty = 3' 'unrecognized configuration parameter "gdid.authorty"'

# Neither a node number nor an authority: the server starts (the gdid type and the decoders
# need neither), and the generators say what is missing.
: >"$case_conf"
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id"
for sql in "SELECT snowflake_next('orders')" "SELECT * FROM snowflake_next_batch('orders', 2)" \
    "SELECT gdid_next('shop', 'orders')" "SELECT * FROM gdid_next_block('shop', 'orders', 2)"; do
    msg=$(pg_psql "$db" -d postgres -v VERBOSITY=verbose -Atc "$sql" 2>&1) && fail "$sql generated: $msg"
    echo "$msg" | grep -Eq 'ERROR:  55000: (snowflake.node_id|gdid.authority) is not set' ||
        fail "unexpected: $msg"
    echo "refused: $sql: $(echo "$msg" | head -n 1)"
done
expect "$db" "SELECT snowflake_node(4194304::bigint * 1000 + 4096 * 7)" "7"
expect "$db" "SELECT gdid(1, 2, 3)::text" "1:2:3"
# The authority can be set for a session by a superuser; the node number only at start.
expect "$db" "SELECT gdid_authority(gdid_next('shop', 'orders')) FROM (SELECT set_config('gdid.authority', '9', false)) s" "9"
pg_stop "$db"

printf '%s\n' 'snowflake.node_id = 17' 'gdid.authority = 3' 'snowflake.max_sequences_per_database = 1' >"$case_conf"
pg_start "$db"
expect "$db" "SELECT snowflake_node(snowflake_next('orders'))" "17"
expect "$db" "SELECT gdid_authority(gdid_next('shop', 'orders'))" "3"
# The obsolete limit of one sequence per database limits nothing.
expect "$db" "SHOW snowflake.max_sequences_per_database" "1"
expect "$db" "SELECT count(snowflake_next('more_' || i)) + count(gdid_next('shop', 'more_' || i)) FROM generate_series(1, 3) i" "6"
expect "$db" "SELECT (SELECT count(*) FROM snowflake_sequences) + (SELECT count(*) FROM gdid_sequences)" "8"
echo "bad_settings: ok"
