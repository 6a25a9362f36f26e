-- A driver that knows no gdid (its OID differs in each database) sends one as text, typed text
-- or varchar: JDBC's setString, SQLAlchemy's String, TypeORM's varchar. The assignment casts
-- from text and varchar let INSERT and UPDATE store it, and the comparison operators between
-- gdid and text (varchar reaches them as text) compare it as a literal, through the column's
-- index; PREPARE with typed parameters is what those drivers send.
CREATE TABLE tp (id gdid PRIMARY KEY, note varchar, t text);
PREPARE ins(varchar, varchar) AS INSERT INTO tp (id, note) VALUES ($1, $2) RETURNING id;
EXECUTE ins('1:2:3', 'three');
PREPARE ins_text(text) AS INSERT INTO tp (id, t) VALUES ($1, $1) RETURNING id;
EXECUTE ins_text('1:2:4');
EXECUTE ins_text('0x000000010000000000000007');
PREPARE upd(varchar, varchar) AS UPDATE tp SET id = $2 WHERE id = $1 RETURNING id;
EXECUTE upd('1:2:4', '1:2:5');
PREPARE sel(varchar) AS SELECT id FROM tp WHERE id = $1;
EXECUTE sel('1:2:3');
PREPARE cmp(varchar) AS
    SELECT id, id = $1 AS eq, id <> $1 AS ne, id < $1 AS lt, id <= $1 AS le, id > $1 AS gt,
           id >= $1 AS ge, $1 < id AS reversed
      FROM tp ORDER BY id;
EXECUTE cmp('1:2:5');
PREPARE any_of(text[]) AS SELECT id FROM tp WHERE id = ANY ($1) ORDER BY id;
EXECUTE any_of('{1:2:3,1:2:5}');
PREPARE del(text) AS DELETE FROM tp WHERE id = $1 RETURNING id;
EXECUTE del('0x000000010000000000000007');
-- The index serves a parameter typed varchar: the operator's SQL function is inlined into the
-- gdid comparison, and the cast runs once, on the parameter.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) EXECUTE sel('1:2:3');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE sel('1:2:3');
RESET plan_cache_mode;
RESET enable_seqscan;
-- Bad text is the gdid input's error, as for a literal.
EXECUTE sel('nope');
\echo :LAST_ERROR_SQLSTATE
EXECUTE ins('1:16:0', 'authority out of range');
\echo :LAST_ERROR_SQLSTATE
-- A text column is compared with a gdid as a gdid (before, 42883).
SELECT id FROM tp WHERE id = (SELECT t FROM tp WHERE t IS NOT NULL);

-- What resolved before resolves the same: text is the preferred type of the string category,
-- so a text or varchar argument keeps picking text's operators and functions. The types and
-- operators of these expressions are those of a database without the extension (below).
UPDATE tp SET t = note WHERE note IS NOT NULL;
\set mixed 'SELECT pg_typeof(note = t) AS eq, pg_typeof(note || t) AS cat, pg_typeof(max(note)) AS max_varchar, pg_typeof(min(t)) AS min_text, pg_typeof(greatest(note, t)) AS greatest, pg_typeof(coalesce(note, t)) AS coalesce, pg_typeof(CASE WHEN true THEN note ELSE t END) AS "case" FROM tp GROUP BY note, t LIMIT 1'
\set plan 'EXPLAIN (VERBOSE, COSTS OFF) SELECT note = t, note < ''x'', t LIKE note, note IN (''a'', ''b''), t = ANY (ARRAY[''a'', ''b'']), upper(note), length(t), note::text || ''x'', concat(note, t) FROM tp'
:mixed;
:plan;
\set regress_db :DBNAME
CREATE DATABASE snowflake_without_extension;
\c snowflake_without_extension
CREATE TABLE tp (note varchar, t text);
INSERT INTO tp VALUES ('three', 'three');
:mixed;
:plan;
\c :regress_db
DROP DATABASE snowflake_without_extension;
SELECT note FROM tp UNION SELECT t FROM tp ORDER BY 1;
-- Mixing a gdid with text in one result column stays an error, as before: the casts are
-- implicit, but a UNION, CASE or COALESCE never moves across type categories.
SELECT id FROM tp UNION SELECT t FROM tp;
\echo :LAST_ERROR_SQLSTATE
SELECT coalesce(id, t) FROM tp;
\echo :LAST_ERROR_SQLSTATE
-- No cast from text or varchar to gdid is implicit, so a function overloaded for gdid and for
-- a string or OID type resolves a text or varchar argument as without the extension.
CREATE FUNCTION tp_f(varchar) RETURNS text LANGUAGE sql AS $$ SELECT 'varchar' $$;
CREATE FUNCTION tp_f(gdid) RETURNS text LANGUAGE sql AS $$ SELECT 'gdid' $$;
CREATE FUNCTION tp_g(regclass) RETURNS text LANGUAGE sql AS $$ SELECT 'regclass' $$;
CREATE FUNCTION tp_g(gdid) RETURNS text LANGUAGE sql AS $$ SELECT 'gdid' $$;
CREATE FUNCTION tp_h(name) RETURNS text LANGUAGE sql AS $$ SELECT 'name' $$;
CREATE FUNCTION tp_h(gdid) RETURNS text LANGUAGE sql AS $$ SELECT 'gdid' $$;
CREATE FUNCTION tp_p(regclass, name) RETURNS text LANGUAGE sql AS $$ SELECT 'regclass, name' $$;
CREATE FUNCTION tp_p(gdid, text) RETURNS text LANGUAGE sql AS $$ SELECT 'gdid, text' $$;
SELECT tp_f('tp'::text) AS f_text, tp_f('a' || 'b') AS f_concat, tp_g('tp'::text) AS g_text,
       tp_h('tp'::varchar) AS h_varchar, tp_p('tp'::text, 'x'::text) AS p_text_text;
DROP FUNCTION tp_f(varchar), tp_f(gdid), tp_g(regclass), tp_g(gdid), tp_h(name), tp_h(gdid),
    tp_p(regclass, name), tp_p(gdid, text);
-- A function overloaded for text and gdid takes a text or varchar argument as text.
CREATE FUNCTION tp_which(text) RETURNS text LANGUAGE sql AS $$ SELECT 'text' $$;
CREATE FUNCTION tp_which(gdid) RETURNS text LANGUAGE sql AS $$ SELECT 'gdid' $$;
SELECT tp_which(note) AS varchar_arg, tp_which(t) AS text_arg, tp_which('1:2:3') AS literal,
       tp_which(id) AS gdid_arg
  FROM tp WHERE note IS NOT NULL;
DROP FUNCTION tp_which(text), tp_which(gdid);
DROP TABLE tp;
