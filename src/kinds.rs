//! What a slot's sequence is, for the code that handles either kind alike: how recovery
//! restores a lease into it and reads one back, and how a drop closes it.

use crate::durable::kinds::Kinds;
use crate::durable::record::Lease;
use crate::gdid::counter::GdidState;
use crate::registry::{Registry, SlotRef};
use crate::shmem;
use crate::snowflake::handle::SnowflakeState;

fn restore(registry: &Registry<'_>, at: SlotRef, lease: Lease) {
    if let Some(seq) = registry.seq::<SnowflakeState>(at) {
        seq.restore(lease);
    } else if let Some(seq) = registry.seq::<GdidState>(at) {
        seq.restore(lease);
    }
}

fn lease(registry: &Registry<'_>, at: SlotRef) -> Lease {
    registry
        .seq::<SnowflakeState>(at)
        .map(|s| s.lease())
        .or_else(|| registry.seq::<GdidState>(at).map(|g| g.lease()))
        .unwrap_or_default()
}

fn close(registry: &Registry<'_>, at: SlotRef) {
    if let Some(seq) = registry.dropped::<SnowflakeState>(at) {
        seq.close();
    } else if let Some(seq) = registry.dropped::<GdidState>(at) {
        seq.close();
    }
}

/// How recovery and drops handle either kind of sequence.
pub const KINDS: Kinds = Kinds {
    restore,
    lease,
    close,
    registry: shmem::recovery_registry,
};
