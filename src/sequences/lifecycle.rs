//! Dropping a sequence by its name: PostgreSQL's own `DROP SEQUENCE`, as the caller, so that
//! ownership, dependencies (a DEFAULT that uses it: 2BP01) and transactions work as they do
//! for any sequence.

use std::ffi::CString;

use crate::core::identity::SequenceName;
use crate::pg::spi;
use crate::sequences::{catalog, resolve};

/// Drops sequence `name` of the current database (RESTRICT); false if there is none.
pub fn drop_sequence(name: SequenceName<'_>) -> bool {
    let relname = name
        .relation_name()
        .unwrap_or_else(|bad| resolve::bad_name(bad));
    let kind = name.kind();
    let schema = catalog::schema(kind);
    if catalog::find(schema.oid, &relname).is_none() {
        return false;
    }
    let mut statement = b"DROP SEQUENCE ".to_vec();
    statement.extend_from_slice(&catalog::qualified_name(schema.name.as_bytes(), &relname));
    let statement = CString::new(statement).expect("quoted identifiers hold no NUL");
    spi::connect(|conn| conn.execute(&statement));
    true
}
