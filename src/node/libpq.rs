//! A connection to the registry, for the claims worker: libpq, loaded when the worker first
//! needs it (a server with hand-written numbers never loads it), used without blocking so
//! that every wait is bounded and wakes on the worker's latch (a detach, a shutdown) and on
//! the postmaster's death.
//!
//! libpq is PostgreSQL's own client library (`libpq.so.5`, installed with every server
//! package); the backend does not link it, so it is opened here as dblink and
//! postgres_fdw link it, only later.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use pgrx::pg_sys;

use crate::core::claim::{self, ConnOption};

type Conn = c_void;
type Res = c_void;

// libpq-fe.h
const CONNECTION_BAD: c_int = 1;
const PGRES_POLLING_FAILED: c_int = 0;
const PGRES_POLLING_READING: c_int = 1;
const PGRES_POLLING_WRITING: c_int = 2;
const PGRES_POLLING_OK: c_int = 3;
const PGRES_COMMAND_OK: c_int = 1;
const PGRES_TUPLES_OK: c_int = 2;
const PG_DIAG_SQLSTATE: c_int = b'C' as c_int;
const PG_DIAG_MESSAGE_PRIMARY: c_int = b'M' as c_int;
const PG_DIAG_MESSAGE_DETAIL: c_int = b'D' as c_int;
const PG_DIAG_MESSAGE_HINT: c_int = b'H' as c_int;

/// The libpq functions the worker calls.
type ConnectStartParamsFn =
    unsafe extern "C" fn(*const *const c_char, *const *const c_char, c_int) -> *mut Conn;
type ConnectPollFn = unsafe extern "C" fn(*mut Conn) -> c_int;
type StatusFn = unsafe extern "C" fn(*const Conn) -> c_int;
type ErrorMessageFn = unsafe extern "C" fn(*const Conn) -> *const c_char;
type SocketFn = unsafe extern "C" fn(*const Conn) -> c_int;
type FinishFn = unsafe extern "C" fn(*mut Conn);
type SendQueryParamsFn = unsafe extern "C" fn(
    *mut Conn,
    *const c_char,
    c_int,
    *const pg_sys::Oid,
    *const *const c_char,
    *const c_int,
    *const c_int,
    c_int,
) -> c_int;
type FlushFn = unsafe extern "C" fn(*mut Conn) -> c_int;
type ConsumeInputFn = unsafe extern "C" fn(*mut Conn) -> c_int;
type IsBusyFn = unsafe extern "C" fn(*mut Conn) -> c_int;
type GetResultFn = unsafe extern "C" fn(*mut Conn) -> *mut Res;
type ResultStatusFn = unsafe extern "C" fn(*const Res) -> c_int;
type ResultErrorFieldFn = unsafe extern "C" fn(*const Res, c_int) -> *const c_char;
type NtuplesFn = unsafe extern "C" fn(*const Res) -> c_int;
type NfieldsFn = unsafe extern "C" fn(*const Res) -> c_int;
type GetValueFn = unsafe extern "C" fn(*const Res, c_int, c_int) -> *const c_char;
type GetIsNullFn = unsafe extern "C" fn(*const Res, c_int, c_int) -> c_int;
type ClearFn = unsafe extern "C" fn(*mut Res);
type ConninfoParseFn = unsafe extern "C" fn(*const c_char, *mut *mut c_char) -> *mut ConninfoOption;
type ConninfoFreeFn = unsafe extern "C" fn(*mut ConninfoOption);
type FreememFn = unsafe extern "C" fn(*mut c_void);

/// libpq-fe.h's `PQconninfoOption`, the same in every libpq 5.x.
#[repr(C)]
struct ConninfoOption {
    keyword: *mut c_char,
    envvar: *mut c_char,
    compiled: *mut c_char,
    val: *mut c_char,
    label: *mut c_char,
    dispchar: *mut c_char,
    dispsize: c_int,
}

