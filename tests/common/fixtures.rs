//! Fixtures the service tests share: the benchmark instances by name, and
//! every solution of a problem found in this process by the engine alone
//! (the reference a server's, a cluster's or a store's answers are compared
//! with).

use std::collections::BTreeSet;
use std::path::PathBuf;

use xccd::xcc::{Collect, Problem, RunConfig, Solver, Task};

/// The text of `bench/instances/NAME.dlx`.
pub fn instance(name: &str) -> String {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/instances"))
        .join(format!("{name}.dlx"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of `bench/PATH.dlx` (`costs/assign8`, `memo/domino4x7`).
pub fn bench(path: &str) -> String {
    let path =
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/bench")).join(format!("{path}.dlx"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every solution of `problem`, each its option indices in the order the
/// engine chose them, by one run of the root task in this process.
pub fn all_solutions(problem: &Problem) -> BTreeSet<Vec<u32>> {
    let mut collect = Collect::default();
    Solver::new(problem)
        .run(&Task::root(), &RunConfig::default(), &mut collect)
        .expect("the root task is valid");
    collect
        .solutions
        .iter()
        .map(|s| s.iter().map(|&o| o as u32).collect())
        .collect()
}
