//! The remote side: what the coordinator's sessions ([`crate::service::cluster`])
//! call of the pool. A remote worker's task slots count like local threads:
//! idle slots make the pool hungry, and their tasks count as running for
//! their jobs.
//!
//! Owns the pool's view of remote runs (joining and leaving slots, leases
//! taken and ended, heartbeats' progress, backoff timers). It must not hold
//! leases or talk to workers (the sessions do), nor decide what a lease is
//! asked: sessions take that from [`super::policy`] like the local threads.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use super::schedule::{RemoteRun, State};
use super::{Pool, Shared};
use crate::run::{QueuedTask, Settlement};
use crate::service::job::{Job, JobId};
use crate::service::sync::Locked;
use crate::xcc::{Stats, Task};

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

    /// Takes a task for an idle remote slot (now busy), if one is ready and
    /// not of a job in `barred`; with it, the nodes its job has explored so
    /// far.
    pub(crate) fn take_remote(
        &self,
        lease: u64,
        barred: &[JobId],
    ) -> Option<(Arc<Job>, QueuedTask, u64)> {
        let mut state = self.shared.state.locked();
        let (job, work) = Shared::pick(&mut state, true, barred)?;
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
        // Perhaps the run asked for a hungry slot's give-away.
        self.shared.hunger_settled();
        self.shared.book_run_end(&mut state, job, stats, settlement);
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
            .enqueue(&mut state, job.id, vec![QueuedTask::new(task)], false);
        self.shared.hunger_settled();
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_all();
    }

    /// Nodes between two polls of a running task.
    pub(crate) fn poll_interval(&self) -> u64 {
        self.shared.poll_interval
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

    /// Resolves when running leases may have to be asked something (a job
    /// stopped, another job's task became ready, a
    /// snapshot is due, shutdown). Sessions look otherwise only at their
    /// leases' deadlines (at the latest every `HOLDING_LOOK`), so the
    /// wake-up is what makes them answer at once.
    ///
    /// Not an `async fn`: its future must be `enable`d to count from the
    /// moment it is made, not from its first poll (a session arms it before
    /// taking tasks, so that a wake-up its own grant causes is not missed).
    pub(crate) fn remote_steering(&self) -> tokio::sync::futures::Notified<'_> {
        self.shared.steer_remote.notified()
    }

    /// Resolves when this session is to ask one of its leases for a
    /// give-away: a slot went hungry. The pool wakes one session per hungry
    /// slot, the longest waiting first; one that cannot give passes it on
    /// ([`Pool::pass_hunger`]). `enable`d like [`Pool::remote_steering`].
    pub(crate) fn remote_hunger(&self) -> tokio::sync::futures::Notified<'_> {
        self.shared.hunger.notified()
    }

    /// A session woken by [`Pool::remote_hunger`] had no lease to ask a
    /// give-away of (all asked already, or none that may split): the
    /// wake-up goes to the next session, once per time the pool went
    /// hungry for each session (`passed` is the session's own note of
    /// when it last passed), so that sessions that cannot give do not pass
    /// it round for ever.
    pub(crate) fn pass_hunger(&self, passed: &mut u64) {
        let epoch = self.shared.hunger_epoch.load(Ordering::SeqCst);
        if self.is_hungry() && *passed != epoch {
            *passed = epoch;
            self.shared.hunger.notify_one();
            self.shared.hunger_wakes.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Hunger wake-ups issued so far, passed ones included (the simulated
    /// cluster wakes as many of its sessions).
    pub(crate) fn hunger_wakes(&self) -> u64 {
        self.shared.hunger_wakes.load(Ordering::SeqCst)
    }

    /// An audit of a finished remote lease of `job` begins (see
    /// `cluster::audit`): the job does not end before [`Pool::audit_end`].
    /// False if the job has ended already.
    pub(crate) fn audit_begin(&self, job: &Job) -> bool {
        let mut state = self.shared.state.locked();
        match state.jobs.get_mut(&job.id) {
            Some(entry) => {
                entry.auditing += 1;
                true
            }
            None => false,
        }
    }

    /// An audit begun with [`Pool::audit_begin`] is settled; the job ends if
    /// that was all it waited for.
    pub(crate) fn audit_end(&self, job: &Job) {
        let mut state = self.shared.state.locked();
        if let Some(entry) = state.jobs.get_mut(&job.id) {
            entry.auditing = entry.auditing.saturating_sub(1);
        }
        self.shared.end_job_if_done(&mut state, job.id);
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_all();
    }

    /// Takes back what finished remote runs of `job` booked (a worker an
    /// audit caught lying): their solutions, statistics and explored weight
    /// leave the job's books and their tasks are queued again, first. False
    /// if the job has ended (too late to correct it; callers hold an audit
    /// open so that it cannot).
    pub(crate) fn withdraw(&self, job: &Job, runs: Vec<Withdrawal>) -> bool {
        let mut state = self.shared.state.locked();
        let Some(entry) = state.jobs.get_mut(&job.id) else {
            return false;
        };
        let mut requeue = Vec::with_capacity(runs.len());
        for run in runs {
            job.withdraw(run.solutions, &run.stats);
            entry.finished_weight = (entry.finished_weight - run.weight).max(0.0);
            entry.tasks_done = entry.tasks_done.saturating_sub(1);
            requeue.push(run.work);
        }
        self.shared.enqueue(&mut state, job.id, requeue, true);
        self.shared.refresh(&state);
        drop(state);
        self.shared.wake_all();
        true
    }
}

/// What a finished remote run booked, to take back (see [`Pool::withdraw`]).
#[derive(Debug, Clone)]
pub(crate) struct Withdrawal {
    /// The run's task as it is to run again.
    pub(crate) work: QueuedTask,
    /// Solutions it counted that are to be counted again (none when they
    /// were streamed or kept: those cannot be taken back, and the task's
    /// rerun skips them).
    pub(crate) solutions: u64,
    pub(crate) stats: Stats,
    /// The weight of the tree it explored.
    pub(crate) weight: f64,
}
