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
-- Sequences, schemas, tables and columns with names that are not ASCII: each sequence is a
-- relation named by its name's bytes. Keys of this server stored ahead, before the DEFAULT
-- named new sequences, are continued above (the fallback of a fresh sequence).
CREATE SCHEMA schéma;
CREATE TABLE schéma.café (prénom snowflake PRIMARY KEY, reçu gdid UNIQUE);
INSERT INTO schéma.café VALUES (snowflake_from_timestamp(now() + interval '2 s') + 4096 * 5 + 7,
                                gdid(0, 6, 500));
ALTER TABLE schéma.café ALTER COLUMN prénom SET DEFAULT snowflake_next('commandes_é'),
                        ALTER COLUMN reçu SET DEFAULT gdid_next('café', 'reçus');
SELECT relname FROM pg_class WHERE relnamespace IN ('snowflake'::regnamespace, 'gdid'::regnamespace)
   AND relname IN ('commandes_é', 'café/reçus') ORDER BY 1;
INSERT INTO schéma.café DEFAULT VALUES RETURNING reçu;
SELECT count(*) AS keys,
       snowflake_timestamp(max(prénom)) - snowflake_timestamp(min(prénom)) AS after_the_stored
  FROM schéma.café;
-- An error the background worker that makes a sequence meets keeps the names' bytes on
-- its way back (here, a type of that name is in the way).
CREATE TYPE snowflake.caché AS ENUM ('x');
SELECT snowflake_next('caché');
\echo :LAST_ERROR_SQLSTATE
DROP TYPE snowflake.caché;
-- And a role without the right to make a sequence is told which, in LATIN1.
CREATE ROLE encodings_user;
SET ROLE encodings_user;
SELECT gdid_next('café', 'reçus_neuf');
RESET ROLE;
DROP ROLE encodings_user;
DROP SCHEMA schéma CASCADE;

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
-- UTF-8 text in a SQL_ASCII database, for a UTF-8 client: every byte is a character to the
-- server, but a message never quotes half of a UTF-8 sequence, which the conversion for the
-- client would refuse (22021 instead of the error).
SELECT snowflake_from_base32('0000000000é00');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_next(repeat('é', 40));
\echo :LAST_ERROR_SQLSTATE
-- A table whose name has the byte E9, with a key stored ahead before its DEFAULT names a new
-- sequence: the next key follows the stored one.
DO $$
DECLARE
    t text := convert_from('\x636166e9', 'SQL_ASCII');
    ok boolean;
BEGIN
    EXECUTE format('CREATE TABLE %I (id snowflake PRIMARY KEY)', t);
    EXECUTE format('INSERT INTO %I VALUES (snowflake_from_timestamp(now() + interval ''2 s'') + 4096 * 5 + 7)', t);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id SET DEFAULT snowflake_next(%L)', t, t || '_keys');
    EXECUTE format('INSERT INTO %I DEFAULT VALUES', t);
    EXECUTE format('SELECT count(*) = 2 AND snowflake_timestamp(max(id)) - snowflake_timestamp(min(id)) = interval ''1 ms'' FROM %I', t) INTO ok;
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
CREATE TABLE 注文 (番号 snowflake PRIMARY KEY, 請求 gdid UNIQUE);
INSERT INTO 注文 VALUES (snowflake_from_timestamp(now() + interval '2 s') + 4096 * 5 + 7, gdid(0, 6, 700));
ALTER TABLE 注文 ALTER COLUMN 番号 SET DEFAULT snowflake_next('注文の番号'),
                 ALTER COLUMN 請求 SET DEFAULT gdid_next('請求', '新しい書');
INSERT INTO 注文 DEFAULT VALUES RETURNING 請求;
SELECT snowflake_timestamp(max(番号)) - snowflake_timestamp(min(番号)) AS after_the_stored FROM 注文;

\c :regress_db
DROP DATABASE snowflake_latin1;
DROP DATABASE snowflake_sql_ascii;
DROP DATABASE snowflake_euc_jp;
