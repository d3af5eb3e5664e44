//! Durable jobs at run time: the writer that carries a job's events to the
//! store, the snapshots it asks the pool for, and the jobs a restart
//! resumes.
//!
//! A durable job streams like an Enumerate call, with the store's writer as
//! its consumer: its solutions go through its bounded output buffer, so a
//! slow disk holds the job back instead of filling memory. Every
//! `snapshot_interval`, and whenever many solutions wait to be committed,
//! the writer asks for a snapshot; the snapshot arrives in the same buffer
//! after every solution delivered before it, so writing in buffer order
//! keeps the store consistent at every commit.

use std::sync::Arc;
use std::time::Duration;

use prost::Message;

use super::callers::Caller;
use super::cluster::proto::{self as wire, ProblemData};
use super::convert::{self, JobProblem};
use super::job::{Class, Delivery, EndReason, Event, Job, JobSpec};
use super::jobs::{self, JobRegistry};
use super::metrics as metric;
use super::pool::Pool;
use super::status;
use super::store::{JobStore, NewJob, StoreError, StoredRequest, Write};
use crate::run::Failure;

/// Solutions per batch of a durable job (and per chunk of the store).
pub const BATCH_SIZE: usize = 1024;
/// How long the writer lets batches gather before a transaction.
const GATHER: Duration = Duration::from_millis(10);
/// Batches of solutions a durable job buffers for its writer.
pub const BUFFER_BATCHES: usize = 64;

/// The store and its limits.
pub struct Durability {
    pub store: Arc<dyn JobStore>,
    pub limits: StoreLimits,
}

#[derive(Debug, Clone)]
pub struct StoreLimits {
    /// Most bytes one job's solutions may take in the store.
    pub max_job_bytes: u64,
    /// Most bytes all stored solutions may take: past it new jobs are
    /// refused, and running ones fail when they write more.
    pub max_total_bytes: u64,
    /// How often a running job's progress is committed.
    pub snapshot_interval: Duration,
    /// A snapshot is also asked for once this many solutions wait.
    pub snapshot_solutions: u64,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            max_job_bytes: 1 << 30,
            max_total_bytes: 8 << 30,
            snapshot_interval: Duration::from_secs(2),
            snapshot_solutions: 256 * 1024,
        }
    }
}

/// Store failures, as the job's failure and the log see them.
fn store_failure(error: &StoreError) -> Failure {
    Failure::Store(format!("the job store failed: {error}"), error.cause())
}

/// Why the store takes no more solutions.
fn store_full(bytes: u64, limit: u64) -> String {
    format!(
        "the job store holds {bytes} bytes of solutions, its limit is {limit} \
         (--max-store-bytes); delete jobs (DeleteJob) to make room"
    )
}

/// The delivery of a durable job's solutions.
pub fn delivery(count_only: bool) -> Delivery {
    if count_only {
        Delivery::CountOnly
    } else {
        Delivery::Stream {
            buffer_batches: BUFFER_BATCHES,
            batch_size: BATCH_SIZE,
        }
    }
}

impl Durability {
    /// Why a new job cannot be stored now, if it cannot: a store that
    /// cannot be written is checked again first (room may have come back).
    pub fn refuse_new_job(&self) -> Option<tonic::Status> {
        if let Some(cause) = self.store.writable() {
            return Some(status::store(&StoreError::Unwritable {
                cause,
                detail: String::new(),
            }));
        }
        match self.store.total_bytes() {
            Ok(bytes) if bytes >= self.limits.max_total_bytes => Some(status::exhausted(
                status::Reason::StoreFull,
                store_full(bytes, self.limits.max_total_bytes),
            )),
            Ok(_) => None,
            Err(error) => Some(status::store(&error)),
        }
    }

    /// Records a job just submitted, before its writer starts.
    pub fn create(&self, job: &Job, count_only: bool) -> Result<(), StoreError> {
        let wire = wire::wire_problem(&job.problem, job.spec.puzzle.as_ref());
        let new = NewJob {
            id: job.id,
            request: StoredRequest {
                limit: job.spec.limit,
                max_nodes: job.spec.max_nodes,
                count_only,
                owner: job.spec.owner.0.as_deref().map(str::to_string),
                engine: job.spec.engine,
                created_unix_seconds: convert::unix_seconds(job.created),
                request_id: job.spec.request.as_ref().map(|key| key.id.clone()),
                request_digest: job.spec.request.as_ref().map(|key| key.digest.clone()),
                memo: job.spec.memo.is_some(),
                cheapest: job.spec.cheapest.map(|k| k as u32),
                costs: job.problem.has_costs(),
                preprocess_mems: job.spec.preprocessed.as_ref().map(|p| p.max_mems),
            },
            problem: ProblemData::from(&wire).encode_to_vec(),
        };
        metric::time_store_write("create", || self.store.create(&new))
    }
}

