//! Shared memory: the slot table, the lease lock, and the sightings of logical replication
//! (see `observe`). The table's size comes from `snowflake.max_sequences`, so it is requested
//! and attached with PostgreSQL's hooks directly (`pg_shmem_init!` only sizes Rust types known
//! at compile time).

use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use pgrx::pg_guard;
use pgrx::pg_sys;

use crate::registry::{Registry, Slot};
use crate::sightings::Sightings;
use crate::{errors, guc};

static SLOTS: AtomicPtr<Slot> = AtomicPtr::new(null_mut());
static SIGHTINGS: AtomicPtr<Sightings> = AtomicPtr::new(null_mut());
static LEASE_LOCK: AtomicPtr<pg_sys::LWLock> = AtomicPtr::new(null_mut());
static SLOT_COUNT: AtomicUsize = AtomicUsize::new(0);

static mut PREV_SHMEM_REQUEST_HOOK: pg_sys::shmem_request_hook_type = None;
static mut PREV_SHMEM_STARTUP_HOOK: pg_sys::shmem_startup_hook_type = None;
/// What fills freshly created shared memory (the lease file's contents, see `lib.rs`).
static mut ON_CREATE: Option<fn(&Registry<'static>)> = None;

const SEGMENT_NAME: &std::ffi::CStr = c"snowflake_id sequences";
const SIGHTINGS_NAME: &std::ffi::CStr = c"snowflake_id sightings";
const TRANCHE_NAME: &std::ffi::CStr = c"snowflake_id";

fn table_size() -> usize {
    std::mem::size_of::<Slot>() * guc::MAX_SEQUENCES.get() as usize
}

/// Installs the hooks. Called from `_PG_init` while preloading, after the settings exist;
/// `on_create` runs whenever the table is created afresh, before any backend exists.
pub fn install_hooks(on_create: fn(&Registry<'static>)) {
    // SAFETY: _PG_init runs once, single-threaded, in the postmaster; chaining the previous
    // hooks is how PostgreSQL expects several libraries to share them.
    unsafe {
        ON_CREATE = Some(on_create);
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
            pg_sys::RequestAddinShmemSpace(size_of::<Sightings>());
            pg_sys::RequestNamedLWLockTranche(TRANCHE_NAME.as_ptr(), 1);
        })
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_startup() {
    // SAFETY: ShmemInitStruct is called under AddinShmemInitLock as PostgreSQL requires; the
    // memory it returns is ours for table_size() bytes, and zeroed memory is an empty table
    // (registry.rs). Run in the postmaster (and after a crash restart), before any backend;
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
        SLOT_COUNT.store(guc::MAX_SEQUENCES.get() as usize, Ordering::Relaxed);
        SLOTS.store(ptr.cast(), Ordering::Release);
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
        let tranche = pg_sys::GetNamedLWLockTranche(TRANCHE_NAME.as_ptr());
        LEASE_LOCK.store(&raw mut (*tranche).lock, Ordering::Release);
        if !found {
            // Fresh shared memory (server start, or re-initialisation after a crash):
            // what the lease file says was handed out comes first.
            if let Some(fill) = ON_CREATE {
                fill(&registry().expect("just attached"));
            }
        }
        pg_sys::LWLockRelease(init_lock);
    }
}

/// The lock that serialises lease extensions (see `durable`).
pub fn lease_lock() -> *mut pg_sys::LWLock {
    LEASE_LOCK.load(Ordering::Acquire)
}

/// The sightings of logical replication, or `None` when the library was not preloaded.
#[inline]
pub fn sightings() -> Option<&'static Sightings> {
    // SAFETY: NULL, or the zero-initialised Sightings in shared memory, which lives as long
    // as the process and is only changed through atomics.
    unsafe { SIGHTINGS.load(Ordering::Acquire).as_ref() }
}

/// The table, or `None` when the library was not preloaded.
pub fn registry() -> Option<Registry<'static>> {
    let ptr = SLOTS.load(Ordering::Acquire);
    if ptr.is_null() {
        return None;
    }
    let len = SLOT_COUNT.load(Ordering::Relaxed);
    // SAFETY: ptr points at `len` initialised slots in shared memory that lives as long as
    // the process; Slot is Sync and all its mutation goes through atomics.
    Some(Registry::new(unsafe {
        std::slice::from_raw_parts(ptr, len)
    }))
}
