//! A job: one search of one problem, cut into subtree tasks that the pool's
//! workers run. This file holds what a job owns and shares between the
//! workers and whoever consumes its results; the scheduling state (its task
//! queue) lives in the pool, and what the consumer receives (the stream's
//! events and buffer, the job's summary) in `job_output.rs`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::callers::Caller;
pub use super::job_id::{JobId, RequestKey};
pub use super::job_output::{EndReason, Event, Output, Summary};
use super::store::Snapshot;
use super::sync::Locked;
use crate::puzzles::{Encoded, Puzzle};
use crate::run::{Batch, Failure, RunSpec, SideCondition, Taken};
pub use crate::run::{QueuedTask, SolutionIndices, Solutions};
use crate::service::metrics as metric;
use crate::xcc::preprocess::Figures;
use crate::xcc::verifier::{Rules, Verifier};
use crate::xcc::{Engine, Problem, Solver, Stats};

/// How long a durable job's run may hold found solutions for a full batch.
const DURABLE_BATCH_DELAY: Duration = Duration::from_millis(50);
/// How long a streaming job's run may hold found solutions for a full
/// batch: a few milliseconds, nothing to a reader, but a fast search then
/// sends full batches instead of a batch at every poll (every 1024 nodes),
/// and each batch costs the server and the client a wake-up, a message
/// and its frames.
const STREAM_BATCH_DELAY: Duration = Duration::from_millis(5);

/// A problem reduced for a job, and how its options name the caller's.
#[derive(Debug)]
pub struct Preprocessed {
    /// The reduced problem, which the job's runs search.
    pub problem: Arc<Problem>,
    /// For each option of `problem`, the caller's index of it.
    pub origin: Vec<u32>,
    /// What DLX-PRE removed, in how many rounds and mems.
    pub figures: Figures,
    /// The bound of mems it ran under. A durable job stores it: after a
    /// restart the job reduces its problem again under the same bound
    /// (DLX-PRE is deterministic), so that its snapshot's tasks name nodes
    /// of the same search tree.
    pub max_mems: u64,
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
    /// Solutions must also satisfy this, wherever the job's tasks run.
    pub condition: Option<Arc<dyn SideCondition>>,
    /// The puzzle that `problem` and `condition` encode, if any: remote
    /// workers rebuild both from it.
    pub puzzle: Option<Puzzle>,
    /// The encoding of `puzzle` for a puzzle job (CreateJob with a
    /// puzzle), which turns its solutions into grids for its readers.
    pub grids: Option<Arc<dyn Encoded>>,
    /// Who asked (with API keys): only they may see the job, and their jobs
    /// count against their own limit.
    pub owner: Caller,
    /// The job is kept in the job store: its events (solutions, snapshots,
    /// its end) go through its output buffer to the store's writer.
    pub durable: bool,
    /// The engine every run of the job uses: its tasks name nodes of this
    /// engine's search tree. Requests resolve `auto` before the job starts.
    pub engine: Engine,
    /// How the pool schedules and admits the job.
    pub class: Class,
    /// The CreateJob request's idempotency key, if it had one.
    pub request: Option<RequestKey>,
    /// A call (Solve, Enumerate) waits on the job: with no worker for the
    /// pool's `no_worker_grace` it fails (NO_WORKERS) rather than wait for
    /// the client's deadline. Submitted jobs wait for workers as long as
    /// it takes.
    pub waits_on_call: bool,
    /// Count by memoized search (Knuth's DLX6) with at most this many bytes
    /// of cache and ZDD: a count-only job of one task, the root, run on one
    /// of the server's own threads (never split, never leased to a remote
    /// worker: its cache is the point, and a remote count could not be
    /// checked).
    pub memo: Option<u64>,
    /// Find this many cheapest solutions (Knuth's DLX5): a job of one
    /// task, the root, run on one of the server's own threads (never split,
    /// never leased: its pruning depends on every solution found before),
    /// its solutions delivered when the search ends.
    pub cheapest: Option<usize>,
    /// The problem reduced by DLX-PRE (the request's `preprocess`): the
    /// job's runs search it, and its solutions are renamed to the job's
    /// problem's options as they are delivered.
    pub preprocessed: Option<Arc<Preprocessed>>,
    /// The W3C `traceparent` of the span that submitted the job (with
    /// traces on): every lease carries it, so workers' spans join the trace.
    pub traceparent: Option<String>,
}

