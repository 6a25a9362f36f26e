//! Shared memory: the cache of sequences and its phases (see `core::cache`, `core::reclamation`), its lock
//! and the lease extension locks (see `sequences::durable`), and the sightings of logical
//! replication (see `detection`), and the claims of node numbers from a registry (see
//! `node::claims`), and the values in flight of each process's transaction (see
//! `sequences::inflight_xact`). The cache's size comes from `snowflake.max_sequences` and
//! the phases' from the number of backends, so they are requested and attached with
//! PostgreSQL's hooks directly (`pg_shmem_init!` only sizes Rust types known at compile time).
//! Nothing is loaded into it at start: sequences enter it as they are used.
//!
//! A call that reaches the table through [`cache`] enters the current phase until the
//! [`Pinned`] it gets is dropped (the end of the call), so that no slot it may hold is reused
//! meanwhile. Not for the rest of the transaction: a backend idle in a transaction, or
//! waiting for a table's lock between two calls, would then keep every slot evicted
//! meanwhile from reuse, and a busy cache would fill up behind it (53400).

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use pgrx::pg_guard;
use pgrx::pg_sys;

use crate::core::cache::{Cache, Slot, Slots};
use crate::core::claim::Claims;
use crate::core::inflight::{Holder, Holders};
use crate::core::membarrier;
use crate::core::name_floors::NameFloors;
use crate::core::reclamation::{Barrier, Entry, Phases};
use crate::core::sightings::Sightings;
use crate::pg::errors;
use crate::pg::errors::{error, Code};

static SLOTS: AtomicPtr<Slot> = AtomicPtr::new(null_mut());
static SIGHTINGS: AtomicPtr<Sightings> = AtomicPtr::new(null_mut());
static CLAIMS: AtomicPtr<Claims> = AtomicPtr::new(null_mut());
static NAME_FLOORS: AtomicPtr<NameFloors> = AtomicPtr::new(null_mut());
/// One holder per phase entry: per PGPROC number.
static HOLDERS: AtomicPtr<Holder> = AtomicPtr::new(null_mut());
/// The tranche's locks: the cache's, then the extension locks.
static LOCKS: AtomicPtr<pg_sys::LWLockPadded> = AtomicPtr::new(null_mut());
static SLOT_COUNT: AtomicUsize = AtomicUsize::new(0);
/// The phase counter, followed by one entry per backend.
static PHASES: AtomicPtr<AtomicU64> = AtomicPtr::new(null_mut());
static PHASE_ENTRIES: AtomicUsize = AtomicUsize::new(0);

static mut PREV_SHMEM_REQUEST_HOOK: pg_sys::shmem_request_hook_type = None;
static mut PREV_SHMEM_STARTUP_HOOK: pg_sys::shmem_startup_hook_type = None;

const SEGMENT_NAME: &std::ffi::CStr = c"snowflake_id sequences";
const PHASES_NAME: &std::ffi::CStr = c"snowflake_id phases";
const SIGHTINGS_NAME: &std::ffi::CStr = c"snowflake_id sightings";
const CLAIMS_NAME: &std::ffi::CStr = c"snowflake_id claims";
const NAME_FLOORS_NAME: &std::ffi::CStr = c"snowflake_id floors of names";
const HOLDERS_NAME: &std::ffi::CStr = c"snowflake_id values in flight";
const TRANCHE_NAME: &std::ffi::CStr = c"snowflake_id";

fn table_size() -> usize {
    std::mem::size_of::<Slot>() * SLOT_COUNT.load(Ordering::Relaxed)
}

/// One phase entry per process that can have a PGPROC: the backends, the auxiliary processes
/// (at most 38 in PostgreSQL 18, with its I/O workers) and the prepared transactions.
fn phase_entries() -> usize {
    // SAFETY: plain reads of settings fixed before shared memory is sized.
    unsafe { (pg_sys::MaxBackends + max_prepared_xacts) as usize + 64 }
}

unsafe extern "C" {
    // twophase.h; not in pgrx's bindings.
    static max_prepared_xacts: std::ffi::c_int;
}

fn phases_size() -> usize {
    size_of::<AtomicU64>() * (1 + phase_entries())
}

