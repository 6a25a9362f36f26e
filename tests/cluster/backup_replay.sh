#!/usr/bin/env bash
# A base backup taken while sequences generate, and the WAL replay that completes it. A lease
# extension is a setval of the sequence's relation, WAL-logged and flushed before any value it
# covers is handed out; pg_basebackup copies the relation's page while extensions rewrite it,
# and replay of the WAL puts every extension back. So:
# - a streaming standby made from that backup, promoted after the primary is killed (once it
#   has replayed everything the primary flushed), generates above every value the primary
#   handed out, before, during and after the backup;
# - the backup restored on its own (recovery to the end of the backup, then a new primary)
#   generates above every value handed out before the backup ended: the values clients had
#   received when the primary's flushed WAL was still at or below the backup's End-LSN
#   (backup_manifest), sampled throughout the backup.
# Four clients generate: two insert rows (writing transactions), one calls the generators in
# read-only statements, one takes batches that run the snowflake sequence far ahead of the
# clock (snowflake.node_bits = 13: 512 IDs a millisecond), so that time alone would not put a
# copy's IDs above the old ones.
# majors: 15 19 (the replay is PostgreSQL's own, of a sequence's relation as on every major; the oldest
# and the newest are enough for its run time)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap cleanup_with_jobs EXIT

primary=$(instance primary "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 31" \
    "gdid.authority = 7" "snowflake.node_bits = 13" "snowflake.max_clock_ahead = '10min'")
pg_start "$primary"
pg_psql "$primary" -d postgres -q <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (
    id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'),
    g gdid NOT NULL UNIQUE DEFAULT gdid_next('shop', 'orders')
);
SQL

out="$CLUSTER_ROOT/out"
mkdir -p "$out"
QUERIES=(
    "INSERT INTO orders SELECT FROM generate_series(1, 50) RETURNING id, g;"
    "INSERT INTO orders SELECT FROM generate_series(1, 50) RETURNING id, g;"
    "SELECT snowflake_next('orders'), gdid_next('shop', 'orders');"
    "SELECT (SELECT max(i) FROM snowflake_next_batch('orders', 100000) i), (SELECT max(x) FROM gdid_next_block('shop', 'orders', 2000) x);"
)
# client N: runs its query in sessions of 20 until $CLUSTER_ROOT/stop exists (at most 2,000
# sessions); every row it receives goes to $out/cN as "id|gdid" (for the batches, their
# largest values).
client() {
    local i
    for ((i = 0; i < 2000; i++)); do
        [ -f "$CLUSTER_ROOT/stop" ] && return 0
        stream "$primary" "$out/c$1" 20 "${QUERIES[$1]}"
    done
}
pids=()
for c in 0 1 2 3; do
    : >"$out/c$c"
    client "$c" &
    pids+=($!)
done
counts() { for c in 0 1 2 3; do wc -l <"$out/c$c"; done | paste -sd ' '; }
wait_until 60 "the clients to start" lines_at_least 2000 "$out"/c*

# The backup, slowed down to take a few seconds of generation; meanwhile a sampler notes how
# many rows each client had received, then the primary's flushed WAL position.
size_kb=$(sql "$primary" "SELECT sum(pg_database_size(oid))::bigint / 1024 FROM pg_database")
rate_kb=$((size_kb / 4 > 32 ? size_kb / 4 : 32))
sampler() {
    local i
    for ((i = 0; i < 1200; i++)); do
        [ -f "$CLUSTER_ROOT/backup_done" ] && return 0
        local c
        c=$(counts)
        echo "$(sql "$primary" "SELECT pg_current_wal_flush_lsn()") $c" >>"$CLUSTER_ROOT/samples"
        sleep 0.1
    done
}
sampler &
sampler_pid=$!
before_backup=$(counts)
mkdir -p "$CLUSTER_ROOT/standby"
chown postgres: "$CLUSTER_ROOT/standby"
chmod 700 "$CLUSTER_ROOT/standby"
start=$(date +%s.%N)
as_postgres "$PG_BINDIR/pg_basebackup" -h "$primary" -p "$(pg_port_of "$primary")" -U postgres \
    -D "$CLUSTER_ROOT/standby/data" -R -C -S standby -X stream --checkpoint=fast \
    --max-rate="${rate_kb}k" || fail "pg_basebackup failed"
took=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
touch "$CLUSTER_ROOT/backup_done"
ahead_at_end=$(sql "$primary" "SELECT round(extract(epoch FROM clock_ahead)::numeric, 1) FROM snowflake_sequences WHERE name = 'orders'")
backup_end_time=$(date +%s.%N)
wait "$sampler_pid"
after_backup=$(counts)
during=$(python3 -c "print(sum(map(int, '$after_backup'.split())) - sum(map(int, '$before_backup'.split())))")
[ "$during" -ge 200 ] || fail "only $during rows were generated during the backup"
end_lsn=$(python3 -c "import json; print(json.load(open('$CLUSTER_ROOT/standby/data/backup_manifest'))['WAL-Ranges'][-1]['End-LSN'])")
echo "backup of $size_kb kB in $took s, ending at $end_lsn; the clients received $during rows meanwhile; the snowflake sequence was $ahead_at_end s ahead of the clock at its end"

