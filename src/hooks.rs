//! Every hook the library installs into PostgreSQL, installed and chained here, and what each
//! one dispatches to:
//!
//! - `ProcessUtility`: before a top-level statement, what the previous one left is forgotten
//!   and a rename of a sequence a DEFAULT names is refused (`sequences::ddl`); after each
//!   statement, the defaults it stored are bound to their sequences (`sequences::ddl`), a
//!   subscription it made or refreshed loses the extension's sequences (`sequences::subscriptions`), the
//!   tables it changed get or lose the detection trigger (`detection::watch`), and an
//!   `ALTER SYSTEM` of a node number that the node bits cannot hold is warned about (`node`);
//! - the object access hook: which defaults, domains, tables and triggers a statement changes
//!   (`sequences::ddl`, `detection::watch`);
//! - shared memory (`shmem`), the WAL resource manager of releases 0.2.0 and 0.3.0
//!   (`legacy::wal`), and the background worker that claims `auto` numbers (`node::worker`).
//!
//! Every statement passes through the utility hook, so the statement itself runs inside
//! [`errors::guarded`]: its errors reach the user exactly as PostgreSQL raised them.

use std::ffi::{c_char, c_int, c_void};

use pgrx::pg_guard;
use pgrx::pg_sys::{self, Oid};

use crate::{detection, guc, legacy, node, pg::errors, pg::shmem, sequences};

static mut PREV_PROCESS_UTILITY_HOOK: pg_sys::ProcessUtility_hook_type = None;
static mut PREV_OBJECT_ACCESS_HOOK: pg_sys::object_access_hook_type = None;

/// Installs everything. Called from `_PG_init` while preloading.
pub fn install() {
    shmem::install_hooks(guc::max_sequences());
    legacy::wal::register_if_needed();
    node::worker::register();
    sequences::inflight_xact::install();
    sequences::name_floors_xact::install();
    // SAFETY: _PG_init runs once, single-threaded, in the postmaster; chaining the previous
    // hooks is how several libraries share them.
    unsafe {
        PREV_PROCESS_UTILITY_HOOK = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
        PREV_OBJECT_ACCESS_HOOK = pg_sys::object_access_hook;
        pg_sys::object_access_hook = Some(object_access);
    }
}

#[pg_guard]
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    // SAFETY: the outermost Rust frame of the hook. The statement runs as PostgreSQL would run
    // it, through the previous hook or the standard one, called with the same arguments
    // inside the guard (neither call is wrapped by pgrx, and the closure owns nothing).
    unsafe {
        errors::boundary(|| {
            let toplevel = context == pg_sys::ProcessUtilityContext::PROCESS_UTILITY_TOPLEVEL;
            if toplevel {
                detection::watch::before_statement();
            }
            let run = sequences::ddl::before_statement((*pstmt).utilityStmt, toplevel);
            if run == sequences::ddl::Run::Skip {
                return;
            }
            errors::guarded(|| match PREV_PROCESS_UTILITY_HOOK {
                Some(prev) => prev(
                    pstmt,
                    query_string,
                    read_only_tree,
                    context,
                    params,
                    query_env,
                    dest,
                    qc,
                ),
                None => standard_ProcessUtility(
                    pstmt,
                    query_string,
                    read_only_tree,
                    context,
                    params,
                    query_env,
                    dest,
                    qc,
                ),
            });
            sequences::ddl::after_statement();
            sequences::subscriptions::after_statement((*pstmt).utilityStmt);
            detection::watch::after_statement();
            node::after_statement(pstmt);
        })
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn object_access(
    access: pg_sys::ObjectAccessType::Type,
    class: Oid,
    object: Oid,
    sub: c_int,
    arg: *mut c_void,
) {
    // SAFETY: the previous hook is called with the arguments PostgreSQL gave, inside the
    // guard; the outermost Rust frame.
    unsafe {
        errors::boundary(|| {
            if let Some(prev) = PREV_OBJECT_ACCESS_HOOK {
                errors::guarded(|| prev(access, class, object, sub, arg));
            }
            sequences::ddl::on_access(access, class, object, sub);
            detection::watch::on_access(access, class, object, sub);
        })
    }
}

// Declared here so that errors::guarded is the only guard around it.
unsafe extern "C-unwind" {
    #[allow(clippy::too_many_arguments)]
    fn standard_ProcessUtility(
        pstmt: *mut pg_sys::PlannedStmt,
        query_string: *const c_char,
        read_only_tree: bool,
        context: pg_sys::ProcessUtilityContext::Type,
        params: pg_sys::ParamListInfo,
        query_env: *mut pg_sys::QueryEnvironment,
        dest: *mut pg_sys::DestReceiver,
        qc: *mut pg_sys::QueryCompletion,
    );
}
