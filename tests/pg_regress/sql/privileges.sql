-- Who may do what with a sequence is PostgreSQL's own privileges on its relation (see
-- lifecycle): its owner, USAGE and UPDATE, the CREATE privilege on its schema, the table
-- privileges of a DEFAULT that generates from it.
CREATE ROLE pv_owner;
CREATE ROLE pv_user;
CREATE ROLE pv_inserter;
CREATE ROLE pv_stranger;
GRANT CREATE ON SCHEMA public TO pv_owner, pv_stranger;

-- A new name takes CREATE on its schema (the database's owner has it; any other role only
-- when granted), and the role that made it owns it.
SET ROLE pv_stranger;
SELECT snowflake_next('pv_new');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT CREATE ON SCHEMA snowflake, gdid TO pv_owner;
SET ROLE pv_owner;
CREATE TABLE pv_orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('pv_orders'),
                        g gdid DEFAULT gdid_next('pv', 'orders'), note text);
RESET ROLE;
SELECT schemaname, sequencename, sequenceowner FROM pg_sequences
 WHERE sequencename IN ('pv_orders', 'pv/orders') ORDER BY 1;

-- Generating takes USAGE (or UPDATE) on the sequence, as nextval does...
SET ROLE pv_user;
SELECT snowflake_next('pv_orders');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE pv_owner;
GRANT USAGE ON SEQUENCE snowflake.pv_orders TO pv_user;
RESET ROLE;
SET ROLE pv_user;
SELECT snowflake_next('pv_orders') > 0 AS generated;
SELECT gdid_next('pv', 'orders');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- ...or the right to insert into a table whose DEFAULT generates from it, as an identity
-- column needs nothing more (the whole table, or any of its columns).
SET ROLE pv_owner;
GRANT INSERT (note) ON pv_orders TO pv_inserter;
RESET ROLE;
SET ROLE pv_inserter;
INSERT INTO pv_orders (note) VALUES ('by the inserter');
SELECT gdid_next('pv', 'orders') IS NOT NULL AS generated;
RESET ROLE;
SELECT note, g FROM pv_orders;
-- A REVOKE takes effect at the next statement.
SET ROLE pv_owner;
REVOKE INSERT (note) ON pv_orders FROM pv_inserter;
RESET ROLE;
SET ROLE pv_inserter;
SELECT gdid_next('pv', 'orders');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- Making a DEFAULT that generates from a sequence takes USAGE or UPDATE on it (or owning it):
-- the DEFAULT lets every role that may insert into the table generate from it.
SET ROLE pv_stranger;
CREATE TABLE pv_mine (id bigint DEFAULT snowflake_next('pv_orders'));
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE pv_mine (id gdid);
ALTER TABLE pv_mine ALTER COLUMN id SET DEFAULT gdid_next('pv', 'orders');
\echo :LAST_ERROR_SQLSTATE
CREATE DOMAIN pv_dom AS bigint DEFAULT snowflake_next('pv_orders');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE pv_mine;
RESET ROLE;

