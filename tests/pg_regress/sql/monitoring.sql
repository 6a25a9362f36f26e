-- The snowflake_sequences view: the sequences of the current database since server start.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';

\d snowflake_sequences

-- Fresh names so that the figures are exact.
SELECT count(snowflake_next('monitored')) FROM generate_series(1, 250);
SELECT count(*) FROM snowflake_next_batch('monitored', 50);
SELECT snowflake_next('monitored') AS latest \gset
SELECT name, layout, epoch, issued, last_id = :latest AS last_id_is_latest,
       last_timestamp = snowflake_timestamp(:latest) AS timestamp_matches,
       clock_ahead >= interval '0' AS clock_ahead_non_negative, clock_regressions
  FROM snowflake_sequences WHERE name = 'monitored';

-- A batch larger than one millisecond's counter (4096) borrows the following milliseconds:
-- the logical clock runs ahead of the wall clock. 50 ms worth from a fresh sequence spans
-- exactly 49 ms of timestamps, whatever the wall clock did meanwhile.
SELECT count(*), max(snowflake_timestamp(id)) - min(snowflake_timestamp(id)) AS spans
  FROM snowflake_next_batch('burst', 4096 * 50) id;
SELECT issued, counter_exhausted, clock_ahead <= interval '50 ms' AS by_at_most_50ms
  FROM snowflake_sequences WHERE name = 'burst';

-- The durable lease: every ID handed out is below lease_until, which runs at most
-- snowflake.max_clock_ahead past the clock; a restart resumes above it. Extending it (a file
-- write and a WAL flush) happens about once a second per busy sequence, not per ID.
SELECT last_timestamp < lease_until AS below_lease,
       lease_until <= clock_timestamp() + current_setting('snowflake.max_clock_ahead')::interval
           AS within_run_ahead_bound,
       lease_extensions BETWEEN 1 AND 5 AS few_extensions
  FROM snowflake_sequences WHERE name = 'monitored';

-- Sequences of other databases are not listed. The view is readable by everyone.
SELECT count(*) > 0 AS has_rows, count(*) = count(DISTINCT name) AS one_row_per_name FROM snowflake_sequences;
SELECT has_table_privilege('public', 'snowflake_sequences', 'SELECT') AS public_can_read;
