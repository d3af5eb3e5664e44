//! A job: one search of one problem, cut into subtree tasks that the pool's
//! workers run. This file holds what a job owns and shares between the
//! workers and whoever consumes its results; the scheduling state (its task
//! queue) lives in the pool.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::xcc::{Problem, Stats, Task};

pub type JobId = u64;

/// Why a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    Complete,
    Limit,
    Cancelled,
    Deadline,
    NodeLimit,
    Shutdown,
    /// A task could not be run (see [`Summary::error`]).
    Failed,
}

/// A task as the scheduler queues it: the subtree, how many of its
/// solutions were already delivered by an earlier run that was lost (a rerun
/// must skip them, and must not split its work before it has), and how many
/// times it was lost.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub task: Task,
    pub skip: u64,
    pub attempts: u32,
}

impl Work {
    pub fn new(task: Task) -> Work {
        Work {
            task,
            skip: 0,
            attempts: 0,
        }
    }
}

/// A condition on solutions that exact cover cannot express (puzzles:
/// connectivity, a single loop), checked by the workers.
pub trait SideCondition: Send + Sync {
    /// Whether a complete XCC solution (option indices, ascending) counts.
    fn accept(&self, options: &[usize]) -> bool;
    /// Whether a partial one may still extend to an accepted solution.
    fn accept_partial(&self, options: &[usize]) -> bool;
    /// Whether `accept_partial` is worth calling at every node.
    fn prunes(&self) -> bool;
}

/// What a job is asked to do.
#[derive(Clone)]
pub struct JobSpec {
    /// Stop after this many solutions.
    pub limit: Option<u64>,
    /// Stop after about this many nodes (checked every few thousand nodes).
    pub max_nodes: Option<u64>,
    /// Where solutions go.
    pub delivery: Delivery,
    /// Solutions must also satisfy this.
    pub condition: Option<Arc<dyn SideCondition>>,
}

impl std::fmt::Debug for JobSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobSpec")
            .field("limit", &self.limit)
            .field("max_nodes", &self.max_nodes)
            .field("delivery", &self.delivery)
            .field("condition", &self.condition.is_some())
            .finish()
    }
}

/// Where a job's solutions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Only counted.
    CountOnly,
    /// Streamed to a consumer through a bounded buffer of this many batches;
    /// when it is full the job's tasks stop and wait for the consumer.
    Stream {
        buffer_batches: usize,
        batch_size: usize,
    },
    /// The first `keep` kept for later reading, the rest counted.
    Keep { keep: usize },
}

/// One chosen set of options: indices ascending.
pub type SolutionIndices = Vec<u32>;

/// What a streaming consumer receives.
#[derive(Debug)]
pub enum Event {
    Solutions(Vec<SolutionIndices>),
    Done(Summary),
}

/// The end of a job.
#[derive(Debug, Clone)]
pub struct Summary {
    pub solutions: u64,
    pub stats: Stats,
    pub reason: EndReason,
    pub elapsed: Duration,
    /// Why the job failed (reason `Failed`).
    pub error: Option<String>,
}

/// A snapshot of a job for progress reports.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub solutions: u64,
    pub nodes: u64,
    pub fraction_done: f64,
    pub elapsed: Duration,
    /// Seconds left, from `fraction_done`; `None` when unknown.
    pub eta: Option<Duration>,
    pub tasks_queued: usize,
    pub tasks_running: usize,
    pub tasks_done: u64,
    pub workers_busy: usize,
    pub workers_total: usize,
}

/// The bounded buffer between a job's workers and its consumer.
///
/// Workers push without blocking: `try_push` refuses when the buffer is full,
/// and the worker then checkpoints its task and gives its thread to another
/// job. `force_push` is for the one batch a worker already holds when it
/// stops, so the buffer's size is bounded by its capacity plus one batch per
/// worker, whatever the consumer does.
pub struct Output {
    queue: Mutex<VecDeque<Event>>,
    capacity: usize,
    ready: tokio::sync::Notify,
    /// Set when a worker stopped for lack of room; cleared by the consumer
    /// once it has made room, which wakes the pool.
    stalled: AtomicBool,
    on_room: Box<dyn Fn() + Send + Sync>,
}

impl Output {
    pub fn new(capacity: usize, on_room: Box<dyn Fn() + Send + Sync>) -> Output {
        Output {
            queue: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            ready: tokio::sync::Notify::new(),
            stalled: AtomicBool::new(false),
            on_room,
        }
    }

