-- Seeding (see lifecycle): which defaults name a sequence, which relations are read, and as
-- whom. Each case drops its sequence first, so that its next use is a first meeting.
SET client_min_messages = warning;

-- Every way of writing a constant name counts: it is a constant after PostgreSQL's own
-- constant folding (named arguments in any order, casts, COLLATE, parentheses, an immutable
-- expression). Each table holds a key of this server (node 5, authority 6) a little ahead;
-- the next generated key continues right above it.
CREATE FUNCTION seeding_ahead(node int) RETURNS bigint LANGUAGE sql
    RETURN snowflake_from_timestamp(now() + interval '2 s') + 4096 * node + 7;
CREATE TABLE sd_collate (id snowflake PRIMARY KEY DEFAULT snowflake_next('sd_c' COLLATE "C"));
CREATE TABLE sd_cast (id snowflake PRIMARY KEY DEFAULT snowflake_next(CAST('sd_cast' AS text)));
CREATE TABLE sd_varchar (id snowflake PRIMARY KEY DEFAULT snowflake_next('sd_varchar'::varchar));
CREATE TABLE sd_name (id snowflake PRIMARY KEY DEFAULT snowflake_next('sd_name'::name));
CREATE TABLE sd_concat (id snowflake PRIMARY KEY DEFAULT snowflake_next(('sd_' || 'concat')));
CREATE TABLE sd_upper (id snowflake PRIMARY KEY DEFAULT snowflake_next(upper('sd_upper')));
CREATE TABLE sd_named (id snowflake PRIMARY KEY DEFAULT snowflake_next(seq => 'sd_named'));
CREATE TABLE sd_wrapped (id bigint PRIMARY KEY DEFAULT coalesce(NULL, snowflake_next('sd_wrapped')) + 0);
SELECT c.relname, pg_get_expr(d.adbin, d.adrelid) AS "default"
  FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid
 WHERE c.relname LIKE 'sd\_%' ORDER BY 1;
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['sd_collate', 'sd_cast', 'sd_varchar', 'sd_name', 'sd_concat',
                             'sd_upper', 'sd_named', 'sd_wrapped'] LOOP
        EXECUTE format('INSERT INTO %I VALUES (seeding_ahead(5))', t);
    END LOOP;
END $$;
SELECT snowflake_drop_sequence(s)
  FROM unnest(ARRAY['sd_c', 'sd_cast', 'sd_varchar', 'sd_name', 'sd_concat', 'SD_UPPER',
                    'sd_named', 'sd_wrapped']) s;
DO $$
DECLARE
    t text;
    ids bigint[];
BEGIN
    FOREACH t IN ARRAY ARRAY['sd_collate', 'sd_cast', 'sd_varchar', 'sd_name', 'sd_concat',
                             'sd_upper', 'sd_named', 'sd_wrapped'] LOOP
        EXECUTE format('INSERT INTO %I DEFAULT VALUES', t);
        EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %I', t) INTO ids;
        RAISE WARNING '%: % keys, the new one right above: %', t, cardinality(ids),
            ids[2] = ids[1] + 1;
    END LOOP;
END $$;

-- gdid: named arguments in either order, and casts.
CREATE TABLE sd_g_named (id gdid PRIMARY KEY DEFAULT gdid_next(scope => 'shop', sequence => 'gn'));
CREATE TABLE sd_g_reordered (id gdid PRIMARY KEY DEFAULT gdid_next(sequence => 'gr', scope => 'shop'));
CREATE TABLE sd_g_varchar (id gdid PRIMARY KEY DEFAULT gdid_next('shop'::varchar, 'gv'::varchar));
INSERT INTO sd_g_named VALUES ('0:6:100');
INSERT INTO sd_g_reordered VALUES ('0:6:200');
INSERT INTO sd_g_varchar VALUES ('0:6:300');
SELECT gdid_drop_sequence('shop', s) FROM unnest(ARRAY['gn', 'gr', 'gv']) s;
INSERT INTO sd_g_named DEFAULT VALUES;
INSERT INTO sd_g_reordered DEFAULT VALUES;
INSERT INTO sd_g_varchar DEFAULT VALUES;
SELECT 'named' AS t, array_agg(id ORDER BY id) FROM sd_g_named
UNION ALL SELECT 'reordered', array_agg(id ORDER BY id) FROM sd_g_reordered
UNION ALL SELECT 'varchar', array_agg(id ORDER BY id) FROM sd_g_varchar;

-- A name that is not a constant is not seen: this default reads a setting at every insert.
CREATE TABLE sd_setting (id bigint DEFAULT snowflake_next(current_setting('sd.seq')));
SET sd.seq = 'sd_setting';
INSERT INTO sd_setting VALUES (seeding_ahead(5));
SELECT snowflake_drop_sequence('sd_setting');
INSERT INTO sd_setting DEFAULT VALUES;
SELECT count(*) AS keys, max(id) > min(id) + 1 AS stored_key_not_seen FROM sd_setting;
RESET sd.seq;

