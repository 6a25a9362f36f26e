//! The snowflake half: 64-bit time-ordered IDs.

mod callsite;
pub mod clock;
pub mod epoch;
pub mod generator;
pub mod layout;
mod sql;
pub mod wallclock;
