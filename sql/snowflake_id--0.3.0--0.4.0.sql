-- snowflake_id 0.3.0 -> 0.4.0: every named sequence becomes a PostgreSQL sequence of its
-- database (schemas snowflake and gdid), and carries the lease the lease file held for it.
\echo Use "ALTER EXTENSION snowflake_id UPDATE TO '0.4.0'" to load this file. \quit

-- Every named sequence is a PostgreSQL sequence of one of these schemas (src/sequences): made
-- by its name's first use, owned by the role that used it, dumped, copied and dropped as
-- any sequence. Every role may use them (as the privileges on each sequence allow); making a
-- new one takes CREATE on the schema, which the database's owner has.
CREATE SCHEMA snowflake;
COMMENT ON SCHEMA snowflake IS
    'The snowflake sequences of snowflake_id: snowflake_next(''orders'') generates from snowflake.orders';
CREATE SCHEMA gdid;
COMMENT ON SCHEMA gdid IS
    'The gdid sequences of snowflake_id: gdid_next(''shop'', ''orders'') generates from gdid."shop/orders"';
GRANT USAGE ON SCHEMA snowflake, gdid TO PUBLIC;
GRANT CREATE ON SCHEMA snowflake, gdid TO pg_database_owner;

-- The sequences the lease file knows for this database, with their leases, and those that
-- column and domain DEFAULTs name, with their dependencies (src/legacy/adopt.rs). Not an
-- object of the extension: made, used once and dropped.
CREATE FUNCTION snowflake_id_adopt_sequences() RETURNS integer
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_id_adopt_sequences';
SELECT @extschema@.snowflake_id_adopt_sequences();
DROP FUNCTION snowflake_id_adopt_sequences();

-- Dropping and moving a sequence on follow its own privileges now (DROP SEQUENCE, setval).
GRANT EXECUTE ON FUNCTION snowflake_drop_sequence(text) TO PUBLIC;
COMMENT ON FUNCTION snowflake_drop_sequence(text) IS
    'DROP SEQUENCE snowflake.seq (true if it existed): transactional, refused while a DEFAULT names it';
GRANT EXECUTE ON FUNCTION gdid_drop_sequence(text, text) TO PUBLIC;
COMMENT ON FUNCTION gdid_drop_sequence(text, text) IS
    'DROP SEQUENCE gdid."scope/sequence" (true if it existed): transactional, refused while a DEFAULT names it';
GRANT EXECUTE ON FUNCTION gdid_advance(text, text, gdid) TO PUBLIC;
COMMENT ON FUNCTION gdid_advance(text, text, gdid) IS
    'Moves (scope, sequence) on so that its next gdid has a later era and counter than past; never back. UPDATE on the sequence, as setval';
-- Every operator qualified: 0.3.0 bound an unqualified * to whatever operator the schema held.
-- A range that ends exactly where a 64-bit layout's IDs turn negative is unbounded above.
CREATE OR REPLACE FUNCTION snowflake_range(from_ts timestamptz, to_ts timestamptz, layout text) RETURNS int8range
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    lo bigint;
    hi bigint;
