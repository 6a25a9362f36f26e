//! Which columns take their values from a sequence: those whose DEFAULT calls this
//! extension's generator with the sequence's names as constants.
//!
//! The catalog says which defaults call the generator at all (`pg_depend` from the default
//! to the function). Whether a call names the sequence is decided on the default's expression
//! tree, after PostgreSQL's own constant folding (`eval_const_expressions`), so that every
//! way of writing a constant name counts: `snowflake_next('orders')`, named arguments,
//! `'orders'::varchar`, `'orders' COLLATE "C"`, `CAST(... AS text)`, `'ord' || 'ers'`.
//! Folding may run functions of the default (an immutable function of constants), so it runs
//! as the table's owner (see `maintenance`); a default whose folding fails is skipped, with a
//! line in the server log, since every INSERT that used it would have failed as well.
//!
//! Only plain and partitioned tables are read: a view, a foreign table or anything else that
//! runs code on read is never a place a generator's values are stored, so it is not looked
//! at. A partitioned table stands for its leaf partitions (foreign partitions excluded), each
//! read as its own owner. Other sessions' temporary tables are invisible to this session and
//! are skipped.

use std::ffi::{c_void, CString};

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Oid};

use crate::dbtext::DbText;
use crate::errors::{self, error, Code};
use crate::maintenance;
use crate::spi::Connection;

/// A table column to read.
#[derive(Debug, Clone)]
pub struct Column {
    /// The table (a leaf: a plain table or a partition), read as its owner.
    pub table: Oid,
    pub owner: Oid,
    /// `schema.table`, quoted as needed, in the database's encoding.
    pub table_name: Vec<u8>,
    /// The column, quoted as needed, in the database's encoding.
    pub column_name: Vec<u8>,
    /// The column's type (a domain, or its base type).
    pub ty: Oid,
}

/// What a column holds, by its type (a domain counts as its base type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// `bigint`, `integer`, `numeric`: snowflake IDs (the `snowflake` domain is a bigint).
    Integers,
    /// The extension's `gdid`.
    Gdids,
}

impl Holds {
    /// Whether a column of type `column` holds what a generator returning `made` makes: the
    /// same base type (domains over domains unwrapped), or for snowflake IDs any integer
    /// type wide enough to be asked for (the seed reads `integer` and `numeric` keys too).
    fn matches(self, column: Oid, made: Oid) -> bool {
        let (column, made) = (base_type(column), base_type(made));
        match self {
            Holds::Integers => {
                column == made || column == pg_sys::INT4OID || column == pg_sys::NUMERICOID
            }
            Holds::Gdids => column == made,
        }
    }
}

/// The type a domain (over domains) is of; any other type itself.
fn base_type(ty: Oid) -> Oid {
    // SAFETY: getBaseType reads the type cache; an error (a type dropped meanwhile) is raised
    // through the guard.
    unsafe { errors::guarded(|| pg_sys::getBaseType(ty)) }
}

/// The DEFAULT expressions that call a function, with the column each is the DEFAULT of: a
/// column's own (pg_attrdef), or, for a column without one, its domain's (`CREATE DOMAIN ...
/// DEFAULT`, which a domain over it copies). As SQL for the queries below: rows of (tree,
/// rel, num, func).
const DEFAULTS_CALLING: &str = "
    SELECT d.adbin::pg_catalog.text AS tree, d.adrelid AS rel, d.adnum AS num, u.refobjid AS func
      FROM pg_catalog.pg_attrdef d
      JOIN pg_catalog.pg_depend u ON u.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
           AND u.objid = d.oid AND u.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
    UNION ALL
    SELECT t.typdefaultbin::pg_catalog.text, a.attrelid, a.attnum, u.refobjid
      FROM pg_catalog.pg_depend u
      JOIN pg_catalog.pg_type t ON u.classid = 'pg_catalog.pg_type'::pg_catalog.regclass
           AND u.objid = t.oid AND u.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND t.typdefaultbin IS NOT NULL
      JOIN pg_catalog.pg_attribute a ON a.atttypid = t.oid AND a.attnum > 0
           AND NOT a.attisdropped AND NOT a.atthasdef";

