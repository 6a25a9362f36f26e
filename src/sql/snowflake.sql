-- The snowflake half of the SQL API. The C symbols are the V1 functions of the same names in
-- src/sql/snowflake.rs. Every object here is listed in docs/functions.md, and pg_regress
-- (catalog.sql) lists every function with its markings.
--
-- Volatility follows what a result depends on: the generators are VOLATILE; decoders of the
-- server's own layout read settings fixed at server start, so they are STABLE (an index on
-- them would silently break if the layout changed); decoders of a named preset are IMMUTABLE.

-- NOT VALID only because an update from 0.2.0, whose check also counted replicated node
-- numbers, must not scan every table again for an equivalent check; a fresh install matches
-- the updated one.
CREATE DOMAIN snowflake AS bigint;
ALTER DOMAIN snowflake ADD CONSTRAINT snowflake_not_negative CHECK (VALUE >= 0) NOT VALID;
COMMENT ON DOMAIN snowflake IS
    'A 64-bit time-ordered ID: sign bit 0, milliseconds since snowflake.epoch, node, counter';

-- Every named sequence is a PostgreSQL sequence of one of these schemas (src/sequences): made
-- by its name's first use, owned by the role that used it, dumped, copied and dropped as
-- any sequence. Every role may use them (as the privileges on each sequence allow); making a
-- new one takes CREATE on the schema, which the database's owner has. They are named by their
-- kind, unless a schema snowflake or gdid is there already (pgEdge's snowflake extension, a
-- schema of the user's): then both take names of their own (core/identity.rs, schema_names),
-- which a dump restored into a database with the same schemas finds again.
DO $schemas$
DECLARE
    taken boolean := pg_catalog.to_regnamespace('snowflake') IS NOT NULL
                     OR pg_catalog.to_regnamespace('gdid') IS NOT NULL;
    kind text;
    chosen text;
BEGIN
    FOREACH kind IN ARRAY ARRAY['snowflake', 'gdid'] LOOP
        chosen := kind;
        IF taken THEN
            chosen := pg_catalog.jsonb_build_object('snowflake', 'snowflake_seq',
                                                    'gdid', 'snowflake_gdid_seq')
                      OPERATOR(pg_catalog.->>) kind;
        END IF;
        EXECUTE pg_catalog.format('CREATE SCHEMA %I', chosen);
        EXECUTE pg_catalog.format('COMMENT ON SCHEMA %I IS %L', chosen, pg_catalog.format(
            'The %s sequences of snowflake_id: %s', kind,
            pg_catalog.format(pg_catalog.jsonb_build_object(
                'snowflake', 'snowflake_next(''orders'') generates from %I.orders',
                'gdid', 'gdid_next(''shop'', ''orders'') generates from %I."shop/orders"'
            ) OPERATOR(pg_catalog.->>) kind, chosen)));
        EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %I TO PUBLIC', chosen);
        EXECUTE pg_catalog.format('GRANT CREATE ON SCHEMA %I TO pg_database_owner', chosen);
    END LOOP;
    IF taken THEN
        RAISE NOTICE 'a schema "snowflake" or "gdid" is there already: the sequences of snowflake_id go to schemas snowflake_seq and snowflake_gdid_seq'
            USING HINT = 'A dump of this database restores as it is into a database with the same schemas named snowflake or gdid (pgEdge''s extension, yours); if they are gone, create one first, or rename these two back to snowflake and gdid.';
    END IF;
END
$schemas$;

CREATE FUNCTION snowflake_sequence_schema() RETURNS regnamespace
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_sequence_schema';
COMMENT ON FUNCTION snowflake_sequence_schema() IS
    'The schema of this database''s snowflake sequences: snowflake, or snowflake_seq where a schema snowflake or gdid was there before the extension';

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

-- Decoders of other systems' IDs, by preset name: 'twitter', 'discord', 'instagram', 'pgedge';
-- and 'snowflake_id', this extension's default layout.

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

-- Time ranges as ID ranges: [from_ts, to_ts) is [the smallest ID of from_ts's millisecond,
-- the smallest of to_ts's), of any node: an int8range for queries, and its bounds for range
-- partitions (lower(), upper()). The form with a layout is IMMUTABLE, so that a partition
-- predicate written with constants prunes at plan time. snowflake_interval: a duration's width
-- in IDs, for partitioning by integer ranges (pg_partman's integer intervals).

CREATE FUNCTION snowflake_range(from_ts timestamptz, to_ts timestamptz) RETURNS int8range
    STABLE STRICT PARALLEL SAFE
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Checked before the bounds are cut to milliseconds, as tstzrange() checks them.
    IF from_ts > to_ts THEN
        RAISE EXCEPTION 'snowflake_range: from_ts is later than to_ts'
            USING ERRCODE = 'data_exception';
    END IF;
    RETURN int8range(@extschema@.snowflake_from_timestamp(from_ts),
                     @extschema@.snowflake_from_timestamp(to_ts));
END
$$;
COMMENT ON FUNCTION snowflake_range(timestamptz, timestamptz) IS
    'The IDs made in [from_ts, to_ts) by any node, as an int8range';

CREATE FUNCTION snowflake_range(from_ts timestamptz, to_ts timestamptz, layout text) RETURNS int8range
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
COMMENT ON FUNCTION snowflake_range(timestamptz, timestamptz, text) IS
    'The IDs of a named layout made in [from_ts, to_ts) by any node, as an int8range';

CREATE FUNCTION snowflake_interval(d interval) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql
    -- Every operator qualified: an unqualified one could bind to a look-alike that a role
    -- with CREATE on the extension's schema planted before CREATE EXTENSION.
    RETURN (pg_catalog.round(pg_catalog.date_part('epoch', d)::pg_catalog.numeric
                             OPERATOR(pg_catalog.*) 1000::pg_catalog.numeric)
            OPERATOR(pg_catalog.*) 4194304::pg_catalog.numeric)::pg_catalog.int8;
COMMENT ON FUNCTION snowflake_interval(interval) IS
    'How far apart the IDs of two moments d apart are (milliseconds << 22, every node bits setting): a partition width for integer partitioning';

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
    -- ts in UTC whatever the session's TimeZone: the function is IMMUTABLE (indexes, generated
    -- columns), so its result must not follow a setting. JSON's timestamp form, as to_jsonb
    -- writes it under TimeZone UTC.
    RETURN pg_catalog.jsonb_build_object(
        'id', id::pg_catalog.text,
        'ts', (pg_catalog.to_jsonb(pg_catalog.timezone('UTC', @extschema@.snowflake_timestamp(id, layout)))
               OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.||) '+00:00',
        'node', @extschema@.snowflake_node(id, layout),
        'counter', @extschema@.snowflake_counter(id, layout));
COMMENT ON FUNCTION snowflake_decode_jsonb(bigint, text) IS
    'An ID of a named layout taken apart as jsonb, the ID itself as a string';

-- Dropping a sequence by its name: DROP SEQUENCE snowflake.seq, as the caller (its owner may),
-- refused while a DEFAULT names it.

CREATE FUNCTION snowflake_drop_sequence(seq text) RETURNS boolean
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_drop_sequence';
COMMENT ON FUNCTION snowflake_drop_sequence(text) IS
    'DROP SEQUENCE snowflake.seq (true if it existed): transactional, refused while a DEFAULT names it';

-- Converting a serial, bigserial, IDENTITY or nextval() key to snowflake IDs.

CREATE FUNCTION snowflake_convert_column(tbl regclass, col name, seq text DEFAULT NULL)
    RETURNS text
    VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    LANGUAGE plpgsql AS $convert$
DECLARE
    rel record;
    att record;
    name text := seq;
    clipped text;
    identity_kind "char";
    owned regclass;
    fk record;
BEGIN
    IF tbl IS NULL OR col IS NULL THEN
        RAISE EXCEPTION 'the table and the column must not be null' USING ERRCODE = '22004';
    END IF;
    SELECT c.relkind, c.relowner, n.nspname, c.relname INTO rel
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
    IF rel.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', tbl USING ERRCODE = '42809';
    END IF;
    IF NOT pg_has_role(current_user, rel.relowner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = '42501';
    END IF;
    SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated INTO att
      FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0
       AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation "%" does not exist', col, tbl USING ERRCODE = '42703';
    END IF;
    IF att.attgenerated <> '' THEN
        RAISE EXCEPTION 'column "%" of relation "%" is a generated column', col, tbl
            USING ERRCODE = '0A000',
                  HINT = 'Only a column whose values are inserted can take them from a DEFAULT.';
    END IF;
    -- A partition key's type cannot change: one that is bigint already is converted in place.
    IF att.atttypid <> 'int8'::regtype AND EXISTS (
           SELECT FROM pg_partition_ancestors(tbl) a
             JOIN pg_partitioned_table p ON p.partrelid = a.relid
             JOIN pg_attribute k ON k.attrelid = p.partrelid AND k.attnum = ANY (p.partattrs)
            WHERE k.attname = col) THEN
        RAISE EXCEPTION 'column "%" of relation "%" is a partition key of type %, not bigint', col, tbl,
            format_type(att.atttypid, NULL) USING ERRCODE = '0A000',
            HINT = 'PostgreSQL cannot change the type of a partition key; only a bigint key can be converted.';
    END IF;
    IF att.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) THEN
        RAISE EXCEPTION 'column "%" of relation "%" is of type %, not an integer type', col, tbl,
            format_type(att.atttypid, NULL) USING ERRCODE = '42804';
    END IF;
    IF EXISTS (SELECT FROM pg_constraint k
                WHERE (k.conrelid = tbl AND k.contype IN ('p', 'u', 'f') OR
                       k.confrelid = tbl AND k.contype = 'f')
                  AND cardinality(k.conkey) > 1
                  AND att.attnum = ANY (CASE WHEN k.conrelid = tbl THEN k.conkey ELSE k.confkey END)) THEN
        RAISE EXCEPTION 'column "%" of relation "%" is part of a composite key', col, tbl
            USING ERRCODE = '0A000',
                  HINT = 'Only a column that is a key on its own can be converted.';
    END IF;
    IF name IS NULL THEN
        name := format('%s.%s.%s', rel.nspname, rel.relname, col);
    END IF;
    -- Every argument is checked before anything changes.
    IF name = '' THEN
        RAISE EXCEPTION 'snowflake sequence name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF octet_length(name) > 63 THEN
        -- Quoted up to its first 63 bytes, cut at a character boundary.
        clipped := left(name, 63);
        WHILE octet_length(clipped) > 63 LOOP
            clipped := left(clipped, -1);
        END LOOP;
        RAISE EXCEPTION 'snowflake sequence name "%..." is too long', clipped USING ERRCODE = '42622',
            DETAIL = 'Names are at most 63 bytes.',
            HINT = 'Pass a shorter name as the third argument.';
    END IF;

    -- A column that references the key and must become bigint cannot if it is a partition key.
    FOR fk IN
        WITH RECURSIVE refs(rel, attnum) AS (
            SELECT tbl::oid, att.attnum::int2
          UNION
            SELECT k.conrelid, k.conkey[1]
              FROM refs r JOIN pg_constraint k
                ON k.contype = 'f' AND k.confrelid = r.rel AND k.confkey = ARRAY[r.attnum]
               AND k.conparentid = 0
        )
        SELECT r.rel::regclass AS rel, a.attname
          FROM refs r JOIN pg_attribute a ON a.attrelid = r.rel AND a.attnum = r.attnum
         WHERE NOT (r.rel = tbl AND r.attnum = att.attnum) AND a.atttypid <> 'int8'::regtype
           AND EXISTS (SELECT FROM pg_partition_ancestors(r.rel) pa
                         JOIN pg_partitioned_table p ON p.partrelid = pa.relid
                         JOIN pg_attribute k ON k.attrelid = p.partrelid AND k.attnum = ANY (p.partattrs)
                        WHERE k.attname = a.attname)
    LOOP
        RAISE EXCEPTION 'column "%" of relation "%" references the key and is a partition key', fk.attname, fk.rel
            USING ERRCODE = '0A000',
                  HINT = 'PostgreSQL cannot change the type of a partition key; make it bigint first.';
    END LOOP;

    -- What generated the values so far goes: the identity (and its sequence), or a default
    -- and the sequence the column owns. A sequence the column does not own stays.
    IF att.attidentity <> '' THEN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col);
    ELSE
        SELECT d.objid::regclass INTO owned
          FROM pg_depend d
         WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
           AND d.refobjid = tbl AND d.refobjsubid = att.attnum AND d.deptype = 'a'
           AND (SELECT relkind FROM pg_class WHERE oid = d.objid) = 'S';
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', tbl, col);
        IF owned IS NOT NULL THEN
            EXECUTE format('DROP SEQUENCE %s', owned);
        END IF;
    END IF;

    -- The column, and every column that references it, directly or through others, become
    -- bigint.
    IF att.atttypid <> 'int8'::regtype THEN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint', tbl, col);
    END IF;
    FOR fk IN
        WITH RECURSIVE refs(rel, attnum) AS (
            SELECT tbl::oid, att.attnum::int2
          UNION
            SELECT k.conrelid, k.conkey[1]
              FROM refs r JOIN pg_constraint k
                ON k.contype = 'f' AND k.confrelid = r.rel AND k.confkey = ARRAY[r.attnum]
               AND k.conparentid = 0
        )
        SELECT r.rel::regclass AS rel, a.attname, a.atttypid
          FROM refs r JOIN pg_attribute a ON a.attrelid = r.rel AND a.attnum = r.attnum
         WHERE NOT (r.rel = tbl AND r.attnum = att.attnum)
    LOOP
        IF fk.atttypid <> 'int8'::regtype THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint', fk.rel, fk.attname);
        END IF;
    END LOOP;

    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s(%L)', tbl, col,
                   '@extschema@.snowflake_next', name);
    RETURN name;