BEGIN
    IF from_ts > to_ts THEN
        RAISE EXCEPTION 'snowflake_range: from_ts is later than to_ts'
            USING ERRCODE = 'data_exception';
    END IF;
    lo := @extschema@.snowflake_from_timestamp(from_ts, layout);
    hi := @extschema@.snowflake_from_timestamp(to_ts, layout);
    -- Layouts of 64 bits (discord, instagram) spend the sign bit on time: their IDs turn
    -- negative at one moment, and no int8range holds the IDs on both sides of it. A range
    -- that ends exactly there holds every positive ID from lo on: unbounded above.
    IF hi OPERATOR(pg_catalog.=) -9223372036854775808 AND lo OPERATOR(pg_catalog.>=) 0 THEN
        RETURN pg_catalog.int8range(lo, NULL);
    END IF;
    IF lo > hi THEN
        RAISE EXCEPTION 'the IDs of layout "%" turn negative within this time range', layout
            USING ERRCODE = 'datetime_field_overflow',
                  DETAIL = format('They are negative from %s UTC on.',
                                  to_char(@extschema@.snowflake_timestamp(-9223372036854775808, layout)
                                          AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')),
                  HINT = 'Split the range at that moment.';
    END IF;
    RETURN int8range(lo, hi);
END
$$;

CREATE OR REPLACE FUNCTION snowflake_interval(d interval) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql
    -- Every operator qualified: an unqualified one could bind to a look-alike that a role
    -- with CREATE on the extension's schema planted before CREATE EXTENSION.
    RETURN (pg_catalog.round(pg_catalog.date_part('epoch', d)::pg_catalog.numeric
                             OPERATOR(pg_catalog.*) 1000::pg_catalog.numeric)
            OPERATOR(pg_catalog.*) 4194304::pg_catalog.numeric)::pg_catalog.int8;

-- The monitoring views read the catalog: every sequence of the database, not only those
-- used since the server started.
DROP VIEW snowflake_sequences;
DROP FUNCTION snowflake_sequences_rows();
CREATE FUNCTION snowflake_sequence_state(seq regclass,
        OUT layout text, OUT epoch timestamptz,
        OUT last_id bigint, OUT last_timestamp timestamptz, OUT issued bigint,
        OUT counter_exhausted bigint, OUT clock_ahead interval, OUT clock_regressions bigint,
        OUT lease_until timestamptz, OUT lease_extensions bigint)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_sequence_state';
COMMENT ON FUNCTION snowflake_sequence_state(regclass) IS
    'The row of snowflake_sequences for one sequence';

CREATE VIEW snowflake_sequences AS
    SELECT c.relname::pg_catalog.text COLLATE pg_catalog."default" AS name, s.layout, s.epoch,
           s.last_id::@extschema@.snowflake AS last_id, s.last_timestamp, s.issued,
           s.counter_exhausted, s.clock_ahead, s.clock_regressions, s.lease_until,
           s.lease_extensions, c.oid::pg_catalog.regclass AS relation
      FROM pg_catalog.pg_class c
     CROSS JOIN LATERAL @extschema@.snowflake_sequence_state(c.oid::pg_catalog.regclass) s
     WHERE c.relnamespace OPERATOR(pg_catalog.=) 'snowflake'::pg_catalog.regnamespace
       AND c.relkind OPERATOR(pg_catalog.=) 'S';
GRANT SELECT ON snowflake_sequences TO PUBLIC;
COMMENT ON VIEW snowflake_sequences IS
    'The snowflake sequences of this database: layout, durable lease, and what the cache knows of each';

DROP VIEW gdid_sequences;
DROP FUNCTION gdid_sequences_rows();
CREATE FUNCTION gdid_sequence_state(seq regclass,
        OUT scope text, OUT sequence text, OUT era bigint, OUT last_counter bigint,
        OUT lease_end bigint, OUT issued bigint, OUT lease_extensions bigint)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_sequence_state';
COMMENT ON FUNCTION gdid_sequence_state(regclass) IS 'The row of gdid_sequences for one sequence';

CREATE VIEW gdid_sequences AS
    SELECT s.scope, s.sequence, s.era, s.last_counter, s.lease_end, s.issued,
           s.lease_extensions, c.oid::pg_catalog.regclass AS relation
      FROM pg_catalog.pg_class c
     CROSS JOIN LATERAL @extschema@.gdid_sequence_state(c.oid::pg_catalog.regclass) s
     WHERE c.relnamespace OPERATOR(pg_catalog.=) 'gdid'::pg_catalog.regnamespace
       AND c.relkind OPERATOR(pg_catalog.=) 'S';
GRANT SELECT ON gdid_sequences TO PUBLIC;
COMMENT ON VIEW gdid_sequences IS
    'The gdid sequences of this database: position, durable lease, and what the cache knows of each';
