//! The queue and its scheduling: which task a free worker takes next (fair
//! round-robin among jobs, interactive calls first), and the flags running
//! tasks read at their polls without the lock (`hungry`, `urgent`, the
//! ready counts).
//!
//! Owns [`State`] (the jobs' queues, idle workers, running remote runs) and
//! every change to its ring. It must not end jobs or book runs (see
//! [`super::job_end`]) nor decide what a run does at a poll (see
//! [`super::policy`]): it answers the questions the policy asks.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use super::{Shared, INTERACTIVE_PRIORITY};
use crate::run::{Failure, QueuedTask};
use crate::service::job::{Class, Job, JobId, JobSpec};
use crate::service::memory::Charge;
use crate::service::metrics as metric;
use crate::service::sync::{wait_timeout, Locked};

/// A job as the scheduler holds it, from its start to its end: its queue of
/// tasks and the books of its runs.
pub(super) struct ScheduledJob {
    pub(super) job: Arc<Job>,
    pub(super) queue: VecDeque<QueuedTask>,
    /// When each task of `queue` (at the same place) was queued, for
    /// `xccd_task_queue_wait_seconds`.
    pub(super) queued_at: VecDeque<Instant>,
    pub(super) running: usize,
    pub(super) tasks_done: u64,
    pub(super) finished_weight: f64,
    /// Audits of its finished remote leases not yet settled: the job does
    /// not end before they are (see `cluster::audit`).
    pub(super) auditing: usize,
    /// The job's memory, given back when it ends.
    pub(super) _memory: Charge,
}

/// A running remote lease, as the pool sees it.
pub(super) struct RemoteRun {
    pub(super) job: JobId,
    /// Explored weight and nodes, from the worker's heartbeats.
    pub(super) done_weight: f64,
    pub(super) nodes: u64,
    /// Asked to checkpoint so that its slot takes an interactive task.
    pub(super) yielding: bool,
}

/// Everything the scheduler decides from, under the pool's one lock.
#[derive(Default)]
pub(super) struct State {
    /// Jobs that may have queued tasks, in round-robin order.
    pub(super) ring: VecDeque<JobId>,
    pub(super) jobs: HashMap<JobId, ScheduledJob>,
    /// Idle local threads and idle remote slots.
    pub(super) idle: usize,
    /// Task slots of the connected remote workers.
    pub(super) remote_slots: usize,
    /// Running remote leases, by lease id.
    pub(super) remote_runs: HashMap<u64, RemoteRun>,
    /// Batch runs asked to yield their worker to an interactive task: local
    /// ones whose thread has not yet taken its next task, remote ones whose
    /// lease has not yet ended.
    pub(super) yielding: usize,
    pub(super) shutdown: bool,
    /// Since when the pool has had no worker at all (no local thread, no
    /// remote slot), if it has none.
    pub(super) workerless_since: Option<Instant>,
}

impl Shared {
    pub(super) fn wake_one(&self) {
        self.work.notify_one();
        self.wake_remote_one();
    }

    pub(super) fn wake_all(&self) {
        self.work.notify_all();
        self.wake_remote_one();
    }

    /// Wakes one remote session waiting for work, if a task is ready.
    pub(super) fn wake_remote_one(&self) {
        if self.ready_jobs.load(Ordering::SeqCst) > 0 {
            self.remote_work.notify_one();
        }
    }

    /// The admission limit of a class of jobs.
    pub(super) fn limit(&self, class: Class) -> usize {
        match class {
            Class::Batch => self.max_jobs,
            Class::Interactive => self.max_interactive_jobs,
        }
    }