/// How the pool schedules a job and which admission limit it counts
/// against (see the pool's module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Class {
    /// A call a client waits on and that is small by nature (Solve,
    /// SolvePuzzle, CheckPuzzle): its tasks run before any batch task, a
    /// running batch task yields its worker to it at its next poll, and it
    /// is admitted under its own limit (`max_interactive_jobs`).
    Interactive,
    /// Enumerations, submitted jobs and streams: they share the workers by
    /// time slices and count against `max_jobs`.
    #[default]
    Batch,
}

impl Default for JobSpec {
    /// Count every solution.
    fn default() -> Self {
        JobSpec {
            limit: None,
            max_nodes: None,
            delivery: Delivery::CountOnly,
            condition: None,
            puzzle: None,
            grids: None,
            owner: Caller::default(),
            durable: false,
            engine: Engine::Links,
            class: Class::Batch,
            request: None,
            waits_on_call: false,
            memo: None,
            cheapest: None,
            preprocessed: None,
            traceparent: None,
        }
    }
}

impl std::fmt::Debug for JobSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobSpec")
            .field("limit", &self.limit)
            .field("max_nodes", &self.max_nodes)
            .field("delivery", &self.delivery)
            .field("condition", &self.condition.is_some())
            .field("puzzle", &self.puzzle)
            .field("owner", &self.owner.name())
            .field("durable", &self.durable)
            .field("class", &self.class)
            .field("preprocessed", &self.preprocessed.is_some())
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
    /// What the job waits for before it can go on, if anything.
    pub waiting_for: Option<&'static str>,
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
    failure: Mutex<Option<Failure>>,
    /// Set once the job has ended.
    summary: Mutex<Option<Summary>>,
    /// When it ended (the API's `end_time`), set with `summary`.
    ended_at: std::sync::OnceLock<SystemTime>,
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
    /// A solver of the problem for checking what remote runs report
    /// (built when first needed; see [`Job::with_checker`]).
    checker: Mutex<Option<Solver>>,
    /// The searched problem's rules for checking remote runs' solutions
    /// (built when first needed; see [`Job::verifier`]).
    rules: std::sync::OnceLock<Arc<Rules>>,
    /// A durable job's runs are to checkpoint, and none start, until the
    /// pool has taken a snapshot of it.
    snapshot_due: AtomicBool,
    /// A durable job's solutions that the store holds and may be read.
    committed: AtomicU64,
    /// Commits of a durable job written to the store so far.
    commits: AtomicU64,
    /// A durable job's writer is done: its end (with every solution before
    /// it) is stored, or the store failed.
    end_stored: AtomicBool,
    /// See [`Job::set_exact_count`].
    exact_count: std::sync::OnceLock<String>,
    /// Remote leases of the job run again and compared (see
    /// `cluster::audit`).
    audited: AtomicU64,
    /// Woken when the job is first asked to stop: the pool's steering of
    /// remote leases, set when the pool starts the job, so that sessions
    /// holding its leases revoke them at once (they have no periodic look
    /// to find out by; see `cluster::coordinator::session`).
    stop_wake: std::sync::OnceLock<Arc<tokio::sync::Notify>>,
}

/// A problem as the cluster protocol sends it: a plain problem as its DLX
/// text, a puzzle as the puzzle (workers rebuild its encoding and side
/// condition); the digest names it (see `cluster::proto::wire_problem`).
#[derive(Debug)]
pub struct WireProblem {
    pub digest: Vec<u8>,
    pub dlx: String,
    pub puzzle: Option<Puzzle>,
}

impl Job {
    pub fn new(id: JobId, problem: Arc<Problem>, spec: JobSpec, output: Option<Output>) -> Job {
        Job {
            id,
            problem,
            spec,
            // Whole microseconds, which the store's f64 seconds give back
            // exactly (see `convert::from_unix_seconds`).
            created: SystemTime::UNIX_EPOCH
                + Duration::from_micros(
                    SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .map_or(0, |d| d.as_micros() as u64),
                ),
            started: Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
            solutions: AtomicU64::new(0),
            stats: Mutex::new(Stats::default()),
            stop_reason: Mutex::new(None),
            failure: Mutex::new(None),
            summary: Mutex::new(None),
            ended_at: std::sync::OnceLock::new(),
            reported_fraction: AtomicU64::new(0f64.to_bits()),
            output,
            kept: Mutex::new(Vec::new()),
            done_notify: tokio::sync::Notify::new(),
            kept_notify: tokio::sync::Notify::new(),
            wire: std::sync::OnceLock::new(),
            checker: Mutex::new(None),
            rules: std::sync::OnceLock::new(),
            snapshot_due: AtomicBool::new(false),
            committed: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            end_stored: AtomicBool::new(false),
            exact_count: std::sync::OnceLock::new(),
            audited: AtomicU64::new(0),
            stop_wake: std::sync::OnceLock::new(),
        }
    }