-- A domain's DEFAULT speaks for the roles that vouch for it: a role that puts another's
-- domain in a table of its own neither generates through it (it could not have written that
-- DEFAULT on the column itself) nor moves the sequence by the keys it stores there, however
-- far ahead (a fresh sequence's fallback does not read them).
SET ROLE pv_owner;
CREATE DOMAIN pv_fresh_dom AS bigint DEFAULT snowflake_next('pv_fresh');
CREATE DOMAIN pv_fresh_gdom AS gdid DEFAULT gdid_next('pv', 'fresh');
RESET ROLE;
SET ROLE pv_stranger;
CREATE TABLE pv_theirs (id pv_fresh_dom PRIMARY KEY, g pv_fresh_gdom UNIQUE);
INSERT INTO pv_theirs VALUES (9223372036854775807, '4294967295:6:1152921504606846975');
INSERT INTO pv_theirs (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO pv_theirs (g) VALUES ('0:6:5');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE pv_owner;
SELECT snowflake_timestamp(snowflake_next('pv_fresh')) < now() + interval '1 hour' AS not_moved;
SELECT gdid_next('pv', 'fresh') < '1:0:0'::gdid AS not_moved;
-- Neither does a DEFAULT that only holds the sequence as a regclass constant: PostgreSQL
-- records its dependency on the sequence as well, but writing it took no privilege on it.
CREATE TABLE pv_owned2 (id bigint PRIMARY KEY DEFAULT snowflake_next('pv_fresh2'));
RESET ROLE;
SET ROLE pv_stranger;
CREATE TABLE pv_regclass (id bigint PRIMARY KEY
    DEFAULT (CASE WHEN 'snowflake.pv_fresh2'::regclass IS NULL THEN 0 END));
INSERT INTO pv_regclass VALUES (snowflake_from_timestamp('2090-01-01+00') + (5 << 12));
SELECT snowflake_next('pv_fresh2');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE pv_owner;
INSERT INTO pv_owned2 DEFAULT VALUES RETURNING snowflake_timestamp(id) < now() + interval '1 hour' AS not_moved;
-- Nor does such a DEFAULT keep the sequence's owner from renaming it, as one that generates
-- from it does (2BP01).
SELECT snowflake_next('pv_solo') > 0 AS generated;
RESET ROLE;
SET ROLE pv_stranger;
CREATE TABLE pv_regclass2 (x int DEFAULT (CASE WHEN 'snowflake.pv_solo'::regclass IS NULL THEN 0 END));
RESET ROLE;
SET ROLE pv_owner;
ALTER SEQUENCE snowflake.pv_solo RENAME TO pv_solo2;
ALTER SEQUENCE snowflake.pv_fresh2 RENAME TO pv_fresh2b;
\echo :LAST_ERROR_SQLSTATE
-- Its owner's own table counts, as a column's own DEFAULT does.
CREATE TABLE pv_owned (id pv_fresh_dom PRIMARY KEY);
INSERT INTO pv_owned DEFAULT VALUES;
RESET ROLE;
SELECT count(*) AS inserted FROM pv_owned;
DROP TABLE pv_theirs, pv_owned, pv_owned2, pv_regclass, pv_regclass2;

-- Moving a sequence on takes UPDATE on it, as setval does; dropping it takes owning it, as
-- DROP SEQUENCE does.
SET ROLE pv_user;
SELECT gdid_advance('pv', 'orders', gdid(0, 0, 1000));
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_drop_sequence('pv_orders');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE pv_owner;
GRANT UPDATE ON SEQUENCE gdid."pv/orders" TO pv_user;
RESET ROLE;
SET ROLE pv_user;
SELECT gdid_advance('pv', 'orders', gdid(0, 0, 1000));
RESET ROLE;
SET ROLE pv_owner;
SELECT gdid_next('pv', 'orders') AS after_the_advance;
RESET ROLE;

-- The monitoring views show the state of a sequence to the roles that may read it (SELECT
-- or USAGE), as pg_sequences shows last_value; its name and layout to everyone.
SET ROLE pv_stranger;
SELECT name, layout, issued IS NULL AS state_hidden, lease_until IS NULL AS lease_hidden
  FROM snowflake_sequences WHERE name = 'pv_orders';
RESET ROLE;
SET ROLE pv_user;
SELECT name, layout, issued > 0 AS state_shown FROM snowflake_sequences WHERE name = 'pv_orders';
RESET ROLE;

-- A role that cannot log in (a group role, the owner of a SECURITY DEFINER function) makes
-- sequences as well: the function's owner makes and owns it.
CREATE ROLE pv_group NOLOGIN;
GRANT CREATE ON SCHEMA snowflake TO pv_group;
CREATE FUNCTION pv_definer() RETURNS bigint SECURITY DEFINER LANGUAGE sql
    RETURN snowflake_next('pv_by_definer');
ALTER FUNCTION pv_definer() OWNER TO pv_group;
SET ROLE pv_stranger;
SELECT pv_definer() > 0 AS generated;
RESET ROLE;
SELECT sequenceowner FROM pg_sequences WHERE sequencename = 'pv_by_definer';

-- Within a security-restricted operation (a maintenance command running functions of a
-- table's owner) no sequence is made.
CREATE TABLE pv_src (x int);
INSERT INTO pv_src VALUES (1);
CREATE FUNCTION pv_in_maintenance(x int) RETURNS bigint LANGUAGE sql
    RETURN snowflake_next('pv_in_maintenance') + x;
CREATE MATERIALIZED VIEW pv_mv AS SELECT pv_in_maintenance(x) FROM pv_src WITH NO DATA;
REFRESH MATERIALIZED VIEW pv_mv;
\echo :LAST_ERROR_SQLSTATE

DROP MATERIALIZED VIEW pv_mv;
DROP TABLE pv_src, pv_orders;
DROP FUNCTION pv_in_maintenance(int), pv_definer();
DROP SEQUENCE snowflake.pv_by_definer;
REVOKE CREATE ON SCHEMA snowflake, gdid FROM pv_owner, pv_group;
REVOKE CREATE ON SCHEMA public FROM pv_owner, pv_stranger;
DROP OWNED BY pv_owner, pv_user, pv_inserter;
DROP ROLE pv_owner, pv_user, pv_inserter, pv_stranger, pv_group;
