//! The worker pool and its scheduler.
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
//!   [`POLL_NODES`] nodes rather than a time slice: each checkpoints like a
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
//!   [`POLL_NODES`] nodes) and give away the upper half of the untried
//!   alternatives at their shallowest open level. However unbalanced the
//!   tree, no worker stays idle while another has work it can split.
//! - **Backpressure.** A streaming job's solutions go through a bounded
//!   buffer ([`Output`]). When it is full, the task checkpoints and the job is
//!   skipped until its consumer has made room; no worker blocks on a slow
//!   client and the server's memory does not grow.
//! - **Cancellation.** A job's stop flag is read by the engine every
//!   [`POLL_NODES`] nodes, a few microseconds of work.
//!
//! Progress of a job is the weight of its finished work plus the estimates of
//! its running tasks (Knuth's estimate inside each task), never reported
//! lower than before, and 1 when the job completes.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::job::{Class, Delivery, EndReason, Event, Job, JobId, JobSpec, Output, Progress};
use super::memory::{Budget, Charge, MemoryLimits};
use super::store::{Snapshot, StoredWork};
use super::sync::{wait_timeout, Locked};
use crate::run::{run_task, Batch, Control, Failure, Ledger, Port, Settlement, Stop, Taken, Work};
use crate::xcc::{Problem, ProgressView, Solver, Stats, Task};

/// Nodes between two polls of a running task, by default.
pub const POLL_NODES: u64 = 1024;
/// The most nodes between two polls: a run must notice a stop soon.
pub const MAX_POLL_NODES: u64 = 1 << 20;
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
    pub poll_nodes: u64,
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
            poll_nodes: POLL_NODES,
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

/// How far a running search has got, written by its thread at each poll and
/// read by progress reports without stopping it (or taking any lock).
#[derive(Default)]
pub(crate) struct LiveProgress {
    /// An `f64` (Knuth's estimate of the weight explored), as bits.
    done_weight: AtomicU64,
    nodes: AtomicU64,
}

impl LiveProgress {
    pub(crate) fn publish(&self, progress: &ProgressView<'_>) {
        self.done_weight
            .store(progress.done_weight.to_bits(), Ordering::SeqCst);
        self.nodes.store(progress.stats.nodes, Ordering::SeqCst);
    }

    fn reset(&self) {
        self.done_weight.store(0f64.to_bits(), Ordering::SeqCst);
        self.nodes.store(0, Ordering::SeqCst);
    }

    /// `(done weight, nodes)` as last published.
    pub(crate) fn read(&self) -> (f64, u64) {
        (
            f64::from_bits(self.done_weight.load(Ordering::SeqCst)),
            self.nodes.load(Ordering::SeqCst),
        )
    }
}

/// What one worker is doing, readable without the lock.
#[derive(Default)]
struct WorkerSlot {
    job: AtomicU64,
    progress: LiveProgress,
}

struct Sched {
    job: Arc<Job>,
    queue: VecDeque<Work>,
    running: usize,
    tasks_done: u64,
    finished_weight: f64,
    /// The job's memory, given back when it ends.
    _memory: Charge,
}

/// A running remote lease, as the pool sees it.
struct RemoteRun {
    job: JobId,
    /// Explored weight and nodes, from the worker's heartbeats.
    done_weight: f64,
    nodes: u64,
    /// Asked to checkpoint so that its slot takes an interactive task.
    yielding: bool,
}

#[derive(Default)]
struct State {
    /// Jobs that may have queued tasks, in round-robin order.
    ring: VecDeque<JobId>,
    jobs: HashMap<JobId, Sched>,
    /// Idle local threads and idle remote slots.
    idle: usize,
    /// Task slots of the connected remote workers.
    remote_slots: usize,
    /// Running remote leases, by lease id.
    remote_runs: HashMap<u64, RemoteRun>,
    /// Batch runs asked to yield their worker to an interactive task: local
    /// ones whose thread has not yet taken its next task, remote ones whose
    /// lease has not yet ended.
    yielding: usize,
    shutdown: bool,
    /// Since when the pool has had no worker at all (no local thread, no
    /// remote slot), if it has none.
    workerless_since: Option<Instant>,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
    threads: usize,
    max_jobs: usize,
    max_interactive_jobs: usize,
    max_jobs_per_caller: usize,
    max_attempts: u32,
    poll_nodes: u64,
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
    /// Wakes the sessions holding leases when their runs may have to be
    /// asked something: a slot went hungry, a snapshot is due, shutdown.
    remote_police: tokio::sync::Notify,
    /// `State::shutdown`, readable without the lock.
    shutting_down: AtomicBool,
}