-- A default whose name cannot be folded (its function fails) is skipped, with a line in the
-- server log; every insert that used it would have failed too.
CREATE FUNCTION sd_fails(t text) RETURNS text IMMUTABLE LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'sd_fails(%)', t; END $$;
CREATE TABLE sd_broken (id bigint DEFAULT snowflake_next(sd_fails('sd_broken')));
SET client_min_messages = log;
SELECT snowflake_next('sd_broken') > 0 AS generates;
SET client_min_messages = warning;

-- Partitioned tables: the leaf partitions are read, each as a plain table, also one attached
-- later without a default of its own.
CREATE TABLE sd_parts (id snowflake NOT NULL DEFAULT snowflake_next('sd_parts'), n int)
    PARTITION BY RANGE (id);
CREATE TABLE sd_parts_low PARTITION OF sd_parts FOR VALUES FROM (0) TO (4194304000000000);
CREATE TABLE sd_parts_high (id snowflake NOT NULL, n int);
ALTER TABLE sd_parts ATTACH PARTITION sd_parts_high FOR VALUES FROM (4194304000000000) TO (MAXVALUE);
INSERT INTO sd_parts VALUES (seeding_ahead(5), 1);
SELECT tableoid::regclass AS partition, n FROM sd_parts;
SELECT snowflake_drop_sequence('sd_parts');
INSERT INTO sd_parts (n) VALUES (2);
SELECT n, id - lag(id) OVER (ORDER BY id) AS above_previous FROM sd_parts ORDER BY id;

-- Security. Seeding reads tables on behalf of whoever calls a generator first, often a
-- superuser. It reads only plain tables (and the partitions of partitioned ones), never views
-- or foreign tables, and each one as its owner in a security-restricted operation, as
-- PostgreSQL maintains a table: code of the owner's (a view's query, a function in a
-- default) never runs with the caller's privileges.
CREATE ROLE sd_attacker;
GRANT CREATE ON SCHEMA public TO sd_attacker;
SET ROLE sd_attacker;
CREATE FUNCTION sd_escalate() RETURNS bigint LANGUAGE plpgsql
    AS $$ BEGIN EXECUTE 'ALTER ROLE sd_attacker SUPERUSER'; RETURN 1; END $$;
-- A view whose columns default to a generator, for both kinds: never read.
CREATE VIEW sd_pwn AS SELECT sd_escalate() AS id, sd_escalate()::text::gdid AS g;
ALTER VIEW sd_pwn ALTER COLUMN id SET DEFAULT snowflake_next('sd_pwn');
ALTER VIEW sd_pwn ALTER COLUMN g SET DEFAULT gdid_next('sd', 'pwn2');
-- A table whose default names its sequence through a function of the owner's: the function
-- runs as the owner (the name it makes says who ran it).
CREATE FUNCTION sd_whoami() RETURNS text IMMUTABLE LANGUAGE plpgsql
    AS $$ BEGIN RETURN 'sd_as_' || current_user; END $$;
CREATE TABLE sd_owned (id bigint DEFAULT snowflake_next(sd_whoami()));
INSERT INTO sd_owned VALUES (snowflake_from_timestamp(now() + interval '2 s') + 4096 * 5 + 7);
RESET ROLE;
SELECT snowflake_next('sd_pwn') > 0 AS generates, gdid_next('sd', 'pwn2') AS gdid;
SELECT snowflake_next('sd_as_sd_attacker') = (SELECT id + 1 FROM sd_owned) AS seeded_as_the_owner;
SELECT rolname, rolsuper FROM pg_roles WHERE rolname = 'sd_attacker';

-- A table its owner cannot read (FORCE ROW LEVEL SECURITY hides rows from the owner) makes
-- the seed fail rather than miss keys; the error says what was being read, and for whom.
CREATE ROLE sd_owner;
GRANT CREATE ON SCHEMA public TO sd_owner;
SET ROLE sd_owner;
CREATE TABLE sd_hidden (id bigint DEFAULT snowflake_next('sd_hidden'));
ALTER TABLE sd_hidden ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY sd_nothing ON sd_hidden USING (false);
RESET ROLE;
DO $$
DECLARE
    message text;
    context text;
    state text;
BEGIN
    PERFORM snowflake_next('sd_hidden');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, context = PG_EXCEPTION_CONTEXT,
                            state = RETURNED_SQLSTATE;
    RAISE WARNING '% (%)', message, state;
    RAISE WARNING '%', (SELECT string_agg(l, E'\n') FROM regexp_split_to_table(context, E'\n') l
                         WHERE l LIKE 'reading%');
END $$;
ALTER TABLE sd_hidden NO FORCE ROW LEVEL SECURITY;
SELECT snowflake_next('sd_hidden') > 0 AS generates;

DROP VIEW sd_pwn;
DROP TABLE sd_owned, sd_hidden;
DROP FUNCTION sd_escalate(), sd_whoami();
REVOKE CREATE ON SCHEMA public FROM sd_attacker, sd_owner;
DROP ROLE sd_attacker, sd_owner;
DROP TABLE sd_collate, sd_cast, sd_varchar, sd_name, sd_concat, sd_upper, sd_named, sd_wrapped,
    sd_g_named, sd_g_reordered, sd_g_varchar, sd_setting, sd_broken, sd_parts;
DROP FUNCTION seeding_ahead(int), sd_fails(text);
RESET client_min_messages;