struct Api {
    connect_start_params: ConnectStartParamsFn,
    connect_poll: ConnectPollFn,
    status: StatusFn,
    error_message: ErrorMessageFn,
    socket: SocketFn,
    finish: FinishFn,
    send_query_params: SendQueryParamsFn,
    flush: FlushFn,
    consume_input: ConsumeInputFn,
    is_busy: IsBusyFn,
    get_result: GetResultFn,
    result_status: ResultStatusFn,
    result_error_field: ResultErrorFieldFn,
    ntuples: NtuplesFn,
    nfields: NfieldsFn,
    get_value: GetValueFn,
    get_is_null: GetIsNullFn,
    clear: ClearFn,
    conninfo_parse: ConninfoParseFn,
    conninfo_free: ConninfoFreeFn,
    freemem: FreememFn,
}

// SAFETY: function pointers of a library that stays loaded for the life of the process.
unsafe impl Send for Api {}
// SAFETY: as above; the worker is one thread.
unsafe impl Sync for Api {}

static API: OnceLock<Result<Api, String>> = OnceLock::new();

fn api() -> Result<&'static Api, String> {
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Api, String> {
    // SAFETY: dlopen of the system's libpq; dlsym of functions whose C signatures are those
    // declared in Api (libpq-fe.h, stable across libpq 5.x). The handle is never closed.
    unsafe {
        let handle = libc::dlopen(c"libpq.so.5".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if handle.is_null() {
            let why = libc::dlerror();
            return Err(format!(
                "could not load libpq.so.5: {}",
                if why.is_null() {
                    "unknown error".into()
                } else {
                    CStr::from_ptr(why).to_string_lossy()
                }
            ));
        }
        macro_rules! sym {
            ($name:literal, $ty:ty) => {{
                let p = libc::dlsym(handle, concat!($name, "\0").as_ptr().cast());
                if p.is_null() {
                    return Err(format!("libpq.so.5 has no {}", $name));
                }
                std::mem::transmute::<*mut c_void, $ty>(p)
            }};
        }
        Ok(Api {
            connect_start_params: sym!("PQconnectStartParams", ConnectStartParamsFn),
            connect_poll: sym!("PQconnectPoll", ConnectPollFn),
            status: sym!("PQstatus", StatusFn),
            error_message: sym!("PQerrorMessage", ErrorMessageFn),
            socket: sym!("PQsocket", SocketFn),
            finish: sym!("PQfinish", FinishFn),
            send_query_params: sym!("PQsendQueryParams", SendQueryParamsFn),
            flush: sym!("PQflush", FlushFn),
            consume_input: sym!("PQconsumeInput", ConsumeInputFn),
            is_busy: sym!("PQisBusy", IsBusyFn),
            get_result: sym!("PQgetResult", GetResultFn),
            result_status: sym!("PQresultStatus", ResultStatusFn),
            result_error_field: sym!("PQresultErrorField", ResultErrorFieldFn),
            ntuples: sym!("PQntuples", NtuplesFn),
            nfields: sym!("PQnfields", NfieldsFn),
            get_value: sym!("PQgetvalue", GetValueFn),
            get_is_null: sym!("PQgetisnull", GetIsNullFn),
            clear: sym!("PQclear", ClearFn),
            conninfo_parse: sym!("PQconninfoParse", ConninfoParseFn),
            conninfo_free: sym!("PQconninfoFree", ConninfoFreeFn),
            freemem: sym!("PQfreemem", FreememFn),
        })
    }
}

/// The options `conninfo` sets, as libpq parses it (its own parser, so that a secret is
/// whatever libpq takes for one, written however the string writes it); a bare word is a
/// database name, as libpq reads the `dbname` it is given. `Err` when libpq cannot load or
/// cannot parse the string: the reason never quotes the string (libpq's own message would
/// quote parts of it, a password's included).
pub fn parse_conninfo(conninfo: &str) -> Result<Vec<ConnOption>, String> {
    let api = api()?;
    if !claim::is_connection_string(conninfo) {
        return Ok(vec![ConnOption {
            keyword: "dbname".into(),
            value: conninfo.to_owned(),
            dispchar: String::new(),
        }]);
    }
    let owned =
        CString::new(conninfo).map_err(|_| "snowflake.registry holds a NUL byte".to_owned())?;
    let mut errmsg: *mut c_char = std::ptr::null_mut();
    // SAFETY: a NUL-terminated string; libpq returns NULL (and perhaps a message to free with
    // PQfreemem) or an array terminated by a NULL keyword, freed with PQconninfoFree.
    unsafe {
        let options = (api.conninfo_parse)(owned.as_ptr(), &mut errmsg);
        if !errmsg.is_null() {
            (api.freemem)(errmsg.cast());
        }
        if options.is_null() {
            return Err("snowflake.registry is not a connection string libpq can parse (its message is not shown: it may quote a password)".into());
        }
        let mut parsed = Vec::new();
        let mut at = options;
        while !(*at).keyword.is_null() {
            if !(*at).val.is_null() {
                let s = |p: *mut c_char| {
                    if p.is_null() {
                        String::new()
                    } else {
                        CStr::from_ptr(p).to_string_lossy().into_owned()
                    }
                };
                parsed.push(ConnOption {
                    keyword: s((*at).keyword),
                    value: s((*at).val),
                    dispchar: s((*at).dispchar),
                });
            }
            at = at.add(1);
        }
        (api.conninfo_free)(options);
        Ok(parsed)
    }
}

/// Why a call to the registry failed.
#[derive(Debug, Clone)]
pub enum Failure {
    /// No answer: the connection could not be made or broke, or the time ran out. Retried.
    Unreachable(String),
    /// The registry answered with an error (SQLSTATE, message with its detail and hint).
    Refused { sqlstate: String, message: String },
    /// The worker was asked to stop (or the postmaster died) while it waited.
    Interrupted,
    /// Nothing to try: `snowflake.registry` cannot be used as it is (libpq cannot parse it).
    Unusable(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unreachable(why) => write!(f, "the registry cannot be reached: {why}"),
            Failure::Refused { sqlstate, message } => {
                write!(f, "the registry refused ({sqlstate}): {message}")
            }
            Failure::Interrupted => f.write_str("interrupted"),
            Failure::Unusable(why) => f.write_str(why),
        }
    }
}

