-- A first migration runs in one transaction (Flyway's V1__init.sql, Alembic's first revision,
-- Django's 0001 with its data, psql -1 -f schema.sql): the extension, tables whose DEFAULTs
-- name new sequences, seed rows. The sequences are made by that transaction (a background
-- worker cannot see the extension's schemas before it commits), and generate at once.
\set regress_db :DBNAME
CREATE DATABASE snowflake_first_migration;
\c snowflake_first_migration
BEGIN;
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (
    id   snowflake PRIMARY KEY DEFAULT snowflake_next('orders'),
    item text NOT NULL
);
CREATE TABLE invoices (
    id   gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'),
    item text NOT NULL
);
INSERT INTO orders (item) VALUES ('tea'), ('cake')
    RETURNING item, snowflake_node(id) AS node, now() - snowflake_timestamp(id) < interval '1 minute' AS now;
INSERT INTO invoices (item) VALUES ('rent') RETURNING id, item;
COMMIT;
INSERT INTO invoices (item) VALUES ('water') RETURNING id, item;
SELECT count(*) AS orders, count(DISTINCT id) AS distinct_ids FROM orders;
-- The sequences are the migration's role's, depended on by the DEFAULTs, like any made later.
SELECT schemaname, sequencename, sequenceowner = current_user AS owned_by_the_migration
  FROM pg_sequences WHERE schemaname IN ('snowflake', 'gdid') ORDER BY 1;
SELECT pg_describe_object(classid, objid, objsubid) AS dependent, deptype
  FROM pg_depend WHERE refobjid IN ('snowflake.orders'::regclass, 'gdid."billing/invoices"'::regclass)
 ORDER BY 1;

-- The same migration rolled back after its IDs were returned, then run again: none of them is
-- handed out again. The sequences went with the transaction, but what they leased stays the
-- floor of their names while the server runs (docs/how-it-works.md: and across a restart).
CREATE DATABASE snowflake_first_migration_again;
\c snowflake_first_migration_again
BEGIN;
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), item text);
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), item text);
INSERT INTO orders (item) SELECT 'seed ' || i FROM generate_series(1, 20000) i;
SELECT max(id) AS last_order FROM orders \gset
INSERT INTO invoices (item) SELECT 'seed ' || i FROM generate_series(1, 3) i RETURNING id;
SELECT max(id) AS last_invoice FROM invoices \gset
ROLLBACK;
SELECT count(*) AS extensions FROM pg_extension WHERE extname = 'snowflake_id';
BEGIN;
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), item text);
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), item text);
INSERT INTO orders (item) VALUES ('again');
INSERT INTO invoices (item) VALUES ('again');
COMMIT;
SELECT min(id) > :last_order AS orders_above_the_rolled_back,
       (SELECT min(id) FROM invoices) > :'last_invoice' AS invoices_above_the_rolled_back
  FROM orders;

-- A rolled-back migration that drew a snowflake batch running ahead of the clock and a block
-- of gdids: the next sequences of the names start above every value handed out. And one
-- rolled back to a savepoint: the same, within the transaction.
CREATE DATABASE snowflake_first_migration_batch;
\c snowflake_first_migration_batch
BEGIN;
CREATE EXTENSION snowflake_id;
SELECT max(id) AS batch_last FROM snowflake_next_batch('orders', 100000) id \gset
SELECT max(g) AS block_last FROM gdid_next_block('billing', 'invoices', 5000) g \gset
ROLLBACK;
BEGIN;
CREATE EXTENSION snowflake_id;
SELECT snowflake_next('orders') > :batch_last AS above_the_batch,
       gdid_next('billing', 'invoices') > :'block_last' AS above_the_block;
SAVEPOINT s;
SELECT gdid_next('shop', 'carts') AS in_the_savepoint \gset
ROLLBACK TO SAVEPOINT s;
SELECT gdid_next('shop', 'carts') > :'in_the_savepoint' AS above_after_the_savepoint;
COMMIT;

