-- The install and update scripts under a hostile search_path: a role with CREATE on the
-- schema the extension goes into plants look-alike operators and functions there first, each
-- of which would make the role superuser if a superuser ran it. Every expression of the
-- extension qualifies its operators (OPERATOR(pg_catalog.*)) and functions, so none is bound
-- into an object of the extension, by CREATE EXTENSION or by ALTER EXTENSION UPDATE from
-- each earlier release; calling every function as a superuser gives the role nothing.
\set regress_db :DBNAME
CREATE DATABASE snowflake_hostile;
\c snowflake_hostile
CREATE ROLE hs_mallory;
GRANT CREATE ON SCHEMA public TO hs_mallory;
SET ROLE hs_mallory;
CREATE TABLE public.hs_log (who text, what text);
GRANT INSERT ON public.hs_log TO PUBLIC;
-- The trap: run by a superuser, it makes hs_mallory superuser (and says so).
CREATE FUNCTION public.hs_trap(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.hs_log VALUES (current_user, what);
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER ROLE hs_mallory SUPERUSER;
    END IF;
    RETURN true;
END $$;
-- Operators that match the extension's expressions better than pg_catalog's do (an exact
-- match of argument types wins over one that needs a cast).
CREATE FUNCTION public.hs_num_int(numeric, integer) RETURNS numeric LANGUAGE sql
    AS $$ SELECT CASE WHEN public.hs_trap('* numeric integer') THEN $1 END $$;
CREATE OPERATOR public.* (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = public.hs_num_int);
CREATE FUNCTION public.hs_dbl_int(double precision, integer) RETURNS double precision
    LANGUAGE sql AS $$ SELECT CASE WHEN public.hs_trap('* double integer') THEN $1 END $$;
CREATE OPERATOR public.* (LEFTARG = double precision, RIGHTARG = integer,
                          FUNCTION = public.hs_dbl_int);
CREATE FUNCTION public.hs_num_bigint(numeric, bigint) RETURNS numeric LANGUAGE sql
    AS $$ SELECT CASE WHEN public.hs_trap('* numeric bigint') THEN $1 END $$;
CREATE OPERATOR public.* (LEFTARG = numeric, RIGHTARG = bigint, FUNCTION = public.hs_num_bigint);
CREATE FUNCTION public.hs_char_text("char", text) RETURNS boolean LANGUAGE sql
    AS $$ SELECT public.hs_trap('= char text') $$;
CREATE OPERATOR public.= (LEFTARG = "char", RIGHTARG = text, FUNCTION = public.hs_char_text);
CREATE FUNCTION public.hs_oid_oid(oid, regnamespace) RETURNS boolean LANGUAGE sql
    AS $$ SELECT public.hs_trap('= oid regnamespace') $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regnamespace, FUNCTION = public.hs_oid_oid);
-- The catalog queries the extension runs itself (in DDL of any role, through its hooks) are
-- no place for one either: oid = regclass (pg_depend.classid against a class) is an exact
-- match here, and pg_catalog's needs a cast.
CREATE FUNCTION public.hs_oid_class(oid, regclass) RETURNS boolean LANGUAGE sql
    AS $$ SELECT public.hs_trap('= oid regclass') $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.hs_oid_class);
CREATE FUNCTION public.hs_text_text(text, text) RETURNS text LANGUAGE sql
    AS $$ SELECT CASE WHEN public.hs_trap('|| text text') THEN $1 END $$;
CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = public.hs_text_text);
CREATE FUNCTION public.hs_jsonb_text(jsonb, text[]) RETURNS text LANGUAGE sql
    AS $$ SELECT CASE WHEN public.hs_trap('#>> jsonb') THEN '' END $$;
CREATE OPERATOR public.#>> (LEFTARG = jsonb, RIGHTARG = text[], FUNCTION = public.hs_jsonb_text);
CREATE FUNCTION public.hs_ts_ts(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql
    AS $$ SELECT public.hs_trap('> timestamptz') $$;
CREATE OPERATOR public.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = public.hs_ts_ts);
CREATE FUNCTION public.hs_big_big(bigint, bigint) RETURNS boolean LANGUAGE sql
    AS $$ SELECT public.hs_trap('> bigint') $$;
CREATE OPERATOR public.> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.hs_big_big);
-- Functions of the names the extension calls, with argument types that match better.
CREATE FUNCTION public.round(double precision) RETURNS numeric LANGUAGE sql
    AS $$ SELECT CASE WHEN public.hs_trap('round') THEN 0 END $$;
CREATE FUNCTION public.date_part(text, interval) RETURNS numeric LANGUAGE sql
    AS $$ SELECT CASE WHEN public.hs_trap('date_part') THEN 0 END $$;
CREATE FUNCTION public.int8range(bigint, bigint) RETURNS int8range LANGUAGE sql
    AS $$ SELECT CASE WHEN public.hs_trap('int8range') THEN NULL::int8range END $$;
CREATE FUNCTION public.jsonb_build_object(text, text, text, timestamptz, text, integer, text,
                                          integer) RETURNS jsonb LANGUAGE sql
    AS $$ SELECT CASE WHEN public.hs_trap('jsonb_build_object') THEN '{}'::jsonb END $$;
RESET ROLE;

-- The planted objects, as a superuser installs into public.
CREATE EXTENSION snowflake_id;
-- A superuser's DDL, which the extension's hooks look at: a table with and without a
-- generating DEFAULT, a DEFAULT set and dropped, a domain's, the watch.
CREATE TABLE hs_plain (x int);
CREATE TABLE hs_keyed (id snowflake PRIMARY KEY DEFAULT snowflake_next('hs_keyed'));
ALTER TABLE hs_plain ALTER COLUMN x SET DEFAULT 1;
ALTER TABLE hs_keyed ALTER COLUMN id DROP DEFAULT;
CREATE DOMAIN hs_dom AS gdid DEFAULT gdid_next('hs', 'dom');
CREATE TABLE hs_domained (g hs_dom);
SELECT snowflake_watch_tables() >= 0 AS watched;

