//! Expression trees for the planner: the comparisons a support function puts in place of a
//! call (`sql::containment`). Everything here allocates in the current memory context and may
//! raise (out of memory, a cache lookup), so it runs inside a function's error boundary.

use std::ffi::{c_int, CStr};
use std::ptr::null_mut;

use pgrx::pg_sys::{self, Datum, Node, Oid};

/// PostgreSQL's own containment of an element in a range (pg_operator.dat:
/// range_contains_elem, elem_contained_by_range), which GiST's range_ops serve. OIDs below
/// 10000 are pinned and never change.
pub const RANGE_CONTAINS_ELEM: Oid = Oid::from_u32(3889);
pub const ELEM_CONTAINED_BY_RANGE: Oid = Oid::from_u32(3891);

/// Strategies of the comparisons, as btree numbers them.
pub const GREATER: u32 = pg_sys::BTGreaterStrategyNumber;
pub const GREATER_EQUAL: u32 = pg_sys::BTGreaterEqualStrategyNumber;
pub const LESS: u32 = pg_sys::BTLessStrategyNumber;
pub const LESS_EQUAL: u32 = pg_sys::BTLessEqualStrategyNumber;

/// An expression's type, its domain looked through.
pub fn base_type(e: *mut Node) -> Oid {
    // SAFETY: `e` is a live expression node of the call being planned.
    unsafe { pg_sys::getBaseType(pg_sys::exprType(e)) }
}

/// Whether `e` gives the same value each time it is evaluated within a statement, so that it
/// may stand twice in a tree: nothing volatile, no set, and no subquery (a stable-looking one
/// may still differ, by TABLESAMPLE or LIMIT without ORDER BY, and costs twice).
pub fn repeatable(e: *mut Node) -> bool {
    // SAFETY: `e` is a live expression node; these walk it read-only.
    unsafe {
        !pg_sys::contain_volatile_functions(e)
            && !pg_sys::expression_returns_set(e)
            && !pg_sys::contain_subplans(e)
    }
}

/// Whether `e` reads a column of the query level being planned.
pub fn has_vars(e: *mut Node) -> bool {
    // SAFETY: `e` is a live expression node, walked read-only.
    unsafe { pg_sys::contain_var_clause(e) }
}

pub fn int8_const(v: i64) -> *mut Node {
    // SAFETY: a new by-value int8 Const.
    unsafe {
        pg_sys::makeConst(
            pg_sys::INT8OID,
            -1,
            pg_sys::InvalidOid,
            8,
            Datum::from(v),
            false,
            true,
        )
        .cast()
    }
}

/// An int2 or int4 expression that was widened implicitly to bigint (to meet an operator of
/// bigint), as it was: compared with bigints through the integer btree family's cross-type
/// operators, an index on it or a partition key of it serves; widening loses nothing. A cast
/// the query wrote (`x::bigint`) and anything else stay as they are.
pub fn unwidened(e: *mut Node) -> *mut Node {
    // SAFETY: the tag and fields of a live node, and of its one argument.
    unsafe {
        if (*e).type_ != pg_sys::NodeTag::T_FuncExpr {
            return e;
        }
        let f = e.cast::<pg_sys::FuncExpr>();
        if (*f).funcformat != pg_sys::CoercionForm::COERCE_IMPLICIT_CAST
            || (*f).funcresulttype != pg_sys::INT8OID
            || pg_sys::list_length((*f).args) != 1
        {
            return e;
        }
        let arg = pg_sys::list_nth((*f).args, 0).cast::<Node>();
        match pg_sys::exprType(arg) {
            pg_sys::INT2OID | pg_sys::INT4OID => arg,
            _ => e,
        }
    }
}

/// Whether `e` is of a type the integer btree family compares with bigint: int2, int4, int8.
pub fn is_integer(e: *mut Node) -> bool {
    // SAFETY: the type of a live node.
    let t = unsafe { pg_sys::exprType(e) };
    matches!(t, pg_sys::INT2OID | pg_sys::INT4OID | pg_sys::INT8OID)
}

/// `left <strategy> right` for an integer `left` (int2, int4 or int8) and a bigint `right`,
/// by the operator of the integer btree family.
pub fn integer_compare(strategy: u32, left: *mut Node, right: *mut Node) -> *mut Node {
    // SAFETY: a catalog cache lookup of a pinned operator family's member.
    let op = unsafe {
        pg_sys::get_opfamily_member(
            pg_sys::INTEGER_BTREE_FAM_OID,
            pg_sys::exprType(left),
            pg_sys::INT8OID,
            strategy as i16,
        )
    };
    bool_op(op, left, right)
}