/// The columns whose DEFAULT calls the extension's function `function` with exactly `names`
/// as its arguments, and which hold what the function makes.
pub fn calling(
    conn: &mut Connection,
    function: &str,
    names: &[&[u8]],
    holds: Holds,
) -> Vec<Column> {
    let query = CString::new(format!(
        "SELECT d.tree, p.oid, c.oid, c.relkind, c.relowner,
                pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname),
                pg_catalog.quote_ident(a.attname::pg_catalog.text), a.atttypid,
                a.attname::pg_catalog.text, p.prorettype
           FROM pg_catalog.pg_proc p
           JOIN pg_catalog.pg_depend x ON x.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                AND x.objid = p.oid AND x.deptype = 'e'
           JOIN pg_catalog.pg_extension e ON e.oid = x.refobjid AND e.extname = 'snowflake_id'
           JOIN ({DEFAULTS_CALLING}) d ON d.func = p.oid
           JOIN pg_catalog.pg_attribute a ON a.attrelid = d.rel AND a.attnum = d.num
                AND NOT a.attisdropped
           JOIN pg_catalog.pg_class c ON c.oid = d.rel
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE p.proname = '{function}'
            AND c.relkind IN ('r', 'p')
            AND (c.relpersistence <> 't' OR c.relnamespace = pg_catalog.pg_my_temp_schema())
          ORDER BY d.rel, d.num"
    ))
    .expect("no NUL in the query");
    struct Found {
        tree: Vec<u8>,
        func: Oid,
        rel: Oid,
        relkind: u8,
        owner: Oid,
        table_name: Vec<u8>,
        column_name: Vec<u8>,
        ty: Oid,
        attname: Vec<u8>,
        made: Oid,
    }
    let found: Vec<Found> = {
        let rows = conn.select(&query, 0);
        (0..rows.len())
            .filter_map(|r| {
                Some(Found {
                    tree: rows.text(r, 1)?,
                    func: rows.oid(r, 2)?,
                    rel: rows.oid(r, 3)?,
                    relkind: rows.char(r, 4)?,
                    owner: rows.oid(r, 5)?,
                    table_name: rows.text(r, 6)?,
                    column_name: rows.text(r, 7)?,
                    ty: rows.oid(r, 8)?,
                    attname: rows.text(r, 9)?,
                    made: rows.oid(r, 10)?,
                })
            })
            .collect()
    };
    let mut columns: Vec<Column> = Vec::new();
    for f in found {
        if !holds.matches(f.ty, f.made) {
            continue;
        }
        if !default_calls_with(
            &f.tree,
            f.func,
            names,
            f.owner,
            &f.table_name,
            &f.column_name,
        ) {
            continue;
        }
        let found = if f.relkind == b'p' {
            leaf_partitions(conn, f.rel, &f.attname, &f.column_name)
        } else {
            vec![Column {
                table: f.rel,
                owner: f.owner,
                table_name: f.table_name,
                column_name: f.column_name,
                ty: f.ty,
            }]
        };
        // A partition with the default of its own is listed twice; read it once.
        for c in found {
            if !columns
                .iter()
                .any(|k| k.table == c.table && k.column_name == c.column_name)
            {
                columns.push(c);
            }
        }
    }
    columns
}

