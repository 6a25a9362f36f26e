//! One declaration per SQL function: [`sql_functions!`] states each C function's symbol, its
//! SQL name, typed arguments, return type and markings once, and from that makes the V1
//! function PostgreSQL calls (its `pg_finfo_*` record, typed argument reads, the result as a
//! Datum, the error boundary) and the [`SqlFunction`] entry that a test compares, field by
//! field, with the `CREATE FUNCTION` statements of `snowflake.sql` and `gdid.sql` (`tests` below). A type, a
//! marking or a symbol that differs fails `cargo test`, not a query.
//!
//! Argument types are marker types named after the SQL types ([`types`]); each says how its
//! Datum is read into Rust and how a Rust result becomes a Datum, so the declaration's SQL
//! type and the Rust type a body sees cannot disagree. Every function here is `STRICT`: the
//! wrapper checks the argument count and that no argument is NULL before reading any, so a
//! mismatch with the catalog is an error, never a misread.
//!
//! Set-returning functions either return `setof T` (one value per call, the body drives the
//! SRF protocol through `fmgr::rows_per_call`) or `table(col: type, ...)`, whose columns are
//! named once here: the body emits typed tuples of `Option`s (None is NULL).

use pgrx::pg_sys::{Datum, FunctionCallInfo};

use crate::pg::errors::{self, error, Code};
use crate::pg::fmgr::Call;

/// What `pg_proc` says of a C function, as its declaration states it.
// Read by the test that compares declarations with the scripts.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub struct SqlFunction {
    pub name: &'static str,
    pub symbol: &'static str,
    pub args: &'static [Param],
    pub returns: Returns,
    pub markings: Markings,
}

/// An argument or an OUT column: its SQL name (`None` when unnamed) and type.
// Read by the test that compares declarations with the scripts.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: Option<&'static str>,
    pub ty: &'static str,
}

