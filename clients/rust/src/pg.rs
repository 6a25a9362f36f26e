//! postgres-types conversions (tokio-postgres, postgres): binary, as tokio-postgres sends and
//! reads every value.

use crate::{Gdid, Snowflake};
use bytes::{BufMut, BytesMut};
use postgres_types::{to_sql_checked, FromSql, IsNull, Kind, ToSql, Type};
use std::error::Error;

type BoxError = Box<dyn Error + Sync + Send>;

/// `int8`, the domain `snowflake` (over `int8`, in any schema) and domains over it: what a
/// result (always `int8`: PostgreSQL sends a domain's base type) or a parameter (the domain,
/// where the server infers it from a `snowflake` column) is typed as.
fn is_snowflake(ty: &Type) -> bool {
    if *ty == Type::INT8 {
        return true;
    }
    let mut t = ty;
    let mut named = false;
    while let Kind::Domain(base) = t.kind() {
        named |= t.name() == "snowflake";
        t = base;
    }
    named && *t == Type::INT8
}

/// The base type `gdid` (in any schema; its OID differs per database) and domains over it.
fn is_gdid(ty: &Type) -> bool {
    let mut t = ty;
    while let Kind::Domain(base) = t.kind() {
        t = base;
    }
    t.name() == "gdid" && matches!(t.kind(), Kind::Simple)
}

impl<'a> FromSql<'a> for Snowflake {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        <i64 as FromSql>::from_sql(&Type::INT8, raw).map(Snowflake)
    }

    fn accepts(ty: &Type) -> bool {
        is_snowflake(ty)
    }
}

impl ToSql for Snowflake {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        // The server checks the domain's constraint (a negative value is 23514).
        self.0.to_sql(&Type::INT8, out)
    }

    fn accepts(ty: &Type) -> bool {
        is_snowflake(ty)
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Gdid {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(Gdid::from_slice(raw)?)
    }

    fn accepts(ty: &Type) -> bool {
        is_gdid(ty)
    }
}

impl ToSql for Gdid {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        out.put_slice(&self.to_bytes());
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        is_gdid(ty)
    }

    to_sql_checked!();
}
