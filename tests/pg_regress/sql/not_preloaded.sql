-- Without shared_preload_libraries the extension can be created, but every function that
-- needs shared memory or the layout settings says how to fix it, and the session survives.
CREATE EXTENSION snowflake_id;
SET timezone = 'UTC';
SET datestyle = 'ISO';
SHOW shared_preload_libraries;
SELECT snowflake_next('orders');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_next_batch('orders', 10);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_timestamp(1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_node(1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_counter(1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_decode(1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_decode_jsonb(1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_timestamp(now());
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_to_uuid(1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_uuid('01942088-d2c0-7000-8000-000000000001');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_sequences;
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_watermark('orders');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_watermark('billing', 'invoices');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_watermark_holders;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM gdid_watermark_holders;
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE t (id snowflake PRIMARY KEY DEFAULT snowflake_next('t'));
INSERT INTO t DEFAULT VALUES;
\echo :LAST_ERROR_SQLSTATE
-- The connection is still there, and decoders of named layouts need no shared memory.
SELECT * FROM snowflake_decode(175928847299117063, 'discord');
-- Nor the text forms, the UUIDs of named layouts and of gdids, and <@.
SELECT snowflake_to_base32(1), snowflake_from_base62('00000000001'),
       snowflake_to_uuid(175928847299117063, 'discord'), gdid_to_uuid('1:2:3'),
       1::snowflake <@ '[1,2)'::int8range AS contained;
-- The gdid type needs no shared memory either; its generator does.
SELECT gdid(1293, 3, 57), '0x00000000100000000000004B'::gdid;
SELECT gdid_next('billing', 'invoices');
\echo :LAST_ERROR_SQLSTATE
