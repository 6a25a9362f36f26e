#!/usr/bin/env bash
# Dropped sequences give their slots back while the server runs, safely. Four sessions insert
# into four tables (a snowflake key and a gdid key each, from four names), one transaction per
# row, while a fifth drops those names' sequences again and again, in a server with room for
# sixteen sequences: every slot is reused many times. No session fails (a full table, a stale
# slot), no key repeats (a sequence dropped under a session that had just taken a value from
# it is closed, and the name's next sequence continues above it), and the table never holds
# more than the eight live sequences.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ROWS=${SLOTS_ROWS:-3000}
DROPS=${SLOTS_DROPS:-600}
db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 2" \
    "gdid.authority = 2" "snowflake.max_sequences = 16" "snowflake.max_sequences_per_database = 16")
pg_start "$db"
pg_psql "$db" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
DO $$
BEGIN
    FOR k IN 1..4 LOOP
        EXECUTE format('CREATE TABLE t%s (id snowflake PRIMARY KEY DEFAULT snowflake_next(%L),
                        g gdid NOT NULL UNIQUE DEFAULT gdid_next(%L, %L), session int, pos int)',
                       k, 's' || k, 'slots', 's' || k);
    END LOOP;
END $$;
SQL

pids=()
for s in 1 2 3 4; do
    session "$db" -c "DO \$\$
BEGIN
    FOR i IN 1..$ROWS LOOP
        EXECUTE format('INSERT INTO t%s (session, pos) VALUES ($s, %s)', (i + $s) % 4 + 1, i);
        COMMIT;
    END LOOP;
END \$\$" >"$CLUSTER_ROOT/session_$s.log" 2>&1 &
    pids+=($!)
done
session "$db" -c "DO \$\$
BEGIN
    FOR i IN 1..$DROPS LOOP
        PERFORM snowflake_drop_sequence('s' || i % 4 + 1), gdid_drop_sequence('slots', 's' || i % 4 + 1);
        COMMIT;
        PERFORM pg_sleep(0.005);
    END LOOP;
END \$\$" >"$CLUSTER_ROOT/dropper.log" 2>&1 &
dropper=$!
for p in "${pids[@]}"; do
    wait "$p" || { cat "$CLUSTER_ROOT"/session_*.log; fail "an inserting session failed"; }
done
wait "$dropper" || { cat "$CLUSTER_ROOT/dropper.log"; fail "the dropping session failed"; }

expect "$db" "SELECT (SELECT count(*) FROM t1) + (SELECT count(*) FROM t2) + (SELECT count(*) FROM t3) + (SELECT count(*) FROM t4)" "$((4 * ROWS))"
for k in 1 2 3 4; do
    expect "$db" "SELECT count(*) - count(DISTINCT id) + count(*) - count(DISTINCT g) FROM t$k" "0"
    expect "$db" "SELECT count(*) FROM t$k WHERE snowflake_node(id) <> 2 OR gdid_authority(g) <> 2" "0"
done
expect "$db" "SELECT (SELECT count(*) FROM snowflake_sequences) + (SELECT count(*) FROM gdid_sequences) <= 8" "t"
echo "figures: $((4 * ROWS)) rows inserted by 4 sessions, one transaction each, while $((2 * DROPS)) drops went through 16 slots; no key repeated"
echo "slots: ok"
