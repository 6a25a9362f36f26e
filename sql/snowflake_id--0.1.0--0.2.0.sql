-- snowflake_id 0.1.0 -> 0.2.0.
\echo Use "ALTER EXTENSION snowflake_id UPDATE TO '0.2.0'" to load this file. \quit

-- Every C function is a plain V1 function under its own name now (0.1.0 named most of them
-- after pgrx's wrappers; the library keeps those names for databases not yet updated).
CREATE OR REPLACE FUNCTION snowflake_next(seq text) RETURNS snowflake
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_next';
CREATE OR REPLACE FUNCTION snowflake_next_batch(seq text, n integer) RETURNS SETOF snowflake
    VOLATILE STRICT PARALLEL UNSAFE ROWS 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_next_batch';
CREATE OR REPLACE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_timestamp';
CREATE OR REPLACE FUNCTION snowflake_node(id bigint) RETURNS integer
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_node';
CREATE OR REPLACE FUNCTION snowflake_counter(id bigint) RETURNS integer
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_counter';
CREATE OR REPLACE FUNCTION snowflake_from_timestamp(ts timestamptz) RETURNS snowflake
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_from_timestamp';
CREATE OR REPLACE FUNCTION snowflake_timestamp(id bigint, layout text) RETURNS timestamptz
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_timestamp_in_layout';
CREATE OR REPLACE FUNCTION snowflake_node(id bigint, layout text) RETURNS integer
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_node_in_layout';
CREATE OR REPLACE FUNCTION snowflake_counter(id bigint, layout text) RETURNS integer
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_counter_in_layout';
CREATE OR REPLACE FUNCTION snowflake_from_timestamp(ts timestamptz, layout text) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_from_timestamp_in_layout';
CREATE OR REPLACE FUNCTION snowflake_sequences_rows(
        OUT name text, OUT layout text, OUT epoch timestamptz,
        OUT last_id bigint, OUT last_timestamp timestamptz, OUT issued bigint,
        OUT counter_exhausted bigint, OUT clock_ahead interval, OUT clock_regressions bigint,
        OUT lease_until timestamptz, OUT lease_extensions bigint)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_sequences_rows';
CREATE OR REPLACE FUNCTION gdid_in(cstring) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_in';
CREATE OR REPLACE FUNCTION gdid_out(gdid) RETURNS cstring
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_out';
CREATE OR REPLACE FUNCTION gdid_recv(internal) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_recv';
CREATE OR REPLACE FUNCTION gdid_send(gdid) RETURNS bytea
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_send';
CREATE OR REPLACE FUNCTION gdid(era bigint, authority integer, counter bigint) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_make';
CREATE OR REPLACE FUNCTION gdid_era(gdid) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_era';
CREATE OR REPLACE FUNCTION gdid_authority(gdid) RETURNS integer
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_authority';
CREATE OR REPLACE FUNCTION gdid_counter(gdid) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_counter';
CREATE OR REPLACE FUNCTION gdid_to_hex(gdid) RETURNS text
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_to_hex';
CREATE OR REPLACE FUNCTION gdid_to_bytea(gdid) RETURNS bytea
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_to_bytea';
CREATE OR REPLACE FUNCTION gdid_from_bytea(bytea) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_from_bytea';
CREATE OR REPLACE FUNCTION gdid_compress(gdid) RETURNS bytea
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_compress';
CREATE OR REPLACE FUNCTION gdid_decompress(bytea) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_decompress';
CREATE OR REPLACE FUNCTION gdid_to_leb128(gdid) RETURNS bytea
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_to_leb128';
CREATE OR REPLACE FUNCTION gdid_from_leb128(bytea) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_from_leb128';
CREATE OR REPLACE FUNCTION gdid_next(scope text, sequence text) RETURNS gdid
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_next';
CREATE OR REPLACE FUNCTION gdid_next_block(scope text, sequence text, n integer) RETURNS SETOF gdid
    VOLATILE STRICT PARALLEL UNSAFE ROWS 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_next_block';
CREATE OR REPLACE FUNCTION gdid_advance(scope text, sequence text, past gdid) RETURNS void
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_advance';
CREATE OR REPLACE FUNCTION gdid_sequences_rows(
        OUT scope text, OUT sequence text, OUT era bigint, OUT last_counter bigint,
        OUT lease_end bigint, OUT issued bigint, OUT lease_extensions bigint)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_sequences_rows';

-- New in 0.2.0: dropping a sequence, converting an integer key.

CREATE FUNCTION snowflake_drop_sequence(seq text) RETURNS boolean
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_drop_sequence';
COMMENT ON FUNCTION snowflake_drop_sequence(text) IS
    'Drops the named sequence of this database (true if it existed); its slot is free again at the next restart';
REVOKE EXECUTE ON FUNCTION snowflake_drop_sequence(text) FROM PUBLIC;

CREATE FUNCTION gdid_drop_sequence(scope text, sequence text) RETURNS boolean
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_drop_sequence';
COMMENT ON FUNCTION gdid_drop_sequence(text, text) IS
    'Drops (scope, sequence) of this database (true if it existed); its next use continues above the stored gdids of this authority';
REVOKE EXECUTE ON FUNCTION gdid_drop_sequence(text, text) FROM PUBLIC;

CREATE FUNCTION snowflake_convert_column(tbl regclass, col name, seq text DEFAULT NULL)
    RETURNS text
    VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    LANGUAGE plpgsql AS $convert$
DECLARE
    rel record;
    att record;
    name text := seq;
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
    SELECT a.attnum, a.atttypid, a.attidentity INTO att
      FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0
       AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation "%" does not exist', col, tbl USING ERRCODE = '42703';
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
    IF octet_length(name) > 63 THEN
        RAISE EXCEPTION 'snowflake sequence name "%" is too long', name USING ERRCODE = '42622',
            DETAIL = 'Names are at most 63 bytes.',
            HINT = 'Pass a shorter name as the third argument.';
    END IF;

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
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint', tbl, col);
    FOR fk IN
        WITH RECURSIVE refs(rel, attnum) AS (
            SELECT tbl::oid, att.attnum::int2
          UNION
            SELECT k.conrelid, k.conkey[1]
              FROM refs r JOIN pg_constraint k
                ON k.contype = 'f' AND k.confrelid = r.rel AND k.confkey = ARRAY[r.attnum]
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

-- New in 0.2.0: noticing servers that share a node number or an authority. The domain's check
-- becomes a function that also sees replicated IDs; NOT VALID, since every stored ID passed the
-- equivalent VALUE >= 0 and an update must not scan every table.

CREATE FUNCTION snowflake_observe(id bigint) RETURNS boolean
    VOLATILE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_observe';
COMMENT ON FUNCTION snowflake_observe(bigint) IS
    'The snowflake domain''s check: true for a non-negative ID; counts the node of IDs that logical replication applies';
ALTER DOMAIN snowflake DROP CONSTRAINT snowflake_not_negative;
ALTER DOMAIN snowflake ADD CONSTRAINT snowflake_not_negative
    CHECK (@extschema@.snowflake_observe(VALUE)) NOT VALID;

CREATE FUNCTION snowflake_node_conflicts_rows(
        OUT kind text, OUT node_or_authority integer, OUT origins text[],
        OUT first_seen timestamptz, OUT last_seen timestamptz, OUT rows_seen bigint)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_node_conflicts_rows';

CREATE VIEW snowflake_node_conflicts AS
    SELECT kind, node_or_authority, origins, first_seen, last_seen, rows_seen
      FROM @extschema@.snowflake_node_conflicts_rows();
GRANT SELECT ON snowflake_node_conflicts TO PUBLIC;
COMMENT ON VIEW snowflake_node_conflicts IS
    'Node numbers and authorities that values from two servers carried (or another server and this one), since the server started';
