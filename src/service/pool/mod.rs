//! The worker pool and its scheduler: the [`Pool`] API (admission, starting
//! and stopping jobs, the pool's figures) and what its rooms share.
//!
//! Worker threads run subtree tasks of jobs on the synchronous engine. The
//! scheduler's decisions all happen under one mutex, taken only at task
//! boundaries and on rare events, never per node:
//!
//! - **Fairness.** Jobs with queued tasks wait in a round-robin ring. A
//!   worker takes the first task of the job at the front and sends the job to
//!   the back. A task that has run for a time slice while another job waits
//!   checkpoints: its remaining work goes back to the front of its job's
//!   queue, and the worker takes the next job's task.
//! - **Small calls first.** A job is [`Class::Interactive`] (Solve,
//!   SolvePuzzle, CheckPuzzle: a client waits and the work is small by
//!   nature) or [`Class::Batch`] (enumerations, submitted jobs). Workers
//!   take interactive tasks before any batch task. When interactive tasks
//!   wait and no worker is idle, as many running batch tasks as there are
//!   such tasks (and no more) yield at their next poll, within
//!   [`POLL_INTERVAL`] nodes rather than a time slice: each checkpoints like a
//!   task whose slice is over (its remaining work goes back to the front of
//!   its job's queue: nothing lost, nothing done twice) and its worker
//!   takes the interactive task. Interactive runs are sliced only among
//!   themselves. A call that turns out not to be small (running longer than
//!   [`INTERACTIVE_PRIORITY`]) is scheduled as batch work from then on, so
//!   that such calls cannot starve the enumerations. Interactive jobs are
//!   admitted under their own limit (`max_interactive_jobs`), so that long
//!   jobs filling `max_jobs` do not refuse them. Remote batch leases yield
//!   the same way: their sessions are woken as soon as interactive tasks
//!   wait, and ask as many leases as needed to checkpoint at once (the
//!   worker stops at its next poll) instead of at the remote slice; the
//!   freed slot takes the interactive task.
//! - **Load balance.** When a worker is idle and no task is queued, the pool
//!   is *hungry*; busy workers see it at their next poll (every
//!   [`POLL_INTERVAL`] nodes) and give away the upper half of the untried
//!   alternatives at their shallowest open level. However unbalanced the
//!   tree, no worker stays idle while another has work it can split.
//!   Remote runs hear of it from their sessions: the pool wakes one session
//!   holding a lease per hungry slot, not every session (one that cannot
//!   give passes the wake-up on).
//! - **Backpressure.** A streaming job's solutions go through a bounded
//!   buffer ([`Output`]). When it is full, the task checkpoints and the job is
//!   skipped until its consumer has made room; no worker blocks on a slow
//!   client and the server's memory does not grow.
//! - **Cancellation.** A job's stop flag is read by the engine every
//!   [`POLL_INTERVAL`] nodes, a few microseconds of work.
//!
//! Progress of a job is the weight of its finished work plus the estimates of
//! its running tasks (Knuth's estimate inside each task), never reported
//! lower than before, and 1 when the job completes.
//!
//! One idea per room: [`schedule`] (the queue: which task runs next, and the
//! flags runs read at their polls), [`policy`] (what a run does at a poll,
//! for local and remote runs alike), [`local`] (the worker threads and
//! their port), [`remote`] (what the coordinator's sessions call),
//! [`job_end`] (booking a run's end, snapshots, ending a job) and
//! [`progress`] (progress totals and node counts). This file admits jobs and
//! holds the state they share; it must not decide scheduling or a run's
//! policy itself.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::job::{Class, Delivery, EndReason, Job, JobId, JobSpec, Output};
use super::memory::{Budget, MemoryLimits};
use super::store::Snapshot;
use super::sync::Locked;
use crate::run::QueuedTask;
use crate::xcc::{Problem, Task};

mod job_end;
mod local;
pub(crate) mod policy;
mod progress;
mod remote;
mod schedule;
#[cfg(test)]
mod tests;

