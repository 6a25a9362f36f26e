-- Limits: how far a sequence may run ahead of the wall clock, and how many sequences
-- shared memory holds. Runs last: it fills the sequence table.

-- snowflake.max_clock_ahead bounds the logical clock. Lower it to 100 ms for this test.
ALTER SYSTEM SET snowflake.max_clock_ahead = '100ms';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
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
SELECT pg_sleep(0.5);
SHOW snowflake.max_clock_ahead;

-- snowflake.max_sequences_per_database keeps the roles of one database from taking every
-- slot of the server. Lowered to 5, below what this database has already: new names are
-- refused, existing ones keep working.
ALTER SYSTEM SET snowflake.max_sequences_per_database = 5;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT snowflake_next('one_too_many');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next('one', 'too_many');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_next('orders') > 0 AS existing_names_still_work;
ALTER SYSTEM RESET snowflake.max_sequences_per_database; -- back to 100, from postgresql.conf
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);

-- snowflake.max_sequences is 81 in this test instance, for the sequences of all databases
-- together and of both kinds (the slots of dropped sequences, and of the databases encodings
-- dropped, have taken new ones): once every slot is taken, new names are refused, while names
-- that already exist keep working.
SELECT count(*) AS sequences_so_far FROM snowflake_sequences;
DO $$
BEGIN
    FOR i IN 1..40 LOOP
        PERFORM snowflake_next('fill_' || i);
    END LOOP;
END $$;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS sequences FROM snowflake_sequences;
SELECT snowflake_next('orders') > 0 AS existing_names_still_work;
-- A dropped sequence's slot takes a new sequence without a restart, once no transaction that
-- was running when it was dropped is left (here at once: no other session uses the table).
SELECT snowflake_drop_sequence('fill_1');
SELECT snowflake_next('after_a_drop') > 0 AS took_the_slot;
SELECT snowflake_next('one_more');
\echo :LAST_ERROR_SQLSTATE
