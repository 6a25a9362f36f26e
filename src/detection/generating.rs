//! Which columns of a table are *generating*: a value inserted there is new, made by this
//! extension's generator on the server that inserted it. Detection (see `arrivals`) counts the
//! node numbers of such values when logical replication brings them.
//!
//! A column is generating when its DEFAULT, or the DEFAULT of a partitioned ancestor's column
//! of the same name, or its domain's DEFAULT, calls `snowflake_next` or `gdid_next` (with
//! any arguments), and its type is what the generator makes. The catalog says so (`pg_depend`
//! from the default to the function); no expression is evaluated.

use std::ffi::CString;

use pgrx::pg_sys::{self, Oid};

use crate::pg::errors;
use crate::pg::spi::{Connection, EXTENSION_FUNCTIONS};

/// What a column holds, by its type (a domain counts as its base type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// `bigint`, `integer`, `numeric`: snowflake IDs (the `snowflake` domain is a bigint).
    Integers,
    /// The extension's `gdid`.
    Gdids,
}

/// The type a domain (over domains) is of; any other type itself.
fn base_type(ty: Oid) -> Oid {
    // SAFETY: getBaseType reads the type cache; an error (a type dropped meanwhile) is raised
    // through the guard.
    unsafe { errors::guarded(|| pg_sys::getBaseType(ty)) }
}

/// The DEFAULT expressions that call a function, with the column each is the DEFAULT of: a
/// column's own (pg_attrdef), or, for a column without one, its domain's (`CREATE DOMAIN ...
/// DEFAULT`, which a domain over it copies). As SQL for the queries below: rows of (tree,
/// rel, num, func).
pub const DEFAULTS_CALLING: &str = "
    SELECT d.adbin::pg_catalog.text AS tree, d.adrelid AS rel, d.adnum AS num, u.refobjid AS func
      FROM pg_catalog.pg_attrdef d
      JOIN pg_catalog.pg_depend u ON u.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
           AND u.objid = d.oid AND u.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
    UNION ALL
    SELECT t.typdefaultbin::pg_catalog.text, a.attrelid, a.attnum, u.refobjid
      FROM pg_catalog.pg_depend u
      JOIN pg_catalog.pg_type t ON u.classid = 'pg_catalog.pg_type'::pg_catalog.regclass
           AND u.objid = t.oid AND u.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND t.typdefaultbin IS NOT NULL
      JOIN pg_catalog.pg_attribute a ON a.atttypid = t.oid AND a.attnum > 0
           AND NOT a.attisdropped AND NOT a.atthasdef";

/// The columns of table `table` whose values are new where a row is inserted: those whose
/// DEFAULT, or the DEFAULT of a partitioned ancestor's column of the same name, calls one of
/// the extension's generators (with any arguments), and whose type is the generator's
/// (`bigint` or a domain over it for `snowflake_next`, `gdid` for `gdid_next`). By attribute
/// number, with what each holds. Also the table's partition ancestors, whose defaults count.
pub fn generating(conn: &mut Connection, table: Oid) -> (Vec<(i16, Holds)>, Vec<Oid>) {
    let t = table.to_u32();
    let query = CString::new(format!(
        "SELECT DISTINCT a.attnum::pg_catalog.int8, a.atttypid, p.prorettype,
                (CASE p.proname WHEN 'gdid_next' THEN 2 ELSE 1 END)::pg_catalog.int8
           FROM pg_catalog.pg_attribute a
           JOIN pg_catalog.pg_attribute da ON da.attname = a.attname AND NOT da.attisdropped
                AND da.attrelid IN (SELECT {t}::pg_catalog.oid UNION ALL
                                    SELECT relid FROM pg_catalog.pg_partition_ancestors({t}::pg_catalog.oid))
           JOIN ({DEFAULTS_CALLING}) d ON d.rel = da.attrelid AND d.num = da.attnum
           JOIN ({EXTENSION_FUNCTIONS}) p ON p.oid = d.func
                AND p.proname IN ('snowflake_next', 'gdid_next')
          WHERE a.attrelid = {t}::pg_catalog.oid AND a.attnum > 0 AND NOT a.attisdropped
          ORDER BY 1"
    ))
    .expect("no NUL in the query");
    let columns = {
        let rows = conn.select(&query, 0);
        (0..rows.len())
            .filter_map(|r| {
                let attnum = i16::try_from(rows.i64(r, 1)?).ok()?;
                let (ty, made) = (rows.oid(r, 2)?, rows.oid(r, 3)?);
                let holds = match rows.i64(r, 4)? {
                    2 => Holds::Gdids,
                    _ => Holds::Integers,
                };
                // Detection decodes the generator's own type: bigint for snowflake IDs.
                (base_type(ty) == base_type(made)).then_some((attnum, holds))
            })
            .collect()
    };
    let query = CString::new(format!(
        "SELECT relid::pg_catalog.oid FROM pg_catalog.pg_partition_ancestors({t}::pg_catalog.oid)
          WHERE relid <> {t}::pg_catalog.oid"
    ))
    .expect("no NUL in the query");
    let ancestors = {
        let rows = conn.select(&query, 0);
        (0..rows.len()).filter_map(|r| rows.oid(r, 1)).collect()
    };
    (columns, ancestors)
}
