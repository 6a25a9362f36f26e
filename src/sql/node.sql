-- Node numbers and authorities claimed from a registry (snowflake.node_id = auto,
-- gdid.authority = auto). Any database with this extension can be the registry: the servers
-- that claim connect to it (snowflake.registry) as a role that may execute the three
-- functions below, and a background worker of each calls them (src/node/worker.rs). The
-- rules of the claim are here, in one transaction each, so that two servers can never hold
-- one number: see docs/operations.md, "Claimed numbers".
--
-- A number is held until lease_until (the registry's clock) and, once its holder stopped
-- renewing it or gave it back, given to another holder only after reusable_after: the end of
-- the lease, plus how far the holder's snowflake sequences may run ahead of the clock, plus
-- twice the clock error the holder allows for (its clock and the next holder's may each be
-- that far from the registry's). A gdid authority given to another holder continues in an
-- era above every era its previous holders may have used (era_floor): gdid sequences are the
-- servers' own, so the next holder's counters would otherwise meet the previous one's.
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
-- The table is in a schema of its own that no role but the functions' owner (the superuser that
-- made the extension) may use. A role that can name a table can queue a lock on it: PREPARE of
-- an UPDATE takes RowExclusiveLock before any privilege is checked, CREATE RULE or CREATE
-- TRIGGER queue a stronger one before they check ownership; every renewal would wait behind
-- that. Without USAGE on the schema no role can name it. (Made in the extension's schema and
-- moved, as the update from 0.4.0 moves it.)
CREATE SCHEMA snowflake_id_registry;
COMMENT ON SCHEMA snowflake_id_registry IS
    'The claims of snowflake_id''s registry, reached only through its functions';
REVOKE ALL ON SCHEMA snowflake_id_registry FROM PUBLIC;
ALTER TABLE snowflake_registry SET SCHEMA snowflake_id_registry;

-- Claims a number for `holder`: the one it holds already (a restart of the same server), or
-- else the lowest number nobody holds and nobody may still be generating under. Returns the
-- number, the end of its lease, the era floor, and this registry's identity (its system
-- identifier and database), which the holder checks at every renewal: two registries must
-- never both hand out numbers to one group.
--
-- No role that may call it can stop the other holders: it locks no table, only rows, and of
-- those only its own holder's and rows of numbers nobody may use any more (whose holders
-- cannot renew them), so a renewal, which touches only its holder's live row, never waits for
-- a grantee's transaction. Claims of one number by two holders at once are kept apart by the
-- row (an update only of a row still reusable, an insert only where none is), and one waits
-- for another's open transaction only briefly: a row another claim has locked is skipped
-- (SKIP LOCKED), and a number another claim is inserting is skipped after 10 ms (no advisory
-- lock: any role could take those; a claim's time is a quarter of its lease, at most 5 s, so
-- only hundreds of claims kept open delay a new one). Its work is bounded: at most every
-- number of a node layout (8192) or the 16 authorities, a lease and a hold of at most a day.
CREATE FUNCTION snowflake_registry_claim(
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
COMMENT ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval) IS
    'Registry side of snowflake.node_id = auto and gdid.authority = auto: claims a number for a server';

-- Renews `holder`'s lease of `number`; NULL if it does not hold it (given back, or given to
-- another holder after its lease passed): the holder must stop generating under it. It
-- updates the holder's own row only, which no other role's call of these functions locks
-- while the lease runs (a claim locks only rows nobody may use any more), so it never waits
-- for another role. No lock_timeout: the claiming server's session bounds every call by its
-- statement_timeout, as long as it waits for an answer itself.
CREATE FUNCTION snowflake_registry_renew(
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
COMMENT ON FUNCTION snowflake_registry_renew(text, text, text, integer, interval, interval) IS
    'Registry side of snowflake.node_id = auto and gdid.authority = auto: renews a server''s lease of its number';

-- Gives `number` back: nobody else gets it before its lease and then `hold_after` have passed
-- (values the holder made ahead of its clock). Never sooner: a release that reaches the
-- registry late (a packet held up by a partition) may meet the same holder's later claim of
-- the number, which must not end before the holder learns of it at its next renewal. True if
-- the holder held it. (The release below, which names the lease it ends, frees sooner.)
CREATE FUNCTION snowflake_registry_release(
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
COMMENT ON FUNCTION snowflake_registry_release(text, text, text, integer, interval) IS
    'Registry side of snowflake.node_id = auto and gdid.authority = auto: gives a server''s number back';

-- Only the roles the registry's administrator chooses may claim.
REVOKE EXECUTE ON FUNCTION snowflake_registry_claim(text, text, text, integer, interval, interval),
    snowflake_registry_renew(text, text, text, integer, interval, interval),
    snowflake_registry_release(text, text, text, integer, interval) FROM PUBLIC;

-- Gives `number` back as above, and names the end of the lease the holder last had confirmed
-- (Unix milliseconds, as the claim and the renewal return it): if the registry's is still that
-- one, no claim or renewal of the number reached the registry after the holder stopped
-- generating and sent this, so nothing later of the holder's can be cut short, and the number
-- is free once `hold_after` has passed from now. Otherwise as the release above. A server's
-- shutdown and snowflake_node_detach() free their numbers in seconds so, not a lease later.
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