/// A pool of worker threads running the tasks of many jobs.
pub struct Pool {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
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
            poll_nodes: config.poll_nodes.clamp(1, MAX_POLL_NODES),
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
            remote_police: tokio::sync::Notify::new(),
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
                            worker(shared.clone(), index)
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
        }
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

    /// Starts a job on `problem`.
    pub fn submit(&self, problem: Arc<Problem>, spec: JobSpec) -> Result<Arc<Job>, SubmitError> {
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
        let (job, queue, tasks_done, finished_weight) = match resumed {
            None => (job, VecDeque::from([Work::new(Task::root())]), 0, 0.0),
            Some((snapshot, committed, created)) => (
                job.resumed(snapshot, committed, created),
                snapshot.tasks.iter().cloned().map(Work::from).collect(),
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
        let of_class = |s: &&Sched| s.job.spec.class == class;
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
        let sched = Sched {
            job: job.clone(),
            queue,
            running: 0,
            tasks_done,
            finished_weight,
            _memory: memory,
        };
        state.jobs.insert(id, sched);
        state.ring.push_back(id);
        // A resumed job with no work left ends now.
        self.shared.settle(&mut state, id);
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_one();
        metrics::counter!("xccd_jobs_started_total").increment(1);
        tracing::debug!(job = id, "job queued");
        Ok(job)
    }

    /// Stops a job: its queued tasks are dropped and its running tasks stop
    /// at their next poll. The job ends (its summary says `reason`) once they
    /// have.
    pub fn cancel(&self, job: &Job, reason: EndReason) {
        job.request_stop(reason);
        let mut state = self.shared.state.locked();
        self.shared.settle(&mut state, job.id);
        self.shared.refresh(&state);
    }

    /// Asks for a snapshot of a durable job: its runs checkpoint at their
    /// next poll, no new run starts, and once none is going the snapshot
    /// goes to the job's output (see [`Shared::snapshot_if_quiet`]).
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
        self.shared.remote_police.notify_waiters();
    }

    /// A snapshot of a job's progress.
    pub fn progress(&self, job: &Job) -> Progress {
        let state = self.shared.state.locked();
        let total = self.shared.threads + state.remote_slots;
        let mut progress = Progress {
            solutions: job.solutions(),
            elapsed: job.started.elapsed(),
            workers_busy: total.saturating_sub(state.idle),
            workers_total: total,
            ..Progress::default()
        };
        let mut nodes = job.stats().nodes;
        match state.jobs.get(&job.id) {
            Some(sched) => {
                let mut done = sched.finished_weight;
                for slot in &self.shared.slots {
                    if slot.job.load(Ordering::SeqCst) == job.id {
                        let (slot_done, slot_nodes) = slot.progress.read();
                        done += slot_done;
                        nodes += slot_nodes;
                    }
                }
                for run in state.remote_runs.values().filter(|r| r.job == job.id) {
                    done += run.done_weight;
                    nodes += run.nodes;
                }
                progress.tasks_queued = sched.queue.len();
                progress.tasks_running = sched.running;
                if total == 0 && sched.running == 0 {
                    progress.waiting_for = Some(NO_WORKERS);
                }
                progress.tasks_done = sched.tasks_done;
                progress.fraction_done = job.monotone_fraction(done);
            }
            None => {
                progress.fraction_done = job.monotone_fraction(0.0);
                if let Some(summary) = job.summary() {
                    progress.elapsed = summary.elapsed;
                }
            }
        }
        progress.nodes = nodes;
        let f = progress.fraction_done;
        if f > 0.0 && f < 1.0 {
            // A deep search's first estimates are tiny: the time left can
            // be more than a Duration holds, and is then unknown.
            let left = progress.elapsed.as_secs_f64() * ((1.0 - f) / f);
            progress.eta = Duration::try_from_secs_f64(left).ok();
        } else if f >= 1.0 {
            progress.eta = Some(Duration::ZERO);
        }
        progress
    }

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
        self.shared.remote_police.notify_waiters();
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

impl Drop for Pool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Shared {
    fn wake_one(&self) {
        self.work.notify_one();
        self.wake_remote_one();
    }

    fn wake_all(&self) {
        self.work.notify_all();
        self.wake_remote_one();
    }

    /// Wakes one remote session waiting for work, if a task is ready.
    fn wake_remote_one(&self) {
        if self.ready_jobs.load(Ordering::SeqCst) > 0 {
            self.remote_work.notify_one();
        }
    }

    /// The admission limit of a class of jobs.
    fn limit(&self, class: Class) -> usize {
        match class {
            Class::Batch => self.max_jobs,
            Class::Interactive => self.max_interactive_jobs,
        }
    }

    /// Recomputes the flags that running tasks read without the lock.
    fn refresh(&self, state: &State) {
        let (mut ready, mut ready_interactive, mut interactive_tasks) = (0, 0, 0);
        let now = Instant::now();
        for sched in state.ring.iter().filter_map(|id| state.jobs.get(id)) {
            // A job whose tasks all wait out a backoff is not ready (the
            // pool's timer refreshes when the first one may go).
            if !sched.queue.iter().any(|work| work.ready(now)) || stalled(&sched.job) {
                continue;
            }
            ready += 1;
            if has_priority(&sched.job) {
                ready_interactive += 1;
                interactive_tasks += sched.queue.len();
            }
        }
        self.ready_jobs.store(ready, Ordering::SeqCst);
        self.ready_interactive
            .store(ready_interactive, Ordering::SeqCst);
        let urgent = interactive_tasks.saturating_sub(state.idle + state.yielding);
        if self.urgent.swap(urgent, Ordering::SeqCst) == 0 && urgent > 0 {
            // Remote batch runs yield only when asked: ask now, not at the
            // sessions' next look.
            self.remote_police.notify_waiters();
        }
        let hungry = state.idle > 0 && ready == 0 && !state.shutdown;
        let was = self.hungry.swap(hungry, Ordering::SeqCst);
        if hungry && !was {
            // Remote runs learn of it only when asked: ask now, not at the
            // sessions' next look.
            self.remote_police.notify_waiters();
        }
    }

    /// Ends a job whose work is all done, or that is stopping and has no
    /// running task left.
    fn settle(&self, state: &mut State, id: JobId) {
        let Some(sched) = state.jobs.get_mut(&id) else {
            return;
        };
        if sched.job.is_stopping() {
            sched.queue.clear();
        }
        if sched.queue.is_empty() && sched.running == 0 {
            let sched = state.jobs.remove(&id).expect("present");
            state.ring.retain(|&j| j != id);
            let summary = sched.job.finish();
            metrics::counter!("xccd_jobs_finished_total", "reason" => format!("{:?}", summary.reason)).increment(1);
            tracing::info!(
                job = id,
                solutions = summary.solutions,
                nodes = summary.stats.nodes,
                reason = ?summary.reason,
                seconds = summary.elapsed.as_secs_f64(),
                "job ended"
            );
        }
    }

    /// Takes the next task to run, waiting if there is none; with it, the
    /// nodes its job has explored so far.
    /// `yielded`: this thread's last run yielded to an interactive task
    /// (which this thread is now to take, unless another got it first).
    fn next_task(&self, index: usize, yielded: bool) -> Option<(Arc<Job>, Work, u64)> {
        let mut state = self.state.locked();
        if yielded {
            state.yielding -= 1;
        }
        loop {
            if state.shutdown && state.jobs.is_empty() {
                // An exited worker counts as idle.
                state.idle += 1;
                self.refresh(&state);
                return None;
            }
            if let Some((job, work)) = Self::pick(&mut state, false) {
                let spent = self.spent_nodes(&state, &job);
                let slot = &self.slots[index];
                slot.job.store(job.id, Ordering::SeqCst);
                slot.progress.reset();
                self.refresh(&state);
                return Some((job, work, spent));
            }
            state.idle += 1;
            self.refresh(&state);
            state = self.wait(state);
            state.idle -= 1;
        }
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        // A timeout covers the one wake-up that needs no lock: a consumer
        // making room in a stalled job's buffer between our check and wait.
        wait_timeout(&self.work, state, Duration::from_millis(50))
    }

    /// Takes the first task of the first interactive job in the ring that
    /// has one to run, else of the first job that has; a remote worker
    /// cannot take tasks of jobs whose side condition it cannot rebuild.
    fn pick(state: &mut State, remote: bool) -> Option<(Arc<Job>, Work)> {
        for interactive_only in [true, false] {
            if let Some(picked) = Self::pick_from(state, remote, interactive_only) {
                return Some(picked);
            }
        }
        // Jobs without queued tasks stay out of the ring until they get some.
        let jobs = &state.jobs;
        state
            .ring
            .retain(|id| jobs.get(id).is_some_and(|s| !s.queue.is_empty()));
        None
    }

    fn pick_from(
        state: &mut State,
        remote: bool,
        interactive_only: bool,
    ) -> Option<(Arc<Job>, Work)> {
        let now = Instant::now();
        for turn in 0..state.ring.len() {
            let id = state.ring[turn];
            let Some(sched) = state.jobs.get_mut(&id) else {
                continue;
            };
            if sched.queue.is_empty()
                || stalled(&sched.job)
                || (remote && !remote_can_run(&sched.job.spec))
                || (interactive_only && !has_priority(&sched.job))
            {
                continue;
            }
            // The first task not waiting out a backoff after a loss.
            let Some(at) = sched.queue.iter().position(|work| work.ready(now)) else {
                continue;
            };
            let task = sched.queue.remove(at).expect("present");
            sched.running += 1;
            let job = sched.job.clone();
            let more = !sched.queue.is_empty();
            state.ring.remove(turn);
            if more {
                state.ring.push_back(id);
            }
            return Some((job, task));
        }
        None
    }

    fn enqueue(&self, state: &mut State, id: JobId, tasks: Vec<Work>, front: bool) {
        let Some(sched) = state.jobs.get_mut(&id) else {
            return;
        };
        if front {
            for task in tasks.into_iter().rev() {
                sched.queue.push_front(task);
            }
        } else {
            sched.queue.extend(tasks);
        }
        if !state.ring.contains(&id) {
            state.ring.push_back(id);
        }
    }

    /// Whether a job other than `job` has a task ready that should take
    /// the worker of a run of `job` whose slice is over: any job for a
    /// batch run, an interactive one for an interactive run.
    fn others_waiting(&self, job: &Job) -> bool {
        let interactive = has_priority(job);
        let ready = if interactive {
            self.ready_interactive.load(Ordering::SeqCst)
        } else {
            self.ready_jobs.load(Ordering::SeqCst)
        };
        if ready == 0 {
            return false;
        }
        let state = self.state.locked();
        let mine = state
            .jobs
            .get(&job.id)
            .is_some_and(|s| !s.queue.is_empty() && !stalled(&s.job));
        ready > usize::from(mine)
    }

    /// Whether a run of batch job `job` is to yield its worker to an
    /// interactive task: a local run (`remote_lease` None) its thread, a
    /// remote one (its lease) its slot. If so, the run counts as yielding
    /// until its thread takes its next task (see [`Shared::next_task`]) or
    /// its lease ends (see [`Pool::book_remote_run`]), so that no more runs
    /// yield than there are interactive tasks waiting.
    fn should_yield(&self, job: &Job, remote_lease: Option<u64>) -> bool {
        if self.urgent.load(Ordering::SeqCst) == 0 || has_priority(job) {
            return false;
        }
        let mut state = self.state.locked();
        self.refresh(&state);
        if self.urgent.load(Ordering::SeqCst) == 0 {
            return false;
        }
        if let Some(lease) = remote_lease {
            // A remote slot can only take what a remote worker can run.
            let runnable = state.jobs.values().any(|s| {
                !s.queue.is_empty()
                    && has_priority(&s.job)
                    && !stalled(&s.job)
                    && remote_can_run(&s.job.spec)
            });
            match state.remote_runs.get_mut(&lease) {
                Some(run) if runnable && !run.yielding => run.yielding = true,
                _ => return false,
            }
        }
        state.yielding += 1;
        self.refresh(&state);
        self.yields.fetch_add(1, Ordering::SeqCst);
        metrics::counter!("xccd_tasks_yielded_total").increment(1);
        true
    }
}

/// Whether a job's tasks go before batch tasks: an interactive job, for
/// [`INTERACTIVE_PRIORITY`] from its start.
fn has_priority(job: &Job) -> bool {
    job.spec.class == Class::Interactive && job.started.elapsed() < INTERACTIVE_PRIORITY
}

/// Whether a job's tasks must wait: its consumer has no room, or a
/// snapshot of it is due.
fn stalled(job: &Job) -> bool {
    job.snapshot_due() || job.output.as_ref().is_some_and(|o| o.is_stalled())
}

/// Whether remote workers can run the job's tasks: they rebuild a side
/// condition from the puzzle it encodes, and cannot receive one given as
/// code only; a memoized count and a cheapest-solutions search (one task
/// each, never split) stay on the server's own threads.
fn remote_can_run(spec: &JobSpec) -> bool {
    (spec.condition.is_none() || spec.puzzle.is_some())
        && spec.memo.is_none()
        && spec.cheapest.is_none()
}

impl Shared {
    /// With no worker at all: counts the jobs waiting for one (metric
    /// `xccd_jobs_waiting{reason="no_workers"}`) and fails those a call
    /// waits on that waited the grace (NO_WORKERS: the caller learns it now
    /// and may retry, rather than at its deadline). False once the pool
    /// shuts down.
    fn look_for_waiting_jobs(&self) -> bool {
        let mut state = self.state.locked();
        if state.shutdown {
            return false;
        }
        let Some(since) = state.workerless_since else {
            metrics::gauge!("xccd_jobs_waiting", "reason" => "no_workers").set(0.0);
            return true;
        };
        let now = Instant::now();
        let mut waiting = 0;
        let mut expired = Vec::new();
        for (&id, sched) in &state.jobs {
            if sched.running > 0 || sched.job.is_stopping() {
                continue;
            }
            waiting += 1;
            let from = since.max(sched.job.started);
            if sched.job.spec.waits_on_call
                && now.saturating_duration_since(from) >= self.no_worker_grace
            {
                expired.push(id);
            }
        }
        metrics::gauge!("xccd_jobs_waiting", "reason" => "no_workers").set(waiting as f64);
        for id in expired {
            if let Some(sched) = state.jobs.get(&id) {
                tracing::warn!(job = id, "no worker within the grace: the job fails");
                sched.job.fail(Failure::NoWorkers(format!(
                    "no worker is connected to run the search (waited {:.1} s); try again later",
                    self.no_worker_grace.as_secs_f64()
                )));
            }
            self.settle(&mut state, id);
        }
        self.refresh(&state);
        true
    }

    /// Books a settled run of a task of `job` (see [`Ledger::settle`]) and
    /// its statistics, and ends the job if that was its last work. The
    /// run's nodes join the job's books under the lock that also ends the
    /// run, so that node budgets never count them twice (see
    /// [`Shared::spent_nodes`]).
    fn book(&self, state: &mut State, job: &Job, stats: &Stats, settlement: Settlement) {
        job.add_stats(stats);
        metrics::counter!("xccd_nodes_total").increment(stats.nodes);
        let Some(sched) = state.jobs.get_mut(&job.id) else {
            return;
        };
        sched.running -= 1;
        sched.tasks_done += 1;
        sched.finished_weight += settlement.finished_weight;
        if settlement.lost {
            self.lost.fetch_add(1, Ordering::SeqCst);
            metrics::counter!("xccd_tasks_lost_total").increment(1);
        }
        if let Some(failure) = settlement.failure {
            tracing::error!(job = job.id, error = failure.message(), "task failed");
            job.fail(failure);
        }
        match settlement.stop {
            Some(Stop::NodeLimit) => job.request_stop(EndReason::NodeLimit),
            Some(Stop::SolutionLimit) => job.request_stop(EndReason::Limit),
            Some(Stop::Asked) | None => {}
        }
        metrics::counter!("xccd_tasks_total").increment(1);
        if !settlement.requeue.is_empty() {
            let mut requeue = settlement.requeue;
            if let Some(backoff) = settlement.backoff {
                let at = Instant::now() + backoff;
                for work in &mut requeue {
                    work.not_before = Some(at);
                }
            }
            self.enqueue(state, job.id, requeue, true);
        }
        self.snapshot_if_quiet(state, job.id);
        self.settle(state, job.id);
        self.refresh(state);
    }

    /// Takes the snapshot due of a durable job once none of its runs is
    /// going: its queue then holds all its remaining work, each task with
    /// the solutions delivered from it, and every solution delivered is in
    /// its output before the snapshot.
    fn snapshot_if_quiet(&self, state: &mut State, id: JobId) {
        let Some(sched) = state.jobs.get(&id) else {
            return;
        };
        let job = &sched.job;
        if !job.snapshot_due() || sched.running > 0 {
            return;
        }
        if !job.is_stopping() {
            let snapshot = Snapshot {
                solutions: job.solutions(),
                stats: job.stats(),
                tasks: sched.queue.iter().map(StoredWork::from).collect(),
                finished_weight: sched.finished_weight,
                tasks_done: sched.tasks_done,
            };
            if let Some(output) = &job.output {
                output.push(Event::Snapshot(snapshot));
            }
        }
        job.set_snapshot_due(false);
    }

    /// Nodes explored so far by the job's runs on local threads, as last
    /// published (no lock: read at a poll).
    fn local_running_nodes(&self, job: JobId) -> u64 {
        self.slots
            .iter()
            .filter(|slot| slot.job.load(Ordering::SeqCst) == job)
            .map(|slot| slot.progress.read().1)
            .sum()
    }

    /// Nodes the job has explored: its ended runs' and, as last published,
    /// its running ones'. Under the lock, so that a run that ends is
    /// counted once.
    fn spent_nodes(&self, state: &State, job: &Job) -> u64 {
        job.stats().nodes + self.running_nodes(state, job.id)
    }

    /// Nodes explored so far by the job's runs still going.
    fn running_nodes(&self, state: &State, job: JobId) -> u64 {
        let local = self.local_running_nodes(job);
        let remote: u64 = state
            .remote_runs
            .values()
            .filter(|run| run.job == job)
            .map(|run| run.nodes)
            .sum();
        local + remote
    }
}

/// Runs tasks until the pool shuts down.
fn worker(shared: Arc<Shared>, index: usize) {
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
        let spec = job.run_spec(&work, spent_nodes, shared.poll_nodes);
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
        shared.book(&mut state, &job, &report.stats, settlement);
        drop(state);
        // The job's memory is given back when it ends: its solver goes now
        // rather than at this thread's next task, which may never come.
        if job.is_stopping() || job.summary().is_some() {
            solvers.remove(&job.id);
        }
        shared.wake_all();
    }
}

