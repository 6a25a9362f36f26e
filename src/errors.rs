//! Raising PostgreSQL errors: one SQLSTATE, a message, and where useful a detail and a hint.

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;

pub use pgrx::PgSqlErrorCode as Code;

/// An ERROR under construction; `raise` never returns.
#[must_use]
pub struct PgError(ErrorReport);

pub fn error(code: Code, message: impl Into<String>) -> PgError {
    PgError(ErrorReport::new(code, message.into(), "snowflake_id"))
}

impl PgError {
    pub fn detail(self, detail: impl Into<String>) -> Self {
        PgError(self.0.set_detail(detail))
    }

    pub fn hint(self, hint: impl Into<String>) -> Self {
        PgError(self.0.set_hint(hint))
    }

    pub fn raise(self) -> ! {
        self.0.report(PgLogLevel::ERROR);
        unreachable!("ERROR does not return")
    }

    /// For the postmaster at start-up, where an ERROR has nowhere to go.
    pub fn fatal(self) -> ! {
        self.0.report(PgLogLevel::FATAL);
        unreachable!("FATAL does not return")
    }
}

/// What every entry point says when the library was loaded on demand instead of at start-up.
pub fn not_preloaded() -> ! {
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        "snowflake_id must be loaded via shared_preload_libraries",
    )
    .hint(
        "Add snowflake_id to shared_preload_libraries in postgresql.conf (or ALTER SYSTEM SET \
         shared_preload_libraries = 'snowflake_id') and restart the server.",
    )
    .raise()
}
