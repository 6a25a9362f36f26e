-- The extension installs beside schemas named snowflake or gdid that are there already: a
-- user's (data synced from the Snowflake warehouse), or another extension's (pgEdge's
-- snowflake extension makes a schema snowflake). Its own schemas are then snowflake_seq and
-- snowflake_gdid_seq, and nothing of the user's is touched or read.
\set regress_db :DBNAME
CREATE DATABASE snowflake_coexistence;
\c snowflake_coexistence
CREATE SCHEMA snowflake;
CREATE TABLE snowflake.orders (id bigint PRIMARY KEY, item text);
INSERT INTO snowflake.orders VALUES (1, 'from the warehouse');
CREATE SEQUENCE snowflake.invoices_seq;
-- What pgEdge's snowflake extension puts there (its schema is not a member of it), in SQL: its
-- sequence, its nextval() and a decoder. (Its setting, snowflake.node: cluster coexistence.)
CREATE SEQUENCE snowflake.id_seq;
CREATE FUNCTION snowflake.nextval(regclass = 'snowflake.id_seq'::regclass) RETURNS int8
    LANGUAGE sql AS $$ SELECT pg_catalog.nextval($1) $$;
CREATE FUNCTION snowflake.get_node(int8) RETURNS int4
    LANGUAGE sql AS $$ SELECT (($1 >> 12) & 1023)::int4 $$;
CREATE SCHEMA gdid;
CREATE TABLE gdid."billing/invoices" (n int);
CREATE EXTENSION snowflake_id;
SELECT snowflake_sequence_schema(), gdid_sequence_schema();
SELECT n.nspname, e.extname IS NOT NULL AS the_extensions
  FROM pg_namespace n
  LEFT JOIN pg_depend d ON d.classid = 'pg_namespace'::regclass AND d.objid = n.oid AND d.deptype = 'e'
  LEFT JOIN pg_extension e ON e.oid = d.refobjid
 WHERE n.nspname IN ('snowflake', 'gdid', 'snowflake_seq', 'snowflake_gdid_seq') ORDER BY 1;
-- Names that the user's schemas also hold are the extension's own sequences.
CREATE TABLE orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'), item text);
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), item text);
INSERT INTO orders (item) VALUES ('tea') RETURNING snowflake_node(id) AS node;
INSERT INTO invoices (item) VALUES ('rent') RETURNING id;
SELECT snowflake_node(snowflake_next('invoices_seq')) AS node;
-- pgEdge's functions go on beside the extension's.
SELECT snowflake.nextval() AS pgedge_nextval, snowflake.get_node(snowflake_next('orders')) AS pgedge_decodes;
SELECT schemaname, sequencename FROM pg_sequences ORDER BY 1, 2;
SELECT name, relation FROM snowflake_sequences ORDER BY 1;
SELECT scope, sequence, relation FROM gdid_sequences;
SELECT * FROM snowflake.orders;
SELECT count(*) FROM gdid."billing/invoices";
-- A DEFAULT depends on the extension's sequence, and only its schema's sequences are kept from
-- renames while a DEFAULT names them; the user's are the user's.
SELECT pg_describe_object(classid, objid, objsubid) AS dependent,
       pg_describe_object(refclassid, refobjid, refobjsubid) AS on_sequence
  FROM pg_depend
 WHERE refobjid IN ('snowflake_seq.orders'::regclass, 'snowflake_gdid_seq."billing/invoices"'::regclass)
 ORDER BY 1;
ALTER SEQUENCE snowflake_seq.orders RENAME TO orders_renamed;
\echo :LAST_ERROR_SQLSTATE
ALTER SEQUENCE snowflake.invoices_seq RENAME TO invoices_seq2;
ALTER TABLE snowflake.orders RENAME TO orders2;
-- Messages name the schema the sequence is in.
CREATE TABLE snowflake_seq.not_a_sequence (n int);
SELECT snowflake_next('not_a_sequence');
\echo :LAST_ERROR_SQLSTATE
-- DROP EXTENSION takes its schemas (and, with CASCADE, what they hold), never the user's.
DROP EXTENSION snowflake_id CASCADE;
SELECT nspname FROM pg_namespace WHERE nspname IN ('snowflake', 'gdid', 'snowflake_seq', 'snowflake_gdid_seq') ORDER BY 1;
SELECT count(*) AS user_rows FROM snowflake.orders2;
\c :regress_db
DROP DATABASE snowflake_coexistence;
