//! Raising PostgreSQL errors: one SQLSTATE, a message, and where useful a detail and a hint.
//!
//! Every entry point PostgreSQL calls (SQL functions, hooks, WAL callbacks, `_PG_init`) runs
//! its body inside [`boundary`], which never lets a panic unwind into PostgreSQL (SQL
//! functions are `extern "C"` as well; hooks, whose pointer types pgrx declares "C-unwind",
//! carry `#[pg_guard]` too). An error is raised as a Rust panic carrying a [`PgError`],
//! which unwinds the Rust frames (running their destructors) up to the boundary; only there,
//! with nothing left to drop, is it handed to PostgreSQL's `ereport`, which does not return.
//!
//! Messages reach PostgreSQL in the database's encoding: names and input quoted with
//! [`crate::core::dbtext::DbText`] keep their bytes. pgrx's own reporting re-encodes every message
//! as UTF-8 (with replacement characters), which garbles them in LATIN1 or EUC_JP databases,
//! so errors of this extension do not go through it. Errors that PostgreSQL raises inside a
//! pgrx call (a cancel request, out of memory) reach the boundary as pgrx's panics and are
//! raised again from their fields, without the Rust backtrace pgrx would attach.
//!
//! Input functions report softly where the caller asks (PostgreSQL 16+: `pg_input_is_valid`,
//! `COPY ... ON_ERROR`), through PostgreSQL's own `errsave` machinery: [`PgError::save`].
//!
//! Calls into PostgreSQL that may raise errors about the user's objects (the queries of
//! seeding, which quote table and column names) run inside [`guarded`]: an error PostgreSQL
//! raises there is kept whole, as PostgreSQL made it ([`Caught`]: every text in the database
//! encoding, its CONTEXT lines, its position), and thrown again unchanged at the boundary.
//! pgrx's own guard would turn its texts into lossy UTF-8.

use std::ffi::{c_char, c_int, CString};
use std::mem::MaybeUninit;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use pgrx::pg_sys;
use pgrx::PgLogLevel;

use crate::core::dbtext::{self, DbText};

pub use pgrx::PgSqlErrorCode as Code;

/// An error under construction; `raise` never returns.
#[must_use]
#[derive(Debug)]
pub struct PgError {
    level: Level,
    code: Code,
    message: String,
    detail: Option<String>,
    /// A detail for the server log only (the client gets `detail`, or none).
    detail_log: Option<String>,
    hint: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Error,
    Fatal,
}

pub fn error(code: Code, message: impl Into<String>) -> PgError {
    PgError {
        level: Level::Error,
        code,
        message: message.into(),
        detail: None,
        detail_log: None,
        hint: None,
    }
}

