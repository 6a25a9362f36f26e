//! The per-call-site cache of `snowflake_next`: which slot its sequence name resolved to.
//!
//! A call site (one FmgrInfo: a column DEFAULT, a query's target list) nearly always names
//! the same sequence, usually as a constant. Resolving the name costs a detoast, a hash and
//! a probe; this cache makes it a pointer read. Measured by benches/run.sh.

use pgrx::pg_sys;

use crate::registry::MAX_NAME_LEN;

#[repr(C)]
struct CallSiteCache {
    slot: usize,
    /// The argument is a constant in the expression: it cannot change between calls of this
    /// FmgrInfo, so the slot holds without looking at the argument again.
    arg_is_const: bool,
    len: usize,
    name: [u8; MAX_NAME_LEN],
}

/// The slot of the sequence named by text argument 0, from the call site's cache or from
/// `resolve` (which validates the name and raises the errors). Not for set-returning
/// functions, whose fn_extra belongs to the SRF protocol.
///
/// # Safety
/// `fcinfo` is the live call's, and argument 0 is a non-null `text` (the function is STRICT).
pub unsafe fn slot_of_name_arg(
    fcinfo: pg_sys::FunctionCallInfo,
    resolve: impl FnOnce(&[u8]) -> usize,
) -> usize {
    // SAFETY: per this function's contract, which is also cached_slot's and text_arg's.
    if let Some(slot) = unsafe { cached_slot(fcinfo) } {
        return slot;
    }
    let name = unsafe { text_arg(fcinfo, 0) };
    let flinfo = unsafe { (*fcinfo).flinfo };
    let slot = resolve(name);
    // resolve returned, so the name passed check_name: it fits MAX_NAME_LEN.
    let mut cached = CallSiteCache {
        slot,
        // SAFETY: flinfo is this call's.
        arg_is_const: unsafe { arg_is_const(flinfo, 0) },
        len: name.len(),
        name: [0; MAX_NAME_LEN],
    };
    cached.name[..name.len()].copy_from_slice(name);
    // SAFETY: fn_mcxt is the FmgrInfo's memory context, the documented home of fn_extra;
    // the allocation is sized and (by palloc's MAXALIGN) aligned for CallSiteCache.
    unsafe {
        let mut ptr = (*flinfo).fn_extra.cast::<CallSiteCache>();
        if ptr.is_null() {
            ptr = pg_sys::MemoryContextAlloc((*flinfo).fn_mcxt, size_of::<CallSiteCache>()).cast();
            (*flinfo).fn_extra = ptr.cast();
        }
        ptr.write(cached);
    }
    slot
}

/// The cached slot, if the call site has one for this call's name. Calls into nothing and
/// cannot fail, so the unguarded entry point may use it.
///
/// # Safety
/// As for [`slot_of_name_arg`].
pub unsafe fn cached_slot(fcinfo: pg_sys::FunctionCallInfo) -> Option<usize> {
    // SAFETY: fcinfo and its flinfo are valid for this call; fn_extra is NULL or the
    // CallSiteCache that slot_of_name_arg allocated in fn_mcxt, which lives exactly as long
    // as the FmgrInfo.
    let cache = unsafe {
        (*(*fcinfo).flinfo)
            .fn_extra
            .cast::<CallSiteCache>()
            .as_ref()?
    };
    if cache.arg_is_const {
        return Some(cache.slot);
    }
    // SAFETY: argument 0 is a non-null text datum (STRICT).
    let name = unsafe { plain_text_arg(fcinfo, 0)? };
    (cache.name.get(..cache.len)? == name).then_some(cache.slot)
}

/// Whether argument `n` is a Const node of the call's expression.
///
/// Not `get_fn_expr_arg_stable`: it also trusts external Params, which are stable within
/// one query execution, but PL/pgSQL evaluates a simple expression such as
/// `x := snowflake_next(name_var)` many times through one FmgrInfo with a different value
/// each time (regress test generate.sql shows the loop).
///
/// # Safety
/// `flinfo` is the live call's.
unsafe fn arg_is_const(flinfo: *mut pg_sys::FmgrInfo, n: usize) -> bool {
    // SAFETY: fn_expr is NULL or the call's expression node; a FuncExpr's args is a List of
    // expression nodes, each starting with its NodeTag.
    unsafe {
        let expr = (*flinfo).fn_expr;
        if expr.is_null() || (*expr).type_ != pg_sys::NodeTag::T_FuncExpr {
            return false;
        }
        let args = pgrx::PgList::<pg_sys::Node>::from_pg((*expr.cast::<pg_sys::FuncExpr>()).args);
        args.get_ptr(n)
            .is_some_and(|arg| (*arg).type_ == pg_sys::NodeTag::T_Const)
    }
}

/// The bytes of a text argument whose varlena is plain (not compressed, not out of line):
/// always so for a short constant or column value.
///
/// # Safety
/// Argument `n` of the live call is a non-null `text` datum.
unsafe fn plain_text_arg<'a>(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> Option<&'a [u8]> {
    // SAFETY: per the contract, args[n] exists and points to a varlena that lives at least
    // for this call; the header helpers are pure ports of PostgreSQL's macros.
    unsafe {
        let ptr = (*fcinfo).args.as_slice(n + 1)[n]
            .value
            .cast_mut_ptr::<pg_sys::varlena>();
        let plain = pgrx::varlena::varatt_is_4b_u(ptr)
            || (pgrx::varlena::varatt_is_1b(ptr) && !pgrx::varlena::varatt_is_1b_e(ptr));
        plain.then(|| bytes_of(ptr))
    }
}

/// # Safety
/// `ptr` is a plain (in-line, uncompressed) varlena.
unsafe fn bytes_of<'a>(ptr: *const pg_sys::varlena) -> &'a [u8] {
    // SAFETY: per the contract; the helpers are pure ports of PostgreSQL's macros.
    unsafe {
        std::slice::from_raw_parts(
            pgrx::varlena::vardata_any(ptr).cast::<u8>(),
            pgrx::varlena::varsize_any_exhdr(ptr),
        )
    }
}

/// The bytes of a text argument: in place when plain, detoasted when compressed or stored
/// out of line.
///
/// # Safety
/// Argument `n` of the live call is a non-null `text` datum.
unsafe fn text_arg<'a>(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> &'a [u8] {
    // SAFETY: per the contract; pg_detoast_datum_packed returns a plain varlena (a copy in
    // the current memory context when it had to decompress or fetch it).
    unsafe {
        plain_text_arg(fcinfo, n).unwrap_or_else(|| {
            let ptr = (*fcinfo).args.as_slice(n + 1)[n]
                .value
                .cast_mut_ptr::<pg_sys::varlena>();
            bytes_of(pg_sys::pg_detoast_datum_packed(ptr))
        })
    }
}