END
$convert$;
COMMENT ON FUNCTION snowflake_convert_column(regclass, name, text) IS
    'Turns an integer key filled by serial, bigserial, IDENTITY or nextval() into a bigint key with DEFAULT snowflake_next(seq); returns seq (default: schema.table.column)';

-- Many writers: servers that share a node number or an authority, as logical replication
-- shows them to this server.

CREATE FUNCTION snowflake_node_conflicts_rows(
        OUT kind text, OUT node_or_authority integer, OUT origins text[],
        OUT first_seen timestamptz, OUT last_seen timestamptz, OUT rows_seen bigint)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_node_conflicts_rows';

-- Counts the values a replicated INSERT brings into a column whose DEFAULT generates them.
-- Every table with such a column has it as an internal trigger, AFTER INSERT FOR EACH ROW,
-- ENABLE REPLICA (src/detection/watch.rs).
CREATE FUNCTION snowflake_arrival_trigger() RETURNS trigger
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_arrival_trigger';
COMMENT ON FUNCTION snowflake_arrival_trigger() IS
    'Trigger of tables with a generating column: counts the node numbers and authorities that logical replication inserts';

-- Tables get the trigger when they get a generating column; this gives it to tables that
-- have one without it (after an update from 0.2.0, or tables made while the library was not
-- preloaded). It locks each table briefly against writes, so it is not for everyone.
CREATE FUNCTION snowflake_watch_tables() RETURNS integer
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_watch_tables';
REVOKE EXECUTE ON FUNCTION snowflake_watch_tables() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_watch_tables() IS
    'Gives every table with a generating column the trigger that detection of a shared node number needs; returns how many got one';