impl PgError {
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// A detail written to the server log in place of [`PgError::detail`], never sent to the
    /// client (PostgreSQL's `errdetail_log`).
    pub fn detail_log(mut self, detail: impl Into<String>) -> Self {
        self.detail_log = Some(detail.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Raises it as an ERROR: unwinds to the entry point's [`boundary`]. (`resume_unwind`,
    /// not `panic_any`: an error is not a bug, so the panic hook, which pgrx has capture a
    /// backtrace, stays out of it.)
    pub fn raise(self) -> ! {
        resume_unwind(Box::new(self))
    }

    /// Raises it as a FATAL: for the postmaster at start-up and the startup process, where
    /// an ERROR has nowhere to go.
    pub fn fatal(mut self) -> ! {
        self.level = Level::Fatal;
        resume_unwind(Box::new(self))
    }

    /// Writes it to the server log as a WARNING (or LOG) and carries on.
    pub fn log(self, warning: bool) {
        let level = if warning {
            PgLogLevel::WARNING
        } else {
            PgLogLevel::LOG
        } as c_int;
        // SAFETY: below ERROR, errfinish returns.
        unsafe { self.emit(level) }
    }

    /// Sends it to the client as a NOTICE and carries on.
    pub fn notice(self) {
        // SAFETY: below ERROR, errfinish returns.
        unsafe { self.emit(PgLogLevel::NOTICE as c_int) }
    }

    /// Saves it in the ErrorSaveContext the caller passed as `context`, if it did, and
    /// returns true: the function must then return NULL. False if the caller wants the error
    /// raised (PostgreSQL 15 never passes one).
    pub fn save(&self, context: *mut pg_sys::Node) -> bool {
        #[cfg(feature = "pg15")]
        {
            let _ = context;
            false
        }
        #[cfg(not(feature = "pg15"))]
        // SAFETY: context is NULL or a node; errsave_start/errsave_finish with an
        // ErrorSaveContext record the error there and return (they only throw without one,
        // which is excluded first). The strings outlive the calls that copy them.
        unsafe {
            if context.is_null() || (*context).type_ != pg_sys::NodeTag::T_ErrorSaveContext {
                return false;
            }
            let fields = self.c_strings();
            if pg_sys::errsave_start(context, std::ptr::null()) {
                set_fields(self.code as c_int, &fields);
                pg_sys::errsave_finish(context, FILE.as_ptr(), 0, FUNC.as_ptr());
            }
            true
        }
    }

    fn c_strings(&self) -> Fields {
        let utf8 = db_is_utf8();
        let c = |s: &str| CString::new(dbtext::to_db_bytes(s, utf8)).expect("NULs are dropped");
        (
            c(&self.message),
            self.detail.as_deref().map(c),
            self.detail_log.as_deref().map(c),
            self.hint.as_deref().map(c),
        )
    }

    /// Hands the error to PostgreSQL. At ERROR and above this does not return: errfinish
    /// jumps to PostgreSQL's handler, past every frame between here and it.
    ///
    /// # Safety
    /// At ERROR and above, no frame between PostgreSQL's handler and this call may hold
    /// anything with a destructor (only [`boundary`] calls it so).
    unsafe fn emit(self, level: c_int) {
        let fields = self.c_strings();
        let code = self.code as c_int;
        drop(self);
        // SAFETY: the ereport protocol: errstart, then the fields (each copies its string
        // into ErrorContext), then errfinish. The CStrings are dropped before errfinish, so
        // nothing of Rust's is left for the jump to skip.
        unsafe {
            if !errstart(level, std::ptr::null()) {
                return;
            }
            set_fields(code, &fields);
            drop(fields);
            errfinish(FILE.as_ptr(), 0, FUNC.as_ptr());
        }
    }
}

/// Message, detail, the log's detail and hint, in the database encoding.
type Fields = (CString, Option<CString>, Option<CString>, Option<CString>);

/// Sets the SQLSTATE and the texts of the error being built (after errstart or
/// errsave_start returned true); each call copies its string.
///
/// # Safety
/// Between errstart (or errsave_start) and errfinish (or errsave_finish).
unsafe fn set_fields(code: c_int, (message, detail, detail_log, hint): &Fields) {
    // SAFETY: as the caller promises; "%s" with one NUL-terminated string each.
    unsafe {
        errcode(code);
        errmsg_internal(c"%s".as_ptr(), message.as_ptr());
        if let Some(d) = detail {
            errdetail_internal(c"%s".as_ptr(), d.as_ptr());
        }
        if let Some(d) = detail_log {
            errdetail_log(c"%s".as_ptr(), d.as_ptr());
        }
        if let Some(h) = hint {
            errhint(c"%s".as_ptr(), h.as_ptr());
        }
    }
}

const FILE: &std::ffi::CStr = c"snowflake_id";
const FUNC: &std::ffi::CStr = c"snowflake_id";

fn db_is_utf8() -> bool {
    // SAFETY: a plain read of the backend's database encoding (SQL_ASCII before one is set).
    unsafe { pg_sys::GetDatabaseEncoding() == pg_sys::pg_enc::PG_UTF8 as c_int }
}

// The ereport protocol. pgrx leaves these out of its bindings; declared as PostgreSQL's
// headers do. errfinish throws at ERROR and above, so it is only called from `emit`.
unsafe extern "C-unwind" {
    fn errstart(elevel: c_int, domain: *const c_char) -> bool;
    fn errfinish(filename: *const c_char, lineno: c_int, funcname: *const c_char);
    fn errcode(sqlerrcode: c_int) -> c_int;
    fn errmsg_internal(fmt: *const c_char, ...) -> c_int;
    fn errdetail_internal(fmt: *const c_char, ...) -> c_int;
    fn errdetail_log(fmt: *const c_char, ...) -> c_int;
    fn errhint(fmt: *const c_char, ...) -> c_int;
}

/// An ERROR that PostgreSQL raised inside [`guarded`], copied out of its error state (in the
/// memory context of the call that caught it) before that state was reset.
pub struct Caught(NonNull<pg_sys::ErrorData>);

// SAFETY: a pointer into this backend's memory, only ever used by the backend's one thread;
// `Send` only because a panic payload must be.
unsafe impl Send for Caught {}

impl Caught {
    /// Throws it again, unchanged: for the boundary, with no Rust frame left to skip.
    ///
    /// # Safety
    /// As [`PgError::emit`] at ERROR: the outermost Rust frame of the call.
    unsafe fn rethrow(self) -> ! {
        // SAFETY: the ErrorData was copied by CopyErrorData in a context that outlives the
        // call; ReThrowError pushes it back on the error stack and jumps to PostgreSQL's
        // handler.
        unsafe { ReThrowError(self.0.as_ptr()) }
    }

    /// The SQLSTATE of the error, as PostgreSQL encodes it.
    pub fn sqlstate(&self) -> c_int {
        // SAFETY: a live ErrorData.
        unsafe { self.0.as_ref().sqlerrcode }
    }

    /// The message, in the database's encoding.
    pub fn message(&self) -> Vec<u8> {
        // SAFETY: a live ErrorData; its message is NULL or a NUL-terminated string.
        unsafe {
            let m = self.0.as_ref().message;
            if m.is_null() {
                return Vec::new();
            }
            std::ffi::CStr::from_ptr(m).to_bytes().to_vec()
        }
    }

    /// The detail, in the database's encoding (empty without one).
    pub fn detail(&self) -> Vec<u8> {
        // SAFETY: a live ErrorData; detail is NULL or a NUL-terminated string.
        unsafe { c_bytes(self.0.as_ref().detail) }
    }

    /// The hint, in the database's encoding (empty without one).
    pub fn hint(&self) -> Vec<u8> {
        // SAFETY: a live ErrorData; hint is NULL or a NUL-terminated string.
        unsafe { c_bytes(self.0.as_ref().hint) }
    }
}

/// Runs `f`, a call into PostgreSQL, catching an ERROR it raises as a [`Caught`] (by Rust
/// unwinding, like every other error of this extension) instead of letting PostgreSQL jump
/// over Rust frames. Unlike pgrx's guard it keeps the error as PostgreSQL made it.
///
/// A Rust panic inside `f` (a pgrx wrapper that turned a PostgreSQL error into one, or a bug)
/// is caught inside the jump buffer's frame and resumed once the frame is gone: the frame is
/// an `extern "C"` function, through which a panic cannot unwind (it would abort the process
/// and restart every session, as a lock timeout inside such a region once did).
///
/// # Safety
/// `f` owns nothing with a destructor while it calls PostgreSQL functions declared here (a
/// jump out of it skips its frames); calls through pgrx's wrappers are safe too, as their
/// errors arrive as panics. Only on the backend's main thread.
#[inline(never)]
pub unsafe fn guarded<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: the caller's contract is try_guarded's.
    match unsafe { try_guarded(f) } {
        Ok(r) => r,
        Err(caught) => resume_unwind(Box::new(caught)),
    }
}

/// As [`guarded`], handing a caught error to the caller.
///
/// # Safety
/// As [`guarded`].
#[inline(never)]
pub unsafe fn try_guarded<T>(f: impl FnOnce() -> T) -> Result<T, Caught> {
    let mut result = MaybeUninit::<T>::uninit();
    // SAFETY: the pattern of PostgreSQL's PG_TRY: our jump buffer becomes the target of the
    // next ERROR for the duration of `f`, the previous one is restored on both ways out. On a
    // jump, CopyErrorData copies the error out of ErrorContext into the caller's context and
    // FlushErrorState resets the error state, as PG_CATCH blocks that handle an error do.
    unsafe {
        let caller_cxt = pg_sys::CurrentMemoryContext;
        let exception_stack = pg_sys::PG_exception_stack;
        let context_stack = pg_sys::error_context_stack;
        let mut panicked = None;
        let jumped = cee_scape::call_with_sigsetjmp(false, |jbuf| {
            pg_sys::PG_exception_stack = std::ptr::from_ref(jbuf).cast_mut().cast();
            match catch_unwind(AssertUnwindSafe(f)) {
                Ok(r) => {
                    result.write(r);
                }
                Err(payload) => panicked = Some(payload),
            }
            0
        });
        pg_sys::PG_exception_stack = exception_stack;
        pg_sys::error_context_stack = context_stack;
        if jumped == 0 {
            if let Some(payload) = panicked {
                resume_unwind(payload);
            }
            return Ok(result.assume_init());
        }
        pg_sys::CurrentMemoryContext = caller_cxt;
        let copy = CopyErrorData();
        FlushErrorState();
        Err(Caught(
            NonNull::new(copy).expect("CopyErrorData returns a copy"),
        ))
    }
}

/// The bytes of a NUL-terminated string, or none for NULL.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn c_bytes(p: *const c_char) -> Vec<u8> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes().to_vec()
}

