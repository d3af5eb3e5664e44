//! The job resource's RPCs: CreateJob (with its request_id retries and a
//! durable job's record), GetJob, CancelJob, ListJobs and DeleteJob.
//!
//! This room owns a job's life as the API sees it; it must not stream
//! (`watch`), read a job's stored pages (`solutions` does, and this room
//! calls it) or repeat the search checks (`request`).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tonic::{Request, Response, Status};

use super::request::{nonzero, request_digest, request_id, Search, SearchAsk};
use super::solutions::{
    blocking, job_problem, stored_problem, stored_solutions, INLINE_SOLUTIONS, MAX_PAGE,
};
use super::{durable_entry, SolverApi};
use crate::puzzles::side_condition;
use crate::service::callers::Caller;
use crate::service::convert;
use crate::service::durable;
use crate::service::job::{Delivery, EndReason, JobSpec, RequestKey};
use crate::service::job_filter::{Filter, JobFacts};
use crate::service::jobs::{format_id, Entry};
use crate::service::page_token::{self, List};
use crate::service::proto as pb;
use crate::service::status;

/// Jobs per page of ListJobs when the request says 0, and the most.
const DEFAULT_JOBS_PAGE: usize = 100;
const MAX_JOBS_PAGE: usize = 1000;

/// Answers a CreateJob call.
pub(super) async fn create_job(
    api: &SolverApi,
    request: Request<pb::CreateJobRequest>,
) -> Result<Response<pb::CreateJobResponse>, Status> {
    let deadline = convert::deadline(&request).map(|d| Instant::now() + d);
    let caller = Caller::of(&request);
    let mut req = request.into_inner();
    let key = match req.request_id.as_str() {
        "" => None,
        id => Some(RequestKey {
            id: request_id(id)?,
            digest: {
                req.request_id.clear();
                request_digest(&req)
            },
        }),
    };
    // A retry and its first try may arrive together: one create with a
    // key at a time, so that the second finds the job the first made.
    let _one_at_a_time = match &key {
        Some(_) => Some(api.keyed_creates.lock().await),
        None => None,
    };
    if let Some(key) = &key {
        if let Some(entry) = api.jobs.find_request(&caller, &key.id) {
            let name = format_id(entry.id());
            if entry.request().is_some_and(|k| k.digest != key.digest) {
                return Err(status::ApiError::new(
                    status::Reason::RequestIdReused,
                    format!(
                        "request_id: {} made {name} with a different request; \
                         use a new request_id for a new job",
                        key.id
                    ),
                )
                .meta("name", &name)
                .resource(status::JOB_RESOURCE, &name)
                .into());
            }
            tracing::info!(job = entry.id(), "job create retried; returning the first");
            return Ok(Response::new(pb::CreateJobResponse {
                job: Some(api.job_message(&entry)),
            }));
        }
    }
    let keep = status::count(
        "keep_solutions",
        req.keep_solutions,
        api.config.default_keep,
        api.config.max_keep,
    )?;
    let (problem, puzzle) = match req.source {
        Some(pb::create_job_request::Source::Problem(problem)) => (
            Arc::new(convert::problem(Some(problem), &api.config.limits)?),
            None,
        ),
        Some(pb::create_job_request::Source::Puzzle(puzzle)) => {
            let (encoded, puzzle) = api.encoder.encode(Some(puzzle), deadline).await?;
            (Arc::new(encoded.problem().clone()), Some((encoded, puzzle)))
        }
        None => {
            return Err(status::invalid(
                "problem: required (give problem, or puzzle for a puzzle job)",
            ))
        }
    };
    let condition = puzzle
        .as_ref()
        .and_then(|(encoded, _)| side_condition(encoded));
    let preprocessed = api
        .preprocess(req.preprocess, &problem, puzzle.is_some(), deadline)
        .await?;
    let searched = preprocessed.as_ref().map_or(&problem, |p| &p.problem);
    let Search {
        memo,
        cheapest,
        engine,
    } = api.search(
        SearchAsk::listed(
            req.memo,
            req.cheapest,
            req.count_only,
            req.limit,
            "the job finds the K cheapest solutions, K its number: leave limit at 0",
            req.engine,
            condition.as_ref().is_some_and(|c| c.filters()),
        ),
        searched,
    )?;
    // The job keeps its K cheapest unless keep_solutions says fewer.
    let keep = match cheapest {
        Some(k) if req.keep_solutions == 0 => k,
        _ => keep,
    };
    let mut spec = JobSpec {
        engine,
        memo,
        cheapest,
        preprocessed,
        limit: nonzero(req.limit),
        max_nodes: nonzero(req.max_nodes),
        delivery: if req.count_only {
            Delivery::CountOnly
        } else {
            Delivery::Keep { keep }
        },
        condition,
        grids: puzzle.as_ref().map(|(encoded, _)| encoded.clone()),
        puzzle: puzzle.map(|(_, puzzle)| puzzle),
        owner: caller.clone(),
        request: key,
        ..JobSpec::default()
    };
    let job = match &api.durability {
        None => api.submit(problem, spec)?,
        Some(durability) => {
            let d = durability.clone();
            if let Some(refusal) = blocking(move || Ok(d.refuse_new_job())).await? {
                return Err(refusal);
            }
            spec.delivery = durable::delivery(req.count_only);
            spec.durable = true;
            let job = api.submit(problem, spec)?;
            let (d, j) = (durability.clone(), job.clone());
            if let Err(status) =
                blocking(move || d.create(&j, req.count_only).map_err(|e| status::store(&e))).await
            {
                api.pool.cancel(&job, EndReason::Cancelled);
                return Err(status);
            }
            durable::start_writer(api.pool.clone(), durability.clone(), job.clone());
            job
        }
    };
    api.jobs.insert(job.clone());
    tracing::info!(job = job.id, "job created");
    Ok(Response::new(pb::CreateJobResponse {
        job: Some(api.job_message(&Entry::Live(job))),
    }))
}

