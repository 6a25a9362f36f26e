-- Every named sequence is a PostgreSQL sequence: snowflake_next('x') generates from the
-- sequence snowflake.x, gdid_next('s', 'x') from gdid."s/x". Its value is its durable lease;
-- shared memory only caches what generating needs between two lease extensions.
SHOW snowflake.node_id;
SHOW gdid.authority;

-- The first use of a name makes the sequence, in a transaction of its own (a background
-- worker's): rolled back, the transaction that used it first keeps it, and what it handed
-- out is never handed out again.
BEGIN;
SELECT gdid_next('lc', 'rolled_back'), snowflake_next('lc_rolled_back') > 0 AS generated;
ROLLBACK;
SELECT gdid_next('lc', 'rolled_back') AS after_the_rollback;
SELECT schemaname, sequencename, sequenceowner, data_type, increment_by, min_value, max_value,
       start_value, cache_size, cycle
  FROM pg_sequences WHERE schemaname IN ('snowflake', 'gdid') AND sequencename LIKE '%rolled_back'
 ORDER BY 1;
-- A snowflake sequence's value is the end of its lease as a Unix millisecond (no ID of that
-- millisecond or later was handed out); its bounds are its layout's time range (MINVALUE the
-- epoch) and its increment the node bits it was made with. A gdid sequence's value is its
-- lease: in era 0, the first counter not covered.
SELECT to_timestamp(last_value / 1000.0) > snowflake_timestamp(snowflake_next('lc_rolled_back'))
       AS lease_beyond_the_last_id,
       to_timestamp(min_value / 1000.0) AT TIME ZONE 'UTC' AS epoch_utc, increment_by AS node_bits
  FROM pg_sequences WHERE schemaname = 'snowflake' AND sequencename = 'lc_rolled_back';
SELECT last_value > 2 AS lease_beyond_counter_2 FROM gdid."lc/rolled_back";

-- A DEFAULT that names a sequence by a constant makes it (if it is new) and depends on it, as
-- a DEFAULT nextval('s'::regclass) does: DROP SEQUENCE is refused while the DEFAULT exists
-- (2BP01), and with CASCADE takes the DEFAULT with it.
CREATE TABLE lc_orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('lc_orders'),
                        g gdid UNIQUE DEFAULT gdid_next('lc', 'orders'));
SELECT pg_describe_object(classid, objid, objsubid) AS dependent,
       pg_describe_object(refclassid, refobjid, refobjsubid) AS on_sequence, deptype
  FROM pg_depend
 WHERE refobjid IN ('snowflake.lc_orders'::regclass, 'gdid."lc/orders"'::regclass)
 ORDER BY 1;
DROP SEQUENCE snowflake.lc_orders;
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_drop_sequence('lc_orders');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_drop_sequence('lc', 'orders');
\echo :LAST_ERROR_SQLSTATE
-- DROP is transactional: rolled back, the sequence and its default are back.
BEGIN;
DROP SEQUENCE snowflake.lc_orders CASCADE;
SELECT to_regclass('snowflake.lc_orders') IS NULL AS gone;
ROLLBACK;
INSERT INTO lc_orders DEFAULT VALUES;
SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM lc_orders;

-- A sequence that a DEFAULT names keeps its name: the DEFAULT would then name a new, fresh
-- sequence. Renaming it takes dropping the DEFAULT first, in one transaction.
ALTER SEQUENCE snowflake.lc_orders RENAME TO lc_orders_renamed;
\echo :LAST_ERROR_SQLSTATE
ALTER SEQUENCE gdid."lc/orders" SET SCHEMA public;
\echo :LAST_ERROR_SQLSTATE
SELECT max(id) AS before_rename FROM lc_orders \gset
BEGIN;
ALTER TABLE lc_orders ALTER COLUMN id DROP DEFAULT;
ALTER SEQUENCE snowflake.lc_orders RENAME TO lc_orders_renamed;
ALTER TABLE lc_orders ALTER COLUMN id SET DEFAULT snowflake_next('lc_orders_renamed');
COMMIT;
INSERT INTO lc_orders DEFAULT VALUES;
SELECT count(*) AS rows, count(DISTINCT id) AS ids,
       max(id) > :before_rename AS continued FROM lc_orders;