// Declared here, not through pgrx, whose wrappers would set up a guard of their own (and
// catch the very jump ReThrowError makes).
unsafe extern "C-unwind" {
    fn CopyErrorData() -> *mut pg_sys::ErrorData;
    fn FlushErrorState();
    fn ReThrowError(edata: *mut pg_sys::ErrorData) -> !;
}

/// Runs the body of an entry point that PostgreSQL calls, and turns whatever escapes it into
/// a PostgreSQL error: a [`PgError`] as itself; an error PostgreSQL raised inside a pgrx call
/// (a cancel request, out of memory), which pgrx turned into a panic, as PostgreSQL raised
/// it; a Rust panic (a bug) as an internal error. Never unwinds into PostgreSQL, and never
/// shows a Rust backtrace, whatever RUST_BACKTRACE says.
///
/// # Safety
/// Only for the outermost frame of a function PostgreSQL calls: the frames below it are
/// PostgreSQL's.
#[inline(always)]
pub unsafe fn boundary<R>(body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => {
            // SAFETY: the body's frames are unwound; the payload is all that is left.
            unsafe { throw(payload) }
        }
    }
}

#[cold]
#[inline(never)]
unsafe fn throw(payload: Box<dyn std::any::Any + Send>) -> ! {
    let payload = match payload.downcast::<Caught>() {
        // SAFETY: called from `boundary` with every frame of the body unwound.
        Ok(caught) => unsafe { caught.rethrow() },
        Err(other) => other,
    };
    let e = into_error(payload);
    let level = match e.level {
        Level::Error => PgLogLevel::ERROR,
        Level::Fatal => PgLogLevel::FATAL,
    } as c_int;
    // SAFETY: called from `boundary` with every frame of the body unwound.
    unsafe { e.emit(level) };
    unreachable!("errfinish does not return at ERROR and above")
}