CREATE VIEW snowflake_node_conflicts AS
    SELECT kind, node_or_authority, origins, first_seen, last_seen, rows_seen
      FROM @extschema@.snowflake_node_conflicts_rows();
GRANT SELECT ON snowflake_node_conflicts TO PUBLIC;
COMMENT ON VIEW snowflake_node_conflicts IS
    'Node numbers and authorities that values from two servers carried (or another server and this one), since the server started';

-- Monitoring.

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
     WHERE c.relnamespace OPERATOR(pg_catalog.=) @extschema@.snowflake_sequence_schema()
       AND c.relkind OPERATOR(pg_catalog.=) 'S';
GRANT SELECT ON snowflake_sequences TO PUBLIC;
COMMENT ON VIEW snowflake_sequences IS
    'The snowflake sequences of this database: layout, durable lease, and what the cache knows of each';

-- Watermarks, for consumers that page by ID (README, "Paging by ID without skipping a row").

CREATE FUNCTION snowflake_watermark(seq text) RETURNS snowflake
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_watermark';
COMMENT ON FUNCTION snowflake_watermark(text) IS
    'Below it, every ID of the sequence made on this server belongs to a transaction that has ended; IDs made later are at or above it';

CREATE FUNCTION snowflake_watermark_holders_rows(OUT sequence regclass, OUT pid integer,
        OUT transaction xid, OUT prepared boolean, OUT first_id bigint, OUT since timestamptz)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_watermark_holders_rows';
