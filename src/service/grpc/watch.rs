//! WatchJob: a stream of a job's progress (and, if asked, its solutions)
//! until it ends, for a live job, an ended one (replayed from its record)
//! or a durable one (its stored solutions from an index on).
//!
//! Watching never stops the job; this room must not cancel it (unlike
//! Enumerate's pump) nor validate the search (`request`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tonic::{Request, Response, Status};

use super::solutions::{job_problem, solution_messages, stored_lists, stored_problem};
use super::stream::{call_deadline, deadline_passed, send_until, stream_from, EventStream};
use super::{durable_entry, SolverApi};
use crate::service::callers::Caller;
use crate::service::convert;
use crate::service::job::Job;
use crate::service::jobs::{Entry, Record};
use crate::service::pool::Pool;
use crate::service::proto as pb;
use crate::service::status;
use crate::service::store::JobStore;

/// Solutions per message of a WatchJob of a durable job.
const WATCH_BATCH: usize = 1024;

/// Answers a WatchJob call.
pub(super) async fn watch_job(
    api: &SolverApi,
    request: Request<pb::WatchJobRequest>,
) -> Result<Response<EventStream<pb::WatchJobResponse>>, Status> {
    let deadline = convert::deadline(&request).map(|d| Instant::now() + d);
    let caller = Caller::of(&request);
    let req = request.into_inner();
    let interval = convert::interval("progress_interval_seconds", req.progress_interval_seconds)?;
    let entry = api.find(&req.name, &caller)?;
    let pool = api.pool.clone();
    let span = tracing::info_span!("job", id = entry.id(), rpc = "WatchJob");
    let packed = req.packed_solutions;
    let durable = durable_entry(&entry);
    if durable && req.include_solutions {
        let store = api.store()?;
        let watch = StoredWatch {
            pool,
            store,
            entry,
            from: req.from_solution,
            packed,
            interval,
            deadline,
        };
        return Ok(stream_from(span, move |tx| watch.run(tx)));
    }
    if req.from_solution > 0 {
        return Err(status::invalid(
            "from_solution: only the solutions of a durable job (a server with --data-dir), \
             watched with include_solutions, can be read from an index",
        ));
    }
    Ok(stream_from(span, move |tx| async move {
        match entry {
            Entry::Live(job) => {
                let solutions = req.include_solutions.then_some(packed);
                watch(pool, job, solutions, interval, deadline, tx).await
            }
            Entry::Ended(record) => {
                replay(&record, req.include_solutions.then_some(packed), tx).await
            }
        }
    }))
}

/// A WatchJob call on a durable job: its stored solutions from an index on,
/// as they are committed, with progress, then its summary.
struct StoredWatch {
    pool: Arc<Pool>,
    store: Arc<dyn JobStore>,
    entry: Entry,
    from: u64,
    /// Send solutions in SolutionBatch's packed form.
    packed: bool,
    interval: Duration,
    deadline: Option<Instant>,
}

impl StoredWatch {
    async fn run(self, tx: mpsc::Sender<Result<pb::WatchJobResponse, Status>>) {
        use pb::watch_job_response::Event as E;
        let wrap = |event| Ok(pb::WatchJobResponse { event: Some(event) });
        let deadline = call_deadline(self.deadline);
        let mut next = self.from;
        let mut next_progress = Instant::now();
        // Rebuilt at most once, when the first solution is sent.
        let mut problem = None;
        loop {
            let (committed, ended, message) = match &self.entry {
                Entry::Live(job) => {
                    // The job's end counts once its writer has stored it,
                    // with every solution before it.
                    let ended = job.end_stored();
                    (job.committed(), ended, None)
                }
                Entry::Ended(record) => (
                    record.message.stored_solutions,
                    true,
                    Some(record.message.clone()),
                ),
            };
            while next < committed {
                let max = WATCH_BATCH.min((committed - next) as usize);
                if problem.is_none() {
                    match stored_problem(self.store.clone(), self.entry.clone()).await {
                        Ok(found) => problem = Some(found),
                        Err(status) => {
                            let _ = tx.send(Err(status)).await;
                            return;
                        }
                    }
                }
                let lists = match stored_lists(self.store.clone(), self.entry.id(), next, max).await
                {
                    Ok(lists) if !lists.is_empty() => lists,
                    Ok(_) => break,
                    Err(status) => {
                        let _ = tx.send(Err(status)).await;
                        return;
                    }
                };
                next += lists.len() as u64;
                let problem = problem.as_ref().expect("read above");
                let event = E::Solutions(if self.packed {
                    let index_bytes = convert::packed_index_bytes(&problem.problem);
                    convert::packed_lists(lists.iter().map(Vec::as_slice), index_bytes)
                } else {
                    pb::SolutionBatch {
                        solutions: solution_messages(lists, Some(problem), true),
                        ..Default::default()
                    }
                });
                if !send_until(&tx, wrap(event), deadline).await {
                    return deadline_passed(&tx, deadline).await;
                }
            }
            if ended || Instant::now() >= next_progress {
                let progress = match (&self.entry, &message) {
                    (Entry::Live(job), _) => Some(convert::progress(&self.pool.progress(job))),
                    (_, Some(message)) => message.progress.clone(),
                    _ => None,
                };
                if let Some(progress) = progress {
                    if !send_until(&tx, wrap(E::Progress(progress)), deadline).await {
                        return deadline_passed(&tx, deadline).await;
                    }
                }
                next_progress = Instant::now() + self.interval;
            }
            if ended {
                // A live job's end says how the watch ends; an ended one's
                // is read back as it was recorded.
                let (summary, end) = match (&self.entry, message) {
                    (Entry::Live(job), _) => match job.summary() {
                        Some(s) => (Some(convert::summary(&s)), convert::watch_end_status(&s)),
                        None => (None, None),
                    },
                    (_, Some(message)) => (message.summary, None),
                    _ => (None, None),
                };
                if let Some(summary) = summary {
                    if !send_until(&tx, wrap(E::Summary(summary)), deadline).await {
                        return deadline_passed(&tx, deadline).await;
                    }
                }
                if let Some(status) = end {
                    let _ = send_until(&tx, Err(status), deadline).await;
                }
                return;
            }
            if Instant::now() >= deadline {
                let _ = tx
                    .send(Err(status::deadline("the call's deadline passed")))
                    .await;
                return;
            }
            if let Entry::Live(job) = &self.entry {
                tokio::select! {
                    () = tx.closed() => return,
                    () = job.changed(next_progress.saturating_duration_since(Instant::now())) => {}
                }
            }
        }
    }
}

