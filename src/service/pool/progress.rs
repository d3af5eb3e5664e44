//! Progress totals: how far each running task has got (published by its
//! thread at each poll, or by its remote worker's heartbeats) and what a
//! job's progress report adds up from them, nodes and estimated weight.
//!
//! Readers only: it must not change the queue or a job's books (a run's
//! nodes move into its job's statistics in [`super::job_end`], under the
//! lock that also clears its slot, so that nothing is counted twice).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::schedule::State;
use super::{Pool, Shared, NO_WORKERS};
use crate::service::job::{Job, JobId, Progress};
use crate::service::sync::Locked;
use crate::xcc::ProgressView;

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

    pub(super) fn reset(&self) {
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
pub(super) struct WorkerSlot {
    pub(super) job: AtomicU64,
    pub(super) progress: LiveProgress,
}

impl Pool {
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
            Some(entry) => {
                let mut done = entry.finished_weight;
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
                progress.tasks_queued = entry.queue.len();
                progress.tasks_running = entry.running;
                if total == 0 && entry.running == 0 {
                    progress.waiting_for = Some(NO_WORKERS);
                }
                progress.tasks_done = entry.tasks_done;
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
}

impl Shared {
    /// Nodes explored so far by the job's runs on local threads, as last
    /// published (no lock: read at a poll).
    pub(super) fn local_running_nodes(&self, job: JobId) -> u64 {
        self.slots
            .iter()
            .filter(|slot| slot.job.load(Ordering::SeqCst) == job)
            .map(|slot| slot.progress.read().1)
            .sum()
    }

    /// Nodes the job has explored: its ended runs' and, as last published,
    /// its running ones'. Under the lock, so that a run that ends is
    /// counted once.
    pub(super) fn spent_nodes(&self, state: &State, job: &Job) -> u64 {
        job.stats().nodes + self.running_nodes(state, job.id)
    }

    /// Nodes explored so far by the job's runs still going.
    pub(super) fn running_nodes(&self, state: &State, job: JobId) -> u64 {
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
