#!/usr/bin/env bash
# The lease file is checked at start-up: a damaged record (here one flipped bit) stops the
# server with an error naming the file and what to do, instead of generating without the
# lease; with the file restored the server starts and sequences resume above their leases.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

db=$(instance node "shared_preload_libraries = 'snowflake_id'" "gdid.authority = 1")
pg_start "$db"
pg_psql "$db" -d postgres -qc "CREATE EXTENSION snowflake_id"
before=$(sql "$db" "SELECT max(gdid_counter(g)) FROM gdid_next_block('shop', 'orders', 100) g")
pg_stop "$db"

leases="$db/data/snowflake_id/leases"
cp -p "$leases" "$CLUSTER_ROOT/leases.good"
python3 - "$leases" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
first = next(i for i in range(0, len(data), 256) if any(data[i:i + 256]))
data[first + 40] ^= 0x01
open(path, "wb").write(data)
PY
if pg_start "$db" >/dev/null 2>&1; then
    fail "the server started with a damaged lease file"
fi
grep -q 'FATAL:  could not read lease file "snowflake_id/leases": the record at byte .* is damaged' \
    "$db/server.log" || fail "no clear error in the server log"
grep 'FATAL:  could not read lease file' "$db/server.log" | tail -n 1
# Deleting the file would start every sequence afresh: the advice is to restore it.
grep -A2 'FATAL:  could not read lease file' "$db/server.log" | grep -q 'HINT:  Restore the file from a backup of this data directory. Do not delete it' ||
    fail "the hint does not say to restore the file"
echo "ok: a damaged lease file stops the server"

cp -p "$CLUSTER_ROOT/leases.good" "$leases"
pg_start "$db"
after=$(sql "$db" "SELECT gdid_counter(gdid_next('shop', 'orders'))")
[ "$after" -gt "$before" ] || fail "resumed at $after, not above $before"
echo "ok: restored file, the sequence resumed at counter $after (last before: $before)"
echo "lease_file: ok"