/// Starts the writer of a durable job (a task on the runtime).
pub fn start_writer(pool: Arc<Pool>, durability: Arc<Durability>, job: Arc<Job>) {
    tokio::spawn(write_job(pool, durability, job));
}

/// Carries a durable job's events to the store until its end is written.
async fn write_job(pool: Arc<Pool>, durability: Arc<Durability>, job: Arc<Job>) {
    let limits = durability.limits.clone();
    let mut written = job.committed();
    let mut waiting = 0u64;
    let mut ticker = tokio::time::interval(limits.snapshot_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        let first = tokio::select! {
            event = job.next_event() => event,
            _ = ticker.tick() => {
                pool.request_snapshot(&job);
                continue;
            }
        };
        // A transaction costs more than a batch: let a few more batches
        // arrive first (the buffer takes longer than this to fill, so no
        // run waits for it).
        if matches!(first, Event::Solutions(_)) {
            tokio::time::sleep(GATHER).await;
        }
        let mut events = vec![first];
        if let Some(output) = &job.output {
            while events.len() < BUFFER_BATCHES {
                match output.pop() {
                    Some(event) => events.push(event),
                    None => break,
                }
            }
        }
        let mut writes = Vec::with_capacity(events.len());
        let mut commit = None;
        let mut done = false;
        for event in events {
            match event {
                Event::Solutions(solutions) => {
                    let count = solutions.len() as u64;
                    writes.push(Write::Solutions {
                        first: written,
                        solutions,
                    });
                    written += count;
                    waiting += count;
                }
                Event::Snapshot(snapshot) => {
                    commit = Some(snapshot.solutions.min(written));
                    waiting = 0;
                    writes.push(Write::Snapshot(snapshot));
                }
                // A job stopped by the server's shutdown is not over: its
                // last snapshot stands, and the next start resumes it.
                Event::Done(summary) if summary.reason == EndReason::Shutdown => done = true,
                Event::Done(summary) => {
                    let stored = summary.solutions.min(written);
                    let message = jobs::final_message(&pool, &job, stored);
                    commit = Some(stored);
                    writes.push(Write::Ended {
                        solutions: summary.solutions,
                        message: message.encode_to_vec(),
                    });
                    done = true;
                }
            }
        }
        let store = durability.store.clone();
        let id = job.id;
        let result = tokio::task::spawn_blocking(move || {
            let bytes = metric::time_store_write("apply", || store.apply(id, &writes))?;
            let total = store.total_bytes()?;
            Ok::<_, StoreError>((bytes, total))
        })
        .await
        .unwrap_or_else(|panic| Err(StoreError::Io(format!("the writer panicked: {panic}"))));
        match result {
            Ok((bytes, total)) => {
                if let Some(committed) = commit {
                    job.set_committed(committed);
                }
                if bytes > limits.max_job_bytes {
                    job.fail(Failure::Exhausted(format!(
                        "the job's stored solutions take {bytes} bytes, more than the limit of \
                         {} per job (--max-job-store-bytes); submit it with count_only, or a limit",
                        limits.max_job_bytes
                    )));
                } else if total > limits.max_total_bytes {
                    job.fail(Failure::Exhausted(store_full(
                        total,
                        limits.max_total_bytes,
                    )));
                }
            }
            // Another coordinator leads now and goes on with the job from
            // its last snapshot: this one steps down, and the job is not
            // over (nothing more of it is written here).
            Err(StoreError::Fenced { .. }) => {
                tracing::warn!(
                    job = id,
                    "the job's writes are fenced off: another leader has it"
                );
                return;
            }
            Err(error) => {
                tracing::error!(job = id, %error, "writing a durable job failed");
                job.fail(store_failure(&error));
            }
        }
        if done {
            job.set_end_stored();
            return;
        }
        if waiting >= limits.snapshot_solutions && !job.snapshot_due() {
            pool.request_snapshot(&job);
        }
    }
}

