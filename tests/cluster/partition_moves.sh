#!/usr/bin/env bash
# A row moving between partitions in a mesh is not a new value. Two servers replicate into
# each other (origin = none) with snowflake.refuse_shared_node on, orders partitioned by
# status on both; each server inserts, then updates the other's rows to another partition,
# once with the publication publishing partitions (the move arrives as a DELETE and an
# INSERT) and once through the partitioned root (an UPDATE that this server's apply worker
# routes as a DELETE and an INSERT). Each receives its own keys back inserted into another
# partition; nothing is reported and both go on generating.
# majors: 17 18 (origin = none needs 16+)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

for via_root in false true; do
    declare -A dir
    for n in 1 2; do
        dir[$n]=$(instance "m${n}_$via_root" "shared_preload_libraries = 'snowflake_id'" \
            "snowflake.node_id = $n" "gdid.authority = $n" "wal_level = logical" \
            "snowflake.refuse_shared_node = on")
        pg_start "${dir[$n]}"
        pg_psql "${dir[$n]}" -d postgres -q <<SQL
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake NOT NULL DEFAULT snowflake_next('orders'),
                     g gdid NOT NULL DEFAULT gdid_next('shop', 'orders'),
                     status text NOT NULL, made_on int NOT NULL,
                     PRIMARY KEY (id, status)) PARTITION BY LIST (status);
CREATE TABLE orders_new PARTITION OF orders FOR VALUES IN ('new');
CREATE TABLE orders_done PARTITION OF orders FOR VALUES IN ('done');
CREATE PUBLICATION pub FOR TABLE orders WITH (publish_via_partition_root = $via_root);
SQL
    done
    for n in 1 2; do
        m=$((3 - n))
        PGOPTIONS='-c client_min_messages=warning' pg_psql "${dir[$n]}" -d postgres -qc \
            "CREATE SUBSCRIPTION from_$m CONNECTION '$(dsn "${dir[$m]}")' PUBLICATION pub WITH (origin = none, copy_data = false)"
    done
    for n in 1 2; do
        wait_until 30 "m$n's subscription" sql_is "${dir[$n]}" "SELECT count(*) FROM pg_stat_subscription WHERE pid IS NOT NULL" 1
        sql "${dir[$n]}" "INSERT INTO orders (status, made_on) SELECT 'new', $n FROM generate_series(1, 500)" >/dev/null
    done
    for n in 1 2; do wait_until 30 "1,000 orders on m$n" sql_is "${dir[$n]}" "SELECT count(*) FROM orders" 1000; done
    # Each moves the other's orders to 'done', while inserting more.
    for n in 1 2; do
        m=$((3 - n))
        session "${dir[$n]}" -c "UPDATE orders SET status = 'done' WHERE made_on = $m" \
            -c "INSERT INTO orders (status, made_on) SELECT 'new', $n FROM generate_series(1, 100)" &
    done
    wait
    for n in 1 2; do
        wait_until 30 "the moves on m$n" sql_is "${dir[$n]}" "SELECT count(*) FILTER (WHERE status = 'done') || '/' || count(*) FROM orders" "1000/1200"
    done
    for n in 1 2; do
        expect "${dir[$n]}" "SELECT count(*) FROM snowflake_node_conflicts" 0
        expect "${dir[$n]}" "SELECT snowflake_node(snowflake_next('orders')) = $n AND gdid_authority(gdid_next('shop', 'orders')) = $n" t
        expect "${dir[$n]}" "SELECT count(*) FROM orders_done WHERE snowflake_node(id) = $n" 500
    done
    echo "ok: publish_via_partition_root = $via_root: 1,000 rows moved between partitions in both directions, nothing reported, both generating"
    for n in 1 2; do pg_stop "${dir[$n]}"; done
done
echo "partition_moves: ok"