/// Feeds a WatchJob call on an ended job: its kept solutions if asked,
/// then its last progress and its summary.
/// `solutions`: send the kept solutions, packed (true) or not.
async fn replay(
    record: &Record,
    solutions: Option<bool>,
    tx: mpsc::Sender<Result<pb::WatchJobResponse, Status>>,
) {
    use pb::watch_job_response::Event as E;
    let mut events = Vec::new();
    match solutions {
        _ if record.solutions.is_empty() => {}
        Some(true) => events.push(E::Solutions(convert::packed_lists(
            record.solutions.iter(),
            record.packed_index_bytes,
        ))),
        Some(false) => events.push(E::Solutions(pb::SolutionBatch {
            solutions: record.solutions.messages(usize::MAX),
            ..Default::default()
        })),
        None => {}
    }
    events.extend(record.message.progress.clone().map(E::Progress));
    events.extend(record.message.summary.clone().map(E::Summary));
    for event in events {
        if tx
            .send(Ok(pb::WatchJobResponse { event: Some(event) }))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Feeds one WatchJob call. Watching never stops the job. `solutions`:
/// send the kept solutions, packed (true) or not.
async fn watch(
    pool: Arc<Pool>,
    job: Arc<Job>,
    solutions: Option<bool>,
    interval: Duration,
    deadline: Option<Instant>,
    tx: mpsc::Sender<Result<pb::WatchJobResponse, Status>>,
) {
    use pb::watch_job_response::Event as E;
    let wrap = |event| Ok(pb::WatchJobResponse { event: Some(event) });
    let deadline = call_deadline(deadline);
    let mut sent = 0;
    let mut next_progress = Instant::now();
    loop {
        if let Some(packed) = solutions {
            let fresh = job.kept_from(sent);
            if !fresh.is_empty() {
                sent += fresh.len();
                let batch = if packed {
                    let index_bytes = convert::packed_index_bytes(&job.problem);
                    convert::packed_lists(fresh.iter().map(|s| &s[..]), index_bytes)
                } else {
                    pb::SolutionBatch {
                        solutions: {
                            let problem = job_problem(&job);
                            fresh.iter().map(|s| problem.solution(s, true)).collect()
                        },
                        ..Default::default()
                    }
                };
                if !send_until(&tx, wrap(E::Solutions(batch)), deadline).await {
                    return deadline_passed(&tx, deadline).await;
                }
            }
        }
        // Done as GetJob says it: a durable job once its end is stored.
        let summary = job.summary().filter(|_| job.is_over());
        if summary.is_some() || Instant::now() >= next_progress {
            let progress = convert::progress(&pool.progress(&job));
            if !send_until(&tx, wrap(E::Progress(progress)), deadline).await {
                return deadline_passed(&tx, deadline).await;
            }
            next_progress = Instant::now() + interval;
        }
        if let Some(summary) = summary {
            if solutions.is_some() && !job.kept_from(sent).is_empty() {
                continue;
            }
            if !send_until(&tx, wrap(E::Summary(convert::summary(&summary))), deadline).await {
                return deadline_passed(&tx, deadline).await;
            }
            if let Some(status) = convert::watch_end_status(&summary) {
                let _ = send_until(&tx, Err(status), deadline).await;
            }
            return;
        }
        if Instant::now() >= deadline {
            let _ = tx
                .send(Err(status::deadline("the call's deadline passed")))
                .await;
            return;
        }
        tokio::select! {
            () = tx.closed() => return,
            () = job.changed(next_progress.saturating_duration_since(Instant::now())) => {}
        }
    }
}