/// The columns of table `table` whose values are new where a row is inserted: those whose
/// DEFAULT, or the DEFAULT of a partitioned ancestor's column of the same name, calls one of
/// the extension's generators (with any arguments), and whose type is the generator's
/// (`bigint` or a domain over it for `snowflake_next`, `gdid` for `gdid_next`). By attribute
/// number, with what each holds. Also the table's partition ancestors, whose defaults count.
pub fn generating(conn: &mut Connection, table: Oid) -> (Vec<(i16, Holds)>, Vec<Oid>) {
    let t = table.to_u32();
    let query = CString::new(format!(
        "SELECT DISTINCT a.attnum::pg_catalog.int8, a.atttypid, p.prorettype,
                (CASE p.proname WHEN 'gdid_next' THEN 2 ELSE 1 END)::pg_catalog.int8
           FROM pg_catalog.pg_attribute a
           JOIN pg_catalog.pg_attribute da ON da.attname = a.attname AND NOT da.attisdropped
                AND da.attrelid IN (SELECT {t}::pg_catalog.oid UNION ALL
                                    SELECT relid FROM pg_catalog.pg_partition_ancestors({t}::pg_catalog.oid))
           JOIN ({DEFAULTS_CALLING}) d ON d.rel = da.attrelid AND d.num = da.attnum
           JOIN pg_catalog.pg_proc p ON p.oid = d.func AND p.proname IN ('snowflake_next', 'gdid_next')
           JOIN pg_catalog.pg_depend x ON x.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                AND x.objid = p.oid AND x.deptype = 'e'
           JOIN pg_catalog.pg_extension e ON e.oid = x.refobjid AND e.extname = 'snowflake_id'
          WHERE a.attrelid = {t}::pg_catalog.oid AND a.attnum > 0 AND NOT a.attisdropped
          ORDER BY 1"
    ))
    .expect("no NUL in the query");
    let columns = {
        let rows = conn.select(&query, 0);
        (0..rows.len())
            .filter_map(|r| {
                let attnum = i16::try_from(rows.i64(r, 1)?).ok()?;
                let (ty, made) = (rows.oid(r, 2)?, rows.oid(r, 3)?);
                let holds = match rows.i64(r, 4)? {
                    2 => Holds::Gdids,
                    _ => Holds::Integers,
                };
                // Detection decodes the generator's own type: bigint for snowflake IDs.
                (base_type(ty) == base_type(made)).then_some((attnum, holds))
            })
            .collect()
    };
    let query = CString::new(format!(
        "SELECT relid::pg_catalog.oid FROM pg_catalog.pg_partition_ancestors({t}::pg_catalog.oid)
          WHERE relid <> {t}::pg_catalog.oid"
    ))
    .expect("no NUL in the query");
    let ancestors = {
        let rows = conn.select(&query, 0);
        (0..rows.len()).filter_map(|r| rows.oid(r, 1)).collect()
    };
    (columns, ancestors)
}

/// The leaf partitions of partitioned table `rel` that are plain tables, with their column
/// named `attname` (a partition's columns have its parent's names, not its numbers).
fn leaf_partitions(
    conn: &mut Connection,
    rel: Oid,
    attname: &[u8],
    column_name: &[u8],
) -> Vec<Column> {
    let mut query = format!(
        "SELECT c.oid, c.relowner,
                pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname),
                a.atttypid
           FROM pg_catalog.pg_partition_tree({}::pg_catalog.oid) t
           JOIN pg_catalog.pg_class c ON c.oid = t.relid
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
           JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND NOT a.attisdropped
          WHERE t.isleaf AND c.relkind = 'r'
            AND pg_catalog.convert_to(a.attname::pg_catalog.text, pg_catalog.getdatabaseencoding()) = pg_catalog.decode('",
        rel.to_u32()
    )
    .into_bytes();
    // The name as a bytea literal: whatever its bytes, the query text stays ASCII.
    for b in attname {
        query.extend_from_slice(format!("{b:02x}").as_bytes());
    }
    query.extend_from_slice(b"', 'hex')");
    let query = CString::new(query).expect("no NUL in the query");
    let rows = conn.select(&query, 0);
    (0..rows.len())
        .filter_map(|r| {
            Some(Column {
                table: rows.oid(r, 1)?,
                owner: rows.oid(r, 2)?,
                table_name: rows.text(r, 3)?,
                column_name: column_name.to_vec(),
                ty: rows.oid(r, 4)?,
            })
        })
        .collect()
}

/// Whether the default expression `tree` (a `pg_node_tree`) calls function `func` with
/// exactly `names` as its arguments once they are folded to constants. Folding runs as the
/// table's `owner`.
fn default_calls_with(
    tree: &[u8],
    func: Oid,
    names: &[&[u8]],
    owner: Oid,
    table_name: &[u8],
    column_name: &[u8],
) -> bool {
    let Ok(tree) = CString::new(tree) else {
        return false;
    };
    let mut calls = Calls {
        func,
        found: Vec::new(),
    };
    // SAFETY: stringToNode parses a pg_node_tree into nodes in the current memory context;
    // the walker visits them with `calls` as its context, which outlives the walk.
    unsafe {
        let node = pg_sys::stringToNode(tree.as_ptr()).cast::<pg_sys::Node>();
        find_calls(node, (&raw mut calls).cast());
    }
    calls.found.into_iter().any(|call| {
        maintenance::as_owner(owner, || match fold(call) {
            Ok(folded) => has_names(folded, func, names),
            Err(caught) => {
                error(
                    Code::ERRCODE_SUCCESSFUL_COMPLETION,
                    format!(
                        "the DEFAULT of column {} of table {} could not be evaluated, so it is not taken to name a sequence",
                        DbText(column_name),
                        DbText(table_name)
                    ),
                )
                .detail(format!(
                    "{} (SQLSTATE {})",
                    DbText(&caught.message()),
                    sqlstate_text(caught.sqlstate())
                ))
                .log(false);
                caught.discard();
                false
            }
        })
    })
}

