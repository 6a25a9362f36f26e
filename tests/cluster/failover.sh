#!/usr/bin/env bash
# Failover: a primary and a synchronous streaming standby cloned from it (same node_id, same
# gdid.authority), the standby's clock 5 s behind. Sessions insert rows keyed by snowflake
# IDs and gdids on the primary; the primary is killed with SIGKILL; the standby is promoted
# and generates. No ID or gdid a client received from a committed transaction on the old
# primary may come back. Before the promotion, the standby refuses to generate.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

primary=$(instance primary "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 21" \
    "gdid.authority = 5")
pg_start "$primary"
pg_psql "$primary" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (
    id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'),
    g gdid NOT NULL UNIQUE DEFAULT gdid_next('shop', 'orders')
);
SQL

standby=$(standby_of "$primary" standby)
pg_start "$standby" FAKETIME=-5s LD_PRELOAD="$FAKETIME_LIB"
# Synchronous from now on (set after the clone, so the standby does not inherit it).
pg_psql "$primary" -d postgres -qAtc "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
wait_until 10 "the standby to become synchronous" \
    sql_is "$primary" "SELECT sync_state FROM pg_stat_replication" sync
lag=$(clock_lag "$standby")
[ "$lag" -ge 4 ] || fail "the standby's clock is only $lag s behind"
echo "standby streaming synchronously, its clock $lag s behind"

# A hot standby cannot generate: every transaction there is read-only.
for sql in "SELECT snowflake_next('orders')" "SELECT gdid_next('shop', 'orders')"; do
    msg=$(sql "$standby" "$sql" 2>&1) && fail "$sql worked on the standby"
    echo "$msg" | grep -q "ERROR:  cannot execute .* during recovery" || fail "unexpected: $msg"
    echo "standby refuses: $msg"
done

out="$CLUSTER_ROOT/out"
mkdir -p "$out"
INSERT="INSERT INTO orders SELECT FROM generate_series(1, 50) RETURNING id, g;"
pids=()
for s in 1 2 3 4; do
    : >"$out/primary_$s"
    stream "$primary" "$out/primary_$s" 100000 "$INSERT" &
    pids+=($!)
done
# Under load for a while: until the clients have received 5000 rows.
wait_until 60 "5000 committed rows" lines_at_least 5000 "$out"/primary_*
pg_kill9 "$primary"
for p in "${pids[@]}"; do wait "$p"; done
before=$(cat "$out"/primary_* | wc -l)
[ "$before" -gt 1000 ] || fail "too little committed before the failover"
echo "the old primary returned $before committed rows before it was killed"

as_postgres "$PG_BINDIR/pg_ctl" -D "$standby/data" -w -t 60 promote >/dev/null || fail "promotion failed"
stream "$standby" "$out/promoted" 200 "$INSERT"
after=$(wc -l <"$out/promoted")
[ "$after" -eq 10000 ] || fail "the promoted standby generated $after rows, not 10000"

pg_psql "$standby" -d postgres -qc "CREATE TABLE seen (id bigint, g gdid)"
for f in "$out"/primary_*; do
    pg_psql "$standby" -d postgres -qc "\\copy seen FROM '$f' (DELIMITER '|')"
done
pg_psql "$standby" -d postgres -qc "CREATE TABLE new (id bigint, g gdid)"
pg_psql "$standby" -d postgres -qc "\\copy new FROM '$out/promoted' (DELIMITER '|')"
expect "$standby" "SELECT count(*) FROM new JOIN seen USING (id)" "0"
expect "$standby" "SELECT count(*) FROM new JOIN seen USING (g)" "0"
expect "$standby" "SELECT (SELECT min(id) FROM new) > (SELECT max(id) FROM seen)" "t"
expect "$standby" "SELECT (SELECT min(g) FROM new) > (SELECT max(g) FROM seen)" "t"
# Synchronous replication: every row a client saw committed is on the promoted standby.
expect "$standby" "SELECT count(*) FROM seen WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = seen.id)" "0"
sql "$standby" "SELECT 'figures: ' || (SELECT count(*) FROM seen) || ' rows from the old primary, ' || (SELECT count(*) FROM new) || ' from the promoted standby; first new ID ' || ((SELECT min(snowflake_timestamp(id)) FROM new) - (SELECT max(snowflake_timestamp(id)) FROM seen)) || ' above the last old one, gdid counters ' || (SELECT max(gdid_counter(g)) FROM seen) || ' -> ' || (SELECT min(gdid_counter(g)) FROM new)"
echo "failover: ok"
