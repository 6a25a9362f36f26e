//! Expression trees for the planner: the comparisons a support function puts in place of a
//! call (`sql::containment`). Everything here allocates in the current memory context and may
//! raise (out of memory, a cache lookup), so it runs inside a function's error boundary.

use std::ffi::{c_int, CString};
use std::ptr::null_mut;

use pgrx::pg_sys::{self, Datum, Node, Oid};

/// `>=`, `<=` and `<` of `int8` (pg_operator.dat: int8ge, int8le, int8lt). Operators below
/// 10000 are pinned: their OIDs never change.
pub const INT8_GE: Oid = Oid::from_u32(415);
pub const INT8_LE: Oid = Oid::from_u32(414);
pub const INT8_LT: Oid = Oid::from_u32(412);

/// An expression's type, its domain looked through.
pub fn base_type(e: *mut Node) -> Oid {
    // SAFETY: `e` is a live expression node of the call being planned.
    unsafe { pg_sys::getBaseType(pg_sys::exprType(e)) }
}

/// Whether evaluating `e` twice may differ from evaluating it once, or yields a set.
pub fn unsafe_to_repeat(e: *mut Node) -> bool {
    // SAFETY: `e` is a live expression node; both walk it read-only.
    unsafe { pg_sys::contain_volatile_functions(e) || pg_sys::expression_returns_set(e) }
}

/// `e` as an `int8` (a domain over it relabelled, as the parser coerces one).
pub fn as_int8(e: *mut Node) -> *mut Node {
    // SAFETY: reading the type of a live node, and wrapping it in a new RelabelType.
    unsafe {
        if pg_sys::exprType(e) == pg_sys::INT8OID {
            return e;
        }
        pg_sys::makeRelabelType(
            e.cast(),
            pg_sys::INT8OID,
            -1,
            pg_sys::InvalidOid,
            pg_sys::CoercionForm::COERCE_IMPLICIT_CAST,
        )
        .cast()
    }
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

/// `left op right`, a boolean operator of int8 (its function filled in, as the parser does).
pub fn int8_op(op: Oid, left: *mut Node, right: *mut Node) -> *mut Node {
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
/// the extension's own was taken out of it) is never called.
pub fn function_beside(beside: Oid, name: &str, arg_type: Oid) -> Option<Oid> {
    // SAFETY: catalog lookups by OID and by qualified name (missing_ok: no error for a
    // missing one); the name list is built of fresh String nodes.
    unsafe {
        let schema = pg_sys::get_namespace_name(pg_sys::get_func_namespace(beside));
        if schema.is_null() {
            return None;
        }
        let name = CString::new(name).ok()?;
        let qualified = pg_sys::lappend(
            pg_sys::lappend(null_mut(), pg_sys::makeString(schema).cast()),
            pg_sys::makeString(pg_sys::pstrdup(name.as_ptr())).cast(),
        );
        let args = [arg_type];
        let f = pg_sys::LookupFuncName(qualified, 1, args.as_ptr(), true);
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
