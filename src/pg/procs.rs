//! What the PGPROC array says of processes and prepared transactions, for the watermarks
//! (see `sequences::inflight_xact`): PGPROC numbers are also the indexes of the holders of values
//! in flight. The PGPROCs of prepared transactions come after every process's, from
//! `ProcGlobal->allProcCount` on (`InitProcGlobal`, `TwoPhaseShmemInit`).

use pgrx::pg_sys;

unsafe extern "C" {
    // twophase.h; not in pgrx's bindings.
    static max_prepared_xacts: std::ffi::c_int;
}

/// The PGPROC with number `n`, if there is one.
fn proc(n: usize) -> Option<&'static pg_sys::PGPROC> {
    // SAFETY: ProcGlobal and its array live in shared memory as long as the server; the
    // array has allProcCount + max_prepared_xacts entries.
    unsafe {
        let global = pg_sys::ProcGlobal.as_ref()?;
        let count = global.allProcCount as usize + max_prepared_xacts.max(0) as usize;
        (n < count).then(|| &*global.allProcs.add(n))
    }
}

/// The PGPROC numbers of prepared transactions.
fn prepared_numbers() -> std::ops::Range<usize> {
    // SAFETY: plain reads of values fixed at start.
    unsafe {
        match pg_sys::ProcGlobal.as_ref() {
            Some(g) => {
                let first = g.allProcCount as usize;
                first..first + max_prepared_xacts.max(0) as usize
            }
            None => 0..0,
        }
    }
}

/// The PGPROC number of prepared transaction `xid`, looked up without a lock or an ERROR (for
/// a transaction callback, where an ERROR would be a PANIC): its PGPROC took the xid when the
/// transaction was prepared, and keeps it until the PGPROC is used again.
pub fn prepared_number(xid: u32) -> Option<usize> {
    prepared_numbers().find(|&n| proc(n).is_some_and(|p| u32::from(read(&p.xid)) == xid))
}

/// A field of a PGPROC that its owner may change meanwhile: read once, as it is.
fn read<T: Copy>(field: &T) -> T {
    // SAFETY: an aligned field of a live PGPROC; these are 32-bit fields, read whole.
    unsafe { std::ptr::read_volatile(field) }
}

/// The prepared transactions of database `db`, by PGPROC number and xid; and some that have
/// ended (their PGPROC keeps the xid until it is used again: see [`running`]).
pub fn prepared_in(db: pg_sys::Oid) -> Vec<(usize, u32)> {
    prepared_numbers()
        .filter_map(|n| {
            let p = proc(n)?;
            let xid = u32::from(read(&p.xid));
            (xid != 0 && read(&p.databaseId) == db).then_some((n, xid))
        })
        .collect()
}

/// The process id and the top transaction of the process with PGPROC number `n` (0 where it
/// has none: a prepared transaction has no process).
pub fn pid_and_xid(n: usize) -> (i32, u32) {
    proc(n).map_or((0, 0), |p| (read(&p.pid), u32::from(read(&p.xid))))
}

/// Whether transaction `xid` is still running (a prepared transaction is, until COMMIT
/// PREPARED or ROLLBACK PREPARED has left the proc array, and then its end is visible).
pub fn running(xid: u32) -> bool {
    // SAFETY: a lookup in the proc array under its lock.
    unsafe { pg_sys::TransactionIdIsInProgress(pg_sys::TransactionId::from(xid)) }
}
