//! The gdid half: a 12-byte global distributed ID type and its generator.

pub mod compact;
pub mod counter;
pub mod datum;
#[cfg(test)]
mod fuzz;
pub mod handle;
pub(crate) mod ops;
pub(crate) mod sql;
pub mod value;
