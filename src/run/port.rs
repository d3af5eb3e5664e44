//! What a run and the one who runs it say to each other: what is asked of
//! a run ([`RunSpec`]), the [`Port`] its solutions go through and that tells
//! it what to do ([`Batch`], [`Taken`], [`Control`]), and how it ended
//! ([`RunEnd`], [`RunReport`]). Every way of running a task
//! ([`super::run_task`], [`super::run_memo`], [`super::run_cheapest`]) speaks
//! it; it runs nothing itself.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::Solutions;
use crate::xcc::{ProgressView, Stats, Task};

/// How one run of a task goes.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// Solutions of the task that earlier runs delivered: they are found
    /// again but not delivered, and no work leaves the run before it has
    /// found them (see the module's documentation).
    pub skip: u64,
    /// Deliver at most this many solutions, then stop.
    pub limit: Option<u64>,
    /// Explore at most this many nodes, then stop.
    pub max_nodes: Option<u64>,
    /// Deliver each solution's options, or only how many there are.
    pub want_solutions: bool,
    /// Most solutions in one batch.
    pub batch_size: usize,
    /// How long found solutions may wait for a full batch before they are
    /// delivered anyway (looked at every poll): zero delivers at every poll.
    pub max_delay: Duration,
    /// Nodes between two polls of the port.
    pub poll_interval: u64,
    /// Count the nodes of each level ([`Stats::profile`]).
    pub profile: bool,
    /// Set from elsewhere to stop the run within `poll_interval` nodes.
    pub stop: Option<Arc<AtomicBool>>,
    /// Count by memoized search instead ([`super::run_memo`]): the root
    /// task only, count-only, never split.
    pub memo: Option<MemoRun>,
    /// Find this many cheapest solutions instead (Knuth's DLX5,
    /// [`super::run_cheapest`]): the root task only, never split, its
    /// solutions delivered when the search ends.
    pub cheapest: Option<usize>,
}

/// A memoized count's limit (the most bytes its cache and ZDD may take),
/// and whether it may give up its cache where it does not pay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoRun {
    pub memory_limit: Option<u64>,
    /// Judge whether the cache pays ([`crate::xcc::memo::MemoConfig::probe`])
    /// and count with the plain search where it does not (the port hears
    /// of it, [`Port::memo_declined`]). Off (the service), DLX6's search
    /// to the end.
    pub probe: bool,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            skip: 0,
            limit: None,
            max_nodes: None,
            want_solutions: true,
            batch_size: 256,
            max_delay: Duration::ZERO,
            poll_interval: crate::xcc::POLL_INTERVAL,
            profile: false,
            stop: None,
            memo: None,
            cheapest: None,
        }
    }
}

/// Solutions on their way out of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    /// The index, in the task's own solution order, of the first solution.
    pub first: u64,
    /// How many solutions the batch stands for.
    pub count: u64,
    /// Their options, when the run delivers them (else empty).
    pub solutions: Solutions,
}

/// What a port did with a batch.
#[derive(Debug)]
pub enum Taken {
    /// Delivered.
    All,
    /// No room now: the run keeps the batch, offers it again at its next
    /// poll and, as soon as it may, checkpoints to free its thread.
    Refused(Batch),
    /// Delivered as far as wanted (a limit was reached, or the consumer is
    /// gone): the run stops.
    Stop,
}

/// What a transport asks of a run when it polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Continue,
    /// Give part of the remaining work away (someone is idle). Advice: a
    /// run that has not caught up with its skip ignores it.
    GiveAway,
    /// Stop and hand back all the remaining work (time slice, draining);
    /// deferred until the run has caught up.
    Checkpoint,
    /// Hand the work back as soon as possible: a checkpoint when caught
    /// up, else stop at once and have the task run again as it was.
    Release,
    /// Stop; the remaining work is not wanted.
    Stop,
}

/// Where a run's results go, and who tells it what to do: the one thing
/// each way of running a task provides.
///
/// Only [`Port::deliver`] must be written: a port that runs a task alone on
/// its thread (the CLI, [`crate::puzzles::solve`]) lets the run go on at
/// every poll and never asks for a give-away, which the defaults say; for
/// such a port made of one closure, see [`Sink`].
pub trait Port {
    /// Takes a batch. `force` is set when the run has ended: the batch
    /// must then be taken whatever the room.
    fn deliver(&mut self, batch: Batch, force: bool) -> Taken;
    /// Called every `poll_interval` nodes. By default the run goes on.
    fn control(&mut self, _progress: &ProgressView<'_>) -> Control {
        Control::Continue
    }
    /// Part of the task now belongs to `task` (after a [`Control::GiveAway`];
    /// the solutions found before it were offered first). `found`: the
    /// solutions the run had found, the skipped ones included.
    ///
    /// Called only after this port's own [`Port::control`] answered
    /// [`Control::GiveAway`]: a port that ever answers it must take the task
    /// here (it would be lost otherwise). The default, for ports that never
    /// answer it, is never called.
    fn given_away(&mut self, _task: Task, _found: u64) {}
    /// A memoized count with [`MemoRun::probe`] found that its cache does
    /// not pay: the plain search counts instead, from the root, through
    /// this port. By default nothing is said.
    fn memo_declined(&mut self, _verdict: &crate::xcc::memo::Verdict) {}
}

/// A port made of a closure that takes each batch (its answer is the
/// port's, [`Taken`]); the run goes on at every poll and never gives work
/// away. As ripgrep's `sinks` make a searcher's sink of a closure.
pub struct Sink<F>(pub F);

impl<F: FnMut(Batch) -> Taken> Port for Sink<F> {
    fn deliver(&mut self, batch: Batch, _force: bool) -> Taken {
        (self.0)(batch)
    }
}

/// Why a run stopped before exploring its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The port or the stop flag asked.
    Asked,
    /// The run delivered [`RunSpec::limit`] solutions.
    SolutionLimit,
    /// The run explored [`RunSpec::max_nodes`] nodes.
    NodeLimit,
}

/// How a run ended: the one type for it, whatever ran the task.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// Every alternative of the task was explored.
    Exhausted,
    /// Stopped with its unexplored work, as tasks in search order.
    Checkpointed(Vec<Task>),
    /// Stopped; the unexplored work is dropped.
    Stopped(Stop),
    /// Stopped before it had caught up with its skip: the task runs again
    /// as it was.
    Released,
    /// The task cannot be run (it names no node of the tree), or the run
    /// panicked: the job fails with this message.
    Failed(String),
    /// The run could not get the memory its search needs: an allocation
    /// of the engine failed, or (on a worker) the task's engine passes the
    /// worker's limit. The job fails with RESOURCE_EXHAUSTED; the process
    /// goes on.
    OutOfMemory(String),
}

/// A run's end and statistics, and its solutions: how many it found (the
/// skipped ones included) and how many new ones the port took.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub end: RunEnd,
    pub stats: Stats,
    pub found: u64,
    pub delivered: u64,
    /// The exact count in decimal when it passes `u64::MAX` (a memoized
    /// count of a problem with that many solutions): `found` and the
    /// delivered count then hold `u64::MAX`.
    pub exact_count: Option<String>,
}
