//! PURE: the snowflake half: bit layouts, the epoch, the generator step, a sequence's state.

pub mod clock;
pub mod epoch;
pub mod layout;
pub mod snowflake_slot;
pub mod text_forms;
pub mod uuid_v7;
