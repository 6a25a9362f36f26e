-- Everything the extension consists of, as the catalog sees it, one line per property, in a
-- stable order: tests/cluster/upgrade.sh compares an updated database with a fresh install.
\pset format unaligned
\pset tuples_only on
\pset footer off
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'snowflake_id'),
member AS (SELECT d.classid, d.objid FROM pg_depend d, ext
            WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e')
SELECT line FROM (
    SELECT 'function ' || p.oid::regprocedure || ': ' || concat_ws(' ',
           'vol=' || p.provolatile::text, 'strict=' || p.proisstrict, 'parallel=' || p.proparallel::text,
           'leakproof=' || p.proleakproof, 'secdef=' || p.prosecdef, 'cost=' || p.procost,
           'rows=' || p.prorows, 'returns=' || CASE WHEN p.proretset THEN 'setof ' ELSE '' END
               || format_type(p.prorettype, NULL),
           'args=' || coalesce(pg_get_function_arguments(p.oid), ''),
           'lang=' || l.lanname,
           CASE WHEN l.lanname = 'c' THEN 'symbol=' || p.prosrc || ' file=' || p.probin
                WHEN p.prokind = 'a' THEN 'aggregate'
                ELSE 'body=' || md5(pg_get_functiondef(p.oid)) END,
           'config=' || coalesce(array_to_string(p.proconfig, ','), ''),
           'support=' || p.prosupport,
           -- Who may run it, not how the ACL is stored: an update that GRANTs back to PUBLIC
           -- what an earlier release REVOKEd leaves the explicit {owner=X,=X} where a fresh
           -- install has NULL (no statement sets an ACL back to NULL). Both grant the same, and
           -- pg_dump writes neither (pg_init_privs records the script's ACL as the initial
           -- one); upgrade.sh compares what pg_dump writes.
           'acl=' || (SELECT string_agg(g, ', ' ORDER BY g COLLATE "C")
                        FROM (SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
                                     || ' ' || a.privilege_type || ' by ' || a.grantor::regrole
                                     || CASE WHEN a.is_grantable THEN ' grantable' ELSE '' END AS g
                                FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a) grants)
                    || CASE WHEN p.proacl = '{}' THEN 'none' ELSE '' END,
           'comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '')) AS line
      FROM member m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
      JOIN pg_language l ON l.oid = p.prolang
    UNION ALL
    SELECT 'aggregate ' || a.aggfnoid::regprocedure || ': ' || concat_ws(' ', a.aggtransfn,
           a.aggcombinefn, a.aggsortop::regoperator, format_type(a.aggtranstype, NULL))
      FROM member m JOIN pg_aggregate a ON m.classid = 'pg_proc'::regclass AND a.aggfnoid = m.objid
    UNION ALL
    SELECT 'type ' || t.oid::regtype || ': ' || concat_ws(' ', t.typtype::text, t.typlen, t.typbyval,
           t.typalign, t.typstorage, t.typcategory, t.typinput, t.typoutput, t.typreceive,
           t.typsend, format_type(t.typbasetype, NULL),
           (SELECT string_agg(c.conname || ' ' || pg_get_constraintdef(c.oid), ', ' ORDER BY c.conname)
              FROM pg_constraint c
             WHERE c.contypid = t.oid),
           'comment=' || coalesce(obj_description(t.oid, 'pg_type'), ''))
      FROM member m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
    UNION ALL
    SELECT 'operator ' || o.oid::regoperator || ': ' || concat_ws(' ', o.oprcode,
           o.oprcom::regoperator, o.oprnegate::regoperator, o.oprrest, o.oprjoin,
           o.oprcanmerge, o.oprcanhash)
      FROM member m JOIN pg_operator o ON m.classid = 'pg_operator'::regclass AND o.oid = m.objid
    UNION ALL
    SELECT 'opclass ' || am.amname || ' ' || c.opcname || ': ' || concat_ws(' ', c.opcdefault,
           format_type(c.opcintype, NULL),
           (SELECT string_agg(ao.amopstrategy || '=' || ao.amopopr::regoperator, ', '
                              ORDER BY ao.amopstrategy)
              FROM pg_amop ao WHERE ao.amopfamily = c.opcfamily),
           (SELECT string_agg(ap.amprocnum || '=' || ap.amproc::regprocedure, ', '
                              ORDER BY ap.amprocnum)
              FROM pg_amproc ap WHERE ap.amprocfamily = c.opcfamily))
      FROM member m JOIN pg_opclass c ON m.classid = 'pg_opclass'::regclass AND c.oid = m.objid
      JOIN pg_am am ON am.oid = c.opcmethod
    UNION ALL
    SELECT 'opfamily ' || am.amname || ' ' || f.opfname
      FROM member m JOIN pg_opfamily f ON m.classid = 'pg_opfamily'::regclass AND f.oid = m.objid
      JOIN pg_am am ON am.oid = f.opfmethod
    UNION ALL
    SELECT 'cast ' || format_type(c.castsource, NULL) || ' -> ' || format_type(c.casttarget, NULL)
           || ': ' || concat_ws(' ', c.castfunc::regprocedure, c.castcontext, c.castmethod)
      FROM member m JOIN pg_cast c ON m.classid = 'pg_cast'::regclass AND c.oid = m.objid
    UNION ALL
    SELECT 'relation ' || r.oid::regclass || ': ' || concat_ws(' ', r.relkind,
           md5(pg_get_viewdef(r.oid)), 'acl=' || coalesce(r.relacl::text, 'default'),
           'comment=' || coalesce(obj_description(r.oid, 'pg_class'), ''),
           (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', '
                              ORDER BY a.attnum)
              FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attnum > 0))
      FROM member m JOIN pg_class r ON m.classid = 'pg_class'::regclass AND r.oid = m.objid
    UNION ALL
    SELECT 'member of another class: ' || m.classid::regclass
      FROM member m
     WHERE m.classid NOT IN ('pg_proc'::regclass, 'pg_type'::regclass, 'pg_operator'::regclass,
                             'pg_opclass'::regclass, 'pg_opfamily'::regclass, 'pg_cast'::regclass,
                             'pg_class'::regclass)
) lines
ORDER BY line COLLATE "C";
