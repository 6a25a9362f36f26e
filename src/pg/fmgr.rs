//! PostgreSQL's version-1 calling convention, for every SQL function of the extension.
//!
//! Each C symbol is a plain V1 function made by `sqlfn::sql_functions!`; [`Call`] is its view
//! of the call (arguments, the call site's cache, the NULL result), and the helpers here build
//! results, rows and sets.
//!
//! pgrx's `#[pg_extern]` wrapper is not used: besides re-encoding every error message as
//! UTF-8, it costs more per call than the hot functions themselves (docs/performance.md).

use std::ffi::{c_char, c_int, c_void};
use std::marker::PhantomData;

use pgrx::pg_sys::{self, Datum, FunctionCallInfo};

use crate::core::idrange::{End, IdRange};
use crate::pg::errors;

/// One call of a V1 function: its arguments, typed as the SQL declaration types them.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    fcinfo: FunctionCallInfo,
    _call: PhantomData<&'a ()>,
}

impl<'a> Call<'a> {
    /// # Safety
    /// `fcinfo` is a live call, and the caller reads each argument only as the type the
    /// function's SQL declaration gives it, and only non-null ones (the functions are STRICT).
    pub unsafe fn new(fcinfo: FunctionCallInfo) -> Call<'a> {
        Call {
            fcinfo,
            _call: PhantomData,
        }
    }

    /// The call site: the FmgrInfo, whose `fn_extra` a function may use as its cache.
    pub fn flinfo(self) -> *mut pg_sys::FmgrInfo {
        // SAFETY: a field of the live call.
        unsafe { (*self.fcinfo).flinfo }
    }

    pub fn datum(self, n: usize) -> Datum {
        // SAFETY: `new`'s contract: the call has this argument.
        unsafe { (*(*self.fcinfo).args.as_ptr().add(n)).value }
    }

    /// A `text` or `bytea` argument's bytes (text: in the database's encoding), detoasted if
    /// it was compressed or stored out of line.
    pub fn bytes(self, n: usize) -> &'a [u8] {
        // SAFETY: `new`'s contract: argument n is a non-null varlena living for the call.
        unsafe { varlena_bytes(self.datum(n).cast_mut_ptr()) }
    }

    /// The node PostgreSQL 16+ passes to input functions whose errors it wants softly.
    pub fn context(self) -> *mut pg_sys::Node {
        // SAFETY: a field of the live call.
        unsafe { (*self.fcinfo).context }
    }

    /// The SQL NULL result.
    pub fn null(self) -> Datum {
        // SAFETY: a field of the live call, set as fmgr expects for a NULL result.
        unsafe { (*self.fcinfo).isnull = true };
        Datum::from(0)
    }
}

/// The bytes of a varlena, detoasted if needed.
///
/// # Safety
/// `ptr` is a varlena that lives as long as `'a`.
pub unsafe fn varlena_bytes<'a>(ptr: *mut pg_sys::varlena) -> &'a [u8] {
    // SAFETY: per the contract; pg_detoast_datum_packed returns a plain copy (in the current
    // memory context) of a compressed or out-of-line value.
    unsafe {
        plain_varlena_bytes(ptr).unwrap_or_else(|| {
            plain_varlena_bytes(pg_sys::pg_detoast_datum_packed(ptr)).unwrap_or_default()
        })
    }
}

/// The bytes of a plain varlena (in line, uncompressed: always so for a short constant or
/// column value), read in place without a call into PostgreSQL; `None` for any other.
///
/// # Safety
/// `ptr` is a varlena that lives as long as `'a`.
#[inline]
pub unsafe fn plain_varlena_bytes<'a>(ptr: *const pg_sys::varlena) -> Option<&'a [u8]> {
    use pgrx::varlena::{
        varatt_is_1b, varatt_is_1b_e, varatt_is_4b_u, vardata_any, varsize_any_exhdr,
    };
    // SAFETY: per the contract; the pgrx helpers are ports of PostgreSQL's header macros.
    unsafe {
        let plain = varatt_is_4b_u(ptr) || (varatt_is_1b(ptr) && !varatt_is_1b_e(ptr));
        plain.then(|| {
            std::slice::from_raw_parts(vardata_any(ptr).cast::<u8>(), varsize_any_exhdr(ptr))
        })
    }
}