fn holders_size() -> usize {
    size_of::<Holder>() * phase_entries()
}

/// How many lease extension locks there are (see `sequences::durable`): sequences that share
/// one wait for each other's extensions, which take a WAL flush each.
pub const STRIPES: usize = 64;

/// How many locks the tranche has: the cache's, one per extension stripe, then the floors of
/// names'.
const LOCK_COUNT: usize = 1 + STRIPES + 1;

/// Installs the hooks for a cache of `slots` sequences. Called from `_PG_init` while
/// preloading.
pub fn install_hooks(slots: usize) {
    SLOT_COUNT.store(slots, Ordering::Relaxed);
    BARRIERS.store(membarrier::supported(), Ordering::Relaxed);
    // SAFETY: _PG_init runs once, single-threaded, in the postmaster; chaining the previous
    // hooks is how PostgreSQL expects several libraries to share them.
    unsafe {
        PREV_SHMEM_REQUEST_HOOK = pg_sys::shmem_request_hook;
        pg_sys::shmem_request_hook = Some(shmem_request);
        PREV_SHMEM_STARTUP_HOOK = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(shmem_startup);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_request() {
    // SAFETY: called by the postmaster while it sizes shared memory, the one time
    // RequestAddinShmemSpace is allowed; the outermost Rust frame.
    unsafe {
        errors::boundary(|| {
            if let Some(prev) = PREV_SHMEM_REQUEST_HOOK {
                prev();
            }
            pg_sys::RequestAddinShmemSpace(table_size());
            pg_sys::RequestAddinShmemSpace(phases_size());
            pg_sys::RequestAddinShmemSpace(size_of::<Sightings>());
            pg_sys::RequestAddinShmemSpace(size_of::<Claims>());
            pg_sys::RequestAddinShmemSpace(size_of::<NameFloors>());
            pg_sys::RequestAddinShmemSpace(holders_size());
            pg_sys::RequestNamedLWLockTranche(TRANCHE_NAME.as_ptr(), LOCK_COUNT as i32);
        })
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_startup() {
    // SAFETY: ShmemInitStruct is called under AddinShmemInitLock as PostgreSQL requires; the
    // memory it returns is ours for table_size() bytes, and zeroed memory is an empty table
    // (cache.rs). Run in the postmaster (and after a crash restart), before any backend;
    // the outermost Rust frame.
    unsafe { errors::boundary(|| attach()) }
}

/// # Safety
/// Only from the shared-memory startup hook.
unsafe fn attach() {
    // SAFETY: see shmem_startup.
    unsafe {
        if let Some(prev) = PREV_SHMEM_STARTUP_HOOK {
            prev();
        }
        let size = table_size();
        let mut found = false;
        // AddinShmemInitLock is a C macro: &MainLWLockArray[21].lock (lwlocknames.h).
        let init_lock = &raw mut (*pg_sys::MainLWLockArray.add(21)).lock;
        pg_sys::LWLockAcquire(init_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let ptr = pg_sys::ShmemInitStruct(SEGMENT_NAME.as_ptr(), size, &mut found);
        if !found {
            std::ptr::write_bytes(ptr.cast::<u8>(), 0, size);
        }
        SLOTS.store(ptr.cast(), Ordering::Release);
        let mut phases_found = false;
        let phases =
            pg_sys::ShmemInitStruct(PHASES_NAME.as_ptr(), phases_size(), &mut phases_found);
        if !phases_found {
            // All-zero: phase 0, nobody entered (reclamation.rs).
            std::ptr::write_bytes(phases.cast::<u8>(), 0, phases_size());
        }
        PHASE_ENTRIES.store(phase_entries(), Ordering::Relaxed);
        PHASES.store(phases.cast(), Ordering::Release);
        let mut sightings_found = false;
        let sightings = pg_sys::ShmemInitStruct(
            SIGHTINGS_NAME.as_ptr(),
            size_of::<Sightings>(),
            &mut sightings_found,
        );
        if !sightings_found {
            // All-zero is the empty table (sightings.rs).
            std::ptr::write_bytes(sightings.cast::<u8>(), 0, size_of::<Sightings>());
        }
        SIGHTINGS.store(sightings.cast(), Ordering::Release);
        let mut claims_found = false;
        let claims =
            pg_sys::ShmemInitStruct(CLAIMS_NAME.as_ptr(), size_of::<Claims>(), &mut claims_found);
        if !claims_found {
            // All-zero: nothing claimed, no worker, no request (claim.rs).
            std::ptr::write_bytes(claims.cast::<u8>(), 0, size_of::<Claims>());
        }
        CLAIMS.store(claims.cast(), Ordering::Release);
        let mut floors_found = false;
        let floors = pg_sys::ShmemInitStruct(
            NAME_FLOORS_NAME.as_ptr(),
            size_of::<NameFloors>(),
            &mut floors_found,
        );
        if !floors_found {
            // All-zero: no floors (name_floors.rs). A crash restart forgets them.
            std::ptr::write_bytes(floors.cast::<u8>(), 0, size_of::<NameFloors>());
        }
        NAME_FLOORS.store(floors.cast(), Ordering::Release);
        let mut holders_found = false;
        let holders =
            pg_sys::ShmemInitStruct(HOLDERS_NAME.as_ptr(), holders_size(), &mut holders_found);
        if !holders_found {
            // All-zero: nothing in flight (inflight.rs). A crash restart comes here with
            // new shared memory: every transaction in flight ended with the crash.
            std::ptr::write_bytes(holders.cast::<u8>(), 0, holders_size());
        }
        HOLDERS.store(holders.cast(), Ordering::Release);
        LOCKS.store(
            pg_sys::GetNamedLWLockTranche(TRANCHE_NAME.as_ptr()),
            Ordering::Release,
        );
        pg_sys::LWLockRelease(init_lock);
    }
}

/// How long a waiter for one of the extension's locks sleeps between attempts: it wakes at
/// once for a cancel request, a statement timeout or a terminate, checked after every wait.
const LOCK_POLL_MS: i64 = 1;

/// One of the extension's locks, held by this backend while the value exists. PostgreSQL
/// releases it at transaction abort if an error escapes first.
pub struct InterruptibleLock {
    lock: *mut pg_sys::LWLock,
}

impl InterruptibleLock {
    /// Waits for `lock`. Unlike a plain LWLock wait, the wait can be cancelled
    /// (`pg_cancel_backend`, `statement_timeout`): a backend queued behind a slow WAL flush
    /// must not hang with it. Shows as the wait event `Extension` meanwhile.
    pub fn acquire(lock: *mut pg_sys::LWLock) -> InterruptibleLock {
        // SAFETY: `lock` is an LWLock of the extension's tranche in shared memory, which
        // lives as long as the server; a conditional acquire never sleeps. WaitLatch on
        // MyLatch with a timeout and postmaster-death exit is the standard interruptible wait,
        // and the interrupt check right after it raises a pending cancel as an ERROR.
        unsafe {
            while !pg_sys::LWLockConditionalAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE) {
                pg_sys::WaitLatch(
                    pg_sys::MyLatch,
                    (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH)
                        as i32,
                    LOCK_POLL_MS as _,
                    pg_sys::PG_WAIT_EXTENSION,
                );
                pg_sys::ResetLatch(pg_sys::MyLatch);
                pgrx::check_for_interrupts!();
            }
        }
        InterruptibleLock { lock }
    }
}

impl Drop for InterruptibleLock {
    fn drop(&mut self) {
        // SAFETY: acquired in `acquire` by this backend and not yet released.
        unsafe { pg_sys::LWLockRelease(self.lock) };
    }
}

/// The tranche's lock `n`.
fn lock(n: usize) -> *mut pg_sys::LWLock {
    assert!(n < LOCK_COUNT);
    // SAFETY: the tranche holds LOCK_COUNT padded LWLocks in shared memory that lives as long
    // as the server; attached before any backend runs.
    unsafe { &raw mut (*LOCKS.load(Ordering::Acquire).add(n)).lock }
}

/// The lock under which sequences enter and leave the cache.
pub fn cache_lock() -> *mut pg_sys::LWLock {
    lock(0)
}

/// The lease extension lock of the sequence whose cache key hashes to `hash` (see
/// `sequences::durable`).
pub fn extension_lock(hash: u64) -> *mut pg_sys::LWLock {
    lock(1 + (hash % STRIPES as u64) as usize)
}

/// The lock of the floors of names (see `sequences::name_floors_xact`).
pub fn name_floors_lock() -> *mut pg_sys::LWLock {
    lock(1 + STRIPES)
}

/// The floors of names (see `sequences::name_floors_xact`), used only under
/// [`name_floors_lock`]. Only when the library was preloaded.
pub fn name_floors() -> *mut NameFloors {
    let p = NAME_FLOORS.load(Ordering::Acquire);
    assert!(!p.is_null(), "the library is preloaded");
    p
}

/// The sightings of logical replication, or `None` when the library was not preloaded.
#[inline]
pub fn sightings() -> Option<&'static Sightings> {
    // SAFETY: NULL, or the zero-initialised Sightings in shared memory, which lives as long
    // as the process and is only changed through atomics.
    unsafe { SIGHTINGS.load(Ordering::Acquire).as_ref() }
}

/// The claims of node numbers, or `None` when the library was not preloaded.
#[inline]
pub fn claims() -> Option<&'static Claims> {
    // SAFETY: NULL, or the zero-initialised Claims in shared memory, which lives as long as
    // the process and is only changed through atomics.
    unsafe { CLAIMS.load(Ordering::Acquire).as_ref() }
}

/// The values in flight, one holder per PGPROC number, or `None` when the library was not
/// preloaded.
#[inline]
pub fn holders() -> Option<Holders<'static>> {
    let ptr = HOLDERS.load(Ordering::Acquire);
    if ptr.is_null() {
        return None;
    }
    // SAFETY: ptr points at phase_entries() zero-initialised holders in shared memory that
    // lives as long as the process; Holder is made of atomics only.
    Some(Holders::new(unsafe {
        std::slice::from_raw_parts(ptr, PHASE_ENTRIES.load(Ordering::Relaxed))
    }))
}

/// The table for a call, or `None` when the library was not preloaded. The backend is in the
/// current phase (see the module's comment) until the returned value is dropped; the slots
/// found through it may be used until then, and only by generation after that.
///
/// Every generated value comes through here and through the drop, so both are a handful of
/// loads and stores of this process's own statics, the phases found once and kept in the
/// [`Pinned`], this process's entry found at its first entry ([`ME`]).
#[inline(always)]
pub fn cache() -> Option<Pinned> {
    let phases = phases()?;
    let cache = table(phases)?;
    // Loads and stores, never read-modify-writes: these flags are this process's own, and a
    // locked instruction per flag would cost the generators' fast path more than entering does.
    let pins = PINS.load(Ordering::Relaxed);
    if pins == 0 {
        enter(&phases);
    }
    PINS.store(pins + 1, Ordering::Relaxed);
    Some(Pinned { cache, phases })
}

/// The table, with this backend in the current phase while it lives.
pub struct Pinned {
    cache: Cache<'static>,
    phases: Phases<'static>,
}

impl std::ops::Deref for Pinned {
    type Target = Cache<'static>;

    #[inline(always)]
    fn deref(&self) -> &Cache<'static> {
        &self.cache
    }
}