/// What the waits check besides their socket: whether to give up at once.
pub type Interrupted<'a> = &'a dyn Fn() -> bool;

/// An open connection to the registry.
pub struct Connection {
    api: &'static Api,
    conn: *mut Conn,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: a connection made by PQconnectStartParams, finished once.
        unsafe { (self.api.finish)(self.conn) };
    }
}

/// Milliseconds left until `deadline_ms` (monotonic), at least 1 while any is left.
fn left(deadline_ms: i64) -> Option<i64> {
    let now = crate::core::wallclock::monotonic_ms();
    (now < deadline_ms).then(|| (deadline_ms - now).max(1))
}

/// Waits until `socket` is readable (or writable), the latch is set, or `deadline_ms`.
fn wait(
    socket: c_int,
    writable: bool,
    deadline_ms: i64,
    interrupted: Interrupted,
) -> Result<(), Failure> {
    let Some(timeout) = left(deadline_ms) else {
        return Err(Failure::Unreachable("timed out".into()));
    };
    let io = if writable {
        pg_sys::WL_SOCKET_WRITEABLE
    } else {
        pg_sys::WL_SOCKET_READABLE
    };
    // SAFETY: the worker's own latch; a socket libpq opened; WL_EXIT_ON_PM_DEATH exits the
    // process if the postmaster dies (nothing of ours needs cleaning up then).
    let events = unsafe {
        let events = pg_sys::WaitLatchOrSocket(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | io | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as c_int,
            socket as pg_sys::pgsocket,
            timeout,
            pg_sys::PG_WAIT_EXTENSION,
        );
        if events & pg_sys::WL_LATCH_SET as c_int != 0 {
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
        events
    };
    if interrupted() {
        return Err(Failure::Interrupted);
    }
    let _ = events;
    Ok(())
}

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string libpq returned, valid until the next call on its object.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
    // libpq's messages span lines (a connection's tries, its hints): one line for the view
    // and the log.
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Connection {
    /// Connects to `conninfo` (a connection string or URI), giving up at `deadline_ms`.
    pub fn open(
        conninfo: &str,
        deadline_ms: i64,
        interrupted: Interrupted,
    ) -> Result<Connection, Failure> {
        let api = api().map_err(Failure::Unreachable)?;
        let dbname = CString::new(conninfo)
            .map_err(|_| Failure::Unreachable("the connection string holds a NUL byte".into()))?;
        let keywords = [
            c"dbname".as_ptr(),
            c"application_name".as_ptr(),
            std::ptr::null(),
        ];
        let values = [
            dbname.as_ptr(),
            c"snowflake_id claims".as_ptr(),
            std::ptr::null(),
        ];
        // SAFETY: NULL-terminated keyword and value arrays of NUL-terminated strings, which
        // libpq copies; expand_dbname = 1 reads the first value as a connection string.
        let conn = unsafe { (api.connect_start_params)(keywords.as_ptr(), values.as_ptr(), 1) };
        if conn.is_null() {
            return Err(Failure::Unreachable("out of memory".into()));
        }
        let c = Connection { api, conn };
        // SAFETY: a live connection object.
        if unsafe { (api.status)(conn) } == CONNECTION_BAD {
            return Err(Failure::Unreachable(c.error()));
        }
        loop {
            // SAFETY: as above.
            let poll = unsafe { (api.connect_poll)(conn) };
            match poll {
                PGRES_POLLING_OK => return Ok(c),
                PGRES_POLLING_FAILED => return Err(Failure::Unreachable(c.error())),
                PGRES_POLLING_READING | PGRES_POLLING_WRITING => {
                    // SAFETY: as above.
                    let socket = unsafe { (api.socket)(conn) };
                    wait(
                        socket,
                        poll == PGRES_POLLING_WRITING,
                        deadline_ms,
                        interrupted,
                    )?;
                }
                _ => {}
            }
        }
    }

    fn error(&self) -> String {
        // SAFETY: a live connection object.
        text(unsafe { (self.api.error_message)(self.conn) })
    }

    /// Runs `sql` with text `params`, giving up at `deadline_ms`: the rows of its result, each
    /// column as text or NULL.
    pub fn query(
        &mut self,
        sql: &CStr,
        params: &[&str],
        deadline_ms: i64,
        interrupted: Interrupted,
    ) -> Result<Vec<Vec<Option<String>>>, Failure> {
        let api = self.api;
        let owned: Vec<CString> = params
            .iter()
            .map(|p| {
                CString::new(*p)
                    .map_err(|_| Failure::Unreachable("a parameter holds a NUL byte".into()))
            })
            .collect::<Result<_, _>>()?;
        let values: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: a live connection; parameter values are NUL-terminated text (formats and
        // lengths NULL: all text), copied by libpq before it returns.
        let sent = unsafe {
            (api.send_query_params)(
                self.conn,
                sql.as_ptr(),
                values.len() as c_int,
                std::ptr::null(),
                values.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                0,
            )
        };
        if sent == 0 {
            return Err(Failure::Unreachable(self.error()));
        }
        // SAFETY: a live connection.
        let socket = unsafe { (api.socket)(self.conn) };
        loop {
            // SAFETY: a live connection with a query sent.
            match unsafe { (api.flush)(self.conn) } {
                0 => break,
                1 => wait(socket, true, deadline_ms, interrupted)?,
                _ => return Err(Failure::Unreachable(self.error())),
            }
        }
        let mut outcome = Err(Failure::Unreachable("no result".into()));
        loop {
            // PQgetResult blocks unless the input holds a whole result: read until it does.
            loop {
                // SAFETY: a live connection; reads what the socket holds without waiting.
                if unsafe { (api.consume_input)(self.conn) } == 0 {
                    return Err(Failure::Unreachable(self.error()));
                }
                // SAFETY: a live connection.
                if unsafe { (api.is_busy)(self.conn) } == 0 {
                    break;
                }
                wait(socket, false, deadline_ms, interrupted)?;
            }
            // SAFETY: not busy: PQgetResult returns without waiting; each result is cleared.
            let res = unsafe { (api.get_result)(self.conn) };
            if res.is_null() {
                return outcome;
            }
            // SAFETY: a live result, read before it is cleared.
            unsafe {
                let status = (api.result_status)(res);
                if matches!(outcome, Err(Failure::Unreachable(_))) {
                    outcome = if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                        let (rows, cols) = ((api.ntuples)(res), (api.nfields)(res));
                        Ok((0..rows)
                            .map(|r| {
                                (0..cols)
                                    .map(|c| {
                                        ((api.get_is_null)(res, r, c) == 0)
                                            .then(|| text((api.get_value)(res, r, c)))
                                    })
                                    .collect()
                            })
                            .collect())
                    } else {
                        let field = |f| text((api.result_error_field)(res, f));
                        let mut message = field(PG_DIAG_MESSAGE_PRIMARY);
                        for (label, f) in [
                            ("DETAIL", PG_DIAG_MESSAGE_DETAIL),
                            ("HINT", PG_DIAG_MESSAGE_HINT),
                        ] {
                            let v = field(f);
                            if !v.is_empty() {
                                message.push_str(&format!(" ({label}: {v})"));
                            }
                        }
                        if message.is_empty() {
                            message = self.error();
                        }
                        Err(Failure::Refused {
                            sqlstate: field(PG_DIAG_SQLSTATE),
                            message,
                        })
                    };
                }
                (api.clear)(res);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry's connection string as the view shows it, read by libpq itself: every
    /// way of writing a password is masked, and a key=value string whose password holds
    /// `://` is no URI.
    #[test]
    fn libpq_parses_and_the_secrets_are_masked() {
        for (conninfo, secret, shown) in [
            (
                "host=reg dbname=ids user=claims password=ab://cd",
                "ab://cd",
                "host=reg dbname=ids user=claims password=********",
            ),
            (
                "postgresql://claims@reg/ids?%70assword=pw1&sslmode=disable",
                "pw1",
                "user=claims password=******** dbname=ids host=reg sslmode=disable",
            ),
            (
                "host=reg dbname=ids sslkey=/k sslpassword=kp2",
                "kp2",
                "host=reg dbname=ids sslkey=/k sslpassword=********",
            ),
            (
                "postgres://claims:p%40ss3@reg:5433/ids",
                "p@ss3",
                "user=claims password=******** dbname=ids host=reg port=5433",
            ),
            (
                "host=reg password = 'a b\\'c' dbname=ids",
                "a b'c",
                "host=reg password=******** dbname=ids",
            ),
        ] {
            let Ok(options) = parse_conninfo(conninfo) else {
                // No libpq on this machine: nothing to check against.
                assert!(api().is_err(), "{conninfo} not parsed");
                return;
            };
            let mut got: Vec<String> = claim::shown_conninfo(&options)
                .split(' ')
                .map(str::to_owned)
                .collect();
            let mut want: Vec<String> = shown.split(' ').map(str::to_owned).collect();
            got.sort();
            want.sort();
            assert_eq!(got, want, "{conninfo}");
            assert_eq!(claim::secrets(&options), [secret], "{conninfo}");
        }
        // A bare word is a database name; a string libpq cannot parse is refused without
        // quoting it.
        assert_eq!(
            claim::shown_conninfo(&parse_conninfo("ids").unwrap()),
            "dbname=ids"
        );
        let bad = parse_conninfo("host=reg password=abc def").unwrap_err();
        assert!(!bad.contains("def") && !bad.contains("abc"), "{bad}");
    }
}
