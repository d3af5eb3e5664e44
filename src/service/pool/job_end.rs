//! A run's end and a job's end: booking what a run that ended leaves (its
//! statistics, its settlement from the [`crate::run::Ledger`], the work it
//! hands back), taking a durable job's snapshot once its runs are quiet, and
//! ending a job whose work is all done or that stops.
//!
//! Called under the pool's lock by the local threads ([`super::local`]) and
//! the remote side ([`super::remote`]); it must not choose tasks (see
//! [`super::schedule`]) nor wake anyone: its callers do, once the lock is
//! released.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::schedule::State;
use super::Shared;
use crate::run::{Settlement, Stop};
use crate::service::job::{EndReason, Event, Job, JobId};
use crate::service::metrics as metric;
use crate::service::store::{Snapshot, StoredWork};
use crate::xcc::Stats;

impl Shared {
    /// Books a settled run of a task of `job` (see [`Ledger::settle`]) and
    /// its statistics, and ends the job if that was its last work. The
    /// run's nodes join the job's books under the lock that also ends the
    /// run, so that node budgets never count them twice (see
    /// [`Shared::spent_nodes`]).
    pub(super) fn book_run_end(
        &self,
        state: &mut State,
        job: &Job,
        stats: &Stats,
        settlement: Settlement,
    ) {
        job.add_stats(stats);
        metrics::counter!(metric::NODES).increment(stats.nodes);
        let Some(entry) = state.jobs.get_mut(&job.id) else {
            return;
        };
        entry.running -= 1;
        entry.tasks_done += 1;
        entry.finished_weight += settlement.finished_weight;
        if settlement.lost {
            self.lost.fetch_add(1, Ordering::SeqCst);
            metrics::counter!(metric::TASKS_LOST).increment(1);
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
        metrics::counter!(metric::TASKS).increment(1);
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
        self.end_job_if_done(state, job.id);
        self.refresh(state);
    }

    /// Takes the snapshot due of a durable job once none of its runs is
    /// going: its queue then holds all its remaining work, each task with
    /// the solutions delivered from it, and every solution delivered is in
    /// its output before the snapshot.
    pub(super) fn snapshot_if_quiet(&self, state: &mut State, id: JobId) {
        let Some(entry) = state.jobs.get(&id) else {
            return;
        };
        let job = &entry.job;
        if !job.snapshot_due() || entry.running > 0 {
            return;
        }
        if !job.is_stopping() {
            let snapshot = Snapshot {
                solutions: job.solutions(),
                stats: job.stats(),
                tasks: entry.queue.iter().map(StoredWork::from).collect(),
                finished_weight: entry.finished_weight,
                tasks_done: entry.tasks_done,
            };
            if let Some(output) = &job.output {
                output.push(Event::Snapshot(snapshot));
            }
        }
        job.set_snapshot_due(false);
    }

    /// Ends a job whose work is all done, or that is stopping and has no
    /// running task left.
    pub(super) fn end_job_if_done(&self, state: &mut State, id: JobId) {
        let Some(entry) = state.jobs.get_mut(&id) else {
            return;
        };
        if entry.job.is_stopping() {
            entry.queue.clear();
            entry.queued_at.clear();
        }
        if entry.queue.is_empty() && entry.running == 0 && entry.auditing == 0 {
            let entry = state.jobs.remove(&id).expect("present");
            state.ring.retain(|&j| j != id);
            let summary = entry.job.finish();
            let reason = summary.reason.label();
            metrics::counter!(metric::JOBS_FINISHED, "reason" => reason).increment(1);
            metrics::histogram!(metric::JOB_DURATION, "reason" => reason).record(summary.elapsed);
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
}
