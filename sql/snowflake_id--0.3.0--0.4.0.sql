-- snowflake_id 0.3.0 -> 0.4.0: every named sequence becomes a PostgreSQL sequence of its
-- database (schemas snowflake and gdid), and carries the lease the lease file held for it.
\echo Use "ALTER EXTENSION snowflake_id UPDATE TO '0.4.0'" to load this file. \quit

-- Every named sequence is a PostgreSQL sequence of one of these schemas (src/sequences): made
-- by its name's first use, owned by the role that used it, dumped, copied and dropped as
-- any sequence. Every role may use them (as the privileges on each sequence allow); making a
-- new one takes CREATE on the schema, which the database's owner has.
-- Each is named by its kind, unless a schema of that name is there already (pgEdge's snowflake
-- extension, which 0.3.0 could live beside, or a schema of the user's): then it has a name of
-- its own, as a fresh install since 0.5.0 does (the library finds either).
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
     WHERE c.relnamespace OPERATOR(pg_catalog.=) ANY (
           SELECT d.objid FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) d.objid
            WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
              AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
              AND d.deptype OPERATOR(pg_catalog.=) 'e'
              AND d.refobjid OPERATOR(pg_catalog.=) (SELECT e.oid FROM pg_catalog.pg_extension e
                                                     WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake_id')
              AND n.nspname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake', 'snowflake_seq']))
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
     WHERE c.relnamespace OPERATOR(pg_catalog.=) ANY (
           SELECT d.objid FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) d.objid
            WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
              AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
              AND d.deptype OPERATOR(pg_catalog.=) 'e'
              AND d.refobjid OPERATOR(pg_catalog.=) (SELECT e.oid FROM pg_catalog.pg_extension e
                                                     WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake_id')
              AND n.nspname OPERATOR(pg_catalog.=) ANY (ARRAY['gdid', 'snowflake_gdid_seq']))
       AND c.relkind OPERATOR(pg_catalog.=) 'S';
GRANT SELECT ON gdid_sequences TO PUBLIC;
COMMENT ON VIEW gdid_sequences IS
    'The gdid sequences of this database: position, durable lease, and what the cache knows of each';

-- Node numbers and authorities claimed from a registry (snowflake.node_id = auto, gdid.authority
-- = auto): the registry's table and functions, and this server's side (src/sql/node.sql).
CREATE TABLE snowflake_registry (
    kind text NOT NULL CHECK (kind IN ('node', 'authority')),
    registry_group text NOT NULL,
    number integer NOT NULL CHECK (number >= 0),
    holder text NOT NULL,
    claimed_at timestamptz NOT NULL,
    renewed_at timestamptz NOT NULL,
    lease_until timestamptz NOT NULL,
    reusable_after timestamptz NOT NULL,
    era_floor bigint NOT NULL DEFAULT 0,
    released boolean NOT NULL DEFAULT false,
    PRIMARY KEY (kind, registry_group, number)
);
COMMENT ON TABLE snowflake_registry IS
    'Node numbers and gdid authorities that servers with snowflake.node_id = auto or gdid.authority = auto claimed from this database';
-- Claims are data: a dump of the registry keeps them.
SELECT pg_catalog.pg_extension_config_dump('snowflake_registry', '');
REVOKE ALL ON snowflake_registry FROM PUBLIC;

-- Claims a number for `holder`: the one it holds already (a restart of the same server), or
-- else the lowest number nobody holds and nobody may still be generating under. Returns the
-- number, the end of its lease, the era floor, and this registry's identity (its system
-- identifier and database), which the holder checks at every renewal: two registries must
-- never both hand out numbers to one group.
CREATE FUNCTION snowflake_registry_claim(
        kind text, registry_group text, holder text, max_number integer,
        lease interval, hold_after interval,
        OUT number integer, OUT lease_until timestamptz, OUT era_floor bigint,
        OUT registry text)
    VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    -- A session holding the table (a grantee's open transaction, a VACUUM FULL) must not
    -- pile up every server's claims and renewals behind it: they fail and are retried.
    SET lock_timeout = '2s'
    LANGUAGE plpgsql AS $claim$
DECLARE
    mine record;
    held text;
BEGIN
    IF kind NOT IN ('node', 'authority') THEN
        RAISE EXCEPTION 'unknown kind of number "%"', kind USING ERRCODE = '22023';
    END IF;
    IF max_number < 0 OR lease <= interval '0' OR hold_after < interval '0' THEN
        RAISE EXCEPTION 'invalid claim parameters' USING ERRCODE = '22023';
    END IF;
    -- One claim at a time, whatever the kind and group: a claim reads every number of its
    -- group before it takes one. (Renewals wait for it too: a few milliseconds.)
    LOCK TABLE @extschema@.snowflake_registry IN SHARE ROW EXCLUSIVE MODE;
    -- The database's OID too: a database dropped and made again under the same name is
    -- another registry (its claims are gone).
    registry := (SELECT s.system_identifier::text FROM pg_catalog.pg_control_system() s)
                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||)
                (SELECT d.oid::text FROM pg_catalog.pg_database d
                  WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) pg_catalog.current_database();

    SELECT r.number, r.era_floor INTO mine
      FROM @extschema@.snowflake_registry r
     WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
       AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
       AND r.holder OPERATOR(pg_catalog.=) snowflake_registry_claim.holder
       AND NOT r.released AND r.number OPERATOR(pg_catalog.<=) max_number
     ORDER BY r.number LIMIT 1;
    IF FOUND THEN
        -- The same server again (a restart): nobody else may have held the number since.
        number := mine.number;
        era_floor := mine.era_floor;
    ELSE
        SELECT n INTO number
          FROM pg_catalog.generate_series(0, max_number) n
         WHERE NOT EXISTS (
                   SELECT FROM @extschema@.snowflake_registry r
                    WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
                      AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
                      AND r.number OPERATOR(pg_catalog.=) n
                      AND r.reusable_after OPERATOR(pg_catalog.>=) pg_catalog.now())
         ORDER BY n LIMIT 1;
        IF number IS NULL THEN
            SELECT pg_catalog.string_agg(pg_catalog.format('%s (%s)', r.number,
                                             pg_catalog.split_part(r.holder, ' #', 1)),
                                         ', ' ORDER BY r.number)
              INTO held
              FROM (SELECT * FROM @extschema@.snowflake_registry r
                     WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
                       AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
                     ORDER BY r.number LIMIT 8) r;
            RAISE EXCEPTION 'every % number of group "%" (0 .. %) is held', snowflake_registry_claim.kind,
                snowflake_registry_claim.registry_group, max_number
                USING ERRCODE = '53400',
                      DETAIL = pg_catalog.format('Holders: %s%s.', held,
                          CASE WHEN max_number OPERATOR(pg_catalog.>=) 8 THEN ', and others' ELSE '' END),
                      HINT = 'A number comes free when its holder gives it back (snowflake_node_detach) or its lease has passed; or use another snowflake.registry_group for servers whose values never meet.';
        END IF;
        -- A new holder's gdids are of an era above every era of the group's authorities so
        -- far: above what an earlier holder of this authority used, and above the eras its
        -- own gdid sequences may have reached under an authority it held before.
        era_floor := 0;
        IF snowflake_registry_claim.kind OPERATOR(pg_catalog.=) 'authority' THEN
            SELECT COALESCE(max(r.era_floor) OPERATOR(pg_catalog.+) 1, 0) INTO era_floor
              FROM @extschema@.snowflake_registry r
             WHERE r.kind OPERATOR(pg_catalog.=) 'authority'
               AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group;
        END IF;
        -- A holder that moves to another number gives up the one it had.
        UPDATE @extschema@.snowflake_registry r SET released = true
         WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
           AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
           AND r.holder OPERATOR(pg_catalog.=) snowflake_registry_claim.holder;
    END IF;
    lease_until := pg_catalog.now() OPERATOR(pg_catalog.+) lease;
    INSERT INTO @extschema@.snowflake_registry AS r
           (kind, registry_group, number, holder, claimed_at, renewed_at, lease_until,
            reusable_after, era_floor, released)
    VALUES (snowflake_registry_claim.kind, snowflake_registry_claim.registry_group, snowflake_registry_claim.number, snowflake_registry_claim.holder, pg_catalog.now(),
            pg_catalog.now(), snowflake_registry_claim.lease_until,
            snowflake_registry_claim.lease_until OPERATOR(pg_catalog.+) hold_after, snowflake_registry_claim.era_floor, false)
    ON CONFLICT ON CONSTRAINT snowflake_registry_pkey DO UPDATE
       SET holder = excluded.holder,
           claimed_at = CASE WHEN r.holder OPERATOR(pg_catalog.=) excluded.holder
                              AND NOT r.released THEN r.claimed_at ELSE excluded.claimed_at END,
           renewed_at = excluded.renewed_at, lease_until = excluded.lease_until,
           -- Never earlier than before: values the holder made under the longer hold of an
           -- earlier claim or renewal may still be ahead of its clock.
           reusable_after = GREATEST(r.reusable_after, excluded.reusable_after),
           era_floor = excluded.era_floor,
           released = false;
END
$claim$;
COMMENT ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval) IS
    'Registry side of snowflake.node_id = auto and gdid.authority = auto: claims a number for a server';