# The rows each client had received at the last sample whose flushed position was at or
# below the backup's end: all of them were handed out under leases the backup replays.
covered=$(python3 - "$CLUSTER_ROOT/samples" "$end_lsn" <<'PY'
import sys
def lsn(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)
end = lsn(sys.argv[2])
best = None
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 5 and lsn(parts[0]) <= end:
        best = parts[1:]
print(" ".join(best) if best else "")
PY
)
[ -n "$covered" ] || fail "no sample below the backup's end LSN"
covered_during=$(python3 -c "print(sum(map(int, '$covered'.split())) - sum(map(int, '$before_backup'.split())))")
[ "$covered_during" -gt 0 ] || fail "no sample taken during the backup falls within it"

# A second copy of the backup, to restore on its own later.
cp -a "$CLUSTER_ROOT/standby" "$CLUSTER_ROOT/restored"
rm -f "$CLUSTER_ROOT/restored/data/standby.signal"
for dir in standby restored; do
    port=$(free_port)
    {
        echo "port = $port"
        echo "unix_socket_directories = '$CLUSTER_ROOT/$dir'"
    } >>"$CLUSTER_ROOT/$dir/data/postgresql.conf"
    echo "port = $port" >"$CLUSTER_ROOT/$dir/postgresql.conf"
done
standby="$CLUSTER_ROOT/standby"
restored="$CLUSTER_ROOT/restored"

# new DIR NAME: 10,000 rows inserted, 1,000 values of each kind called for and a batch, into
# $out/NAME.
new() {
    stream "$1" "$out/$2" 200 "INSERT INTO orders SELECT FROM generate_series(1, 50) RETURNING id, g;"
    stream "$1" "$out/$2" 1000 "SELECT snowflake_next('orders'), gdid_next('shop', 'orders');"
    stream "$1" "$out/$2" 1 "SELECT i, NULL FROM snowflake_next_batch('orders', 20000) i;"
    [ "$(wc -l <"$out/$2")" -eq 31000 ] || fail "$2 generated $(wc -l <"$out/$2") values, not 31000"
}
# check DIR NAME ROWS...: every value NAME holds is above every value in the first ROWS (one
# count per client) lines of the clients' files.
check() {
    local dir=$1 name=$2 c=0 n
    shift 2
    pg_psql "$dir" -d postgres -qc "CREATE TABLE seen_$name (id bigint, g gdid)" \
        -c "CREATE TABLE new_$name (id bigint, g gdid)" \
        -c "\\copy new_$name FROM '$out/$name' (DELIMITER '|', NULL '')"
    for n in "$@"; do
        head -n "$n" "$out/c$c" >"$out/seen_$name.$c"
        pg_psql "$dir" -d postgres -qc "\\copy seen_$name FROM '$out/seen_$name.$c' (DELIMITER '|')"
        c=$((c + 1))
    done
    expect "$dir" "SELECT (SELECT min(id) FROM new_$name) > (SELECT max(id) FROM seen_$name)" t
    expect "$dir" "SELECT (SELECT min(g) FROM new_$name) > (SELECT max(g) FROM seen_$name)" t
}

# 1. The backup restored on its own (first, while the sequence is still far ahead of the
# clock): recovery to its end, then a new primary.
pg_start "$restored"
wait_until 60 "the restored backup to leave recovery" sql_is "$restored" "SELECT pg_is_in_recovery()" f
since=$(python3 -c "print(round($(date +%s.%N) - $backup_end_time, 1))")
new "$restored" restored
python3 -c "import sys; sys.exit(not $since < $ahead_at_end)" ||
    fail "the copy generated $since s after the backup, later than the $ahead_at_end s the sequence ran ahead: time alone put its IDs above"
# shellcheck disable=SC2086
check "$restored" restored $covered
echo "figures: restored backup: above all $(($(echo "$covered" | tr ' ' '+'))) rows returned up to the backup's end ($covered_during of them during the backup); it generated $since s after the backup's end, when the sequence had been $ahead_at_end s ahead"

# 2. The standby streams on while the clients go on; then the clients stop, the standby
# replays everything the primary flushed, the primary is killed and the standby promoted.
pg_start "$standby"
target=$(($(counts | tr ' ' '+')))
target=$((target + 2000))
wait_until 60 "2000 more rows with the standby streaming" lines_at_least "$target" "$out"/c*
touch "$CLUSTER_ROOT/stop"
for p in "${pids[@]}"; do wait "$p"; done
final_lsn=$(sql "$primary" "SELECT pg_current_wal_flush_lsn()")
wait_until 60 "the standby to replay $final_lsn" \
    sql_is "$standby" "SELECT pg_last_wal_replay_lsn() >= '$final_lsn'" t
pg_kill9 "$primary"
as_postgres "$PG_BINDIR/pg_ctl" -D "$standby/data" -w -t 60 promote >/dev/null || fail "promotion failed"

new "$standby" promoted
all=$(counts)
# shellcheck disable=SC2086
check "$standby" promoted $all
echo "figures: promoted standby: above all $(($(echo "$all" | tr ' ' '+'))) rows the primary returned ($during during the backup); first new ID $(sql "$standby" "SELECT (SELECT min(snowflake_timestamp(id)) FROM new_promoted) - (SELECT max(snowflake_timestamp(id)) FROM seen_promoted)") above the last old one (still $(sql "$standby" "SELECT date_trunc('second', (SELECT max(snowflake_timestamp(id)) FROM seen_promoted) - now())") ahead of the clock now)"

echo "backup_replay: ok"
