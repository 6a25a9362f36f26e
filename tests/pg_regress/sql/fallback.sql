-- A fresh sequence (one that has never leased anything: just made by the DEFAULT of a
-- restored table, or restored with setval(..., false)) starts above the keys already stored
-- in the columns whose DEFAULT names it: keys that arrived without the sequence's state (a
-- table dumped alone, a dump of release 0.3.0, rows loaded by COPY). Only this server's node
-- (snowflake) or authority (gdid) counts: other servers' values cannot meet its own. The keys
-- are read through a btree index of the column, index-only: no function, operator, policy
-- or privilege of anyone's is used. (A dump of a whole database carries each sequence with
-- its lease, and a template copy or pg_upgrade carries the relation itself: no fallback.)
SHOW snowflake.node_id;
SHOW gdid.authority;

-- gdid, authority 6. The DEFAULT made the sequence; until it leases anything it is fresh.
CREATE TABLE fb_imported (id gdid PRIMARY KEY DEFAULT gdid_next('fb', 'imported'), note text);
SELECT last_value, is_called FROM gdid."fb/imported";
INSERT INTO fb_imported VALUES (gdid(0, 9, 1000000), 'authority 9'), (gdid(0, 6, 50), 'authority 6'),
                               (gdid(3, 2, 7), 'era 3, authority 2'), (gdid(2, 6, 40), 'era 2, authority 6');
-- Keys of authority 6 in another sequence's column do not count.
CREATE TABLE fb_elsewhere (id gdid PRIMARY KEY DEFAULT gdid_next('fb', 'other'));
INSERT INTO fb_elsewhere VALUES (gdid(9, 6, 9));
INSERT INTO fb_imported (note) VALUES ('generated');
SELECT * FROM fb_imported ORDER BY id;

-- snowflake, node 5: an ID of node 5 three seconds ahead (as a server whose clock ran ahead
-- made it), one of node 7 further still. The next ID is in the millisecond after node 5's.
CREATE TABLE fb_events (id snowflake PRIMARY KEY DEFAULT snowflake_next('fb_events'), note text);
INSERT INTO fb_events VALUES
    (snowflake_from_timestamp(now() + interval '3 s') + 4096 * 5 + 7, 'node 5, 3 s ahead'),
    (snowflake_from_timestamp(now() + interval '8 s') + 4096 * 7, 'node 7, 8 s ahead');
INSERT INTO fb_events (note) VALUES ('generated');
SELECT note, snowflake_node(id) AS node,
       snowflake_timestamp(id) - (SELECT snowflake_timestamp(id) FROM fb_events
                                   WHERE note = 'node 5, 3 s ahead') AS after_node_5
  FROM fb_events ORDER BY id;