    /// Recomputes the flags that running tasks read without the lock.
    pub(super) fn refresh(&self, state: &State) {
        let (mut ready, mut ready_interactive, mut interactive_tasks) = (0, 0, 0);
        let now = Instant::now();
        for entry in state.ring.iter().filter_map(|id| state.jobs.get(id)) {
            // A job whose tasks all wait out a backoff is not ready (the
            // pool's timer refreshes when the first one may go).
            if !entry.queue.iter().any(|work| work.ready(now)) || stalled(&entry.job) {
                continue;
            }
            ready += 1;
            if has_priority(&entry.job) {
                ready_interactive += 1;
                interactive_tasks += entry.queue.len();
            }
        }
        let was_ready = self.ready_jobs.swap(ready, Ordering::SeqCst);
        let was_interactive = self
            .ready_interactive
            .swap(ready_interactive, Ordering::SeqCst);
        let rose = ready > was_ready || ready_interactive > was_interactive;
        if rose && state.jobs.len() > 1 {
            // A job's task became ready: remote runs of other jobs may be
            // past their slice (see `others_waiting`); they learn of it only
            // when asked. With one job there is no other to wait.
            self.steer_remote.notify_waiters();
        }
        let urgent = interactive_tasks.saturating_sub(state.idle + state.yielding);
        if self.urgent.swap(urgent, Ordering::SeqCst) == 0 && urgent > 0 {
            // Remote batch runs yield only when asked: ask now, not at the
            // sessions' next look.
            self.steer_remote.notify_waiters();
        }
        let hungry = state.idle > 0 && ready == 0 && !state.shutdown;
        let was = self.hungry.swap(hungry, Ordering::SeqCst);
        if hungry && !was {
            self.hunger_epoch.fetch_add(1, Ordering::SeqCst);
        }
        // Asks outstanding for more runs than there are: void.
        let runs = state.remote_runs.len();
        let mut out = self.hunger_out.load(Ordering::SeqCst).min(runs);
        // Remote runs learn of it only when asked: ask now, not at the
        // sessions' next look, and ask one run per hungry slot (a session
        // that cannot give passes its wake-up on, see `Pool::pass_hunger`),
        // not every session.
        let want = if hungry { state.idle.min(runs) } else { 0 };
        if want > out {
            for _ in out..want {
                self.hunger.notify_one();
            }
            self.hunger_wakes
                .fetch_add((want - out) as u64, Ordering::SeqCst);
            out = want;
        }
        self.hunger_out.store(out, Ordering::SeqCst);
    }

    /// One hunger wake-up is answered (a give-away came back) or void (a
    /// run ended, perhaps the one asked): the next refresh issues another
    /// if slots are still hungry. Called under the lock, before `refresh`.
    pub(super) fn hunger_settled(&self) {
        let out = self.hunger_out.load(Ordering::SeqCst);
        self.hunger_out
            .store(out.saturating_sub(1), Ordering::SeqCst);
    }

