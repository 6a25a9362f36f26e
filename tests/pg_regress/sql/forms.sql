-- IDs outside the database: short text forms of snowflake IDs (Crockford base32, base62),
-- snowflake IDs as UUIDv7, gdids as UUIDv8. Fixed width, so that text order (COLLATE "C")
-- and UUID order are ID order.
SET timezone = 'UTC';
SET datestyle = 'ISO';

-- Text forms: 13 characters of base32, 11 of base62, padded with the zero digit.
SELECT id, snowflake_to_base32(id) AS base32, snowflake_to_base62(id) AS base62
  FROM (VALUES (0::bigint), (1), (31), (32), (61), (62), (383233962442493957),
               (9223372036854775807)) v(id);
-- The ULID specification's examples: ulid(1469918176385) begins 01ARYZ6S41 (its example ULID
-- 01ARYZ6S41TSV4RRFFQ69G5FAV), and the largest time of a ULID, 2^48 - 1 ms, is 7ZZZZZZZZZ.
SELECT snowflake_from_base32('00001ARYZ6S41') AS ulid_example_ms,
       snowflake_to_base32(1469918176385) AS ulid_example_text,
       snowflake_from_base32('0007ZZZZZZZZZ') = 2^48 - 1 AS ulid_largest_time,
       snowflake_from_base32('7ZZZZZZZZZZZZ') AS largest;
-- Crockford's reading: either case; I and L are 1; O is 0.
SELECT snowflake_from_base32('0amc588jm0405') AS lower_case,
       snowflake_from_base32('0AMC588JM0405') AS upper_case,
       snowflake_from_base32('0000000000IL0') = snowflake_from_base32('0000000000110') AS i_and_l_are_one,
       snowflake_from_base32('OOOOOOOOOOOOO') AS o_is_zero;