/// Answers a GetJob call.
pub(super) async fn get_job(
    api: &SolverApi,
    request: Request<pb::GetJobRequest>,
) -> Result<Response<pb::GetJobResponse>, Status> {
    let caller = Caller::of(&request);
    let req = request.into_inner();
    let entry = api.find(&req.name, &caller)?;
    let durable = durable_entry(&entry);
    // Only the window asked is copied and converted (a job may keep
    // 100,000 solutions and a poller ask for one), and a large window
    // off the runtime's threads, so that polling never stalls other calls.
    let window = match req.max_solutions as usize {
        0 => usize::MAX,
        n => n,
    };
    let solutions = match &entry {
        _ if durable => {
            let max = match req.max_solutions as usize {
                0 => api.config.default_keep,
                n => n.min(MAX_PAGE),
            };
            let store = api.store()?;
            let problem = stored_problem(store.clone(), entry.clone()).await?;
            stored_solutions(store, entry.id(), 0, max, &problem).await?
        }
        Entry::Live(job) => {
            let kept = job.kept(0, window);
            let problem = job_problem(job);
            let large = kept.len() > INLINE_SOLUTIONS;
            let convert = move || Ok(kept.iter().map(|s| problem.solution(s, true)).collect());
            if large {
                blocking(convert).await?
            } else {
                convert()?
            }
        }
        Entry::Ended(record) => {
            let record = record.clone();
            let n = record.solutions.len().min(window);
            let copy = move || Ok(record.solutions.messages(n));
            if n > INLINE_SOLUTIONS {
                blocking(copy).await?
            } else {
                copy()?
            }
        }
    };
    Ok(Response::new(pb::GetJobResponse {
        job: Some(api.job_message(&entry)),
        solutions,
    }))
}

