//! The per-call-site cache of the generators: which slot their sequence name resolved to.
//!
//! A call site (one FmgrInfo: a column DEFAULT, a query's target list) nearly always names
//! the same sequence, usually with constants. Resolving the names costs a hash and a probe of
//! the registry; this cache makes it a pointer read. Measured by benches/run.sh.

use pgrx::pg_sys;

use crate::fmgr::{self, Call};
use crate::identity::MAX_KEY_LEN;
use crate::registry::SlotRef;

#[repr(C)]
struct CallSiteCache {
    /// The slot and the generation of its occupant: a slot that holds another sequence since
    /// (after a drop) is not this call site's any more.
    slot: SlotRef,
    /// Every name argument is a constant in the expression: they cannot change between calls
    /// of this FmgrInfo, so the slot holds without looking at the arguments again.
    args_are_const: bool,
    /// The names, each preceded by its length.
    len: usize,
    names: [u8; MAX_KEY_LEN + 2],
}

/// Writes the names as `len name len name...` into `out`; false if they do not fit.
fn encode(names: &[&[u8]], out: &mut [u8; MAX_KEY_LEN + 2]) -> Option<usize> {
    let mut at = 0;
    for name in names {
        let end = at + 1 + name.len();
        *out.get_mut(at)? = u8::try_from(name.len()).ok()?;
        out.get_mut(at + 1..end)?.copy_from_slice(name);
        at = end;
    }
    Some(at)
}

/// The slot of the sequence named by the first `N` (text) arguments, from the call site's
/// cache (if `still_there` says it still holds the sequence) or from `resolve` (which
/// validates the names and raises the errors). A cached sequence dropped since is resolved
/// again: the name now leads to a new one. Not for set-returning functions, whose fn_extra
/// belongs to the SRF protocol.
pub fn slot_of<const N: usize>(
    call: Call<'_>,
    still_there: impl FnOnce(SlotRef) -> bool,
    resolve: impl FnOnce(&[&[u8]; N]) -> SlotRef,
) -> SlotRef {
    if let Some(slot) = cached_slot::<N>(call) {
        if still_there(slot) {
            return slot;
        }
    }
    let names: [&[u8]; N] = std::array::from_fn(|i| call.bytes(i));
    let slot = resolve(&names);
    let flinfo = call.flinfo();
    let mut cached = CallSiteCache {
        slot,
        // SAFETY: flinfo is this call's.
        args_are_const: (0..N).all(|i| unsafe { arg_is_const(flinfo, i) }),
        len: 0,
        names: [0; MAX_KEY_LEN + 2],
    };
    // resolve returned, so the names passed the checks and fit.
    let Some(len) = encode(&names, &mut cached.names) else {
        return slot;
    };
    cached.len = len;
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

/// The cached slot, if the call site has one for this call's names (its sequence may have
/// been dropped since: the generation tells). Calls into nothing and cannot fail.
#[inline]
pub fn cached_slot<const N: usize>(call: Call<'_>) -> Option<SlotRef> {
    // SAFETY: fn_extra is NULL or the CallSiteCache that slot_of allocated in fn_mcxt, which
    // lives exactly as long as the FmgrInfo.
    let cache = unsafe { (*call.flinfo()).fn_extra.cast::<CallSiteCache>().as_ref()? };
    if cache.args_are_const {
        return Some(cache.slot);
    }
    let mut at = 0;
    for i in 0..N {
        // SAFETY: argument i is a non-null text datum (STRICT) that lives for the call.
        let name = unsafe { fmgr::plain_varlena_bytes(call.datum(i).cast_mut_ptr())? };
        let len = usize::from(*cache.names.get(at)?);
        if len != name.len() || cache.names.get(at + 1..at + 1 + len)? != name {
            return None;
        }
        at += 1 + len;
    }
    (at == cache.len).then_some(cache.slot)
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
