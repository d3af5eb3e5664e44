//! Audits of remote workers' reports: what a finished lease booked is run
//! again on the coordinator and compared.
//!
//! A streamed solution is checked as it comes (see `coordinator::reports`),
//! but a count-only lease reports a number, and a streamed lease may end
//! EXHAUSTED without sending all its solutions: neither can be checked
//! from the report alone. The engine is deterministic, so a task run again
//! gives the same numbers on every path: the same count of solutions, the
//! same nodes and the same updates. So a sample of the leases that finish
//! (`serve --audit-rate`, a fraction; 1.0 runs every lease twice) is run
//! again, after the fact, by one thread of the coordinator (not another
//! worker: a thread of its own cannot collude with the worker it checks,
//! and it needs no protocol), and its numbers compared with the lease's.
//!
//! - **What is compared**: the solutions (their number and, for a stream,
//!   their [`Fingerprint`]: a worker that sends one solution twice and
//!   leaves out another has the right number, every solution valid), the
//!   nodes and the updates, and how the run ended.
//! - **What is audited**: leases that end EXHAUSTED (their part of the tree
//!   is the leased task minus what the run gave away, which the ledger
//!   recorded as cuts); leases that checkpoint: those are replayed,
//!   polling at every node, to the node count they reported (a worker may
//!   poll at any interval, so only a poll at each node stops where it
//!   stopped) and must hand back the same tasks (their
//!   part of the tree is not the task with the work handed back cut away:
//!   the cells engine numbers a node's alternatives as its run left them);
//!   and leases lost with their worker after delivering something, whose
//!   tasks go on past it: those are replayed to the last solution they
//!   delivered, which must be the task's first ones (a count no more than
//!   the task has). Leases that stop (a limit, a revoke) are not.
//! - **Sampling**: a lease of a worker that has had `a` audits is audited
//!   with probability `min(1, r·(1 + 3/(1 + a)))`: at least `r`, and more for
//!   workers with few audits behind them (a worker that joins to lie on a
//!   few leases meets audits sooner). Draws come from a ChaCha8 generator
//!   seeded with `--audit-seed`: the same order of leases gets the same
//!   audits.
//! - **A mismatch** convicts the worker (by the name it gave in its Hello):
//!   its connections are ended with PERMISSION_DENIED and it is barred
//!   from the job (or, with `--audit-bar server`, from the coordinator for
//!   the server's life); every lease it finished for the job is taken back
//!   (its solutions counted, statistics and explored weight leave the
//!   job's books) and its task queued again (a checkpointed one is
//!   replayed here instead, delivering what it should have), and so are
//!   the leases it held;
//!   `xccd_audit_mismatches_total{worker}` counts it.
//! - **What cannot be corrected fails the job** (DATA_LOSS,
//!   `AUDIT_UNCORRECTABLE`) rather than let it end with a wrong answer: a
//!   stream's solutions have reached the client, so a caught worker's
//!   streamed lease is corrected only when what it sent is its task's first
//!   solutions (the stream then goes on past them: an omission is mended,
//!   a duplicate is not); and the tasks a checkpoint handed back were
//!   queued and may have run, so a caught worker's checkpoint must be the
//!   one its run makes. Counts are always corrected.
//! - **A job does not end before the audits of its leases are settled**
//!   (the pool holds it open, [`Pool::audit_begin`]), so its answer is
//!   corrected before the client sees it.
//!
//! The chance that a liar that lies on every lease goes unseen: each of
//! its `k` finished leases escapes an audit with probability at most
//! `1 - r`, independently, so all of them with at most `(1 - r)^k`; once
//! one is caught every one is redone, so the job's answer is wrong only
//! then (or the job fails, as above).
//!
//! It must not hold leases (the sessions do) nor book runs (the pool does).

use std::collections::{HashMap, HashSet};
use std::sync::{mpsc, Arc, Mutex, Weak};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::Notify;