unsafe extern "C" {
    // PostgreSQL's allocator, called directly: pgrx's binding would set up a sigsetjmp on
    // every call, which costs more than a generated ID. With MCXT_ALLOC_NO_OOM it returns
    // NULL instead of throwing, so it never jumps over Rust frames.
    fn palloc_extended(size: usize, flags: c_int) -> *mut c_void;
}

/// `size` bytes in the current memory context, MAXALIGNed. Inlined: gdid_next's result
/// comes from here.
#[inline(always)]
pub fn alloc(size: usize) -> *mut u8 {
    // SAFETY: palloc_extended with NO_OOM returns NULL or a block of `size` bytes in
    // CurrentMemoryContext; sizes here are small and valid.
    let p = unsafe { palloc_extended(size, pg_sys::MCXT_ALLOC_NO_OOM as c_int) };
    if p.is_null() {
        out_of_memory(size);
    }
    p.cast()
}

#[cold]
fn out_of_memory(size: usize) -> ! {
    errors::error(errors::Code::ERRCODE_OUT_OF_MEMORY, "out of memory")
        .detail(format!("Failed on request of size {size}."))
        .raise()
}

/// A `text` result (or `bytea`: the same varlena) in the current memory context.
pub fn varlena(bytes: &[u8]) -> Datum {
    let p = alloc(pg_sys::VARHDRSZ + bytes.len());
    // SAFETY: p has VARHDRSZ + len bytes; set_varsize_4b writes the 4-byte header as
    // SET_VARSIZE does.
    unsafe {
        pgrx::varlena::set_varsize_4b(p.cast(), (pg_sys::VARHDRSZ + bytes.len()) as i32);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(pg_sys::VARHDRSZ), bytes.len());
    }
    Datum::from(p)
}

/// A `cstring` result in the current memory context.
pub fn cstring(bytes: &[u8]) -> Datum {
    let p = alloc(bytes.len() + 1);
    // SAFETY: p has len + 1 writable bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        *p.add(bytes.len()) = 0;
    }
    Datum::from(p)
}

/// A `text[]` result (UTF-8 texts: names this extension composed).
pub fn text_array(items: &[String]) -> Datum {
    let datums: Vec<Datum> = items.iter().map(|s| varlena(s.as_bytes())).collect();
    // SAFETY: construct_array copies the datums into a new array of text (varlena, int4
    // aligned, not by value) in the current memory context.
    unsafe {
        Datum::from(pg_sys::construct_array(
            datums.as_ptr().cast_mut(),
            datums.len() as i32,
            pg_sys::TEXTOID,
            -1,
            false,
            pg_sys::TYPALIGN_INT as c_char,
        ))
    }
}

/// An `interval` result of a number of milliseconds.
pub fn interval_ms(ms: i64) -> Datum {
    let p = alloc(size_of::<pg_sys::Interval>()).cast::<pg_sys::Interval>();
    // SAFETY: p is an Interval-sized, MAXALIGNed block.
    unsafe {
        p.write(pg_sys::Interval {
            time: ms * 1000,
            day: 0,
            month: 0,
        })
    };
    Datum::from(p)
}

/// An `int8range` argument: whether it is empty, and its ends.
///
/// # Safety
/// `d` is a non-null range; one of another type than int8range is refused (42804), since its
/// bounds are not bigints.
pub unsafe fn int8range(d: Datum) -> IdRange {
    // SAFETY: per the contract, a range Datum; detoasting and reading it through its type's
    // cache is DatumGetRangeTypeP + range_deserialize, which raise (through pgrx's guard)
    // only for a broken datum.
    unsafe {
        let r = pg_sys::pg_detoast_datum(d.cast_mut_ptr()).cast::<pg_sys::RangeType>();
        if (*r).rangetypid != pg_sys::INT8RANGEOID {
            errors::error(
                errors::Code::ERRCODE_DATATYPE_MISMATCH,
                "a snowflake_id function was passed a range that is not an int8range",
            )
            .raise();
        }
        let cache =
            pg_sys::lookup_type_cache((*r).rangetypid, pg_sys::TYPECACHE_RANGE_INFO as c_int);
        let (mut lower, mut upper) = (pg_sys::RangeBound::default(), pg_sys::RangeBound::default());
        let mut empty = false;
        pg_sys::range_deserialize(cache, r, &mut lower, &mut upper, &mut empty);
        let end = |b: pg_sys::RangeBound| match (b.infinite, b.inclusive) {
            (true, _) => End::Unbounded,
            (false, true) => End::Inclusive(b.val.value() as i64),
            (false, false) => End::Exclusive(b.val.value() as i64),
        };
        IdRange {
            empty,
            lower: end(lower),
            upper: end(upper),
        }
    }
}

