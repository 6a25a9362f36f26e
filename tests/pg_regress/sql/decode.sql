-- Decoding IDs of this server's layout: 41 bits of milliseconds since snowflake.epoch
-- (default 2025-01-01 00:00:00+00), 10 bits of node, 12 bits of counter.
SET timezone = 'UTC';
SET datestyle = 'ISO';

-- A hand-made ID: millisecond 1000 after the epoch, node 5, counter 7.
SELECT (1000::bigint << 22) | (5 << 12) | 7 AS id \gset
SELECT snowflake_timestamp(:id), snowflake_node(:id), snowflake_counter(:id);
SELECT * FROM snowflake_decode(:id);
SELECT snowflake_decode(:id);
SELECT snowflake_decode_jsonb(:id);
-- The largest ID: the last millisecond of the layout, in 2094.
SELECT * FROM snowflake_decode(9223372036854775807);
SELECT snowflake_decode_jsonb(9223372036854775807) ->> 'id' AS id_is_a_string;

-- snowflake_from_timestamp: the smallest ID of a millisecond, for range scans and bounds.
SELECT snowflake_from_timestamp('2025-01-01 00:00:00+00') AS at_epoch,
       snowflake_from_timestamp('2025-01-01 00:00:00.001+00') AS one_ms_later,
       snowflake_from_timestamp('2025-01-01 00:00:00.0019+00') AS same_ms_rounded_down,
       snowflake_from_timestamp('2025-01-01 01:00:00+01') AS same_instant_other_zone;
SELECT pg_typeof(snowflake_from_timestamp(now()));
SELECT snowflake_from_timestamp(snowflake_timestamp(:id)) = :id - (5 << 12) - 7 AS floor_of_its_ms;

-- For every generated ID: from_timestamp(timestamp(id)) <= id < from_timestamp(timestamp(id) + 1 ms)
CREATE TABLE decoded AS SELECT snowflake_next('decode') AS id FROM generate_series(1, 10000);
SELECT bool_and(snowflake_from_timestamp(snowflake_timestamp(id)) <= id) AS lower_bound,
       bool_and(snowflake_from_timestamp(snowflake_timestamp(id) + interval '1 ms') > id) AS upper_bound
  FROM decoded;

-- Range scans by time use the primary key index.
CREATE TABLE events (id snowflake PRIMARY KEY DEFAULT snowflake_next('events'), at timestamptz DEFAULT clock_timestamp());
INSERT INTO events SELECT FROM generate_series(1, 2000);
ANALYZE events;
SET enable_seqscan = off;  -- every row matches here; show that the index can serve the range
EXPLAIN (COSTS OFF)
SELECT count(*) FROM events WHERE id >= snowflake_from_timestamp(now() - interval '1 hour');
RESET enable_seqscan;
SELECT count(*) FROM events WHERE id >= snowflake_from_timestamp(now() - interval '1 hour');
SELECT count(*) FROM events WHERE id >= snowflake_from_timestamp(clock_timestamp() + interval '1 hour');

-- Partition bounds can be written as IDs.
CREATE TABLE log (id snowflake NOT NULL, msg text) PARTITION BY RANGE (id);
SELECT snowflake_from_timestamp('2026-01-01+00') AS y2026, snowflake_from_timestamp('2027-01-01+00') AS y2027,
       snowflake_from_timestamp('2028-01-01+00') AS y2028 \gset
CREATE TABLE log_2026 PARTITION OF log FOR VALUES FROM (:y2026) TO (:y2027);
CREATE TABLE log_2027 PARTITION OF log FOR VALUES FROM (:y2027) TO (:y2028);
INSERT INTO log VALUES (snowflake_from_timestamp('2026-11-22 12:00+00') + 1, 'a'),
                       (snowflake_from_timestamp('2027-06-01 00:00+00'), 'b');
SELECT tableoid::regclass, snowflake_timestamp(id), msg FROM log ORDER BY id;

-- Errors: IDs of this layout are never negative, and timestamps must fit the layout.
SELECT snowflake_timestamp(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_node(-9223372036854775808);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_counter(-2);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_timestamp('2024-12-31 23:59:59.999+00');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_timestamp('2094-09-07 15:47:35.552+00');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_timestamp('2094-09-07 15:47:35.551+00') AS last_ms_of_the_layout;
SELECT snowflake_from_timestamp('infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_timestamp('-infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_timestamp(NULL), snowflake_node(NULL), snowflake_counter(NULL),
       snowflake_from_timestamp(NULL), snowflake_decode_jsonb(NULL);
