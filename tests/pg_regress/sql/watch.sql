-- Which tables have the trigger that detection of a shared node number needs (see conflicts):
-- every permanent plain table with a generating column, one whose DEFAULT (or its partitioned
-- ancestor's) calls snowflake_next or gdid_next and whose type is the generator's. The trigger
-- is internal (not dumped, not listed by \d), AFTER INSERT OR DELETE FOR EACH ROW (tgtype
-- 13), and fires only where session_replication_role is replica, as in apply workers.
CREATE VIEW watched AS
    SELECT t.tgrelid::regclass AS table_name, t.tgenabled, t.tgisinternal, t.tgtype,
           t.tgname ~ '^snowflake_arrivals_[0-9]+$' AS named
      FROM pg_trigger t
     WHERE t.tgfoid = 'snowflake_arrival_trigger'::regproc
       AND t.tgrelid::regclass::text LIKE 'w\_%'
     ORDER BY t.tgrelid::regclass::text;

-- Every way of writing a generating DEFAULT.
CREATE TABLE w_snowflake (id snowflake PRIMARY KEY DEFAULT snowflake_next('w1'));
CREATE TABLE w_bigint (id bigint PRIMARY KEY DEFAULT snowflake_next('w2'));
CREATE TABLE w_gdid (id gdid PRIMARY KEY DEFAULT gdid_next(scope => 'w', sequence => 'w3'));
CREATE TABLE w_cast (id bigint DEFAULT (snowflake_next('w4'::varchar))::bigint);
CREATE TABLE w_added (n int);
ALTER TABLE w_added ADD COLUMN id snowflake DEFAULT snowflake_next('w5');
CREATE TABLE w_later (id bigint);
ALTER TABLE w_later ALTER COLUMN id SET DEFAULT snowflake_next('w6');
CREATE TABLE w_like (LIKE w_gdid INCLUDING DEFAULTS);
-- A domain's DEFAULT (a domain over it copies it), a domain over snowflake.
CREATE DOMAIN w_dom AS gdid DEFAULT gdid_next('w', 'dom');
CREATE DOMAIN w_dom2 AS w_dom;
CREATE DOMAIN w_sdom AS snowflake CHECK (VALUE > 0);
CREATE TABLE w_domain (id w_dom PRIMARY KEY);
CREATE TABLE w_domain2 (id w_dom2 PRIMARY KEY);
CREATE TABLE w_sdomain (id w_sdom DEFAULT snowflake_next('w15'));
SELECT * FROM watched;

-- Not generating: no DEFAULT, another function, a type the generator does not make, a copy
-- of a table without its defaults; temporary and unlogged tables, which are never
-- replicated; views.
CREATE TABLE n_plain (id snowflake PRIMARY KEY, g gdid);
CREATE TABLE n_other (id bigint DEFAULT 7, g gdid DEFAULT gdid(0, 1, 1));
CREATE TABLE n_numeric (id numeric DEFAULT snowflake_next('w7'));
CREATE TABLE n_like (LIKE w_gdid);
CREATE TEMP TABLE n_temp (id snowflake DEFAULT snowflake_next('w8'));
CREATE UNLOGGED TABLE n_unlogged (id snowflake DEFAULT snowflake_next('w9'));
CREATE VIEW n_view AS SELECT 1::bigint AS id;
ALTER VIEW n_view ALTER COLUMN id SET DEFAULT snowflake_next('w10');
SELECT count(*) AS not_watched FROM pg_trigger
 WHERE tgfoid = 'snowflake_arrival_trigger'::regproc
   AND tgrelid IN ('n_plain'::regclass, 'n_other'::regclass, 'n_numeric'::regclass,
                   'n_like'::regclass, 'n_temp'::regclass, 'n_unlogged'::regclass,
                   'n_view'::regclass);

-- Invisible where users look for their own triggers.
SELECT count(*) FROM information_schema.triggers WHERE event_object_table LIKE 'w\_%';

-- A DEFAULT dropped takes the trigger with it; set again, it comes back.
ALTER TABLE w_later ALTER COLUMN id DROP DEFAULT;
SELECT count(*) FROM watched WHERE table_name = 'w_later'::regclass;
ALTER TABLE w_later ALTER COLUMN id SET DEFAULT snowflake_next('w6');
SELECT count(*) FROM watched WHERE table_name = 'w_later'::regclass;

-- A domain's DEFAULT dropped: its columns' tables lose it (w_dom2 keeps the copy it made).
ALTER DOMAIN w_dom DROP DEFAULT;
SELECT table_name FROM watched WHERE table_name::text LIKE 'w\_domain%';
ALTER DOMAIN w_dom SET DEFAULT gdid_next('w', 'dom');
SELECT table_name FROM watched WHERE table_name::text LIKE 'w\_domain%';

-- An unlogged table made logged can be replicated: it gets it.
CREATE UNLOGGED TABLE w_unlogged (id snowflake DEFAULT snowflake_next('w16'));
SELECT count(*) FROM watched WHERE table_name = 'w_unlogged'::regclass;
ALTER TABLE w_unlogged SET LOGGED;
SELECT count(*) FROM watched WHERE table_name = 'w_unlogged'::regclass;
-- ...and made unlogged again, it can no longer be: it loses it.
ALTER TABLE w_unlogged SET UNLOGGED;
SELECT count(*) FROM watched WHERE table_name = 'w_unlogged'::regclass;

-- Partitions: each leaf gets it, the partitioned table (which holds no rows) does not;
-- created as a partition, attached, attached below a sub-partitioned table; detached
-- without a DEFAULT of its own, it loses it.
CREATE TABLE w_parted (id snowflake PRIMARY KEY DEFAULT snowflake_next('w11'))
    PARTITION BY RANGE (id);
CREATE TABLE w_part1 PARTITION OF w_parted FOR VALUES FROM (0) TO (1000);
CREATE TABLE w_part2 (id snowflake NOT NULL);
ALTER TABLE w_parted ATTACH PARTITION w_part2 FOR VALUES FROM (1000) TO (2000);
CREATE TABLE w_sub (id snowflake NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE w_sub1 (id snowflake NOT NULL);
ALTER TABLE w_sub ATTACH PARTITION w_sub1 FOR VALUES FROM (2000) TO (2500);
SELECT count(*) FROM watched WHERE table_name = 'w_sub1'::regclass;
ALTER TABLE w_parted ATTACH PARTITION w_sub FOR VALUES FROM (2000) TO (3000);
SELECT * FROM watched WHERE table_name::text LIKE 'w\_part%' OR table_name::text LIKE 'w\_sub%';
ALTER TABLE w_parted DETACH PARTITION w_part2;
SELECT count(*) FROM watched WHERE table_name = 'w_part2'::regclass;
-- A DEFAULT set on the partitioned table alone reaches its partitions' triggers.
CREATE TABLE w_parted2 (id bigint) PARTITION BY RANGE (id);
CREATE TABLE w_parted2_1 PARTITION OF w_parted2 FOR VALUES FROM (0) TO (10);
SELECT count(*) FROM watched WHERE table_name = 'w_parted2_1'::regclass;
ALTER TABLE ONLY w_parted2 ALTER COLUMN id SET DEFAULT snowflake_next('w12');
SELECT count(*) FROM watched WHERE table_name = 'w_parted2_1'::regclass;

-- Transactional like the DDL that makes it; DDL inside functions counts too.
BEGIN;
CREATE TABLE w_rolled_back (id snowflake DEFAULT snowflake_next('w13'));
SELECT count(*) FROM watched WHERE table_name = 'w_rolled_back'::regclass;
ROLLBACK;
SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relname = 'w_rolled_back';
DO $$ BEGIN EXECUTE 'CREATE TABLE w_dynamic (id snowflake DEFAULT snowflake_next(''w14''))'; END $$;
SELECT count(*) FROM watched WHERE table_name = 'w_dynamic'::regclass;

-- ENABLE TRIGGER ALL (pg_dump --disable-triggers writes it after loading data) would make it
-- fire on every local insert and never in an apply worker: it is set back. A trigger
-- disabled stays disabled.
ALTER TABLE w_snowflake DISABLE TRIGGER ALL;
SELECT tgenabled FROM watched WHERE table_name = 'w_snowflake'::regclass;
ALTER TABLE w_snowflake ENABLE TRIGGER ALL;
SELECT tgenabled FROM watched WHERE table_name = 'w_snowflake'::regclass;
DO $$ BEGIN
    EXECUTE format('ALTER TABLE w_snowflake ENABLE ALWAYS TRIGGER %I',
                   (SELECT tgname FROM pg_trigger WHERE tgrelid = 'w_snowflake'::regclass));
END $$;
SELECT tgenabled FROM watched WHERE table_name = 'w_snowflake'::regclass;

-- As with a foreign key's triggers, disabling all of a table's triggers, this internal one
-- included, takes a superuser; its owner disables its own with DISABLE TRIGGER USER.
CREATE ROLE watch_owner;
GRANT CREATE ON SCHEMA public, snowflake TO watch_owner;
SET ROLE watch_owner;
CREATE TABLE w_owned (id snowflake DEFAULT snowflake_next('w17'));
-- (The error names the trigger, whose name holds its OID: only the SQLSTATE is shown.)
DO $$ BEGIN
    ALTER TABLE w_owned DISABLE TRIGGER ALL;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'DISABLE TRIGGER ALL refused: %', SQLSTATE;
END $$;
ALTER TABLE w_owned DISABLE TRIGGER USER;
ALTER TABLE w_owned ENABLE TRIGGER USER;
DROP TABLE w_owned;
RESET ROLE;
REVOKE CREATE ON SCHEMA public, snowflake FROM watch_owner;
DROP SEQUENCE snowflake.w17;
DROP ROLE watch_owner;

-- snowflake_watch_tables() gives the trigger to a table that lacks it (one made while the
-- library was not preloaded, or before an update from 0.2.0), and to none twice. Only for
-- those it is granted to: it locks tables.
DO $$ BEGIN
    EXECUTE format('DROP TRIGGER %I ON w_bigint',
                   (SELECT tgname FROM pg_trigger WHERE tgrelid = 'w_bigint'::regclass));
END $$;
SELECT count(*) FROM watched WHERE table_name = 'w_bigint'::regclass;
SELECT snowflake_watch_tables();
SELECT count(*) FROM watched WHERE table_name = 'w_bigint'::regclass;
SELECT snowflake_watch_tables();
CREATE ROLE watch_user;
SET ROLE watch_user;
SELECT snowflake_watch_tables();
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE watch_user;

-- A domain's owner changes (and locks) only tables it owns: ALTER DOMAIN ... SET DEFAULT
-- leaves another role's table with a column of the domain as it was, for its owner's next
-- DDL or snowflake_watch_tables() to bring in line; a trigger a superuser disabled there
-- stays disabled whatever the domain's owner does.
CREATE ROLE w_alice;
CREATE ROLE w_bob;
GRANT CREATE ON SCHEMA public TO w_alice, w_bob;
GRANT CREATE ON SCHEMA gdid TO w_alice;
SET ROLE w_alice;
CREATE DOMAIN w_adom AS gdid;
RESET ROLE;
SET ROLE w_bob;
CREATE TABLE w_bobs (id w_adom);
RESET ROLE;
SET ROLE w_alice;
BEGIN;
ALTER DOMAIN w_adom SET DEFAULT gdid_next('w', 'alice');
SELECT count(*) AS locks_on_bobs_table FROM pg_locks
 WHERE relation = 'w_bobs'::regclass AND pid = pg_backend_pid();
COMMIT;
RESET ROLE;
SELECT count(*) FROM watched WHERE table_name = 'w_bobs'::regclass;
SELECT snowflake_watch_tables();
ALTER TABLE w_bobs DISABLE TRIGGER ALL;
SET ROLE w_alice;
ALTER DOMAIN w_adom DROP DEFAULT;
ALTER DOMAIN w_adom SET DEFAULT gdid_next('w', 'alice');
RESET ROLE;
SELECT table_name, tgenabled FROM watched WHERE table_name = 'w_bobs'::regclass;
-- The domain's DEFAULT dropped: bob's table keeps its trigger until snowflake_watch_tables()
-- takes it away.
SET ROLE w_alice;
ALTER DOMAIN w_adom DROP DEFAULT;
RESET ROLE;
SELECT count(*) FROM watched WHERE table_name = 'w_bobs'::regclass;
SELECT snowflake_watch_tables();
SELECT count(*) FROM watched WHERE table_name = 'w_bobs'::regclass;
DROP TABLE w_bobs;
DROP DOMAIN w_adom;
DROP SEQUENCE gdid."w/alice";
REVOKE CREATE ON SCHEMA public FROM w_alice, w_bob;
REVOKE CREATE ON SCHEMA gdid FROM w_alice;
DROP ROLE w_alice, w_bob;

-- The trigger function is a trigger's: called otherwise, an error. As a table's own BEFORE
-- trigger it passes every row through unchanged.
SELECT snowflake_arrival_trigger();
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE w_own (id int, v text);
CREATE TRIGGER w_own_before BEFORE INSERT OR UPDATE OR DELETE ON w_own
    FOR EACH ROW EXECUTE FUNCTION snowflake_arrival_trigger();
INSERT INTO w_own VALUES (1, 'a');
UPDATE w_own SET v = 'b';
SELECT * FROM w_own;
DELETE FROM w_own;
SELECT count(*) FROM w_own;

-- It depends on the table and on its function automatically: it goes with either.
SELECT DISTINCT d.refclassid::regclass, d.deptype FROM pg_depend d
  JOIN pg_trigger t ON d.classid = 'pg_trigger'::regclass AND d.objid = t.oid
 WHERE t.tgfoid = 'snowflake_arrival_trigger'::regproc AND NOT t.tgname LIKE 'w\_own%'
 ORDER BY 1;
DROP TABLE w_snowflake;
SELECT count(*) FROM watched WHERE table_name::text = 'w_snowflake';

DROP VIEW watched, n_view;
DROP TABLE w_bigint, w_gdid, w_cast, w_added, w_later, w_like, n_plain, n_other, n_numeric,
    n_like, n_temp, n_unlogged, w_parted, w_part2, w_parted2, w_dynamic, w_own, w_domain,
    w_domain2, w_sdomain, w_unlogged;
DROP DOMAIN w_dom2, w_dom, w_sdom;
