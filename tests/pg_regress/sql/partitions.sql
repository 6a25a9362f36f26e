-- Time ranges as ID ranges, and tables partitioned by their snowflake key: an ID carries its
-- millisecond, so a key needs no timestamp column to be partitioned, pruned or aged by time.
SET timezone = 'UTC';

-- snowflake_range(from, to): the IDs made in [from, to) by any node, from the smallest ID of
-- from's millisecond to the smallest of to's. With a layout name it is IMMUTABLE;
-- 'snowflake_id' is this extension's default layout, which this instance runs.
SELECT snowflake_range('2026-11-23', '2026-11-24', 'snowflake_id');
SELECT snowflake_range('2026-11-23', '2026-11-24') = snowflake_range('2026-11-23', '2026-11-24', 'snowflake_id')
    AS server_layout_is_the_default;
SELECT lower(r) = snowflake_from_timestamp('2026-11-23') AS lower_is_first_id,
       upper(r) = snowflake_from_timestamp('2026-11-24') AS upper_is_first_id_of_to
  FROM snowflake_range('2026-11-23', '2026-11-24') r;
-- The last ID of the range's last millisecond (any node, any counter) is in it; the first of
-- the next millisecond is not; nor is the last of the millisecond before.
SELECT (snowflake_from_timestamp('2026-11-23 23:59:59.999') | (1023 << 12) | 4095)
           <@ snowflake_range('2026-11-23', '2026-11-24') AS last_in,
       snowflake_from_timestamp('2026-11-24')::bigint <@ snowflake_range('2026-11-23', '2026-11-24') AS next_out,
       (snowflake_from_timestamp('2026-11-22 23:59:59.999') | (1023 << 12) | 4095)
           <@ snowflake_range('2026-11-23', '2026-11-24') AS before_out;
-- Every ID the server makes now is in the range of its millisecond.
SELECT snowflake_next('ranges')::bigint <@ snowflake_range(now() - interval '1 second', clock_timestamp() + interval '1 second')
    AS generated_in_range;
-- Other systems' layouts.
SELECT snowflake_range('2026-11-23', '2026-11-24', 'twitter');
SELECT snowflake_range('2026-11-23', '2026-11-24', 'discord');
-- Empty, reversed, NULL, unknown layout, before the epoch.
SELECT snowflake_range('2026-11-23', '2026-11-23') AS empty;
SELECT snowflake_range('2026-11-24', '2026-11-23');
\echo :LAST_ERROR_SQLSTATE
-- Reversed within one millisecond: refused too (checked before the cut to milliseconds).
SELECT snowflake_range('2026-11-24 00:00:00.0009', '2026-11-24 00:00:00.0001', 'snowflake_id');
\echo :LAST_ERROR_SQLSTATE
-- An empty range has no bounds: lower() and upper() are NULL.
SELECT lower(r) IS NULL AND upper(r) IS NULL AS empty_has_null_bounds
  FROM snowflake_range('2026-11-24 00:00:00.0001', '2026-11-24 00:00:00.0009') r;
-- Layouts of 64 bits spend the sign bit on time: their IDs turn negative at one moment
-- (instagram in 2046, discord in 2084), and no int8range holds both sides.
SELECT snowflake_range('2046-01-01', '2047-06-01', 'instagram');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_range('2047-01-01', '2047-01-02', 'instagram') AS all_negative;
-- A range that ends exactly at that moment holds only positive IDs, up to the largest: it is
-- unbounded above.
SELECT r AS up_to_the_turn, upper_inf(r) AS unbounded_above
  FROM snowflake_range('2084-01-01+00', snowflake_timestamp(-9223372036854775808, 'discord'),
                       'discord') r;
SELECT snowflake_range(snowflake_timestamp(-9223372036854775808, 'discord'),
                       snowflake_timestamp(-9223372036854775808, 'discord'), 'discord') AS empty_at_the_turn;
SELECT snowflake_range(NULL, '2026-11-23') IS NULL AS null_in_null_out;
SELECT snowflake_range('2026-11-23', '2026-11-24', 'nope');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_range('2024-01-01', '2026-11-24');
\echo :LAST_ERROR_SQLSTATE
SELECT provolatile, proparallel, proisstrict FROM pg_proc
 WHERE proname = 'snowflake_range' ORDER BY pronargs;

