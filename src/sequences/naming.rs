//! Which sequences a DEFAULT names: calls of this extension's `snowflake_next(text)` and
//! `gdid_next(text, text)` whose arguments are text constants, found by walking the stored
//! expression tree (never evaluating it: no function of anyone's runs here).

use std::ffi::{c_void, CString};

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Oid};

use crate::core::identity::{Kind, SequenceName};
use crate::pg::spi;
use crate::sequences::catalog;

/// A sequence name found in a DEFAULT: its kind and names, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub kind: Kind,
    pub names: Vec<Vec<u8>>,
}

impl Named {
    pub fn name(&self) -> SequenceName<'_> {
        match self.kind {
            Kind::Snowflake => SequenceName::Snowflake(&self.names[0]),
            Kind::Gdid => SequenceName::Gdid {
                scope: &self.names[0],
                sequence: &self.names[1],
            },
        }
    }
}

/// Whether the DEFAULT expression `tree` names sequence relation `seq`.
pub fn names(tree: &[u8], seq: Oid) -> bool {
    named_in(tree).iter().any(|n| {
        n.name()
            .relation_name()
            .is_ok_and(|relname| catalog::find(catalog::schema(n.kind).oid, &relname) == Some(seq))
    })
}

/// The expression tree of column DEFAULT `attrdef`, if it exists.
pub fn column_default(attrdef: Oid) -> Option<Vec<u8>> {
    let query = CString::new(format!(
        "SELECT adbin::pg_catalog.text FROM pg_catalog.pg_attrdef WHERE oid = {}::pg_catalog.oid",
        attrdef.to_u32()
    ))
    .expect("no NUL in the query");
    spi::connect(|conn| conn.select(&query, 1).text(0, 1))
}

/// The expression tree of a domain's DEFAULT, if it has one.
pub fn domain_default(domain: Oid) -> Option<Vec<u8>> {
    let query = CString::new(format!(
        "SELECT typdefaultbin::pg_catalog.text FROM pg_catalog.pg_type
          WHERE oid = {}::pg_catalog.oid AND typtype = 'd'",
        domain.to_u32()
    ))
    .expect("no NUL in the query");
    spi::connect(|conn| conn.select(&query, 1).text(0, 1))
}

/// The sequences an expression tree (a `pg_node_tree`) names by constants: calls of this
/// extension's `snowflake_next(text)` and `gdid_next(text, text)` whose arguments are text
/// constants (as written, cast to `text` or `varchar`, or with a COLLATE clause).
pub fn named_in(tree: &[u8]) -> Vec<Named> {
    let Ok(tree) = CString::new(tree) else {
        return Vec::new();
    };
    let generators = generators();
    let mut walk = Walk {
        generators,
        found: Vec::new(),
    };
    // SAFETY: stringToNode parses a pg_node_tree into nodes in the current memory context;
    // the walker visits them with `walk` as its context, which outlives the walk.
    unsafe {
        let node = pg_sys::stringToNode(tree.as_ptr()).cast::<pg_sys::Node>();
        find_calls(node, (&raw mut walk).cast());
    }
    walk.found
}

/// This extension's generators: `snowflake_next(text)` and `gdid_next(text, text)`, by OID.
#[derive(Debug, Clone, Copy, Default)]
struct Generators {
    snowflake: Oid,
    gdid: Oid,
}

fn generators() -> Generators {
    let query = CString::new(format!(
        "SELECT p.oid, p.pronargs::pg_catalog.int8 FROM ({}) p
          WHERE p.proname IN ('snowflake_next', 'gdid_next')
            AND p.proargtypes[0] = 'pg_catalog.text'::pg_catalog.regtype",
        spi::EXTENSION_FUNCTIONS
    ))
    .expect("no NUL in the query");
    spi::connect(|conn| {
        let rows = conn.select(&query, 0);
        let mut g = Generators::default();
        for r in 0..rows.len() {
            match (rows.oid(r, 1), rows.i64(r, 2)) {
                (Some(oid), Some(1)) => g.snowflake = oid,
                (Some(oid), Some(2)) => g.gdid = oid,
                _ => {}
            }
        }
        g
    })
}

struct Walk {
    generators: Generators,
    found: Vec<Named>,
}

/// The bytes of a text constant, if `node` is one (through a relabelling to `text` or
/// `varchar` and a COLLATE clause, which change nothing of the value).
///
/// # Safety
/// `node` is an expression node.
unsafe fn const_text(mut node: *mut pg_sys::Node) -> Option<Vec<u8>> {
    // SAFETY: each cast follows the node's tag; a text Const's value is a varlena.
    unsafe {
        loop {
            match (*node).type_ {
                pg_sys::NodeTag::T_RelabelType => {
                    node = (*node.cast::<pg_sys::RelabelType>()).arg.cast();
                }
                pg_sys::NodeTag::T_CollateExpr => {
                    node = (*node.cast::<pg_sys::CollateExpr>()).arg.cast();
                }
                pg_sys::NodeTag::T_Const => break,
                _ => return None,
            }
        }
        let c = node.cast::<pg_sys::Const>();
        let text_like = [pg_sys::TEXTOID, pg_sys::VARCHAROID].contains(&(*c).consttype);
        if (*c).constisnull || !text_like {
            return None;
        }
        Some(crate::pg::fmgr::varlena_bytes((*c).constvalue.cast_mut_ptr()).to_vec())
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn find_calls(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    // SAFETY: context is the Walk of named_in; node is a node of the parsed expression, a
    // FuncExpr when its tag says so.
    unsafe {
        let walk = &mut *context.cast::<Walk>();
        if (*node).type_ == pg_sys::NodeTag::T_FuncExpr {
            let f = node.cast::<pg_sys::FuncExpr>();
            let kind = match (*f).funcid {
                id if id == walk.generators.snowflake && id != pg_sys::InvalidOid => {
                    Some(Kind::Snowflake)
                }
                id if id == walk.generators.gdid && id != pg_sys::InvalidOid => Some(Kind::Gdid),
                _ => None,
            };
            if let Some(kind) = kind {
                let args = pgrx::PgList::<pg_sys::Node>::from_pg((*f).args);
                // A named argument (`seq => 'orders'`) stays a NamedArgExpr in a stored
                // expression, holding its position.
                let mut names: Vec<Option<Vec<u8>>> = vec![None; args.len()];
                for i in 0..args.len() {
                    let Some(mut arg) = args.get_ptr(i) else {
                        continue;
                    };
                    let mut at = i;
                    if (*arg).type_ == pg_sys::NodeTag::T_NamedArgExpr {
                        let named = arg.cast::<pg_sys::NamedArgExpr>();
                        at = usize::try_from((*named).argnumber).unwrap_or(usize::MAX);
                        arg = (*named).arg.cast();
                    }
                    if let Some(slot) = names.get_mut(at) {
                        *slot = const_text(arg);
                    }
                }
                if let Some(names) = names.into_iter().collect::<Option<Vec<_>>>() {
                    walk.found.push(Named { kind, names });
                }
            }
        }
        pg_sys::expression_tree_walker(node, Some(find_calls), context)
    }
}
