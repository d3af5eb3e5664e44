//! The engine: problem model, Knuth's DLX text format, and the dancing-links
//! search (Algorithms X, C and M) with splittable subtree tasks.
mod cells;
pub mod dlx_format;
mod links;
pub mod problem;
pub mod search;
pub mod task;
#[cfg(test)]
pub(crate) mod testing;

pub use problem::{Problem, ProblemBuilder, ProblemError};
pub use search::{
    Collect, CountOnly, Engine, Flow, Layout, Outcome, PathNode, ProgressView, Request, RunConfig,
    SolutionView, Solver, Stats, Status, TaskError, UnsupportedEngine, Visitor,
};
pub use task::{Cut, Decision, Task, ALL};
