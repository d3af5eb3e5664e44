//! The local worker threads: each takes a task from the queue, runs it
//! through [`run_task`] with the pool's [`PoolPort`], and books its end.
//!
//! Owns a thread's loop, its cache of solvers and the port's translation of
//! the [`policy`]'s decision into a [`Control`]. It must not decide a run's
//! policy itself (the order of stop, checkpoint, give-away and yield is
//! [`policy::decide`]'s) nor pick tasks (see [`super::schedule`]).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

use super::policy::{self, Decision, RunAtPoll};
use super::progress::WorkerSlot;
use super::schedule::stalled;
use super::{Shared, TIME_SLICE};
use crate::run::{run_task, Batch, Control, Failure, Ledger, Port, QueuedTask, Settlement, Taken};
use crate::service::job::{EndReason, Job, JobId};
use crate::service::sync::Locked;
use crate::xcc::{ProgressView, Solver, Task};

/// Runs tasks until the pool shuts down.
pub(super) fn worker(shared: Arc<Shared>, index: usize) {
    // Solvers of the jobs this thread ran lately, to run their next tasks
    // without building the links again; a job's goes once the job ends.
    let mut solvers: HashMap<JobId, (Weak<Job>, Solver)> = HashMap::new();
    let mut yielded = false;
    while let Some((job, work, spent_nodes)) = shared.next_task(index, yielded) {
        let span = tracing::debug_span!("task", job = job.id, level = work.task.level());
        let _enter = span.enter();
        solvers.retain(|_, (job, _)| {
            job.upgrade()
                .is_some_and(|job| !job.is_stopping() && job.summary().is_none())
        });
        if solvers.len() >= 4 && !solvers.contains_key(&job.id) {
            solvers.clear();
        }
        let (_, solver) = solvers
            .entry(job.id)
            .or_insert_with(|| (Arc::downgrade(&job), job.new_solver()));
        let spec = job.run_spec(&work, spent_nodes, shared.poll_interval);
        let task = work.task.clone();
        let mut ledger = Ledger::new(work);
        let mut port = PoolPort {
            shared: &shared,
            job: &job,
            slot: &shared.slots[index],
            ledger: &mut ledger,
            started: Instant::now(),
            yielded: false,
        };
        let report = run_task(
            solver,
            job.searched(),
            &task,
            &spec,
            job.spec.condition.as_deref(),
            &mut port,
        );
        yielded = port.yielded;
        if let Some(exact) = report.exact_count.clone() {
            job.set_exact_count(exact);
        }
        let settlement = ledger
            .settle(report.end, report.found)
            .unwrap_or_else(|error| Settlement {
                failure: Some(Failure::Broken(format!(
                    "a local run reported what cannot be: {error}"
                ))),
                ..Settlement::default()
            });
        let mut state = shared.state.locked();
        // The run's nodes move from its slot to the job's books: never in
        // both (a poll reading between the two only undercounts).
        let slot = &shared.slots[index];
        slot.progress.reset();
        slot.job.store(0, Ordering::SeqCst);
        shared.book_run_end(&mut state, &job, &report.stats, settlement);
        drop(state);
        // The job's memory is given back when it ends: its solver goes now
        // rather than at this thread's next task, which may never come.
        if job.is_stopping() || job.summary().is_some() {
            solvers.remove(&job.id);
        }
        shared.wake_all();
    }
}

/// Connects a run on a local thread to its job and the pool.
pub(super) struct PoolPort<'a> {
    pub(super) shared: &'a Shared,
    pub(super) job: &'a Job,
    pub(super) slot: &'a WorkerSlot,
    pub(super) ledger: &'a mut Ledger,
    pub(super) started: Instant,
    /// The run was asked to yield its thread to an interactive task.
    pub(super) yielded: bool,
}

/// A local run's facts at a poll, for [`policy::decide`].
impl RunAtPoll for PoolPort<'_> {
    fn job_stopping(&self) -> bool {
        self.job.is_stopping()
    }
    fn max_nodes(&self) -> Option<u64> {
        self.job.spec.max_nodes
    }
    fn spent_nodes(&self) -> u64 {
        // This run's nodes are in its slot, with the other local runs'.
        self.job.stats().nodes + self.shared.local_running_nodes(self.job.id)
    }
    fn checkpoint_pending(&self) -> bool {
        // Asked once already: the checkpoint is on its way.
        self.yielded
    }
    fn job_stalled(&self) -> bool {
        stalled(self.job)
    }
    fn pool_hungry(&self) -> bool {
        self.shared.hungry.load(Ordering::SeqCst)
    }
    fn must_yield(&mut self) -> bool {
        let yields = self.shared.should_yield(self.job, None);
        self.yielded |= yields;
        yields
    }
    fn slice_over(&self) -> bool {
        self.started.elapsed() >= TIME_SLICE && self.shared.others_waiting(self.job)
    }
}

impl Port for PoolPort<'_> {
    fn deliver(&mut self, batch: Batch, force: bool) -> Taken {
        let (first, count) = (batch.first, batch.count);
        let taken = self.job.deliver(batch, force);
        if !matches!(taken, Taken::Refused(_)) {
            // A local run reports in order; the ledger only keeps count.
            let _ = self.ledger.found(first, count);
        }
        taken
    }

    fn control(&mut self, progress: &ProgressView<'_>) -> Control {
        self.slot.progress.publish(progress);
        match policy::decide(self) {
            // A local run publishes its own progress: it is never stuck.
            Decision::Stop | Decision::Stuck => Control::Stop,
            Decision::NodeBudgetSpent => {
                self.job.request_stop(EndReason::NodeLimit);
                Control::Stop
            }
            Decision::Checkpoint(_) => Control::Checkpoint,
            Decision::GiveAway => Control::GiveAway,
            Decision::Continue => Control::Continue,
        }
    }

    fn given_away(&mut self, task: Task, found: u64) {
        let task = match self.ledger.gave_away(task, found) {
            Ok(task) => task,
            Err(error) => {
                self.job.fail(Failure::Broken(format!(
                    "a local run gave away what cannot be: {error}"
                )));
                return;
            }
        };
        let mut state = self.shared.state.locked();
        self.shared
            .enqueue(&mut state, self.job.id, vec![QueuedTask::new(task)], false);
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_one();
    }
}