/// `left op right`, a boolean operator without collation (its function filled in, as the
/// parser does).
pub fn bool_op(op: Oid, left: *mut Node, right: *mut Node) -> *mut Node {
    // SAFETY: a new OpExpr over live nodes; get_opcode reads the syscache of a pinned
    // operator.
    unsafe {
        let e = pg_sys::make_opclause(
            op,
            pg_sys::BOOLOID,
            false,
            left.cast(),
            right.cast(),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
        );
        (*e.cast::<pg_sys::OpExpr>()).opfuncid = pg_sys::get_opcode(op);
        e.cast()
    }
}

/// `a AND b`.
pub fn and(a: *mut Node, b: *mut Node) -> *mut Node {
    // SAFETY: a new two-element List and BoolExpr over live nodes.
    unsafe {
        let args = pg_sys::lappend(pg_sys::lappend(null_mut(), a.cast()), b.cast());
        pg_sys::make_andclause(args).cast()
    }
}

/// The SQL NULL of type boolean.
pub fn null_bool() -> *mut Node {
    // SAFETY: a new Const.
    unsafe { pg_sys::makeBoolConst(false, true) }
}

/// `e IS NULL`.
pub fn is_null(e: *mut Node) -> *mut Node {
    // SAFETY: a new, zeroed NullTest node in the current memory context, filled as
    // makeNode(NullTest) would be.
    unsafe {
        let t = pg_sys::palloc0(std::mem::size_of::<pg_sys::NullTest>()).cast::<pg_sys::NullTest>();
        (*t).xpr.type_ = pg_sys::NodeTag::T_NullTest;
        (*t).arg = e.cast();
        (*t).nulltesttype = pg_sys::NullTestType::IS_NULL;
        (*t).argisrow = false;
        (*t).location = -1;
        t.cast()
    }
}

/// A copy of `e`, for a second place in a tree.
pub fn copy(e: *mut Node) -> *mut Node {
    // SAFETY: copyObject of a live node.
    unsafe { pg_sys::copyObjectImpl(e.cast()).cast() }
}

/// A call of `f(arg)` returning `int8`.
pub fn int8_call(f: Oid, arg: *mut Node) -> *mut Node {
    // SAFETY: a new FuncExpr over a one-element List of a live node.
    unsafe {
        pg_sys::makeFuncExpr(
            f,
            pg_sys::INT8OID,
            pg_sys::lappend(null_mut(), arg.cast()),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
            pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
        )
        .cast()
    }
}

/// The function `name(arg_type)` of the schema that holds function `beside`, if there is one
/// and it belongs to the same extension: a function someone else made in that schema (after
/// the extension's own was taken out of it) is never called. Looked up in the catalog cache,
/// without the privilege checks of a name lookup: the role planning the query need not have
/// USAGE on the schema, as it need not to call the operator.
pub fn function_beside(beside: Oid, name: &CStr, arg_type: Oid) -> Option<Oid> {
    // SAFETY: catalog cache lookups by OID and by (name, argument types, schema); the name is
    // a NUL-terminated string and the oidvector a fresh one.
    unsafe {
        let args = pg_sys::buildoidvector(&arg_type, 1);
        let f = pg_sys::GetSysCacheOid(
            pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP as c_int,
            pg_sys::Anum_pg_proc_oid as pg_sys::AttrNumber,
            Datum::from(name.as_ptr()),
            Datum::from(args),
            Datum::from(pg_sys::get_func_namespace(beside)),
            Datum::from(0),
        );
        let extension = pg_sys::getExtensionOfObject(pg_sys::ProcedureRelationId, beside);
        (f != pg_sys::InvalidOid
            && extension != pg_sys::InvalidOid
            && pg_sys::getExtensionOfObject(pg_sys::ProcedureRelationId, f) == extension)
            .then_some(f)
    }
}

/// The `n`th argument of a call (0-based).
pub fn call_arg(args: *mut pg_sys::List, n: c_int) -> *mut Node {
    // SAFETY: the caller checked the list's length.
    unsafe { pg_sys::list_nth(args, n).cast() }
}

/// Whether `e` is a Const, and then its Datum (None for NULL).
pub fn constant(e: *mut Node) -> Option<Option<Datum>> {
    // SAFETY: the tag of a live node, then its Const fields.
    unsafe {
        if (*e).type_ != pg_sys::NodeTag::T_Const {
            return None;
        }
        let c = e.cast::<pg_sys::Const>();
        Some((!(*c).constisnull).then_some((*c).constvalue))
    }
}