/// What the remote workers' sessions (the coordinator) need of the pool.
/// A remote worker's task slots count like local threads: idle slots make
/// the pool hungry, and their tasks count as running for their jobs.
impl Pool {
    /// A worker with `slots` task slots, all idle, has joined.
    pub(crate) fn remote_joined(&self, slots: usize) {
        let mut state = self.shared.state.locked();
        state.remote_slots += slots;
        state.idle += slots;
        if state.remote_slots > 0 {
            state.workerless_since = None;
        }
        self.shared.refresh(&state);
    }

    /// A worker has left; `idle` of its `slots` were idle. Its leases must
    /// have been ended with [`Pool::end_remote_run`] first.
    pub(crate) fn remote_left(&self, slots: usize, idle: usize) {
        let mut state = self.shared.state.locked();
        state.remote_slots -= slots;
        state.idle -= idle;
        if self.shared.threads + state.remote_slots == 0 && state.workerless_since.is_none() {
            state.workerless_since = Some(Instant::now());
        }
        self.shared.refresh(&state);
    }

    /// Takes a task for an idle remote slot (now busy), if one is ready;
    /// with it, the nodes its job has explored so far.
    pub(crate) fn take_remote(&self, lease: u64) -> Option<(Arc<Job>, Work, u64)> {
        let mut state = self.shared.state.locked();
        let (job, work) = Shared::pick(&mut state, true)?;
        // Only a node budget needs what the job spent (a sum over every
        // running lease: not to be paid per lease otherwise).
        let spent = match job.spec.max_nodes {
            Some(_) => self.shared.spent_nodes(&state, &job),
            None => 0,
        };
        state.idle -= 1;
        state.remote_runs.insert(
            lease,
            RemoteRun {
                job: job.id,
                done_weight: 0.0,
                nodes: 0,
                yielding: false,
            },
        );
        self.shared.refresh(&state);
        Some((job, work, spent))
    }

