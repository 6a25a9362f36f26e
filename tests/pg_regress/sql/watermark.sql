-- Watermarks: below snowflake_watermark(seq), every ID of the sequence made on this server
-- belongs to a transaction that has ended (committed and visible, or rolled back); every ID
-- made after the call is at or above it. A consumer pages WHERE id >= :last AND id < :mark
-- in a statement after the one that took the mark, and never skips a committed row.
SET timezone = 'UTC';

\d snowflake_watermark_holders
\d gdid_watermark_holders

CREATE TABLE wm_orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('wm_orders'), n int);
CREATE TABLE wm_events (id gdid PRIMARY KEY DEFAULT gdid_next('wm', 'events'), n int);
INSERT INTO wm_orders (n) SELECT generate_series(1, 3);
INSERT INTO wm_events (n) SELECT generate_series(1, 3);

-- Nothing in flight: the mark is above every committed ID, and never moves back.
SELECT snowflake_watermark('wm_orders') > max(id) AS above_all FROM wm_orders;
SELECT gdid_watermark('wm', 'events') > max(id) AS above_all FROM wm_events;
SELECT snowflake_watermark('wm_orders') AS m1 \gset
SELECT snowflake_watermark('wm_orders') >= :m1 AS never_back;
SELECT count(*) AS nothing_in_flight FROM snowflake_watermark_holders;

-- A transaction holds the mark at its first ID of the sequence until it ends; later IDs of
-- the same transaction, and savepoints rolled back, change nothing. The view names it.
BEGIN;
INSERT INTO wm_orders (n) VALUES (4) RETURNING id AS first \gset
SELECT snowflake_watermark('wm_orders') = :first AS held_at_first;
SAVEPOINT s;
INSERT INTO wm_orders (n) SELECT generate_series(5, 10);
ROLLBACK TO SAVEPOINT s;
INSERT INTO wm_orders (n) VALUES (11);
SELECT snowflake_watermark('wm_orders') = :first AS still_at_first;
SELECT sequence, pid = pg_backend_pid() AS this_session, transaction = pg_current_xact_id()::xid AS this_transaction,
       prepared, first_id = :first AS first_id_matches, age >= interval '0' AS age_known
  FROM snowflake_watermark_holders;
COMMIT;
SELECT snowflake_watermark('wm_orders') > max(id) AS released_at_commit FROM wm_orders;

BEGIN;
INSERT INTO wm_orders (n) VALUES (12) RETURNING id AS first \gset
ROLLBACK;
SELECT snowflake_watermark('wm_orders') > :first AS released_at_rollback;

-- A name's very first value (its sequence made, then continued above the keys already
-- stored) is where the mark stays, as any first value.
BEGIN;
SELECT snowflake_next('wm_brand_new') AS brand_new \gset
SELECT snowflake_watermark('wm_brand_new') = :brand_new AS held_at_first;
SELECT first_id = :brand_new AS first_id_matches FROM snowflake_watermark_holders
 WHERE sequence = 'snowflake.wm_brand_new'::regclass;
COMMIT;

-- The same for gdids.
BEGIN;
INSERT INTO wm_events (n) VALUES (4) RETURNING id AS first \gset
INSERT INTO wm_events (n) VALUES (5);
SELECT gdid_watermark('wm', 'events') = :'first' AS held_at_first;
SELECT sequence, prepared, first_gdid = :'first' AS first_gdid_matches FROM gdid_watermark_holders;
COMMIT;
SELECT gdid_watermark('wm', 'events') > max(id) AS released_at_commit FROM wm_events;

-- A prepared transaction holds it until COMMIT PREPARED or ROLLBACK PREPARED, whichever
-- session runs them; it has no process.
BEGIN;
INSERT INTO wm_orders (n) VALUES (13) RETURNING id AS prepared_first \gset
PREPARE TRANSACTION 'wm_p1';
INSERT INTO wm_orders (n) VALUES (14);
SELECT snowflake_watermark('wm_orders') = :prepared_first AS held_by_prepared;
SELECT sequence, pid, transaction IS NOT NULL AS has_xid, prepared, first_id = :prepared_first AS first_id_matches
  FROM snowflake_watermark_holders;
