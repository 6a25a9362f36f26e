//! PURE: the gdid half: the 12-byte value, its encodings, counters, a sequence's state.

pub mod compact;
pub mod counter;
#[cfg(all(test, not(loom)))]
mod fuzz;
pub mod gdid_slot;
pub mod uuid_v8;
pub mod value;
