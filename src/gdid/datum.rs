//! How a gdid travels as a PostgreSQL Datum: a pointer to 12 bytes (typlen 12, by
//! reference, int4 alignment), never toasted, never a varlena.

use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::{FromDatum, IntoDatum};

use super::value::{Gdid, SIZE};

/// A gdid at the SQL boundary of a `#[pg_extern]` function.
#[derive(Debug, Clone, Copy)]
pub struct PgGdid(pub Gdid);

/// The gdid a Datum points at.
///
/// # Safety
/// `d` must be a non-null gdid Datum.
pub unsafe fn read(d: pg_sys::Datum) -> Gdid {
    // SAFETY: a gdid Datum points at 12 readable bytes (int4 alignment; read_unaligned
    // does not care).
    Gdid::from_bytes(unsafe { &d.cast_mut_ptr::<[u8; SIZE]>().read_unaligned() })
}

/// A new gdid Datum in the current memory context.
pub fn palloc(g: Gdid) -> pg_sys::Datum {
    // SAFETY: palloc returns SIZE writable bytes (or raises an ERROR), max-aligned.
    unsafe {
        let p = pg_sys::palloc(SIZE).cast::<[u8; SIZE]>();
        p.write(g.to_bytes());
        pg_sys::Datum::from(p)
    }
}

impl IntoDatum for PgGdid {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        Some(palloc(self.0))
    }

    fn type_oid() -> pg_sys::Oid {
        // Only needed for arrays and SPI, which this extension does not build from Rust.
        pg_sys::InvalidOid
    }
}

impl FromDatum for PgGdid {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _typoid: pg_sys::Oid,
    ) -> Option<Self> {
        // SAFETY: the caller passes a gdid Datum; null is checked first.
        (!is_null).then(|| PgGdid(unsafe { read(datum) }))
    }
}

// SAFETY: unboxes with FromDatum above; the functions are STRICT, so the argument is never
// null, and a null would be caught by the unwrap rather than read.
unsafe impl<'fcx> ArgAbi<'fcx> for PgGdid {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        // SAFETY: see the impl.
        unsafe { arg.unbox_arg_using_from_datum() }.expect("gdid functions are STRICT")
    }
}

// SAFETY: the Datum returned is a fresh palloc'd gdid, as the function's SQL type says.
unsafe impl BoxRet for PgGdid {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        // SAFETY: see the impl.
        unsafe { fcinfo.return_raw_datum(palloc(self.0)) }
    }
}

// SAFETY: the SQL type is gdid, whose I/O this module implements.
unsafe impl SqlTranslatable for PgGdid {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(PgGdid);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("gdid"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("gdid")));
}
