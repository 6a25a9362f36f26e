//! Finding a named sequence in shared memory for the SQL functions of both generators: the
//! naming errors, the current database, the table-full error.

use pgrx::pg_sys;

use crate::errors::{error, Code};
use crate::registry::{check_name, Key, Kind, NameError, Recorded, Registry, MAX_NAME_LEN};

pub fn current_db() -> u32 {
    // SAFETY: MyDatabaseId is set for the life of a backend connected to a database.
    unsafe { pg_sys::MyDatabaseId }.to_u32()
}

/// Raises the ERROR for a bad name; `what` says which name ("snowflake sequence", "gdid
/// scope"). Names are bytes in the database's encoding.
pub fn check_name_or_raise(what: &str, name: &[u8]) {
    match check_name(name) {
        Ok(()) => {}
        Err(NameError::Empty) => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{what} name must not be empty"),
        )
        .raise(),
        Err(NameError::TooLong) => error(
            Code::ERRCODE_NAME_TOO_LONG,
            format!(
                "{what} name \"{}\" is too long",
                String::from_utf8_lossy(name)
            ),
        )
        .detail(format!("Names are at most {MAX_NAME_LEN} bytes."))
        .raise(),
        Err(NameError::Nul) => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{what} name must not contain a NUL byte"),
        )
        .raise(),
    }
}

/// The slot of sequence `name` of `kind` in the current database, claimed with `recorded`
/// if it is new. `shown` names it in the table-full ERROR, e.g. `snowflake sequence "orders"`.
pub fn find_or_create(
    registry: &Registry<'static>,
    kind: Kind,
    name: &[u8],
    recorded: Recorded,
    shown: &str,
) -> usize {
    let key = Key {
        db: current_db(),
        kind,
        name,
    };
    registry.find_or_insert(key, recorded).unwrap_or_else(|_| {
        error(
            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!(
                "cannot create {shown}: all {} slots are in use",
                registry.capacity()
            ),
        )
        .hint("Raise snowflake.max_sequences and restart the server.")
        .raise()
    })
}
