#!/usr/bin/env bash
# PostgreSQL 19 replicates sequences: a publication FOR ALL SEQUENCES, and the subscriber's
# sequence synchronization worker writes the publisher's value over its own sequence of the
# same name, at CREATE SUBSCRIPTION and at every ALTER SUBSCRIPTION ... REFRESH SEQUENCES.
# Two servers that generate (node numbers and authorities 1 and 2) publish all their
# sequences and subscribe to each other's, in both directions. Proved:
#  - the extension's sequences are kept out of both subscriptions (a NOTICE says so), so
#    neither server's lease is ever overwritten by the other's, while a plain sequence of the
#    user's is synchronized as PostgreSQL does it;
#  - a subscribed sequence moved into an extension's schema by hand leaves the subscription;
#  - after REFRESH SEQUENCES both ways, then a restart of each server with its clock 5 s
#    behind (within snowflake.max_clock_ahead), neither hands out a value it handed out before
#    (every value of each server above its earlier ones, per sequence), and no
#    synchronization worker reported an error.
# (Without the extension keeping them out, a subscriber whose gdid lease was lowered handed
# out 0:2:32769 twice after a restart: docs/many-writers.md.)
# majors: 19 (sequence replication is new in 19)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

declare -A dir
for n in 1 2; do
    dir[$n]=$(instance "n$n" "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = $n" \
        "gdid.authority = $n" "wal_level = logical")
    pg_start "${dir[$n]}"
    pg_psql "${dir[$n]}" -d postgres -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), n int);
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), n int);
CREATE TABLE handed (kind text, id bigint, gid gdid, at_round int);
CREATE SEQUENCE plain;
CREATE PUBLICATION allseq FOR ALL SEQUENCES;
SQL
done
# Server 2 hands out more, so that its gdid lease is far above server 1's (the worker would
# lower it).
generate() { # DIR ROUND COUNT: snowflake and gdid values handed out and noted
    pg_psql "$1" -d postgres -q -v ON_ERROR_STOP=1 -c "
        INSERT INTO handed SELECT 'snowflake', i, NULL, $2 FROM snowflake_next_batch('orders', $3) i;
        INSERT INTO handed SELECT 'gdid', NULL, g, $2 FROM gdid_next_block('billing', 'invoices', $3) g;"
}
generate "${dir[1]}" 1 1000
generate "${dir[2]}" 1 40000
pg_psql "${dir[2]}" -d postgres -qc "SELECT setval('plain', 700)" >/dev/null
for n in 1 2; do
    m=$((3 - n))
    out=$(pg_psql "${dir[$n]}" -d postgres -c "CREATE SUBSCRIPTION s$n CONNECTION '$(dsn "${dir[$m]}")' PUBLICATION allseq" 2>&1)
    grep -q 'NOTICE:  snowflake_id keeps its 2 sequence(s) out of subscription "s'$n'"' <<<"$out" ||
        fail "no NOTICE at CREATE SUBSCRIPTION on n$n: $out"
    wait_until 30 "n$n's plain sequence synchronized" sql_is "${dir[$n]}" \
        "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate = 'r'" 1
    # The user's sequence is PostgreSQL's to synchronize: n1 takes n2's 700 (then n2 its own back).
    expect "${dir[$n]}" "SELECT last_value FROM plain" 700
    expect "${dir[$n]}" "SELECT string_agg(srrelid::regclass::text, ',') FROM pg_subscription_rel" plain
done
echo "ok: both subscriptions hold only the plain sequence, which was synchronized"