use super::fingerprint::Fingerprint;
use crate::run::{run_task, Failure, QueuedTask, RunEnd, RunSpec, Stop, Taken};
use crate::service::job::{Job, JobId};
use crate::service::metrics as metric;
use crate::service::pool::{Pool, Withdrawal};
use crate::service::sync::Locked;
use crate::xcc::{Solver, Stats};

/// How the coordinator audits its workers.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditConfig {
    /// The share of finished leases run again (0 audits none; 1 all).
    pub rate: f64,
    /// Seeds the draws that choose them.
    pub seed: u64,
    /// A worker caught lying is barred for the server's life (else for the
    /// job it lied on).
    pub bar_for_life: bool,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            rate: DEFAULT_RATE,
            seed: 0,
            bar_for_life: false,
        }
    }
}

/// `serve --audit-rate` by default: a lease in a hundred.
pub const DEFAULT_RATE: f64 = 0.01;

/// How much more often a worker with no audits behind it is audited than
/// the rate says (see the module's documentation).
const NEW_WORKER_BONUS: f64 = 3.0;

/// A lease that ended EXHAUSTED, as its session booked it.
#[derive(Debug, Clone)]
pub(super) struct Finished {
    /// The task as leased, with the cuts of what it gave away; its weight
    /// is what the run explored; its skip, the solutions delivered before.
    pub(super) work: QueuedTask,
    /// The index after the last solution it delivered.
    pub(super) delivered: u64,
    /// Its statistics as the worker reported them.
    pub(super) stats: Stats,
    /// Count-only: its solutions were only counted (and can be taken
    /// back); else streamed or kept.
    pub(super) counted: bool,
    /// The fingerprint of the solutions it delivered (none for a count).
    pub(super) fingerprint: Fingerprint,
    /// How it ended: EXHAUSTED, checkpointed, or lost.
    pub(super) end: Ended,
}

/// How an audited lease ended.
#[derive(Debug, Clone)]
pub(super) enum Ended {
    Exhausted,
    /// Checkpointed, handing back `remaining`. Its run is replayed to the
    /// node where it stopped, which must hand back the same tasks. The
    /// replay polls at every node: a worker may poll as often as it likes
    /// (a simulated one polls at its budget), so the poll it checkpointed
    /// at is any node, and only a replay that polls at each one stops at
    /// the same one.
    Checkpointed {
        remaining: Vec<crate::xcc::Task>,
    },
    /// Lost with its worker, having delivered solutions (or counted them):
    /// its task is queued again to go on past them, so what is checked is
    /// that they are its task's first ones (the replay stops there). A
    /// count-only lease only claims a number: it must not be more than the
    /// task has.
    Lost,
}

/// A replay of a checkpointed run: it checkpoints at the first poll at or
/// past `nodes`, and hands its batches to `deliver`.
struct Replay<F> {
    nodes: u64,
    deliver: F,
}

impl<F: FnMut(crate::run::Batch)> crate::run::Port for Replay<F> {
    fn deliver(&mut self, batch: crate::run::Batch, _force: bool) -> Taken {
        (self.deliver)(batch);
        Taken::All
    }
    fn control(&mut self, progress: &crate::xcc::ProgressView<'_>) -> crate::run::Control {
        if self.nodes > 0 && progress.stats.nodes >= self.nodes {
            crate::run::Control::Checkpoint
        } else {
            crate::run::Control::Continue
        }
    }
}