/// A value-per-call set-returning function: `start` runs on the first call and returns the
/// state, plain data kept in the call's multi-call memory; `next` yields one row per call
/// until it returns `None`.
pub fn rows_per_call<S: Copy + 'static>(
    call: Call<'_>,
    start: impl FnOnce() -> S,
    next: impl FnOnce(&mut S) -> Option<Datum>,
) -> Datum {
    const { assert!(align_of::<S>() <= 8) };
    let fcinfo = call.fcinfo;
    // SAFETY: the SRF protocol of funcapi.h: init_MultiFuncCall on the first call (it checks
    // that the caller accepts a set), the state in its multi-call memory (MAXALIGNed, S is
    // plain data, so an early shutdown that frees it leaks nothing), per_MultiFuncCall on every
    // call, end_MultiFuncCall and ExprEndResult when done.
    unsafe {
        if (*(*fcinfo).flinfo).fn_extra.is_null() {
            let state = start();
            let funcctx = pg_sys::init_MultiFuncCall(fcinfo);
            let p = pg_sys::MemoryContextAlloc((*funcctx).multi_call_memory_ctx, size_of::<S>())
                .cast::<S>();
            p.write(state);
            (*funcctx).user_fctx = p.cast();
        }
        let funcctx = pg_sys::per_MultiFuncCall(fcinfo);
        let rsinfo = (*fcinfo).resultinfo.cast::<pg_sys::ReturnSetInfo>();
        match next(&mut *(*funcctx).user_fctx.cast::<S>()) {
            Some(d) => {
                (*rsinfo).isDone = pg_sys::ExprDoneCond::ExprMultipleResult;
                d
            }
            None => {
                pg_sys::end_MultiFuncCall(fcinfo, funcctx);
                (*rsinfo).isDone = pg_sys::ExprDoneCond::ExprEndResult;
                call.null()
            }
        }
    }
}

/// The rows of a set-returning function that materializes its result (the views).
pub struct Rows {
    store: *mut pg_sys::Tuplestorestate,
    desc: pg_sys::TupleDesc,
    columns: usize,
}

impl Rows {
    /// One row: a value (ignored when null) and a null flag per column of the result type.
    pub fn push(&mut self, values: &mut [Datum], nulls: &mut [bool]) {
        assert!(
            values.len() == self.columns && nulls.len() == self.columns,
            "a row of {} values and {} nulls for {} columns",
            values.len(),
            nulls.len(),
            self.columns
        );
        // SAFETY: the tuplestore and descriptor InitMaterializedSRF made for this call, whose
        // column count `materialize` checked; the arrays have one entry per column.
        unsafe {
            pg_sys::tuplestore_putvalues(
                self.store,
                self.desc,
                values.as_mut_ptr(),
                nulls.as_mut_ptr(),
            )
        }
    }
}

/// A set-returning function of `columns` columns that hands its whole result over at once.
pub fn materialize(call: Call<'_>, columns: usize, fill: impl FnOnce(&mut Rows)) -> Datum {
    // SAFETY: InitMaterializedSRF checks the calling context and sets up the call's
    // tuplestore and result descriptor in its ReturnSetInfo.
    let mut rows = unsafe {
        pg_sys::InitMaterializedSRF(call.fcinfo, 0);
        let rsinfo = (*call.fcinfo).resultinfo.cast::<pg_sys::ReturnSetInfo>();
        Rows {
            store: (*rsinfo).setResult,
            desc: (*rsinfo).setDesc,
            columns,
        }
    };
    // SAFETY: the descriptor InitMaterializedSRF made, from the function's OUT parameters.
    let natts = unsafe { (*rows.desc).natts } as usize;
    if natts != columns {
        crate::pg::errors::error(
            crate::pg::errors::Code::ERRCODE_INTERNAL_ERROR,
            format!(
                "a snowflake_id function returns {columns} columns, its SQL declaration {natts}"
            ),
        )
        .hint("The function's SQL declaration does not match the library: reinstall the extension.")
        .raise();
    }
    fill(&mut rows);
    Datum::from(0)
}