    /// A remote slot is idle again (its worker reported the end of a run).
    pub(crate) fn remote_slot_freed(&self) {
        let mut state = self.shared.state.locked();
        state.idle += 1;
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_all();
    }

    /// A heartbeat's news of a running lease.
    pub(crate) fn remote_progress(&self, lease: u64, done_weight: f64, nodes: u64) {
        let mut state = self.shared.state.locked();
        if let Some(run) = state.remote_runs.get_mut(&lease) {
            run.done_weight = done_weight;
            run.nodes = nodes;
        }
    }

    /// Nodes the job has explored (its running remote runs' from their
    /// heartbeats).
    pub(crate) fn spent_nodes(&self, job: &Job) -> u64 {
        let state = self.shared.state.locked();
        self.shared.spent_nodes(&state, job)
    }

    /// Books the settled end of a remote run and its statistics.
    pub(crate) fn end_remote_run(
        &self,
        lease: u64,
        job: &Job,
        stats: &Stats,
        settlement: Settlement,
    ) {
        let backoff = settlement.backoff;
        let state = self.book_remote_run(lease, job, stats, settlement);
        drop(state);
        self.shared.wake_all();
        if let Some(backoff) = backoff {
            self.wake_after(backoff);
        }
    }

    /// Wakes whoever waits for work once `after` has passed: a lost task's
    /// backoff is over (nothing else may happen meanwhile to wake them).
    fn wake_after(&self, after: Duration) {
        let shared = self.shared.clone();
        let timer = std::thread::Builder::new()
            .name("xccd-backoff".into())
            .spawn(move || {
                // A hair past the backoff, so that the task is ready.
                std::thread::sleep(after + Duration::from_millis(1));
                let state = shared.state.locked();
                shared.refresh(&state);
                drop(state);
                shared.wake_all();
            });
        if let Err(e) = timer {
            // The task still runs at the next wake of the pool (a job's
            // event, a worker joining): late, never lost.
            tracing::warn!(error = %e, "no timer thread for a backoff");
        }
    }

