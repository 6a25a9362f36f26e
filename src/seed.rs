//! Seeding: the first time this server meets a sequence (a new database from a dump or a
//! template, a new data directory from pg_upgrade, a dropped sequence used again), it looks
//! for the values the sequence may have made elsewhere before it hands out any: in every
//! column whose DEFAULT calls the generator with the sequence's names, the highest value of
//! this server's node (snowflake) or authority (gdid). The sequence then continues above it.
//!
//! Paid once per sequence per server, in the first call that needs the sequence; never on
//! the common path. The queries run as the bootstrap superuser in a restricted security
//! context with `search_path` set to `pg_catalog` and the extension's schema, so they see
//! every row whatever the caller's privileges and row-level security, and cannot be steered
//! by objects the caller created.

use std::ffi::{c_void, CString};

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Oid};
use pgrx::spi::Spi;

use crate::errors::{error, Code, PgError};
use crate::gdid::value::Gdid;
use crate::snowflake::layout::Layout;

/// A column whose DEFAULT calls the generator with the sequence's names.
struct Column {
    /// The table, as `regclass` prints it with `search_path` narrowed: schema-qualified.
    table: Vec<u8>,
    /// The column, quoted as needed.
    column: Vec<u8>,
}

/// The highest ID of `node` in the columns whose DEFAULT is `snowflake_next(name)`.
pub fn snowflake_floor(name: &[u8], node: u32, layout: &Layout) -> Option<u64> {
    elevated(|| {
        let mut floor: Option<u64> = None;
        for c in columns("snowflake_next", &[name], &["bigint", "integer", "numeric"]) {
            let query = sql(&[
                b"SELECT (",
                &c.column,
                b")::pg_catalog.int8 FROM ",
                &c.table,
                b" WHERE ",
                &c.column,
                b" IS NOT NULL ORDER BY ",
                &c.column,
                b" DESC",
            ]);
            // Newest first: the first ID of this node is its highest. In a table written by
            // this node alone that is the first row of the index.
            let found = Spi::connect(|client| -> pgrx::spi::Result<Option<u64>> {
                let mut cursor = client.open_cursor(query.as_c_str(), &[]);
                loop {
                    let rows = cursor.fetch(1000)?;
                    if rows.is_empty() {
                        return Ok(None);
                    }
                    for row in rows {
                        let Some(id) = row.get::<i64>(1)? else {
                            continue;
                        };
                        match layout.decode(id as u64) {
                            Ok(parts) if parts.node == node => return Ok(Some(id as u64)),
                            _ => {}
                        }
                    }
                }
            })
            .unwrap_or_else(|e| spi_failed(e));
            floor = floor.max(found);
        }
        floor
    })
}

/// The highest gdid of `authority` in the columns whose DEFAULT is
/// `gdid_next(scope, sequence)`. In one era the keys of one authority are a contiguous range
/// of the btree order (era, authority, counter), so each era present costs two index probes.
pub fn gdid_floor(scope: &[u8], sequence: &[u8], authority: u8) -> Option<Gdid> {
    elevated(|| {
        let mut floor: Option<Gdid> = None;
        for c in columns("gdid_next", &[scope, sequence], &["gdid"]) {
            let (col, tab) = (&c.column[..], &c.table[..]);
            let query = sql(&[
                b"WITH RECURSIVE eras(top) AS (SELECT max(",
                col,
                b") FROM ",
                tab,
                b" UNION ALL SELECT (SELECT max(",
                col,
                b") FROM ",
                tab,
                b" WHERE ",
                col,
                b" < gdid(gdid_era(top), 0, 0)) FROM eras WHERE gdid_era(top) > 0) \
                  SELECT max((SELECT max(",
                col,
                b") FROM ",
                tab,
                b" WHERE ",
                col,
                b" >= gdid(gdid_era(top), $1, 0) AND ",
                col,
                b" <= gdid(gdid_era(top), $1, 1152921504606846975)))::pg_catalog.text \
                  FROM eras WHERE top IS NOT NULL",
            ]);
            let found = Spi::connect(|client| -> pgrx::spi::Result<Option<String>> {
                let args = [i32::from(authority).into()];
                client
                    .select(query.as_c_str(), Some(1), &args)?
                    .first()
                    .get_one()
            })
            .unwrap_or_else(|e| spi_failed(e));
            floor = floor.max(found.and_then(|t| Gdid::parse(&t).ok()));
        }
        floor
    })
}

