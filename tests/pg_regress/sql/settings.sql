-- Configuration. Layout settings are fixed at server start; the node number and the run-ahead
-- bound can be changed by a superuser with ALTER SYSTEM and a reload; nobody can change them
-- in a session.
SELECT name, setting, unit, context, vartype, min_val, max_val, boot_val
  FROM pg_settings WHERE name LIKE 'snowflake.%' ORDER BY name;

-- Not in a session, not even a superuser's:
SET snowflake.node_id = 3;
\echo :LAST_ERROR_SQLSTATE
SET snowflake.max_clock_ahead = '1s';
\echo :LAST_ERROR_SQLSTATE
SET snowflake.epoch = '2020-01-01';
\echo :LAST_ERROR_SQLSTATE

-- Bounds are checked when the setting is written.
ALTER SYSTEM SET snowflake.node_id = 1024;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = -1;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_bits = 6;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_bits = 14;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.max_sequences = 0;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.max_clock_ahead = 0;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.max_clock_ahead = '2h';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.epoch = 'tomorrow';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.epoch = '2025-02-30';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.epoch = '1969-12-31 23:59:59+00';
\echo :LAST_ERROR_SQLSTATE

-- An ordinary user can neither change nor reload them.
CREATE ROLE snowflake_user LOGIN;
SET ROLE snowflake_user;
SET snowflake.node_id = 3;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = 3;
\echo :LAST_ERROR_SQLSTATE
SELECT pg_reload_conf();
\echo :LAST_ERROR_SQLSTATE
-- but can generate and decode.
SELECT snowflake_node(snowflake_next('user_seq')) AS node;
RESET ROLE;

-- A superuser changes the node number with a reload; new IDs carry it at once.
ALTER SYSTEM SET snowflake.node_id = 1023;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SHOW snowflake.node_id;
SELECT snowflake_node(snowflake_next('orders')) AS node;
ALTER SYSTEM RESET snowflake.node_id;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SHOW snowflake.node_id;
DROP ROLE snowflake_user;