    /// Pushes unless the buffer is full.
    pub fn try_push(&self, event: Event) -> Result<(), Event> {
        let mut q = self.queue.lock().unwrap();
        if q.len() >= self.capacity {
            self.stalled.store(true, Ordering::SeqCst);
            return Err(event);
        }
        q.push_back(event);
        drop(q);
        self.ready.notify_one();
        Ok(())
    }

    /// Pushes whatever the fill level (see the type's documentation).
    pub fn force_push(&self, event: Event) {
        self.queue.lock().unwrap().push_back(event);
        self.ready.notify_one();
    }

    /// Pushes whatever the fill level, and marks the buffer stalled when it
    /// is over capacity: for solutions that arrive from a remote worker,
    /// which cannot be refused (they are already found), only stopped at
    /// their source (see the coordinator).
    pub fn push_over(&self, event: Event) {
        let mut q = self.queue.lock().unwrap();
        q.push_back(event);
        if q.len() >= self.capacity {
            self.stalled.store(true, Ordering::SeqCst);
        }
        drop(q);
        self.ready.notify_one();
    }

    /// Waits for the next event (the last one is `Event::Done`).
    pub async fn next(&self) -> Event {
        loop {
            if let Some(event) = self.pop() {
                return event;
            }
            self.ready.notified().await;
        }
    }

    /// Takes the next event if there is one.
    pub fn pop(&self) -> Option<Event> {
        let mut q = self.queue.lock().unwrap();
        let event = q.pop_front();
        let roomy = q.len() <= self.capacity / 2;
        drop(q);
        if event.is_some() && roomy && self.stalled.swap(false, Ordering::SeqCst) {
            (self.on_room)();
        }
        event
    }

    pub fn is_stalled(&self) -> bool {
        self.stalled.load(Ordering::SeqCst)
    }
}

/// A job, shared by the pool, its workers and its consumers.
pub struct Job {
    pub id: JobId,
    pub problem: Arc<Problem>,
    pub spec: JobSpec,
    pub created: SystemTime,
    pub started: Instant,
    /// Read by the engine every few thousand nodes (`RunConfig::stop`).
    pub stop: Arc<AtomicBool>,
    /// Solutions accepted (never more than the limit).
    solutions: AtomicU64,
    /// Statistics of the task runs that have ended.
    stats: Mutex<Stats>,
    /// Set once: why the job stopped before exhausting its tree.
    stop_reason: Mutex<Option<EndReason>>,
    /// Why it failed, if it did.
    error: Mutex<Option<String>>,
    /// Set once the job has ended.
    summary: Mutex<Option<Summary>>,
    /// Largest progress fraction reported so far (bits of an f64), so that
    /// reports never go backwards.
    reported_fraction: AtomicU64,
    /// Streaming jobs: the buffer to the consumer.
    pub output: Option<Output>,
    /// Keeping jobs: the first solutions.
    kept: Mutex<Vec<SolutionIndices>>,
    done_notify: tokio::sync::Notify,
    kept_notify: tokio::sync::Notify,
    /// The problem as remote workers receive it (digest and DLX text),
    /// made once, when a remote worker first needs it.
    pub(crate) wire: std::sync::OnceLock<Arc<WireProblem>>,
}

/// A problem as the cluster protocol sends it.
#[derive(Debug)]
pub struct WireProblem {
    pub digest: Vec<u8>,
    pub dlx: String,
}

impl Job {
    pub fn new(id: JobId, problem: Arc<Problem>, spec: JobSpec, output: Option<Output>) -> Job {
        Job {
            id,
            problem,
            spec,
            created: SystemTime::now(),
            started: Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
            solutions: AtomicU64::new(0),
            stats: Mutex::new(Stats::default()),
            stop_reason: Mutex::new(None),
            error: Mutex::new(None),
            summary: Mutex::new(None),
            reported_fraction: AtomicU64::new(0f64.to_bits()),
            output,
            kept: Mutex::new(Vec::new()),
            done_notify: tokio::sync::Notify::new(),
            kept_notify: tokio::sync::Notify::new(),
            wire: std::sync::OnceLock::new(),
        }
    }

    /// Claims one more solution. Returns `false` when the limit was reached
    /// already (the solution must then be dropped); the claim that reaches
    /// the limit stops the job.
    pub fn claim_solution(&self) -> bool {
        let previous = self.solutions.fetch_add(1, Ordering::SeqCst);
        match self.spec.limit {
            Some(limit) if previous >= limit => {
                self.solutions.fetch_sub(1, Ordering::SeqCst);
                false
            }
            Some(limit) if previous + 1 == limit => {
                self.request_stop(EndReason::Limit);
                true
            }
            _ => true,
        }
    }

