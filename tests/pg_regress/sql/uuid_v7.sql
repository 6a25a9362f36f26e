-- PostgreSQL 18's own UUIDv7 functions read the UUID of a snowflake ID as any UUIDv7:
-- uuid_extract_timestamp() gives the ID's millisecond, and the UUID sorts by time among
-- uuidv7() values made before and after it. Elsewhere this file prints that it was skipped
-- (expected/uuid_v7_1.out).
SET timezone = 'UTC';
SELECT current_setting('server_version_num')::int >= 180000 AS pg18 \gset
\if :pg18
CREATE TEMP TABLE made AS SELECT snowflake_next('uuid_v7') AS id FROM generate_series(1, 10000);
SELECT count(*) AS ids,
       bool_and(uuid_extract_timestamp(snowflake_to_uuid(id)) = snowflake_timestamp(id)) AS same_moment,
       bool_and(uuid_extract_version(snowflake_to_uuid(id)) = 7) AS version_7
  FROM made;
SELECT uuid_extract_timestamp(snowflake_to_uuid(383233962442493957)) AS extracted,
       snowflake_timestamp(383233962442493957) AS decoded;
-- A gdid's UUID is version 8: it carries no time PostgreSQL reads.
SELECT uuid_extract_version(gdid_to_uuid('1293:3:57')) AS gdid_version,
       uuid_extract_timestamp(gdid_to_uuid('1293:3:57')) IS NULL AS no_timestamp;
-- Made one after the other, a millisecond apart: they sort in that order.
SELECT uuidv7() AS before \gset
SELECT pg_sleep(0.005);
SELECT snowflake_to_uuid(snowflake_next('uuid_v7_order')) AS ours \gset
SELECT pg_sleep(0.005);
SELECT uuidv7() AS after \gset
SELECT :'before'::uuid < :'ours'::uuid AS after_the_earlier, :'ours'::uuid < :'after'::uuid AS before_the_later;
DROP TABLE made;
SELECT snowflake_drop_sequence(s) FROM unnest(ARRAY['uuid_v7', 'uuid_v7_order']) s;
\else
\echo 'uuid_v7: PostgreSQL 18 only (uuid_extract_timestamp and uuidv7)'
\endif
