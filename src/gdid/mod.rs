//! The gdid half: a 12-byte global distributed ID type and its generator.

pub mod compact;
pub mod counter;
mod datum;
#[cfg(test)]
mod fuzz;
mod ops;
mod sql;
pub mod value;
