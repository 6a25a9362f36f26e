//! Comparison and hashing, which btree searches, merge joins and hash joins call once per
//! tuple. None of them can fail: they read two 12-byte values and return a number, with no
//! allocation and no panic path, so they are declared `nothrow` (no error boundary; a panic
//! would abort). The sort support callbacks, whose pointer type PostgreSQL's headers declare
//! "C-unwind", abort on a panic through `errors::no_unwind` as well.

use std::ffi::c_int;

use pgrx::pg_sys::{self, Datum};

use crate::core::gdid::value::SIZE;
use crate::pg::errors::no_unwind;
use crate::pg::gdid_datum::read;
use crate::sql::sqlfn::sql_functions;

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

sql_functions! {
    fn gdid_eq(_a: gdid, _b: gdid) -> boolean [immutable parallel_safe leakproof nothrow] |_| {
        _a == _b
    }
    fn gdid_ne(_a: gdid, _b: gdid) -> boolean [immutable parallel_safe leakproof nothrow] |_| {
        _a != _b
    }
    fn gdid_lt(_a: gdid, _b: gdid) -> boolean [immutable parallel_safe leakproof nothrow] |_| {
        _a < _b
    }
    fn gdid_le(_a: gdid, _b: gdid) -> boolean [immutable parallel_safe leakproof nothrow] |_| {
        _a <= _b
    }
    fn gdid_gt(_a: gdid, _b: gdid) -> boolean [immutable parallel_safe leakproof nothrow] |_| {
        _a > _b
    }
    fn gdid_ge(_a: gdid, _b: gdid) -> boolean [immutable parallel_safe leakproof nothrow] |_| {
        _a >= _b
    }
    fn gdid_cmp(_a: gdid, _b: gdid) -> integer [immutable parallel_safe leakproof nothrow] |_| {
        _a.cmp(&_b) as i32
    }
    /// PostgreSQL's hash of the 12 bytes, as uuid_hash hashes its 16.
    fn gdid_hash(_g: gdid_datum) -> integer [immutable parallel_safe leakproof nothrow] |_| {
        // SAFETY: a gdid Datum points at SIZE bytes; hash_bytes only reads them.
        unsafe { hash_bytes(_g.datum.cast_mut_ptr::<u8>(), SIZE as c_int) as i32 }
    }
    fn gdid_hash_extended(_g: gdid_datum, _seed: bigint) -> bigint
        [immutable parallel_safe leakproof nothrow] |_| {
        // SAFETY: as gdid_hash.
        unsafe {
            hash_bytes_extended(_g.datum.cast_mut_ptr::<u8>(), SIZE as c_int, _seed as u64) as i64
        }
    }
    /// One of its arguments, as it is (as text_larger does); the caller copies it if it must
    /// outlive them.
    fn gdid_larger(_a: gdid_datum, _b: gdid_datum) -> gdid_datum
        [immutable parallel_safe nothrow] |_| {
        if _a.value >= _b.value { _a } else { _b }
    }
    fn gdid_smaller(_a: gdid_datum, _b: gdid_datum) -> gdid_datum
        [immutable parallel_safe nothrow] |_| {
        if _a.value <= _b.value { _a } else { _b }
    }
    /// Fills in the SortSupport PostgreSQL passes.
    fn gdid_sortsupport(_ssup: internal) -> void [immutable parallel_safe nothrow] |_| {
        // SAFETY: the SortSupportData PostgreSQL asks us to fill in.
        unsafe { sort_support(_ssup.cast()) }
    }
}

// -------------------------------------------------------------------------------------------
// Sort support

/// SAFETY (all three): the Datums are gdids, as the sort support contract guarantees.
// nothrow: compares two 12-byte values; called once per comparison of a sort.
unsafe extern "C-unwind" fn full_cmp(x: Datum, y: Datum, _: pg_sys::SortSupport) -> c_int {
    // SAFETY: see above.
    no_unwind(|| unsafe { read(x).cmp(&read(y)) as c_int })
}

// nothrow: reads 12 bytes into a word.
unsafe extern "C-unwind" fn abbreviate(original: Datum, _: pg_sys::SortSupport) -> Datum {
    // SAFETY: see above.
    no_unwind(|| Datum::from(unsafe { read(original) }.abbreviated()))
}

// nothrow: a constant.
unsafe extern "C-unwind" fn keep_abbreviating(_: c_int, _: pg_sys::SortSupport) -> bool {
    // The abbreviation is exact for every era below 255 and counter below 2^52, so unlike
    // uuid's (a prefix of random bytes) it never needs a cardinality estimate to justify it.
    false
}

/// # Safety
/// `ssup` is the SortSupportData PostgreSQL asks `gdid_sortsupport` to fill in.
unsafe fn sort_support(ssup: *mut pg_sys::SortSupportData) {
    // SAFETY: per the contract.
    unsafe {
        (*ssup).comparator = Some(full_cmp);
        if (*ssup).abbreviate {
            (*ssup).abbrev_converter = Some(abbreviate);
            (*ssup).abbrev_abort = Some(keep_abbreviating);
            (*ssup).abbrev_full_comparator = Some(full_cmp);
            // The comparator tuplesort recognises for its radix sort.
            (*ssup).comparator = Some(ssup_datum_unsigned_cmp);
        }
    }
}
