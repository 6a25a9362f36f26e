-- The snowflake half of the SQL API. The C symbols are the V1 functions of the same names in
-- src/snowflake/sql.rs. Every object here is listed in the README, and pg_regress
-- (catalog.sql) lists every function with its markings.
--
-- Volatility follows what a result depends on: the generators are VOLATILE; decoders of the
-- server's own layout read settings fixed at server start, so they are STABLE (an index on
-- them would silently break if the layout changed); decoders of a named preset are IMMUTABLE.

CREATE DOMAIN snowflake AS bigint
    CONSTRAINT snowflake_not_negative CHECK (VALUE >= 0);
COMMENT ON DOMAIN snowflake IS
    'A 64-bit time-ordered ID: sign bit 0, milliseconds since snowflake.epoch, node, counter';

CREATE FUNCTION snowflake_next(seq text) RETURNS snowflake
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_next';
COMMENT ON FUNCTION snowflake_next(text) IS
    'Next ID of the named sequence of this database: unique per node, strictly increasing';

CREATE FUNCTION snowflake_next_batch(seq text, n integer) RETURNS SETOF snowflake
    VOLATILE STRICT PARALLEL UNSAFE ROWS 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_next_batch';
COMMENT ON FUNCTION snowflake_next_batch(text, integer) IS
    'n consecutive IDs of the named sequence, reserved at once, in increasing order';

-- Decoders of this server's layout.

CREATE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_timestamp';
COMMENT ON FUNCTION snowflake_timestamp(bigint) IS 'The millisecond in which an ID was made';

CREATE FUNCTION snowflake_node(id bigint) RETURNS integer
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_node';
COMMENT ON FUNCTION snowflake_node(bigint) IS 'The node number of an ID';

CREATE FUNCTION snowflake_counter(id bigint) RETURNS integer
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_counter';
COMMENT ON FUNCTION snowflake_counter(bigint) IS 'The per-millisecond counter of an ID';

CREATE FUNCTION snowflake_from_timestamp(ts timestamptz) RETURNS snowflake
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_from_timestamp';
COMMENT ON FUNCTION snowflake_from_timestamp(timestamptz) IS
    'The smallest ID of any node in the millisecond of ts: id >= snowflake_from_timestamp(t) selects IDs made at or after t';

CREATE FUNCTION snowflake_decode(id bigint, OUT ts timestamptz, OUT node integer, OUT counter integer)
    STABLE STRICT PARALLEL SAFE
    LANGUAGE sql
    BEGIN ATOMIC
        SELECT @extschema@.snowflake_timestamp(id), @extschema@.snowflake_node(id),
               @extschema@.snowflake_counter(id);
    END;
COMMENT ON FUNCTION snowflake_decode(bigint) IS 'An ID taken apart: timestamp, node, counter';

-- Decoders of other systems' IDs, by preset name: 'twitter', 'discord', 'instagram', 'pgedge'.

CREATE FUNCTION snowflake_timestamp(id bigint, layout text) RETURNS timestamptz
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_timestamp_in_layout';
COMMENT ON FUNCTION snowflake_timestamp(bigint, text) IS 'The millisecond of an ID of a named layout';

CREATE FUNCTION snowflake_node(id bigint, layout text) RETURNS integer
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_node_in_layout';
COMMENT ON FUNCTION snowflake_node(bigint, text) IS 'The node (worker, shard) of an ID of a named layout';

CREATE FUNCTION snowflake_counter(id bigint, layout text) RETURNS integer
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_counter_in_layout';
COMMENT ON FUNCTION snowflake_counter(bigint, text) IS 'The counter (sequence, increment) of an ID of a named layout';

CREATE FUNCTION snowflake_from_timestamp(ts timestamptz, layout text) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_from_timestamp_in_layout';
COMMENT ON FUNCTION snowflake_from_timestamp(timestamptz, text) IS
    'The smallest ID of a named layout in the millisecond of ts';

CREATE FUNCTION snowflake_decode(id bigint, layout text, OUT ts timestamptz, OUT node integer, OUT counter integer)
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql
    BEGIN ATOMIC
        SELECT @extschema@.snowflake_timestamp(id, layout), @extschema@.snowflake_node(id, layout),
               @extschema@.snowflake_counter(id, layout);
    END;
COMMENT ON FUNCTION snowflake_decode(bigint, text) IS 'An ID of a named layout taken apart';

-- JSON: the ID as a string, because JavaScript numbers lose precision past 2^53.

CREATE FUNCTION snowflake_decode_jsonb(id bigint) RETURNS jsonb
    STABLE STRICT PARALLEL SAFE
    LANGUAGE sql
    RETURN pg_catalog.jsonb_build_object(
        'id', id::pg_catalog.text,
        'ts', @extschema@.snowflake_timestamp(id),
        'node', @extschema@.snowflake_node(id),
        'counter', @extschema@.snowflake_counter(id));
COMMENT ON FUNCTION snowflake_decode_jsonb(bigint) IS
    'An ID taken apart as jsonb, the ID itself as a string';

CREATE FUNCTION snowflake_decode_jsonb(id bigint, layout text) RETURNS jsonb
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql
    RETURN pg_catalog.jsonb_build_object(
        'id', id::pg_catalog.text,
        'ts', @extschema@.snowflake_timestamp(id, layout),
        'node', @extschema@.snowflake_node(id, layout),
        'counter', @extschema@.snowflake_counter(id, layout));
COMMENT ON FUNCTION snowflake_decode_jsonb(bigint, text) IS
    'An ID of a named layout taken apart as jsonb, the ID itself as a string';

-- Monitoring.

CREATE FUNCTION snowflake_sequences_rows(
        OUT name text, OUT layout text, OUT epoch timestamptz,
        OUT last_id bigint, OUT last_timestamp timestamptz, OUT issued bigint,
        OUT counter_exhausted bigint, OUT clock_ahead interval, OUT clock_regressions bigint,
        OUT lease_until timestamptz, OUT lease_extensions bigint)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_sequences_rows';

CREATE VIEW snowflake_sequences AS
    SELECT name, layout, epoch, last_id::@extschema@.snowflake AS last_id, last_timestamp,
           issued, counter_exhausted, clock_ahead, clock_regressions, lease_until,
           lease_extensions
      FROM @extschema@.snowflake_sequences_rows();
GRANT SELECT ON snowflake_sequences TO PUBLIC;
COMMENT ON VIEW snowflake_sequences IS
    'The snowflake sequences of this database since the server started';