-- A migration rolled back again and again (a test suite that rolls back after each test)
-- starts each time where the clock is: its name's floor is what it handed out, not the lease
-- it took (a window ahead of the clock), so the runs do not push it ahead, neither whole
-- rollbacks nor savepoints.
CREATE DATABASE snowflake_first_migration_again_and_again;
\c snowflake_first_migration_again_and_again
\set ECHO none
SELECT $m$BEGIN; CREATE EXTENSION snowflake_id;
  CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), item text);
  CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), item text);
  INSERT INTO orders (item) VALUES ('seed'); INSERT INTO invoices (item) VALUES ('seed'); ROLLBACK$m$
  FROM generate_series(1, 15) \gexec
\set ECHO all
BEGIN;
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), item text);
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), item text);
DO $$
BEGIN
    FOR i IN 1..15 LOOP
        BEGIN
            CREATE TABLE carts (id snowflake PRIMARY KEY DEFAULT snowflake_next('carts'));
            INSERT INTO carts DEFAULT VALUES;
            RAISE EXCEPTION 'roll back to the savepoint';
        EXCEPTION WHEN raise_exception THEN
        END;
    END LOOP;
END $$;
INSERT INTO orders (item) VALUES ('after 15 rollbacks');
INSERT INTO invoices (item) VALUES ('after 15 rollbacks') RETURNING id;
SELECT snowflake_timestamp(snowflake_next('carts')) - clock_timestamp() < interval '1 second' AS carts_near_the_clock;
COMMIT;
SELECT snowflake_timestamp(id) - clock_timestamp() < interval '1 second' AS near_the_clock FROM orders;

-- ALTER SEQUENCE ... RESTART in a migration: a sequence given new storage hands nothing out in
-- the transaction that restarted it (a rollback would bring the earlier lease back, below
-- what it handed out). Committed, the restarted sequence is fresh, and continues above the
-- keys its DEFAULT's column holds (the fallback), not from its START.
BEGIN;
ALTER SEQUENCE gdid."billing/invoices" RESTART;
INSERT INTO invoices (item) VALUES ('restarted');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
ALTER SEQUENCE gdid."billing/invoices" RESTART;
SELECT last_value IS NULL AS fresh FROM pg_sequences WHERE sequencename = 'billing/invoices';
INSERT INTO invoices (item) VALUES ('after the restart');
SELECT count(*) = count(DISTINCT id) AS all_distinct,
       max(id) = (SELECT id FROM invoices WHERE item = 'after the restart') AS the_new_one_is_last
  FROM invoices;

-- Only the transaction that made the extension counts as a first migration. A role that owns
-- its database, not the extension, rewrites the schema's catalog row with a GRANT that grants
-- nothing; its transaction still does not pass for one: a new name is made by the background
-- worker and committed at once (it outlives the rollback), and takes no floor of the names
-- that the server's first migrations share.
CREATE ROLE fm_owner;
CREATE DATABASE snowflake_first_migration_owned OWNER fm_owner;
\c snowflake_first_migration_owned
CREATE EXTENSION snowflake_id;
SET ROLE fm_owner;
BEGIN;
GRANT USAGE ON SCHEMA snowflake TO PUBLIC;
SELECT (SELECT xmin FROM pg_namespace WHERE nspname = 'snowflake')::text
       = pg_current_xact_id()::xid::text AS schema_row_rewritten;
SELECT snowflake_next('by_the_owner') > 0 AS generated;
SELECT (SELECT xmin FROM pg_class WHERE oid = 'snowflake.by_the_owner'::regclass)::text
       <> pg_current_xact_id()::xid::text AS made_by_the_worker;
ROLLBACK;
SELECT to_regclass('snowflake.by_the_owner') IS NOT NULL AS outlived_the_rollback;
RESET ROLE;

\c :regress_db
DROP DATABASE snowflake_first_migration;
DROP DATABASE snowflake_first_migration_again;
DROP DATABASE snowflake_first_migration_batch;
DROP DATABASE snowflake_first_migration_again_and_again;
DROP DATABASE snowflake_first_migration_owned;
DROP ROLE fm_owner;