-- A sequence no DEFAULT names renames as any sequence; the new name generates from it.
SELECT gdid_next('lc', 'free') AS before_rename;
ALTER SEQUENCE gdid."lc/free" RENAME TO "lc/free_renamed";
SELECT gdid_next('lc', 'free_renamed') AS after_rename;

-- A name whose sequence was dropped makes a new one at its next use, as CREATE SEQUENCE after
-- DROP SEQUENCE does: it starts afresh, above the keys stored in the columns of the DEFAULTs
-- that name it (see fallback), not above what the dropped one handed out elsewhere.
SELECT gdid_next('lc', 'dropped') AS first, gdid_next('lc', 'dropped') AS second;
SELECT gdid_drop_sequence('lc', 'dropped');
SELECT gdid_next('lc', 'dropped') AS after_the_drop;

-- A sequence made by hand in the current transaction hands nothing out before it commits:
-- the values would come back if the transaction rolled back and the sequence were made again.
-- (Only a transaction that made the extension too generates from the sequences it makes:
-- first_migration.)
BEGIN;
CREATE SEQUENCE snowflake.lc_by_hand AS bigint INCREMENT 10 MINVALUE 1735689600000
    MAXVALUE 3934712855552 START 1735689600000;
SELECT snowflake_next('lc_by_hand');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- A sequence given new storage by ALTER SEQUENCE ... RESTART in the current transaction hands
-- nothing out before it commits: a rollback would bring its earlier lease back, below what it
-- handed out.
BEGIN;
ALTER SEQUENCE gdid."lc/rolled_back" RESTART;
SELECT gdid_next('lc', 'rolled_back');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT gdid_next('lc', 'rolled_back') AS unchanged;

-- What the schemas hold is checked: a sequence made by hand with another definition, an
-- unlogged one, a relation that is no sequence, one made under another layout.
CREATE SEQUENCE snowflake.lc_plain;
SELECT snowflake_next('lc_plain');
\echo :LAST_ERROR_SQLSTATE
CREATE UNLOGGED SEQUENCE gdid."lc/unlogged" MINVALUE 0 START 0;
SELECT gdid_next('lc', 'unlogged');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE snowflake.lc_table (id bigint);
SELECT snowflake_next('lc_table');
\echo :LAST_ERROR_SQLSTATE
-- Epoch 2024-01-01 and 10 node bits: made under another layout than the server's.
CREATE SEQUENCE snowflake.lc_old_layout AS bigint INCREMENT 10 MINVALUE 1704067200000
    MAXVALUE 3903090455552 START 1704067200000;
SELECT snowflake_next('lc_old_layout');
\echo :LAST_ERROR_SQLSTATE
-- A watermark of them says the same as the generators (up to 0.4.0: 42P01, "does not exist").
SELECT snowflake_watermark('lc_plain');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_watermark('lc', 'unlogged');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_watermark('lc_table');
\echo :LAST_ERROR_SQLSTATE
DROP SEQUENCE snowflake.lc_plain, snowflake.lc_old_layout, gdid."lc/unlogged";
DROP TABLE snowflake.lc_table;

-- Names: at most 63 bytes (a gdid scope and sequence together, with the / between them and
-- a / or % of the scope written %2F or %25), never empty. A name too long is quoted up to its
-- first 63 bytes.
SELECT gdid_next('a/b', 'c') AS made, gdid_next('50%', 'd') AS made;
SELECT relname FROM pg_class
 WHERE relnamespace = 'gdid'::regnamespace AND (relname LIKE 'a%' OR relname LIKE '50%') ORDER BY 1;
SELECT snowflake_next('');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_drop_sequence(repeat('x', 100000));
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next(repeat('s', 40), repeat('q', 40));
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next('lc', repeat('y', 100000));
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_node(1, repeat('z', 100000));
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_drop_sequence('no such sequence') AS dropped;

-- Generators write (the lease), so, as nextval, they refuse in a read-only transaction.
BEGIN READ ONLY;
SELECT snowflake_next('lc_orders_renamed');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
DROP TABLE lc_orders;
