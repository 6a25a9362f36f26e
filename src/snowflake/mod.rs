//! The snowflake half: 64-bit time-ordered IDs.

pub mod clock;
pub mod epoch;
pub mod layout;
pub mod sequence;
pub(crate) mod sql;
pub mod wallclock;
