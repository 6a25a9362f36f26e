\getenv abs_srcdir PG_ABS_SRCDIR
-- Two servers with one snowflake.node_id (or gdid.authority) are noticed where their values
-- meet: in the logical replication apply workers of a server that receives them (cluster
-- tests detection.sh, active_active_*.sh). Here a session plays the apply worker: a
-- replication origin set up for the session and session_replication_role = replica are what
-- an apply worker has.
SHOW snowflake.node_id;
SHOW gdid.authority;
SELECT * FROM snowflake_node_conflicts;

-- The snowflake domain's one check: not negative (NOT VALID: see api.sql).
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE contypid = 'snowflake'::regtype ORDER BY conname;
SELECT (-1)::snowflake;
\echo :LAST_ERROR_SQLSTATE

-- Only new values count: those an INSERT brings into a column whose DEFAULT generates them
-- (id and g below), not keys held elsewhere (parent and other, as a foreign key holds them).
CREATE TABLE received (id snowflake PRIMARY KEY DEFAULT snowflake_next('received'),
                       g gdid DEFAULT gdid_next('conflicts', 'received'),
                       parent snowflake, other gdid);
CREATE TABLE elsewhere (id snowflake PRIMARY KEY, g gdid);

-- Outside an apply session nothing is counted.
INSERT INTO received VALUES (4194304::bigint * 1000 + 4096 * 5 + 1, '0:6:1');
SELECT count(*) FROM snowflake_node_conflicts;

SELECT pg_replication_origin_create('origin_a') > 0 AS created;
SELECT pg_replication_origin_session_setup('origin_a');
SET session_replication_role = replica;
-- This server's own node number (5) and authority (6) arriving in other columns, in a table
-- without a generating column, in updates and in deletes: nothing.
INSERT INTO received VALUES (4194304::bigint * 1001 + 4096 * 7 + 1, '0:8:1',
                             4194304::bigint * 1000 + 4096 * 5 + 1, '0:6:1');
INSERT INTO elsewhere VALUES (4194304::bigint * 1001 + 4096 * 5 + 2, '0:6:3');
UPDATE received SET parent = 4194304::bigint * 1001 + 4096 * 5 + 3, other = '0:6:4';
UPDATE received SET id = id + 1 WHERE g = '0:6:1';
DELETE FROM received WHERE g = '0:6:1';
-- A row moving between partitions arrives as a DELETE and an INSERT of its keys: not new.
DELETE FROM received WHERE g = '0:8:1';
INSERT INTO received VALUES (4194304::bigint * 1001 + 4096 * 7 + 1, '0:8:1',
                             4194304::bigint * 1000 + 4096 * 5 + 1, '0:6:1');
