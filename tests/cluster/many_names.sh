#!/usr/bin/env bash
# No limit on how many names exist: 100,000 sequences in one database (50,000 of each kind),
# 25 times more than the cache in shared memory holds (snowflake.max_sequences = 4096, the
# default). They are made by hand, in batches, with exactly the definition the extension gives
# the sequences it makes (read from two it made), as a restore or a migration would bring
# them. Then four sessions generate from all of them in rotation, each starting a quarter
# further on and going half way round (so that two sessions use each name, one after the
# other), 50 names of each kind per transaction: every sequence is fresh at its first use, and
# nearly every later use finds it evicted and reads it back from its relation. Nothing repeats (per
# sequence), no session fails, and the monitoring views list every sequence.
# Figures: the time to make the sequences and to generate, and the WAL records of sequences
# (one per lease extension or entry into the cache). About 2 minutes on 2 cores.
# The full 100,000 on PostgreSQL 15; on the other majors 20,000 (still 5 times the cache):
# what differs by major (the sequence's page, the catalog) is met by every name alike, and
# the suite stays within CI's time. MANY_NAMES sets the count.
# majors: 15 19 (the names are catalog rows, the same on every major; the oldest and the newest are
# enough for its run time, pg_regress limits runs on every major)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap cleanup_with_jobs EXIT

if [ "$("$PG_BINDIR/pg_config" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')" = 15 ]; then
    NAMES=${MANY_NAMES:-100000}
else
    NAMES=${MANY_NAMES:-20000}
fi
HALF=$((NAMES / 2))
SESSIONS=4
BATCH=50
db=$(instance node "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 6" \
    "gdid.authority = 6")
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id" \
    -c "SELECT snowflake_next('probe'), gdid_next('many', 'probe')" >/dev/null
# definition RELATION: the CREATE SEQUENCE options of a sequence the extension made.
definition() {
    sql "$db" "SELECT format('AS %s INCREMENT BY %s MINVALUE %s MAXVALUE %s START WITH %s CACHE %s %s',
                             format_type(seqtypid, NULL), seqincrement, seqmin, seqmax, seqstart, seqcache,
                             CASE WHEN seqcycle THEN 'CYCLE' ELSE 'NO CYCLE' END)
                 FROM pg_sequence WHERE seqrelid = '$1'::regclass"
}
sf_def=$(definition snowflake.probe)
g_def=$(definition 'gdid."many/probe"')
echo "snowflake sequences: $sf_def; gdid sequences: $g_def"

# 1. The sequences, by hand: one session per kind, 1,000 per transaction.
# make NAME_EXPRESSION DEFINITION KIND: the sequences of one kind, named by the expression.
start=$(date +%s.%N)
make() {
    timeout 600 "$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$db" -p "$(pg_port_of "$db")" -U postgres -d postgres -c "DO \$\$
BEGIN
    FOR b IN 0..$((HALF / 1000 - 1)) LOOP
        FOR i IN b * 1000 + 1 .. b * 1000 + 1000 LOOP
            EXECUTE format('CREATE SEQUENCE %s $2', $1);
        END LOOP;
        COMMIT;
    END LOOP;
END \$\$" >"$CLUSTER_ROOT/make_$3.log" 2>&1
}
make "format('snowflake.%I', 'm' || i)" "$sf_def" snowflake &
m1=$!
make "format('gdid.%I', 'many/m' || i)" "$g_def" gdid &
m2=$!
wait "$m1" || { cat "$CLUSTER_ROOT/make_snowflake.log"; fail "making the snowflake sequences failed"; }
wait "$m2" || { cat "$CLUSTER_ROOT/make_gdid.log"; fail "making the gdid sequences failed"; }
made_s=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
expect "$db" "SELECT count(*) FROM pg_class WHERE relnamespace = 'snowflake'::regnamespace AND relkind = 'S'" "$((HALF + 1))"
expect "$db" "SELECT count(*) FROM pg_class WHERE relnamespace = 'gdid'::regnamespace AND relkind = 'S'" "$((HALF + 1))"
echo "made $NAMES sequences in $made_s s"

# 2. Four sessions generate from all of them in rotation, each starting a quarter further on
# and going half way round. Every value goes to a log table.
pg_psql "$db" -d postgres -qc "CREATE UNLOGGED TABLE log (session int, name int, id bigint, g gdid)"
lsn0=$(sql "$db" "SELECT pg_current_wal_insert_lsn()")
start=$(date +%s.%N)
pids=()
for s in $(seq 0 $((SESSIONS - 1))); do
    timeout 600 "$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$db" -p "$(pg_port_of "$db")" -U postgres -d postgres -c "DO \$\$
DECLARE
    first int;
BEGIN
    FOR step IN 0..$((HALF / BATCH / 2 - 1)) LOOP
        first := ((step + $s * $((HALF / BATCH / SESSIONS))) % $((HALF / BATCH))) * $BATCH + 1;
        INSERT INTO log SELECT $s, k, snowflake_next('m' || k), NULL FROM generate_series(first, first + $BATCH - 1) k;
        INSERT INTO log SELECT $s, k, NULL, gdid_next('many', 'm' || k) FROM generate_series(first, first + $BATCH - 1) k;
        COMMIT;
    END LOOP;
END \$\$" >"$CLUSTER_ROOT/session_$s.log" 2>&1 &
    pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
[ "$failed" = 0 ] || { grep -h -A3 ERROR "$CLUSTER_ROOT"/session_*.log | head -n 20 || true; fail "$failed of $SESSIONS sessions failed (or timed out)"; }
generated_s=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
lsn1=$(sql "$db" "SELECT pg_current_wal_insert_lsn()")

expect "$db" "SELECT count(id) || ' ' || count(g) FROM log" "$((SESSIONS * HALF / 2)) $((SESSIONS * HALF / 2))"
expect "$db" "SELECT count(DISTINCT name) FROM log" "$HALF"
expect "$db" "SELECT count(id) - count(DISTINCT (name, id)) FILTER (WHERE id IS NOT NULL) + count(g) - count(DISTINCT (name, g)) FILTER (WHERE g IS NOT NULL) FROM log" "0"
expect "$db" "SELECT count(*) FROM log WHERE snowflake_node(id) <> 6 OR gdid_authority(g) <> 6" "0"
records=$("$PG_BINDIR/pg_waldump" -p "$db/data/pg_wal" -s "$lsn0" -e "$lsn1" -r Sequence 2>/dev/null | grep -c 'rmgr: Sequence' || true)

echo "figures: $NAMES sequences made by hand in $made_s s ($(python3 -c "print(round($made_s * 1000 / $NAMES, 2))") ms each); $SESSIONS sessions made $((SESSIONS * HALF)) values from all of them in rotation in $generated_s s ($(python3 -c "print(round($generated_s * 1000000 / ($SESSIONS * $HALF), 1))") µs a value: each first use of a fresh sequence, nearly every other an entry into a cache of $(sql "$db" "SHOW snowflake.max_sequences")), $records WAL records of sequences; none repeated"

# 3. The monitoring views list every sequence, cached or not.
start=$(date +%s.%N)
expect "$db" "SELECT count(*) FROM snowflake_sequences" "$((HALF + 1))"
expect "$db" "SELECT count(*) FROM gdid_sequences" "$((HALF + 1))"
echo "figures: the views listed all $NAMES sequences in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"

echo "many_names: ok"
