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

# A run-ahead bound far above what the batches below can reach in their two seconds: at the
# default 10 s a fast machine can hold 'orders' at the bound, and the promoted standby's first
# call then waits for the clock (53400) instead of generating, as the README says it may.
primary=$(instance primary "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 31" \
    "gdid.authority = 7" "snowflake.max_clock_ahead = '60s'")
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

# 1. 'busy' generates, extending its lease, while the backup runs.
out="$CLUSTER_ROOT/out"
mkdir -p "$out"
chmod 777 "$out"
stream "$primary" "$out/busy" 100000 "SELECT max(g) FROM gdid_next_block('shop', 'busy', 50000) g;" &
gen=$!
stream "$primary" "$out/orders" 100000 "SELECT max(id) FROM snowflake_next_batch('orders', 20000) id;" &
gen2=$!
wait_until 30 "generation to start" lines_at_least 2 "$out/busy" "$out/orders"
standby=$(standby_of "$primary" standby --max-rate=4M)
# A lease extension of 'busy' after the backup too, so that the WAL the standby replays
# holds one.
extensions=$(sql "$primary" "SELECT lease_extensions FROM gdid_sequences WHERE sequence = 'busy'")
wait_until 30 "a lease extension after the backup" \
    sql_is "$primary" "SELECT lease_extensions > $extensions FROM gdid_sequences WHERE sequence = 'busy'" t
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
lsn=$(sql "$primary" "SELECT pg_current_wal_lsn()")
wait_until 20 "the standby to replay the primary's WAL" \
    sql_is "$standby" "SELECT pg_last_wal_replay_lsn() >= '$lsn'" t
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
standby2=$(standby_of "$primary" standby2 --max-rate=4M)
tear "$standby2/data" shop/quiet
pg_start "$standby2"
pg_stop "$primary"
as_postgres "$PG_BINDIR/pg_ctl" -D "$standby2/data" -w -t 60 promote >/dev/null 2>&1 || true
wait_until 10 "the promotion to stop on the unsupplied record" \
    grep -q 'FATAL:  the lease file held damaged records that WAL replay did not supply' "$standby2/server.log"
grep 'FATAL:  the lease file held' "$standby2/server.log" | head -n 1
wait_until 10 "the server to stop without the lease" test ! -f "$standby2/data/postmaster.pid"
echo "torn_lease: ok"