COMMIT PREPARED 'wm_p1';
SELECT snowflake_watermark('wm_orders') > max(id) AS released_by_commit_prepared FROM wm_orders;
BEGIN;
INSERT INTO wm_events (n) VALUES (6) RETURNING id AS prepared_first \gset
PREPARE TRANSACTION 'wm_p2';
SELECT gdid_watermark('wm', 'events') = :'prepared_first' AS held_by_prepared;
ROLLBACK PREPARED 'wm_p2';
SELECT gdid_watermark('wm', 'events') > :'prepared_first' AS released_by_rollback_prepared;
-- A prepared transaction that generated nothing holds nothing.
BEGIN;
UPDATE wm_orders SET n = n WHERE n = 1;
PREPARE TRANSACTION 'wm_p3';
SELECT snowflake_watermark('wm_orders') > max(id) AS not_held FROM wm_orders;
COMMIT PREPARED 'wm_p3';

-- A transaction that takes values from more sequences than it has entries for (8) holds
-- every sequence of that kind of its database at the lowest value, even one it never used;
-- not those of the other kind.
BEGIN;
SELECT count(snowflake_next('wm_many_' || i)) FROM generate_series(1, 9) i;
SELECT snowflake_watermark('wm_orders') AS held_everywhere;
SELECT gdid_watermark('wm', 'events') > (SELECT max(id) FROM wm_events) AS gdids_not_held;
SELECT count(*) AS gdid_holders FROM gdid_watermark_holders;
SELECT count(*) FILTER (WHERE sequence IS NULL AND first_id IS NULL) AS all_held,
       count(*) FILTER (WHERE sequence IS NOT NULL) AS entries
  FROM snowflake_watermark_holders;
COMMIT;
SELECT snowflake_watermark('wm_orders') > max(id) AS released FROM wm_orders;

-- A read-only transaction may take a mark (it only reads); STRICT: NULL in, NULL out.
BEGIN READ ONLY;
SELECT snowflake_watermark('wm_orders') > 0 AS read_only_ok;
COMMIT;
SELECT snowflake_watermark(NULL) IS NULL AS strict, gdid_watermark('wm', NULL) IS NULL AS strict;

-- Errors: a sequence that does not exist (a name is made by its first value, never by a
-- watermark), a name that cannot be one, and a caller without SELECT or USAGE on it.
\set VERBOSITY sqlstate
SELECT snowflake_watermark('wm_never_used');
SELECT gdid_watermark('wm', 'never_used');
SELECT snowflake_watermark('');
SELECT gdid_watermark('', 'events');
SELECT snowflake_watermark(repeat('x', 64));
-- Generators refuse in a parallel operation (a worker's transaction would end before the
-- leader's, releasing a value still in flight), as nextval does: 25000.
CREATE FUNCTION wm_parallel_next() RETURNS bigint LANGUAGE sql PARALLEL SAFE
    AS $$ SELECT snowflake_next('wm_orders') $$;
CREATE TABLE wm_one AS SELECT 1 AS x;
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'on', false);
SELECT wm_parallel_next() FROM wm_one;
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'off', false);
SELECT wm_parallel_next() > 0 AS outside_a_parallel_operation;
DROP TABLE wm_one;
DROP FUNCTION wm_parallel_next();
\set VERBOSITY default
SELECT snowflake_watermark('wm_never_used');
CREATE ROLE wm_reader;
SET ROLE wm_reader;
SELECT snowflake_watermark('wm_orders');
SELECT gdid_watermark('wm', 'events');
RESET ROLE;
GRANT SELECT ON SEQUENCE snowflake.wm_orders TO wm_reader;
GRANT USAGE ON SEQUENCE gdid."wm/events" TO wm_reader;
SET ROLE wm_reader;
SELECT snowflake_watermark('wm_orders') > 0 AS with_select;
SELECT gdid_watermark('wm', 'events') > '0:0:0' AS with_usage;
-- The views list only the sequences the caller may read.
RESET ROLE;
BEGIN;
INSERT INTO wm_orders (n) VALUES (15);
SELECT snowflake_next('wm_private') > 0 AS made;
SET LOCAL ROLE wm_reader;
SELECT sequence FROM snowflake_watermark_holders ORDER BY 1;
COMMIT;
REVOKE ALL ON SEQUENCE snowflake.wm_orders FROM wm_reader;
REVOKE ALL ON SEQUENCE gdid."wm/events" FROM wm_reader;
DROP ROLE wm_reader;

-- The consumer: take the mark, then read below it in the next statement (whose snapshot is
-- newer than the mark), remember the mark as where to start next time.
SELECT id AS last FROM wm_orders ORDER BY id LIMIT 1 \gset
SELECT snowflake_watermark('wm_orders') AS mark \gset
SELECT count(*) AS page FROM wm_orders WHERE id >= :last AND id < :mark;
SELECT count(*) AS everything FROM wm_orders WHERE id >= :last;

DROP TABLE wm_orders, wm_events;
