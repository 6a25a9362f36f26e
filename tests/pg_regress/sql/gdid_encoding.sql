-- Byte encodings of gdid: the compact, order-preserving form and Azos SlimWriter's LEB128.

-- Compact: era code, then authority << 4 | counter length, then the counter (docs/functions.md).
SELECT g, gdid_compress(g) AS compact, length(gdid_compress(g)) AS bytes,
       gdid_decompress(gdid_compress(g)) = g AS round_trip
  FROM (VALUES (gdid(0, 0, 0)), (gdid(1, 2, 3)), (gdid(127, 15, 16777215)), (gdid(128, 0, 1)),
               (gdid(1293, 3, 57)), (gdid(4294967295, 15, 1152921504606846975))) v(g);
-- At most 5 bytes whenever era < 128 and counter < 2^24, for every authority.
SELECT max(length(gdid_compress(gdid(e, a, c)))) AS longest
  FROM generate_series(0, 127, 9) e, generate_series(0, 15) a,
       unnest(ARRAY[0, 1, 255, 256, 65535, 65536, 16777215]) c;
-- Order-preserving: bytewise order of the encodings is gdid order.
SELECT bool_and(gdid_compress(a) < gdid_compress(b)) AS order_kept
  FROM (SELECT g AS a, lead(g) OVER (ORDER BY g) AS b
          FROM (SELECT gdid(e, a, c) AS g
                  FROM generate_series(0, 20000, 997) e, generate_series(0, 15, 5) a,
                       unnest(ARRAY[0, 5, 255, 256, 70000, 1152921504606846975]) c) s) p
 WHERE b IS NOT NULL;
-- ...so compressed values can be indexed and range-scanned like the gdids themselves.
CREATE TABLE packed (k bytea PRIMARY KEY);
INSERT INTO packed SELECT gdid_compress(gdid(1, 1, c)) FROM generate_series(1, 1000) c;
SELECT count(*) FROM packed
 WHERE k >= gdid_compress(gdid(1, 1, 100)) AND k < gdid_compress(gdid(1, 1, 200));

-- Canonical: anything but the one encoding of a gdid is refused (22P03).
SELECT gdid_decompress('\x');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_decompress('\x0103');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_decompress('\x010000');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_decompress('\x800500');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_decompress('\x010100');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_decompress('\xf800');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_decompress('\x01081000000000000000');
\echo :LAST_ERROR_SQLSTATE

-- LEB128(era) then LEB128(id), byte for byte what Azos SlimWriter writes.
SELECT g, gdid_to_leb128(g) AS leb128, gdid_from_leb128(gdid_to_leb128(g)) = g AS round_trip
  FROM (VALUES (gdid(0, 0, 0)), (gdid(1, 1, 75)), (gdid(1293, 3, 57)),
               (gdid(4294967295, 15, 1152921504606846975))) v(g);
SELECT gdid_from_leb128('\x01');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_from_leb128('\x818000');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_from_leb128('\x000000');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_from_leb128('\x808080801000');
\echo :LAST_ERROR_SQLSTATE