    /// `wake` is notified when the job is first asked to stop (see
    /// [`Job::request_stop`] and [`Job::fail`]).
    pub(super) fn wake_on_stop(&self, wake: Arc<tokio::sync::Notify>) {
        let _ = self.stop_wake.set(wake);
    }

    /// Raises the stop flag; the first time, wakes whoever watches for it.
    fn raise_stop(&self) {
        if !self.stop.swap(true, Ordering::SeqCst) {
            if let Some(wake) = self.stop_wake.get() {
                wake.notify_waiters();
            }
        }
    }

    /// A job resumed from the store at the point of its snapshot.
    pub(super) fn resumed(
        mut self,
        snapshot: &Snapshot,
        committed: u64,
        created: SystemTime,
    ) -> Job {
        self.created = created;
        self.solutions.store(snapshot.solutions, Ordering::SeqCst);
        *self.stats.locked() = snapshot.stats.clone();
        self.committed.store(committed, Ordering::SeqCst);
        self
    }

    pub fn snapshot_due(&self) -> bool {
        self.snapshot_due.load(Ordering::SeqCst)
    }

    pub(super) fn set_snapshot_due(&self, due: bool) {
        self.snapshot_due.store(due, Ordering::SeqCst);
    }

    /// Solutions of a durable job that can be read from the store.
    pub fn committed(&self) -> u64 {
        self.committed.load(Ordering::SeqCst)
    }

    /// The store now holds `committed` of the job's solutions: wakes the
    /// job's watchers.
    pub(super) fn set_committed(&self, committed: u64) {
        self.committed.fetch_max(committed, Ordering::SeqCst);
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.kept_notify.notify_waiters();
    }

    /// Whether the job has ended for its readers: a durable one once its
    /// end is stored, with all its solutions.
    pub fn is_over(&self) -> bool {
        self.summary().is_some() && (!self.spec.durable || self.end_stored())
    }

    /// Whether a durable job's writer has finished (see `end_stored`).
    pub fn end_stored(&self) -> bool {
        self.end_stored.load(Ordering::SeqCst)
    }

    pub(super) fn set_end_stored(&self) {
        self.end_stored.store(true, Ordering::SeqCst);
        self.kept_notify.notify_waiters();
    }

    /// How many commits of a durable job were written so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }

    /// A solver for this job's problem on this job's engine. (Requests are
    /// checked before a job starts, so the engine supports the problem; a
    /// job that slipped through runs on links everywhere, consistently.)
    pub fn new_solver(&self) -> Solver {
        Solver::with_engine(self.searched(), self.spec.engine)
            .unwrap_or_else(|_| Solver::new(self.searched()))
    }

    /// The problem the job's runs search: the reduced one when the job was
    /// preprocessed, else its problem. Tasks, remote workers' problem and
    /// the checks of their reports are this problem's; the solutions the
    /// job delivers are its problem's (see [`Job::deliver`]).
    pub fn searched(&self) -> &Arc<Problem> {
        match &self.spec.preprocessed {
            Some(p) => &p.problem,
            None => &self.problem,
        }
    }

    /// Runs `f` on the solver the coordinator checks remote reports with
    /// (the paths of tasks, the regions of solutions).
    pub(crate) fn with_checker<R>(&self, f: impl FnOnce(&mut Solver) -> R) -> R {
        let mut checker = self.checker.locked();
        f(checker.get_or_insert_with(|| self.new_solver()))
    }

