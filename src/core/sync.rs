//! The atomics of the lock-free core: `std`'s, or, built with `RUSTFLAGS="--cfg loom"`, the
//! model checker loom's, so that the models in `loom_models` run the real code of every
//! protocol (the tick, gdid counters, the cache and its reclamation, values in flight, the
//! claim slot, sightings) under every interleaving and every weak ordering the Rust/C11
//! memory model allows.
//!
//! PURE: no pgrx here. Without the cfg everything here is `std`'s own type or an
//! `#[inline(always)]` call of it: the production code is the same machine code.
//!
//! Under loom, `AtomicU32` and `AtomicI64` are kept in a loom `AtomicU64`: a slot's state words
//! are laid over an array of `AtomicU64` (see `cache::SlotState`), and under loom an atomic is
//! a handle to the checker's object, not its bytes, so every atomic a kind's state holds must
//! be the same type as the words beneath it.

#[cfg(not(loom))]
pub use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64};

#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64};
#[cfg(loom)]
pub use model::{AtomicI64, AtomicU32};

pub use std::sync::atomic::{compiler_fence, Ordering};

/// A busy wait's pause; under loom, a yield, so that the checker runs the thread waited for.
#[inline(always)]
pub fn spin_loop() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::hint::spin_loop();
}

/// Nothing, except under loom, where it lets the checker run another thread: for a loop
/// that re-reads atomics a bounded number of times without pausing (it would otherwise
/// explore every one of its iterations against every other thread's steps).
#[inline(always)]
pub fn model_yield() {
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// A cell written by one owner while no one else can read it, ordered by atomics around it:
/// `std`'s, or loom's, which checks that every access is ordered after the last write.
#[cfg(not(loom))]
#[repr(transparent)]
pub struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    #[inline(always)]
    pub fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Reads through a pointer that is valid while `f` runs.
    #[inline(always)]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Writes through a pointer that is valid while `f` runs.
    #[inline(always)]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub use loom::cell::UnsafeCell;

#[cfg(loom)]
mod model {
    use super::Ordering;
    use loom::sync::atomic::AtomicU64;

    /// An `AtomicU32` kept in a loom `AtomicU64` (see the module's comment). The models never
    /// wrap it around.
    #[repr(transparent)]
    #[derive(Debug, Default)]
    pub struct AtomicU32(AtomicU64);

    impl AtomicU32 {
        pub fn new(v: u32) -> Self {
            AtomicU32(AtomicU64::new(u64::from(v)))
        }

        fn narrow(v: u64) -> u32 {
            u32::try_from(v).expect("a model's u32 atomic wrapped around")
        }

        #[track_caller]
        pub fn load(&self, order: Ordering) -> u32 {
            Self::narrow(self.0.load(order))
        }

        #[track_caller]
        pub fn store(&self, v: u32, order: Ordering) {
            self.0.store(u64::from(v), order)
        }

        #[track_caller]
        pub fn swap(&self, v: u32, order: Ordering) -> u32 {
            Self::narrow(self.0.swap(u64::from(v), order))
        }

        #[track_caller]
        pub fn compare_exchange(
            &self,
            current: u32,
            new: u32,
            success: Ordering,
            failure: Ordering,
        ) -> Result<u32, u32> {
            self.0
                .compare_exchange(u64::from(current), u64::from(new), success, failure)
                .map(Self::narrow)
                .map_err(Self::narrow)
        }

        #[track_caller]
        pub fn compare_exchange_weak(
            &self,
            current: u32,
            new: u32,
            success: Ordering,
            failure: Ordering,
        ) -> Result<u32, u32> {
            self.compare_exchange(current, new, success, failure)
        }

        #[track_caller]
        pub fn fetch_add(&self, v: u32, order: Ordering) -> u32 {
            Self::narrow(self.0.fetch_add(u64::from(v), order))
        }

        #[track_caller]
        pub fn fetch_sub(&self, v: u32, order: Ordering) -> u32 {
            Self::narrow(self.0.fetch_sub(u64::from(v), order))
        }

        #[track_caller]
        pub fn fetch_or(&self, v: u32, order: Ordering) -> u32 {
            Self::narrow(self.0.fetch_or(u64::from(v), order))
        }

        #[track_caller]
        pub fn fetch_max(&self, v: u32, order: Ordering) -> u32 {
            Self::narrow(self.0.fetch_max(u64::from(v), order))
        }
    }

    /// An `AtomicI64` kept in a loom `AtomicU64`, two's complement (wrapping additions are the
    /// same); `fetch_max` compares as signed.
    #[repr(transparent)]
    #[derive(Debug, Default)]
    pub struct AtomicI64(AtomicU64);

    impl AtomicI64 {
        pub fn new(v: i64) -> Self {
            AtomicI64(AtomicU64::new(v as u64))
        }

        #[track_caller]
        pub fn load(&self, order: Ordering) -> i64 {
            self.0.load(order) as i64
        }

        #[track_caller]
        pub fn store(&self, v: i64, order: Ordering) {
            self.0.store(v as u64, order)
        }

        #[track_caller]
        pub fn compare_exchange(
            &self,
            current: i64,
            new: i64,
            success: Ordering,
            failure: Ordering,
        ) -> Result<i64, i64> {
            self.0
                .compare_exchange(current as u64, new as u64, success, failure)
                .map(|v| v as i64)
                .map_err(|v| v as i64)
        }

        #[track_caller]
        pub fn fetch_add(&self, v: i64, order: Ordering) -> i64 {
            self.0.fetch_add(v as u64, order) as i64
        }

        /// One read-modify-write, as `std`'s; the models keep these values non-negative, where
        /// signed and unsigned order agree.
        #[track_caller]
        pub fn fetch_max(&self, v: i64, order: Ordering) -> i64 {
            assert!(v >= 0, "a model's i64 fetch_max takes non-negative values");
            self.0.fetch_max(v as u64, order) as i64
        }
    }
}