/// Runs `finished`'s task again as its run went (to its end, to its
/// checkpoint, or, lost, to the last solution it delivered), from solution
/// `skip` on, handing the batches to `deliver`.
fn replay(
    job: &Job,
    solver: &mut Solver,
    finished: &Finished,
    skip: u64,
    want_solutions: bool,
    deliver: impl FnMut(crate::run::Batch),
) -> crate::run::RunReport {
    let (nodes, poll_interval) = match &finished.end {
        Ended::Exhausted | Ended::Lost => (0, crate::xcc::POLL_INTERVAL),
        // Exact for any poll the worker chose (see [`Ended::Checkpointed`]).
        Ended::Checkpointed { .. } => (finished.stats.nodes, 1),
    };
    let limit = match &finished.end {
        // Never zero: a lost lease is recorded only with solutions past its skip.
        Ended::Lost => Some(finished.delivered.saturating_sub(skip).max(1)),
        _ => None,
    };
    let spec = RunSpec {
        skip,
        limit,
        want_solutions,
        batch_size: if want_solutions { 256 } else { usize::MAX },
        poll_interval,
        stop: Some(job.stop.clone()),
        ..RunSpec::default()
    };
    run_task(
        solver,
        job.searched(),
        &finished.work.task,
        &spec,
        job.spec.condition.as_deref(),
        &mut Replay { nodes, deliver },
    )
}

/// What a replay of a lease found, delivering nothing: its report, and the
/// fingerprints of its solutions past the lease's skip (of all of them, and
/// of those before the index the lease delivered up to).
struct Replayed {
    report: crate::run::RunReport,
    all: Fingerprint,
    delivered: Fingerprint,
}

fn replay_quietly(job: &Job, solver: &mut Solver, finished: &Finished) -> Replayed {
    let mut all = Fingerprint::default();
    let mut delivered = Fingerprint::default();
    let upto = finished.delivered;
    let report = replay(
        job,
        solver,
        finished,
        finished.work.skip,
        !finished.counted,
        |batch| {
            for (k, solution) in batch.solutions.iter().enumerate() {
                all.add(solution);
                if batch.first.saturating_add(k as u64) < upto {
                    delivered.add(solution);
                }
            }
        },
    );
    Replayed {
        report,
        all,
        delivered,
    }
}

/// Whether what a lease booked holds against its replay (`None`: the
/// replay was stopped with its job, nothing to settle); else what differs.
fn judge(finished: &Finished, replayed: &Replayed) -> Option<Result<(), String>> {
    let report = &replayed.report;
    let ended_alike = match (&finished.end, &report.end) {
        (Ended::Exhausted, RunEnd::Exhausted) => true,
        (Ended::Checkpointed { remaining }, RunEnd::Checkpointed(again)) => {
            same_tasks(remaining, again)
        }
        // Stopped at the last solution it delivered, or its task has
        // fewer (the numbers below differ then).
        (Ended::Lost, RunEnd::Stopped(Stop::SolutionLimit) | RunEnd::Exhausted) => true,
        // The replay went on past where the run said it stopped, or
        // stopped before: not the same run.
        (_, RunEnd::Exhausted | RunEnd::Checkpointed(_) | RunEnd::Stopped(Stop::SolutionLimit)) => {
            false
        }
        // Stopped with its job: nothing to settle.
        _ => return None,
    };
    let same_solutions = finished.counted || finished.fingerprint == replayed.all;
    let lost = matches!(finished.end, Ended::Lost);
    let claimed = (
        finished.delivered,
        finished.stats.nodes,
        finished.stats.updates,
    );
    // A lease's books start at its skip: a task queued again past more
    // solutions than it has (a count a caught worker claimed) delivers
    // none and stays there.
    let found = (
        report.found.max(finished.work.skip),
        report.stats.nodes,
        report.stats.updates,
    );
    // A lost lease stopped at a node nobody knows: only its solutions count.
    let agree = if lost {
        claimed.0 == found.0
    } else {
        claimed == found
    };
    if agree && ended_alike && same_solutions {
        return Some(Ok(()));
    }
    let mut why = if lost {
        format!(
            "a lease lost with its worker had delivered up to solution {}; run again here to \
             there, its task gives {}",
            claimed.0, found.0
        )
    } else {
        format!(
            "a lease reported {} solutions, {} nodes and {} updates; run again here, its task \
             gives {} solutions, {} nodes and {} updates",
            claimed.0, claimed.1, claimed.2, found.0, found.1, found.2
        )
    };
    if !ended_alike {
        why.push_str(", and another end");
    }
    if !same_solutions {
        why.push_str(", and other solutions (their fingerprints differ)");
    }
    Some(Err(why))
}

