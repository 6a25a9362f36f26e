//! Column defaults that name a sequence: `DEFAULT snowflake_next('orders')`, `DEFAULT
//! gdid_next('shop', 'orders')`, on a column or on a domain.
//!
//! When a statement stores such a DEFAULT, the sequence it names is made if it does not exist
//! yet (see `creator`) and the DEFAULT is recorded in `pg_depend` as depending on it, as
//! PostgreSQL records what `nextval('s'::regclass)` depends on: `DROP SEQUENCE` is refused
//! while the DEFAULT exists (or drops it with CASCADE), a dump restores the sequence before the
//! table, a role that may insert into the column may generate from the sequence (see
//! `privileges`), and the fallback of a fresh sequence knows which columns hold its values.
//! The role that stores the DEFAULT needs USAGE or UPDATE on the sequence (or to own it, as
//! when its use made it): it vouches for everyone who may insert.
//!
//! Only names written as constants count: the expression tree is walked, never evaluated, so
//! no function of anyone's runs here. A DEFAULT that computes a name
//! (`snowflake_next(app.tenant())`) gets no dependency; its sequence is made by its first use.

use std::ffi::CString;

use pgrx::pg_sys::{self, Oid};

use crate::core::snowflake::layout::Layout;
use crate::pg::errors::{error, Code};
use crate::pg::spi;
use crate::sequences::depend::{self, ATTR_DEFAULT_RELATION_ID};
use crate::sequences::naming::{domain_default, named_in};
use crate::sequences::{catalog, creator, privileges, resolve};

/// How a missing sequence is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Making {
    /// By a background worker, committed at once (see `creator`), unless the schema is new in
    /// this transaction; the current role's right to the sequence is checked.
    ForTheCurrentRole,
    /// In the current transaction, no privilege checked: the update from 0.3.0, which binds
    /// the defaults that existed.
    ByTheUpdate,
}

/// Binds the DEFAULT of column `attnum` of table `table`, if it names sequences.
pub fn bind_column(table: Oid, attnum: i16, layout: &Layout, making: Making) {
    let Some((attrdef, tree)) = column_default(table, attnum) else {
        return;
    };
    let depender = pg_sys::ObjectAddress {
        classId: ATTR_DEFAULT_RELATION_ID,
        objectId: attrdef,
        objectSubId: 0,
    };
    bind(depender, &tree, layout, making);
}

/// Binds the DEFAULT of domain `domain`, if it names sequences.
pub fn bind_domain(domain: Oid, layout: &Layout, making: Making) {
    let Some(tree) = domain_default(domain) else {
        return;
    };
    let depender = pg_sys::ObjectAddress {
        classId: pg_sys::TypeRelationId,
        objectId: domain,
        objectSubId: 0,
    };
    bind(depender, &tree, layout, making);
}

fn bind(depender: pg_sys::ObjectAddress, tree: &[u8], layout: &Layout, making: Making) {
    for named in named_in(tree) {
        let name = named.name();
        let relname = name
            .relation_name()
            .unwrap_or_else(|bad| resolve::bad_name(bad));
        let schema = catalog::schema(named.kind);
        let relid = match catalog::find(schema.oid, &relname) {
            Some(relid) => relid,
            None => {
                match making {
                    Making::ByTheUpdate => catalog::create_in_this_transaction(
                        named.kind,
                        schema.name,
                        &relname,
                        layout,
                    ),
                    Making::ForTheCurrentRole => creator::make(name, &relname, schema, layout),
                }
                match catalog::find(schema.oid, &relname) {
                    Some(relid) => relid,
                    None => error(
                        Code::ERRCODE_INTERNAL_ERROR,
                        format!("{} was made but cannot be found", name.described()),
                    )
                    .raise(),
                }
            }
        };
        // SAFETY: a lock held to the end of the transaction, as recording a dependency on
        // any object requires (the sequence cannot be dropped meanwhile).
        unsafe { pg_sys::LockRelationOid(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE) };
        if making == Making::ForTheCurrentRole {
            // SAFETY: a plain read of the current user.
            let user = unsafe { pg_sys::GetUserId() };
            if !privileges::may_use_in_default(relid, user) {
                error(
                    Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
                    format!(
                        "permission denied for sequence {}",
                        catalog::described(named.kind, relid)
                    ),
                )
                .detail(format!(
                    "A DEFAULT that generates from {} lets every role that may insert into \
                     the column generate from it: making one takes USAGE or UPDATE on the \
                     sequence.",
                    name.described()
                ))
                .raise();
            }
        }
        depend::record(depender, relid);
    }
}

/// The OID and expression tree of the DEFAULT of a column, if it has one.
fn column_default(table: Oid, attnum: i16) -> Option<(Oid, Vec<u8>)> {
    let query = CString::new(format!(
        "SELECT oid, adbin::pg_catalog.text FROM pg_catalog.pg_attrdef
          WHERE adrelid = {}::pg_catalog.oid AND adnum = {attnum}::pg_catalog.int2",
        table.to_u32()
    ))
    .expect("no NUL in the query");
    spi::connect(|conn| {
        let rows = conn.select(&query, 1);
        Some((rows.oid(0, 1)?, rows.text(0, 2)?))
    })
}

/// The defaults of the current database that name sequences, for the update from 0.3.0:
/// every column DEFAULT and domain DEFAULT that calls a generator.
pub fn all_defaults() -> (Vec<(Oid, i16)>, Vec<Oid>) {
    let columns = c"SELECT DISTINCT d.adrelid, d.adnum::pg_catalog.int8
                      FROM pg_catalog.pg_attrdef d
                      JOIN pg_catalog.pg_depend u
                        ON u.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
                       AND u.objid = d.oid
                       AND u.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                      JOIN pg_catalog.pg_proc p ON p.oid = u.refobjid
                       AND p.proname IN ('snowflake_next', 'gdid_next')";
    let domains = c"SELECT DISTINCT t.oid
                      FROM pg_catalog.pg_type t
                      JOIN pg_catalog.pg_depend u
                        ON u.classid = 'pg_catalog.pg_type'::pg_catalog.regclass
                       AND u.objid = t.oid
                       AND u.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                      JOIN pg_catalog.pg_proc p ON p.oid = u.refobjid
                       AND p.proname IN ('snowflake_next', 'gdid_next')
                     WHERE t.typtype = 'd'";
    spi::connect(|conn| {
        let c = {
            let rows = conn.select(columns, 0);
            (0..rows.len())
                .filter_map(|r| Some((rows.oid(r, 1)?, i16::try_from(rows.i64(r, 2)?).ok()?)))
                .collect()
        };
        let d = {
            let rows = conn.select(domains, 0);
            (0..rows.len()).filter_map(|r| rows.oid(r, 1)).collect()
        };
        (c, d)
    })
}

/// Whether sequence relation `relid` is named by a DEFAULT (directly or through a domain):
/// such a sequence must keep its name.
pub fn named_by_a_default(relid: Oid) -> bool {
    let (defaults, domains) = depend::naming_dependents(relid);
    !defaults.is_empty() || !domains.is_empty()
}