impl Drop for Pinned {
    #[inline(always)]
    fn drop(&mut self) {
        // Also when an ERROR unwinds the call (pgrx raises it as a panic through these
        // frames); the end of the transaction leaves in any case.
        match PINS.load(Ordering::Relaxed) {
            0 => {}
            1 => {
                PINS.store(0, Ordering::Relaxed);
                self.phases.exit(ME.load(Ordering::Relaxed));
            }
            n => PINS.store(n - 1, Ordering::Relaxed),
        }
    }
}

/// The table over `phases`, without entering one.
#[inline(always)]
fn table(phases: Phases<'static>) -> Option<Cache<'static>> {
    Some(Cache::new(slots()?, phases))
}

#[inline(always)]
fn slots() -> Option<&'static [Slot]> {
    let ptr = SLOTS.load(Ordering::Acquire);
    if ptr.is_null() {
        return None;
    }
    let len = SLOT_COUNT.load(Ordering::Relaxed);
    // SAFETY: ptr points at `len` initialised slots in shared memory that lives as long as
    // the process; Slot is Sync and all its mutation goes through atomics.
    Some(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The table's slots for one call of the generators' fast path, with the backend in the
/// current phase until the returned value is dropped, as [`cache`] does; `None` where this
/// is not the way the call may enter (it takes the slow path then, which enters with
/// [`cache`]): a process that has entered before (its entry found), and holds no other pin
/// (a call of the fast path encloses nothing that pins). Entering is then two loads and a
/// store (and the fence, in a process that does not receive the reclaimers' barriers),
/// leaving a store: what an ID costs above the loop is mostly this, the clock and the
/// reservation's CAS (benches/compare.sh).
#[inline(always)]
pub fn fast_slots() -> Option<PinnedSlots> {
    let entry = OWN_ENTRY.load(Ordering::Relaxed);
    if entry.is_null() || PINS.load(Ordering::Relaxed) != 0 {
        return None;
    }
    let slots = slots()?;
    // SAFETY: the entry is set (by the first entry) to one of the phases' entries, which,
    // with their counter, live in shared memory as long as the process.
    let entry = unsafe { Entry::new(&*PHASES.load(Ordering::Relaxed), &*entry) };
    if RECEIVES_BARRIERS.load(Ordering::Relaxed) {
        debug_assert!(
            BARRIERS.load(Ordering::Relaxed),
            "a registered entry needs the barrier"
        );
        entry.enter_registered();
    } else {
        entry.enter();
    }
    PINS.store(1, Ordering::Relaxed);
    Some(PinnedSlots {
        slots: Slots::new(slots),
        entry,
    })
}

/// The table's slots, with the backend in the current phase while it lives (see
/// [`fast_slots`]).
pub struct PinnedSlots {
    slots: Slots<'static>,
    entry: Entry<'static>,
}

impl PinnedSlots {
    #[inline(always)]
    pub fn slots(&self) -> Slots<'_> {
        self.slots
    }
}

impl Drop for PinnedSlots {
    #[inline(always)]
    fn drop(&mut self) {
        PINS.store(0, Ordering::Relaxed);
        self.entry.exit();
    }
}

#[inline(always)]
fn phases() -> Option<Phases<'static>> {
    let ptr = PHASES.load(Ordering::Acquire);
    if ptr.is_null() {
        return None;
    }
    let entries = PHASE_ENTRIES.load(Ordering::Relaxed);
    // SAFETY: ptr points at 1 + `entries` zero-initialised atomics in shared memory that
    // lives as long as the process.
    unsafe {
        Some(Phases::new(
            &*ptr,
            std::slice::from_raw_parts(ptr.add(1), entries),
            BARRIERS
                .load(Ordering::Relaxed)
                .then_some(membarrier::global as Barrier),
        ))
    }
}