    /// Forgets remote run `lease` and books its end; the pool's lock, still
    /// held, for whatever else must happen under it.
    fn book_remote_run(
        &self,
        lease: u64,
        job: &Job,
        stats: &Stats,
        settlement: Settlement,
    ) -> MutexGuard<'_, State> {
        let mut state = self.shared.state.locked();
        if state
            .remote_runs
            .remove(&lease)
            .is_some_and(|run| run.yielding)
        {
            state.yielding -= 1;
        }
        self.shared.book(&mut state, job, stats, settlement);
        state
    }

    /// Books the settled end of a remote run, as [`Pool::end_remote_run`],
    /// and frees its slot, under one lock: the pool is never seen hungry
    /// between the two (which would wake every session to ask give-aways).
    pub(crate) fn finish_remote_run(
        &self,
        lease: u64,
        job: &Job,
        stats: &Stats,
        settlement: Settlement,
    ) {
        let mut state = self.book_remote_run(lease, job, stats, settlement);
        state.idle += 1;
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_all();
    }

    /// Queues a task a remote run gave away.
    pub(crate) fn remote_gave_away(&self, job: &Job, task: Task) {
        let mut state = self.shared.state.locked();
        self.shared
            .enqueue(&mut state, job.id, vec![Work::new(task)], false);
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_all();
    }

    /// Nodes between two polls of a running task.
    pub(crate) fn poll_nodes(&self) -> u64 {
        self.shared.poll_nodes
    }

    /// How often a task may be lost with its worker before its job fails.
    pub(crate) fn max_attempts(&self) -> u32 {
        self.shared.max_attempts
    }

    /// Whether the pool is shutting down (remote sessions then end).
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shared.shutting_down.load(Ordering::SeqCst)
    }

    /// Whether a slot is idle with no task to give it.
    pub(crate) fn is_hungry(&self) -> bool {
        self.shared.hungry.load(Ordering::SeqCst)
    }

    /// Whether a job other than `job` has a task ready to run that should
    /// take the worker of `job`'s run once its slice is over (see
    /// [`Shared::others_waiting`]).
    pub(crate) fn others_waiting(&self, job: &Job) -> bool {
        self.shared.others_waiting(job)
    }

    /// Whether remote run `lease` of `job` is to checkpoint now so that its
    /// slot takes a waiting interactive task (the remote side of the local
    /// threads' yield; the run counts as yielding until its lease ends).
    pub(crate) fn remote_should_yield(&self, lease: u64, job: &Job) -> bool {
        self.shared.should_yield(job, Some(lease))
    }

    /// Resolves when a task may have become ready, for a session with an
    /// idle slot; one session per event (see [`Pool::pass_remote_wake`]).
    pub(crate) async fn remote_work(&self) {
        self.shared.remote_work.notified().await;
    }

    /// A session that took a task and has no idle slot left passes the
    /// wake-up on, if more tasks are ready: to two others, so that k tasks
    /// queued at once reach k idle sessions in about log2(k) hops, not k
    /// (each hop waits its turn in the runtime's queue).
    pub(crate) fn pass_remote_wake(&self) {
        self.shared.wake_remote_one();
        self.shared.wake_remote_one();
    }

    /// Resolves when running leases may have to be asked something (a slot
    /// went hungry, a snapshot is due, shutdown); sessions also look every
    /// few milliseconds, so a missed wake-up costs little.
    pub(crate) async fn remote_police(&self) {
        self.shared.remote_police.notified().await;
    }
}