    /// A verifier of the searched problem's solutions, for what remote
    /// runs report; the problem's flat rules are built once per job.
    pub(crate) fn verifier(&self) -> Verifier<'_> {
        let problem = self.searched();
        let rules = self
            .rules
            .get_or_init(|| Arc::new(Rules::new(problem)))
            .clone();
        Verifier::with_rules(problem, rules)
    }

    /// Claims `n` more solutions against the job's limit; returns how many
    /// it may deliver (all of them without a limit). The claim that reaches
    /// the limit stops the job.
    fn claim(&self, n: u64) -> u64 {
        let Some(limit) = self.spec.limit else {
            self.solutions.fetch_add(n, Ordering::SeqCst);
            return n;
        };
        let mut granted = 0;
        let before = self
            .solutions
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |have| {
                granted = n.min(limit.saturating_sub(have));
                Some(have + granted)
            })
            .unwrap_or_default();
        if before + granted >= limit {
            self.request_stop(EndReason::Limit);
        }
        granted
    }

    /// Takes a batch of solutions of one of the job's runs: claims them
    /// against the limit, then keeps or streams them. With `force` unset, a
    /// streaming job whose buffer is full refuses the batch (the run keeps
    /// it and checkpoints); with it set, the batch is taken whatever the
    /// room. Says [`Taken::Stop`] once the job wants no more.
    pub fn deliver(&self, batch: Batch, force: bool) -> Taken {
        if let (Some(output), false) = (&self.output, force) {
            if !output.has_room() {
                return Taken::Refused(batch);
            }
        }
        let granted = self.claim(batch.count);
        let mut solutions = batch.solutions;
        solutions.truncate(granted as usize);
        if let Some(p) = &self.spec.preprocessed {
            solutions.rename(&p.origin);
        }
        match self.spec.delivery {
            Delivery::CountOnly => {}
            Delivery::Keep { .. } => {
                for solution in &solutions {
                    self.keep(solution);
                }
            }
            Delivery::Stream { .. } => {
                if let (Some(output), false) = (&self.output, solutions.is_empty()) {
                    metrics::counter!(metric::SOLUTIONS_STREAMED).increment(solutions.len() as u64);
                    output.push(Event::Solutions(solutions));
                }
            }
        }
        if granted < batch.count || self.is_stopping() {
            Taken::Stop
        } else {
            Taken::All
        }
    }

    /// How a run of this job's `work` goes: what it delivers and in what
    /// batches, and the limits left for it (`spent_nodes`: nodes the job
    /// has explored so far), polled every `poll_interval` nodes.
    pub fn run_spec(&self, work: &QueuedTask, spent_nodes: u64, poll_interval: u64) -> RunSpec {
        let (want_solutions, batch_size) = match self.spec.delivery {
            Delivery::CountOnly => (false, usize::MAX),
            Delivery::Stream { batch_size, .. } => (true, batch_size.max(1)),
            Delivery::Keep { .. } => (true, 64),
        };
        RunSpec {
            skip: work.skip,
            limit: self.spec.limit.map(|l| l.saturating_sub(self.solutions())),
            max_nodes: self.spec.max_nodes.map(|m| m.saturating_sub(spent_nodes)),
            want_solutions,
            batch_size,
            // The store's writer would rather have few full batches (a
            // transaction costs more than a batch); a reader waits for
            // them, a few milliseconds at most.
            max_delay: match self.spec.delivery {
                _ if self.spec.durable => DURABLE_BATCH_DELAY,
                Delivery::Stream { .. } => STREAM_BATCH_DELAY,
                Delivery::CountOnly | Delivery::Keep { .. } => Duration::ZERO,
            },
            poll_interval,
            profile: false,
            stop: Some(self.stop.clone()),
            memo: self.spec.memo.map(|limit| crate::run::MemoRun {
                memory_limit: Some(limit),
                // The service's memoized count is DLX6's to the end.
                probe: false,
            }),
            cheapest: self.spec.cheapest,
        }
    }

    pub fn solutions(&self) -> u64 {
        self.solutions.load(Ordering::SeqCst)
    }

    /// Asks every task of the job to stop; the first reason given wins.
    pub fn request_stop(&self, reason: EndReason) {
        let mut r = self.stop_reason.locked();
        if r.is_none() {
            *r = Some(reason);
        }
        drop(r);
        self.raise_stop();
    }

    /// Stops the job because its work cannot be done; `failure` tells
    /// the client why (the first failure wins).
    pub fn fail(&self, failure: Failure) {
        let mut r = self.stop_reason.locked();
        if r.is_none() {
            *r = Some(EndReason::Failed);
            *self.failure.locked() = Some(failure);
        }
        drop(r);
        self.raise_stop();
    }

    pub fn is_stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn stop_reason(&self) -> Option<EndReason> {
        *self.stop_reason.locked()
    }

    pub fn add_stats(&self, stats: &Stats) {
        self.stats.locked().merge(stats);
    }

    /// A remote lease of the job was audited (run again and compared).
    pub(crate) fn count_audit(&self) {
        self.audited.fetch_add(1, Ordering::SeqCst);
    }

    /// Remote leases of the job audited so far.
    pub fn leases_audited(&self) -> u64 {
        self.audited.load(Ordering::SeqCst)
    }

    /// Takes back what a run booked: `solutions` of the count and its
    /// statistics (a remote worker an audit caught lying; its task runs
    /// again).
    pub(crate) fn withdraw(&self, solutions: u64, stats: &Stats) {
        let _ = self
            .solutions
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |have| {
                Some(have.saturating_sub(solutions))
            });
        let mut own = self.stats.locked();
        own.nodes = own.nodes.saturating_sub(stats.nodes);
        own.updates = own.updates.saturating_sub(stats.updates);
        own.cleansings = own.cleansings.saturating_sub(stats.cleansings);
        own.replay_updates = own.replay_updates.saturating_sub(stats.replay_updates);
        own.replay_cleansings = own
            .replay_cleansings
            .saturating_sub(stats.replay_cleansings);
        own.solutions = own.solutions.saturating_sub(stats.solutions);
    }

    pub fn stats(&self) -> Stats {
        self.stats.locked().clone()
    }

    /// Records a kept solution (Delivery::Keep).
    pub fn keep(&self, solution: &[u32]) {
        if let Delivery::Keep { keep } = self.spec.delivery {
            let mut kept = self.kept.locked();
            if kept.len() < keep {
                kept.push(solution.to_vec());
                drop(kept);
                self.kept_notify.notify_waiters();
            }
        }
    }

    /// The kept solutions from index `from` on.
    pub fn kept_from(&self, from: usize) -> Vec<SolutionIndices> {
        self.kept(from, usize::MAX)
    }

    /// At most `max` kept solutions from index `from` on: a reader of a
    /// window copies the window, not every kept solution (issue 24).
    pub fn kept(&self, from: usize, max: usize) -> Vec<SolutionIndices> {
        let kept = self.kept.locked();
        let from = from.min(kept.len());
        let to = from.saturating_add(max).min(kept.len());
        kept[from..to].to_vec()
    }

    /// Waits until a solution is kept (or committed to the store) or the
    /// job ends (a durable one: its end is stored), or `timeout`.
    pub async fn changed(&self, timeout: Duration) {
        let kept = self.kept_notify.notified();
        let done = self.done_notify.notified();
        if self.is_over() {
            return;
        }
        tokio::select! {
            _ = kept => {}
            _ = done => {}
            _ = tokio::time::sleep(timeout) => {}
        }
    }

    /// A run counted more solutions than `u64::MAX`: their exact number
    /// (a memoized count; the job has one run).
    pub(super) fn set_exact_count(&self, text: String) {
        let _ = self.exact_count.set(text);
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
            failure: self.failure.locked().clone(),
            engine: self.spec.engine,
            exact_solutions: self.exact_count.get().cloned(),
            preprocessed: self.spec.preprocessed.as_ref().map(|p| p.figures),
            leases_audited: self.leases_audited(),
        };
        if reason == EndReason::Complete {
            self.reported_fraction
                .store(1f64.to_bits(), Ordering::SeqCst);
        }
        let _ = self.ended_at.set(SystemTime::now());
        *self.summary.locked() = Some(summary.clone());
        if let Some(output) = &self.output {
            output.push(Event::Done(summary.clone()));
        }
        self.done_notify.notify_waiters();
        summary
    }

    pub fn summary(&self) -> Option<Summary> {
        self.summary.locked().clone()
    }

    /// When the job ended, once it has.
    pub fn ended_at(&self) -> Option<SystemTime> {
        self.ended_at.get().copied()
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

    /// Fills `batch`, a batch just taken from [`Job::next_event`], with the
    /// solution batches already waiting, up to the job's batch size.
    pub fn take_more_solutions(&self, batch: &mut Solutions) {
        if let (Some(output), Delivery::Stream { batch_size, .. }) =
            (&self.output, &self.spec.delivery)
        {
            output.take_more_solutions(batch, *batch_size);
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
