\getenv abs_srcdir PG_ABS_SRCDIR
-- Configuration. The layout settings and the node number are fixed at server start; the
-- run-ahead bound can be changed by a superuser with ALTER SYSTEM and a reload; gdid.authority
-- by a superuser, even in a session. snowflake.node_id and gdid.authority have no default:
-- -1 means "not set", and a generator refuses until they are (tests/cluster/bad_settings.sh).
SELECT name, setting, unit, context, vartype, min_val, max_val, boot_val
  FROM pg_settings WHERE name LIKE 'snowflake.%' OR name LIKE 'gdid.%' ORDER BY name;

-- Not in a session, not even a superuser's:
SET snowflake.node_id = 3;
\echo :LAST_ERROR_SQLSTATE
SET snowflake.max_clock_ahead = '1s';
\echo :LAST_ERROR_SQLSTATE
SET snowflake.epoch = '2020-01-01';
\echo :LAST_ERROR_SQLSTATE

-- Bounds are checked when the setting is written: the node number's against the widest
-- layout (13 node bits), since the node bits written with it may not be in force yet (the
-- pair is checked below).
ALTER SYSTEM SET snowflake.node_id = 8192;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = -1;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = -2;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET gdid.authority = 16;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET gdid.authority = -1;
\echo :LAST_ERROR_SQLSTATE
-- The node number and the authority are plain decimal numbers: an integer setting would read
-- '010' as 8 (octal), '0x10' as 16, '1.5' and '2.5' as 2, and a zero-padded inventory number
-- would silently collide with another server's.
ALTER SYSTEM SET snowflake.node_id = '010';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = '0x10';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = '1.5';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = '+1';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = '1e2';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET gdid.authority = '15.4';
\echo :LAST_ERROR_SQLSTATE
SET gdid.authority = '010';
\echo :LAST_ERROR_SQLSTATE
SELECT set_config('gdid.authority', '0x1', false);
\echo :LAST_ERROR_SQLSTATE
-- Plain digits only, without blanks: SHOW would show them as written.
SET gdid.authority = ' 3';
\echo :LAST_ERROR_SQLSTATE
SET gdid.authority = '3 ';
\echo :LAST_ERROR_SQLSTATE
SET gdid.authority = E'\t4\n';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = ' 7';
\echo :LAST_ERROR_SQLSTATE
SHOW gdid.authority;
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
-- Malformed offsets, and times that leave 1970 .. 9999 once the offset is applied.
ALTER SYSTEM SET snowflake.epoch = '2025-01-01 00:00:00+:0100';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.epoch = '2025-01-01 00:00:00+0:100';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.epoch = '2025-01-01 00:00:00+01:';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.epoch = '1970-01-01 00:00:00+01';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.epoch = '9999-12-31 23:59:59.999-15:59';
\echo :LAST_ERROR_SQLSTATE
-- Names under the extension's prefixes are reserved: a misspelt one is an error, not a
-- silently ignored placeholder.
ALTER SYSTEM SET snowflake.nodeid = 3;
\echo :LAST_ERROR_SQLSTATE
SET gdid.authorty = 3;
\echo :LAST_ERROR_SQLSTATE

-- An ordinary user can neither change nor reload them.
CREATE ROLE snowflake_user LOGIN;
SELECT snowflake_next('user_seq') > 0 AS made;
GRANT USAGE ON SEQUENCE snowflake.user_seq TO snowflake_user;
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

-- ALTER SYSTEM of one of node bits and node number checks the pair the configuration files
-- now hold (this instance's postgresql.conf sets node_id 5): a pair the server could not start
-- with is written, with a WARNING that names the other setting.
ALTER SYSTEM SET snowflake.node_bits = 7;
ALTER SYSTEM SET snowflake.node_id = 500;
ALTER SYSTEM SET snowflake.node_bits = 13;
ALTER SYSTEM SET snowflake.node_bits = 8;
ALTER SYSTEM RESET snowflake.node_bits;
ALTER SYSTEM RESET snowflake.node_id;
-- A node number only the node bits written first make valid: accepted, without a WARNING.
ALTER SYSTEM SET snowflake.node_bits = 13;
ALTER SYSTEM SET snowflake.node_id = 5000;
ALTER SYSTEM SET snowflake.node_id = 1024;
ALTER SYSTEM RESET snowflake.node_bits;
ALTER SYSTEM RESET snowflake.node_id;

-- The node number takes effect at the next start only, so that every backend of a server
-- always stamps the same one: a reload leaves it, and says a restart is pending.
ALTER SYSTEM SET snowflake.node_id = 1023;
SELECT pg_reload_conf();
\set await '(SELECT pending_restart FROM pg_settings WHERE name = ''snowflake.node_id'')'
\i :abs_srcdir/sql/await.psql
SELECT setting, pending_restart FROM pg_settings WHERE name = 'snowflake.node_id';
SELECT snowflake_node(snowflake_next('orders')) AS node;
ALTER SYSTEM RESET snowflake.node_id;
SELECT pg_reload_conf();
\set await '(SELECT NOT pending_restart FROM pg_settings WHERE name = ''snowflake.node_id'')'
\i :abs_srcdir/sql/await.psql
SELECT setting, pending_restart FROM pg_settings WHERE name = 'snowflake.node_id';
DROP SEQUENCE snowflake.user_seq;
DROP ROLE snowflake_user;
