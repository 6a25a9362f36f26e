-- id <@ int8range (and int8range @> id) on a snowflake key. The extension's <@ and @> of bigint
-- (which the snowflake domain is) come before PostgreSQL's polymorphic anyelement <@ anyrange,
-- and their support function plans them as two comparisons of the key: a btree scans a range,
-- partitions are pruned. The same plans on PostgreSQL 15, 17 and 18. Where the comparisons do
-- not apply, it is PostgreSQL's own operator (OPERATOR(pg_catalog.<@) in the plans).
SET timezone = 'UTC';
SET datestyle = 'ISO';
-- Ten days of hourly keys, made by node 1 as another server would have.
CREATE TABLE ranged (id snowflake PRIMARY KEY, v int);
INSERT INTO ranged
SELECT snowflake_from_timestamp('2026-11-20'::timestamptz + g * interval '1 hour', 'snowflake_id') | (1 << 12) | (g % 7), g
  FROM generate_series(0, 239) g;
ANALYZE ranged;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- A constant range of a named layout folds at plan time: an index range scan between two
-- constants.
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ranged WHERE id <@ snowflake_range('2026-11-22', '2026-11-23', 'snowflake_id');
SELECT count(*) FROM ranged WHERE id <@ snowflake_range('2026-11-22', '2026-11-23', 'snowflake_id');
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ranged WHERE snowflake_range('2026-11-22', '2026-11-23', 'snowflake_id') @> id;
-- A stable range (the server's layout, now()): its first and last value, computed once when
-- the scan starts.
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ranged WHERE id <@ snowflake_range('2026-11-22', '2026-11-23');
SELECT count(*) FROM ranged WHERE id <@ snowflake_range('2026-11-22', '2026-11-23');
-- A parameter, as a generic plan of a prepared statement has it.
PREPARE in_range(int8range) AS SELECT count(*) FROM ranged WHERE id <@ $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE in_range(snowflake_range('2026-11-22', '2026-11-24', 'snowflake_id'));
EXECUTE in_range(snowflake_range('2026-11-22', '2026-11-24', 'snowflake_id'));
RESET plan_cache_mode;
DEALLOCATE in_range;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- What the rewrite is, for each kind of constant range: the first and last value it holds;
-- for an empty one, a comparison no value passes (NULL for a NULL key, as <@ gives).
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id <@ '[1,100)'::int8range AS a, id <@ '(1,100]'::int8range AS b, id <@ '[7,)'::int8range AS c,
       id <@ '(,5]'::int8range AS d, id <@ '(,)'::int8range AS e, id <@ 'empty'::int8range AS f
  FROM ranged;
-- Every kind of range gives what PostgreSQL's own operator gives, for constants and for a
-- range read from a row.
SELECT r, (SELECT count(*) FROM ranged WHERE id <@ r::int8range) AS extensions_op,
       (SELECT count(*) FROM ranged WHERE id::bigint OPERATOR(pg_catalog.<@) r::int8range) AS postgresqls_op
  FROM (VALUES ('empty'), ('(,)'), ('[250047627264000000,250410015129599999]'),
               ('(250047627264000000,250410015129599999)'), ('[250047627264000000,)'),
               ('(,250047627264000000]'), ('[0,0]')) v(r);
-- NULLs, a key at each end, and both operators.
SELECT k, r, k <@ r AS contained, r @> k AS contains
  FROM (VALUES (NULL::snowflake, 'empty'::int8range), (NULL, '(,)'), (5, NULL), (5, '[5,6)'),
               (6, '[5,6)'), (4, '[5,6)'), (9223372036854775807, '[1,)'), (0, '(,1)')) v(k, r);
SELECT k <@ 'empty'::int8range AS in_empty, k <@ '(,)'::int8range AS in_everything,
       '[5,6)'::int8range @> k AS contains
  FROM (VALUES (NULL::snowflake), (5), (6)) v(k);
SELECT snowflake_range_first(r) AS first, snowflake_range_last(r) AS last
  FROM (VALUES ('[3,7)'::int8range), ('(3,7]'), ('(,)'), ('empty'), (NULL)) v(r);
-- A range that is volatile, or a key that is, is PostgreSQL's own operator: evaluated once
-- per row, not twice. So is a subquery, which may give another row each time it runs
-- (TABLESAMPLE, LIMIT without ORDER BY).
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id <@ int8range(0, (random() * 10)::bigint) FROM ranged;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT (random() * 10)::bigint::snowflake <@ '[1,5)'::int8range;
CREATE FUNCTION pg_temp.plan_of(q text) RETURNS TABLE (postgresqls_operator boolean, subqueries bigint)
    LANGUAGE plpgsql AS $$
DECLARE
    plan text := '';
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
        plan := plan || line || E'\n';
    END LOOP;
    RETURN QUERY SELECT plan ~ 'OPERATOR\(pg_catalog\.<@\)',
                        (SELECT count(*) FROM regexp_matches(plan, '^\s*(InitPlan|SubPlan) (\d|expr_\d)', 'gn'));
END $$;
SELECT * FROM pg_temp.plan_of('SELECT count(*) FROM ranged WHERE id <@ (SELECT int8range(min(id), max(id)) FROM ranged TABLESAMPLE BERNOULLI (50))');
SELECT * FROM pg_temp.plan_of('SELECT (SELECT id FROM ranged TABLESAMPLE BERNOULLI (50) LIMIT 1) <@ ''[1,100)''::int8range');
-- A bare literal is read as an int8range (PostgreSQL's own operator alone found it ambiguous).
SELECT count(*) FROM ranged WHERE id <@ '[250047627264000000,250410015129599999]';
-- The operators are bigint's: they stand in for PostgreSQL's own for every integer key,
-- negative ones included, with the same results (the snowflake domain's check is not added).
SELECT (-5)::bigint <@ '[-10,0)'::int8range AS negative, '[-10,0)'::int8range @> (-5)::bigint AS contains,
       5 <@ int8range(1, 10) AS integer_key, (-5)::bigint OPERATOR(pg_catalog.<@) '[-10,0)'::int8range AS postgresqls;
-- A range column with a GiST index, searched for a constant ID: PostgreSQL's own operator,
-- which the index serves.
CREATE TABLE periods (r int8range);
INSERT INTO periods SELECT int8range(g * 10, g * 10 + 5) FROM generate_series(1, 1000) g;
CREATE INDEX periods_r ON periods USING gist (r);
ANALYZE periods;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM periods WHERE r @> 42::bigint;
EXPLAIN (COSTS OFF) SELECT count(*) FROM periods WHERE 42::snowflake <@ r;
SELECT count(*) FROM periods WHERE r @> 42::bigint;
-- A join of the key with a range column: PostgreSQL's own operator too, whose GiST index on
-- the range column the join can use.
EXPLAIN (COSTS OFF)
SELECT count(*) FROM periods p JOIN ranged t ON t.id <@ p.r;
SELECT count(*) FROM periods p JOIN ranged t ON t.id <@ p.r;
-- A range of an outer query, the same for every row of the subquery: the two comparisons.
EXPLAIN (COSTS OFF)
SELECT (SELECT count(*) FROM ranged t WHERE t.id <@ p.r) FROM (VALUES ('[1,5)'::int8range), ('[3,9)')) p(r);
RESET enable_seqscan;
DROP TABLE periods;
-- A partial unique index and an ON CONFLICT clause written with the operator match, and so
-- does a query of a narrower range.
CREATE TABLE claimed (id bigint, v int);
CREATE UNIQUE INDEX claimed_low ON claimed (id) WHERE id <@ '[1,1000)'::int8range;
INSERT INTO claimed VALUES (5, 1) ON CONFLICT (id) WHERE id <@ '[1,1000)'::int8range DO NOTHING;
INSERT INTO claimed VALUES (5, 2) ON CONFLICT (id) WHERE id <@ '[1,1000)'::int8range DO UPDATE SET v = excluded.v;
SELECT * FROM claimed;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM claimed WHERE id <@ '[10,20)'::int8range;
RESET enable_seqscan;
DROP TABLE claimed;
-- An int4 (or int2) key is compared as it is, not widened to bigint: its index serves.
CREATE TABLE small_keys (k int PRIMARY KEY);
INSERT INTO small_keys SELECT generate_series(1, 1000);
ANALYZE small_keys;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM small_keys WHERE k <@ int8range(10, 20);
SELECT (SELECT count(*) FROM small_keys WHERE k <@ int8range(10, 20)) AS ten,
       (SELECT count(*) FROM small_keys WHERE k <@ int8range(995, 5000000000)) AS beyond_int4,
       (SELECT count(*) FROM small_keys WHERE k::smallint <@ int8range(-5, 3)) AS smallint_key;
-- A cast the query writes stays: an index on (k::bigint) serves it.
CREATE INDEX small_keys_wide ON small_keys ((k::bigint));
EXPLAIN (COSTS OFF) SELECT count(*) FROM small_keys WHERE k::bigint <@ int8range(10, 20);
RESET enable_seqscan;
-- Under grouping sets the widened key is the grouped expression, which the sets that leave
-- it out see as NULL: compared as it is grouped, as PostgreSQL's own operator compares it.
SELECT k::bigint AS k, k::bigint <@ int8range(1, 3) AS extensions,
       k::bigint OPERATOR(pg_catalog.<@) int8range(1, 3) AS postgresqls,
       k <@ int8range(1, 3) AS implicit
  FROM small_keys WHERE k <= 2 GROUP BY GROUPING SETS ((k::bigint), ()) ORDER BY 1;
DROP TABLE small_keys;

-- Partitions by day: pruned at plan time for a constant range ...
CREATE TABLE daily (id snowflake PRIMARY KEY, v int) PARTITION BY RANGE (id);
DO $$
DECLARE
    d date;
    r int8range;
BEGIN
    FOR d IN SELECT g::date FROM generate_series('2026-11-20'::date, '2026-11-29'::date, '1 day') g LOOP
        r := snowflake_range(d, d + 1, 'snowflake_id');
        EXECUTE format('CREATE TABLE %I PARTITION OF daily FOR VALUES FROM (%s) TO (%s)',
                       'daily_' || to_char(d, 'YYYYMMDD'), lower(r), upper(r));
    END LOOP;
END $$;
INSERT INTO daily SELECT * FROM ranged;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM daily WHERE id <@ snowflake_range('2026-11-22', '2026-11-24', 'snowflake_id');
SELECT count(*) FROM daily WHERE id <@ snowflake_range('2026-11-22', '2026-11-24', 'snowflake_id');
EXPLAIN (COSTS OFF)
SELECT count(*) FROM daily WHERE snowflake_range('2026-11-22 06:00', '2026-11-22 07:00', 'snowflake_id') @> id;
-- An empty range holds nothing: no partition is read, not even a default one.
CREATE TABLE daily_other PARTITION OF daily DEFAULT;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM daily WHERE id <@ snowflake_range('2026-11-22', '2026-11-22', 'snowflake_id');
-- (A range of now(), pruned when the executor starts: pg_regress partitions.)
RESET enable_seqscan;
RESET enable_bitmapscan;

-- The rewrite calls only the extension's own snowflake_range_first and _last: a function of
-- that name that is not the extension's (here, after a superuser took the original out of it)
-- is never called, and <@ stays as it is.
BEGIN;
ALTER EXTENSION snowflake_id DROP FUNCTION snowflake_range_first(int8range);
ALTER FUNCTION snowflake_range_first(int8range) RENAME TO original_range_first;
CREATE FUNCTION snowflake_range_first(int8range) RETURNS bigint LANGUAGE plpgsql IMMUTABLE
    AS $$ BEGIN RAISE EXCEPTION 'a look-alike was called'; END $$;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ranged WHERE id <@ snowflake_range('2026-11-22', '2026-11-23');
SELECT count(*) FROM ranged WHERE id <@ snowflake_range('2026-11-22', '2026-11-23');
ROLLBACK;

-- The planner finds snowflake_range_first and _last in the extension's schema whatever the
-- role may use: one without USAGE on it reads a view that compares with a range of its rows.
BEGIN;
CREATE SCHEMA elsewhere;
CREATE TABLE elsewhere.days (r int8range);
INSERT INTO elsewhere.days VALUES ('[250047627264000000,250410015129599999]');
CREATE VIEW elsewhere.in_periods AS
    SELECT id FROM ranged t, elsewhere.days p WHERE t.id OPERATOR(public.<@) p.r;
CREATE ROLE ranges_reader;
GRANT USAGE ON SCHEMA elsewhere TO ranges_reader;
GRANT SELECT ON elsewhere.in_periods TO ranges_reader;
REVOKE USAGE ON SCHEMA public FROM PUBLIC;
SET ROLE ranges_reader;
SELECT count(*) FROM elsewhere.in_periods;
RESET ROLE;
ROLLBACK;

DROP TABLE ranged, daily;
