-- Ordering, operators, indexes, joins, partitions and aggregates of gdid.

-- Era first, then authority, then counter: the authority outranks the counter.
SELECT gdid(0, 0, 12321) < gdid(0, 1, 0) AS reference,
       gdid(1, 0, 0) > gdid(0, 15, 1152921504606846975) AS era_first;
SELECT a, b, a = b AS eq, a <> b AS ne, a < b AS lt, a <= b AS le, a > b AS gt, a >= b AS ge,
       gdid_cmp(a, b) AS cmp
  FROM (VALUES (gdid(1, 2, 3), gdid(1, 2, 3)), (gdid(1, 2, 3), gdid(1, 2, 4)),
               (gdid(1, 3, 0), gdid(1, 2, 9)), (gdid(0, 15, 9), gdid(1, 0, 0))) v(a, b);

-- A table of gdids in scrambled order.
CREATE TABLE t (id gdid PRIMARY KEY, n int NOT NULL);
INSERT INTO t
SELECT gdid(g % 3, (g * 7) % 16, (g * 7919) % 100003), g
  FROM generate_series(1, 20000) g;
ANALYZE t;

-- Sorting agrees with the parts, and with the bytes (the binary form is the sort order).
SELECT bool_and((gdid_era(id), gdid_authority(id), gdid_counter(id))
                > (gdid_era(prev), gdid_authority(prev), gdid_counter(prev))) AS parts_order,
       bool_and(id::bytea > prev::bytea) AS byte_order
  FROM (SELECT id, lag(id) OVER (ORDER BY id) AS prev FROM t) s WHERE prev IS NOT NULL;
SELECT min(id), max(id), count(DISTINCT id) FROM t;
SELECT id FROM t ORDER BY id DESC LIMIT 3;

-- The btree primary key is used for equality and ranges.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT n FROM t WHERE id = gdid(1, 5, 17);
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE id >= gdid(1, 0, 0) AND id < gdid(2, 0, 0);
SELECT count(*) FROM t WHERE id >= gdid(1, 0, 0) AND id < gdid(2, 0, 0);
SELECT count(*) FILTER (WHERE gdid_era(id) = 1) AS by_parts FROM t;
RESET enable_seqscan;

-- A hash index, and a BRIN index (minmax) on a table filled in gdid order.
CREATE INDEX t_hash ON t USING hash (id);
CREATE TABLE gdid_log (id gdid NOT NULL, n int);
INSERT INTO gdid_log SELECT gdid(0, 1, g), g FROM generate_series(1, 50000) g;
CREATE INDEX gdid_log_brin ON gdid_log USING brin (id) WITH (pages_per_range = 8);
ANALYZE gdid_log;
SET enable_seqscan = off;
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = gdid(2, 3, 4);
SELECT n FROM t WHERE id = (SELECT id FROM t WHERE n = 77);
EXPLAIN (COSTS OFF) SELECT count(*) FROM gdid_log WHERE id BETWEEN gdid(0, 1, 1000) AND gdid(0, 1, 1999);
SELECT count(*) FROM gdid_log WHERE id BETWEEN gdid(0, 1, 1000) AND gdid(0, 1, 1999);
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT amname, opcname, opcdefault
  FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
 WHERE opcintype = 'gdid'::regtype ORDER BY amname;

-- Merge joins and hash joins.
CREATE TABLE u AS SELECT id, n * 2 AS m FROM t WHERE n % 4 = 0;
ANALYZE u;
SET enable_hashjoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t JOIN u USING (id);
SELECT count(*), bool_and(m = n * 2) FROM t JOIN u USING (id);
RESET enable_hashjoin;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t JOIN u USING (id);
SELECT count(*), bool_and(m = n * 2) FROM t JOIN u USING (id);
RESET enable_mergejoin;
RESET enable_nestloop;
-- GROUP BY and DISTINCT by hashing, too.
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT id, count(*) FROM (SELECT id FROM t UNION ALL SELECT id FROM u) s GROUP BY id;
SELECT count(*) FROM (SELECT id, count(*) FROM (SELECT id FROM t UNION ALL SELECT id FROM u) s GROUP BY id) g;
RESET enable_sort;

-- Range and hash partitioning on a gdid key (hash partitioning needs the extended hash).
CREATE TABLE by_era (id gdid PRIMARY KEY, n int) PARTITION BY RANGE (id);
CREATE TABLE by_era_0 PARTITION OF by_era FOR VALUES FROM (MINVALUE) TO ('1:0:0');
CREATE TABLE by_era_1 PARTITION OF by_era FOR VALUES FROM ('1:0:0') TO ('2:0:0');
CREATE TABLE by_era_rest PARTITION OF by_era FOR VALUES FROM ('2:0:0') TO (MAXVALUE);
INSERT INTO by_era SELECT id, n FROM t;
SELECT tableoid::regclass, count(*), min(id), max(id) FROM by_era GROUP BY 1 ORDER BY 1;
EXPLAIN (COSTS OFF) SELECT * FROM by_era WHERE id = gdid(1, 4, 4);
CREATE TABLE by_hash (id gdid PRIMARY KEY, n int) PARTITION BY HASH (id);
CREATE TABLE by_hash_0 PARTITION OF by_hash FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE by_hash_1 PARTITION OF by_hash FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE by_hash_2 PARTITION OF by_hash FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO by_hash SELECT id, n FROM t;
-- Hash values are fixed by the type (PostgreSQL's hash_bytes over the 12 bytes), so the
-- split is the same on every server.
SELECT tableoid::regclass, count(*) FROM by_hash GROUP BY 1 ORDER BY 1;
-- With seed 0 the extended hash extends the standard one, as PostgreSQL requires.
SELECT gdid_hash(g), gdid_hash_extended(g, 1),
       gdid_hash_extended(g, 0) & 4294967295 = gdid_hash(g)::bigint & 4294967295 AS seed_0_agrees
  FROM (VALUES (gdid(1293, 3, 57)), (gdid(0, 0, 0))) v(g);
EXPLAIN (COSTS OFF) SELECT * FROM by_hash WHERE id = gdid(1, 4, 4);

-- A unique key refuses a duplicate.
INSERT INTO t SELECT id, -1 FROM t WHERE n = 1;
\echo :LAST_ERROR_SQLSTATE
