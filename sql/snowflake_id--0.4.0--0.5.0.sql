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

-- ============================================================================================
-- Issue 34: claimed numbers keep the registry's secrets and outlive its outages. The registry's
-- table is out of every role's reach but its functions', which lock no table (a grantee's open
-- transaction cannot stop other holders' renewals),
-- bound their arguments (22023), and a release that names the lease it ends frees the number
-- once its hold has passed (a server's shutdown, snowflake_node_detach()). Grant the new
-- release to the claiming role as the others: GRANT EXECUTE ON FUNCTION
-- snowflake_registry_release(text, text, text, integer, interval, bigint) TO claims.
-- ============================================================================================

-- The table moves into a schema of its own, which no role may use but the functions' owner:
-- a role that can name it can queue a lock on it (PREPARE of an UPDATE, CREATE RULE), behind
-- which every renewal would wait.
CREATE SCHEMA snowflake_id_registry;
COMMENT ON SCHEMA snowflake_id_registry IS
    'The claims of snowflake_id''s registry, reached only through its functions';
REVOKE ALL ON SCHEMA snowflake_id_registry FROM PUBLIC;
ALTER TABLE snowflake_registry SET SCHEMA snowflake_id_registry;

CREATE OR REPLACE FUNCTION snowflake_registry_claim(
        kind text, registry_group text, holder text, max_number integer,
        lease interval, hold_after interval,
        OUT number integer, OUT lease_until timestamptz, OUT era_floor bigint,
        OUT registry text)
    VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    -- It waits only where the rules above do not skip: briefly, then it skips the number, or
    -- fails and the holder tries again.
    SET lock_timeout = '10ms'
    LANGUAGE plpgsql AS $claim$
DECLARE
    mine record;
    held text;
    candidate integer;
    taken boolean := false;
BEGIN
    IF kind NOT IN ('node', 'authority') THEN
        RAISE EXCEPTION 'unknown kind of number "%"', kind USING ERRCODE = '22023';
    END IF;
    IF max_number < 0 OR max_number OPERATOR(pg_catalog.>)
           (CASE kind WHEN 'node' THEN 8191 ELSE 15 END) THEN
        RAISE EXCEPTION 'max_number % is outside the % numbers (0 .. %)', max_number, kind,
            (CASE kind WHEN 'node' THEN 8191 ELSE 15 END) USING ERRCODE = '22023';
    END IF;
    -- Compared as the moments they give (an interval's months are calendar months when added,
    -- 30 days when compared).
    IF (pg_catalog.now() OPERATOR(pg_catalog.+) lease) OPERATOR(pg_catalog.<=) pg_catalog.now()
       OR (pg_catalog.now() OPERATOR(pg_catalog.+) lease) OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 day')
       OR (pg_catalog.now() OPERATOR(pg_catalog.+) hold_after) OPERATOR(pg_catalog.<) pg_catalog.now()
       OR (pg_catalog.now() OPERATOR(pg_catalog.+) hold_after) OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 day') THEN
        RAISE EXCEPTION 'invalid claim parameters'
            USING ERRCODE = '22023', DETAIL = 'A lease above 0 and a hold of 0 or more, each at most a day.';
    END IF;
    IF pg_catalog.octet_length(registry_group) OPERATOR(pg_catalog.>) 255
       OR pg_catalog.octet_length(holder) OPERATOR(pg_catalog.>) 2048 THEN
        RAISE EXCEPTION 'invalid claim parameters'
            USING ERRCODE = '22023', DETAIL = 'A group name of at most 255 bytes and a holder of at most 2048.';
    END IF;
    -- The database's OID too: a database dropped and made again under the same name is
    -- another registry (its claims are gone).
    registry := (SELECT s.system_identifier::text FROM pg_catalog.pg_control_system() s)
                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||)
                (SELECT d.oid::text FROM pg_catalog.pg_database d
                  WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) pg_catalog.current_database();
    lease_until := pg_catalog.now() OPERATOR(pg_catalog.+) lease;

    -- The same server again (a restart of its worker): nobody else may have held the number
    -- since. Its own row only (the holder's name has a secret part).
    SELECT r.number, r.era_floor INTO mine
      FROM snowflake_id_registry.snowflake_registry r
     WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
       AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
       AND r.holder OPERATOR(pg_catalog.=) snowflake_registry_claim.holder
       AND NOT r.released AND r.number OPERATOR(pg_catalog.<=) max_number
       -- Not a row whose lease and hold have passed: another claim may be taking it over
       -- (and keep it locked); the holder claims as a new one then.
       AND r.reusable_after OPERATOR(pg_catalog.>=) pg_catalog.now()
     ORDER BY r.number LIMIT 1
       FOR UPDATE;
    IF FOUND THEN
        number := mine.number;
        era_floor := mine.era_floor;
        UPDATE snowflake_id_registry.snowflake_registry r
           SET renewed_at = pg_catalog.now(), lease_until = snowflake_registry_claim.lease_until,
               -- Never earlier than before: values the holder made under the longer hold of
               -- an earlier claim or renewal may still be ahead of its clock.
               reusable_after = GREATEST(r.reusable_after,
                   snowflake_registry_claim.lease_until OPERATOR(pg_catalog.+) hold_after)
         WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
           AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
           AND r.number OPERATOR(pg_catalog.=) snowflake_registry_claim.number;
        RETURN;
    END IF;

    -- A new holder's gdids are of an era above every era of the group's authorities so far:
    -- above what an earlier holder of this authority used, and above the eras its own gdid
    -- sequences may have reached under an authority it held before. (Two claims at once may
    -- get the same floor: for different authorities, whose gdids never meet.)
    era_floor := 0;
    IF snowflake_registry_claim.kind OPERATOR(pg_catalog.=) 'authority' THEN
        SELECT COALESCE(max(r.era_floor) OPERATOR(pg_catalog.+) 1, 0) INTO era_floor
          FROM snowflake_id_registry.snowflake_registry r
         WHERE r.kind OPERATOR(pg_catalog.=) 'authority'
           AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group;
        -- A gdid's era is 32 bits: past the last one, no new holder can be kept apart.
        IF era_floor OPERATOR(pg_catalog.>) 4294967295 THEN
            RAISE EXCEPTION 'every era of group "%" has been used', snowflake_registry_claim.registry_group
                USING ERRCODE = '53400',
                      HINT = 'Use another snowflake.registry_group, or registry, for gdid authorities.';
        END IF;
    END IF;

    -- The lowest number nobody may use, as far as this statement sees: taken if nobody else
    -- is taking it, else the next.
    FOR candidate IN
        SELECT n FROM pg_catalog.generate_series(0, max_number) n
         WHERE NOT EXISTS (
                   SELECT FROM snowflake_id_registry.snowflake_registry r
                    WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
                      AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
                      AND r.number OPERATOR(pg_catalog.=) n
                      AND r.reusable_after OPERATOR(pg_catalog.>=) pg_catalog.now())
         ORDER BY n
    LOOP
        IF NOT EXISTS (
               SELECT FROM snowflake_id_registry.snowflake_registry r
                WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
                  AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
                  AND r.number OPERATOR(pg_catalog.=) candidate) THEN
            -- No row yet: insert one. Where another claim is inserting it (and has not
            -- committed), the insert waits for that claim, up to lock_timeout: then the
            -- number is skipped.
            BEGIN
                INSERT INTO snowflake_id_registry.snowflake_registry AS r
                       (kind, registry_group, number, holder, claimed_at, renewed_at, lease_until,
                        reusable_after, era_floor, released)
                VALUES (snowflake_registry_claim.kind, snowflake_registry_claim.registry_group,
                        candidate, snowflake_registry_claim.holder, pg_catalog.now(), pg_catalog.now(),
                        snowflake_registry_claim.lease_until,
                        snowflake_registry_claim.lease_until OPERATOR(pg_catalog.+) hold_after,
                        snowflake_registry_claim.era_floor, false)
                ON CONFLICT ON CONSTRAINT snowflake_registry_pkey DO NOTHING;
                taken := FOUND;
            EXCEPTION WHEN lock_not_available THEN
                CONTINUE;
            END;
        END IF;
        IF NOT taken THEN
            -- A row of a number nobody may use any more (its holder's lease and the hold
            -- after it have passed): take it over, unless another claim has it locked.
            PERFORM FROM snowflake_id_registry.snowflake_registry r
              WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
                AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
                AND r.number OPERATOR(pg_catalog.=) candidate
                AND r.reusable_after OPERATOR(pg_catalog.<) pg_catalog.now()
                FOR UPDATE SKIP LOCKED;
            IF FOUND THEN
                UPDATE snowflake_id_registry.snowflake_registry r
                   SET holder = snowflake_registry_claim.holder, claimed_at = pg_catalog.now(),
                       renewed_at = pg_catalog.now(), lease_until = snowflake_registry_claim.lease_until,
                       reusable_after = GREATEST(r.reusable_after,
                           snowflake_registry_claim.lease_until OPERATOR(pg_catalog.+) hold_after),
                       era_floor = snowflake_registry_claim.era_floor, released = false
                 WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
                   AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
                   AND r.number OPERATOR(pg_catalog.=) candidate;
                taken := true;
            END IF;
        END IF;
        IF taken THEN
            number := candidate;
            EXIT;
        END IF;
    END LOOP;
    IF NOT taken THEN
        SELECT pg_catalog.string_agg(pg_catalog.format('%s (%s)', r.number,
                                         pg_catalog.split_part(r.holder, ' #', 1)),
                                     ', ' ORDER BY r.number)
          INTO held
          FROM (SELECT * FROM snowflake_id_registry.snowflake_registry r
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
    -- A holder that moves to another number gives up the one it had.
    -- (Not one another claim has locked: that one is taking it over.)
    UPDATE snowflake_id_registry.snowflake_registry r SET released = true
     WHERE (r.kind, r.registry_group, r.number) IN (
           SELECT o.kind, o.registry_group, o.number
             FROM snowflake_id_registry.snowflake_registry o
            WHERE o.kind OPERATOR(pg_catalog.=) snowflake_registry_claim.kind
              AND o.registry_group OPERATOR(pg_catalog.=) snowflake_registry_claim.registry_group
              AND o.holder OPERATOR(pg_catalog.=) snowflake_registry_claim.holder
              AND o.number OPERATOR(pg_catalog.<>) snowflake_registry_claim.number
              AND NOT o.released
              FOR UPDATE SKIP LOCKED);
END
$claim$;

CREATE OR REPLACE FUNCTION snowflake_registry_renew(
        kind text, registry_group text, holder text, number integer,
        lease interval, hold_after interval,
        OUT lease_until timestamptz, OUT registry text)
    VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    LANGUAGE plpgsql AS $renew$
BEGIN
    -- Compared as the moments they give (an interval's months are calendar months when added,
    -- 30 days when compared).
    IF (pg_catalog.now() OPERATOR(pg_catalog.+) lease) OPERATOR(pg_catalog.<=) pg_catalog.now()
       OR (pg_catalog.now() OPERATOR(pg_catalog.+) lease) OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 day')
       OR (pg_catalog.now() OPERATOR(pg_catalog.+) hold_after) OPERATOR(pg_catalog.<) pg_catalog.now()
       OR (pg_catalog.now() OPERATOR(pg_catalog.+) hold_after) OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 day') THEN
        RAISE EXCEPTION 'invalid renewal parameters'
            USING ERRCODE = '22023', DETAIL = 'A lease above 0 and a hold of 0 or more, each at most a day.';
    END IF;
    -- The database's OID too: a database dropped and made again under the same name is
    -- another registry (its claims are gone).
    registry := (SELECT s.system_identifier::text FROM pg_catalog.pg_control_system() s)
                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||)
                (SELECT d.oid::text FROM pg_catalog.pg_database d
                  WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) pg_catalog.current_database();
    -- A row whose lease and hold have passed may be another claim's to take over, which locks
    -- it (and may keep its transaction open): its holder does not wait for that one, it has
    -- lost the number (NULL), and claims another.
    IF EXISTS (SELECT FROM snowflake_id_registry.snowflake_registry r
                WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_renew.kind
                  AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_renew.registry_group
                  AND r.number OPERATOR(pg_catalog.=) snowflake_registry_renew.number
                  AND r.reusable_after OPERATOR(pg_catalog.<) pg_catalog.now()) THEN
        PERFORM FROM snowflake_id_registry.snowflake_registry r
          WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_renew.kind
            AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_renew.registry_group
            AND r.number OPERATOR(pg_catalog.=) snowflake_registry_renew.number
            AND r.holder OPERATOR(pg_catalog.=) snowflake_registry_renew.holder
            AND NOT r.released
            FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    UPDATE snowflake_id_registry.snowflake_registry r
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

CREATE OR REPLACE FUNCTION snowflake_registry_release(
        kind text, registry_group text, holder text, number integer, hold_after interval)
    RETURNS boolean
    VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    LANGUAGE plpgsql AS $release$
BEGIN
    IF (pg_catalog.now() OPERATOR(pg_catalog.+) hold_after) OPERATOR(pg_catalog.<) pg_catalog.now()
       OR (pg_catalog.now() OPERATOR(pg_catalog.+) hold_after) OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 day') THEN
        RAISE EXCEPTION 'invalid release parameters'
            USING ERRCODE = '22023', DETAIL = 'A hold of 0 or more, at most a day.';
    END IF;
    UPDATE snowflake_id_registry.snowflake_registry r
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

CREATE FUNCTION snowflake_registry_release(
        kind text, registry_group text, holder text, number integer, hold_after interval,
        lease_until_ms bigint)
    RETURNS boolean
    VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    LANGUAGE plpgsql AS $release$
BEGIN
    IF (pg_catalog.now() OPERATOR(pg_catalog.+) hold_after) OPERATOR(pg_catalog.<) pg_catalog.now()
       OR (pg_catalog.now() OPERATOR(pg_catalog.+) hold_after) OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 day') THEN
        RAISE EXCEPTION 'invalid release parameters'
            USING ERRCODE = '22023', DETAIL = 'A hold of 0 or more, at most a day.';
    END IF;
    UPDATE snowflake_id_registry.snowflake_registry r
       SET released = true,
           lease_until = LEAST(r.lease_until, pg_catalog.now()),
           reusable_after = CASE
               WHEN (pg_catalog.date_part('epoch', r.lease_until) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8
                    OPERATOR(pg_catalog.=) snowflake_registry_release.lease_until_ms
               THEN pg_catalog.now() OPERATOR(pg_catalog.+) hold_after
               ELSE GREATEST(r.reusable_after, pg_catalog.now() OPERATOR(pg_catalog.+) hold_after) END
     WHERE r.kind OPERATOR(pg_catalog.=) snowflake_registry_release.kind
       AND r.registry_group OPERATOR(pg_catalog.=) snowflake_registry_release.registry_group
       AND r.number OPERATOR(pg_catalog.=) snowflake_registry_release.number
       AND r.holder OPERATOR(pg_catalog.=) snowflake_registry_release.holder
       AND NOT r.released;
    RETURN FOUND;
END
$release$;
COMMENT ON FUNCTION snowflake_registry_release(text, text, text, integer, interval, bigint) IS
    'Registry side of snowflake.node_id = auto and gdid.authority = auto: gives a server''s number back, free once the hold has passed if no later claim or renewal of it arrived';
REVOKE EXECUTE ON FUNCTION snowflake_registry_release(text, text, text, integer, interval, bigint) FROM PUBLIC;
