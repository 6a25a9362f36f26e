-- The gdid half of the SQL API. The C symbols are the V1 functions of the same names in
-- src/sql/gdid.rs and src/sql/gdid_ops.rs (comparison and hash). Every object is in docs/functions.md,
-- and pg_regress (catalog.sql) lists every function with its markings.

CREATE TYPE gdid;

CREATE FUNCTION gdid_in(cstring) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_in';
CREATE FUNCTION gdid_out(gdid) RETURNS cstring
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_out';
CREATE FUNCTION gdid_recv(internal) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_recv';
CREATE FUNCTION gdid_send(gdid) RETURNS bytea
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_send';

CREATE TYPE gdid (
    INPUT = gdid_in,
    OUTPUT = gdid_out,
    RECEIVE = gdid_recv,
    SEND = gdid_send,
    INTERNALLENGTH = 12,
    ALIGNMENT = int4,
    STORAGE = plain,
    CATEGORY = 'U'
);
COMMENT ON TYPE gdid IS
    'Global distributed ID: era (32 bits), authority (4 bits), counter (60 bits); text era:authority:counter';

-- Construction and parts

CREATE FUNCTION gdid(era bigint, authority integer, counter bigint) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_make';
COMMENT ON FUNCTION gdid(bigint, integer, bigint) IS
    'The gdid of era (0 .. 2^32-1), authority (0 .. 15) and counter (0 .. 2^60-1)';

CREATE FUNCTION gdid_era(gdid) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_era';
COMMENT ON FUNCTION gdid_era(gdid) IS 'The era of a gdid';

CREATE FUNCTION gdid_authority(gdid) RETURNS integer
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_authority';
COMMENT ON FUNCTION gdid_authority(gdid) IS 'The authority (0 .. 15) of a gdid';

CREATE FUNCTION gdid_counter(gdid) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_counter';
COMMENT ON FUNCTION gdid_counter(gdid) IS 'The counter of a gdid';

CREATE FUNCTION gdid_to_hex(gdid) RETURNS text
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_to_hex';
COMMENT ON FUNCTION gdid_to_hex(gdid) IS 'The 12 bytes of a gdid as 24 lowercase hex digits';

-- Conversions

CREATE FUNCTION gdid_to_bytea(gdid) RETURNS bytea
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_to_bytea';
COMMENT ON FUNCTION gdid_to_bytea(gdid) IS 'The 12 bytes of a gdid: era then id, big-endian';

CREATE FUNCTION gdid_from_bytea(bytea) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_from_bytea';
COMMENT ON FUNCTION gdid_from_bytea(bytea) IS 'The gdid of exactly 12 bytes';

CREATE CAST (gdid AS bytea) WITH FUNCTION gdid_to_bytea(gdid);
CREATE CAST (bytea AS gdid) WITH FUNCTION gdid_from_bytea(bytea);
CREATE CAST (gdid AS text) WITH INOUT AS ASSIGNMENT;

CREATE FUNCTION gdid_compress(gdid) RETURNS bytea
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_compress';
COMMENT ON FUNCTION gdid_compress(gdid) IS
    'Compact, canonical, order-preserving encoding: at most 5 bytes for era < 128 and counter < 2^24';

CREATE FUNCTION gdid_decompress(bytea) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_decompress';
COMMENT ON FUNCTION gdid_decompress(bytea) IS 'The gdid of a gdid_compress encoding';

CREATE FUNCTION gdid_to_leb128(gdid) RETURNS bytea
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_to_leb128';
COMMENT ON FUNCTION gdid_to_leb128(gdid) IS
    'LEB128(era) then LEB128(id), as Azos SlimWriter writes a GDID';

CREATE FUNCTION gdid_from_leb128(bytea) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_from_leb128';
COMMENT ON FUNCTION gdid_from_leb128(bytea) IS 'The gdid of Azos SlimWriter bytes';

-- Comparison: era, then authority, then counter (the order of the 12 bytes).

