//! A sequence leaving the durable state: dropped from the table, closed, its record cleared
//! from the lease file, and (outside recovery) logged so that standbys drop it too. The
//! commit of a drop and `DROP DATABASE` (see `dropping`) and WAL replay of such a record come
//! here.

use super::file::write_failed;
use super::kinds::close;
use super::record::{Lease, LeaseRecord};
use super::store::Store;
use super::wal;
use crate::registry::{Registry, SlotRef};

/// Drops sequence `at`: lookups no longer find it, nothing more is handed out from it, its
/// record is cleared from the lease file (so the next start does not bring it back), and,
/// outside recovery, the drop is logged so that standbys drop it too. The caller holds the
/// lease lock, or is replaying.
pub fn forget(registry: &Registry<'_>, at: SlotRef) {
    let slot = registry.slot(at.idx);
    if slot.generation() != at.generation || !registry.drop_slot(at.idx) {
        return;
    }
    close(registry, at);
    let store = Store::in_data_dir();
    if let Err(e) = store.clear(at.idx) {
        write_failed(&store, &e).raise();
    }
    // SAFETY: a plain call that reads shared state.
    if !unsafe { pgrx::pg_sys::RecoveryInProgress() } {
        wal::log_forget_and_flush(&LeaseRecord::new(
            slot.key(),
            slot.created_with(),
            Lease::default(),
        ));
    }
}
