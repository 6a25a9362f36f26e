//! The lease file from PostgreSQL's side: writing a record, and the errors of a file that
//! cannot be written (see `store` for the file itself).

use super::record::LeaseRecord;
use super::store::Store;
use crate::errors::{error, Code, PgError};

/// The record of slot `idx`, on disk (fsync), or an ERROR (58030).
pub fn write_record(idx: usize, record: &LeaseRecord) {
    let store = Store::in_data_dir();
    if let Err(e) = store.write(idx, record) {
        write_failed(&store, &e).raise();
    }
}

/// The error (58030) for a lease file that could not be written.
pub fn write_failed(store: &Store, e: &std::io::Error) -> PgError {
    error(
        Code::ERRCODE_IO_ERROR,
        format!(
            "could not write lease file \"{}\": {}",
            store.path().display(),
            os_error(e)
        ),
    )
}

/// An I/O error as PostgreSQL words one (`%m`): the system's message, without Rust's
/// " (os error N)".
pub fn os_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}
