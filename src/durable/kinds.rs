//! What the durable state asks of a slot's sequence, whatever its kind: restoring a lease
//! into it, reading its lease back, closing it when it is dropped. The kinds' answers are
//! registered once at start-up (`crate::kinds`), since this layer knows neither kind.

use std::sync::OnceLock;

use super::record::Lease;
use crate::registry::{Registry, SlotRef};

/// What recovery and drops ask of a slot, whatever its kind.
pub struct Kinds {
    /// Raises the state of the sequence to at least the lease (never lowers it).
    pub restore: fn(&Registry<'_>, SlotRef, Lease),
    /// The lease the sequence holds now.
    pub lease: fn(&Registry<'_>, SlotRef) -> Lease,
    /// Closes a sequence just dropped: nothing more is handed out from it.
    pub close: fn(&Registry<'_>, SlotRef),
    /// Shared memory, in the processes that replay the WAL.
    pub registry: fn() -> Option<Registry<'static>>,
}

static KINDS: OnceLock<Kinds> = OnceLock::new();

/// Registers the kinds' answers. Only while preloading.
pub fn register(kinds: Kinds) {
    let _ = KINDS.set(kinds);
}

pub fn kinds() -> &'static Kinds {
    KINDS.get().expect("registered in _PG_init")
}

/// Closes sequence `at`, just dropped.
pub fn close(registry: &Registry<'_>, at: SlotRef) {
    (kinds().close)(registry, at)
}