-- snowflake_interval(d): how far apart the IDs of two moments d apart are, for partitioning
-- by integer ranges (pg_partman's integer intervals). Exact for fixed durations; a month is 30
-- days and a year 365.25, as extract(epoch) counts them.
SELECT snowflake_interval('1 millisecond') AS one_ms, snowflake_interval('1 day') AS one_day,
       snowflake_interval('1 day') = snowflake_from_timestamp('2026-11-24') - snowflake_from_timestamp('2026-11-23')
           AS day_is_exact,
       snowflake_interval('1 month') = 30 * snowflake_interval('1 day') AS month_is_30_days,
       snowflake_interval('-1 hour') AS negative;
SELECT snowflake_interval('1000 years');
\echo :LAST_ERROR_SQLSTATE

-- A table partitioned per day by its key: the bounds of each day's partition are its range.
CREATE TABLE daily (id snowflake PRIMARY KEY DEFAULT snowflake_next('daily'), payload text)
    PARTITION BY RANGE (id);
DO $$
DECLARE
    d date;
    r int8range;
BEGIN
    FOR d IN SELECT g::date FROM generate_series('2026-11-20'::date, '2026-11-26'::date, '1 day') g LOOP
        r := snowflake_range(d, d + 1, 'snowflake_id');
        EXECUTE format('CREATE TABLE %I PARTITION OF daily FOR VALUES FROM (%s) TO (%s)',
                       'daily_' || to_char(d, 'YYYYMMDD'), lower(r), upper(r));
    END LOOP;
END $$;
-- Rows of other days land outside these (today's rows, say, when the test runs later).
CREATE TABLE daily_other PARTITION OF daily DEFAULT;
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) = format('FOR VALUES FROM (''%s'') TO (''%s'')',
           snowflake_from_timestamp(to_date(substr(c.relname, 7), 'YYYYMMDD')),
           snowflake_from_timestamp(to_date(substr(c.relname, 7), 'YYYYMMDD') + 1)) AS bounds_are_the_day
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'daily'::regclass AND c.relname <> 'daily_other' ORDER BY 1;
-- Ten rows a day, made at noon of each day by node 3 (as another server would have), and
-- rows made now with the DEFAULT: each lands in its day's partition.
INSERT INTO daily
SELECT snowflake_from_timestamp(d + interval '12 hours') | (3 << 12) | k, 'made on ' || d::date
  FROM generate_series('2026-11-20'::date, '2026-11-26'::date, '1 day') d, generate_series(1, 10) k;
INSERT INTO daily (payload) SELECT 'made now' FROM generate_series(1, 5);
SELECT tableoid::regclass AS partition, count(*),
       bool_and(snowflake_timestamp(id)::date::text = coalesce(substr(payload, 9), snowflake_timestamp(id)::date::text))
           AS rows_of_the_partitions_day
  FROM daily WHERE payload <> 'made now' GROUP BY 1 ORDER BY 1;
SELECT count(*) AS made_now,
       bool_and(tableoid = CASE WHEN snowflake_timestamp(id) >= '2026-11-20' AND snowflake_timestamp(id) < '2026-11-27'
                                THEN ('daily_' || to_char(snowflake_timestamp(id), 'YYYYMMDD'))::regclass
                                ELSE 'daily_other'::regclass END) AS in_their_days_partition
  FROM daily WHERE payload = 'made now';

-- A time predicate written with the range prunes: at plan time with constants (the
-- IMMUTABLE form folds to two bigints) ...
EXPLAIN (COSTS OFF)
SELECT count(*) FROM daily
 WHERE id >= lower(snowflake_range('2026-11-22', '2026-11-23', 'snowflake_id'))
   AND id < upper(snowflake_range('2026-11-22', '2026-11-23', 'snowflake_id'));
SELECT count(*) FROM daily
 WHERE id >= lower(snowflake_range('2026-11-22', '2026-11-23', 'snowflake_id'))
   AND id < upper(snowflake_range('2026-11-22', '2026-11-23', 'snowflake_id'));
-- ... and when the executor starts for now() (STABLE): the partitions of the last hour's
-- days stay, those of other days are removed before any is read. Partitions around now:
CREATE TABLE recent (id snowflake PRIMARY KEY DEFAULT snowflake_next('recent'), v int)
    PARTITION BY RANGE (id);
DO $$
DECLARE
    r int8range;
BEGIN
    r := snowflake_range(now() - interval '10 days', now() - interval '2 days');
    EXECUTE format('CREATE TABLE recent_old PARTITION OF recent FOR VALUES FROM (%s) TO (%s)', lower(r), upper(r));
    r := snowflake_range(now() - interval '2 days', now() + interval '2 days');
    EXECUTE format('CREATE TABLE recent_now PARTITION OF recent FOR VALUES FROM (%s) TO (%s)', lower(r), upper(r));
    r := snowflake_range(now() + interval '2 days', now() + interval '10 days');
    EXECUTE format('CREATE TABLE recent_future PARTITION OF recent FOR VALUES FROM (%s) TO (%s)', lower(r), upper(r));
END $$;
INSERT INTO recent (v) SELECT g FROM generate_series(1, 100) g;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM recent WHERE id >= snowflake_from_timestamp(now() - interval '1 hour');
SELECT count(*) FROM recent WHERE id >= snowflake_from_timestamp(now() - interval '1 hour');
-- The same as a containment: the extension's <@ plans as such bounds (pg_regress ranges),
-- computed when the executor starts from a range of now(), with the server's layout or a
-- named one; PostgreSQL's own operator gives the same rows.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM recent WHERE id <@ snowflake_range(now() - interval '1 hour', now() + interval '1 hour');
EXPLAIN (COSTS OFF)
SELECT count(*) FROM recent WHERE id <@ snowflake_range(now() - interval '1 hour', now() + interval '1 hour', 'snowflake_id');
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) FROM recent WHERE id <@ snowflake_range(now() - interval '1 hour', now() + interval '1 hour');
SELECT count(*) FROM recent WHERE id::bigint OPERATOR(pg_catalog.<@) snowflake_range(now() - interval '1 hour', now() + interval '1 hour');

