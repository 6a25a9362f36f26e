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
  FROM snowflake_id_registry.snowflake_registry ORDER BY kind, registry_group, number;
SELECT number FROM snowflake_registry_claim('machine', 'regress', 'server f', 3, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
-- Every call's work is bounded (22023 at once): numbers beyond any layout's (node numbers
-- 0 .. 8191, authorities 0 .. 15), a lease or a hold below zero or beyond a day, a group name
-- beyond 255 bytes, a holder beyond 2048.
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server f', 2147483647, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server f', 8192, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
SELECT number FROM snowflake_registry_claim('authority', 'regress', 'server f', 16, '10s', '0s');
\echo :LAST_ERROR_SQLSTATE
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server f', -1, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server f', 3, '1000 years', '12s');
\echo :LAST_ERROR_SQLSTATE
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server f', 3, '10s', '-1s');
\echo :LAST_ERROR_SQLSTATE
SELECT number FROM snowflake_registry_claim('node', repeat('g', 256), 'server f', 3, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
SELECT number FROM snowflake_registry_claim('node', 'regress', repeat('h', 2049), 3, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
SELECT lease_until FROM snowflake_registry_renew('node', 'regress', 'server a', 0, '2 days', '12s');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_registry_release('node', 'regress', 'server a', 0, '1000 years');
\echo :LAST_ERROR_SQLSTATE
-- A release that names the end of the lease it gives back (as the claim or the last renewal
-- returned it, in Unix milliseconds) frees the number once the hold has passed from now: no
-- later claim or renewal of it reached the registry. Naming another (one did), it frees the
-- number only after the lease, as the release without it.
SELECT number AS early, (date_part('epoch', lease_until) * 1000)::int8 AS early_lease
  FROM snowflake_registry_claim('node', 'early', 'server g', 3, '1 hour', '2s') \gset
SELECT snowflake_registry_release('node', 'early', 'server g', :early, '2s', :early_lease);
SELECT number AS late FROM snowflake_registry_claim('node', 'early', 'server h', 3, '1 hour', '2s') \gset
SELECT snowflake_registry_release('node', 'early', 'server h', :late, '2s', 12345);
SELECT number, released, reusable_after < now() + interval '1 minute' AS free_within_seconds,
       reusable_after > now() + interval '59 minutes' AS free_after_the_lease
  FROM snowflake_id_registry.snowflake_registry WHERE registry_group = 'early' ORDER BY number;
-- Only the roles the registry's administrator grants it to may claim.
SET ROLE cl_nobody;
SELECT number FROM snowflake_registry_claim('node', 'regress', 'server f', 3, '10s', '12s');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_id_registry.snowflake_registry;
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_registry_release('node', 'early', 'server g', 0, '2s', 0);
\echo :LAST_ERROR_SQLSTATE
-- The function behind the view is everyone's, as the view: it shows them what the view does
-- (here, on a server with numbers written by hand, no claim at all).
SELECT kind, number, state, holder, registry, message FROM snowflake_node_claims_rows();
RESET ROLE;
DELETE FROM snowflake_id_registry.snowflake_registry;
DROP ROLE cl_nobody;