CREATE FUNCTION gdid_eq(gdid, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_eq';
CREATE FUNCTION gdid_ne(gdid, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_ne';
CREATE FUNCTION gdid_lt(gdid, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_lt';
CREATE FUNCTION gdid_le(gdid, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_le';
CREATE FUNCTION gdid_gt(gdid, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_gt';
CREATE FUNCTION gdid_ge(gdid, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_ge';
CREATE FUNCTION gdid_cmp(gdid, gdid) RETURNS integer
    IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_cmp';
CREATE FUNCTION gdid_hash(gdid) RETURNS integer
    IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_hash';
CREATE FUNCTION gdid_hash_extended(gdid, bigint) RETURNS bigint
    IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_hash_extended';
CREATE FUNCTION gdid_sortsupport(internal) RETURNS void
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_sortsupport';
CREATE FUNCTION gdid_larger(gdid, gdid) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_larger';
CREATE FUNCTION gdid_smaller(gdid, gdid) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_smaller';

CREATE OPERATOR = (
    LEFTARG = gdid, RIGHTARG = gdid, FUNCTION = gdid_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = gdid, RIGHTARG = gdid, FUNCTION = gdid_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = gdid, RIGHTARG = gdid, FUNCTION = gdid_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = gdid, RIGHTARG = gdid, FUNCTION = gdid_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = gdid, RIGHTARG = gdid, FUNCTION = gdid_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = gdid, RIGHTARG = gdid, FUNCTION = gdid_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);

-- Drivers that know no gdid (its OID differs per database) send one as text typed text or
-- varchar: JDBC's setString, an ORM's String column, a driver's text parameter. The casts let
-- INSERT and UPDATE store it (assignment), and the operators below compare a gdid with it
-- (varchar reaches them as text): each is an SQL function that the planner inlines into the
-- gdid comparison with the text cast to gdid, so that an index on the column serves `id = $1`
-- as it serves a literal. No implicit cast: with one, a function overloaded for gdid and for
-- varchar, name or regclass became ambiguous (42725) for a text argument, or chose another
-- overload; these operators only ever meet a gdid (pg_regress gdid_text_params).
CREATE CAST (text AS gdid) WITH INOUT AS ASSIGNMENT;
CREATE CAST (varchar AS gdid) WITH INOUT AS ASSIGNMENT;
CREATE FUNCTION gdid_eq_text(gdid, text) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1 OPERATOR(@extschema@.=) $2::@extschema@.gdid $$;
CREATE FUNCTION text_eq_gdid(text, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1::@extschema@.gdid OPERATOR(@extschema@.=) $2 $$;
CREATE FUNCTION gdid_ne_text(gdid, text) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1 OPERATOR(@extschema@.<>) $2::@extschema@.gdid $$;
CREATE FUNCTION text_ne_gdid(text, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1::@extschema@.gdid OPERATOR(@extschema@.<>) $2 $$;
CREATE FUNCTION gdid_lt_text(gdid, text) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1 OPERATOR(@extschema@.<) $2::@extschema@.gdid $$;
CREATE FUNCTION text_lt_gdid(text, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1::@extschema@.gdid OPERATOR(@extschema@.<) $2 $$;
CREATE FUNCTION gdid_le_text(gdid, text) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1 OPERATOR(@extschema@.<=) $2::@extschema@.gdid $$;
CREATE FUNCTION text_le_gdid(text, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1::@extschema@.gdid OPERATOR(@extschema@.<=) $2 $$;
CREATE FUNCTION gdid_gt_text(gdid, text) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1 OPERATOR(@extschema@.>) $2::@extschema@.gdid $$;
CREATE FUNCTION text_gt_gdid(text, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1::@extschema@.gdid OPERATOR(@extschema@.>) $2 $$;
CREATE FUNCTION gdid_ge_text(gdid, text) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1 OPERATOR(@extschema@.>=) $2::@extschema@.gdid $$;
CREATE FUNCTION text_ge_gdid(text, gdid) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT $1::@extschema@.gdid OPERATOR(@extschema@.>=) $2 $$;
CREATE OPERATOR = (
    LEFTARG = gdid, RIGHTARG = text, FUNCTION = gdid_eq_text,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR = (
    LEFTARG = text, RIGHTARG = gdid, FUNCTION = text_eq_gdid,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
    LEFTARG = gdid, RIGHTARG = text, FUNCTION = gdid_ne_text,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR <> (
    LEFTARG = text, RIGHTARG = gdid, FUNCTION = text_ne_gdid,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = gdid, RIGHTARG = text, FUNCTION = gdid_lt_text,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR < (
    LEFTARG = text, RIGHTARG = gdid, FUNCTION = text_lt_gdid,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = gdid, RIGHTARG = text, FUNCTION = gdid_le_text,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR <= (
    LEFTARG = text, RIGHTARG = gdid, FUNCTION = text_le_gdid,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = gdid, RIGHTARG = text, FUNCTION = gdid_gt_text,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR > (
    LEFTARG = text, RIGHTARG = gdid, FUNCTION = text_gt_gdid,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = gdid, RIGHTARG = text, FUNCTION = gdid_ge_text,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR >= (
    LEFTARG = text, RIGHTARG = gdid, FUNCTION = text_ge_gdid,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);

CREATE OPERATOR CLASS gdid_ops DEFAULT FOR TYPE gdid USING btree AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 gdid_cmp(gdid, gdid),
    FUNCTION 2 gdid_sortsupport(internal),
    -- Equal gdids are equal bytes: btree deduplication is safe.
    FUNCTION 4 btequalimage(oid);

CREATE OPERATOR CLASS gdid_ops DEFAULT FOR TYPE gdid USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 gdid_hash(gdid),
    FUNCTION 2 gdid_hash_extended(gdid, bigint);

CREATE OPERATOR CLASS gdid_minmax_ops DEFAULT FOR TYPE gdid USING brin AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 brin_minmax_opcinfo(internal),
    FUNCTION 2 brin_minmax_add_value(internal, internal, internal, internal),
    FUNCTION 3 brin_minmax_consistent(internal, internal, internal),
    FUNCTION 4 brin_minmax_union(internal, internal, internal);

CREATE AGGREGATE min(gdid) (
    SFUNC = gdid_smaller, STYPE = gdid, COMBINEFUNC = gdid_smaller, SORTOP = <, PARALLEL = SAFE
);
CREATE AGGREGATE max(gdid) (
    SFUNC = gdid_larger, STYPE = gdid, COMBINEFUNC = gdid_larger, SORTOP = >, PARALLEL = SAFE
);

-- Generation

CREATE FUNCTION gdid_next(scope text, sequence text) RETURNS gdid
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_next';
COMMENT ON FUNCTION gdid_next(text, text) IS
    'Next gdid of (scope, sequence) in this database, with this server''s gdid.authority';

CREATE FUNCTION gdid_next_block(scope text, sequence text, n integer) RETURNS SETOF gdid
    VOLATILE STRICT PARALLEL UNSAFE ROWS 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_next_block';
COMMENT ON FUNCTION gdid_next_block(text, text, integer) IS
    'n gdids of (scope, sequence) with consecutive counters, reserved at once, in order';

CREATE FUNCTION gdid_advance(scope text, sequence text, past gdid) RETURNS void
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_advance';
COMMENT ON FUNCTION gdid_advance(text, text, gdid) IS
    'Moves (scope, sequence) on so that its next gdid has a later era and counter than past; never back. UPDATE on the sequence, as setval';

CREATE FUNCTION gdid_drop_sequence(scope text, sequence text) RETURNS boolean
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_drop_sequence';
COMMENT ON FUNCTION gdid_drop_sequence(text, text) IS
    'DROP SEQUENCE gdid."scope/sequence" (true if it existed): transactional, refused while a DEFAULT names it';

-- Monitoring

CREATE FUNCTION gdid_sequence_state(seq regclass,
        OUT scope text, OUT sequence text, OUT era bigint, OUT last_counter bigint,
        OUT lease_end bigint, OUT issued bigint, OUT lease_extensions bigint)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_sequence_state';
COMMENT ON FUNCTION gdid_sequence_state(regclass) IS 'The row of gdid_sequences for one sequence';

CREATE FUNCTION gdid_sequence_schema() RETURNS regnamespace
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_sequence_schema';
COMMENT ON FUNCTION gdid_sequence_schema() IS
    'The schema of this database''s gdid sequences: gdid, or snowflake_gdid_seq where a schema snowflake or gdid was there before the extension';

CREATE VIEW gdid_sequences AS
    SELECT s.scope, s.sequence, s.era, s.last_counter, s.lease_end, s.issued,
           s.lease_extensions, c.oid::pg_catalog.regclass AS relation
      FROM pg_catalog.pg_class c
     CROSS JOIN LATERAL @extschema@.gdid_sequence_state(c.oid::pg_catalog.regclass) s
     WHERE c.relnamespace OPERATOR(pg_catalog.=) @extschema@.gdid_sequence_schema()
       AND c.relkind OPERATOR(pg_catalog.=) 'S';
GRANT SELECT ON gdid_sequences TO PUBLIC;
COMMENT ON VIEW gdid_sequences IS
    'The gdid sequences of this database: position, durable lease, and what the cache knows of each';

-- Watermarks, for consumers that page by gdid (README, "Paging by ID without skipping a row").

CREATE FUNCTION gdid_watermark(scope text, sequence text) RETURNS gdid
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_watermark';
COMMENT ON FUNCTION gdid_watermark(text, text) IS
    'Below it, every gdid of the sequence made on this server belongs to a transaction that has ended; gdids made later are at or above it';

CREATE FUNCTION gdid_watermark_holders_rows(OUT sequence regclass, OUT pid integer,
        OUT transaction xid, OUT prepared boolean, OUT first_gdid gdid, OUT since timestamptz)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_watermark_holders_rows';
COMMENT ON FUNCTION gdid_watermark_holders_rows() IS
    'The rows of gdid_watermark_holders';

CREATE VIEW gdid_watermark_holders AS
    SELECT h.sequence, h.pid, h.transaction, h.prepared, h.first_gdid, h.since,
           pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) h.since AS age
      FROM @extschema@.gdid_watermark_holders_rows() h;
GRANT SELECT ON gdid_watermark_holders TO PUBLIC;
COMMENT ON VIEW gdid_watermark_holders IS
    'The transactions in flight that hold the watermarks of this database''s gdid sequences back (sequence NULL: all of them)';

-- A gdid as a UUID (README, "IDs outside the database"): version 8, its 96 bits in order, so
-- UUIDs sort as the gdids do. Not random.

CREATE FUNCTION gdid_to_uuid(g gdid) RETURNS uuid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_to_uuid';
COMMENT ON FUNCTION gdid_to_uuid(gdid) IS 'The gdid as a version-8 UUID that sorts as the gdid; not random';

CREATE FUNCTION gdid_from_uuid(u uuid) RETURNS gdid
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_from_uuid';
COMMENT ON FUNCTION gdid_from_uuid(uuid) IS 'The gdid whose version-8 UUID this is';