-- JavaScript reads JSON numbers as doubles, exact to 2^53; snowflake IDs are larger. As
-- text, in JSON too, every bit survives.
SELECT to_json(9007199254740993::bigint)::text AS as_a_number,
       to_json(9007199254740993::bigint::text)::text AS as_a_string;
-- snowflake_decode_jsonb(id, layout) is IMMUTABLE: its ts is UTC whatever TimeZone says, so an
-- index on it agrees with a scan in every session.
CREATE TABLE decoded_ids (id bigint);
INSERT INTO decoded_ids VALUES (383233962446684159);
CREATE INDEX decoded_ts ON decoded_ids ((snowflake_decode_jsonb(id, 'snowflake_id') ->> 'ts'));
SET TimeZone = 'Asia/Kolkata';
SELECT snowflake_decode_jsonb(383233962446684159, 'snowflake_id') ->> 'ts' AS ts_in_utc,
       snowflake_decode_jsonb(383233962446684159) ->> 'ts' AS ts_in_the_sessions_zone;
SET enable_seqscan = off;
SELECT count(*) AS through_the_index FROM decoded_ids
 WHERE snowflake_decode_jsonb(id, 'snowflake_id') ->> 'ts' = '2027-11-24T12:34:56.789+00:00';
RESET enable_seqscan;
RESET TimeZone;
SET timezone = 'UTC';
DROP TABLE decoded_ids;
SELECT bool_and(id::text::bigint = id AND (jsonb_build_object('id', id::text)->>'id')::bigint = id)
           AS every_bit_kept
  FROM (SELECT id FROM daily UNION ALL SELECT id FROM recent
        UNION ALL VALUES (9223372036854775807::bigint), (0), (9007199254740993)) s(id);

DROP TABLE daily, recent;
SELECT snowflake_drop_sequence(s) FROM unnest(ARRAY['ranges', 'daily', 'recent']) s;
