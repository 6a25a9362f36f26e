-- Two servers with one snowflake.node_id (or gdid.authority) are noticed where their values
-- meet: in the logical replication apply workers of a server that receives them (cluster
-- tests detection.sh, active_active_*.sh). Here a session plays the apply worker: a
-- replication origin set up for the session is what an apply worker has.
SHOW snowflake.node_id;
SHOW gdid.authority;
SELECT * FROM snowflake_node_conflicts;

-- The snowflake domain's one check, not negative, is the observer (NOT VALID: see api.sql).
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE contypid = 'snowflake'::regtype ORDER BY conname;
SELECT snowflake_observe(1), snowflake_observe(-1), snowflake_observe(NULL);
SELECT (-1)::snowflake;
\echo :LAST_ERROR_SQLSTATE

-- Outside an apply session nothing is counted.
CREATE TABLE received (id snowflake PRIMARY KEY, g gdid);
INSERT INTO received VALUES (4194304::bigint * 1000 + 4096 * 5 + 1, '0:6:1');
SELECT count(*) FROM snowflake_node_conflicts;

-- Values of this server's own node number (5) and authority (6) arriving through an origin:
-- reported at once, with a WARNING.
SELECT pg_replication_origin_create('origin_a') > 0 AS created;
SELECT pg_replication_origin_session_setup('origin_a');
INSERT INTO received VALUES (4194304::bigint * 1001 + 4096 * 5 + 1, '0:6:2');
SELECT pg_replication_origin_session_reset();
SELECT kind, node_or_authority, origins, rows_seen FROM snowflake_node_conflicts ORDER BY 1;

-- Node 9 through two origins: one after the other is a hand-over (a promoted standby behind
-- a new subscription)...
SELECT pg_replication_origin_create('origin_b') > 0 AS created;
SELECT pg_replication_origin_session_setup('origin_b');
INSERT INTO received VALUES (4194304::bigint * 1002 + 4096 * 9 + 1, NULL);
SELECT pg_replication_origin_session_reset();
SELECT count(*) FROM snowflake_node_conflicts WHERE node_or_authority = 9;
-- ...both at once for more than a second is two servers. (The text form goes through the
-- domain's input, as text-mode replication does.)
SELECT pg_replication_origin_session_setup('origin_a');
INSERT INTO received VALUES ((4194304::bigint * 1003 + 4096 * 9 + 1)::text::snowflake, NULL);
SELECT pg_replication_origin_session_reset();
SELECT pg_sleep(1.2);
SELECT pg_replication_origin_session_setup('origin_b');
INSERT INTO received VALUES (4194304::bigint * 1004 + 4096 * 9 + 1, NULL);
SELECT pg_replication_origin_session_reset();
SELECT pg_replication_origin_session_setup('origin_a');
INSERT INTO received VALUES (4194304::bigint * 1005 + 4096 * 9 + 1, NULL);
SELECT pg_replication_origin_session_reset();
SELECT kind, node_or_authority, origins, rows_seen FROM snowflake_node_conflicts ORDER BY 1, 2;

-- snowflake.refuse_shared_node: off by default; on, this server stops generating under its
-- shared node number and authority.
SHOW snowflake.refuse_shared_node;
SELECT snowflake_next('conflicts') > 0 AS generates;
ALTER SYSTEM SET snowflake.refuse_shared_node = on;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT snowflake_next('conflicts');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next('conflicts', 'g');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_next_batch('conflicts', 2);
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM RESET snowflake.refuse_shared_node;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT snowflake_next('conflicts') > 0 AS generates_again;
ALTER SYSTEM SET snowflake.refuse_shared_node = 'maybe';
\echo :LAST_ERROR_SQLSTATE

-- The view is for everyone; setting up an origin is not.
CREATE ROLE conflicts_user;
SET ROLE conflicts_user;
SELECT count(*) > 0 AS visible FROM snowflake_node_conflicts;
RESET ROLE;
DROP ROLE conflicts_user;
DROP TABLE received;
SELECT pg_replication_origin_drop(n) FROM unnest(ARRAY['origin_a', 'origin_b']) n;
