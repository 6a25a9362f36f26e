#!/usr/bin/env bash
# A base backup copies the lease file while the server runs, so a lease extension can rewrite
# a record while pg_basebackup reads it: the copy then holds a record torn in two. Every such
# extension is followed by its WAL record, which the backup's WAL replay applies; so a
# standby (or a restored backup) starts, sets the damaged record aside, and recovery fails
# only if it ends without the WAL having supplied it. Here the tear is made by hand in the
# copy, once for a sequence that generated through the backup (replay repairs it: the
# promoted standby generates above everything the primary handed out) and once for one that
# did not (promotion stops with a clear error instead of generating without its lease).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

primary="$CLUSTER_ROOT/primary"
# A run-ahead bound far above what the batches below can reach in their two seconds: at the
# default 10 s a fast machine can hold 'orders' at the bound, and the promoted standby's first
# call then waits for the clock (53400) instead of generating, as the README says it may.
pg_init "$primary" 55501 "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 31" \
    "gdid.authority = 7" "snowflake.max_clock_ahead = '60s'"
pg_start "$primary"
pg_psql "$primary" -d postgres -qc "CREATE EXTENSION snowflake_id" \
    -c "SELECT gdid_next('shop', 'quiet'), gdid_next('shop', 'busy'), snowflake_next('orders')" >/dev/null

# tear DATA_DIR NAME: damages the lease end of NAME's record in a copy's lease file (its
# checksum no longer matches, its key still reads), as a read racing a rewrite would.
tear() {
    python3 - "$1/snowflake_id/leases" "$2" <<'PY'
import sys
path, name = sys.argv[1], sys.argv[2].encode().replace(b"/", b"\0")
data = bytearray(open(path, "rb").read())
for at in range(0, len(data), 256):
    rec = data[at:at + 256]
    if rec[0:4] == b"SFL1" and rec[32:32 + rec[5]] == name:
        data[at + 24:at + 32] = bytes(8)
        open(path, "wb").write(data)
        print(f"tore the record at byte {at}")
        break
else:
    sys.exit(f"no record of {sys.argv[2]}")
PY
}

# clone DIR PORT: a streaming standby of the primary, from pg_basebackup.
clone() {
    local dir=$1 port=$2
    mkdir -p "$dir"
    chown postgres: "$dir"
    chmod 700 "$dir"
    as_postgres "$PG_BINDIR/pg_basebackup" -h "$primary" -p 55501 -U postgres -D "$dir/data" -R \
        -X stream --checkpoint=fast --max-rate=4M || fail "pg_basebackup failed"
    {
        echo "port = $port"
        echo "unix_socket_directories = '$dir'"
    } >>"$dir/data/postgresql.conf"
    echo "port = $port" >"$dir/postgresql.conf"
}

# 1. 'busy' generates, extending its lease, while the backup runs.
out="$CLUSTER_ROOT/out"
mkdir -p "$out"
chmod 777 "$out"
stream "$primary" "$out/busy" 100000 "SELECT max(g) FROM gdid_next_block('shop', 'busy', 50000) g;" &
gen=$!
stream "$primary" "$out/orders" 100000 "SELECT max(id) FROM snowflake_next_batch('orders', 20000) id;" &
gen2=$!
sleep 1
standby="$CLUSTER_ROOT/standby"
clone "$standby" 55502
sleep 1
pkill -f "gdid_next_block\\('shop', 'busy'" 2>/dev/null || true
kill "$gen" "$gen2" 2>/dev/null || true
wait "$gen" "$gen2" 2>/dev/null || true
# Stop the generators for good: kill the server-side sessions too.
pg_psql "$primary" -d postgres -qAtc "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE '%next_b%' AND pid <> pg_backend_pid()" >/dev/null
expect "$primary" "SELECT lease_extensions > 1 FROM gdid_sequences WHERE sequence = 'busy'" "t"
tear "$standby/data" shop/busy

pg_start "$standby"
grep -q 'WAL replay is expected to supply it' "$standby/server.log" || fail "no warning about the damaged record"
grep 'WARNING:  lease file' "$standby/server.log" | head -n 1
# Caught up with everything the primary handed out, then the primary goes away.
lsn=$(pg_psql "$primary" -d postgres -Atc "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 200); do
    [ "$(pg_psql "$standby" -d postgres -Atc "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
    sleep 0.1
done
expect "$standby" "SELECT pg_last_wal_replay_lsn() >= '$lsn'" "t"
pg_stop "$primary"
as_postgres "$PG_BINDIR/pg_ctl" -D "$standby/data" -w -t 60 promote >/dev/null || fail "promotion failed"
grep -q 'FATAL:  the lease file' "$standby/server.log" && fail "$(grep 'FATAL:  the lease' "$standby/server.log")"
busy_max=$(sort -t: -k3 -n "$out/busy" | tail -n 1)
orders_max=$(sort -n "$out/orders" | tail -n 1)
[ -n "$busy_max" ] && [ -n "$orders_max" ] || fail "nothing was generated during the backup"
expect "$standby" "SELECT gdid_next('shop', 'busy') > '$busy_max'::gdid" "t"
expect "$standby" "SELECT snowflake_next('orders') > $orders_max" "t"
echo "figures: $(wc -l <"$out/busy") blocks of 'busy' during the backup, last $busy_max; the promoted standby continues above"

# 2. 'quiet' did not generate during the backup: no WAL record can repair its damaged copy.
pg_start "$primary"
standby2="$CLUSTER_ROOT/standby2"
clone "$standby2" 55503
tear "$standby2/data" shop/quiet
pg_start "$standby2"
pg_stop "$primary"
as_postgres "$PG_BINDIR/pg_ctl" -D "$standby2/data" -w -t 60 promote >/dev/null 2>&1 || true
for _ in $(seq 1 100); do
    grep -q 'FATAL:  the lease file held damaged records that WAL replay did not supply' \
        "$standby2/server.log" && break
    sleep 0.1
done
grep -q 'FATAL:  the lease file held damaged records that WAL replay did not supply' \
    "$standby2/server.log" || { tail -n 20 "$standby2/server.log"; fail "promotion went on without the lease of shop/quiet"; }
grep 'FATAL:  the lease file held' "$standby2/server.log" | head -n 1
for _ in $(seq 1 100); do
    [ -f "$standby2/data/postmaster.pid" ] || break
    sleep 0.1
done
[ -f "$standby2/data/postmaster.pid" ] && fail "the server runs on without the lease"
echo "torn_lease: ok"