use crate::service::metrics as metric;
use crate::xcc::{MAX_POLL_INTERVAL, POLL_INTERVAL};
pub(crate) use progress::LiveProgress;
use progress::WorkerSlot;
pub(crate) use remote::Withdrawal;
pub(crate) use schedule::stalled;
use schedule::{remote_can_run, ScheduledJob, State};

/// How long a task may keep its worker while another job waits.
pub const TIME_SLICE: Duration = Duration::from_millis(10);
/// How long an interactive job keeps its priority over batch jobs (from its
/// start): past it, it is scheduled like a batch job.
pub const INTERACTIVE_PRIORITY: Duration = Duration::from_secs(1);
/// Interactive jobs admitted at once, by default.
pub const MAX_INTERACTIVE_JOBS: usize = 64;
/// Batches of solutions a durable job buffers for the store's writer.
const DURABLE_BUFFER_BATCHES: usize = 64;

/// Limits of a pool.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Local worker threads; 0 makes a pure coordinator, whose tasks all
    /// run on remote workers.
    pub threads: usize,
    /// Most batch jobs (enumerations, submitted jobs) queued or running at
    /// once.
    pub max_jobs: usize,
    /// Most interactive jobs (Solve, SolvePuzzle, CheckPuzzle) queued or
    /// running at once, apart from `max_jobs`.
    pub max_interactive_jobs: usize,
    /// Most jobs of each class queued or running at once for one caller
    /// (with API keys).
    pub max_jobs_per_caller: usize,
    /// A task lost with its worker this many times fails its job.
    pub max_attempts: u32,
    /// Nodes a running task explores between two looks at its job (stop,
    /// give-away, time slice), on local threads and remote workers alike.
    /// Smaller splits small searches finer and answers sooner; each look
    /// costs about as much as a node.
    pub poll_interval: u64,
    /// The memory one run and all of the pool's runs may take (see
    /// [`super::memory`]).
    pub memory: MemoryLimits,
    /// With no worker at all (a coordinator whose remote workers are all
    /// gone), how long a job a call waits on (`JobSpec::waits_on_call`)
    /// waits before it fails with NO_WORKERS.
    pub no_worker_grace: Duration,
}

/// The default of [`PoolConfig::no_worker_grace`].
pub const NO_WORKER_GRACE: Duration = Duration::from_secs(10);
/// How often a pool with no local thread looks for jobs waiting for workers.
const WAITING_LOOK: Duration = Duration::from_millis(250);
/// What a job with no worker to run it waits for (`Progress::waiting_for`).
pub const NO_WORKERS: &str = "no worker is connected";

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_jobs: 64,
            max_interactive_jobs: MAX_INTERACTIVE_JOBS,
            max_jobs_per_caller: 64,
            max_attempts: 3,
            poll_interval: POLL_INTERVAL,
            memory: MemoryLimits::default(),
            no_worker_grace: NO_WORKER_GRACE,
        }
    }
}

/// Refusals of [`Pool::submit`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    #[error("too many jobs: {0} are queued or running (the limit)")]
    TooManyJobs(usize),
    #[error("too many small calls (Solve, SolvePuzzle, CheckPuzzle): {0} are queued or running (the limit)")]
    TooManyInteractiveJobs(usize),
    #[error("too many jobs of this caller: {0} are queued or running (the limit per API key)")]
    TooManyJobsForCaller(usize),
    #[error("the server is shutting down")]
    ShuttingDown,
    #[error("this search runs only on the server's own threads (a memoized count, the cheapest solutions, or a side condition given as code), and this server has none (start it with --threads 1 or more)")]
    NeedsLocalThreads,
    /// The job's search can never fit the server's memory for searches.
    #[error("{0}")]
    SearchMemoryLimit(crate::xcc::memory::Need),
    /// The job's search fits, but running searches hold the memory now.
    #[error("the search needs up to {needed} bytes and the searches running on this server leave {free} of {total} free; retry later")]
    MemoryBusy { needed: u64, free: u64, total: u64 },
}

