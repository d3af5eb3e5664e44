#![allow(dead_code)]
//! Shared test code: a seeded random source, and an independent
//! brute-force oracle for every puzzle kind.
//!
//! The oracle ([`oracle`]) knows nothing of XCC and calls nothing in
//! `xccd` (it names only the plain types `Kind`, `FutoshikiEncoding` and
//! `EncodeOptions`): it reads the puzzle texts with its own readers, solves
//! them by plain backtracking over each puzzle's rules, and prints every
//! solution exactly as the library's decoders do, so that
//! `brute_solutions(&case)` can be compared with a set of decoded strings
//! directly.
//!
//! The per-kind modules hold the brute-force solvers, random generators,
//! writers and readers of the text formats, and the renderers; the tests of
//! `puzzles_a.rs` and `puzzles_b.rs` use them too (one copy of each brute
//! force in the tree).
//!
//! Beside them: [`fixtures`] (the benchmark instances, and every solution
//! of a problem found in process), [`cluster`] (a coordinator and worker
//! processes on loopback), [`coordinators`] (coordinators on one PostgreSQL
//! store, their health and the leader's client), [`live`] (the same as processes, with their
//! `/metrics` pages, and promtool), [`promql`] (the metric names of a
//! PromQL expression), [`postgres`] (a real PostgreSQL server of the
//! test's own) and [`random_problems`] (the random XCC problems
//! of the property tests).
//!
//! Include with `mod common;` from a test crate.

pub mod cluster;
pub mod coordinators;
pub mod dominoes;
pub mod fixtures;
pub mod futoshiki;
pub mod hidato;
pub mod hitori;
pub mod in_process;
pub mod latin;
pub mod live;
pub mod oracle;
pub mod packed;
pub mod postgres;
pub mod promql;
pub mod queens;
pub mod random_problems;
pub mod rng;
pub mod service;
pub mod slitherlink;
pub mod sudoku;

// Not every test crate uses every re-export.
#[allow(unused_imports)]
pub use oracle::{brute_solutions, brute_solutions_up_to, random_case, Case, MAX_SOLUTIONS};
#[allow(unused_imports)]
pub use rng::Rng;