/// How many live [`Pinned`] this backend has (calls may nest: a first use reads tables whose
/// DEFAULT may generate); more than none only while its phase entry is set. Process-local: a
/// backend is one thread.
static PINS: AtomicUsize = AtomicUsize::new(0);
/// This process's entry among the phases, once it has entered (see [`my_entry`]); until then
/// [`NOT_YET`], and the next entry registers what a first entry must.
static ME: AtomicUsize = AtomicUsize::new(NOT_YET);
const NOT_YET: usize = usize::MAX;
static CALLBACKS: AtomicBool = AtomicBool::new(false);
/// Whether this process is registered for the reclaimers' barriers, and enters without a
/// fence (see `core::reclamation`).
static RECEIVES_BARRIERS: AtomicBool = AtomicBool::new(false);
/// This process's entry among the phases (null until its first entry): what [`fast_slots`]
/// enters.
static OWN_ENTRY: AtomicPtr<AtomicU64> = AtomicPtr::new(null_mut());
/// Whether the reclaimers of this server make global barriers: decided once in the
/// postmaster, before any process that uses the cache is forked, so that every process
/// agrees (a reader enters without a fence only where every reclaimer makes the barrier).
static BARRIERS: AtomicBool = AtomicBool::new(false);

/// This process's entry among the phases (and its holder of values in flight): its PGPROC
/// number.
#[inline]
pub fn my_entry() -> Option<usize> {
    match ME.load(Ordering::Relaxed) {
        NOT_YET => my_proc_number(),
        me => Some(me),
    }
}

