-- Generating snowflake IDs: the column type, the generator, batches, and their errors.
CREATE EXTENSION snowflake_id;
SET timezone = 'UTC';
SET datestyle = 'ISO';

-- The intended use: a primary key filled by a named sequence.
CREATE TABLE orders (
    id snowflake PRIMARY KEY DEFAULT snowflake_next('orders'),
    item text NOT NULL
);
INSERT INTO orders (item) SELECT 'item ' || g FROM generate_series(1, 1000) g;

-- snowflake is a domain over bigint: it is a bigint to every operator, index, driver and
-- JSON function, and it can never be negative.
SELECT pg_typeof(id), pg_typeof(id + 1), pg_typeof(to_jsonb(id)) FROM orders LIMIT 1;
SELECT count(*) = 1000 AS all_rows, count(DISTINCT id) = 1000 AS all_distinct,
       bool_and(snowflake_node(id) = 5) AS all_from_node_5,
       bool_and(snowflake_timestamp(id) BETWEEN now() - interval '1 minute'
                                            AND clock_timestamp() + interval '10 seconds') AS recent
  FROM orders;
SELECT '-1'::snowflake;
\echo :LAST_ERROR_SQLSTATE

-- Rows inserted in order get increasing IDs (ctid follows insertion in a fresh table).
SELECT bool_and(id > prev) AS strictly_increasing
  FROM (SELECT id, lag(id) OVER (ORDER BY ctid) AS prev FROM orders) s
 WHERE prev IS NOT NULL;

-- Each call returns a new, larger ID.
SELECT snowflake_next('orders') < snowflake_next('orders') AS increasing;
-- Each name (per database, case-sensitive) is its own sequence, and IDs are unique within a
-- sequence: two fresh sequences both start at counter 0 of the current millisecond, so
-- tables that must never share an ID share one sequence name.
SELECT count(snowflake_next(name)) FROM (VALUES ('a'), ('A'), ('a b'), ('ünïcödé')) v(name);
SELECT name, issued FROM snowflake_sequences WHERE name IN ('a', 'A', 'a b', 'ünïcödé') ORDER BY name COLLATE "C";
SELECT snowflake_counter(snowflake_next('fresh_1')) AS fresh_1, snowflake_counter(snowflake_next('fresh_2')) AS fresh_2;
-- The name may change from call to call at one call site: a column, a PL/pgSQL variable
-- (evaluated many times through one expression), a prepared statement's parameter.
DO $$
DECLARE n text; x bigint;
BEGIN
    FOREACH n IN ARRAY ARRAY['loop_a', 'loop_b', 'loop_a', 'loop_c'] LOOP
        x := snowflake_next(n);
    END LOOP;
END $$;
SELECT name, issued FROM snowflake_sequences WHERE name LIKE 'loop_%' ORDER BY name;
PREPARE next_of(text) AS SELECT snowflake_next($1) > 0 AS ok;
EXECUTE next_of('prep_a');
EXECUTE next_of('prep_b');
EXECUTE next_of('prep_b');
SELECT name, issued FROM snowflake_sequences WHERE name LIKE 'prep_%' ORDER BY name;
SELECT count(snowflake_next(name)) FROM (VALUES ('col_a'), ('col_b'), ('col_b'), ('col_a'), ('col_a')) v(name);
SELECT name, issued FROM snowflake_sequences WHERE name LIKE 'col_%' ORDER BY name;

-- A batch reserves n consecutive IDs at once, in increasing order, above earlier IDs.
SELECT count(*) AS n, count(DISTINCT id) AS distinct_ids,
       max(id) - min(id) < 2 * 500 AS dense,
       min(id) > (SELECT max(id) FROM orders) AS above_earlier
  FROM snowflake_next_batch('orders', 500) id;
SELECT bool_and(id > prev) AS increasing
  FROM (SELECT id, lag(id) OVER (ORDER BY ord) AS prev
          FROM snowflake_next_batch('orders', 5000) WITH ORDINALITY b(id, ord)) s
 WHERE prev IS NOT NULL;
INSERT INTO orders (id, item) SELECT id, 'batch' FROM snowflake_next_batch('orders', 100) id;
SELECT count(*) FROM orders;

-- STRICT: NULL in, NULL out.
SELECT snowflake_next(NULL) IS NULL AS next_null,
       (SELECT count(*) FROM snowflake_next_batch(NULL, 3)) AS batch_rows,
       (SELECT count(*) FROM snowflake_next_batch('orders', NULL)) AS batch_rows_null_n;

-- Errors.
SELECT snowflake_next('');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_next(repeat('x', 64));
\echo :LAST_ERROR_SQLSTATE
SELECT length(repeat('x', 63)) AS longest_name_is_fine, snowflake_next(repeat('x', 63)) > 0 AS ok;
SELECT * FROM snowflake_next_batch('orders', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_next_batch('orders', -5);
\echo :LAST_ERROR_SQLSTATE
-- A failed INSERT writes nothing.
INSERT INTO orders (id, item) SELECT id, 'never' FROM snowflake_next_batch('', 3) id;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM orders WHERE item = 'never';

-- The generator writes shared memory (and, once per lease window, the lease file and the
-- WAL), so it is VOLATILE and PARALLEL UNSAFE like nextval; decoders are STRICT and PARALLEL
-- SAFE, STABLE for this server's layout and IMMUTABLE for a named layout (catalog lists every
-- function with its markings).