/// Connects a run on a local thread to its job and the pool.
struct PoolPort<'a> {
    shared: &'a Shared,
    job: &'a Job,
    slot: &'a WorkerSlot,
    ledger: &'a mut Ledger,
    started: Instant,
    /// The run was asked to yield its thread to an interactive task.
    yielded: bool,
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
        if self.job.is_stopping() {
            return Control::Stop;
        }
        if let Some(max) = self.job.spec.max_nodes {
            // This run's nodes are in its slot, with the other local runs'.
            if self.job.stats().nodes + self.shared.local_running_nodes(self.job.id) >= max {
                self.job.request_stop(EndReason::NodeLimit);
                return Control::Stop;
            }
        }
        if self.job.snapshot_due() {
            return Control::Checkpoint;
        }
        if self.shared.hungry.load(Ordering::SeqCst) {
            return Control::GiveAway;
        }
        if self.yielded {
            // Asked once already: the checkpoint is on its way.
            return Control::Checkpoint;
        }
        if self.shared.should_yield(self.job, None) {
            self.yielded = true;
            return Control::Checkpoint;
        }
        if self.started.elapsed() >= TIME_SLICE && self.shared.others_waiting(self.job) {
            return Control::Checkpoint;
        }
        Control::Continue
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
            .enqueue(&mut state, self.job.id, vec![Work::new(task)], false);
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::SideCondition;

    /// Six queens: 4 solutions.
    fn queens6() -> Arc<Problem> {
        Arc::new(crate::xcc::testing::queens(6))
    }

    struct Panics;
    impl SideCondition for Panics {
        fn accept(&self, _options: &[usize]) -> bool {
            panic!("a bug in a side condition")
        }
        fn restricts(&self) -> bool {
            true
        }
    }

    #[tokio::test]
    async fn a_panicking_run_fails_its_job_and_the_thread_lives_on() {
        let pool = Pool::new(PoolConfig {
            threads: 1,
            ..PoolConfig::default()
        });
        for _ in 0..3 {
            let job = pool
                .submit(
                    queens6(),
                    JobSpec {
                        condition: Some(Arc::new(Panics)),
                        ..JobSpec::default()
                    },
                )
                .unwrap();
            let summary = job.wait().await;
            assert_eq!(summary.reason, EndReason::Failed);
            assert!(
                matches!(&summary.failure, Some(Failure::Broken(m)) if m.contains("a bug in a side condition")),
                "{:?}",
                summary.failure
            );
            // The one thread is still there for the next job.
            let job = pool.submit(queens6(), JobSpec::default()).unwrap();
            let summary = job.wait().await;
            assert_eq!(
                (summary.reason, summary.solutions),
                (EndReason::Complete, 4)
            );
        }
    }

    #[tokio::test]
    async fn a_node_limit_stops_within_a_poll_of_it_and_says_so() {
        for threads in [1, 2] {
            let pool = Pool::new(PoolConfig {
                threads,
                poll_nodes: 16,
                ..PoolConfig::default()
            });
            let whole = pool
                .submit(queens6(), JobSpec::default())
                .unwrap()
                .wait()
                .await;
            assert_eq!(whole.reason, EndReason::Complete);
            let nodes = whole.stats.nodes;
            for max in [1, 2, 20, nodes / 2, nodes - 1] {
                let job = pool
                    .submit(
                        queens6(),
                        JobSpec {
                            max_nodes: Some(max),
                            ..JobSpec::default()
                        },
                    )
                    .unwrap();
                let summary = job.wait().await;
                if summary.reason == EndReason::Complete {
                    // Runs check the job's total at their polls: near the
                    // tree's size, the whole tree may be explored, and the
                    // answer is then complete (and true).
                    assert!(max + 16 * threads as u64 >= nodes, "max {max} of {nodes}");
                    assert_eq!(summary.stats.nodes, nodes);
                    continue;
                }
                assert_eq!(summary.reason, EndReason::NodeLimit, "max {max} of {nodes}");
                assert!(
                    summary.stats.nodes >= max.min(nodes)
                        && summary.stats.nodes <= max + 16 * threads as u64,
                    "max {max}: {} nodes with {threads} threads",
                    summary.stats.nodes
                );
            }
            let job = pool
                .submit(
                    queens6(),
                    JobSpec {
                        max_nodes: Some(nodes + 100),
                        ..JobSpec::default()
                    },
                )
                .unwrap();
            assert_eq!(job.wait().await.reason, EndReason::Complete);
        }
    }

    fn interactive(owner: Option<&str>) -> JobSpec {
        JobSpec {
            class: Class::Interactive,
            limit: Some(1),
            delivery: Delivery::Keep { keep: 1 },
            owner: crate::service::callers::Caller(owner.map(Arc::from)),
            ..JobSpec::default()
        }
    }

    /// A count that keeps a thread busy for seconds.
    fn long(class: Class, owner: Option<&str>) -> JobSpec {
        JobSpec {
            class,
            owner: crate::service::callers::Caller(owner.map(Arc::from)),
            ..JobSpec::default()
        }
    }

    async fn wait_busy(pool: &Pool, busy: usize) {
        for _ in 0..3000 {
            if pool.busy_workers() == busy {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{busy} workers never busy");
    }

    #[tokio::test]
    async fn small_calls_are_admitted_apart_and_a_batch_run_yields_to_them() {
        let pool = Pool::new(PoolConfig {
            threads: 1,
            max_jobs: 1,
            max_interactive_jobs: 2,
            max_jobs_per_caller: 1,
            poll_nodes: 64,
            ..PoolConfig::default()
        });
        let big = Arc::new(crate::xcc::testing::queens(16));
        // The one batch slot and the one thread are taken.
        let batch = pool
            .submit(big.clone(), long(Class::Batch, Some("a")))
            .unwrap();
        wait_busy(&pool, 1).await;
        assert_eq!(
            pool.submit(queens6(), long(Class::Batch, Some("b"))).err(),
            Some(SubmitError::TooManyJobs(1))
        );
        // A small call is admitted, also for the caller that holds its
        // one batch job, and the batch run yields the thread to it.
        for owner in [Some("a"), Some("b"), None] {
            let small = pool.submit(queens6(), interactive(owner)).unwrap();
            let summary = small.wait().await;
            assert_eq!((summary.reason, summary.solutions), (EndReason::Limit, 1));
            assert!(batch.summary().is_none(), "the count goes on");
        }
        assert!(pool.tasks_yielded() >= 1, "the batch run yielded");
        // Small calls have their own limits, overall and per caller.
        let held = pool
            .submit(big.clone(), long(Class::Interactive, Some("a")))
            .unwrap();
        assert_eq!(
            pool.submit(queens6(), interactive(Some("a"))).err(),
            Some(SubmitError::TooManyJobsForCaller(1))
        );
        let other = pool
            .submit(big.clone(), long(Class::Interactive, None))
            .unwrap();
        assert_eq!(
            pool.submit(queens6(), interactive(Some("b"))).err(),
            Some(SubmitError::TooManyInteractiveJobs(2))
        );
        for job in [&batch, &held, &other] {
            pool.cancel(job, EndReason::Cancelled);
            assert_eq!(job.wait().await.reason, EndReason::Cancelled);
        }
    }
}