fn my_proc_number() -> Option<usize> {
    #[cfg(feature = "pg15")]
    // SAFETY: MyProc is NULL or this process's PGPROC.
    let n = unsafe { pg_sys::MyProc.as_ref().map(|p| p.pgprocno) };
    #[cfg(not(feature = "pg15"))]
    // SAFETY: a plain read of a process-global, -1 (INVALID_PROC_NUMBER) without a PGPROC.
    let n = Some(unsafe { pg_sys::MyProcNumber });
    n.and_then(|n| usize::try_from(n).ok())
}

#[inline(always)]
fn enter(phases: &Phases<'_>) {
    let me = ME.load(Ordering::Relaxed);
    if me == NOT_YET {
        return first_entry(phases);
    }
    if !enter_at(phases, me) {
        no_entry();
    }
}

/// Enters `me` the cheapest way this process may (see `core::reclamation`).
#[inline(always)]
fn enter_at(phases: &Phases<'_>, me: usize) -> bool {
    if RECEIVES_BARRIERS.load(Ordering::Relaxed) {
        phases.enter_registered(me)
    } else {
        phases.enter(me)
    }
}

/// What this process does before it first enters: the callbacks that leave, and receiving
/// the reclaimers' barriers where the server offers them; then it enters.
#[cold]
fn first_entry(phases: &Phases<'_>) {
    if !CALLBACKS.load(Ordering::Relaxed) {
        // SAFETY: registered once per process (marked only once both are: an ERROR in
        // between tries again at the next entry, and a second transaction callback only
        // leaves twice); the callbacks live as long as the process.
        unsafe {
            pg_sys::RegisterXactCallback(Some(at_transaction_end), null_mut());
            pg_sys::before_shmem_exit(Some(at_exit), pg_sys::Datum::from(0));
        }
        CALLBACKS.store(true, Ordering::Relaxed);
        let receives = BARRIERS.load(Ordering::Relaxed) && membarrier::register();
        RECEIVES_BARRIERS.store(receives, Ordering::Relaxed);
    }
    let Some(me) = my_proc_number().filter(|&me| enter_at(phases, me)) else {
        no_entry()
    };
    ME.store(me, Ordering::Relaxed);
    // Entered at `me`, so the phases (the counter, then the entries) have entry `me`.
    OWN_ENTRY.store(
        PHASES.load(Ordering::Relaxed).wrapping_add(1 + me),
        Ordering::Relaxed,
    );
}

