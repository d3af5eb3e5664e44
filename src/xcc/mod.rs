//! The engine: problem model, Knuth's DLX text format, and the dancing-links
//! search (Algorithms X, C and M) with splittable subtree tasks.
pub mod dlx_format;
pub mod estimate;
mod links;
pub mod problem;
pub mod search;
pub mod task;
#[cfg(test)]
pub(crate) mod testing;

pub use problem::{Problem, ProblemBuilder, ProblemError};
pub use search::{
    Collect, CountOnly, Flow, Layout, Outcome, PathNode, Probe, ProbeEnd, ProgressView, Request,
    RunConfig, SolutionView, Solver, Stats, Status, TaskError, Visitor,
};
pub use task::{Cut, Decision, Task, ALL};