COMMENT ON FUNCTION snowflake_watermark_holders_rows() IS
    'The rows of snowflake_watermark_holders';

CREATE VIEW snowflake_watermark_holders AS
    SELECT h.sequence, h.pid, h.transaction, h.prepared,
           h.first_id::@extschema@.snowflake AS first_id, h.since,
           pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) h.since AS age
      FROM @extschema@.snowflake_watermark_holders_rows() h;
GRANT SELECT ON snowflake_watermark_holders TO PUBLIC;
COMMENT ON VIEW snowflake_watermark_holders IS
    'The transactions in flight that hold the watermarks of this database''s snowflake sequences back (sequence NULL: all of them)';

-- IDs as key ranges: `id <@ snowflake_range(from, to)` on the key, planned as two comparisons
-- of it (snowflake_range_support), so that it scans a btree range and prunes partitions, on
-- every major. Declared on bigint, which the domain is: PostgreSQL would resolve a bigint key
-- to an operator of the domain as well (through an implicit cast that adds the domain's
-- check), so these stand in for PostgreSQL's own `anyelement <@ anyrange` wherever this
-- schema is in the search path, and mean exactly what it means; where the two comparisons do
-- not apply, the support function puts PostgreSQL's own operator back.

CREATE FUNCTION snowflake_range_support(req internal) RETURNS internal
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_range_support';
COMMENT ON FUNCTION snowflake_range_support(internal) IS
    'Planner support of <@ and @> between bigint (snowflake) and int8range: the two comparisons of the key they mean';