-- Renews `holder`'s lease of `number`; NULL if it does not hold it (given back, or given to
-- another holder after its lease passed): the holder must stop generating under it.
CREATE FUNCTION snowflake_registry_renew(
        kind text, registry_group text, holder text, number integer,
        lease interval, hold_after interval,
        OUT lease_until timestamptz, OUT registry text)
    VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    -- A session holding the table (a grantee's open transaction, a VACUUM FULL) must not
    -- pile up every server's claims and renewals behind it: they fail and are retried.
    SET lock_timeout = '2s'
    LANGUAGE plpgsql AS $renew$
BEGIN
    -- The database's OID too: a database dropped and made again under the same name is
    -- another registry (its claims are gone).
    registry := (SELECT s.system_identifier::text FROM pg_catalog.pg_control_system() s)
                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||)
                (SELECT d.oid::text FROM pg_catalog.pg_database d
                  WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) pg_catalog.current_database();
    UPDATE @extschema@.snowflake_registry r
       SET renewed_at = pg_catalog.now(),
           lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) snowflake_registry_renew.lease,
           reusable_after = GREATEST(r.reusable_after,
               pg_catalog.now() OPERATOR(pg_catalog.+) snowflake_registry_renew.lease OPERATOR(pg_catalog.+) hold_after)
     WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_renew.kind
       AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_renew.registry_group
       AND r.number OPERATOR(pg_catalog.=) snowflake_registry_renew.number
       AND r.holder OPERATOR(pg_catalog.=) snowflake_registry_renew.holder
       AND NOT r.released
    RETURNING r.lease_until INTO lease_until;