/// What the pool's threads, its remote sessions and its API share.
struct Shared {
    state: Mutex<State>,
    work: Condvar,
    threads: usize,
    max_jobs: usize,
    max_interactive_jobs: usize,
    max_jobs_per_caller: usize,
    max_attempts: u32,
    poll_interval: u64,
    memory: MemoryLimits,
    /// What running jobs' solvers may take, and what they are charged.
    budget: Budget,
    no_worker_grace: Duration,
    next_id: AtomicU64,
    /// An idle worker and no task to give it.
    hungry: AtomicBool,
    /// Jobs with a task ready to run.
    ready_jobs: AtomicUsize,
    /// Interactive jobs (still with priority) with a task ready to run.
    ready_interactive: AtomicUsize,
    /// Interactive tasks ready that no idle worker or yielding run will
    /// take: as many running batch tasks should yield (read at each poll).
    urgent: AtomicUsize,
    /// Runs lost with their remote worker, since the start.
    lost: AtomicU64,
    /// Batch runs, local or remote, that yielded their worker to an
    /// interactive task, since the start.
    yields: AtomicU64,
    slots: Vec<WorkerSlot>,
    /// Wakes one remote worker's session with an idle slot when a task may
    /// be ready (the local threads wait on `work`); a session that takes a
    /// task and sees more ready passes the wake on, so one event costs one
    /// wake-up, not one per connected worker.
    remote_work: tokio::sync::Notify,
    /// Wakes sessions holding leases one at a time when slots go hungry:
    /// as many as there are hungry slots (see [`Shared::refresh`]), not
    /// every session, which made one idle slot cost a look per connected
    /// worker.
    hunger: tokio::sync::Notify,
    /// Hunger wake-ups that may still bring a give-away: issued, and
    /// neither answered by one nor made void by the end of a run.
    hunger_out: AtomicUsize,
    /// Hunger wake-ups issued since the start (passed ones included): the
    /// simulated cluster wakes as many of its sessions.
    hunger_wakes: AtomicU64,
    /// Counts the times the pool went hungry: a session passes a hunger
    /// wake-up it cannot use on at most once each time.
    hunger_epoch: AtomicU64,
    /// Wakes the sessions holding leases when their runs may have to be
    /// asked something: an interactive task waits,
    /// another job has a task ready, a snapshot is due, a job stops,
    /// shutdown. Sessions have no periodic look that would find these out.
    steer_remote: Arc<tokio::sync::Notify>,
    /// `State::shutdown`, readable without the lock.
    shutting_down: AtomicBool,
}

/// A pool of worker threads running the tasks of many jobs.
pub struct Pool {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The connected remote workers, for ListWorkers.
    roster: crate::service::cluster::roster::Roster,
}