/// Redoes a checkpointed lease of a caught worker here: what it booked is
/// taken back, and its run replayed, delivering its solutions from where
/// the worker's delivery stopped being trusted (all of a count; the ones a
/// stream did not get).
fn redo_here(job: &Job, solver: &mut Solver, finished: &Finished) {
    let (withdrawn, skip) = if finished.counted {
        (
            finished.delivered.saturating_sub(finished.work.skip),
            finished.work.skip,
        )
    } else {
        (0, finished.delivered)
    };
    job.withdraw(withdrawn, &finished.stats);
    let report = replay(job, solver, finished, skip, !finished.counted, |batch| {
        job.deliver(batch, true);
    });
    job.add_stats(&report.stats);
}

/// Corrects what a lease of a caught worker booked: returns what the pool
/// must take back and queue again, if anything; or why the job's answer
/// cannot be corrected. What a count-only lease counted can be taken back;
/// what a stream delivered has reached the client, so it must be the
/// task's first solutions (the stream then goes on past them), and the
/// tasks a checkpoint handed back were queued, so they must be what the
/// run's checkpoint hands back.
fn redo(job: &Job, solver: &mut Solver, finished: &Finished) -> Result<Option<Withdrawal>, String> {
    if finished.taken_back_whole() {
        return Ok(Some(finished.withdrawal()));
    }
    let replayed = replay_quietly(job, solver, finished);
    if matches!(
        replayed.report.end,
        RunEnd::Stopped(Stop::Asked) | RunEnd::Failed(_) | RunEnd::OutOfMemory(_)
    ) {
        // Stopped with its job (or failing it): nothing to correct.
        return Ok(None);
    }
    if !finished.counted && replayed.delivered != finished.fingerprint {
        return Err(format!(
            "streamed {} solutions that are not its task's first ones (they reached the client \
             and cannot be taken back)",
            finished.delivered.saturating_sub(finished.work.skip)
        ));
    }
    match &finished.end {
        Ended::Exhausted => Ok(Some(finished.withdrawal())),
        Ended::Lost => {
            // Its task was queued again to go on past what it claimed; a
            // count past what the task has is taken back.
            if finished.counted {
                let over = finished.delivered.saturating_sub(replayed.report.found);
                job.withdraw(over, &Stats::default());
            }
            Ok(None)
        }
        Ended::Checkpointed { remaining } => {
            let alike = matches!(&replayed.report.end, RunEnd::Checkpointed(again) if same_tasks(remaining, again));
            if !alike {
                return Err(
                    "checkpointed a lease at a node its run does not stop at (the tasks it handed \
                     back were queued and cannot be taken back)"
                        .to_string(),
                );
            }
            redo_here(job, solver, finished);
            Ok(None)
        }
    }
}

/// A caught worker's lie cannot be corrected (see [`redo`]): the job
/// fails, saying so, rather than end with a wrong answer.
fn fail_uncorrectable(job: &Job, worker: &str, why: &str) {
    tracing::error!(
        worker,
        job = job.id,
        why,
        "an audit found a lie that cannot be corrected: the job fails"
    );
    job.fail(Failure::Corrupted(format!(
        "remote worker {worker:?}, caught lying by an audit, {why}: the answer cannot be \
         corrected, so the job failed; run it again (the worker is barred from it)"
    )));
}

/// Whether two lists of tasks name the same parts of the tree.
fn same_tasks(a: &[crate::xcc::Task], b: &[crate::xcc::Task]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.path == y.path && x.from == y.from && x.to == y.to)
}

