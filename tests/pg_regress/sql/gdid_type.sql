-- The gdid type: a fixed 12-byte value, its text and binary forms, parts and casts.

-- Fixed length, int4 alignment, plain storage: no varlena header.
SELECT typlen, typalign, typstorage, typbyval, typcategory FROM pg_type WHERE typname = 'gdid';
SELECT pg_column_size(gdid(1293, 3, 57)) AS bytes;

-- Text is era:authority:counter in decimal (the Azos GDID form).
SELECT gdid(1293, 3, 57), gdid(1293, 3, 57)::text = '1293:3:57' AS reference;
SELECT '  1293:3:57  '::gdid AS surrounding_space, '0:0:0'::gdid AS zero,
       '4294967295:15:1152921504606846975'::gdid AS largest;
-- Whitespace around the value only, what int8's input takes (tabs, newlines, vertical tabs
-- too); inside it is malformed (22P02).
SELECT E'\t1:2:3\n'::gdid AS tabs_around, (chr(11) || '1:2:3' || chr(11))::gdid AS vertical_tabs;
SELECT '31 : 2:  3123'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT E'1\t:\n2:3'::gdid;
\echo :LAST_ERROR_SQLSTATE
-- ...or 24 hex digits (era then id, big-endian), with or without 0x, in either case.
SELECT '0x00000000100000000000004B'::gdid = gdid(0, 1, 75) AS reference,
       '0X00000000100000000000004b'::gdid = gdid(0, 1, 75) AS upper_prefix,
       '00000000100000000000004b'::gdid = gdid(0, 1, 75) AS no_prefix;
SELECT gdid_to_hex(gdid(2852170240, 15, 1)) = 'aa00aa00f000000000000001' AS reference,
       gdid_to_hex(gdid(0, 1, 75));

-- Malformed text: 22P02, naming the input.
SELECT '-1:2:3123'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '1::3'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '0x0000000010000000'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '1:2:3:4'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '+1:2:3'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '1:2:3 1'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '1: :3'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT ''::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '0x00000000100000000000004G'::gdid;
\echo :LAST_ERROR_SQLSTATE
-- Out of range: 22003, saying which part.
SELECT '1:18:3123'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '4294967296:0:1'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '0:0:1152921504606846976'::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '0:0:99999999999999999999999'::gdid;
\echo :LAST_ERROR_SQLSTATE

-- The constructor and the parts.
SELECT g, gdid_era(g), gdid_authority(g), gdid_counter(g)
  FROM (VALUES (gdid(1293, 3, 57)), (gdid(4294967295, 15, 1152921504606846975))) v(g);
SELECT gdid(-1, 0, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT gdid(4294967296, 0, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT gdid(0, 16, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT gdid(0, -1, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT gdid(0, 0, 1152921504606846976);
\echo :LAST_ERROR_SQLSTATE
SELECT gdid(NULL, 0, 0) IS NULL AS strict;

-- Casts: bytea (exactly 12 bytes, the binary form), text, and JSON as the text form.
SELECT gdid(1293, 3, 57)::bytea, '\x0000050d3000000000000039'::bytea::gdid;
SELECT '\x0000050d30000000000000'::bytea::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT '\x0000050d300000000000003900'::bytea::gdid;
\echo :LAST_ERROR_SQLSTATE
SELECT gdid(1293, 3, 57)::text, pg_typeof(gdid(1293, 3, 57)::text);
SELECT to_jsonb(gdid(1293, 3, 57)), to_json(gdid(0, 1, 75)),
       jsonb_build_object('id', gdid(7, 0, 1));
SELECT castsource::regtype, casttarget::regtype, castcontext, castmethod
  FROM pg_cast WHERE castsource = 'gdid'::regtype OR casttarget = 'gdid'::regtype
 ORDER BY castsource::regtype::text, casttarget::regtype::text;

-- Binary send/receive is the same 12 bytes. Binary COPY shows both directions: a bytea
-- column's 12 bytes load into a gdid column, and any other length is refused.
SELECT gdid_send(gdid(1293, 3, 57));
CREATE TABLE raw (b bytea);
INSERT INTO raw VALUES ('\x0000050d3000000000000039'), ('\xaa00aa00f000000000000001');
CREATE TABLE ids (id gdid);
\copy raw TO '/tmp/snowflake_id_regress_gdid.bin' (FORMAT binary)
\copy ids FROM '/tmp/snowflake_id_regress_gdid.bin' (FORMAT binary)
\copy ids TO '/tmp/snowflake_id_regress_gdid.bin' (FORMAT binary)
\copy raw FROM '/tmp/snowflake_id_regress_gdid.bin' (FORMAT binary)
SELECT * FROM ids;
SELECT b, count(*) FROM raw GROUP BY b ORDER BY b;
TRUNCATE raw;
INSERT INTO raw VALUES ('\x0000050d300000000000003900');
\copy raw TO '/tmp/snowflake_id_regress_gdid.bin' (FORMAT binary)
\copy ids FROM '/tmp/snowflake_id_regress_gdid.bin' (FORMAT binary)
\echo :LAST_ERROR_SQLSTATE
\! rm -f /tmp/snowflake_id_regress_gdid.bin

-- (catalog lists every function of the type with its volatility, parallel safety,
-- strictness and leakproofness.)