END
$renew$;
COMMENT ON FUNCTION snowflake_registry_renew(text, text, text, integer, interval, interval) IS
    'Registry side of snowflake.node_id = auto and gdid.authority = auto: renews a server''s lease of its number';

-- Gives `number` back: nobody else gets it before its lease and then `hold_after` have passed
-- (values the holder made ahead of its clock). Never sooner: a release that reaches the
-- registry late (a packet held up by a partition) may meet the same holder's later claim of
-- the number, which must not end before the holder learns of it at its next renewal. True if
-- the holder held it.
CREATE FUNCTION snowflake_registry_release(
        kind text, registry_group text, holder text, number integer, hold_after interval)
    RETURNS boolean
    VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    -- A session holding the table (a grantee's open transaction, a VACUUM FULL) must not
    -- pile up every server's claims and renewals behind it: they fail and are retried.
    SET lock_timeout = '2s'
    LANGUAGE plpgsql AS $release$
BEGIN
    UPDATE @extschema@.snowflake_registry r
       SET released = true,
           lease_until = LEAST(r.lease_until, pg_catalog.now()),
           reusable_after = GREATEST(r.reusable_after,
                                     pg_catalog.now() OPERATOR(pg_catalog.+) hold_after)
     WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_release.kind
       AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_release.registry_group
       AND r.number OPERATOR(pg_catalog.=) snowflake_registry_release.number
       AND r.holder OPERATOR(pg_catalog.=) snowflake_registry_release.holder
       AND NOT r.released;
    RETURN FOUND;
END
$release$;
COMMENT ON FUNCTION snowflake_registry_release(text, text, text, integer, interval) IS
    'Registry side of snowflake.node_id = auto and gdid.authority = auto: gives a server''s number back';

-- Only the roles the registry's administrator chooses may claim.
REVOKE EXECUTE ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval),
    snowflake_registry_renew(text, text, text, integer, interval, interval),
    snowflake_registry_release(text, text, text, integer, interval) FROM PUBLIC;

-- This server's side: its numbers as the settings give them, or as claimed, in a view; and
-- giving a claimed number back or claiming again, for superusers and the roles they grant it.
CREATE FUNCTION snowflake_node_detach() RETURNS void
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_node_detach';
COMMENT ON FUNCTION snowflake_node_detach() IS
    'Stops generating under this server''s claimed node number and authority at once, and gives them back to the registry';
CREATE FUNCTION snowflake_node_attach() RETURNS void
    VOLATILE STRICT PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_node_attach';
COMMENT ON FUNCTION snowflake_node_attach() IS
    'Claims a node number and an authority again from the registry (perhaps others than before), and returns once they are held';
REVOKE EXECUTE ON FUNCTION snowflake_node_detach(), snowflake_node_attach() FROM PUBLIC;

CREATE FUNCTION snowflake_node_claims_rows(
        OUT kind text, OUT number integer, OUT state text, OUT holder text, OUT registry text,
        OUT since timestamptz, OUT lease_end timestamptz, OUT last_renewal timestamptz,
        OUT message text)
    RETURNS SETOF record
    VOLATILE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_node_claims_rows';
-- The holder (a data directory) and the registry (a host, a user) only for those who may read
-- the server's settings, as pg_settings shows data_directory.
CREATE VIEW snowflake_node_claims AS
    SELECT kind, number, state,
           CASE WHEN pg_catalog.pg_has_role('pg_read_all_settings', 'USAGE') THEN holder END AS holder,
           CASE WHEN pg_catalog.pg_has_role('pg_read_all_settings', 'USAGE') THEN registry END AS registry,
           since, lease_end, last_renewal, message
      FROM @extschema@.snowflake_node_claims_rows();
GRANT SELECT ON snowflake_node_claims TO PUBLIC;
COMMENT ON VIEW snowflake_node_claims IS
    'This server''s snowflake node number and gdid authority: written by hand (configured), or claimed from snowflake.registry and how the claim stands';

-- Watermarks for consumers that page by ID (src/sql/watermark.rs, src/sequences/watermark.rs).

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
