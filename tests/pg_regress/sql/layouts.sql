-- Decoding other systems' IDs with named layouts. These decoders do not depend on any
-- setting, so they are IMMUTABLE and can be used in indexes and generated columns.
SET timezone = 'UTC';
SET datestyle = 'ISO';

-- Discord's documented example: 175928847299117063 was made 2016-04-30 11:18:25.796 UTC,
-- internal worker 1 and process 0 (node = worker << 5 | process = 32), increment 7.
SELECT * FROM snowflake_decode(175928847299117063, layout => 'discord');
SELECT snowflake_decode_jsonb(175928847299117063, 'discord');
-- Discord's time field is 42 bits wide: from 2084 on its IDs set the sign bit of a bigint.
SELECT * FROM snowflake_decode(-1, 'discord');

-- Twitter: 41 bits of ms since 2010-11-04 01:42:54.657 UTC, 10 bits of worker, 12 of sequence.
SELECT snowflake_from_timestamp('2010-11-04 01:42:54.657+00', 'twitter') AS twitter_epoch_id;
SELECT (snowflake_from_timestamp('2022-03-04 05:06:07.089+00', 'twitter') | (1023 << 12) | 4095) AS id \gset
SELECT :id AS twitter_id, * FROM snowflake_decode(:id, 'twitter');

-- Instagram: 41 bits of ms since 2011-08-24 21:07:01.721 UTC, 13 bits of shard, 10 of sequence.
SELECT (snowflake_from_timestamp('2013-01-01+00', 'instagram') | (5001 << 10) | 17) AS id \gset
SELECT :id AS instagram_id, * FROM snowflake_decode(:id, 'instagram');

-- pgEdge snowflake 2.x: ms since 2023-01-01 << 22 | node << 12 | counter.
SELECT (snowflake_from_timestamp('2024-05-06 07:08:09.010+00', 'pgedge') | (3 << 12) | 42) AS id \gset
SELECT :id AS pgedge_id, * FROM snowflake_decode(:id, 'pgedge');

-- Names are matched without regard to case or surrounding blanks.
SELECT snowflake_node(175928847299117063, ' Discord ') AS node;

-- Errors.
SELECT snowflake_timestamp(1, 'sonyflake');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_decode(-1, 'twitter');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_timestamp('2010-11-04 01:42:54.656+00', 'twitter');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_timestamp(1, NULL), snowflake_node(NULL, 'twitter'),
       snowflake_from_timestamp(now(), NULL), snowflake_decode_jsonb(1, NULL);

-- IMMUTABLE: usable in an expression index.
CREATE TABLE discord_messages (id bigint PRIMARY KEY);
CREATE INDEX ON discord_messages (snowflake_timestamp(id, 'discord'));
INSERT INTO discord_messages VALUES (175928847299117063);
SELECT id FROM discord_messages WHERE snowflake_timestamp(id, 'discord') < '2017-01-01+00';
-- but not the decoders of this server's layout, which depend on its settings:
CREATE INDEX ON discord_messages (snowflake_timestamp(id));
\echo :LAST_ERROR_SQLSTATE