#[cold]
fn no_entry() -> ! {
    error(
        Code::ERRCODE_INTERNAL_ERROR,
        "this process has no entry among the snowflake_id phases",
    )
    .raise()
}

/// Enters the current phase again, if the caller's is this backend's only pin: slots evicted
/// since it entered may then take new sequences without waiting for its call to end. Only
/// where the caller holds no slot between a check of its generation and its use (entering a
/// sequence into the cache, which may wait for others to leave it). With an outer call of
/// this backend pinned too (a first use whose reading of tables generates), it may hold a
/// slot, and nothing changes.
pub fn refresh_phase() {
    if PINS.load(Ordering::Relaxed) == 1 {
        if let Some(phases) = phases() {
            enter_at(&phases, ME.load(Ordering::Relaxed));
        }
    }
}

/// Leaves the phase whatever the pins (the end of the transaction, of the process).
fn leave() {
    if PINS.load(Ordering::Relaxed) != 0 {
        PINS.store(0, Ordering::Relaxed);
        if let Some(phases) = phases() {
            phases.exit(ME.load(Ordering::Relaxed));
        }
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn at_transaction_end(event: pg_sys::XactEvent::Type, _arg: *mut c_void) {
    use pg_sys::XactEvent::*;
    if matches!(
        event,
        XACT_EVENT_COMMIT
            | XACT_EVENT_ABORT
            | XACT_EVENT_PREPARE
            | XACT_EVENT_PARALLEL_COMMIT
            | XACT_EVENT_PARALLEL_ABORT
    ) {
        // Every call has ended by now; should a pin have been lost on the way, it must not
        // keep the cache's evicted slots from reuse for the rest of the backend's life.
        leave();
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn at_exit(_code: std::ffi::c_int, _arg: pg_sys::Datum) {
    leave();
}