-- The keys of tables that inherit the column count, and of partitions, whether they got the
-- DEFAULT or were attached with keys of their own.
CREATE TABLE fb_parent (id gdid PRIMARY KEY DEFAULT gdid_next('fb', 'parent'));
CREATE TABLE fb_child (id gdid PRIMARY KEY);
INSERT INTO fb_child VALUES (gdid(0, 6, 70));
ALTER TABLE fb_child INHERIT fb_parent;
INSERT INTO fb_parent DEFAULT VALUES RETURNING id;
CREATE TABLE fb_part (id gdid PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE fb_part_low PARTITION OF fb_part FOR VALUES FROM (MINVALUE) TO ('1:0:0');
ALTER TABLE fb_part ALTER COLUMN id SET DEFAULT gdid_next('fb', 'part');
CREATE TABLE fb_part_high (id gdid PRIMARY KEY);
INSERT INTO fb_part_high VALUES (gdid(5, 6, 80));
ALTER TABLE fb_part ATTACH PARTITION fb_part_high FOR VALUES FROM ('1:0:0') TO (MAXVALUE);
INSERT INTO fb_part_low VALUES (gdid(0, 6, 90));
INSERT INTO fb_part DEFAULT VALUES RETURNING id;

-- Any btree index whose first column is the key: descending too (its largest key comes
-- first the other way), and one of several columns whose others hold NULLs (a null bitmap
-- in the index tuple).
CREATE TABLE fb_desc (g gdid NOT NULL, s bigint NOT NULL, v int);
CREATE INDEX ON fb_desc (g DESC);
CREATE INDEX ON fb_desc (s DESC);
INSERT INTO fb_desc SELECT gdid(0, 6, i), snowflake_from_timestamp(now() + interval '2 s') + 4096 * 5 + i, 0
  FROM generate_series(1, 100) i;
ALTER TABLE fb_desc ALTER COLUMN g SET DEFAULT gdid_next('fb', 'desc'),
                    ALTER COLUMN s SET DEFAULT snowflake_next('fb_desc');
INSERT INTO fb_desc (v) VALUES (1) RETURNING g,
    s > (SELECT max(s) FROM fb_desc WHERE v = 0) AS above_the_stored;
CREATE TABLE fb_wide (g gdid NOT NULL, note text, v int);
CREATE UNIQUE INDEX ON fb_wide (g, note);
INSERT INTO fb_wide SELECT gdid(0, 6, i), CASE WHEN i < 60 THEN 'x' END, 0 FROM generate_series(1, 60) i;
ALTER TABLE fb_wide ALTER COLUMN g SET DEFAULT gdid_next('fb', 'wide');
INSERT INTO fb_wide (v) VALUES (1) RETURNING g;

-- A column without a btree index is not read: its keys are not protected (docs/how-it-works.md says
-- to index a key column, as a key usually is).
CREATE TABLE fb_no_index (id gdid DEFAULT gdid_next('fb', 'no_index'));
INSERT INTO fb_no_index VALUES (gdid(0, 6, 99));
INSERT INTO fb_no_index DEFAULT VALUES RETURNING id;

-- Which DEFAULTs name a sequence: constants as written, cast to text or varchar, with a
-- COLLATE clause, as named arguments. A name computed by an expression (upper(), ||, a
-- setting) names none, and its sequence is made at its first use.
CREATE TABLE fb_forms (a bigint DEFAULT snowflake_next('fb_collate' COLLATE "C"),
                       b bigint DEFAULT snowflake_next('fb_varchar'::varchar),
                       c bigint DEFAULT snowflake_next(seq => 'fb_named'),
                       d gdid DEFAULT gdid_next(sequence => 'reordered', scope => 'fb'),
                       e bigint DEFAULT snowflake_next(upper('fb_upper')),
                       f bigint DEFAULT snowflake_next('fb_' || 'concat'));
SELECT pg_describe_object(classid, objid, objsubid) AS dependent,
       pg_describe_object(refclassid, refobjid, refobjsubid) AS on_sequence
  FROM pg_depend d JOIN pg_attrdef a ON d.classid = 'pg_attrdef'::regclass AND a.oid = d.objid
 WHERE a.adrelid = 'fb_forms'::regclass AND d.refclassid = 'pg_class'::regclass
   AND d.refobjsubid = 0
 ORDER BY 1;
SELECT relname FROM pg_class
 WHERE relnamespace IN ('snowflake'::regnamespace, 'gdid'::regnamespace)
   AND (relname LIKE 'fb\_%' OR relname LIKE 'FB\_%' OR relname = 'fb/reordered') ORDER BY 1;
INSERT INTO fb_forms DEFAULT VALUES;
SELECT relname FROM pg_class
 WHERE relnamespace = 'snowflake'::regnamespace AND relname IN ('FB_UPPER', 'fb_concat')
 ORDER BY 1;

-- Nobody's code runs: in 0.3.0 a DEFAULT was folded as its table's owner, and a domain's
-- DEFAULT built to make its owner superuser did so when a superuser used a new name. Here the
-- same domain changes nothing.
CREATE ROLE fb_mallory;
GRANT CREATE ON DATABASE :"DBNAME" TO fb_mallory;
SET ROLE fb_mallory;
CREATE SCHEMA m;
CREATE FUNCTION m.escalate() RETURNS text VOLATILE LANGUAGE plpgsql AS $$
BEGIN
    ALTER ROLE fb_mallory SUPERUSER;
    RETURN 'fb_mallory';
END $$;
CREATE FUNCTION m.f() RETURNS text IMMUTABLE LANGUAGE sql RETURN m.escalate();
CREATE DOMAIN m.qty AS bigint DEFAULT snowflake_next(m.f());
GRANT USAGE ON SCHEMA m TO PUBLIC;
RESET ROLE;
CREATE TABLE fb_victim (q m.qty);
SELECT snowflake_next('fb_new2') > 0 AS generated;
SELECT rolsuper AS mallory_is_superuser FROM pg_roles WHERE rolname = 'fb_mallory';

DROP TABLE fb_imported, fb_elsewhere, fb_events, fb_parent, fb_child, fb_part, fb_no_index,
    fb_forms, fb_victim, fb_desc, fb_wide;
DROP SCHEMA m CASCADE;
REVOKE CREATE ON DATABASE :"DBNAME" FROM fb_mallory;
DROP ROLE fb_mallory;
