\getenv abs_srcdir PG_ABS_SRCDIR
-- Limits: how far a sequence may run ahead of the wall clock, and how many sequences
-- shared memory holds. Runs last: it fills the sequence table.

-- snowflake.max_clock_ahead bounds the logical clock. Lower it to 100 ms for this test.
ALTER SYSTEM SET snowflake.max_clock_ahead = '100ms';
SELECT pg_reload_conf();
\set await 'current_setting(''snowflake.max_clock_ahead'') = ''100ms'''
\i :abs_srcdir/sql/await.psql
SHOW snowflake.max_clock_ahead;

-- 90 ms worth of IDs (4096 a millisecond) puts the sequence about 90 ms ahead. The next
-- 40 ms worth would end about 130 ms ahead: past the bound, so the call waits (at most
-- 100 ms) for the clock to catch up, then succeeds.
SELECT count(*) FROM snowflake_next_batch('ahead', 4096 * 90);
SELECT count(*) FROM snowflake_next_batch('ahead', 4096 * 40);
SELECT clock_ahead <= interval '100 ms' AS within_bound FROM snowflake_sequences WHERE name = 'ahead';
-- A batch that alone spans more than the bound can never fit: it fails at once, handing
-- out nothing.
SELECT count(*) FROM snowflake_next_batch('ahead_far', 4096 * 300);
\echo :LAST_ERROR_SQLSTATE
SELECT issued FROM snowflake_sequences WHERE name = 'ahead_far';

ALTER SYSTEM RESET snowflake.max_clock_ahead;
SELECT pg_reload_conf();
\set await 'current_setting(''snowflake.max_clock_ahead'') = ''10s'''
\i :abs_srcdir/sql/await.psql
SHOW snowflake.max_clock_ahead;

-- snowflake.max_sequences_per_database is obsolete (sequences are relations of their
-- database, without a limit of their own): accepted, without effect.
SHOW snowflake.max_sequences_per_database;

-- snowflake.max_sequences is the size of the cache of sequences in shared memory: 81 in this
-- test instance, for the sequences of all databases together and of both kinds. More than
-- that are used in turn, each entering the cache as it is used, the least recently used of a
-- sample leaving it: leaving the cache loses nothing (the next use continues above the lease
-- its relation holds). Here 200 names, three rounds.
CREATE TABLE lm_rounds (round int, name text, id bigint, g gdid);
DO $$
BEGIN
    FOR r IN 1..3 LOOP
        FOR i IN 1..200 LOOP
            INSERT INTO lm_rounds VALUES (r, 'lm_' || i, snowflake_next('lm_' || i),
                                          gdid_next('lm', i::text));
        END LOOP;
        COMMIT;
    END LOOP;
END $$;
SELECT count(*) AS values, count(DISTINCT (name, id)) AS distinct_ids,
       count(DISTINCT (name, g)) AS distinct_gdids FROM lm_rounds;
-- Every name's values increase from round to round, across evictions.
SELECT count(*) AS names_in_order FROM (
    SELECT name, array_agg(id ORDER BY round) = array_agg(id ORDER BY id) AND
                 array_agg(g ORDER BY round) = array_agg(g ORDER BY g) AS ordered
      FROM lm_rounds GROUP BY name) t WHERE ordered;
-- The views list every sequence of the database, cached or not.
SELECT count(*) AS snowflake_sequences FROM snowflake_sequences WHERE name LIKE 'lm\_%';
SELECT count(*) AS gdid_sequences FROM gdid_sequences WHERE scope = 'lm';
DROP TABLE lm_rounds;
