#!/usr/bin/env bash
# pg_partman managing a table partitioned by its snowflake key, one partition per day: pg_partman
# 4.7 (Debian's postgresql-15-partman) on 15, pg_partman 5.5 (built from Debian's source
# package by scripts/partman.sh) on 17 and 18. The interval is a day's width in IDs
# (snowflake_interval('1 day')), so partitions start at the epoch's midnights. Rows made on
# several days (IDs from their timestamps, as another server of the mesh made them that day)
# and rows made now with the DEFAULT land in their day's partition; run_maintenance() creates
# partitions ahead of the newest key, and a retention of two days drops the older ones.
#
# The key is bigint: pg_partman takes the control column's type by name and does not look
# through a domain, so a `snowflake` column is refused (shown below). Its time encoders
# (p_time_encoder, 5.2 and later) are for text and uuid columns only.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

db=$(instance partman "shared_preload_libraries = 'snowflake_id'" "snowflake.node_id = 1" "gdid.authority = 1" \
    "timezone = 'UTC'")
pg_start "$db"
pg_psql "$db" -d postgres -q -c "CREATE SCHEMA partman" -c "CREATE EXTENSION pg_partman SCHEMA partman" \
    -c "CREATE EXTENSION snowflake_id"
version=$(sql "$db" "SELECT extversion FROM pg_extension WHERE extname = 'pg_partman'")
major=${version%%.*}
echo "pg_partman $version"
# create_parent's arguments: 4 needs the native type named; 5 has only native partitions.
type_arg=$([ "$major" -lt 5 ] && echo ", p_type => 'native'" || true)

# A snowflake column: refused by pg_partman's type check.
sql "$db" "CREATE TABLE typed (id snowflake PRIMARY KEY DEFAULT snowflake_next('typed')) PARTITION BY RANGE (id)" >/dev/null
refused=$(sql "$db" "SELECT partman.create_parent(p_parent_table => 'public.typed', p_control => 'id'$type_arg,
                        p_interval => snowflake_interval('1 day')::text)" 2>&1 || true)
grep -qi "control column\|type" <<<"$refused" || fail "pg_partman took a snowflake column: $refused"
echo "ok: a snowflake-typed key is refused by pg_partman ($(head -n 1 <<<"$refused" | cut -c1-100))"

pg_psql "$db" -d postgres -q <<SQL
CREATE TABLE events (id bigint NOT NULL DEFAULT snowflake_next('events'), day date, payload text,
                     PRIMARY KEY (id)) PARTITION BY RANGE (id);
SELECT partman.create_parent(p_parent_table => 'public.events', p_control => 'id'$type_arg,
       p_interval => snowflake_interval('1 day')::text, p_premake => 3,
       p_start_partition => snowflake_from_timestamp(date_trunc('day', now()) - interval '5 days')::text);
SQL
parts() { sql "$db" "SELECT count(*) FROM pg_inherits WHERE inhparent = 'public.events'::regclass"; }
echo "partitions after create_parent: $(parts)"

# Rows of five past days, ten a day at noon, made by node 2, a day at a time with
# maintenance between (as days pass); then rows made now.
for ago in 5 4 3 2 1; do
    sql "$db" "INSERT INTO events (id, day, payload)
               SELECT snowflake_from_timestamp(d + interval '12 hours') | (2 << 12) | k, d::date, 'past'
                 FROM (SELECT date_trunc('day', now()) - interval '$ago days' AS d) s, generate_series(1, 10) k" >/dev/null
    sql "$db" "SELECT partman.run_maintenance('public.events')" >/dev/null
done
sql "$db" "INSERT INTO events (day, payload) SELECT current_date, 'now' FROM generate_series(1, 10)" >/dev/null
sql "$db" "SELECT partman.run_maintenance('public.events')" >/dev/null
# Each row is in the partition of its day: the partition's lower bound is its day's first ID.
check="SELECT count(*) FROM events e JOIN pg_class c ON c.oid = e.tableoid
        WHERE e.day <> snowflake_timestamp(substring(pg_get_expr(c.relpartbound, c.oid) FROM '\\(''?(-?[0-9]+)''?\\) TO')::bigint)::date"
expect "$db" "$check" 0
expect "$db" "SELECT count(*) FROM events_default" 0
expect "$db" "SELECT count(DISTINCT tableoid) FROM events" 6
# Partitions ahead of the newest key: three days at least.
ahead=$(sql "$db" "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                    WHERE i.inhparent = 'public.events'::regclass AND c.relname <> 'events_default'
                      AND substring(pg_get_expr(c.relpartbound, c.oid) FROM '\\(''?(-?[0-9]+)''?\\) TO')::bigint > (SELECT max(id) FROM events)")
[ "$ahead" -ge 3 ] || fail "run_maintenance made $ahead partitions ahead of the newest key"
before=$(parts)
echo "ok: 60 rows in their days' partitions; $before partitions, $ahead of them ahead of the newest key"

# Retention: partitions entirely older than two days before the newest key go.
sql "$db" "UPDATE partman.part_config SET retention = snowflake_interval('2 days')::text, retention_keep_table = false
            WHERE parent_table = 'public.events'" >/dev/null
sql "$db" "SELECT partman.run_maintenance('public.events')" >/dev/null
after=$(parts)
expect "$db" "SELECT min(day) >= current_date - 3 FROM events" t
expect "$db" "SELECT count(*) FROM events WHERE payload = 'now'" 10
[ "$after" -lt "$before" ] || fail "the retention dropped nothing ($before partitions, then $after)"
echo "figures: pg_partman $version: $before partitions, $after after a two-day retention; rows left: $(sql "$db" "SELECT count(*) FROM events")"
echo "partman: ok"