impl Pool {
    pub fn new(config: PoolConfig) -> Pool {
        let threads = config.threads;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                workerless_since: (threads == 0).then(Instant::now),
                ..State::default()
            }),
            work: Condvar::new(),
            threads,
            max_jobs: config.max_jobs.max(1),
            max_interactive_jobs: config.max_interactive_jobs.max(1),
            max_jobs_per_caller: config.max_jobs_per_caller.max(1),
            max_attempts: config.max_attempts.max(1),
            poll_interval: config.poll_interval.clamp(1, MAX_POLL_INTERVAL),
            memory: config.memory,
            budget: Budget::new(config.memory.total),
            no_worker_grace: config.no_worker_grace,
            next_id: AtomicU64::new(1),
            hungry: AtomicBool::new(false),
            ready_jobs: AtomicUsize::new(0),
            ready_interactive: AtomicUsize::new(0),
            urgent: AtomicUsize::new(0),
            lost: AtomicU64::new(0),
            yields: AtomicU64::new(0),
            slots: (0..threads).map(|_| WorkerSlot::default()).collect(),
            remote_work: tokio::sync::Notify::new(),
            hunger: tokio::sync::Notify::new(),
            hunger_out: AtomicUsize::new(0),
            hunger_wakes: AtomicU64::new(0),
            hunger_epoch: AtomicU64::new(0),
            steer_remote: Arc::new(tokio::sync::Notify::new()),
            shutting_down: AtomicBool::new(false),
        });
        let handles = (0..threads)
            .map(|index| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("xccd-worker-{index}"))
                    .spawn(move || {
                        // Runs catch their own panics (see `run_task`); this
                        // keeps the thread for the pool whatever else fails.
                        while std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            local::worker(shared.clone(), index)
                        }))
                        .is_err()
                        {
                            tracing::error!(
                                thread = index,
                                "a worker thread recovered from a panic"
                            );
                        }
                    })
                    .expect("spawn a worker thread")
            })
            .collect();
        if threads == 0 {
            // Only remote workers can run its tasks: someone must notice
            // when there are none.
            let shared = Arc::downgrade(&shared);
            let spawned = std::thread::Builder::new()
                .name("xccd-no-workers".into())
                .spawn(move || {
                    while let Some(shared) = shared.upgrade() {
                        if !shared.look_for_waiting_jobs() {
                            return;
                        }
                        drop(shared);
                        std::thread::sleep(WAITING_LOOK);
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "no thread to watch for jobs waiting for workers");
            }
        }
        Pool {
            shared,
            threads: Mutex::new(handles),
            roster: Default::default(),
        }
    }

    /// The connected remote workers (written by their sessions).
    pub fn roster(&self) -> &crate::service::cluster::roster::Roster {
        &self.roster
    }

    pub fn workers(&self) -> usize {
        self.shared.threads
    }

    /// Most bytes one solver of a job may take here: the per-run limit, and
    /// the server's share of each thread (a job has a solver on every
    /// thread that runs its tasks).
    pub fn run_memory_limit(&self) -> u64 {
        let threads = self.shared.threads.max(1) as u64;
        self.shared
            .memory
            .per_run
            .min(self.shared.memory.total / threads)
    }

    /// Bytes the running jobs' solvers are charged, and the server's limit.
    pub fn memory_in_use(&self) -> (u64, u64) {
        (self.shared.budget.used(), self.shared.budget.total())
    }

    /// What a job on `problem` is charged: the problem, and a
    /// solver of its engine on each local thread (a pure coordinator's tasks run
    /// remotely, and its checker walks paths without the cells' save stack:
    /// links' bound).
    fn memory_need(&self, problem: &Problem, spec: &JobSpec) -> u64 {
        // A preprocessed job searches its reduced problem and holds both.
        if let Some(p) = &spec.preprocessed {
            let spec = JobSpec {
                preprocessed: None,
                ..spec.clone()
            };
            return self
                .memory_need(&p.problem, &spec)
                .saturating_add(crate::xcc::memory::problem_bound(problem));
        }
        use crate::xcc::memory::{bound, problem_bound};
        let engine = spec.engine;
        let own = problem_bound(problem);
        if let Some(limit) = spec.memo {
            // One run (one task, never split), on one thread: its links
            // and its cache and ZDD up to their limit.
            let links = bound(problem, crate::xcc::Engine::Links).unwrap_or(u64::MAX);
            return links.saturating_add(limit).saturating_add(own);
        }
        if let Some(k) = spec.cheapest {
            // One run on one thread: its links, a net cost per node, and
            // the K solutions it keeps.
            let links = bound(problem, crate::xcc::Engine::Links).unwrap_or(u64::MAX);
            let costs = (problem.entries() as u64 + problem.options().len() as u64) * 8;
            let kept = (k as u64).saturating_mul(problem.max_solution_len() as u64 * 8 + 64);
            return links
                .saturating_add(costs)
                .saturating_add(kept)
                .saturating_add(own);
        }
        if self.shared.threads == 0 {
            let checker = bound(problem, crate::xcc::Engine::Links).unwrap_or(u64::MAX);
            return checker.saturating_add(own);
        }
        let one = bound(problem, engine)
            .or_else(|| bound(problem, crate::xcc::Engine::Links))
            .unwrap_or(u64::MAX);
        one.saturating_mul(self.shared.threads as u64)
            .saturating_add(own)
    }

    /// Starts a job on `problem`, in the trace of the current span (with
    /// traces on).
    pub fn submit(&self, problem: Arc<Problem>, spec: JobSpec) -> Result<Arc<Job>, SubmitError> {
        let spec = JobSpec {
            traceparent: spec.traceparent.or_else(crate::service::telemetry::current),
            ..spec
        };
        let id = self.shared.next_id.fetch_add(1, Ordering::SeqCst);
        self.start(id, problem, spec, None)
    }

    /// Starts job `id` again where its snapshot left it (a durable job
    /// whose coordinator stopped); `committed` of its solutions are stored.
    pub fn resume(
        &self,
        id: JobId,
        problem: Arc<Problem>,
        spec: JobSpec,
        snapshot: &Snapshot,
        committed: u64,
        created: std::time::SystemTime,
    ) -> Result<Arc<Job>, SubmitError> {
        self.shared.next_id.fetch_max(id + 1, Ordering::SeqCst);
        self.start(id, problem, spec, Some((snapshot, committed, created)))
    }

    /// New job ids go above `id` (those of stored jobs).
    pub fn ids_above(&self, id: JobId) {
        self.shared.next_id.fetch_max(id + 1, Ordering::SeqCst);
    }

    fn start(
        &self,
        id: JobId,
        problem: Arc<Problem>,
        spec: JobSpec,
        resumed: Option<(&Snapshot, u64, std::time::SystemTime)>,
    ) -> Result<Arc<Job>, SubmitError> {
        let buffer = match spec.delivery {
            Delivery::Stream { buffer_batches, .. } => Some(buffer_batches),
            _ if spec.durable => Some(DURABLE_BUFFER_BATCHES),
            _ => None,
        };
        let output = match buffer {
            Some(buffer_batches) => {
                let shared = Arc::downgrade(&self.shared);
                Some(Output::new(
                    buffer_batches,
                    Box::new(move || {
                        if let Some(shared) = shared.upgrade() {
                            let state = shared.state.locked();
                            shared.refresh(&state);
                            drop(state);
                            shared.wake_all();
                        }
                    }),
                ))
            }
            _ => None,
        };
        if self.shared.threads == 0 && !remote_can_run(&spec) {
            return Err(SubmitError::NeedsLocalThreads);
        }
        let need = self.memory_need(&problem, &spec);
        let total = self.shared.budget.total();
        if resumed.is_none() && need > total {
            return Err(SubmitError::SearchMemoryLimit(crate::xcc::memory::Need {
                engine: spec.engine,
                bytes: need,
                limit: total,
            }));
        }
        let job = Job::new(id, problem, spec, output);
        // Sessions holding its leases learn of its stop at once.
        job.wake_on_stop(self.shared.steer_remote.clone());
        let (job, queue, tasks_done, finished_weight) = match resumed {
            None => (job, VecDeque::from([QueuedTask::new(Task::root())]), 0, 0.0),
            Some((snapshot, committed, created)) => (
                job.resumed(snapshot, committed, created),
                snapshot
                    .tasks
                    .iter()
                    .cloned()
                    .map(QueuedTask::from)
                    .collect(),
                snapshot.tasks_done,
                snapshot.finished_weight,
            ),
        };
        let job = Arc::new(job);
        let mut state = self.shared.state.locked();
        if state.shutdown {
            return Err(SubmitError::ShuttingDown);
        }
        // Jobs that ran before a restart run again whatever the limits.
        // Each class has its own limit: long jobs filling theirs do not
        // refuse small calls (nor the other way round).
        let limited = resumed.is_none();
        let class = job.spec.class;
        let of_class = |s: &&ScheduledJob| s.job.spec.class == class;
        if limited && state.jobs.values().filter(of_class).count() >= self.shared.limit(class) {
            return Err(match class {
                Class::Batch => SubmitError::TooManyJobs(self.shared.max_jobs),
                Class::Interactive => {
                    SubmitError::TooManyInteractiveJobs(self.shared.max_interactive_jobs)
                }
            });
        }
        if limited && job.spec.owner.0.is_some() {
            let theirs = state
                .jobs
                .values()
                .filter(of_class)
                .filter(|s| s.job.spec.owner == job.spec.owner)
                .count();
            if theirs >= self.shared.max_jobs_per_caller {
                return Err(SubmitError::TooManyJobsForCaller(
                    self.shared.max_jobs_per_caller,
                ));
            }
        }
        let memory = if limited {
            self.shared
                .budget
                .charge(need)
                .map_err(|free| SubmitError::MemoryBusy {
                    needed: need,
                    free,
                    total,
                })?
        } else {
            self.shared.budget.force(need)
        };
        let entry = ScheduledJob {
            job: job.clone(),
            queued_at: std::iter::repeat_n(Instant::now(), queue.len()).collect(),
            queue,
            running: 0,
            tasks_done,
            finished_weight,
            auditing: 0,
            _memory: memory,
        };
        state.jobs.insert(id, entry);
        state.ring.push_back(id);
        // A resumed job with no work left ends now.
        self.shared.end_job_if_done(&mut state, id);
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_one();
        metrics::counter!(metric::JOBS_STARTED).increment(1);
        tracing::debug!(job = id, "job queued");
        Ok(job)
    }

    /// Stops a job: its queued tasks are dropped and its running tasks stop
    /// at their next poll. The job ends (its summary says `reason`) once they
    /// have.
    pub fn cancel(&self, job: &Job, reason: EndReason) {
        job.request_stop(reason);
        let mut state = self.shared.state.locked();
        self.shared.end_job_if_done(&mut state, job.id);
        self.shared.refresh(&state);
    }

    /// Asks for a snapshot of a durable job: its runs checkpoint at their
    /// next poll, no new run starts, and once none is going the snapshot
    /// goes to the job's output (see `Shared::snapshot_if_quiet`).
    pub fn request_snapshot(&self, job: &Job) {
        let mut state = self.shared.state.locked();
        if !state.jobs.contains_key(&job.id) {
            return;
        }
        job.set_snapshot_due(true);
        self.shared.snapshot_if_quiet(&mut state, job.id);
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_all();
        self.shared.steer_remote.notify_waiters();
    }

    /// A snapshot of a job's progress.
    /// Workers (local threads and remote slots) currently running a task.
    pub fn busy_workers(&self) -> usize {
        let state = self.shared.state.locked();
        (self.shared.threads + state.remote_slots).saturating_sub(state.idle)
    }

    /// Runs lost with their remote worker (and queued again) so far.
    pub fn tasks_lost(&self) -> u64 {
        self.shared.lost.load(Ordering::SeqCst)
    }

    /// Batch runs (local threads and remote leases) that yielded their
    /// worker to an interactive task so far.
    pub fn tasks_yielded(&self) -> u64 {
        self.shared.yields.load(Ordering::SeqCst)
    }

    /// Task slots of the remote workers connected now.
    pub fn remote_slots(&self) -> usize {
        self.shared.state.locked().remote_slots
    }

    /// Jobs queued or running.
    pub fn active_jobs(&self) -> usize {
        self.shared.state.locked().jobs.len()
    }

    /// Tasks waiting in all queues.
    pub fn queued_tasks(&self) -> usize {
        let state = self.shared.state.locked();
        state.jobs.values().map(|s| s.queue.len()).sum()
    }

    /// Refuses new jobs and stops every job (reason `Shutdown`); the
    /// workers exit once the running tasks have stopped.
    pub fn stop_all_jobs(&self) {
        let jobs: Vec<Arc<Job>> = {
            let mut state = self.shared.state.locked();
            state.shutdown = true;
            self.shared.shutting_down.store(true, Ordering::SeqCst);
            state.jobs.values().map(|s| s.job.clone()).collect()
        };
        for job in jobs {
            self.cancel(&job, EndReason::Shutdown);
        }
        self.shared.wake_all();
        self.shared.remote_work.notify_waiters();
        self.shared.steer_remote.notify_waiters();
    }

    /// Stops every job and joins the workers.
    pub fn shutdown(&self) {
        self.stop_all_jobs();
        let handles = std::mem::take(&mut *self.threads.locked());
        for handle in handles {
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
impl Pool {
    /// Sets the hungry flag as runs read it, whatever the queue says: the
    /// flags runs read are read at different moments, so a run may see the
    /// pool hungry while another job waits (tests of the policy's order).
    pub(crate) fn pretend_hungry(&self, hungry: bool) {
        self.shared.hungry.store(hungry, Ordering::SeqCst);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shutdown();
    }
}
