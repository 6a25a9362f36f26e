//! Statements the extension runs itself (creating a sequence relation, the catalog queries of
//! detection and of the update from 0.3.0), through PostgreSQL's SPI.
//!
//! Not pgrx's SPI client: query texts here are bytes in the database's encoding (they quote
//! table and column names), and an error PostgreSQL raises while running one (a permission,
//! a lock timeout, a cancel) must reach the user as PostgreSQL made it, in that encoding and
//! with its CONTEXT lines. Every call goes through [`errors::guarded`], which keeps the error
//! whole; pgrx's client hands query texts over as UTF-8 and its errors lose their bytes.

use std::ffi::{c_int, c_long, CStr};

use pgrx::pg_sys::{self, Datum, Oid};

use crate::pg::errors::{self, error, Code};
use crate::pg::fmgr;

/// The functions of this extension, as a subquery to join in place of `pg_proc`: the rows
/// `pg_depend` records as its members, so that a function of the same name that someone else
/// made never counts.
pub const EXTENSION_FUNCTIONS: &str = "SELECT p.* FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_depend x ON x.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
         AND x.objid = p.oid AND x.deptype = 'e'
    JOIN pg_catalog.pg_extension e ON e.oid = x.refobjid AND e.extname = 'snowflake_id'";

/// An open SPI connection: [`connect`] opens it, and closes it when its body returns. An
/// error that escapes leaves the closing to the transaction's abort, which cleans up every
/// connection the (sub)transaction opened.
pub struct Connection {
    _open: (),
}

/// Runs `body` with an SPI connection, under `search_path = pg_catalog, pg_temp`.
///
/// The statements run as the calling role, often inside another role's DDL (a hook): an
/// operator or function a role planted in a schema on the caller's path (`public.=(oid,
/// regclass)`, an exact match where pg_catalog's needs a cast) would otherwise be bound into
/// them and run as that caller. As PostgreSQL does for a function with a `SET` clause, the
/// setting is saved at a new nesting level and put back when the body returns (by the
/// (sub)transaction's abort when an error escapes). The statements name everything else by
/// schema.
pub fn connect<R>(body: impl FnOnce(&mut Connection) -> R) -> R {
    // SAFETY: a new GUC nesting level, popped by AtEOXact_GUC below (or by the abort).
    let nest = unsafe { errors::guarded(|| pg_sys::NewGUCNestLevel()) };
    // SAFETY: NUL-terminated name and value; GUC_ACTION_SAVE keeps the caller's value to be
    // restored at the end of the nesting level; elevel 0 raises an ERROR on failure.
    unsafe {
        errors::guarded(|| {
            pg_sys::set_config_option(
                c"search_path".as_ptr(),
                c"pg_catalog, pg_temp".as_ptr(),
                pg_sys::GucContext::PGC_USERSET,
                pg_sys::GucSource::PGC_S_SESSION,
                pg_sys::GucAction::GUC_ACTION_SAVE,
                true,
                0,
                false,
            )
        })
    };
    // SAFETY: SPI_connect is declared below; it only sets up SPI's state.
    let rc = unsafe { errors::guarded(|| SPI_connect()) };
    if rc != pg_sys::SPI_OK_CONNECT as c_int {
        spi_error("SPI_connect", rc);
    }
    let r = body(&mut Connection { _open: () });
    // SAFETY: closes the connection opened above; the result was copied out of SPI memory.
    let rc = unsafe { errors::guarded(|| SPI_finish()) };
    if rc != pg_sys::SPI_OK_FINISH as c_int {
        spi_error("SPI_finish", rc);
    }
    // SAFETY: pops the nesting level opened above, restoring the caller's search_path.
    unsafe { errors::guarded(|| pg_sys::AtEOXact_GUC(true, nest)) };
    r
}

impl Connection {
    /// Runs one statement that returns rows, with a new snapshot (rows other transactions
    /// committed since the calling statement began are seen), at most `limit` rows (0: all).
    pub fn select(&mut self, query: &CStr, limit: i64) -> Rows<'_> {
        // SAFETY: a NUL-terminated query; SPI_execute runs it in the connection opened by
        // `connect` and leaves its rows in SPI_tuptable until the next call.
        let rc = unsafe { errors::guarded(|| SPI_execute(query.as_ptr(), false, limit as c_long)) };
        if rc != pg_sys::SPI_OK_SELECT as c_int {
            spi_error("SPI_execute", rc);
        }
        // SAFETY: plain reads of SPI's results after a successful SELECT.
        let (table, count) = unsafe { (pg_sys::SPI_tuptable, pg_sys::SPI_processed) };
        Rows {
            table,
            count: count as usize,
            _conn: self,
        }
    }
}

