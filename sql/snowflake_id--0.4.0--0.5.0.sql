-- snowflake_id 0.4.0 -> 0.5.0. The schemas of the sequences keep their names (snowflake, gdid);
-- the views find them through the functions that say where they are, as in a fresh install,
-- which names them otherwise where a schema of that name was there before the extension.
\echo Use "ALTER EXTENSION snowflake_id UPDATE TO '0.5.0'" to load this file. \quit

CREATE FUNCTION snowflake_sequence_schema() RETURNS regnamespace
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_sequence_schema';
COMMENT ON FUNCTION snowflake_sequence_schema() IS
    'The schema of this database''s snowflake sequences: snowflake, or snowflake_seq where a schema snowflake or gdid was there before the extension';

CREATE FUNCTION gdid_sequence_schema() RETURNS regnamespace
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'gdid_sequence_schema';
COMMENT ON FUNCTION gdid_sequence_schema() IS
    'The schema of this database''s gdid sequences: gdid, or snowflake_gdid_seq where a schema snowflake or gdid was there before the extension';

CREATE OR REPLACE VIEW snowflake_sequences AS
    SELECT c.relname::pg_catalog.text COLLATE pg_catalog."default" AS name, s.layout, s.epoch,
           s.last_id::@extschema@.snowflake AS last_id, s.last_timestamp, s.issued,
           s.counter_exhausted, s.clock_ahead, s.clock_regressions, s.lease_until,
           s.lease_extensions, c.oid::pg_catalog.regclass AS relation
      FROM pg_catalog.pg_class c
     CROSS JOIN LATERAL @extschema@.snowflake_sequence_state(c.oid::pg_catalog.regclass) s
     WHERE c.relnamespace OPERATOR(pg_catalog.=) @extschema@.snowflake_sequence_schema()
       AND c.relkind OPERATOR(pg_catalog.=) 'S';

CREATE OR REPLACE VIEW gdid_sequences AS
    SELECT s.scope, s.sequence, s.era, s.last_counter, s.lease_end, s.issued,
           s.lease_extensions, c.oid::pg_catalog.regclass AS relation
      FROM pg_catalog.pg_class c
     CROSS JOIN LATERAL @extschema@.gdid_sequence_state(c.oid::pg_catalog.regclass) s
     WHERE c.relnamespace OPERATOR(pg_catalog.=) @extschema@.gdid_sequence_schema()
       AND c.relkind OPERATOR(pg_catalog.=) 'S';

-- Drivers that know no gdid (its OID differs per database) send one as text typed text or
-- varchar: JDBC's setString, an ORM's String column, TypeORM. Implicit, so that comparisons,
-- INSERT and UPDATE take it as they take a literal, and an index on the column serves. No
-- query that resolved before resolves otherwise: text is the preferred type of its category,
-- so a text or varchar argument still picks text's operator or function wherever one exists
-- (pg_regress gdid_text_params).
CREATE CAST (text AS gdid) WITH INOUT AS IMPLICIT;
CREATE CAST (varchar AS gdid) WITH INOUT AS IMPLICIT;
