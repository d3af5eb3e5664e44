//! xccd: exact cover with color controls.
//!
//! The layers point one way: [`xcc`] is the pure, synchronous engine (no
//! async runtime, no network); [`run`] runs one task of it for any caller
//! (skip and catch-up, side conditions, batching, how a run ended) and keeps
//! the books of a run, still without I/O; [`puzzles`] encodes puzzles as
//! problems with side conditions; [`service`] schedules and transports
//! tasks (the pool, gRPC, remote workers).
pub mod puzzles;
pub mod run;
pub mod service;
pub mod xcc;
