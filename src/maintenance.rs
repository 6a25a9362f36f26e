//! The identity under which the extension reads a user's table: the table's owner, in a
//! security-restricted operation, as PostgreSQL itself runs the maintenance of a table
//! (VACUUM, ANALYZE, REINDEX, REFRESH MATERIALIZED VIEW run index expressions and the like
//! this way).
//!
//! Seeding reads the tables whose DEFAULT calls a generator, on behalf of whoever happens to
//! call the generator first, and evaluates those defaults' name arguments. Whatever code that
//! runs (an index expression, a function in a default, a planner support function) belongs to
//! the table's owner, so it runs with the owner's privileges and no more: never the caller's,
//! who may be a superuser, and never a superuser's. The restricted operation stops that code
//! from leaving anything behind in the session (`SET ROLE`, temporary objects, settings), and
//! the search path is `pg_catalog, pg_temp`, so names in the extension's queries cannot be
//! steered by objects the owner created.

use pgrx::pg_sys::{self, Oid};

/// The search path of every query the extension runs on its own: what PostgreSQL 17 sets
/// for maintenance operations (`RestrictSearchPath`).
const SAFE_SEARCH_PATH: &std::ffi::CStr = c"pg_catalog, pg_temp";

/// Runs `f` with the search path set to `pg_catalog, pg_temp` (and the user unchanged).
pub fn with_safe_search_path<R>(f: impl FnOnce() -> R) -> R {
    let _restore = Settings::push(&[(c"search_path", SAFE_SEARCH_PATH)]);
    f()
}

/// Runs `f` as `owner`, in a security-restricted operation, with the safe search path and
/// `row_security` off: a policy that hides rows from the owner (FORCE ROW LEVEL SECURITY)
/// makes a query fail instead of silently missing them.
pub fn as_owner<R>(owner: Oid, f: impl FnOnce() -> R) -> R {
    let _user = User::switch_to(owner);
    let _settings = Settings::push(&[
        (c"search_path", SAFE_SEARCH_PATH),
        (c"row_security", c"off"),
    ]);
    f()
}

/// The current user and security context, restored when dropped (also while an error
/// unwinds; the transaction's abort would restore them as well).
struct User {
    user: Oid,
    context: i32,
}

impl User {
    fn switch_to(owner: Oid) -> User {
        let mut user = Oid::INVALID;
        let mut context = 0;
        // SAFETY: plain reads and writes of the backend's current user, as
        // ExecRefreshMatView does around the maintenance it runs.
        unsafe {
            pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
            pg_sys::SetUserIdAndSecContext(
                owner,
                context | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
            );
        }
        User { user, context }
    }
}

impl Drop for User {
    fn drop(&mut self) {
        // SAFETY: restores what switch_to saved.
        unsafe { pg_sys::SetUserIdAndSecContext(self.user, self.context) }
    }
}

/// Settings changed in a GUC nest level of their own, reverted when dropped.
struct Settings {
    nest_level: i32,
}

impl Settings {
    fn push(settings: &[(&std::ffi::CStr, &std::ffi::CStr)]) -> Settings {
        // SAFETY: NewGUCNestLevel opens a level that AtEOXact_GUC (in Drop, or the
        // transaction's abort) closes; set_config_option with GUC_ACTION_SAVE sets a value
        // that lives until then. The values are valid for both settings.
        unsafe {
            let nest_level = pg_sys::NewGUCNestLevel();
            for (name, value) in settings {
                pg_sys::set_config_option(
                    name.as_ptr(),
                    value.as_ptr(),
                    pg_sys::GucContext::PGC_USERSET,
                    pg_sys::GucSource::PGC_S_SESSION,
                    pg_sys::GucAction::GUC_ACTION_SAVE,
                    true,
                    0,
                    false,
                );
            }
            Settings { nest_level }
        }
    }
}

impl Drop for Settings {
    fn drop(&mut self) {
        // SAFETY: closes the nest level `push` opened, reverting its settings.
        unsafe { pg_sys::AtEOXact_GUC(false, self.nest_level) }
    }
}
