\getenv abs_srcdir PG_ABS_SRCDIR
-- A server's node number and gdid authority are written by hand (this instance: node 5,
-- authority 6), or claimed from a registry when snowflake.node_id or gdid.authority is auto
-- at server start (cluster test registry.sh runs that). The view shows which, and how a
-- claim stands.
SELECT kind, number, state, holder, registry, since, message FROM snowflake_node_claims;

-- Giving numbers back and claiming again concern claimed numbers only.
SELECT snowflake_node_detach();
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_node_attach();
\echo :LAST_ERROR_SQLSTATE
-- ...and are not for everyone.
CREATE ROLE cl_nobody;
SET ROLE cl_nobody;
SELECT snowflake_node_detach();
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- gdid.authority = auto on a server started with a number: a server claims only what it
-- starts with, so auto takes a restart (55P02), and the number stays in force.
SET gdid.authority = auto;
\echo :LAST_ERROR_SQLSTATE
SHOW gdid.authority;
SELECT kind, number, state, message FROM snowflake_node_claims WHERE kind = 'gdid authority';
-- Written to the configuration files, auto waits for the next start: the number the server
-- started with stays in force, and the view says so.
ALTER SYSTEM SET gdid.authority = auto;
SELECT pg_reload_conf();
\set await 'current_setting(''gdid.authority'') = ''auto'''
\i :abs_srcdir/sql/await.psql
SELECT kind, number, state, message FROM snowflake_node_claims WHERE kind = 'gdid authority';
SELECT gdid_authority(gdid_next('claims', 'x')) AS authority;
ALTER SYSTEM RESET gdid.authority;
SELECT pg_reload_conf();
\set await 'current_setting(''gdid.authority'') = ''6'''
\i :abs_srcdir/sql/await.psql
SELECT gdid_authority(gdid_next('claims', 'x')) AS authority;
-- 'auto' is the only word: anything else is a plain decimal number or refused.
SET gdid.authority = 'AUTO';
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET snowflake.node_id = 'auto';
ALTER SYSTEM RESET snowflake.node_id;

-- The registry's side, in any database with the extension: numbers are claimed, renewed and
-- given back by the three functions the claiming servers call (only roles granted EXECUTE).
-- A claim takes the lowest number nobody holds...
SELECT number, era_floor FROM snowflake_registry_claim('node', 'regress', 'server a', 3, '10s', '12s');
SELECT number, era_floor FROM snowflake_registry_claim('node', 'regress', 'server b', 3, '10s', '12s');
-- ...and the same holder again (a restart) gets its own number back.
SELECT number, era_floor FROM snowflake_registry_claim('node', 'regress', 'server a', 3, '10s', '12s');
-- A renewal extends the holder's lease; another holder's renewal of it gets nothing.
SELECT lease_until > now() AS renewed FROM snowflake_registry_renew('node', 'regress', 'server a', 0, '10s', '12s');
SELECT lease_until IS NULL AS not_held FROM snowflake_registry_renew('node', 'regress', 'server b', 0, '10s', '12s');
-- Given back, a number comes free only after its lease and the hold (values its holder made
-- ahead of its clock), even with a zero hold.
SELECT snowflake_registry_release('node', 'regress', 'server b', 1, '1 hour');
SELECT snowflake_registry_release('node', 'regress', 'server b', 1, '1 hour') AS again;
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server c', 3, '10s', '12s');
-- Authorities: each new holder's gdids are of a later era than any earlier holder's.
SELECT number, era_floor FROM snowflake_registry_claim('authority', 'regress', 'server a', 15, '10s', '0s');
SELECT snowflake_registry_release('authority', 'regress', 'server a', 0, '0s');
SELECT number, era_floor FROM snowflake_registry_claim('authority', 'regress', 'server d', 15, '10s', '0s');
-- Every number held: the error names the holders.
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server d', 3, '10s', '12s');
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server e', 3, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
-- Groups are separate: the same numbers again.
SELECT number FROM snowflake_registry_claim('node', 'other', 'server e', 3, '10s', '12s');
SELECT kind, registry_group, number, holder, released, era_floor,
       reusable_after > now() AS not_reusable_yet
  FROM snowflake_registry ORDER BY kind, registry_group, number;
SELECT number FROM snowflake_registry_claim('machine', 'regress', 'server f', 3, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
-- Only the roles the registry's administrator grants it to may claim.
SET ROLE cl_nobody;
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server f', 3, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_registry;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DELETE FROM snowflake_registry;
DROP ROLE cl_nobody;
