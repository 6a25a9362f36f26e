//! Who may do what with a sequence, by PostgreSQL's own privileges on its relation.
//!
//! - Generating takes `USAGE` or `UPDATE` on the sequence, as `nextval` does; or the right to
//!   insert into (or update) a table with a column whose DEFAULT generates from it (the whole
//!   table, or any of its columns, since an INSERT of the others fills the column from its
//!   DEFAULT): as with an identity column, a role that may insert rows needs no privilege on
//!   the sequence behind them.
//! - Making such a DEFAULT takes `USAGE` or `UPDATE` on the sequence (or owning it): the role
//!   that makes it vouches for the table's inserters. Without this rule anyone could reach any
//!   sequence through a default of a table of their own.
//! - Moving a sequence on (`gdid_advance`) takes `UPDATE`, as `setval` does.

use pgrx::pg_sys::{self, Oid};

use crate::pg::pgcompat;
use crate::sequences::depend;

fn class_aclcheck(relid: Oid, user: Oid, mode: u32) -> bool {
    // SAFETY: a catalog lookup; an error (the relation dropped meanwhile) is raised as usual.
    unsafe {
        pg_sys::pg_class_aclcheck(relid, user, mode as pg_sys::AclMode)
            == pg_sys::AclResult::ACLCHECK_OK
    }
}

/// Whether `user` may generate from sequence `relid`.
pub fn may_generate(relid: Oid, user: Oid) -> bool {
    let writes = pg_sys::ACL_INSERT | pg_sys::ACL_UPDATE;
    class_aclcheck(relid, user, pg_sys::ACL_USAGE | pg_sys::ACL_UPDATE)
        || depend::default_columns(relid).into_iter().any(|c| {
            // The table's privileges, or (pg_attribute_aclcheck_all sees only those) any of
            // its columns'.
            class_aclcheck(c.table, user, writes)
                // SAFETY: a catalog lookup; a table dropped meanwhile reads as no privilege.
                || unsafe {
                    pg_sys::pg_attribute_aclcheck_all(
                        c.table,
                        user,
                        writes as pg_sys::AclMode,
                        pg_sys::AclMaskHow::ACLMASK_ANY,
                    ) == pg_sys::AclResult::ACLCHECK_OK
                }
        })
}

/// Whether `user` may make a DEFAULT that generates from sequence `relid`.
pub fn may_use_in_default(relid: Oid, user: Oid) -> bool {
    class_aclcheck(relid, user, pg_sys::ACL_USAGE | pg_sys::ACL_UPDATE)
        || pgcompat::class_ownercheck(relid, user)
}

/// Whether `user` may move sequence `relid` on.
pub fn may_advance(relid: Oid, user: Oid) -> bool {
    class_aclcheck(relid, user, pg_sys::ACL_UPDATE)
}

/// Whether `user` may see a sequence's state (the monitoring views), as `pg_sequences`
/// shows `last_value`. A sequence dropped meanwhile reads as no privilege, never an ERROR: the
/// views read each sequence without waiting for its lock, and may miss a concurrent drop.
pub fn may_read(relid: Oid, user: Oid) -> bool {
    let mut missing = false;
    // SAFETY: a catalog lookup that reports a missing relation through `missing` instead of
    // raising.
    let result = unsafe {
        pg_sys::pg_class_aclcheck_ext(
            relid,
            user,
            (pg_sys::ACL_SELECT | pg_sys::ACL_USAGE) as pg_sys::AclMode,
            &mut missing,
        )
    };
    !missing && result == pg_sys::AclResult::ACLCHECK_OK
}
