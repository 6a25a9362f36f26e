//! `bigint <@ int8range` and `int8range @> bigint`, and so of the `snowflake` domain over
//! bigint, with a support function that plans them as two comparisons of the key, so that a
//! btree on the key scans a range and partitions by ranges of the key are pruned: at plan time
//! for a constant range (the IMMUTABLE `snowflake_range(from, to, layout)` folds to one), when
//! the executor starts for a stable one (`snowflake_range(now() - interval '1 hour', now())`,
//! a parameter). PostgreSQL 18 does the same for its own `anyelement <@ anyrange`, for
//! constant ranges only; 15 to 17 do not at all.
//!
//! The operators are declared on bigint, not on the domain: PostgreSQL would resolve a bigint
//! key to an operator of the domain too (an implicit cast), and add the domain's check to it.
//! So they stand in for PostgreSQL's own wherever the extension's schema is in the search
//! path, and must mean exactly what it means: where the two comparisons do not apply, the call
//! becomes PostgreSQL's own operator.
//!
//! The rewrite is exact, NULLs included: `x <@ r` is `x >= first AND x <= last` where
//! first..=last are the values `r` holds; for an empty range, `x IS NULL AND NULL` (false, or
//! NULL for a NULL key, and a constant the planner prunes by). A range that is not a
//! constant becomes `snowflake_range_first(r)` and `snowflake_range_last(r)`. Each side then
//! stands twice in the tree, so it must give one value however often it is evaluated: a key
//! or range that may not (volatile, a set, a subquery) keeps PostgreSQL's own operator, as
//! does a range read from the rows with a key that is not, which a GiST index on the range
//! column serves.

use std::ffi::c_void;
use std::ptr::null_mut;

use pgrx::pg_sys::{self, Node};

use crate::core::idrange::{closed, End};
use crate::pg::exprs;
use crate::sql::fmgr;
use crate::sql::sqlfn::sql_functions;

sql_functions! {
    fn snowflake_contained_by(id: bigint, r: int8range) -> boolean
        [immutable parallel_safe support("snowflake_range_support")] |_| {
        holds(r, id)
    }

    fn snowflake_range_contains(r: int8range, id: bigint) -> boolean
        [immutable parallel_safe support("snowflake_range_support")] |_| {
        holds(r, id)
    }

    /// The smallest value `r` holds; bigint's largest for an empty range (so that `x >= first
    /// AND x <= last` holds for no x).
    fn snowflake_range_first(r: int8range) -> bigint [immutable parallel_safe] |_| {
        closed(r.0, r.1, r.2).map_or(i64::MAX, |(first, _)| first)
    }

    /// The largest value `r` holds; bigint's smallest for an empty range.
    fn snowflake_range_last(r: int8range) -> bigint [immutable parallel_safe] |_| {
        closed(r.0, r.1, r.2).map_or(i64::MIN, |(_, last)| last)
    }

    /// The planner's support of the two operators' functions (SupportRequestSimplify).
    fn snowflake_range_support(req: internal) -> internal [immutable parallel_safe] |_| {
        simplified(req.cast()).cast()
    }
}

fn holds((empty, lower, upper): (bool, End, End), id: i64) -> bool {
    closed(empty, lower, upper).is_some_and(|(first, last)| (first..=last).contains(&id))
}

/// The expression that replaces a call of either function, or a null pointer to keep it.
fn simplified(req: *mut Node) -> *mut c_void {
    // SAFETY: the planner passes a live support request node; a Simplify request holds the
    // call.
    let (call, args) = unsafe {
        if (*req).type_ != pg_sys::NodeTag::T_SupportRequestSimplify {
            return null_mut();
        }
        let call = (*req.cast::<pg_sys::SupportRequestSimplify>()).fcall;
        (call, (*call).args)
    };
    // SAFETY: reading the length of a live List.
    if unsafe { pg_sys::list_length(args) } != 2 {
        return null_mut();
    }
    let (a, b) = (exprs::call_arg(args, 0), exprs::call_arg(args, 1));
    // The declarations make one argument bigint and the other int8range; a call of anything
    // else (the support function attached to another function) is left as it is.
    let (key, range, contained_by) = match (exprs::base_type(a), exprs::base_type(b)) {
        (pg_sys::INT8OID, pg_sys::INT8RANGEOID) => (a, b, true),
        (pg_sys::INT8RANGEOID, pg_sys::INT8OID) => (b, a, false),
        _ => return null_mut(),
    };
    let own = || {
        if contained_by {
            exprs::bool_op(exprs::ELEM_CONTAINED_BY_RANGE, key, range)
        } else {
            exprs::bool_op(exprs::RANGE_CONTAINS_ELEM, range, key)
        }
    };
    let node = if !exprs::repeatable(key) {
        own()
    } else {
        match exprs::constant(range) {
            Some(None) => exprs::null_bool(),
            Some(Some(d)) => {
                // SAFETY: a non-null Const of the int8range argument.
                let (empty, lower, upper) = unsafe { fmgr::int8range_ends(d) };
                between(key, closed(empty, lower, upper))
            }
            None if !exprs::repeatable(range)
                || exprs::has_vars(range) && !exprs::has_vars(key) =>
            {
                own()
            }
            // SAFETY: the call node is live.
            None => match bounds_of(unsafe { (*call).funcid }) {
                Some((first, last)) => exprs::and(
                    exprs::bool_op(exprs::INT8_GE, key, exprs::int8_call(first, range)),
                    exprs::bool_op(
                        exprs::INT8_LE,
                        exprs::copy(key),
                        exprs::int8_call(last, exprs::copy(range)),
                    ),
                ),
                None => own(),
            },
        }
    };
    node.cast()
}

/// snowflake_range_first and snowflake_range_last of the extension of function `beside`.
fn bounds_of(beside: pg_sys::Oid) -> Option<(pg_sys::Oid, pg_sys::Oid)> {
    Some((
        exprs::function_beside(beside, c"snowflake_range_first", pg_sys::INT8RANGEOID)?,
        exprs::function_beside(beside, c"snowflake_range_last", pg_sys::INT8RANGEOID)?,
    ))
}

/// `key` within `first..=last` (None: nothing) in as few comparisons as say it.
fn between(key: *mut Node, span: Option<(i64, i64)>) -> *mut Node {
    let Some((first, last)) = span else {
        return exprs::and(exprs::is_null(key), exprs::null_bool());
    };
    let ge = || exprs::bool_op(exprs::INT8_GE, key, exprs::int8_const(first));
    match (first == i64::MIN, last == i64::MAX) {
        (_, true) => ge(),
        (true, false) => exprs::bool_op(exprs::INT8_LE, key, exprs::int8_const(last)),
        (false, false) => exprs::and(
            ge(),
            exprs::bool_op(exprs::INT8_LE, exprs::copy(key), exprs::int8_const(last)),
        ),
    }
}