/// What a panic payload says, as an error.
fn into_error(payload: Box<dyn std::any::Any + Send>) -> PgError {
    use pg_sys::panic::CaughtError;
    let payload = match payload.downcast::<PgError>() {
        Ok(e) => return *e,
        Err(other) => other,
    };
    let internal = |what: &str| {
        error(
            Code::ERRCODE_INTERNAL_ERROR,
            "internal error in snowflake_id",
        )
        .detail(what.to_owned())
        .hint("This is a bug; please report it with the statement that raised it.")
    };
    match payload.downcast::<CaughtError>() {
        Ok(caught) => match *caught {
            CaughtError::PostgresError(r) | CaughtError::ErrorReport(r) => PgError {
                level: if r.level() >= PgLogLevel::FATAL {
                    Level::Fatal
                } else {
                    Level::Error
                },
                code: r.sql_error_code(),
                message: r.message().to_owned(),
                detail: r.detail().map(str::to_owned),
                detail_log: None,
                hint: r.hint().map(str::to_owned),
            },
            CaughtError::RustPanic { ereport, .. } => internal(ereport.message()),
        },
        Err(other) => match (other.downcast_ref::<&str>(), other.downcast_ref::<String>()) {
            (Some(s), _) => internal(s),
            (_, Some(s)) => internal(s),
            _ => internal("a panic without a message"),
        },
    }
}

/// An error that escaped [`catch`], whatever raised it, with its fields as data (texts in the
/// database's encoding): for code that must tell another process about it before raising it
/// again (a background worker, the backend that started it).
pub struct Reported {
    pub sqlstate: c_int,
    pub message: Vec<u8>,
    pub detail: Vec<u8>,
    pub hint: Vec<u8>,
    payload: Box<dyn std::any::Any + Send>,
}

impl Reported {
    /// Raises it again, as it was.
    pub fn raise(self) -> ! {
        resume_unwind(self.payload)
    }
}

