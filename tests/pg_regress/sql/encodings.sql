-- Names and input text are bytes in the database's encoding, which need not be UTF-8. Every
-- function takes them as they are; messages quote them and views show them unchanged. Each
-- database below is read and written by a UTF-8 client, so PostgreSQL converts both ways, as
-- for any application. (This file creates sequences in other databases: it runs before
-- limits, which fills the shared table.)
\set regress_db :DBNAME
CREATE DATABASE snowflake_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
CREATE DATABASE snowflake_sql_ascii ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
CREATE DATABASE snowflake_euc_jp ENCODING 'EUC_JP' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;

-- LATIN1: 'café' is four bytes here.
\c snowflake_latin1
\encoding UTF8
CREATE EXTENSION snowflake_id;
SELECT snowflake_next('café') > 0 AS generated;
SELECT count(*) FROM snowflake_next_batch('café', 3);
SELECT gdid_next('café', 'crème');
SELECT * FROM gdid_next_block('café', 'crème', 2);
SELECT gdid_advance('café', 'crème', gdid(0, 0, 100));
SELECT gdid_next('café', 'crème');
SELECT name, issued FROM snowflake_sequences;
SELECT scope, sequence, last_counter FROM gdid_sequences;
-- 63 characters are 63 bytes in LATIN1, so this name fits; 64 do not, and the message
-- quotes the name as written.
SELECT snowflake_next(repeat('é', 63)) > 0 AS fits;
SELECT snowflake_next(repeat('é', 64));
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next('café', repeat('è', 64));
\echo :LAST_ERROR_SQLSTATE
SELECT 'café'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '1:2:3é'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_timestamp(1, 'café');
\echo :LAST_ERROR_SQLSTATE
-- Seeding reads tables whose schema, table and column names are not ASCII: the queries are
-- built and run in the database's encoding. The first insert seeds both sequences; keys of
-- this server stored ahead are then continued above once the sequences are met again.
CREATE SCHEMA schéma;
CREATE TABLE schéma.café (prénom snowflake PRIMARY KEY DEFAULT snowflake_next('commandes'),
                          reçu gdid UNIQUE DEFAULT gdid_next('café', 'reçus'));
INSERT INTO schéma.café DEFAULT VALUES;
INSERT INTO schéma.café VALUES (snowflake_from_timestamp(now() + interval '2 s') + 4096 * 5 + 7,
                                gdid(0, 6, 500));
SELECT snowflake_drop_sequence('commandes'), gdid_drop_sequence('café', 'reçus');
INSERT INTO schéma.café DEFAULT VALUES RETURNING reçu;
SELECT count(*) AS keys,
       max(prénom) = (SELECT prénom + 1 FROM schéma.café WHERE reçu = '0:6:500') AS continued
  FROM schéma.café;
-- An error PostgreSQL raises while seeding keeps the names' bytes (and says what it read).
CREATE ROLE encodings_owner;
GRANT CREATE, USAGE ON SCHEMA schéma TO encodings_owner;
SET ROLE encodings_owner;
CREATE TABLE schéma.caché (id bigint DEFAULT snowflake_next('caché'));
ALTER TABLE schéma.caché ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
RESET ROLE;
\set VERBOSITY terse
SELECT snowflake_next('caché');
\set VERBOSITY default
DROP SCHEMA schéma CASCADE;
DROP ROLE encodings_owner;

-- SQL_ASCII: bytes above 127 have no meaning to PostgreSQL and pass through untouched. The
-- byte E9 below is not valid UTF-8; messages are shown with their bytes escaped.
\c snowflake_sql_ascii
\encoding UTF8
CREATE EXTENSION snowflake_id;
SELECT snowflake_next(convert_from('\x636166e9', 'SQL_ASCII')) > 0 AS generated;
SELECT count(*) FROM snowflake_next_batch(convert_from('\x636166e9', 'SQL_ASCII'), 3);
SELECT gdid_next(convert_from('\x636166e9', 'SQL_ASCII'), 'x');
SELECT count(*) FROM gdid_next_block(convert_from('\x636166e9', 'SQL_ASCII'), 'x', 2);
SELECT gdid_advance(convert_from('\x636166e9', 'SQL_ASCII'), 'x', gdid(0, 0, 100));
SELECT encode(convert_to(name, 'SQL_ASCII'), 'hex') AS name FROM snowflake_sequences;
SELECT encode(convert_to(scope, 'SQL_ASCII'), 'hex') AS scope, last_counter FROM gdid_sequences;
CREATE FUNCTION show_error(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || encode(convert_to(SQLERRM, 'SQL_ASCII'), 'escape');
END $$;
SELECT show_error(format('SELECT %L::gdid', convert_from('\x636166e9', 'SQL_ASCII')));
SELECT show_error(format('SELECT snowflake_next(%L)', convert_from(('\x' || repeat('e9', 64))::bytea, 'SQL_ASCII')));
SELECT show_error(format('SELECT snowflake_node(1, %L)', convert_from('\x636166e9', 'SQL_ASCII')));
-- Seeding a table whose name has the byte E9: the third key continues right above the key
-- stored ahead.
DO $$
DECLARE
    t text := convert_from('\x636166e9', 'SQL_ASCII');
    ok boolean;
BEGIN
    EXECUTE format('CREATE TABLE %I (id snowflake PRIMARY KEY DEFAULT snowflake_next(%L))',
                   t, 'ascii_orders');
    EXECUTE format('INSERT INTO %I DEFAULT VALUES', t);
    EXECUTE format('INSERT INTO %I VALUES (snowflake_from_timestamp(now() + interval ''2 s'') + 4096 * 5 + 7)', t);
    PERFORM snowflake_drop_sequence('ascii_orders');
    COMMIT;  -- a drop takes effect at commit
    EXECUTE format('INSERT INTO %I DEFAULT VALUES', t);
    EXECUTE format('SELECT count(*) = 3 AND max(id) - 1 IN (SELECT id FROM %I) FROM %I', t, t) INTO ok;
    RAISE NOTICE 'continued above the stored key: %', ok;
END $$;

-- EUC_JP: a message quoting Japanese text must be EUC_JP for PostgreSQL to convert it for
-- the client (a UTF-8 replacement character would make the conversion fail instead).
\c snowflake_euc_jp
\encoding UTF8
CREATE EXTENSION snowflake_id;
SELECT snowflake_next('注文') > 0 AS generated;
SELECT gdid_next('請求', '書');
SELECT '日本:1:2'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_next(repeat('注', 32));
\echo :LAST_ERROR_SQLSTATE
SELECT name FROM snowflake_sequences;
SELECT scope, sequence FROM gdid_sequences;
CREATE TABLE 注文 (番号 snowflake PRIMARY KEY DEFAULT snowflake_next('注文'),
                   請求 gdid UNIQUE DEFAULT gdid_next('請求', '書'));
INSERT INTO 注文 VALUES (snowflake_from_timestamp(now() + interval '2 s') + 4096 * 5 + 7, gdid(0, 6, 700));
SELECT snowflake_drop_sequence('注文'), gdid_drop_sequence('請求', '書');
INSERT INTO 注文 DEFAULT VALUES RETURNING 請求;
SELECT max(番号) = (SELECT 番号 + 1 FROM 注文 WHERE 請求 = '0:6:700') AS continued FROM 注文;

\c :regress_db
DROP DATABASE snowflake_latin1;
DROP DATABASE snowflake_sql_ascii;
DROP DATABASE snowflake_euc_jp;
