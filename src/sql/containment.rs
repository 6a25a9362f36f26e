//! `id <@ int8range` and `int8range @> id` for the snowflake domain, and the support function
//! that plans them as two comparisons of the key, so that a btree on the key scans a range and
//! partitions by ranges of the key are pruned: at plan time for a constant range (the IMMUTABLE
//! `snowflake_range(from, to, layout)` folds to one), when the executor starts for a stable one
//! (`snowflake_range(now() - interval '1 hour', now())`). PostgreSQL 18 does the same for its
//! own `anyelement <@ anyrange`, for constant ranges only; 15 to 17 do not at all.
//!
//! The rewrite is exact, NULLs included: `x <@ r` is `x >= first AND x <= last` where
//! first..=last are the values `r` holds; nothing (`x < -2^63`) for an empty range. A range
//! that is not a constant becomes `snowflake_range_first(r)` and `snowflake_range_last(r)`,
//! so it must be safe to evaluate twice: a volatile one (or a volatile key expression) is left
//! as it is.

use std::ffi::c_void;
use std::ptr::null_mut;

use pgrx::pg_sys::{self, Node};

use crate::core::idrange::{closed, End};
use crate::pg::exprs;
use crate::sql::fmgr;
use crate::sql::sqlfn::sql_functions;

sql_functions! {
    fn snowflake_contained_by(id: snowflake, r: int8range) -> boolean
        [immutable parallel_safe support("snowflake_range_support")] |_| {
        holds(r, id)
    }

    fn snowflake_range_contains(r: int8range, id: snowflake) -> boolean
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

/// The comparisons that replace a call of either function, or a null pointer to keep it.
fn simplified(req: *mut Node) -> *mut c_void {
    // SAFETY: the planner passes a live support request node; a Simplify request holds the
    // call, whose argument list the declarations make two long.
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
    let (id, range) = if exprs::base_type(a) == pg_sys::INT8RANGEOID {
        (b, a)
    } else {
        (a, b)
    };
    if exprs::unsafe_to_repeat(id) {
        return null_mut();
    }
    let key = exprs::as_int8(id);
    let node = match exprs::constant(range) {
        Some(None) => exprs::null_bool(),
        Some(Some(d)) => {
            // SAFETY: a non-null Const of type int8range (or a domain over it).
            let (empty, lower, upper) = unsafe { fmgr::int8range_ends(d) };
            between(key, closed(empty, lower, upper))
        }
        None => {
            if exprs::unsafe_to_repeat(range) {
                return null_mut();
            }
            // SAFETY: the call node is live.
            let beside = unsafe { (*call).funcid };
            let (Some(first), Some(last)) = (
                exprs::function_beside(beside, "snowflake_range_first", pg_sys::INT8RANGEOID),
                exprs::function_beside(beside, "snowflake_range_last", pg_sys::INT8RANGEOID),
            ) else {
                return null_mut();
            };
            exprs::and(
                exprs::int8_op(exprs::INT8_GE, key, exprs::int8_call(first, range)),
                exprs::int8_op(
                    exprs::INT8_LE,
                    exprs::copy(key),
                    exprs::int8_call(last, exprs::copy(range)),
                ),
            )
        }
    };
    node.cast()
}

/// `key` within `first..=last` (None: nothing) as few comparisons as say it.
fn between(key: *mut Node, span: Option<(i64, i64)>) -> *mut Node {
    let Some((first, last)) = span else {
        return exprs::int8_op(exprs::INT8_LT, key, exprs::int8_const(i64::MIN));
    };
    let ge = || exprs::int8_op(exprs::INT8_GE, key, exprs::int8_const(first));
    match (first == i64::MIN, last == i64::MAX) {
        (_, true) => ge(),
        (true, false) => exprs::int8_op(exprs::INT8_LE, key, exprs::int8_const(last)),
        (false, false) => exprs::and(
            ge(),
            exprs::int8_op(exprs::INT8_LE, exprs::copy(key), exprs::int8_const(last)),
        ),
    }
}