// Read by the test that compares declarations with the scripts.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub enum Returns {
    Type(&'static str),
    SetOf(&'static str),
    /// `SETOF record` with these OUT columns.
    Table(&'static [Param]),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Volatility {
    Immutable,
    Stable,
    Volatile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parallel {
    Safe,
    Unsafe,
}

/// The markings of a function; every one of them is STRICT.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub struct Markings {
    pub volatility: Volatility,
    pub parallel: Parallel,
    pub leakproof: bool,
    /// The planner's estimate of a set-returning function's rows.
    pub rows: Option<u32>,
    /// The planner support function (`SUPPORT`), of the extension's schema.
    pub support: Option<&'static str>,
    /// The function cannot fail (comparisons, hashes: called once per tuple by indexes and
    /// joins): it runs without the error boundary, and a panic aborts.
    pub nothrow: bool,
}

impl Markings {
    pub const fn new() -> Self {
        Markings {
            volatility: Volatility::Volatile,
            parallel: Parallel::Unsafe,
            leakproof: false,
            rows: None,
            support: None,
            nothrow: false,
        }
    }
    pub const fn immutable(self) -> Self {
        Markings {
            volatility: Volatility::Immutable,
            ..self
        }
    }
    pub const fn stable(self) -> Self {
        Markings {
            volatility: Volatility::Stable,
            ..self
        }
    }
    pub const fn volatile(self) -> Self {
        Markings {
            volatility: Volatility::Volatile,
            ..self
        }
    }
    pub const fn parallel_safe(self) -> Self {
        Markings {
            parallel: Parallel::Safe,
            ..self
        }
    }
    pub const fn parallel_unsafe(self) -> Self {
        Markings {
            parallel: Parallel::Unsafe,
            ..self
        }
    }
    pub const fn leakproof(self) -> Self {
        Markings {
            leakproof: true,
            ..self
        }
    }
    pub const fn rows(self, n: u32) -> Self {
        Markings {
            rows: Some(n),
            ..self
        }
    }
    pub const fn support(self, name: &'static str) -> Self {
        Markings {
            support: Some(name),
            ..self
        }
    }
    pub const fn nothrow(self) -> Self {
        Markings {
            nothrow: true,
            ..self
        }
    }
}

impl Default for Markings {
    fn default() -> Self {
        Markings::new()
    }
}

/// Runs the body of a declared function: checks that the call has (at least) `nargs`
/// arguments, none of them NULL (every declared function is STRICT), then runs `body` inside
/// the error boundary (or, for a `nothrow` function, with panics aborting). PostgreSQL calls a
/// type's input and receive functions with two arguments more than they declare (the type's
/// OID and typmod), which they may ignore.
///
/// # Safety
/// `fcinfo` is the live call of the function whose declaration is `nargs` and `nothrow`.
#[inline(always)]
pub unsafe fn run(
    fcinfo: FunctionCallInfo,
    nargs: usize,
    nothrow: bool,
    body: impl FnOnce(Call<'_>) -> Datum,
) -> Datum {
    // SAFETY: fields and arguments of the live call.
    let well_formed = unsafe {
        (*fcinfo).nargs as usize >= nargs
            && (0..nargs).all(|i| !(*(*fcinfo).args.as_ptr().add(i)).isnull)
    };
    if !well_formed {
        // SAFETY: the outermost frame of the call.
        return unsafe { errors::boundary(|| malformed(fcinfo, nargs)) };
    }
    // SAFETY: the call has the declared arguments, none NULL; this is its outermost frame.
    unsafe {
        let call = Call::new(fcinfo);
        if nothrow {
            errors::no_unwind(|| body(call))
        } else {
            errors::boundary(|| body(call))
        }
    }
}

#[cold]
fn malformed(fcinfo: FunctionCallInfo, nargs: usize) -> ! {
    // SAFETY: a field of the live call.
    let got = unsafe { (*fcinfo).nargs };
    error(
        Code::ERRCODE_INTERNAL_ERROR,
        format!(
            "a snowflake_id function was called with {got} argument(s) or a NULL one; it \
             takes {nargs}, none NULL"
        ),
    )
    .hint("The function's SQL declaration does not match the library: reinstall the extension.")
    .raise()
}

/// The SQL types of declarations: each marker says how an argument Datum reads as Rust and
/// how a Rust result becomes a Datum.
#[allow(non_camel_case_types)]
pub mod types {
    use std::ffi::{c_void, CStr};

    use pgrx::pg_sys::Datum;

    use crate::core::gdid::value::Gdid;
    use crate::core::idrange::IdRange;
    use crate::pg::fmgr::{self, Call};
    use crate::pg::gdid_datum as datum;

    pub trait SqlType {
        const SQL: &'static str;
    }

    pub trait Arg<'a>: SqlType {
        type Rust;
        /// # Safety
        /// `d` is a non-null argument of this type living for `'a`.
        unsafe fn read(d: Datum) -> Self::Rust;
    }

    pub trait Ret: SqlType {
        type Rust;
        /// The result's Datum (or, through `call`, the SQL NULL).
        fn datum(r: Self::Rust, call: Call<'_>) -> Datum;
    }

    macro_rules! sql_type {
        ($($marker:ident = $sql:literal),* $(,)?) => {$(
            pub struct $marker;
            impl SqlType for $marker {
                const SQL: &'static str = $sql;
            }
        )*};
    }

    sql_type! {
        bigint = "bigint", integer = "integer", boolean = "boolean", text = "text",
        text_datum = "text", bytea = "bytea", cstring = "cstring", internal = "internal",
        timestamptz = "timestamptz", interval = "interval", text_array = "text[]",
        void = "void", snowflake = "snowflake", gdid = "gdid", gdid_datum = "gdid",
        gdid_or_null = "gdid", regclass = "regclass", regnamespace = "regnamespace", xid = "xid",
        record = "record", trigger = "trigger", uuid = "uuid", int8range = "int8range",
    }

    impl Arg<'_> for regclass {
        type Rust = pgrx::pg_sys::Oid;
        unsafe fn read(d: Datum) -> pgrx::pg_sys::Oid {
            pgrx::pg_sys::Oid::from(d.value() as u32)
        }
    }
    impl Ret for regclass {
        type Rust = pgrx::pg_sys::Oid;
        fn datum(r: pgrx::pg_sys::Oid, _: Call<'_>) -> Datum {
            Datum::from(r)
        }
    }
    /// A schema, or NULL.
    impl Ret for regnamespace {
        type Rust = Option<pgrx::pg_sys::Oid>;
        fn datum(r: Option<pgrx::pg_sys::Oid>, call: Call<'_>) -> Datum {
            match r {
                Some(oid) => Datum::from(oid),
                None => call.null(),
            }
        }
    }
    /// A transaction ID (32 bits, as PostgreSQL's `xid`).
    impl Ret for xid {
        type Rust = u32;
        fn datum(r: u32, _: Call<'_>) -> Datum {
            Datum::from(r)
        }
    }
    impl Arg<'_> for bigint {
        type Rust = i64;
        unsafe fn read(d: Datum) -> i64 {
            d.value() as i64
        }
    }
    impl Ret for bigint {
        type Rust = i64;
        fn datum(r: i64, _: Call<'_>) -> Datum {
            Datum::from(r)
        }
    }
    impl Ret for snowflake {
        type Rust = i64;
        fn datum(r: i64, _: Call<'_>) -> Datum {
            Datum::from(r)
        }
    }
    impl Arg<'_> for integer {
        type Rust = i32;
        unsafe fn read(d: Datum) -> i32 {
            d.value() as i32
        }
    }
    impl Ret for integer {
        type Rust = i32;
        fn datum(r: i32, _: Call<'_>) -> Datum {
            Datum::from(r)
        }
    }
    impl Ret for boolean {
        type Rust = bool;
        fn datum(r: bool, _: Call<'_>) -> Datum {
            Datum::from(r)
        }
    }
    /// Its bytes, in the database's encoding, detoasted if needed.
    impl<'a> Arg<'a> for text {
        type Rust = &'a [u8];
        unsafe fn read(d: Datum) -> &'a [u8] {
            // SAFETY: per the contract, a non-null text living for 'a.
            unsafe { fmgr::varlena_bytes(d.cast_mut_ptr()) }
        }
    }
    impl Ret for text {
        type Rust = Vec<u8>;
        fn datum(r: Vec<u8>, _: Call<'_>) -> Datum {
            fmgr::varlena(&r)
        }
    }
    /// A text argument left unread: for the generators, which read their names only when the
    /// call site's cache does not already know them (see `callsite`).
    impl Arg<'_> for text_datum {
        type Rust = Datum;
        unsafe fn read(d: Datum) -> Datum {
            d
        }
    }
    impl<'a> Arg<'a> for bytea {
        type Rust = &'a [u8];
        unsafe fn read(d: Datum) -> &'a [u8] {
            // SAFETY: per the contract, a non-null bytea living for 'a.
            unsafe { fmgr::varlena_bytes(d.cast_mut_ptr()) }
        }
    }
    impl Ret for bytea {
        type Rust = Vec<u8>;
        fn datum(r: Vec<u8>, _: Call<'_>) -> Datum {
            fmgr::varlena(&r)
        }
    }
    impl<'a> Arg<'a> for cstring {
        type Rust = &'a CStr;
        unsafe fn read(d: Datum) -> &'a CStr {
            // SAFETY: per the contract, a NUL-terminated string living for 'a.
            unsafe { CStr::from_ptr(d.cast_mut_ptr()) }
        }
    }
    impl Ret for cstring {
        type Rust = Vec<u8>;
        fn datum(r: Vec<u8>, _: Call<'_>) -> Datum {
            fmgr::cstring(&r)
        }
    }
    impl Arg<'_> for internal {
        type Rust = *mut c_void;
        unsafe fn read(d: Datum) -> *mut c_void {
            d.cast_mut_ptr()
        }
    }
    /// A pointer for the planner (a support function's answer), or a null pointer.
    impl Ret for internal {
        type Rust = *mut c_void;
        fn datum(r: *mut c_void, _: Call<'_>) -> Datum {
            Datum::from(r)
        }
    }
    /// Its 16 bytes (a pointer to them, by reference, char alignment).
    impl Arg<'_> for uuid {
        type Rust = [u8; 16];
        unsafe fn read(d: Datum) -> [u8; 16] {
            // SAFETY: per the contract, a non-null uuid: 16 readable bytes.
            unsafe { d.cast_mut_ptr::<[u8; 16]>().read_unaligned() }
        }
    }
    impl Ret for uuid {
        type Rust = [u8; 16];
        fn datum(r: [u8; 16], _: Call<'_>) -> Datum {
            let p = fmgr::alloc(16).cast::<[u8; 16]>();
            // SAFETY: alloc returns 16 writable, MAXALIGNed bytes.
            unsafe { p.write(r) };
            Datum::from(p)
        }
    }
    /// Whether it is empty, and its ends.
    impl Arg<'_> for int8range {
        type Rust = IdRange;
        unsafe fn read(d: Datum) -> IdRange {
            // SAFETY: per the contract, a non-null int8range.
            unsafe { fmgr::int8range(d) }
        }
    }
    impl Ret for void {
        type Rust = ();
        fn datum((): (), _: Call<'_>) -> Datum {
            Datum::from(0)
        }
    }
    /// PostgreSQL's timestamp: microseconds since 2000-01-01 UTC.
    impl Arg<'_> for timestamptz {
        type Rust = i64;
        unsafe fn read(d: Datum) -> i64 {
            d.value() as i64
        }
    }
    impl Ret for timestamptz {
        type Rust = i64;
        fn datum(r: i64, _: Call<'_>) -> Datum {
            Datum::from(r)
        }
    }
    /// Milliseconds.
    impl Ret for interval {
        type Rust = i64;
        fn datum(ms: i64, _: Call<'_>) -> Datum {
            fmgr::interval_ms(ms)
        }
    }
    impl Ret for text_array {
        type Rust = Vec<String>;
        fn datum(r: Vec<String>, _: Call<'_>) -> Datum {
            fmgr::text_array(&r)
        }
    }
    impl Arg<'_> for gdid {
        type Rust = Gdid;
        unsafe fn read(d: Datum) -> Gdid {
            // SAFETY: per the contract, a non-null gdid.
            unsafe { datum::read(d) }
        }
    }
    impl Ret for gdid {
        type Rust = Gdid;
        fn datum(r: Gdid, _: Call<'_>) -> Datum {
            datum::palloc(r)
        }
    }
    /// A gdid, or the SQL NULL (an input function's soft error).
    impl Ret for gdid_or_null {
        type Rust = Option<Gdid>;
        fn datum(r: Option<Gdid>, call: Call<'_>) -> Datum {
            match r {
                Some(g) => datum::palloc(g),
                None => call.null(),
            }
        }
    }
    /// A gdid kept as its Datum (and read): for functions that return one of their arguments
    /// as it is, as `text_larger` does, without a copy.
    #[derive(Clone, Copy)]
    pub struct GdidDatum {
        pub datum: Datum,
        pub value: Gdid,
    }
    impl Arg<'_> for gdid_datum {
        type Rust = GdidDatum;
        unsafe fn read(d: Datum) -> GdidDatum {
            GdidDatum {
                datum: d,
                // SAFETY: per the contract, a non-null gdid.
                value: unsafe { datum::read(d) },
            }
        }
    }
    impl Ret for gdid_datum {
        type Rust = GdidDatum;
        fn datum(r: GdidDatum, _: Call<'_>) -> Datum {
            r.datum
        }
    }
    /// What a trigger function returns to the trigger manager (a tuple, or NULL), made by
    /// the body from the call's TriggerData.
    impl Ret for trigger {
        type Rust = Datum;
        fn datum(r: Datum, _: Call<'_>) -> Datum {
            r
        }
    }
    /// The result of a set-returning function, made by the body (see `fmgr`).
    impl Ret for record {
        type Rust = Datum;
        fn datum(r: Datum, _: Call<'_>) -> Datum {
            r
        }
    }
}