/// Answers a CancelJob call.
pub(super) async fn cancel_job(
    api: &SolverApi,
    request: Request<pb::CancelJobRequest>,
) -> Result<Response<pb::CancelJobResponse>, Status> {
    let caller = Caller::of(&request);
    let entry = api.find(&request.into_inner().name, &caller)?;
    if let Entry::Live(job) = &entry {
        api.pool.cancel(job, EndReason::Cancelled);
        tracing::info!(job = job.id, "job cancelled");
    }
    Ok(Response::new(pb::CancelJobResponse {
        job: Some(api.job_message(&entry)),
    }))
}

/// Answers a ListJobs call.
pub(super) async fn list_jobs(
    api: &SolverApi,
    request: Request<pb::ListJobsRequest>,
) -> Result<Response<pb::ListJobsResponse>, Status> {
    let caller = Caller::of(&request);
    let req = request.into_inner();
    let size = match req.page_size as usize {
        0 => DEFAULT_JOBS_PAGE,
        n => n.min(MAX_JOBS_PAGE),
    };
    let filter = Filter::parse(&req.filter).map_err(|e| {
        status::invalid_because(status::Reason::InvalidFilter, format!("filter: {e}"))
    })?;
    // A token names the last job of the previous page: jobs that ended
    // or were deleted since do not shift the pages.
    let after = page_token::decode(&req.page_token, List::Jobs, &req.filter)
        .map_err(|e| status::invalid_because(status::Reason::InvalidPageToken, e.to_string()))?;
    let mine: Vec<Entry> = api
        .jobs
        .list()
        .into_iter()
        .filter(|entry| caller.owns(entry.owner()))
        .filter(|entry| after.is_none_or(|after| entry.id() > after))
        .filter(|entry| filter.matches(&facts(&api.job_message(entry))))
        .collect();
    let more = mine.len() > size;
    let page = &mine[..mine.len().min(size)];
    let next_page_token = match page.last() {
        Some(last) if more => page_token::encode(List::Jobs, last.id(), &req.filter),
        _ => String::new(),
    };
    let jobs = page.iter().map(|entry| api.job_message(entry)).collect();
    Ok(Response::new(pb::ListJobsResponse {
        jobs,
        next_page_token,
    }))
}

/// Answers a DeleteJob call.
pub(super) async fn delete_job(
    api: &SolverApi,
    request: Request<pb::DeleteJobRequest>,
) -> Result<Response<pb::DeleteJobResponse>, Status> {
    let caller = Caller::of(&request);
    let req = request.into_inner();
    let entry = api.find(&req.name, &caller)?;
    if let Entry::Live(job) = &entry {
        api.pool.cancel(job, EndReason::Cancelled);
        // Its writer ends once the job has; then nothing writes to it.
        let wait = tokio::time::timeout(Duration::from_secs(30), job.wait()).await;
        if wait.is_err() {
            return Err(status::error(
                status::Reason::JobStopping,
                "the job is still stopping; try DeleteJob again",
            ));
        }
        if job.spec.durable {
            let stored = job.clone();
            let _ = tokio::time::timeout(Duration::from_secs(30), async move {
                while !stored.end_stored() {
                    stored.changed(Duration::from_millis(50)).await;
                }
            })
            .await;
        }
    }
    let jobs = api.jobs.clone();
    let id = entry.id();
    blocking(move || jobs.remove(id).map_err(|e| status::store(&e))).await?;
    tracing::info!(job = id, "job deleted");
    Ok(Response::new(pb::DeleteJobResponse {}))
}

/// What a ListJobs filter sees of a job.
fn facts(job: &pb::Job) -> JobFacts {
    let time = |t: &Option<prost_types::Timestamp>| {
        t.as_ref()
            .and_then(|t| std::time::SystemTime::try_from(*t).ok())
    };
    JobFacts {
        state: job.state(),
        create_time: time(&job.create_time).unwrap_or(std::time::UNIX_EPOCH),
        end_time: time(&job.end_time),
        durable: job.durable,
    }
}
