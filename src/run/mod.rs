//! Running one task: the layer between the engine and every way of running
//! a search.
//!
//! The CLI, [`crate::puzzles::solve`], the pool's threads and remote workers
//! all run tasks through [`run_task`], and the pool and the coordinator both
//! keep each run's books with a [`Ledger`]. What a way of running differs in
//! (where solutions go, what it asks of a run, whether its reports can be
//! trusted) is the [`Port`] it hands in; everything else is here, once:
//!
//! - **Skip and catch-up.** A task run again after its worker was lost finds
//!   the solutions delivered before once more; they are dropped, and no work
//!   leaves the run (give-away, checkpoint) before it has caught up with them,
//!   so the solution indices of the task stay the same on every run.
//! - **Side conditions.** Conditions that exact cover cannot express
//!   (connected cells, one loop) prune partial solutions and filter complete
//!   ones, through one trait, [`SideCondition`], that encoded puzzles
//!   implement.
//! - **Batching.** Solutions (or, when only counts are wanted, their number)
//!   go out in batches that carry the index of their first solution in the
//!   task's order.
//! - **Controls.** What a transport asks at a poll ([`Control`]) becomes the
//!   engine's request, deferred or refused as catch-up and backpressure
//!   demand.
//! - **How a run ended**: one type, [`RunEnd`].
//! - **Memoized counts** (Knuth's DLX6) run through the same ports
//!   ([`run_memo`], chosen by [`RunSpec::memo`]): root only, never split.
//!   So do searches for the cheapest solutions (Knuth's DLX5,
//!   [`run_cheapest`], chosen by [`RunSpec::cheapest`]).
//!
//! Like [`crate::xcc`], this layer is synchronous and does no I/O: no async
//! runtime, no network.

mod cheapest;
mod condition;
mod ledger;
mod memo;
mod port;
mod region;
mod runner;
mod solutions;
#[cfg(test)]
mod testing;

pub use cheapest::{cheapest_refusal, run_cheapest};
pub use condition::SideCondition;
pub use ledger::{
    verify_solution, Failure, Ledger, LedgerError, QueuedTask, RunPoint, Settlement, StoreCause,
};
pub use memo::{memo_refusal, run_memo};
pub use port::{Batch, Control, MemoRun, Port, RunEnd, RunReport, RunSpec, Sink, Stop, Taken};
pub use region::{check_task, Region};
pub use runner::{run_root, run_task};
pub use solutions::Solutions;

/// One solution as it travels: the chosen option indices, ascending.
pub type SolutionIndices = Vec<u32>;
