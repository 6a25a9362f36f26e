//! Comparison and hashing: plain V1 functions, because btree searches, merge joins and hash
//! joins call them once per tuple. None of them can fail: they read two 12-byte values and
//! return a number, with no allocation and no panic path. They are `extern "C"` (the sort
//! support callbacks, whose pointer type PostgreSQL's headers declare "C-unwind", abort on a
//! panic through `errors::no_unwind`), so a panic could never unwind into PostgreSQL.

use std::cmp::Ordering;
use std::ffi::c_int;

use pgrx::pg_sys::{self, Datum, FunctionCallInfo};

use super::datum::read;
use super::value::SIZE;
use crate::errors::no_unwind;
use crate::fmgr::finfo;

unsafe extern "C" {
    // PostgreSQL's hash functions (src/common/hashfn.c), as uuid_hash uses them.
    fn hash_bytes(k: *const u8, keylen: c_int) -> u32;
    fn hash_bytes_extended(k: *const u8, keylen: c_int, seed: u64) -> u64;
}

unsafe extern "C-unwind" {
    // Declared here rather than taken from pg_sys, whose binding is a Rust wrapper: tuplesort
    // compares the comparator's address with this very symbol to pick its radix sort. (An
    // import: the "C-unwind" of the comparator field's type, which pgrx gives every
    // PostgreSQL function pointer.)
    fn ssup_datum_unsigned_cmp(x: Datum, y: Datum, ssup: pg_sys::SortSupport) -> c_int;
}

finfo!(
    pg_finfo_gdid_eq,
    pg_finfo_gdid_ne,
    pg_finfo_gdid_lt,
    pg_finfo_gdid_le,
    pg_finfo_gdid_gt,
    pg_finfo_gdid_ge,
    pg_finfo_gdid_cmp,
    pg_finfo_gdid_hash,
    pg_finfo_gdid_hash_extended,
    pg_finfo_gdid_larger,
    pg_finfo_gdid_smaller,
    pg_finfo_gdid_sortsupport,
);

/// Argument `n` of a call. SAFETY: `fcinfo` is a valid call with more than `n` arguments.
pub unsafe fn arg(fcinfo: FunctionCallInfo, n: usize) -> Datum {
    // SAFETY: see above.
    unsafe { (*(*fcinfo).args.as_ptr().add(n)).value }
}

/// SAFETY: `fcinfo` is a call of a STRICT function whose first two arguments are gdids.
unsafe fn order(fcinfo: FunctionCallInfo) -> Ordering {
    // SAFETY: see above.
    unsafe { read(arg(fcinfo, 0)).cmp(&read(arg(fcinfo, 1))) }
}

macro_rules! comparison {
    ($name:ident, $test:expr) => {
        /// # Safety
        /// Called by fmgr for the SQL function of the same name: STRICT, (gdid, gdid).
        #[no_mangle]
        pub unsafe extern "C" fn $name(fcinfo: FunctionCallInfo) -> Datum {
            // SAFETY: see the function's contract.
            let o = unsafe { order(fcinfo) };
            Datum::from($test(o))
        }
    };
}

comparison!(gdid_eq, Ordering::is_eq);
comparison!(gdid_ne, Ordering::is_ne);
comparison!(gdid_lt, Ordering::is_lt);
comparison!(gdid_le, Ordering::is_le);
comparison!(gdid_gt, Ordering::is_gt);
comparison!(gdid_ge, Ordering::is_ge);
comparison!(gdid_cmp, |o: Ordering| o as i32);

/// # Safety
/// Called by fmgr: STRICT, (gdid, gdid) -> gdid. Returns one of its arguments, as
/// text_larger does; the caller copies it if it must outlive them.
#[no_mangle]
pub unsafe extern "C" fn gdid_larger(fcinfo: FunctionCallInfo) -> Datum {
    // SAFETY: see the function's contract.
    unsafe { arg(fcinfo, if order(fcinfo).is_ge() { 0 } else { 1 }) }
}

/// # Safety
/// As gdid_larger.
#[no_mangle]
pub unsafe extern "C" fn gdid_smaller(fcinfo: FunctionCallInfo) -> Datum {
    // SAFETY: see the function's contract.
    unsafe { arg(fcinfo, if order(fcinfo).is_le() { 0 } else { 1 }) }
}

/// # Safety
/// Called by fmgr: STRICT, (gdid) -> integer.
#[no_mangle]
pub unsafe extern "C" fn gdid_hash(fcinfo: FunctionCallInfo) -> Datum {
    // SAFETY: a gdid Datum points at SIZE bytes; hash_bytes only reads them.
    let h = unsafe { hash_bytes(arg(fcinfo, 0).cast_mut_ptr::<u8>(), SIZE as c_int) };
    Datum::from(h as i32)
}

/// # Safety
/// Called by fmgr: STRICT, (gdid, bigint) -> bigint.
#[no_mangle]
pub unsafe extern "C" fn gdid_hash_extended(fcinfo: FunctionCallInfo) -> Datum {
    // SAFETY: as gdid_hash; the seed is a by-value int8.
    let h = unsafe {
        let seed = arg(fcinfo, 1).value() as u64;
        hash_bytes_extended(arg(fcinfo, 0).cast_mut_ptr::<u8>(), SIZE as c_int, seed)
    };
    Datum::from(h as i64)
}

// -------------------------------------------------------------------------------------------
// Sort support

/// SAFETY (all three): the Datums are gdids, as the sort support contract guarantees.
unsafe extern "C-unwind" fn full_cmp(x: Datum, y: Datum, _: pg_sys::SortSupport) -> c_int {
    // SAFETY: see above.
    no_unwind(|| unsafe { read(x).cmp(&read(y)) as c_int })
}

unsafe extern "C-unwind" fn abbreviate(original: Datum, _: pg_sys::SortSupport) -> Datum {
    // SAFETY: see above.
    no_unwind(|| Datum::from(unsafe { read(original) }.abbreviated()))
}

unsafe extern "C-unwind" fn keep_abbreviating(_: c_int, _: pg_sys::SortSupport) -> bool {
    // The abbreviation is exact for every era below 255 and counter below 2^52, so unlike
    // uuid's (a prefix of random bytes) it never needs a cardinality estimate to justify it.
    false
}

/// # Safety
/// Called by fmgr: (internal) -> void, with a SortSupport to fill in.
#[no_mangle]
pub unsafe extern "C" fn gdid_sortsupport(fcinfo: FunctionCallInfo) -> Datum {
    // SAFETY: the argument is the SortSupportData PostgreSQL asks us to fill in.
    unsafe {
        let ssup = arg(fcinfo, 0).cast_mut_ptr::<pg_sys::SortSupportData>();
        (*ssup).comparator = Some(full_cmp);
        if (*ssup).abbreviate {
            (*ssup).abbrev_converter = Some(abbreviate);
            (*ssup).abbrev_abort = Some(keep_abbreviating);
            (*ssup).abbrev_full_comparator = Some(full_cmp);
            // The comparator tuplesort recognises for its radix sort.
            (*ssup).comparator = Some(ssup_datum_unsigned_cmp);
        }
    }
    Datum::from(0)
}
