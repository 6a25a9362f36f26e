-- The extension's objects as the catalog sees them. The SQL declarations are hand-written
-- (src/sql/snowflake.sql, src/sql/gdid.sql), so this list is what keeps them in step with
-- the code and docs/functions.md: every function with its volatility (i immutable, s stable,
-- v volatile), strictness, parallel safety (s safe, u unsafe), leakproofness, result,
-- language, C symbol and privileges.
SELECT p.oid::regprocedure AS function, p.provolatile AS vol, p.proisstrict AS strict,
       p.proparallel AS par, p.proleakproof AS leakproof,
       CASE WHEN p.proretset THEN 'SETOF ' ELSE '' END || format_type(p.prorettype, NULL) AS returns,
       l.lanname AS lang, CASE WHEN l.lanname = 'c' THEN p.prosrc END AS symbol, p.proacl
  FROM pg_proc p
  JOIN pg_language l ON l.oid = p.prolang
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake_id')
 ORDER BY p.oid::regprocedure::text COLLATE "C";

-- Operators, operator classes, casts, types and views.
SELECT o.oid::regoperator AS operator, o.oprcode AS function, o.oprcanmerge AS merges,
       o.oprcanhash AS hashes
  FROM pg_operator o WHERE o.oprleft = 'gdid'::regtype
 ORDER BY o.oid::regoperator::text COLLATE "C";
-- The containment of a (snowflake) key in an int8range, before PostgreSQL's polymorphic one,
-- and the planner support of its functions.
SELECT o.oid::regoperator AS operator, o.oprcode AS function, o.oprcom::regoperator AS commutator,
       p.prosupport AS support
  FROM pg_operator o JOIN pg_proc p ON p.oid = o.oprcode
  JOIN pg_depend d ON d.classid = 'pg_operator'::regclass AND d.objid = o.oid AND d.deptype = 'e'
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake_id')
   AND o.oprleft <> 'gdid'::regtype
 ORDER BY o.oid::regoperator::text COLLATE "C";
SELECT am.amname, opc.opcname, opc.opcdefault AS default
  FROM pg_opclass opc JOIN pg_am am ON am.oid = opc.opcmethod
 WHERE opc.opcintype = 'gdid'::regtype ORDER BY 1, 2;
SELECT c.castsource::regtype, c.casttarget::regtype, c.castfunc::regprocedure, c.castcontext,
       c.castmethod
  FROM pg_cast c WHERE 'gdid'::regtype IN (c.castsource, c.casttarget)
 ORDER BY c.castsource::regtype::text COLLATE "C", c.casttarget::regtype::text COLLATE "C";
SELECT t.oid::regtype AS type, t.typtype, t.typlen
  FROM pg_type t JOIN pg_depend d ON d.classid = 'pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e'
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake_id')
   AND t.typrelid = 0 AND t.typcategory <> 'A'   -- not the views' row types, not arrays
 ORDER BY t.oid::regtype::text COLLATE "C";
SELECT c.oid::regclass AS view,
       (SELECT string_agg(a.privilege_type, ', ') FROM aclexplode(c.relacl) a WHERE a.grantee = 0)
           AS public_may
  FROM pg_class c JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake_id')
 ORDER BY c.oid::regclass::text COLLATE "C";

-- PostgreSQL's own check of the gdid operator classes and families: support functions and
-- operators complete and of the right signatures (it prints an INFO for each problem).
SELECT am.amname, opc.opcname, amvalidate(opc.oid) AS valid
  FROM pg_opclass opc JOIN pg_am am ON am.oid = opc.opcmethod
 WHERE opc.opcintype = 'gdid'::regtype ORDER BY 1, 2;