impl Finished {
    /// A count that ran to its end: a caught worker's is taken back and
    /// its task queued again, with nothing to check first (a count reached
    /// no client, and no task of it was handed on).
    fn taken_back_whole(&self) -> bool {
        self.counted && matches!(self.end, Ended::Exhausted)
    }

    /// What to take back of a lease that ran to its end, and its task to
    /// run again.
    fn withdrawal(&self) -> Withdrawal {
        let mut work = self.work.clone();
        let solutions = if self.counted {
            self.delivered.saturating_sub(self.work.skip)
        } else {
            // Out already: the rerun skips what was delivered.
            work.skip = self.delivered;
            0
        };
        Withdrawal {
            work,
            solutions,
            stats: self.stats.clone(),
            weight: self.work.task.weight,
        }
    }
}

/// What a session must do once it has booked a finished lease (see
/// [`Auditor::finished`]).
#[must_use]
pub(super) enum Next {
    Nothing,
    /// Hand it to the auditing thread ([`Auditor::go`]).
    Audit(Check),
    /// Its worker was caught already: take it back (a count that ran to
    /// its end; anything else is redone by the auditing thread).
    Withdraw(Arc<Job>, Withdrawal),
}

/// One audit to run.
pub(super) struct Check {
    job: Arc<Job>,
    worker: String,
    finished: Finished,
    /// Its worker was caught already: redo it rather than audit it.
    redo: bool,
}

/// A worker's finished leases of one running job (to take back if it is
/// caught).
struct Record {
    job: Weak<Job>,
    leases: Vec<Finished>,
}

#[derive(Default)]
struct Books {
    /// Audits begun, by worker name.
    audits: HashMap<String, u64>,
    leases: HashMap<(JobId, String), Record>,
    /// Workers barred from jobs, by name.
    barred: HashMap<String, Vec<(JobId, Weak<Job>)>>,
    barred_for_life: HashSet<String>,
    /// Connected sessions, by session id: the worker's name, and how to
    /// end the session.
    sessions: HashMap<String, (String, Arc<Notify>)>,
    /// Leases booked since the records of ended jobs were last dropped.
    since_sweep: usize,
}

/// The coordinator's auditor (see the module's documentation).
pub struct Auditor {
    config: AuditConfig,
    pool: Arc<Pool>,
    books: Mutex<Books>,
    rng: Mutex<ChaCha8Rng>,
    /// To the auditing thread, started at the first audit.
    queue: Mutex<Option<mpsc::Sender<Check>>>,
    me: Weak<Auditor>,
}

/// Records of ended jobs are dropped every this many leases.
const SWEEP_EVERY: usize = 1024;

impl Auditor {
    pub fn new(pool: Arc<Pool>, config: AuditConfig) -> Arc<Auditor> {
        Arc::new_cyclic(|me| Auditor {
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
            config,
            pool,
            books: Mutex::new(Books::default()),
            queue: Mutex::new(None),
            me: me.clone(),
        })
    }

    /// Whether leases are audited at all (else their solutions need no
    /// fingerprint).
    pub(super) fn is_on(&self) -> bool {
        self.config.rate > 0.0
    }

    /// Whether a worker of this name may connect (not barred for life).
    pub(super) fn admits(&self, name: &str) -> bool {
        !self.books.locked().barred_for_life.contains(name)
    }

    /// A session began: `kick` ends it when its worker is caught.
    pub(super) fn joined(&self, id: &str, name: &str) -> Arc<Notify> {
        let kick = Arc::new(Notify::new());
        self.books
            .locked()
            .sessions
            .insert(id.to_string(), (name.to_string(), kick.clone()));
        kick
    }

    pub(super) fn left(&self, id: &str) {
        self.books.locked().sessions.remove(id);
    }

