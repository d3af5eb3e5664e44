//! A job's solutions as replies carry them: a durable job's stored pages
//! (ListJobSolutions, and the reads GetJob and WatchJob make of the store),
//! a job's problem as its solutions' messages need it, and store reads off
//! the async runtime's threads.
//!
//! This room owns reading and converting solutions; it must not decide
//! which job a caller may see (`SolverApi::find`) or stream (`watch`).

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::request::packed_or_text;
use super::SolverApi;
use crate::service::callers::Caller;
use crate::service::convert::{self, JobProblem};
use crate::service::durable;
use crate::service::job::{Job, JobId};
use crate::service::jobs::Entry;
use crate::service::page_token::{self, List};
use crate::service::proto as pb;
use crate::service::status;
use crate::service::store::{JobStore, StoreError};
use crate::xcc::problem::quote;

/// Solutions per page of ListJobSolutions when the request says 0, and the
/// most a page may hold.
const DEFAULT_PAGE: usize = 1000;
pub(super) const MAX_PAGE: usize = 100_000;

/// Answers a ListJobSolutions call.
pub(super) async fn list_job_solutions(
    api: &SolverApi,
    request: Request<pb::ListJobSolutionsRequest>,
) -> Result<Response<pb::ListJobSolutionsResponse>, Status> {
    let caller = Caller::of(&request);
    let req = request.into_inner();
    let entry = api.find(&req.name, &caller)?;
    let store = api.store()?;
    let (durable, committed, ended) = match &entry {
        Entry::Live(job) => (job.spec.durable, job.committed(), job.end_stored()),
        Entry::Ended(record) => (record.durable(), record.message.stored_solutions, true),
    };
    if !durable {
        return Err(status::error(
            status::Reason::JobNotStored,
            format!(
                "name: {} was not stored (it was submitted to a server without --data-dir); \
             read its kept solutions with GetJob",
                quote(&req.name)
            ),
        ));
    }
    let size = status::count("page_size", req.page_size, DEFAULT_PAGE, MAX_PAGE)?;
    packed_or_text(req.packed_solutions, req.include_option_text)?;
    let list = List::Solutions { job: entry.id() };
    let from = page_token::decode(&req.page_token, list, "")
        .map_err(|e| status::invalid_because(status::Reason::InvalidPageToken, e.to_string()))?
        .unwrap_or(0);
    let (puzzle_job, costs) = match &entry {
        Entry::Live(job) => (job.spec.grids.is_some(), job.problem.has_costs()),
        Entry::Ended(record) => (
            record.message.puzzle_kind != pb::PuzzleKind::Unspecified as i32,
            record.costs,
        ),
    };
    // Rebuilt only when the page needs it: for option text, the packed
    // form's index width, a puzzle job's grids, or its solutions' costs.
    let problem = match req.include_option_text || req.packed_solutions || puzzle_job || costs {
        true => Some(stored_problem(store.clone(), entry.clone()).await?),
        false => None,
    };
    let lists = stored_lists(store, entry.id(), from, size).await?;
    let next = from + lists.len() as u64;
    let more = !ended || next < committed;
    let (solutions, packed) = match &problem {
        Some(problem) if req.packed_solutions => {
            let index_bytes = convert::packed_index_bytes(&problem.problem);
            let batch = convert::packed_lists(lists.iter().map(Vec::as_slice), index_bytes);
            (Vec::new(), Some(batch))
        }
        _ => (
            solution_messages(lists, problem.as_ref(), req.include_option_text),
            None,
        ),
    };
    Ok(Response::new(pb::ListJobSolutionsResponse {
        solutions,
        packed,
        first_index: from,
        next_page_token: if more {
            page_token::encode(list, next, "")
        } else {
            String::new()
        },
    }))
}

/// Solutions a reply converts or copies on the async runtime's thread;
/// more go to a blocking thread (a few microseconds each: a window this
/// small costs less than the hand-over).
pub(super) const INLINE_SOLUTIONS: usize = 256;

/// Runs store work off the async runtime's threads.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Status> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|_| Err(status::internal("reading the job store failed")))
}

/// A running job's problem, as its solutions' messages need it.
pub(super) fn job_problem(job: &Job) -> JobProblem {
    JobProblem {
        problem: job.problem.clone(),
        puzzle: job.spec.grids.clone(),
    }
}

/// The problem of a durable job, for its options' text and a puzzle job's
/// grids: a running job's own, an ended one's rebuilt from the store (once
/// per call, not per page).
pub(super) async fn stored_problem(
    store: Arc<dyn JobStore>,
    entry: Entry,
) -> Result<JobProblem, Status> {
    match entry {
        Entry::Live(job) => Ok(job_problem(&job)),
        Entry::Ended(_) => {
            blocking(move || {
                let stored = store
                    .get(entry.id())
                    .map_err(|e| status::store(&e))?
                    .ok_or_else(|| {
                        let name = entry.id().to_string();
                        status::job_not_found(&name, format!("{name}: the job was deleted"))
                    })?;
                durable::stored_problem(&stored.problem).map_err(status::internal)
            })
            .await
        }
    }
}

/// Up to `max` stored solutions of durable job `id` from index `from` on,
/// with their options' text (and a puzzle job's grids).
pub(super) async fn stored_solutions(
    store: Arc<dyn JobStore>,
    id: JobId,
    from: u64,
    max: usize,
    problem: &JobProblem,
) -> Result<Vec<pb::Solution>, Status> {
    let lists = stored_lists(store, id, from, max).await?;
    Ok(solution_messages(lists, Some(problem), true))
}

/// Up to `max` stored solutions of durable job `id` from index `from` on,
/// as lists of option indices.
pub(super) async fn stored_lists(
    store: Arc<dyn JobStore>,
    id: JobId,
    from: u64,
    max: usize,
) -> Result<Vec<Vec<u32>>, Status> {
    blocking(move || {
        store
            .solutions(id, from, max)
            .map_err(|e: StoreError| status::store(&e))
    })
    .await
}

/// One Solution message per list: with `problem`, with its options' text
/// if `with_text` and its grid for a puzzle job.
pub(super) fn solution_messages(
    lists: Vec<Vec<u32>>,
    problem: Option<&JobProblem>,
    with_text: bool,
) -> Vec<pb::Solution> {
    lists
        .into_iter()
        .map(|option_indices| match problem {
            Some(problem) => problem.solution(&option_indices, with_text),
            None => pb::Solution {
                option_indices,
                ..Default::default()
            },
        })
        .collect()
}
