//! The engine: problem model, Knuth's DLX text format, and two searches with
//! splittable subtree tasks: dancing links (Algorithms X, C and M) and
//! dancing cells (Algorithms C and M on sparse sets), memoized counting into ZDDs
//! (DLX6), and the k cheapest solutions of options with costs (DLX5).
mod cells;
mod cells_mcc;
pub mod cheapest;
pub mod dlx_format;
pub mod estimate;
mod links;
pub mod memo;
pub mod memory;
pub mod preprocess;
pub mod problem;
pub mod search;
pub mod task;
#[cfg(test)]
pub(crate) mod testing;
pub mod zdd;

pub use problem::{Problem, ProblemBuilder, ProblemError};
pub use search::{
    Collect, CountOnly, Engine, Flow, Layout, Order, Outcome, PathNode, Probe, ProbeEnd,
    ProgressView, Request, RunConfig, RunError, SolutionView, Solver, Stats, Status, TaskError,
    UnsupportedEngine, Visitor, MAX_POLL_INTERVAL, POLL_INTERVAL,
};
pub use task::{Cut, Decision, Task, ALL};