    /// Adds solutions counted locally by a worker (jobs without a limit
    /// need no claim per solution, which would make the workers fight over
    /// one cache line).
    pub fn add_solutions(&self, n: u64) {
        if n > 0 {
            self.solutions.fetch_add(n, Ordering::SeqCst);
        }
    }

    pub fn solutions(&self) -> u64 {
        self.solutions.load(Ordering::SeqCst)
    }

    /// Asks every task of the job to stop; the first reason given wins.
    pub fn request_stop(&self, reason: EndReason) {
        let mut r = self.stop_reason.lock().unwrap();
        if r.is_none() {
            *r = Some(reason);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Stops the job because a task cannot be run; `error` tells the client
    /// why (the first failure wins).
    pub fn fail(&self, error: String) {
        let mut r = self.stop_reason.lock().unwrap();
        if r.is_none() {
            *r = Some(EndReason::Failed);
            *self.error.lock().unwrap() = Some(error);
        }
        drop(r);
        self.stop.store(true, Ordering::SeqCst);
    }

    pub fn is_stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn stop_reason(&self) -> Option<EndReason> {
        *self.stop_reason.lock().unwrap()
    }

    pub fn add_stats(&self, stats: &Stats) {
        self.stats.lock().unwrap().merge(stats);
    }

    pub fn stats(&self) -> Stats {
        self.stats.lock().unwrap().clone()
    }

    /// Records a kept solution (Delivery::Keep).
    pub fn keep(&self, solution: SolutionIndices) {
        if let Delivery::Keep { keep } = self.spec.delivery {
            let mut kept = self.kept.lock().unwrap();
            if kept.len() < keep {
                kept.push(solution);
                drop(kept);
                self.kept_notify.notify_waiters();
            }
        }
    }

    /// The kept solutions from index `from` on.
    pub fn kept_from(&self, from: usize) -> Vec<SolutionIndices> {
        let kept = self.kept.lock().unwrap();
        kept.get(from..).map(<[_]>::to_vec).unwrap_or_default()
    }

    /// Waits until a solution is kept or the job ends (or `timeout`).
    pub async fn changed(&self, timeout: Duration) {
        let kept = self.kept_notify.notified();
        let done = self.done_notify.notified();
        if self.summary().is_some() {
            return;
        }
        tokio::select! {
            _ = kept => {}
            _ = done => {}
            _ = tokio::time::sleep(timeout) => {}
        }
    }

    /// Ends the job (called once by the pool when no task is left).
    pub(super) fn finish(&self) -> Summary {
        let reason = self.stop_reason().unwrap_or(EndReason::Complete);
        let stats = self.stats();
        let summary = Summary {
            solutions: self.solutions(),
            stats: Stats {
                solutions: self.solutions(),
                ..stats
            },
            reason,
            elapsed: self.started.elapsed(),
            error: self.error.lock().unwrap().clone(),
        };
        if reason == EndReason::Complete {
            self.reported_fraction
                .store(1f64.to_bits(), Ordering::SeqCst);
        }
        *self.summary.lock().unwrap() = Some(summary.clone());
        if let Some(output) = &self.output {
            output.force_push(Event::Done(summary.clone()));
        }
        self.done_notify.notify_waiters();
        summary
    }

    pub fn summary(&self) -> Option<Summary> {
        self.summary.lock().unwrap().clone()
    }

    /// Waits until the job has ended.
    pub async fn wait(&self) -> Summary {
        loop {
            let notified = self.done_notify.notified();
            if let Some(s) = self.summary() {
                return s;
            }
            notified.await;
        }
    }

    /// The next event for the job's consumer: from its buffer when it
    /// streams, else its end.
    pub async fn next_event(&self) -> Event {
        match &self.output {
            Some(output) => output.next().await,
            None => Event::Done(self.wait().await),
        }
    }

    /// Clamps a progress estimate so reports never go backwards.
    pub(super) fn monotone_fraction(&self, estimate: f64) -> f64 {
        let estimate = estimate.clamp(0.0, 1.0);
        let previous = self.reported_fraction.fetch_max_f64(estimate);
        previous.max(estimate)
    }
}

trait FetchMaxF64 {
    fn fetch_max_f64(&self, value: f64) -> f64;
}

impl FetchMaxF64 for AtomicU64 {
    /// For non-negative floats the bit patterns order like the values.
    fn fetch_max_f64(&self, value: f64) -> f64 {
        f64::from_bits(self.fetch_max(value.to_bits(), Ordering::SeqCst))
    }
}
