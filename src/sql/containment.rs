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
//! The rewrite is exact, NULLs included: `x <@ r` is `x >= lower AND x < upper` for a constant
//! range (each end as it is inclusive or not), `x >= first AND x <= last` where first..=last
//! are the values `r` holds otherwise; for an empty range, `x IS NULL AND NULL` (false, or
//! NULL for a NULL key, and a constant the planner prunes by). A range that is not a constant
//! but the same for every row (`now()`, a parameter, a column of an outer query) becomes
//! `snowflake_range_first(r)` and `snowflake_range_last(r)`. The key then stands twice in the
//! tree, and such a range too, so each must give one value however often it is evaluated.
//! An int2 or int4 key that was widened implicitly (to meet an operator of bigint) is compared
//! as it is, so that its index serves; one cast by the query (`x::bigint`) stays as written,
//! as PostgreSQL 18's own rewrite keeps it, for an index or a partition key on `x::bigint`.
//! Everything else keeps PostgreSQL's own operator: a key or range that may differ between
//! evaluations (volatile, a set, a subquery: TABLESAMPLE, LIMIT without ORDER BY), and a range
//! read from the rows (a join, a range column), which a GiST index on the range column serves
//! and the two comparisons would not.

use std::ffi::c_void;
use std::ptr::null_mut;

use pgrx::pg_sys::{self, Node};

use crate::core::idrange::{End, IdRange};
use crate::pg::exprs;
use crate::pg::fmgr;
use crate::sql::sqlfn::sql_functions;

sql_functions! {
    fn snowflake_contained_by(id: bigint, r: int8range) -> boolean
        [immutable parallel_safe support("snowflake_range_support")] |_| {
        r.holds(id)
    }

    fn snowflake_range_contains(r: int8range, id: bigint) -> boolean
        [immutable parallel_safe support("snowflake_range_support")] |_| {
        r.holds(id)
    }

    /// The smallest value `r` holds; bigint's largest for an empty range (so that `x >= first
    /// AND x <= last` holds for no x).
    fn snowflake_range_first(r: int8range) -> bigint [immutable parallel_safe] |_| {
        r.closed().map_or(i64::MAX, |(first, _)| first)
    }

    /// The largest value `r` holds; bigint's smallest for an empty range.
    fn snowflake_range_last(r: int8range) -> bigint [immutable parallel_safe] |_| {
        r.closed().map_or(i64::MIN, |(_, last)| last)
    }

    /// The planner's support of the two operators' functions (SupportRequestSimplify).
    fn snowflake_range_support(req: internal) -> internal [immutable parallel_safe] |_| {
        simplified(req.cast()).cast()
    }
}

/// The expression that replaces a call of either function, or a null pointer to keep it.
fn simplified(req: *mut Node) -> *mut c_void {
    // SAFETY: the planner passes a live support request node; a Simplify request holds the
    // call.
    let (call, args, grouping_sets) = unsafe {
        if (*req).type_ != pg_sys::NodeTag::T_SupportRequestSimplify {
            return null_mut();
        }
        let req = req.cast::<pg_sys::SupportRequestSimplify>();
        let call = (*req).fcall;
        let root = (*req).root;
        let grouping_sets =
            !root.is_null() && !(*root).parse.is_null() && !(*(*root).parse).groupingSets.is_null();
        (call, (*call).args, grouping_sets)
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
    // The key the comparisons take: an int2 or int4 column widened to meet the operator is
    // compared as it is, so that its index serves; not under grouping sets, where the
    // grouped expression is the widened one, which the planner sets NULL in the sets that
    // leave it out, and the column inside it would not be.
    let compared = if grouping_sets {
        key
    } else {
        exprs::unwidened(key)
    };
    let node = if !exprs::repeatable(key) || !exprs::is_integer(compared) {
        own()
    } else {
        let key = compared;
        match exprs::constant(range) {
            Some(None) => exprs::null_bool(),
            Some(Some(d)) => {
                // SAFETY: a non-null Const of the int8range argument.
                between(key, unsafe { fmgr::int8range(d) })
            }
            // A range read from the rows (a join, a range column) keeps PostgreSQL's operator,
            // which a GiST index on the range column serves.
            None if !exprs::repeatable(range) || exprs::has_vars(range) => own(),
            // SAFETY: the call node is live.
            None => match bounds_of(unsafe { (*call).funcid }) {
                Some((first, last)) => exprs::and(
                    exprs::integer_compare(
                        exprs::GREATER_EQUAL,
                        key,
                        exprs::int8_call(first, range),
                    ),
                    exprs::integer_compare(
                        exprs::LESS_EQUAL,
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

/// `key` between the ends of a constant range, in the comparisons PostgreSQL 18 makes of its
/// own operator with a constant range (an inclusive end `>=`/`<=`, an exclusive one `>`/`<`),
/// so that a partial index or an ON CONFLICT clause written with either operator matches a
/// query written with the other there.
fn between(key: *mut Node, range: IdRange) -> *mut Node {
    if range.closed().is_none() {
        return exprs::and(exprs::is_null(key), exprs::null_bool());
    }
    let compare = |key, strategy, v| exprs::integer_compare(strategy, key, exprs::int8_const(v));
    let low = match range.lower {
        End::Unbounded => None,
        End::Inclusive(v) => Some((exprs::GREATER_EQUAL, v)),
        End::Exclusive(v) => Some((exprs::GREATER, v)),
    };
    let high = match range.upper {
        End::Unbounded => None,
        End::Inclusive(v) => Some((exprs::LESS_EQUAL, v)),
        End::Exclusive(v) => Some((exprs::LESS, v)),
    };
    match (low, high) {
        (Some((s, v)), None) | (None, Some((s, v))) => compare(key, s, v),
        (Some((s, v)), Some((t, w))) => {
            exprs::and(compare(key, s, v), compare(exprs::copy(key), t, w))
        }
        // Every value: true for a key, NULL for NULL.
        (None, None) => compare(key, exprs::GREATER_EQUAL, i64::MIN),
    }
}
