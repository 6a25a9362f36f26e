//! Input errors a caller may ask to receive softly instead of as an ERROR: PostgreSQL 16 and
//! later pass an ErrorSaveContext to input functions for `pg_input_is_valid`,
//! `pg_input_error_info` and `COPY ... ON_ERROR`. PostgreSQL 15 has no such thing, and there
//! every input error is raised.

use pgrx::pg_sys;

use crate::errors::{error, Code};

/// An input error, before it is decided whether it is raised or saved.
pub struct InputError {
    pub code: Code,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<&'static str>,
}

impl InputError {
    /// Saves the error in the call's ErrorSaveContext if the caller passed one (the function
    /// must then return NULL), or raises it.
    pub fn report(self, fcinfo: pg_sys::FunctionCallInfo) {
        if !self.saved_softly(fcinfo) {
            self.raise()
        }
    }

    fn raise(self) -> ! {
        let mut e = error(self.code, self.message);
        if let Some(d) = self.detail {
            e = e.detail(d);
        }
        if let Some(h) = self.hint {
            e = e.hint(h);
        }
        e.raise()
    }

    #[cfg(feature = "pg15")]
    fn saved_softly(&self, _fcinfo: pg_sys::FunctionCallInfo) -> bool {
        false
    }

    #[cfg(not(feature = "pg15"))]
    fn saved_softly(&self, fcinfo: pg_sys::FunctionCallInfo) -> bool {
        use std::ffi::CString;
        // SAFETY: fcinfo is the current call's; its context, when it is an ErrorSaveContext
        // node, is ours to fill in as errsave_finish would: error_occurred, and when details
        // are wanted an ErrorData palloc'd in the current memory context (PostgreSQL copies
        // what it keeps). Strings are pstrdup'd copies.
        unsafe {
            let ctx = (*fcinfo).context;
            if ctx.is_null() || (*ctx).type_ != pg_sys::NodeTag::T_ErrorSaveContext {
                return false;
            }
            let ctx = ctx.cast::<pg_sys::ErrorSaveContext>();
            (*ctx).error_occurred = true;
            if (*ctx).details_wanted {
                let copy = |s: &str| {
                    let c = CString::new(s.replace('\0', "")).unwrap_or_default();
                    pg_sys::pstrdup(c.as_ptr())
                };
                let ed = pg_sys::palloc0(std::mem::size_of::<pg_sys::ErrorData>())
                    .cast::<pg_sys::ErrorData>();
                (*ed).elevel = pgrx::PgLogLevel::ERROR as i32;
                (*ed).sqlerrcode = self.code as i32;
                (*ed).message = copy(&self.message);
                (*ed).detail = self.detail.as_deref().map_or(std::ptr::null_mut(), copy);
                (*ed).hint = self.hint.map_or(std::ptr::null_mut(), copy);
                (*ed).assoc_context = pg_sys::CurrentMemoryContext;
                (*ctx).error_data = ed;
            }
            true
        }
    }
}