/// Resumes every unfinished job of the store on `pool`, and records them in
/// `registry`. A job that cannot run again (its problem no longer parses)
/// is ended as failed, with the reason, rather than left to vanish.
pub fn resume_all(
    pool: &Arc<Pool>,
    registry: &JobRegistry,
    durability: &Arc<Durability>,
) -> Result<usize, StoreError> {
    let store = &durability.store;
    pool.ids_above(store.max_job_id()?);
    let mut resumed = 0;
    let unfinished = match store.degraded() {
        Some(cause) => Err(cause),
        // Resuming writes (it drops solutions past each snapshot).
        None => match store.resume() {
            Err(error) => Err(error.cause().ok_or(error)?),
            Ok(jobs) => Ok(jobs),
        },
    };
    let unfinished = match unfinished {
        Ok(jobs) => jobs,
        Err(cause) => {
            // A store that cannot be written runs no job: each stays as it
            // is stored, readable, and resumes at a start with room.
            let why = format!(
                "not resumed: the job store cannot be written ({}); the job resumes when the \
                 server starts again on a writable store",
                cause.advice()
            );
            let why = status::error(status::store_reason(Some(cause)), why);
            for job in store.list()?.into_iter().filter(|job| job.ended.is_none()) {
                tracing::warn!(job = job.id, "{}", why.message());
                registry.insert_unresumed(&job, &why);
            }
            return Ok(0);
        }
    };
    for stored in unfinished {
        let snapshot = stored.snapshot.expect("resume returns snapshots");
        let problem = ProblemData::decode(stored.problem.as_slice())
            .map_err(|e| e.to_string())
            .and_then(|data| wire::instance(&data));
        // A preprocessed job reduces its problem again, as it did at first.
        let problem = problem.and_then(|instance| match stored.request.preprocess_mems {
            None => Ok((instance, None)),
            Some(mems) => super::preprocess::reduce(&instance.problem, mems, &|| false)
                .map(|p| (instance, Some(Arc::new(p))))
                .map_err(|e| format!("preprocess: {e}")),
        });
        let (instance, preprocessed) = match problem {
            Ok(found) => found,
            Err(message) => {
                tracing::error!(job = stored.id, %message, "a stored job cannot run again");
                let why = status::error(
                    status::Reason::JobNotResumable,
                    format!("the stored job cannot run again: {message}"),
                );
                let failed = jobs::failed_message(stored.id, &stored.request, &why);
                store.apply(
                    stored.id,
                    &[Write::Ended {
                        solutions: stored.committed,
                        message: failed.encode_to_vec(),
                    }],
                )?;
                continue;
            }
        };
        let spec = JobSpec {
            // A resumed job's trace is not kept: its tasks start new ones.
            traceparent: None,
            limit: stored.request.limit,
            max_nodes: stored.request.max_nodes,
            delivery: delivery(stored.request.count_only),
            condition: instance.condition,
            grids: instance.puzzle.as_ref().map(|(_, encoded)| encoded.clone()),
            puzzle: instance.puzzle.map(|(puzzle, _)| puzzle),
            owner: Caller(stored.request.owner.as_deref().map(Arc::from)),
            durable: true,
            engine: stored.request.engine,
            class: Class::Batch,
            request: stored.request.request_key(),
            waits_on_call: false,
            // A memoized count starts again from the root, under this
            // server's limit (its task is never split, so nothing is lost).
            memo: match stored.request.memo {
                false => None,
                true => Some(
                    convert::memo_limit(
                        preprocessed
                            .as_ref()
                            .map_or(&instance.problem, |p| &p.problem),
                        pool.run_memory_limit(),
                    )
                    .unwrap_or(0),
                ),
            },
            // Likewise the cheapest solutions: found again from the root
            // (they are delivered only when the search ends).
            cheapest: stored.request.cheapest.map(|k| k as usize),
            preprocessed,
        };
        let job = pool
            .resume(
                stored.id,
                instance.problem,
                spec,
                &snapshot,
                stored.committed,
                convert::from_unix_seconds(stored.request.created_unix_seconds),
            )
            .map_err(|e| StoreError::Io(format!("job {}: {e}", stored.id)))?;
        tracing::info!(
            job = job.id,
            solutions = snapshot.solutions,
            tasks = snapshot.tasks.len(),
            "job resumed from the store"
        );
        registry.insert(job.clone());
        start_writer(pool.clone(), durability.clone(), job);
        resumed += 1;
    }
    Ok(resumed)
}

/// The problem of a stored job, rebuilt (for option texts and grids).
pub fn stored_problem(bytes: &[u8]) -> Result<JobProblem, String> {
    let data = ProblemData::decode(bytes).map_err(|e| e.to_string())?;
    let instance = wire::instance(&data)?;
    Ok(JobProblem {
        problem: instance.problem,
        puzzle: instance.puzzle.map(|(_, encoded)| encoded),
    })
}

/// Commits the progress of every running durable job (for a shutdown),
/// waiting at most `timeout` for them.
pub async fn snapshot_all(pool: &Pool, jobs: Vec<Arc<Job>>, timeout: Duration) {
    let waiting: Vec<(Arc<Job>, u64)> = jobs
        .into_iter()
        .filter(|job| job.spec.durable && job.summary().is_none())
        .map(|job| {
            let commits = job.commits();
            pool.request_snapshot(&job);
            (job, commits)
        })
        .collect();
    let deadline = tokio::time::Instant::now() + timeout;
    while waiting
        .iter()
        .any(|(job, commits)| job.commits() == *commits && job.summary().is_none())
    {
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!("shutting down before every durable job's progress was committed");
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