-- Every function of the extension, called by a superuser (the gdid operators and support
-- functions through their operators, classes and casts).
CREATE TEMP TABLE hs_calls AS SELECT
    snowflake_next('hs') > 0 AS a,
    (SELECT count(*) FROM snowflake_next_batch('hs', 3)) AS b,
    snowflake_timestamp(1) IS NOT NULL AS c, snowflake_node(1) AS d, snowflake_counter(1) AS e,
    snowflake_from_timestamp(now()) > 0 AS f,
    snowflake_timestamp(1, 'twitter') IS NOT NULL AS g, snowflake_node(1, 'discord') AS h,
    snowflake_counter(1, 'instagram') AS i, snowflake_from_timestamp(now(), 'pgedge') > 0 AS j,
    (snowflake_decode(1)).node AS k, (snowflake_decode(1, 'twitter')).node AS l,
    snowflake_decode_jsonb(1) IS NOT NULL AS m, snowflake_decode_jsonb(1, 'twitter') IS NOT NULL AS n,
    snowflake_range(now() - interval '1 day', now()) IS NOT NULL AS o,
    snowflake_range('2027-01-01', '2027-01-02', 'snowflake_id') IS NOT NULL AS p,
    snowflake_interval('1 day') AS q,
    gdid(1, 2, 3) AS r, gdid_era('1:2:3') AS s, gdid_authority('1:2:3') AS t,
    gdid_counter('1:2:3') AS u, gdid_to_hex('1:2:3') AS v, gdid_to_bytea('1:2:3') AS w,
    gdid_from_bytea(gdid_to_bytea('1:2:3')) AS x, gdid_compress('1:2:3') AS y,
    gdid_decompress(gdid_compress('1:2:3')) AS z, gdid_to_leb128('1:2:3') AS aa,
    gdid_from_leb128(gdid_to_leb128('1:2:3')) AS ab, gdid_next('hs', 'q') IS NOT NULL AS ac,
    (SELECT count(*) FROM gdid_next_block('hs', 'q', 2)) AS ad,
    ('1:2:3'::gdid < '1:2:4' AND '1:2:3'::gdid <= '1:2:3' AND '1:2:3'::gdid = '1:2:3'
     AND '1:2:3'::gdid <> '1:2:4' AND '1:2:4'::gdid > '1:2:3' AND '1:2:4'::gdid >= '1:2:3') AS ae,
    (SELECT max(g) > min(g) FROM unnest(ARRAY['1:2:3'::gdid, '1:2:4']) g) AS af,
    gdid_hash('1:2:3') IS NOT NULL AND gdid_hash_extended('1:2:3', 1) IS NOT NULL AS ag,
    ('1:2:3'::gdid)::text AS ah,
    (SELECT count(*) FROM snowflake_sequences) AS ai, (SELECT count(*) FROM gdid_sequences) AS aj,
    (SELECT count(*) FROM snowflake_node_conflicts) AS ak;
SELECT gdid_advance('hs', 'q', '0:0:100');
SELECT snowflake_watch_tables();
CREATE TABLE hs_keys (id serial PRIMARY KEY);
SELECT snowflake_convert_column('hs_keys', 'id');
CREATE TABLE hs_sorted AS SELECT gdid(0, 1, g) AS g FROM generate_series(1, 1000) g;
CREATE INDEX ON hs_sorted (g);
CREATE INDEX ON hs_sorted USING hash (g);
CREATE INDEX ON hs_sorted USING brin (g);
SELECT count(*) FROM (SELECT g FROM hs_sorted ORDER BY g) s;
SELECT snowflake_drop_sequence('hs'), gdid_drop_sequence('hs', 'q');
SELECT who, what FROM hs_log;
SELECT rolsuper AS mallory_is_superuser FROM pg_roles WHERE rolname = 'hs_mallory';
DROP TABLE hs_keys, hs_sorted;
DROP SEQUENCE snowflake."public.hs_keys.id";

-- The same after ALTER EXTENSION UPDATE from every earlier release, the traps still there.
DROP EXTENSION snowflake_id CASCADE;
CREATE EXTENSION snowflake_id VERSION '0.1.0';
ALTER EXTENSION snowflake_id UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id';
SELECT snowflake_interval('1 day') AS width, snowflake_decode_jsonb(1, 'twitter') IS NOT NULL AS decoded,
       snowflake_range('2027-01-01', '2027-01-02', 'snowflake_id') IS NOT NULL AS ranged,
       (SELECT count(*) FROM snowflake_sequences) AS listed,
       snowflake_next('hs_updated') > 0 AS generated;
DROP EXTENSION snowflake_id CASCADE;
CREATE EXTENSION snowflake_id VERSION '0.2.0';
ALTER EXTENSION snowflake_id UPDATE;
SELECT snowflake_interval('1 day') AS width, (SELECT count(*) FROM gdid_sequences) AS listed;
DROP EXTENSION snowflake_id CASCADE;
CREATE EXTENSION snowflake_id VERSION '0.3.0';
ALTER EXTENSION snowflake_id UPDATE;
SELECT snowflake_interval('1 day') AS width, snowflake_decode_jsonb(1, 'discord') IS NOT NULL AS decoded;
SELECT who, what FROM hs_log;
SELECT rolsuper AS mallory_is_superuser FROM pg_roles WHERE rolname = 'hs_mallory';

\c :regress_db
DROP DATABASE snowflake_hostile;
DROP ROLE hs_mallory;