impl Connection {
    /// Runs one utility statement (`CREATE SEQUENCE ...`, `SET LOCAL ...`), as the current
    /// user. `query` is bytes in the database's encoding, NUL-terminated.
    pub fn execute(&mut self, query: &CStr) {
        // SAFETY: as in `select`; a utility statement leaves no rows.
        let rc = unsafe { errors::guarded(|| SPI_execute(query.as_ptr(), false, 0)) };
        if rc != pg_sys::SPI_OK_UTILITY as c_int {
            spi_error("SPI_execute", rc);
        }
    }
}

/// The rows of the last statement; valid until the connection runs another one.
pub struct Rows<'c> {
    table: *mut pg_sys::SPITupleTable,
    count: usize,
    _conn: &'c mut Connection,
}

impl Rows<'_> {
    pub fn len(&self) -> usize {
        self.count
    }

    /// The value in column `col` (from 1) of row `row` (from 0), `None` if NULL or if there
    /// is no such row, after checking that the column is of type `ty`: the queries are ours,
    /// but a reader that trusted a wrong type would read memory as something it is not.
    fn datum(&self, row: usize, col: usize, ty: Oid) -> Option<Datum> {
        if row >= self.count {
            return None;
        }
        // SAFETY: SPI_tuptable of a SELECT holds `count` tuples described by its tupdesc;
        // SPI_gettypeid and SPI_getbinval only read them (a column number out of range is
        // reported as InvalidOid / SPI_result, not read).
        unsafe {
            let tupdesc = (*self.table).tupdesc;
            let tuple = *(*self.table).vals.add(row);
            let actual = errors::guarded(|| SPI_gettypeid(tupdesc, col as c_int));
            assert_eq!(actual, ty, "column {col} of an internal query");
            let mut isnull = false;
            let d = errors::guarded(|| SPI_getbinval(tuple, tupdesc, col as c_int, &mut isnull));
            (!isnull).then_some(d)
        }
    }

    pub fn i64(&self, row: usize, col: usize) -> Option<i64> {
        self.datum(row, col, pg_sys::INT8OID)
            .map(|d| d.value() as i64)
    }

    pub fn bool(&self, row: usize, col: usize) -> Option<bool> {
        self.datum(row, col, pg_sys::BOOLOID)
            .map(|d| d.value() != 0)
    }

    pub fn oid(&self, row: usize, col: usize) -> Option<Oid> {
        self.datum(row, col, pg_sys::OIDOID)
            .map(|d| Oid::from(d.value() as u32))
    }

    /// A `text` column's bytes, in the database's encoding (never converted, unlike text
    /// sent to a client), copied out of SPI's memory.
    pub fn text(&self, row: usize, col: usize) -> Option<Vec<u8>> {
        self.datum(row, col, pg_sys::TEXTOID)
            // SAFETY: a non-null text Datum of the tuple, alive while the rows are.
            .map(|d| unsafe { fmgr::varlena_bytes(d.cast_mut_ptr()) }.to_vec())
    }
}

fn spi_error(call: &str, rc: c_int) -> ! {
    error(
        Code::ERRCODE_INTERNAL_ERROR,
        format!("{call} failed with code {rc}"),
    )
    .raise()
}

// SPI, declared here rather than through pgrx so that errors::guarded is the only guard.
unsafe extern "C-unwind" {
    fn SPI_connect() -> c_int;
    fn SPI_finish() -> c_int;
    fn SPI_execute(src: *const std::ffi::c_char, read_only: bool, tcount: c_long) -> c_int;
    fn SPI_gettypeid(tupdesc: pg_sys::TupleDesc, fnumber: c_int) -> Oid;
    fn SPI_getbinval(
        tuple: pg_sys::HeapTuple,
        tupdesc: pg_sys::TupleDesc,
        fnumber: c_int,
        isnull: *mut bool,
    ) -> Datum;
}