CREATE FUNCTION snowflake_range_first(r int8range) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_range_first';
COMMENT ON FUNCTION snowflake_range_first(int8range) IS
    'The smallest value an int8range holds (bigint''s largest if it is empty): id <@ r is id >= snowflake_range_first(r) AND id <= snowflake_range_last(r)';

CREATE FUNCTION snowflake_range_last(r int8range) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_range_last';
COMMENT ON FUNCTION snowflake_range_last(int8range) IS
    'The largest value an int8range holds (bigint''s smallest if it is empty)';

CREATE FUNCTION snowflake_contained_by(id bigint, r int8range) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE SUPPORT @extschema@.snowflake_range_support
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_contained_by';
COMMENT ON FUNCTION snowflake_contained_by(bigint, int8range) IS 'id <@ r: the range holds the ID';

CREATE FUNCTION snowflake_range_contains(r int8range, id bigint) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE SUPPORT @extschema@.snowflake_range_support
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_range_contains';
COMMENT ON FUNCTION snowflake_range_contains(int8range, bigint) IS 'r @> id: the range holds the ID';

CREATE OPERATOR @extschema@.<@ (
    LEFTARG = bigint, RIGHTARG = int8range, FUNCTION = @extschema@.snowflake_contained_by,
    COMMUTATOR = OPERATOR(@extschema@.@>)
);
COMMENT ON OPERATOR @extschema@.<@ (bigint, int8range) IS
    'The range holds the ID, planned as two comparisons of the key (snowflake_id)';

CREATE OPERATOR @extschema@.@> (
    LEFTARG = int8range, RIGHTARG = bigint, FUNCTION = @extschema@.snowflake_range_contains,
    COMMUTATOR = OPERATOR(@extschema@.<@)
);
COMMENT ON OPERATOR @extschema@.@> (int8range, bigint) IS
    'The range holds the ID, planned as two comparisons of the key (snowflake_id)';

-- IDs outside the database (README, "IDs outside the database"): short text forms, fixed
-- width, whose byte order (COLLATE "C") is the IDs' order; and a UUIDv7 of an ID, whose first
-- 48 bits are its Unix milliseconds and whose last bits its node and counter. None of them is
-- random.

CREATE FUNCTION snowflake_to_base32(id bigint) RETURNS text
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_to_base32';
COMMENT ON FUNCTION snowflake_to_base32(bigint) IS
    'The ID in 13 characters of Crockford''s base32 (the ULID alphabet)';

CREATE FUNCTION snowflake_from_base32(text text) RETURNS snowflake
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_from_base32';
COMMENT ON FUNCTION snowflake_from_base32(text) IS
    'The ID of 13 characters of Crockford''s base32: either case, I and L read as 1, O as 0';

CREATE FUNCTION snowflake_to_base62(id bigint) RETURNS text
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_to_base62';
COMMENT ON FUNCTION snowflake_to_base62(bigint) IS
    'The ID in 11 characters of base62 (0-9, A-Z, a-z)';

CREATE FUNCTION snowflake_from_base62(text text) RETURNS snowflake
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_from_base62';
COMMENT ON FUNCTION snowflake_from_base62(text) IS 'The ID of 11 characters of base62';

CREATE FUNCTION snowflake_to_uuid(id bigint) RETURNS uuid
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_to_uuid';
COMMENT ON FUNCTION snowflake_to_uuid(bigint) IS
    'The ID as a UUIDv7: its Unix milliseconds, then its node and counter; not random';

CREATE FUNCTION snowflake_from_uuid(u uuid) RETURNS snowflake
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_from_uuid';
COMMENT ON FUNCTION snowflake_from_uuid(uuid) IS 'The ID of this server''s layout whose UUIDv7 this is';

CREATE FUNCTION snowflake_to_uuid(id bigint, layout text) RETURNS uuid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_to_uuid_in_layout';
COMMENT ON FUNCTION snowflake_to_uuid(bigint, text) IS 'An ID of a named layout as a UUIDv7';

CREATE FUNCTION snowflake_from_uuid(u uuid, layout text) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_from_uuid_in_layout';
COMMENT ON FUNCTION snowflake_from_uuid(uuid, text) IS 'The ID of a named layout whose UUIDv7 this is';
