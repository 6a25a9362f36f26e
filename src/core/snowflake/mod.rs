//! PURE: the snowflake half: bit layouts, the epoch, the generator step, a sequence's state.

pub mod clock;
pub mod epoch;
pub mod forms;
pub mod handle;
pub mod layout;
pub mod uuid;