-- Rows COPY loads (a pglogical subscription's initial copy, in a session with its origin)
-- are old rows.
COPY received FROM STDIN;
1048576000000020489	0:6:9	\N	\N
\.
SELECT count(*) FROM snowflake_node_conflicts WHERE node_or_authority IN (5, 6);
-- Inserted into the generating columns: reported at once, with a WARNING.
INSERT INTO received VALUES (4194304::bigint * 1001 + 4096 * 5 + 1, '0:6:2');
RESET session_replication_role;
SELECT pg_replication_origin_session_reset();
SELECT kind, node_or_authority, origins, rows_seen FROM snowflake_node_conflicts ORDER BY 1;
-- Every value counts: those of one transaction reach the table when it commits, not at the
-- next arrival (which never comes when the session ends).
SELECT rows_seen AS seen_before FROM snowflake_node_conflicts
 WHERE kind = 'snowflake node' AND node_or_authority = 5 \gset
SELECT pg_replication_origin_session_setup('origin_a');
SET session_replication_role = replica;
INSERT INTO received SELECT 4194304::bigint * 1010 + 4096 * 5 + i, NULL FROM generate_series(1, 10) i;
RESET session_replication_role;
SELECT pg_replication_origin_session_reset();
SELECT rows_seen - :seen_before AS counted FROM snowflake_node_conflicts
 WHERE kind = 'snowflake node' AND node_or_authority = 5;
-- Values of a transaction, or of a subtransaction, that rolls back never arrived: 3 + 2 here,
-- not the 10 rolled back nor the 50 of the savepoint rolled back to.
SELECT rows_seen AS seen_before FROM snowflake_node_conflicts
 WHERE kind = 'snowflake node' AND node_or_authority = 5 \gset
SELECT pg_replication_origin_session_setup('origin_a');
SET session_replication_role = replica;
BEGIN;
INSERT INTO received SELECT 4194304::bigint * 1011 + 4096 * 5 + i, NULL FROM generate_series(1, 10) i;
ROLLBACK;
BEGIN;
INSERT INTO received SELECT 4194304::bigint * 1012 + 4096 * 5 + i, NULL FROM generate_series(1, 3) i;
SAVEPOINT s;
INSERT INTO received SELECT 4194304::bigint * 1013 + 4096 * 5 + i, NULL FROM generate_series(1, 50) i;
ROLLBACK TO SAVEPOINT s;
SAVEPOINT t;
INSERT INTO received SELECT 4194304::bigint * 1014 + 4096 * 5 + i, NULL FROM generate_series(1, 2) i;
RELEASE SAVEPOINT t;
COMMIT;
RESET session_replication_role;
SELECT pg_replication_origin_session_reset();
SELECT rows_seen - :seen_before AS counted FROM snowflake_node_conflicts
 WHERE kind = 'snowflake node' AND node_or_authority = 5;

-- Node 9 through two origins: one after the other is a hand-over (a promoted standby behind
-- a new subscription)...
SELECT pg_replication_origin_create('origin_b') > 0 AS created;
SELECT pg_replication_origin_session_setup('origin_b');
SET session_replication_role = replica;
INSERT INTO received VALUES (4194304::bigint * 1002 + 4096 * 9 + 1, NULL);
RESET session_replication_role;
SELECT pg_replication_origin_session_reset();
SELECT count(*) FROM snowflake_node_conflicts WHERE node_or_authority = 9;
-- ...both at once for more than a second is two servers.
SELECT pg_replication_origin_session_setup('origin_a');
SET session_replication_role = replica;
INSERT INTO received VALUES (4194304::bigint * 1003 + 4096 * 9 + 1, NULL);
RESET session_replication_role;
SELECT pg_replication_origin_session_reset();
SELECT pg_sleep(1.2);
SELECT pg_replication_origin_session_setup('origin_b');
SET session_replication_role = replica;
INSERT INTO received VALUES (4194304::bigint * 1004 + 4096 * 9 + 1, NULL);
RESET session_replication_role;
SELECT pg_replication_origin_session_reset();
SELECT pg_replication_origin_session_setup('origin_a');
SET session_replication_role = replica;
INSERT INTO received VALUES (4194304::bigint * 1005 + 4096 * 9 + 1, NULL);
RESET session_replication_role;
SELECT pg_replication_origin_session_reset();
SELECT kind, node_or_authority, origins, rows_seen FROM snowflake_node_conflicts ORDER BY 1, 2;

-- snowflake.refuse_shared_node: off by default; on, this server stops generating under its
-- shared node number and authority.
SHOW snowflake.refuse_shared_node;
SELECT snowflake_next('conflicts') > 0 AS generates;
ALTER SYSTEM SET snowflake.refuse_shared_node = on;
SELECT pg_reload_conf();
\set await 'current_setting(''snowflake.refuse_shared_node'') = ''on'''
\i :abs_srcdir/sql/await.psql
SELECT snowflake_next('conflicts');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next('conflicts', 'g');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_next_batch('conflicts', 2);
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM RESET snowflake.refuse_shared_node;
SELECT pg_reload_conf();
\set await 'current_setting(''snowflake.refuse_shared_node'') = ''off'''
\i :abs_srcdir/sql/await.psql
SELECT snowflake_next('conflicts') > 0 AS generates_again;
ALTER SYSTEM SET snowflake.refuse_shared_node = 'maybe';
\echo :LAST_ERROR_SQLSTATE

-- The view is for everyone; setting up an origin is not.
CREATE ROLE conflicts_user;
SET ROLE conflicts_user;
SELECT count(*) > 0 AS visible FROM snowflake_node_conflicts;
RESET ROLE;
DROP ROLE conflicts_user;
DROP TABLE received, elsewhere;
SELECT pg_replication_origin_drop(n) FROM unnest(ARRAY['origin_a', 'origin_b']) n;