    /// Takes the next task to run, waiting if there is none; with it, the
    /// nodes its job has explored so far.
    /// `yielded`: this thread's last run yielded to an interactive task
    /// (which this thread is now to take, unless another got it first).
    pub(super) fn next_task(
        &self,
        index: usize,
        yielded: bool,
    ) -> Option<(Arc<Job>, QueuedTask, u64)> {
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
            if let Some((job, work)) = Self::pick(&mut state, false, &[]) {
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

    pub(super) fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        // A timeout covers the one wake-up that needs no lock: a consumer
        // making room in a stalled job's buffer between our check and wait.
        wait_timeout(&self.work, state, Duration::from_millis(50))
    }

    /// Takes the first task of the first interactive job in the ring that
    /// has one to run, else of the first job that has; a remote worker
    /// cannot take tasks of jobs whose side condition it cannot rebuild.
    /// `barred`: jobs whose tasks this worker may not take (a remote worker
    /// an audit caught lying on them).
    pub(super) fn pick(
        state: &mut State,
        remote: bool,
        barred: &[JobId],
    ) -> Option<(Arc<Job>, QueuedTask)> {
        for interactive_only in [true, false] {
            if let Some(picked) = Self::pick_from(state, remote, interactive_only, barred) {
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

    pub(super) fn pick_from(
        state: &mut State,
        remote: bool,
        interactive_only: bool,
        barred: &[JobId],
    ) -> Option<(Arc<Job>, QueuedTask)> {
        let now = Instant::now();
        for turn in 0..state.ring.len() {
            let id = state.ring[turn];
            let Some(entry) = state.jobs.get_mut(&id) else {
                continue;
            };
            if entry.queue.is_empty()
                || stalled(&entry.job)
                || (remote && !remote_can_run(&entry.job.spec))
                || (interactive_only && !has_priority(&entry.job))
                || barred.contains(&id)
            {
                continue;
            }
            // The first task not waiting out a backoff after a loss.
            let Some(at) = entry.queue.iter().position(|work| work.ready(now)) else {
                continue;
            };
            let task = entry.queue.remove(at).expect("present");
            if let Some(queued) = entry.queued_at.remove(at) {
                // A task waiting out a backoff waits from the backoff's end.
                let from = task.not_before.map_or(queued, |at| at.max(queued));
                metrics::histogram!(metric::TASK_QUEUE_WAIT)
                    .record(now.saturating_duration_since(from));
            }
            entry.running += 1;
            let job = entry.job.clone();
            let more = !entry.queue.is_empty();
            state.ring.remove(turn);
            if more {
                state.ring.push_back(id);
            }
            return Some((job, task));
        }
        None
    }

    pub(super) fn enqueue(
        &self,
        state: &mut State,
        id: JobId,
        tasks: Vec<QueuedTask>,
        front: bool,
    ) {
        let Some(entry) = state.jobs.get_mut(&id) else {
            return;
        };
        let now = Instant::now();
        if front {
            for task in tasks.into_iter().rev() {
                entry.queue.push_front(task);
                entry.queued_at.push_front(now);
            }
        } else {
            entry
                .queued_at
                .extend(std::iter::repeat_n(now, tasks.len()));
            entry.queue.extend(tasks);
        }
        if !state.ring.contains(&id) {
            state.ring.push_back(id);
        }
    }

    /// Whether a job other than `job` has a task ready that should take
    /// the worker of a run of `job` whose slice is over: any job for a
    /// batch run, an interactive one for an interactive run.
    pub(super) fn others_waiting(&self, job: &Job) -> bool {
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
    pub(super) fn should_yield(&self, job: &Job, remote_lease: Option<u64>) -> bool {
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
        metrics::counter!(metric::TASKS_YIELDED).increment(1);
        true
    }
}

/// Whether a job's tasks go before batch tasks: an interactive job, for
/// [`INTERACTIVE_PRIORITY`] from its start.
pub(super) fn has_priority(job: &Job) -> bool {
    job.spec.class == Class::Interactive && job.started.elapsed() < INTERACTIVE_PRIORITY
}

/// Whether a job's tasks must wait: its consumer has no room, or a
/// snapshot of it is due.
pub(crate) fn stalled(job: &Job) -> bool {
    job.snapshot_due() || job.output.as_ref().is_some_and(|o| o.is_stalled())
}

/// Whether remote workers can run the job's tasks: they rebuild a side
/// condition from the puzzle it encodes, and cannot receive one given as
/// code only; a memoized count and a cheapest-solutions search (one task
/// each, never split) stay on the server's own threads.
pub(super) fn remote_can_run(spec: &JobSpec) -> bool {
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
    pub(super) fn look_for_waiting_jobs(&self) -> bool {
        let mut state = self.state.locked();
        if state.shutdown {
            return false;
        }
        let Some(since) = state.workerless_since else {
            metrics::gauge!(metric::JOBS_WAITING, "reason" => "no_workers").set(0.0);
            return true;
        };
        let now = Instant::now();
        let mut waiting = 0;
        let mut expired = Vec::new();
        for (&id, entry) in &state.jobs {
            if entry.running > 0 || entry.job.is_stopping() {
                continue;
            }
            waiting += 1;
            let from = since.max(entry.job.started);
            if entry.job.spec.waits_on_call
                && now.saturating_duration_since(from) >= self.no_worker_grace
            {
                expired.push(id);
            }
        }
        metrics::gauge!(metric::JOBS_WAITING, "reason" => "no_workers").set(waiting as f64);
        for id in expired {
            if let Some(entry) = state.jobs.get(&id) {
                tracing::warn!(job = id, "no worker within the grace: the job fails");
                entry.job.fail(Failure::NoWorkers(format!(
                    "no worker is connected to run the search (waited {:.1} s); try again later",
                    self.no_worker_grace.as_secs_f64()
                )));
            }
            self.end_job_if_done(&mut state, id);
        }
        self.refresh(&state);
        true
    }
}
