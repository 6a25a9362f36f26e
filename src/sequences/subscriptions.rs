//! Logical replication of sequences (PostgreSQL 19: `CREATE PUBLICATION ... FOR ALL SEQUENCES`,
//! the sequence synchronization worker) and the extension's sequences.
//!
//! A subscriber's sequence of this extension holds the subscriber's own lease: the point below
//! which its node (or authority) has handed values out. The synchronization worker writes the
//! publisher's value over it, lower or higher, at `CREATE SUBSCRIPTION` and at every `ALTER
//! SUBSCRIPTION ... REFRESH SEQUENCES`; a lower one is a lease below values the subscriber
//! handed out, which it hands out again after a restart (and a snowflake sequence loses its
//! protection against the clock set back). The publisher's lease is of no use to the
//! subscriber either way: values of two servers never meet by their numbers. So the
//! extension's sequences are taken out of a subscription in the statement that put them in
//! (`CREATE SUBSCRIPTION`, `ALTER SUBSCRIPTION ... REFRESH PUBLICATION`), before it commits
//! and before any worker can read them, with a NOTICE; `REFRESH SEQUENCES` only resynchronizes
//! what a subscription holds. Every other sequence is synchronized as PostgreSQL does it.

use std::ffi::{CStr, CString};

use pgrx::pg_sys::{self, Oid};

use crate::core::identity::Kind;
use crate::pg::errors::{error, Code};
use crate::pg::spi;
use crate::sequences::catalog;

/// After a utility statement: if it made or refreshed a subscription of this database, takes
/// the extension's sequences out of it; if it moved a sequence into one of the extension's
/// schemas (`ALTER SEQUENCE ... SET SCHEMA`, which makes it one of the extension's), takes it
/// out of every subscription of this database that holds it: a synchronization worker would
/// otherwise write another server's value over the lease it now holds.
///
/// # Safety
/// `stmt` is the parse node of the statement that just ran.
pub unsafe fn after_statement(stmt: *mut pg_sys::Node) {
    // SAFETY: each cast follows the node's tag.
    let name = unsafe {
        match (*stmt).type_ {
            pg_sys::NodeTag::T_CreateSubscriptionStmt => {
                (*stmt.cast::<pg_sys::CreateSubscriptionStmt>()).subname
            }
            pg_sys::NodeTag::T_AlterSubscriptionStmt => {
                (*stmt.cast::<pg_sys::AlterSubscriptionStmt>()).subname
            }
            pg_sys::NodeTag::T_AlterObjectSchemaStmt => {
                let kind = (*stmt.cast::<pg_sys::AlterObjectSchemaStmt>()).objectType;
                if kind == pg_sys::ObjectType::OBJECT_SEQUENCE
                    || kind == pg_sys::ObjectType::OBJECT_TABLE
                {
                    std::ptr::null_mut()
                } else {
                    return;
                }
            }
            _ => return,
        }
    };
    // SAFETY: a plain read of process state: nothing is in a transaction outside one.
    if unsafe { !pg_sys::IsTransactionState() } {
        return;
    }
    let subid = if name.is_null() {
        None // every subscription of the database
    } else {
        // SAFETY: a catalog lookup by name; InvalidOid when there is none (a DROP).
        match unsafe { pg_sys::get_subscription_oid(name, true) } {
            oid if oid == pg_sys::InvalidOid => return,
            oid => Some(oid),
        }
    };
    let schemas: Vec<Oid> = [Kind::Snowflake, Kind::Gdid]
        .into_iter()
        .filter_map(catalog::existing_schema)
        .map(|s| s.oid)
        .collect();
    if schemas.is_empty() {
        return;
    }
    let query = CString::new(format!(
        "SELECT r.srsubid, r.srrelid FROM pg_catalog.pg_subscription_rel r \
           JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.srrelid \
          WHERE {} \
            c.relnamespace OPERATOR(pg_catalog.=) ANY ('{{{}}}'::pg_catalog.oid[])",
        subid.map_or(String::new(), |o| format!(
            "r.srsubid OPERATOR(pg_catalog.=) {} AND",
            o.to_u32()
        )),
        schemas
            .iter()
            .map(|o| o.to_u32().to_string())
            .collect::<Vec<_>>()
            .join(",")
    ))
    .expect("no NUL in numbers");
    let ours: Vec<(Oid, Oid)> = spi::connect(|conn| {
        let rows = conn.select(&query, 0);
        (0..rows.len())
            .filter_map(|i| Some((rows.oid(i, 1)?, rows.oid(i, 2)?)))
            .collect()
    });
    if ours.is_empty() {
        return;
    }
    for &(sub, relid) in &ours {
        // SAFETY: removes one row of pg_subscription_rel, as ALTER SUBSCRIPTION does for a
        // relation gone from the publication; the subscription and relation exist.
        unsafe { pg_sys::RemoveSubscriptionRel(sub, relid) };
    }
    // SAFETY: makes the removals visible to the rest of the transaction.
    unsafe { pg_sys::CommandCounterIncrement() };
    let from = if name.is_null() {
        "the subscriptions of this database".to_string()
    } else {
        // SAFETY: `name` is the statement's NUL-terminated subscription name.
        let subname = unsafe { CStr::from_ptr(name) };
        format!("subscription \"{}\"", subname.to_string_lossy())
    };
    error(
        Code::ERRCODE_SUCCESSFUL_COMPLETION,
        format!(
            "snowflake_id keeps its {} sequence(s) out of {from}",
            ours.len()
        ),
    )
    .detail(
        "Each server's sequence of the extension holds that server's own lease; another \
         server's value written over it could be lower than values it handed out.",
    )
    .notice();
}