/// `call` after constant folding, in a subtransaction: an error folding raises is caught
/// and the subtransaction rolled back, so that one broken default cannot stop the seeding of
/// every sequence.
fn fold(call: *mut pg_sys::Node) -> Result<*mut pg_sys::Node, errors::Caught> {
    // SAFETY: the pattern of PL/pgSQL's exception blocks: an internal subtransaction around
    // the work, its memory context and resource owner put back on both ways out. The folded
    // tree is allocated in the caller's memory context, which outlives the subtransaction.
    // eval_const_expressions is called undeclared-by-pgrx (below) inside try_guarded.
    unsafe {
        let cxt = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::CurrentMemoryContext = cxt;
        let r = errors::try_guarded(|| eval_const_expressions(std::ptr::null_mut(), call));
        pg_sys::CurrentMemoryContext = cxt;
        match r {
            Ok(_) => pg_sys::ReleaseCurrentSubTransaction(),
            Err(_) => pg_sys::RollbackAndReleaseCurrentSubTransaction(),
        }
        pg_sys::CurrentMemoryContext = cxt;
        pg_sys::CurrentResourceOwner = owner;
        r
    }
}

/// Whether `node` is a call of `func` whose arguments are the text constants `names`.
fn has_names(node: *mut pg_sys::Node, func: Oid, names: &[&[u8]]) -> bool {
    // SAFETY: node is an expression node; each cast follows its tag; a text Const's value is
    // a varlena.
    unsafe {
        if node.is_null() || (*node).type_ != pg_sys::NodeTag::T_FuncExpr {
            return false;
        }
        let f = node.cast::<pg_sys::FuncExpr>();
        if (*f).funcid != func {
            return false;
        }
        let args = pgrx::PgList::<pg_sys::Node>::from_pg((*f).args);
        args.len() == names.len()
            && (0..args.len()).all(|i| {
                args.get_ptr(i)
                    .and_then(|a| const_text(a))
                    .is_some_and(|text| text == names[i])
            })
    }
}

/// The bytes of a non-null constant of type text, if `node` is one.
///
/// # Safety
/// `node` is an expression node.
unsafe fn const_text<'a>(node: *mut pg_sys::Node) -> Option<&'a [u8]> {
    // SAFETY: the cast follows the node's tag; a text Const's value is a varlena.
    unsafe {
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

struct Calls {
    func: Oid,
    found: Vec<*mut pg_sys::Node>,
}

#[pg_guard]
unsafe extern "C-unwind" fn find_calls(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    // SAFETY: context is the Calls of default_calls_with; node is a node of the parsed
    // expression, a FuncExpr when its tag says so.
    unsafe {
        let calls = &mut *context.cast::<Calls>();
        if (*node).type_ == pg_sys::NodeTag::T_FuncExpr
            && (*node.cast::<pg_sys::FuncExpr>()).funcid == calls.func
        {
            calls.found.push(node);
        }
        pg_sys::expression_tree_walker(node, Some(find_calls), context)
    }
}

/// The five characters of a SQLSTATE as PostgreSQL packs it.
fn sqlstate_text(code: i32) -> String {
    (0..5)
        .map(|i| (((code >> (6 * i)) & 0x3F) as u8 + b'0') as char)
        .collect()
}

unsafe extern "C-unwind" {
    // Declared here so that errors::try_guarded is the only guard around it.
    fn eval_const_expressions(
        root: *mut pg_sys::PlannerInfo,
        node: *mut pg_sys::Node,
    ) -> *mut pg_sys::Node;
}
