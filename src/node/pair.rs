//! `ALTER SYSTEM` of `snowflake.node_bits` or `snowflake.node_id` writes one setting of a pair
//! that must agree (the node number has to fit the node bits): each value is valid on its
//! own, and the server would refuse to start with the two together. After such a statement
//! the configuration files are read back as the next start will read them, and a WARNING
//! names the other setting if the pair does not fit.

use std::ffi::{c_char, c_int, CStr};

use pgrx::pg_sys;

use crate::core::plain_decimal;
use crate::core::snowflake::layout::DEFAULT_NODE_BITS;
use crate::pg::errors::{self, error, Code};

/// After each utility statement (see `hooks`): warns when an `ALTER SYSTEM` left a node
/// number the node bits cannot hold.
pub fn after_statement(pstmt: *mut pg_sys::PlannedStmt) {
    // SAFETY: the statement ProcessUtility ran.
    if let Some(name) = unsafe { altered_setting(pstmt) } {
        if name == "snowflake.node_id" || name == "snowflake.node_bits" {
            warn_if_pair_cannot_start(&name);
        }
    }
}

/// The (lower-case) name of the setting an `ALTER SYSTEM` statement changed.
///
/// # Safety
/// `pstmt` is the statement ProcessUtility ran.
unsafe fn altered_setting(pstmt: *mut pg_sys::PlannedStmt) -> Option<String> {
    // SAFETY: a utility PlannedStmt's utilityStmt is a node; an AlterSystemStmt's setstmt is
    // a VariableSetStmt whose name is NULL or a NUL-terminated string.
    unsafe {
        let stmt = (*pstmt).utilityStmt;
        if stmt.is_null() || (*stmt).type_ != pg_sys::NodeTag::T_AlterSystemStmt {
            return None;
        }
        let set = (*stmt.cast::<pg_sys::AlterSystemStmt>()).setstmt;
        if set.is_null() || (*set).name.is_null() {
            return None;
        }
        Some(
            CStr::from_ptr((*set).name)
                .to_string_lossy()
                .to_ascii_lowercase(),
        )
    }
}

/// Reads the configuration files as the next start will, and warns if the node number they
/// set does not fit the node bits they set.
fn warn_if_pair_cannot_start(altered: &str) {
    let settings = file_settings(&["snowflake.node_bits", "snowflake.node_id"]);
    let bits = settings[0]
        .as_deref()
        .and_then(parse_int)
        .unwrap_or(DEFAULT_NODE_BITS as i32);
    let Some(node_text) = settings[1].as_deref() else {
        return;
    };
    let (Ok(node), Ok(bits)) = (
        plain_decimal::parse(node_text, u32::MAX),
        u32::try_from(bits),
    ) else {
        return; // refused by the settings' own checks already
    };
    let max = 1u64.checked_shl(bits).map_or(u64::MAX, |m| m - 1);
    if u64::from(node) <= max {
        return;
    }
    let other = if altered == "snowflake.node_id" {
        "snowflake.node_bits"
    } else {
        "snowflake.node_id"
    };
    error(
        Code::ERRCODE_WARNING,
        format!(
            "the server will not start with snowflake.node_id = {node} and snowflake.node_bits = {bits}"
        ),
    )
    .detail(format!(
        "With {bits} node bits, node numbers go from 0 to {max}; the configuration files now hold both values."
    ))
    .hint(format!(
        "Change {other} as well (ALTER SYSTEM SET {other} = ...) before the server restarts."
    ))
    .log(true);
}

/// The values `names` have in the configuration files (`postgresql.conf` with what it
/// includes, then `postgresql.auto.conf`): the last one of each, as PostgreSQL applies them.
fn file_settings<const N: usize>(names: &[&str; N]) -> [Option<String>; N] {
    let mut found: [Option<String>; N] = std::array::from_fn(|_| None);
    let mut head: *mut pg_sys::ConfigVariable = std::ptr::null_mut();
    let mut tail: *mut pg_sys::ConfigVariable = std::ptr::null_mut();
    // SAFETY: ParseConfigFile appends the files' settings to the list (reporting problems at
    // DEBUG1, never throwing for a file it cannot read when not strict); the names and values
    // are NUL-terminated strings; FreeConfigVariables frees the list. The backend runs in the
    // data directory, where the auto file is found by its relative name, as PostgreSQL finds
    // it.
    unsafe {
        errors::guarded(|| {
            ParseConfigFile(
                pg_sys::ConfigFileName,
                false,
                std::ptr::null(),
                0,
                0,
                pg_sys::DEBUG1 as c_int,
                &mut head,
                &mut tail,
            );
            ParseConfigFile(
                c"postgresql.auto.conf".as_ptr(),
                false,
                std::ptr::null(),
                0,
                0,
                pg_sys::DEBUG1 as c_int,
                &mut head,
                &mut tail,
            );
        });
        let mut item = head;
        while !item.is_null() {
            let name = CStr::from_ptr((*item).name).to_string_lossy();
            if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(&name)) {
                found[i] = Some(CStr::from_ptr((*item).value).to_string_lossy().into_owned());
            }
            item = (*item).next;
        }
        errors::guarded(|| FreeConfigVariables(head));
    }
    found
}

/// An integer setting's text, read as PostgreSQL reads it.
fn parse_int(text: &str) -> Option<i32> {
    let text = std::ffi::CString::new(text).ok()?;
    let mut n: c_int = 0;
    // SAFETY: parse_int reads the NUL-terminated text and writes the result.
    let ok = unsafe { pg_sys::parse_int(text.as_ptr(), &mut n, 0, std::ptr::null_mut()) };
    ok.then_some(n)
}

// Declared here so that errors::guarded is the only guard around them.
unsafe extern "C-unwind" {
    #[allow(clippy::too_many_arguments)]
    fn ParseConfigFile(
        config_file: *const c_char,
        strict: bool,
        calling_file: *const c_char,
        calling_lineno: c_int,
        depth: c_int,
        elevel: c_int,
        head_p: *mut *mut pg_sys::ConfigVariable,
        tail_p: *mut *mut pg_sys::ConfigVariable,
    ) -> bool;
    fn FreeConfigVariables(list: *mut pg_sys::ConfigVariable);
}