SELECT snowflake_from_base62('0SJDMoo20kH') AS id, snowflake_from_base62('AzL8n0Y58m7') AS largest;
-- Bad input: 22P02 with the first bad character and where it is; then the width; a value
-- above 2^63 - 1 is 22003. U is not a Crockford digit; hyphens are not read.
SELECT snowflake_from_base32('01ARYZ6S41TSU');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('0000-00000000');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32(' 000000000000');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('00000000000é0');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('01ARYZ6S41');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('01ARYZ6S41TSV4RRFFQ69G5FAV');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('8000000000000');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base62('0SJDMoo20k_');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base62('0SJDMoo20k');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base62('AzL8n0Y58m8');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base62(repeat('z', 100000)) IS NULL;
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_to_base32(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_to_base62(-9223372036854775808);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_to_base32(NULL) IS NULL AS n1, snowflake_from_base32(NULL) IS NULL AS n2,
       snowflake_to_base62(NULL) IS NULL AS n3, snowflake_from_base62(NULL) IS NULL AS n4;

-- UUIDs of snowflake IDs: version 7, the ID's Unix milliseconds first, then its node and
-- counter at the end. Of the server's layout, and of a named one (given back to decode it).
SELECT snowflake_to_uuid(383233962442493957) AS own,
       snowflake_to_uuid(383233962442493957, 'snowflake_id') AS named,
       snowflake_from_uuid(snowflake_to_uuid(383233962442493957)) AS back;
-- Discord's documented ID, made 2016-04-30 11:18:25.796 UTC: its first 48 bits are that
-- millisecond (0x01546692af24 = 1462015105796).
SELECT snowflake_to_uuid(175928847299117063, 'discord') AS discord,
       ('x' || substr(replace(snowflake_to_uuid(175928847299117063, 'discord')::text, '-', ''), 1, 12))::bit(48)::bigint
           AS unix_ms,
       snowflake_from_uuid(snowflake_to_uuid(175928847299117063, 'discord'), 'discord') AS back;
-- Round trips of the extremes: 0, 2^63 - 1, and the first and last ID of each preset (the
-- last of a 64-bit layout is negative as a bigint: it has a UUID, not a text form).
SELECT p AS layout, id, snowflake_from_uuid(snowflake_to_uuid(id, p), p) = id AS uuid_round_trip,
       CASE WHEN id >= 0 THEN snowflake_from_base32(snowflake_to_base32(id)) = id
                          AND snowflake_from_base62(snowflake_to_base62(id)) = id END AS text_round_trip
  FROM unnest(ARRAY['twitter', 'discord', 'instagram', 'pgedge', 'snowflake_id']) p,
       LATERAL (VALUES (0::bigint),
                       (CASE WHEN p IN ('discord', 'instagram') THEN -1 ELSE 9223372036854775807 END)) v(id)
 ORDER BY 1, 2;
SELECT snowflake_from_uuid(snowflake_to_uuid(0)) AS zero,
       snowflake_from_uuid(snowflake_to_uuid(9223372036854775807)) AS largest,
       snowflake_to_uuid(0) AS uuid_of_zero;
-- UUIDs no snowflake ID makes: another version, bits set between the time and the node
-- (rand_a, or high in rand_b), a time before the layout's epoch.
SELECT snowflake_from_uuid('01a9653e-8495-4000-8000-000000001005');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_uuid('01a9653e-8495-7000-c000-000000001005');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_uuid('01a9653e-8495-7001-8000-000000001005');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_uuid('01a9653e-8495-7000-8000-000000401005');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_uuid(snowflake_to_uuid(5, 'twitter'));
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_to_uuid(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_to_uuid(1, 'nope');
\echo :LAST_ERROR_SQLSTATE

-- gdids as UUIDs: version 8, the 96 bits in order.
SELECT g, gdid_to_uuid(g) AS uuid, gdid_from_uuid(gdid_to_uuid(g)) = g AS round_trip
  FROM (VALUES ('0:0:0'::gdid), ('0:0:1'), ('1293:3:57'), ('4294967295:15:1152921504606846975')) v(g);
SELECT gdid_from_uuid('00000000-0000-4000-8000-000000000000');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_from_uuid('00000000-0000-8000-8000-000000000001');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_to_uuid(NULL) IS NULL AS n1, gdid_from_uuid(NULL) IS NULL AS n2,
       snowflake_to_uuid(NULL) IS NULL AS n3, snowflake_from_uuid(NULL) IS NULL AS n4;

-- 10,000 generated IDs, and IDs of other nodes and moments, sort the same as bigint, as
-- base32 and base62 text (COLLATE "C": a linguistic collation puts a before B) and as uuid.
CREATE TEMP TABLE ids AS
SELECT snowflake_next('forms')::bigint AS id FROM generate_series(1, 10000)
UNION ALL
SELECT snowflake_from_timestamp('2025-01-01'::timestamptz + g * interval '1 day 1 hour 1 second 1 millisecond')
       | ((g * 37 % 1024) << 12) | (g * 101 % 4096)
  FROM generate_series(0, 9999) g;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       (SELECT array_agg(id ORDER BY id) FROM ids)
         = (SELECT array_agg(id ORDER BY snowflake_to_base32(id) COLLATE "C") FROM ids) AS base32_order,
       (SELECT array_agg(id ORDER BY id) FROM ids)
         = (SELECT array_agg(id ORDER BY snowflake_to_base62(id) COLLATE "C") FROM ids) AS base62_order,
       (SELECT array_agg(id ORDER BY id) FROM ids)
         = (SELECT array_agg(id ORDER BY snowflake_to_uuid(id)) FROM ids) AS uuid_order,
       bool_and(snowflake_from_base32(lower(snowflake_to_base32(id))) = id
                AND snowflake_from_base62(snowflake_to_base62(id)) = id
                AND snowflake_from_uuid(snowflake_to_uuid(id)) = id) AS round_trips
  FROM ids;
-- And gdids: generated, and of other eras and authorities.
CREATE TEMP TABLE gdids AS
SELECT gdid_next('forms', 'g') AS g FROM generate_series(1, 10000)
UNION ALL
SELECT gdid(g * 7919 % 100000, g % 16, (g::bigint * 1000003) % 1152921504606846975) FROM generate_series(1, 10000) g;
SELECT count(*) AS gdids,
       (SELECT array_agg(g ORDER BY g) FROM gdids) = (SELECT array_agg(g ORDER BY gdid_to_uuid(g)) FROM gdids) AS uuid_order,
       bool_and(gdid_from_uuid(gdid_to_uuid(g)) = g) AS round_trips
  FROM gdids;
DROP TABLE ids, gdids;
SELECT snowflake_drop_sequence('forms');
DROP SEQUENCE gdid."forms/g";
