//! xccd: exact cover with color controls.
//!
//! The layers point one way: [`xcc`] is the pure, synchronous engine (no
//! async runtime, no network); everything else is built on it.
pub mod puzzles;
pub mod service;
pub mod xcc;