lease() { sql "$1" "SELECT string_agg(last_value::text, ' ' ORDER BY sequencename) FROM pg_sequences WHERE schemaname IN ('snowflake', 'gdid')"; }
declare -A before
for n in 1 2; do before[$n]=$(lease "${dir[$n]}"); done
for round in 2 3; do
    for n in 1 2; do
        generate "${dir[$n]}" "$round" $((n * 3000))
        out=$(pg_psql "${dir[$n]}" -d postgres -c "ALTER SUBSCRIPTION s$n REFRESH SEQUENCES" 2>&1)
        ! grep -q 'ERROR' <<<"$out" || fail "REFRESH SEQUENCES on n$n: $out"
    done
    for n in 1 2; do
        wait_until 30 "n$n's refresh done" sql_is "${dir[$n]}" \
            "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate = 'r'" 1
    done
done
for n in 1 2; do
    # The leases only moved on, by this server's own extensions.
    read -r -a was <<<"${before[$n]}"
    read -r -a now <<<"$(lease "${dir[$n]}")"
    for i in 0 1; do
        [ "${now[$i]}" -ge "${was[$i]}" ] || fail "n$n: a lease moved back (${before[$n]} -> ${now[*]})"
    done
done
echo "ok: after REFRESH SEQUENCES both ways, each server's leases only moved on"

# A sequence of a subscription moved into an extension's schema by hand (which makes it one of
# the extension's) leaves the subscription in that statement: the worker would otherwise write
# n2's value over n1's lease (a gdid repeated after a restart, before this).
for n in 2 1; do pg_psql "${dir[$n]}" -d postgres -qc "CREATE SEQUENCE public.moved MINVALUE 0 START 0"; done
pg_psql "${dir[1]}" -d postgres -qc "ALTER SUBSCRIPTION s1 REFRESH PUBLICATION"
expect "${dir[1]}" "SELECT count(*) FROM pg_subscription_rel WHERE srrelid = 'public.moved'::regclass" 1
out=$(pg_psql "${dir[1]}" -d postgres -c 'ALTER SEQUENCE public.moved SET SCHEMA gdid' 2>&1)
grep -q 'NOTICE:  snowflake_id keeps its 1 sequence(s) out of the subscriptions of this database' <<<"$out" ||
    fail "no NOTICE when a subscribed sequence moved into the extension's schema: $out"
expect "${dir[1]}" "SELECT string_agg(srrelid::regclass::text, ',') FROM pg_subscription_rel" plain
for n in 1 2; do pg_psql "${dir[$n]}" -d postgres -qc "DROP SEQUENCE IF EXISTS gdid.moved, public.moved"; done
echo "ok: a subscribed sequence moved into the extension's schema left the subscription"

# Restarts with the clock 5 s behind, then more values: none handed out twice.
for n in 1 2; do
    pg_stop "${dir[$n]}" immediate
    pg_start "${dir[$n]}" FAKETIME=-5s LD_PRELOAD="$FAKETIME_LIB"
    generate "${dir[$n]}" 4 2000
    read -r dup_s dup_g below_s below_g <<<"$(sql "${dir[$n]}" "
        SELECT (SELECT count(*) - count(DISTINCT id) FROM handed WHERE kind = 'snowflake'),
               (SELECT count(*) - count(DISTINCT gid) FROM handed WHERE kind = 'gdid'),
               (SELECT count(*) FROM handed WHERE kind = 'snowflake' AND at_round = 4
                   AND id <= (SELECT max(id) FROM handed WHERE kind = 'snowflake' AND at_round < 4)),
               (SELECT count(*) FROM handed WHERE kind = 'gdid' AND at_round = 4
                   AND gid <= (SELECT max(gid) FROM handed WHERE kind = 'gdid' AND at_round < 4))" | tr '|' ' ')"
    [ "$dup_s $dup_g $below_s $below_g" = "0 0 0 0" ] ||
        fail "n$n after a restart with the clock behind: duplicates $dup_s/$dup_g, not above $below_s/$below_g"
    expect "${dir[$n]}" "SELECT coalesce(sum(sync_seq_error_count), 0) FROM pg_stat_subscription_stats" 0
done
echo "ok: after restarts with the clock 5 s behind, each server's values above all it handed out before; no synchronization error"
