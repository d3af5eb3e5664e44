//! The engine: problem model, Knuth's DLX text format, and two searches with
//! splittable subtree tasks: dancing links (Algorithms X, C and M) and
//! dancing cells (Algorithms C and M on sparse sets), memoized counting into ZDDs
//! (DLX6), and the k cheapest solutions of options with costs (DLX5).
//!
//! The searches' rooms: `vocabulary` (what every engine takes and reports),
//! `task_run` (the task-range bookkeeping every engine shares), the engines
//! (`search` on `links`, `cells`, `cells_mcc`: none names another), and the
//! `Solver` front (`solver`) that builds one of them.
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
mod search;
mod solver;
pub mod task;
mod task_run;
#[cfg(test)]
pub(crate) mod testing;
pub mod verifier;
pub mod vocabulary;
pub mod zdd;

pub use problem::{Problem, ProblemBuilder, ProblemError};
pub use solver::{Layout, Solver, UnsupportedEngine};
pub use task::{Cut, Decision, Task, ALL};
pub use vocabulary::{
    Collect, CountOnly, Engine, Flow, Order, Outcome, PathNode, Probe, ProbeEnd, ProgressView,
    Request, RunConfig, RunError, SolutionView, Stats, Status, TaskError, Visitor,
    MAX_POLL_INTERVAL, POLL_INTERVAL,
};
