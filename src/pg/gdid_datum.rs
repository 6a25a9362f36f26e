//! How a gdid travels as a PostgreSQL Datum: a pointer to 12 bytes (typlen 12, by
//! reference, int4 alignment), never toasted, never a varlena.

use pgrx::pg_sys::Datum;

use crate::core::gdid::value::{Gdid, SIZE};
use crate::pg::fmgr;

/// The gdid a Datum points at.
///
/// # Safety
/// `d` must be a non-null gdid Datum.
#[inline]
pub unsafe fn read(d: Datum) -> Gdid {
    // SAFETY: a gdid Datum points at 12 readable bytes (int4 alignment; read_unaligned
    // does not care).
    Gdid::from_bytes(unsafe { &d.cast_mut_ptr::<[u8; SIZE]>().read_unaligned() })
}

/// A new gdid Datum in the current memory context.
#[inline]
pub fn palloc(g: Gdid) -> Datum {
    let p = fmgr::alloc(SIZE).cast::<[u8; SIZE]>();
    // SAFETY: alloc returns SIZE writable, MAXALIGNed bytes.
    unsafe { p.write(g.to_bytes()) };
    Datum::from(p)
}
