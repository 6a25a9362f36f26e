//! The snowflake half: 64-bit time-ordered IDs.

pub mod clock;
pub mod epoch;
pub mod handle;
pub mod layout;
pub(crate) mod sql;