    /// The running jobs a worker of this name may not take tasks of.
    pub(super) fn barred_jobs(&self, name: &str) -> Vec<JobId> {
        let books = self.books.locked();
        books.barred.get(name).map_or_else(Vec::new, |jobs| {
            jobs.iter()
                .filter(|(_, job)| job.strong_count() > 0)
                .map(|(id, _)| *id)
                .collect()
        })
    }

    /// Whether a worker of this name is barred from `job`.
    fn is_barred(books: &Books, name: &str, job: JobId) -> bool {
        books
            .barred
            .get(name)
            .is_some_and(|jobs| jobs.iter().any(|(id, _)| *id == job))
    }

    /// A lease of worker `name` on `job` ended (EXHAUSTED, checkpointed, or
    /// lost having delivered something), about to be booked: records it,
    /// and says whether it is to be audited (or taken back at once, its
    /// worker caught already). Either holds the job open until it is
    /// settled: call [`Auditor::go`] once it is booked.
    pub(super) fn finished(&self, name: &str, job: &Arc<Job>, finished: Finished) -> Next {
        if self.config.rate <= 0.0 {
            return Next::Nothing;
        }
        let mut books = self.books.locked();
        books.since_sweep += 1;
        if books.since_sweep >= SWEEP_EVERY {
            books.since_sweep = 0;
            books
                .leases
                .retain(|_, record| record.job.upgrade().is_some_and(|j| j.summary().is_none()));
            for jobs in books.barred.values_mut() {
                jobs.retain(|(_, job)| job.strong_count() > 0);
            }
        }
        if Self::is_barred(&books, name, job.id) {
            drop(books);
            if !self.pool.audit_begin(job) {
                return Next::Nothing;
            }
            if finished.taken_back_whole() {
                return Next::Withdraw(job.clone(), finished.withdrawal());
            }
            return Next::Audit(Check {
                job: job.clone(),
                worker: name.to_string(),
                finished,
                redo: true,
            });
        }
        let audits = books.audits.get(name).copied().unwrap_or(0);
        let chance = (self.config.rate * (1.0 + NEW_WORKER_BONUS / (1.0 + audits as f64))).min(1.0);
        let draw: f64 = self.rng.locked().random();
        let audit = draw < chance;
        books
            .leases
            .entry((job.id, name.to_string()))
            .or_insert_with(|| Record {
                job: Arc::downgrade(job),
                leases: Vec::new(),
            })
            .leases
            .push(finished.clone());
        if !audit {
            return Next::Nothing;
        }
        *books.audits.entry(name.to_string()).or_default() += 1;
        drop(books);
        if !self.pool.audit_begin(job) {
            return Next::Nothing;
        }
        Next::Audit(Check {
            job: job.clone(),
            worker: name.to_string(),
            finished,
            redo: false,
        })
    }

    /// Goes on with a booked lease (see [`Auditor::finished`]).
    pub(super) fn go(&self, next: Next) {
        match next {
            Next::Nothing => {}
            Next::Withdraw(job, withdrawal) => {
                self.pool.withdraw(&job, vec![withdrawal]);
                self.pool.audit_end(&job);
            }
            Next::Audit(check) => {
                let mut queue = self.queue.locked();
                let sender = queue.get_or_insert_with(|| self.start_thread());
                if let Err(mpsc::SendError(check)) = sender.send(check) {
                    // No auditing thread: the lease stands unaudited.
                    tracing::error!("the auditing thread is gone");
                    self.pool.audit_end(&check.job);
                }
            }
        }
    }