/// Declares SQL functions; see the module's documentation. Each item is
///
/// ```text
/// fn SYMBOL [as SQL_NAME] (ARG: TYPE, ...) -> RETURN [MARKINGS] |CALL| BODY
/// ```
///
/// where RETURN is a type, `setof TYPE` (the body returns the SRF's Datum) or
/// `table(COL: TYPE, ...)` (the item then reads `|CALL, EMIT| BODY` and the body calls
/// `EMIT((Some(x), None, ...))` once per row). An argument whose name starts with `_` is
/// unnamed in SQL. The invocation defines `FUNCTIONS`, the module's declarations.
macro_rules! sql_functions {
    ($(
        $(#[doc = $doc:literal])*
        fn $sym:ident $(as $sqlname:ident)? ( $($arg:ident : $aty:ident),* $(,)? )
        -> $($ret:ident)+ $(($($col:ident : $cty:ident),* $(,)?))?
        [ $($mark:ident $(($mv:expr))?)* ]
        | $call:pat_param $(, $emit:ident)? | $body:block
    )*) => {
        $(
            $crate::sql::sqlfn::sql_functions!(@one
                [$(#[doc = $doc])*] $sym [$($sqlname)?] ($($arg : $aty),*)
                [$($ret)+] [$($($col : $cty),*)?] [$($mark $(($mv))?)*] [$call] [$($emit)?] $body
            );
        )*
        /// The SQL functions this module declares.
        #[cfg_attr(not(test), allow(dead_code))]
        pub const FUNCTIONS: &[$crate::sql::sqlfn::SqlFunction] = &[$(
            $crate::sql::sqlfn::SqlFunction {
                name: $crate::sql::sqlfn::sql_functions!(@name $sym $($sqlname)?),
                symbol: stringify!($sym),
                args: &[$($crate::sql::sqlfn::Param {
                    name: $crate::sql::sqlfn::param_name(stringify!($arg)),
                    ty: <$crate::sql::sqlfn::types::$aty as $crate::sql::sqlfn::types::SqlType>::SQL,
                }),*],
                returns: $crate::sql::sqlfn::sql_functions!(@returns [$($ret)+] [$($($col : $cty),*)?]),
                markings: $crate::sql::sqlfn::Markings::new() $(.$mark($($mv)?))*,
            },
        )*];
    };

    (@name $sym:ident) => { stringify!($sym) };
    (@name $sym:ident $sqlname:ident) => { stringify!($sqlname) };

    (@returns [$rty:ident] []) => {
        $crate::sql::sqlfn::Returns::Type(<$crate::sql::sqlfn::types::$rty as $crate::sql::sqlfn::types::SqlType>::SQL)
    };
    (@returns [setof $rty:ident] []) => {
        $crate::sql::sqlfn::Returns::SetOf(<$crate::sql::sqlfn::types::$rty as $crate::sql::sqlfn::types::SqlType>::SQL)
    };
    (@returns [table] [$($col:ident : $cty:ident),*]) => {
        $crate::sql::sqlfn::Returns::Table(&[$($crate::sql::sqlfn::Param {
            name: Some(stringify!($col)),
            ty: <$crate::sql::sqlfn::types::$cty as $crate::sql::sqlfn::types::SqlType>::SQL,
        }),*])
    };

    // A scalar or `setof` function.
    (@one [$($doc:tt)*] $sym:ident [$($sqlname:ident)?] ($($arg:ident : $aty:ident),*)
        [$($ret:ident)+] [] [$($marks:tt)*] [$call:pat] [] $body:block) => {
        $($doc)*
        #[no_mangle]
        pub extern "C" fn $sym(fcinfo: pgrx::pg_sys::FunctionCallInfo) -> pgrx::pg_sys::Datum {
            #[inline(always)]
            #[allow(unused_variables)]
            fn body<'a>(
                $call: $crate::pg::fmgr::Call<'a>,
                $($arg: <$crate::sql::sqlfn::types::$aty as $crate::sql::sqlfn::types::Arg<'a>>::Rust),*
            ) -> <$crate::sql::sqlfn::sql_functions!(@rettype $($ret)+) as $crate::sql::sqlfn::types::Ret>::Rust
            $body
            const MARKINGS: $crate::sql::sqlfn::Markings = $crate::sql::sqlfn::sql_functions!(@markings $($marks)*);
            const NARGS: usize = <[&str]>::len(&[$(stringify!($arg)),*]);
            // SAFETY: fmgr calls this for the SQL function this declaration describes (a test
            // compares it with api.sql); `run` checks the arguments' count and nulls before
            // they are read as the declared types.
            unsafe {
                $crate::sql::sqlfn::run(fcinfo, NARGS, MARKINGS.nothrow, |call| {
                    #[allow(unused_mut, unused_variables, unused_assignments, clippy::unused_unit)]
                    let ($($arg,)*) = {
                        let mut n = 0usize;
                        ($({
                            let v = <$crate::sql::sqlfn::types::$aty as $crate::sql::sqlfn::types::Arg>::read(call.datum(n));
                            n += 1;
                            v
                        },)*)
                    };
                    <$crate::sql::sqlfn::sql_functions!(@rettype $($ret)+) as $crate::sql::sqlfn::types::Ret>::datum(
                        body(call, $($arg),*),
                        call,
                    )
                })
            }
        }
        const _: () = {
            #[export_name = concat!("pg_finfo_", stringify!($sym))]
            extern "C" fn finfo() -> &'static pgrx::pg_sys::Pg_finfo_record {
                static V1: pgrx::pg_sys::Pg_finfo_record = pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
                &V1
            }
        };
    };

    // A `table(...)` function: materialized, typed rows.
    (@one [$($doc:tt)*] $sym:ident [$($sqlname:ident)?] ($($arg:ident : $aty:ident),*)
        [table] [$($col:ident : $cty:ident),*] [$($marks:tt)*] [$call:pat] [$emit:ident] $body:block) => {
        $($doc)*
        #[no_mangle]
        pub extern "C" fn $sym(fcinfo: pgrx::pg_sys::FunctionCallInfo) -> pgrx::pg_sys::Datum {
            use $sym::Row;
            #[inline(always)]
            #[allow(unused_variables)]
            fn body<'a>(
                $call: $crate::pg::fmgr::Call<'a>,
                $emit: &mut dyn FnMut(Row),
                $($arg: <$crate::sql::sqlfn::types::$aty as $crate::sql::sqlfn::types::Arg<'a>>::Rust),*
            ) $body
            const MARKINGS: $crate::sql::sqlfn::Markings = $crate::sql::sqlfn::sql_functions!(@markings $($marks)*);
            const NARGS: usize = <[&str]>::len(&[$(stringify!($arg)),*]);
            // SAFETY: as for the scalar functions; the tuplestore's descriptor has the declared
            // columns (materialize checks their number).
            unsafe {
                $crate::sql::sqlfn::run(fcinfo, NARGS, MARKINGS.nothrow, |call| {
                    #[allow(unused_mut, unused_variables, unused_assignments, clippy::unused_unit)]
                    let ($($arg,)*) = {
                        let mut n = 0usize;
                        ($({
                            let v = <$crate::sql::sqlfn::types::$aty as $crate::sql::sqlfn::types::Arg>::read(call.datum(n));
                            n += 1;
                            v
                        },)*)
                    };
                    const COLUMNS: usize = <[&str]>::len(&[$(stringify!($col)),*]);
                    $crate::pg::fmgr::materialize(call, COLUMNS, |rows| {
                        body(call, &mut |row: Row| {
                            let ($($col,)*) = row;
                            let mut nulls = [$($col.is_none()),*];
                            let mut values = [$(
                                $col.map_or(pgrx::pg_sys::Datum::from(0), |v| <$crate::sql::sqlfn::types::$cty as $crate::sql::sqlfn::types::Ret>::datum(v, call))
                            ),*];
                            rows.push(&mut values, &mut nulls);
                        }, $($arg),*)
                    })
                })
            }
        }
        const _: () = {
            #[export_name = concat!("pg_finfo_", stringify!($sym))]
            extern "C" fn finfo() -> &'static pgrx::pg_sys::Pg_finfo_record {
                static V1: pgrx::pg_sys::Pg_finfo_record = pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
                &V1
            }
        };
        /// The rows of the function of the same name.
        #[allow(non_snake_case, dead_code)]
        pub mod $sym {
            /// A row: one `Option` per column, in the declared order; `None` is NULL.
            pub type Row = ($(Option<<$crate::sql::sqlfn::types::$cty as $crate::sql::sqlfn::types::Ret>::Rust>,)*);
        }
    };

    (@rettype $rty:ident) => { $crate::sql::sqlfn::types::$rty };
    (@rettype setof $rty:ident) => { $crate::sql::sqlfn::types::record };

    (@markings $($mark:ident $(($mv:expr))?)*) => {
        $crate::sql::sqlfn::Markings::new() $(.$mark($($mv)?))*
    };
}
pub(crate) use sql_functions;

/// An argument's SQL name: its Rust name, or none for one that starts with `_`.
pub const fn param_name(rust: &'static str) -> Option<&'static str> {
    match rust.as_bytes() {
        [b'_', ..] => None,
        _ => Some(rust),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A declaration or a `CREATE FUNCTION` statement, in one canonical text.
    fn canonical(
        name: &str,
        args: &[(Option<&str>, &str)],
        returns: &str,
        markings: &str,
        symbol: &str,
    ) -> String {
        let args: Vec<String> = args
            .iter()
            .map(|(n, t)| match n {
                Some(n) => format!("{n} {t}"),
                None => t.to_string(),
            })
            .collect();
        format!(
            "{name}({}) RETURNS {returns} {markings} AS '{symbol}'",
            args.join(", ")
        )
    }

    fn declared(f: &SqlFunction) -> String {
        let mut args: Vec<(Option<&str>, &str)> = f.args.iter().map(|p| (p.name, p.ty)).collect();
        let returns = match f.returns {
            Returns::Type(t) => t.to_string(),
            Returns::SetOf(t) => format!("SETOF {t}"),
            Returns::Table(cols) => {
                args.extend(cols.iter().map(|c| (c.name, c.ty)));
                "SETOF record".to_string()
            }
        };
        let out: Vec<String>;
        let args: Vec<(Option<&str>, &str)> = if let Returns::Table(cols) = f.returns {
            let n = f.args.len();
            out = cols
                .iter()
                .map(|c| format!("OUT {}", c.name.unwrap_or_default()))
                .collect();
            args.iter()
                .enumerate()
                .map(|(i, (name, ty))| {
                    if i >= n {
                        (Some(out[i - n].as_str()), *ty)
                    } else {
                        (*name, *ty)
                    }
                })
                .collect()
        } else {
            args
        };
        let m = f.markings;
        let mut markings = vec![
            match m.volatility {
                Volatility::Immutable => "IMMUTABLE",
                Volatility::Stable => "STABLE",
                Volatility::Volatile => "VOLATILE",
            }
            .to_string(),
            "STRICT".to_string(),
            match m.parallel {
                Parallel::Safe => "PARALLEL SAFE",
                Parallel::Unsafe => "PARALLEL UNSAFE",
            }
            .to_string(),
        ];
        if m.leakproof {
            markings.push("LEAKPROOF".into());
        }
        if let Some(r) = m.rows {
            markings.push(format!("ROWS {r}"));
        }
        if let Some(s) = m.support {
            markings.push(format!("SUPPORT @extschema@.{s}"));
        }
        canonical(f.name, &args, &returns, &markings.join(" "), f.symbol)
    }

    /// The `CREATE FUNCTION ... LANGUAGE c` statements of a script, canonical.
    fn created(sql: &str) -> Vec<String> {
        let mut found = Vec::new();
        for stmt in sql.split("CREATE FUNCTION ").skip(1) {
            let Some(lang) = stmt.find("LANGUAGE c AS 'MODULE_PATHNAME', '") else {
                continue;
            };
            let head = &stmt[..lang];
            if head.contains(';') {
                continue; // another statement ended before: not a C function
            }
            let rest = &stmt[lang + "LANGUAGE c AS 'MODULE_PATHNAME', '".len()..];
            let symbol = &rest[..rest.find('\'').unwrap()];
            let open = head.find('(').unwrap();
            let mut depth = 0;
            let mut close = open;
            for (i, c) in head.char_indices().skip(open) {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            close = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
            let name = head[..open].trim();
            let params = words(&head[open + 1..close]);
            let args: Vec<(Option<&str>, &str)> = if params.is_empty() {
                vec![]
            } else {
                params
                    .split(", ")
                    .map(|p| match p.rsplit_once(' ') {
                        Some((n, t)) => (Some(n), t),
                        None => (None, p),
                    })
                    .collect()
            };
            let tail = words(&head[close + 1..]);
            let tail = tail.strip_prefix("RETURNS ").unwrap();
            let (returns, markings) = match tail.strip_prefix("SETOF ") {
                Some(t) => {
                    let (ty, m) = t.split_once(' ').unwrap();
                    (format!("SETOF {ty}"), m.to_string())
                }
                None => {
                    let (ty, m) = tail.split_once(' ').unwrap();
                    (ty.to_string(), m.to_string())
                }
            };
            found.push(canonical(name, &args, &returns, &markings, symbol));
        }
        found
    }

    /// Every C function of snowflake.sql and gdid.sql is declared in Rust exactly as it is created, and every
    /// declaration is created: types, names, markings and symbol.
    #[test]
    fn declarations_match_api_sql() {
        let mut sql: Vec<String> = created(include_str!("snowflake.sql"));
        sql.extend(created(include_str!("gdid.sql")));
        sql.extend(created(include_str!("node.sql")));
        let mut rust: Vec<String> = crate::sql::SQL_FUNCTIONS
            .iter()
            .flat_map(|m| m.iter())
            .map(declared)
            .collect();
        sql.sort();
        rust.sort();
        let only_sql: Vec<_> = sql.iter().filter(|s| !rust.contains(s)).collect();
        let only_rust: Vec<_> = rust.iter().filter(|r| !sql.contains(r)).collect();
        assert!(
            only_sql.is_empty() && only_rust.is_empty(),
            "the scripts and the declarations differ\n  only in the scripts: {only_sql:#?}\n  only declared: {only_rust:#?}"
        );
        assert!(sql.len() > 40, "{} C functions found", sql.len());
    }

    #[test]
    fn unnamed_arguments_start_with_an_underscore() {
        assert_eq!(param_name("_a"), None);
        assert_eq!(param_name("seq"), Some("seq"));
    }
}