/// Runs `f`, returning an error that escapes it (an ERROR of PostgreSQL's, one of this
/// extension's, a bug) as [`Reported`] instead of letting it unwind.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Reported> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let utf8 = db_is_utf8();
        let texts = |e: &PgError| {
            let b = |s: Option<&str>| s.map(|s| dbtext::to_db_bytes(s, utf8)).unwrap_or_default();
            (
                e.code as c_int,
                b(Some(&e.message)),
                b(e.detail.as_deref()),
                b(e.hint.as_deref()),
            )
        };
        let (sqlstate, message, detail, hint) = if let Some(c) = payload.downcast_ref::<Caught>() {
            (c.sqlstate(), c.message(), c.detail(), c.hint())
        } else if let Some(e) = payload.downcast_ref::<PgError>() {
            texts(e)
        } else {
            // Anything else is told as the boundary would raise it; the payload itself is
            // raised again unchanged.
            let desc = match (
                payload.downcast_ref::<&str>(),
                payload.downcast_ref::<String>(),
            ) {
                (Some(s), _) => s.to_string(),
                (_, Some(s)) => s.clone(),
                _ => "an error raised inside a call into PostgreSQL".to_owned(),
            };
            texts(&error(Code::ERRCODE_INTERNAL_ERROR, desc))
        };
        Reported {
            sqlstate,
            message,
            detail,
            hint,
            payload,
        }
    })
}

/// Runs `f`, aborting the process should it panic: for callbacks that PostgreSQL calls through
/// a "C-unwind" pointer type, cannot fail, and run too often for [`boundary`] (sort support).
/// Costs nothing when nothing panics.
#[inline(always)]
pub fn no_unwind<R>(f: impl FnOnce() -> R) -> R {
    struct Abort;
    impl Drop for Abort {
        fn drop(&mut self) {
            std::process::abort()
        }
    }
    let bomb = Abort;
    let r = f();
    std::mem::forget(bomb);
    r
}

/// A name quoted in a message: at most its first [`MAX_QUOTED`] bytes, cut at a character
/// boundary of the database's encoding, with `...` when cut. A 100 KB argument must not make
/// a 100 KB message.
pub struct Clipped<'a>(pub &'a [u8]);

/// The most bytes of a name a message quotes: a PostgreSQL identifier's limit.
pub const MAX_QUOTED: usize = 63;

impl std::fmt::Display for Clipped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.len() <= MAX_QUOTED {
            return write!(f, "{}", DbText(self.0));
        }
        // SAFETY: pg_mbcliplen reads at most `len` bytes of the buffer, which has them, and
        // only measures characters of the database encoding.
        let cut = unsafe {
            pg_sys::pg_mbcliplen(
                self.0.as_ptr().cast(),
                self.0.len() as c_int,
                MAX_QUOTED as c_int,
            )
        };
        let cut = usize::try_from(cut).unwrap_or(0).min(MAX_QUOTED);
        write!(f, "{}...", DbText(&self.0[..unsplit(self.0, cut)]))
    }
}

/// The character of `text` that starts at byte `at` (a character boundary), as a message
/// quotes it.
pub fn char_at(text: &[u8], at: usize) -> &[u8] {
    // SAFETY: `at` is within the text, at a character boundary of the database's encoding;
    // pg_mblen reads that character's first byte.
    let len = unsafe { pg_sys::pg_mblen(text[at..].as_ptr().cast()) };
    let mut end = at + usize::try_from(len).unwrap_or(1).clamp(1, text.len() - at);
    if sql_ascii() {
        // The rest of a UTF-8 sequence, which SQL_ASCII counts as characters of their own.
        while end < text.len() && end - at < 4 && is_continuation(text[end]) {
            end += 1;
        }
    }
    &text[at..end]
}

/// Whether the database is SQL_ASCII: every byte counts as a character there, but a client in
/// another encoding receives messages converted from UTF-8 (as PostgreSQL takes SQL_ASCII's
/// bytes to be) and refuses half a character, which would turn an error into 22021.
fn sql_ascii() -> bool {
    // SAFETY: a plain read of the backend's database encoding.
    unsafe { pg_sys::GetDatabaseEncoding() == pg_sys::pg_enc::PG_SQL_ASCII as c_int }
}

fn is_continuation(b: u8) -> bool {
    b & 0xc0 == 0x80
}

/// `cut`, moved back to the start of a UTF-8 sequence of a SQL_ASCII database that it would
/// split.
fn unsplit(text: &[u8], cut: usize) -> usize {
    if !sql_ascii() || cut >= text.len() || !is_continuation(text[cut]) {
        return cut;
    }
    match (1..=3).find(|&k| cut >= k && !is_continuation(text[cut - k])) {
        Some(k) if text[cut - k] >= 0xc0 => cut - k,
        _ => cut,
    }
}

/// What every entry point says when the library was loaded on demand instead of at start-up.
pub fn not_preloaded() -> ! {
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        "snowflake_id must be loaded via shared_preload_libraries",
    )
    .hint(
        "Add snowflake_id to the libraries shared_preload_libraries lists (keep the others) \
         and restart the server.",
    )
    .raise()
}