    fn start_thread(&self) -> mpsc::Sender<Check> {
        let (tx, rx) = mpsc::channel::<Check>();
        let me = self.me.clone();
        let spawned = std::thread::Builder::new()
            .name("xccd-audit".into())
            .spawn(move || {
                let mut solver: Option<(JobId, Solver)> = None;
                while let Ok(check) = rx.recv() {
                    let Some(auditor) = me.upgrade() else {
                        return;
                    };
                    let job = check.job.clone();
                    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        auditor.audit(&mut solver, check)
                    }));
                    if ran.is_err() {
                        solver = None;
                        tracing::error!(job = job.id, "an audit panicked");
                    }
                    auditor.pool.audit_end(&job);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "no thread for audits");
        }
        tx
    }

    /// Runs one audit and acts on its verdict.
    fn audit(&self, solver: &mut Option<(JobId, Solver)>, check: Check) {
        let Check {
            job,
            worker,
            finished,
            redo: redoing,
        } = check;
        if job.is_stopping() {
            return;
        }
        if solver.as_ref().is_none_or(|(id, _)| *id != job.id) {
            *solver = Some((job.id, job.new_solver()));
        }
        let (_, solver) = solver.as_mut().expect("built");
        if redoing {
            match redo(&job, solver, &finished) {
                Ok(Some(withdrawal)) => {
                    self.pool.withdraw(&job, vec![withdrawal]);
                }
                Ok(None) => {}
                Err(why) => fail_uncorrectable(&job, &worker, &why),
            }
            return;
        }
        let replayed = replay_quietly(&job, solver, &finished);
        let Some(verdict) = judge(&finished, &replayed) else {
            return;
        };
        job.count_audit();
        metrics::counter!(metric::AUDITS).increment(1);
        let Err(why) = verdict else {
            return;
        };
        if self.barred_from(&worker, job.id) {
            // Caught already: everything it finished for the job is redone.
            return;
        }
        self.convict(&worker, &job, &why, solver);
    }

    /// Worker `name` lied on `job`: barred, disconnected, and everything it
    /// finished for the job taken back (or the job failed, where that
    /// cannot be done).
    fn convict(&self, name: &str, job: &Arc<Job>, why: &str, solver: &mut Solver) {
        metrics::counter!(metric::AUDIT_MISMATCHES, "worker" => name.to_string()).increment(1);
        tracing::warn!(worker = %name, job = job.id, %why, "audit mismatch: the worker is barred and its leases redone");
        let mut books = self.books.locked();
        let jobs = books.barred.entry(name.to_string()).or_default();
        if !jobs.iter().any(|(id, _)| *id == job.id) {
            jobs.push((job.id, Arc::downgrade(job)));
        }
        if self.config.bar_for_life {
            books.barred_for_life.insert(name.to_string());
        }
        let leases = books
            .leases
            .remove(&(job.id, name.to_string()))
            .map_or_else(Vec::new, |record| record.leases);
        let kicks: Vec<Arc<Notify>> = books
            .sessions
            .values()
            .filter(|(worker, _)| worker == name)
            .map(|(_, kick)| kick.clone())
            .collect();
        drop(books);
        // Counts that ran to their end are taken back and run again
        // elsewhere; the rest are checked, and a checkpointed one replayed
        // here (its part of the tree is not a task), delivering what it
        // should have.
        let mut withdrawals = Vec::new();
        for finished in &leases {
            match redo(job, solver, finished) {
                Ok(Some(withdrawal)) => withdrawals.push(withdrawal),
                Ok(None) => {}
                Err(why) => {
                    fail_uncorrectable(job, name, &why);
                    withdrawals.clear();
                    break;
                }
            }
        }
        if !withdrawals.is_empty() {
            let redone = leases.len();
            if !self.pool.withdraw(job, withdrawals) {
                tracing::error!(worker = %name, job = job.id, "the job ended before its audit: its answer stands uncorrected");
            }
            tracing::info!(worker = %name, job = job.id, redone, "leases of a barred worker queued again");
        }
        for kick in kicks {
            kick.notify_one();
        }
    }

    /// Whether `name` is barred from `job` (a session booking the leases it
    /// still held when it was caught).
    pub(super) fn barred_from(&self, name: &str, job: JobId) -> bool {
        Self::is_barred(&self.books.locked(), name, job)
    }
}