fn sql(parts: &[&[u8]]) -> CString {
    CString::new(parts.concat()).expect("identifiers and the query text hold no NUL")
}

fn spi_failed(e: pgrx::spi::Error) -> ! {
    error(
        Code::ERRCODE_INTERNAL_ERROR,
        "could not look for the values a new sequence must continue above",
    )
    .detail(e.to_string())
    .raise()
}

/// The columns whose DEFAULT calls this extension's `function` with exactly `names` as its
/// constant text arguments, and whose type is one of `types` (or a domain over one).
fn columns(function: &str, names: &[&[u8]], types: &[&str]) -> Vec<Column> {
    let query = c"
        SELECT pg_catalog.textsend(d.adbin::pg_catalog.text), p.oid,
               pg_catalog.textsend(d.adrelid::pg_catalog.regclass::pg_catalog.text),
               pg_catalog.textsend(pg_catalog.quote_ident(a.attname::pg_catalog.text))
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_depend x ON x.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
               AND x.objid = p.oid AND x.deptype = 'e'
          JOIN pg_catalog.pg_extension e ON e.oid = x.refobjid AND e.extname = 'snowflake_id'
          JOIN pg_catalog.pg_depend u ON u.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
               AND u.refobjid = p.oid AND u.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
          JOIN pg_catalog.pg_attrdef d ON d.oid = u.objid
          JOIN pg_catalog.pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
               AND NOT a.attisdropped
          JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
         WHERE p.proname = $1
           AND pg_catalog.format_type(CASE t.typtype WHEN 'd' THEN t.typbasetype ELSE t.oid END, NULL)
               = ANY ($2)
         ORDER BY d.adrelid, d.adnum";
    let rows = Spi::connect(|client| -> pgrx::spi::Result<Vec<(Vec<u8>, Oid, Column)>> {
        let args = [function.into(), types.to_vec().into()];
        let mut out = Vec::new();
        for row in client.select(query, None, &args)? {
            let (Some(tree), Some(func), Some(table), Some(column)) = (
                row.get::<Vec<u8>>(1)?,
                row.get::<Oid>(2)?,
                row.get::<Vec<u8>>(3)?,
                row.get::<Vec<u8>>(4)?,
            ) else {
                continue;
            };
            out.push((tree, func, Column { table, column }));
        }
        Ok(out)
    })
    .unwrap_or_else(|e| spi_failed(e));
    rows.into_iter()
        .filter(|(tree, func, _)| calls_with(tree, *func, names))
        .map(|(_, _, c)| c)
        .collect()
}

/// Whether the expression `tree` (a `pg_node_tree`) calls function `func` with exactly
/// `names` as its constant text arguments.
fn calls_with(tree: &[u8], func: Oid, names: &[&[u8]]) -> bool {
    let Ok(tree) = CString::new(tree) else {
        return false;
    };
    let mut search = Search {
        func,
        names,
        found: false,
    };
    // SAFETY: stringToNode parses a pg_node_tree into nodes in the current memory context;
    // the walker visits them with `search` as its context, which outlives the walk.
    unsafe {
        let node = pg_sys::stringToNode(tree.as_ptr()).cast::<pg_sys::Node>();
        find_call(node, (&raw mut search).cast());
    }
    search.found
}

struct Search<'a> {
    func: Oid,
    names: &'a [&'a [u8]],
    found: bool,
}

