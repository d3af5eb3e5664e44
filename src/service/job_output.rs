//! What a job hands its consumer: the events of a stream (solutions,
//! snapshots of a durable job, the end), the bounded buffer that carries
//! them from the workers, and how the job ended (`Summary`, `EndReason`).
//!
//! The buffer is here, apart from the job, because its rule is one idea of
//! its own: workers never block on it, and the consumer's pace alone decides
//! when a stalled job may run again. It must not know the job, the pool or
//! the store beyond the snapshot it carries: `job.rs` holds the job and
//! re-exports these, so callers name them as `job::Output` and the like.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::store::Snapshot;
use super::sync::Locked;
use crate::run::{Failure, Solutions};
use crate::xcc::preprocess::Figures;
use crate::xcc::{Engine, Stats};

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

impl EndReason {
    /// Its name in lower snake case: a metric's label value (Prometheus's
    /// convention), e.g. `xccd_jobs_finished_total{reason="node_limit"}`.
    pub fn label(self) -> &'static str {
        match self {
            EndReason::Complete => "complete",
            EndReason::Limit => "limit",
            EndReason::Cancelled => "cancelled",
            EndReason::Deadline => "deadline",
            EndReason::NodeLimit => "node_limit",
            EndReason::Shutdown => "shutdown",
            EndReason::Failed => "failed",
        }
    }
}

/// What a streaming consumer receives.
#[derive(Debug)]
pub enum Event {
    Solutions(Solutions),
    /// A consistent cut of a durable job, for the store (see
    /// [`crate::service::store`]); after every solution delivered before it.
    Snapshot(Snapshot),
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
    pub failure: Option<Failure>,
    /// The engine that searched.
    pub engine: Engine,
    /// The count in decimal when it passes `u64::MAX` (`solutions` then
    /// holds `u64::MAX`): only a memoized count gets there.
    pub exact_solutions: Option<String>,
    /// What DLX-PRE removed before the search, if the job asked for it.
    pub preprocessed: Option<Figures>,
    /// Remote leases of the job that were run again and compared (see
    /// `cluster::audit`).
    pub leases_audited: u64,
}

/// The bounded buffer between a job's workers and its consumer.
///
/// Workers never block on it. A local run offers its batch only when there
/// is room ([`Output::has_room`]); when there is none, the run keeps its
/// batch, checkpoints and gives its thread to another job. Solutions that
/// cannot be refused (a run's last batch, solutions a remote worker already
/// found) are pushed whatever the fill level, and stall the job until the
/// consumer has made room. So the buffer holds at most its capacity plus a
/// batch per worker, whatever the consumer does.
pub struct Output {
    queue: Mutex<VecDeque<Event>>,
    capacity: usize,
    ready: tokio::sync::Notify,
    /// Set when the buffer was found full; cleared by the consumer once it
    /// has made room, which wakes the pool.
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

    /// Whether a batch may be pushed; if not, the buffer is marked stalled.
    pub fn has_room(&self) -> bool {
        let room = self.queue.locked().len() < self.capacity;
        if !room {
            self.stalled.store(true, Ordering::SeqCst);
        }
        room
    }

    /// Pushes whatever the fill level; the buffer stalls once over capacity.
    pub fn push(&self, event: Event) {
        let mut q = self.queue.locked();
        q.push_back(event);
        if q.len() > self.capacity && matches!(q.back(), Some(Event::Solutions(_))) {
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
        let mut q = self.queue.locked();
        let event = q.pop_front();
        let left = q.len();
        drop(q);
        if event.is_some() {
            self.taken(left);
        }
        event
    }

    /// After the consumer took something, `left` events waiting: once the
    /// buffer is half empty, a stalled job may run again.
    fn taken(&self, left: usize) {
        if left <= self.capacity / 2 && self.stalled.swap(false, Ordering::SeqCst) {
            (self.on_room)();
        }
    }

    /// Appends to `batch` the solution batches waiting at the front of the
    /// buffer while the whole stays within `max` solutions: a consumer
    /// slower than the workers then sends fewer, fuller messages (workers
    /// deliver a batch at every split and task end, often well short of the
    /// batch size).
    pub fn take_more_solutions(&self, batch: &mut Solutions, max: usize) {
        let mut q = self.queue.locked();
        let mut took = false;
        while let Some(Event::Solutions(next)) = q.front() {
            if batch.len() + next.len() > max {
                break;
            }
            if let Some(Event::Solutions(mut next)) = q.pop_front() {
                batch.append(&mut next);
                took = true;
            }
        }
        let left = q.len();
        drop(q);
        if took {
            self.taken(left);
        }
    }

    pub fn is_stalled(&self) -> bool {
        self.stalled.load(Ordering::SeqCst)
    }
}
