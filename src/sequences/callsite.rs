//! The per-call-site cache of the generators: which sequence their names resolved to.
//!
//! A call site (one FmgrInfo: a column DEFAULT, a query's target list) nearly always names
//! the same sequence, usually with constants. Resolving the names costs catalog lookups, a
//! lock and a privilege check (see `resolve`); this cache makes it a few comparisons. It is
//! good for one transaction (the lock `resolve` takes lasts that long), for one current user
//! (privileges), and while no catalog invalidation arrived (a GRANT, an ALTER, a DROP).
//! Measured by benches/run.sh.

use pgrx::pg_sys::{self, Oid};

use crate::core::cache::SlotRef;
use crate::core::identity::MAX_NAME_LEN;
use crate::pg::fmgr::{self, Call};
use crate::sequences::resolve::{self, Resolved};

/// Most names a sequence has: a gdid scope and sequence.
const MAX_NAMES: usize = 2;

/// Longest run of names, each after its length byte.
const NAMES_LEN: usize = MAX_NAMES * (MAX_NAME_LEN + 1);

#[repr(C)]
struct CallSiteCache {
    resolved: Resolved,
    /// The invalidations (and ends of transactions: its lock lasts one) it had seen, and the
    /// user it was checked for.
    invalidations: u64,
    user: Oid,
    /// Every name argument is a constant in the expression: they cannot change between calls
    /// of this FmgrInfo, so the names need not be compared again.
    args_are_const: bool,
    /// The transaction has published its value in flight of the sequence (see
    /// `inflight_xact`), which lasts as long as the transaction, as the cache does.
    published: bool,
    /// The names, each preceded by its length.
    len: usize,
    names: [u8; NAMES_LEN],
}

/// Writes the names as `len name len name...` into `out`; false if they do not fit.
fn encode(names: &[&[u8]], out: &mut [u8; NAMES_LEN]) -> Option<usize> {
    let mut at = 0;
    for name in names {
        let end = at + 1 + name.len();
        *out.get_mut(at)? = u8::try_from(name.len()).ok()?;
        out.get_mut(at + 1..end)?.copy_from_slice(name);
        at = end;
    }
    Some(at)
}

/// The sequence named by the first `n` (text) arguments, from the call site's cache if it
/// still holds (and `still_there` says its slot still holds the sequence), else from
/// `resolve` (which checks the names and raises the errors). Not for set-returning
/// functions, whose fn_extra belongs to the SRF protocol.
pub fn resolved(
    call: Call<'_>,
    n: usize,
    still_there: impl FnOnce(SlotRef) -> bool,
    resolve: impl FnOnce(&[&[u8]]) -> Resolved,
) -> Resolved {
    if let Some(r) = cached(call, n) {
        if still_there(r.at) {
            return r;
        }
    }
    let mut names: [&[u8]; MAX_NAMES] = [&[]; MAX_NAMES];
    for (i, name) in names.iter_mut().enumerate().take(n) {
        *name = call.bytes(i);
    }
    let names = &names[..n];
    let resolved = resolve(names);
    let flinfo = call.flinfo();
    let mut cached = CallSiteCache {
        resolved,
        invalidations: resolve::invalidations(),
        // SAFETY: a plain read of the current user.
        user: unsafe { current_user() },
        // SAFETY: flinfo is this call's.
        args_are_const: (0..n).all(|i| unsafe { arg_is_const(flinfo, i) }),
        published: false,
        len: 0,
        names: [0; NAMES_LEN],
    };
    // resolve returned, so the names passed the checks and fit.
    let Some(len) = encode(names, &mut cached.names) else {
        return resolved;
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
    resolved
}

/// The cached slot, if the call site has resolved this call's names in this transaction, for
/// this user, with no catalog invalidation since (the slot's occupant may have been evicted:
/// its generation tells), and the transaction has published its value in flight of it (see
/// [`note_published`]). Calls into nothing and cannot fail.
#[inline(always)]
pub fn published_slot(call: Call<'_>, n: usize) -> Option<SlotRef> {
    let cache = this_call(call)?;
    if !cache.published {
        return None;
    }
    matched(cache, call, n).map(|r| r.at)
}

/// Notes, for the call site's cached resolution, that the transaction has published its
/// value in flight of slot `at`.
pub fn note_published(call: Call<'_>, at: SlotRef) {
    // SAFETY: as in `this_call`; the struct is this backend's own.
    let cache = unsafe { (*call.flinfo()).fn_extra.cast::<CallSiteCache>().as_mut() };
    if let Some(cache) = cache.filter(|c| c.resolved.at == at) {
        cache.published = true;
    }
}

/// The call site's cache, if it is fresh.
#[inline(always)]
fn this_call<'a>(call: Call<'a>) -> Option<&'a CallSiteCache> {
    // SAFETY: fn_extra is NULL or the CallSiteCache that `resolved` allocated in fn_mcxt,
    // which lives exactly as long as the FmgrInfo.
    let cache = unsafe { (*call.flinfo()).fn_extra.cast::<CallSiteCache>().as_ref()? };
    // SAFETY: a plain read of the current user.
    let fresh = cache.invalidations == resolve::invalidations_since_registered()
        && cache.user == unsafe { current_user() };
    fresh.then_some(cache)
}

#[inline(always)]
fn cached(call: Call<'_>, n: usize) -> Option<Resolved> {
    matched(this_call(call)?, call, n)
}

/// The cache's resolution, if this call's names are the ones it resolved.
#[inline(always)]
fn matched(cache: &CallSiteCache, call: Call<'_>, n: usize) -> Option<Resolved> {
    if cache.args_are_const {
        return Some(cache.resolved);
    }
    let mut at = 0;
    for i in 0..n {
        // SAFETY: argument i is a non-null text datum (STRICT) that lives for the call.
        let name = unsafe { fmgr::plain_varlena_bytes(call.datum(i).cast_mut_ptr())? };
        let len = usize::from(*cache.names.get(at)?);
        if len != name.len() || cache.names.get(at + 1..at + 1 + len)? != name {
            return None;
        }
        at += 1 + len;
    }
    (at == cache.len).then_some(cache.resolved)
}

/// The current user, read without pgrx's guard (GetUserId only reads a variable).
///
/// # Safety
/// In a backend.
#[inline(always)]
unsafe fn current_user() -> Oid {
    // SAFETY: the caller's contract.
    unsafe { GetUserId() }
}

unsafe extern "C" {
    fn GetUserId() -> Oid;
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