#[pg_guard]
unsafe extern "C-unwind" fn find_call(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    // SAFETY: context is the Search of calls_with; node is a node of the parsed expression, a
    // FuncExpr when its tag says so, whose args are expression nodes.
    unsafe {
        let search = &mut *context.cast::<Search>();
        if (*node).type_ == pg_sys::NodeTag::T_FuncExpr {
            let f = node.cast::<pg_sys::FuncExpr>();
            if (*f).funcid == search.func {
                let args = pgrx::PgList::<pg_sys::Node>::from_pg((*f).args);
                if args.len() == search.names.len()
                    && (0..args.len()).all(|i| {
                        args.get_ptr(i)
                            .and_then(|a| const_text(a))
                            .is_some_and(|text| text == search.names[i])
                    })
                {
                    search.found = true;
                    return true;
                }
            }
        }
        pg_sys::expression_tree_walker(node, Some(find_call), context)
    }
}

/// The bytes of a non-null constant of type text (under any relabelling), if `node` is one.
///
/// # Safety
/// `node` is an expression node.
unsafe fn const_text<'a>(mut node: *mut pg_sys::Node) -> Option<&'a [u8]> {
    // SAFETY: each cast follows the node's tag; a text Const's value is a varlena.
    unsafe {
        while (*node).type_ == pg_sys::NodeTag::T_RelabelType {
            node = (*node.cast::<pg_sys::RelabelType>()).arg.cast();
        }
        if (*node).type_ != pg_sys::NodeTag::T_Const {
            return None;
        }
        let c = node.cast::<pg_sys::Const>();
        if (*c).constisnull || (*c).consttype != pg_sys::TEXTOID {
            return None;
        }
        Some(crate::fmgr::varlena_bytes((*c).constvalue.cast_mut_ptr()))
    }
}

/// Runs `f` as the bootstrap superuser in a restricted security context, with `search_path`
/// set to `pg_catalog` and the extension's schema; both are restored afterwards, and by the
/// transaction's abort if an error escapes.
fn elevated<R>(f: impl FnOnce() -> R) -> R {
    struct Restore {
        nest_level: i32,
        user: Oid,
        security: i32,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: undoes exactly what `elevated` set, in reverse order.
            unsafe {
                pg_sys::AtEOXact_GUC(false, self.nest_level);
                pg_sys::SetUserIdAndSecContext(self.user, self.security);
            }
        }
    }
    let path = search_path();
    let mut user = Oid::INVALID;
    let mut security = 0;
    // SAFETY: the pattern of PostgreSQL's own maintenance commands (REFRESH MATERIALIZED
    // VIEW, ANALYZE): save the user and security context, open a GUC nest level, switch;
    // Restore undoes it. set_config_option copies the value.
    let _restore = unsafe {
        pg_sys::GetUserIdAndSecContext(&mut user, &mut security);
        let nest_level = pg_sys::NewGUCNestLevel();
        let restore = Restore {
            nest_level,
            user,
            security,
        };
        pg_sys::SetUserIdAndSecContext(
            pg_sys::BOOTSTRAP_SUPERUSERID.into(),
            security
                | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32
                | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
        );
        pg_sys::set_config_option(
            c"search_path".as_ptr(),
            path.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
        restore
    };
    f()
}

/// `pg_catalog, <the extension's schema>`, quoted.
fn search_path() -> CString {
    let schema = Spi::connect(|client| -> pgrx::spi::Result<Option<Vec<u8>>> {
        client
            .select(
                c"SELECT pg_catalog.textsend(pg_catalog.quote_ident(n.nspname::pg_catalog.text))
                    FROM pg_catalog.pg_extension e
                    JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                   WHERE e.extname = 'snowflake_id'",
                Some(1),
                &[],
            )?
            .first()
            .get_one()
    })
    .unwrap_or_else(|e| spi_failed(e))
    .unwrap_or_else(|| not_installed().raise());
    let mut path = b"pg_catalog, ".to_vec();
    path.extend_from_slice(&schema);
    CString::new(path).expect("a quoted identifier holds no NUL")
}

fn not_installed() -> PgError {
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        "extension \"snowflake_id\" is not installed in this database",
    )
}
