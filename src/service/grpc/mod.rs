//! The `SolverService` RPCs, on top of the pool: the API's settings
//! ([`ApiConfig`]), the service ([`SolverApi`]) and what every RPC asks of
//! it (the store, submitting a job, finding one a caller may see).
//!
//! Each RPC lives in a room of its own idea, and the trait's methods here
//! only hand the call to it: `solve` (Solve), `enumerate` (Enumerate),
//! `jobs_api` (CreateJob, GetJob, CancelJob, ListJobs, DeleteJob), `watch`
//! (WatchJob), `solutions` (ListJobSolutions and reading stored
//! solutions), with `request` (the checks the RPCs share) and `stream`
//! (the pump every solution stream goes through). This file must not hold
//! an RPC's own logic.

mod enumerate;
mod jobs_api;
mod request;
mod solutions;
mod solve;
mod stream;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use super::callers::Caller;
use super::convert::{self, ProblemLimits};
use super::durable::Durability;
use super::estimate::Estimator;
use super::job::{Job, JobSpec};
use super::jobs::{self, parse_id, Entry, JobRegistry};
use super::pool::{Pool, SubmitError};
use super::preprocess;
use super::proto as pb;
use super::proto::solver_service_server::SolverService;
use super::puzzle_input::PuzzleEncoder;
use super::status;
use super::store::JobStore;
use crate::xcc::problem::quote;
use crate::xcc::Problem;

pub(super) use stream::{CancelOnDrop, EventStream, Pump, StreamEvents};

/// Settings of the API layer.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub limits: ProblemLimits,
    /// Most solutions a Solve call may ask for (Enumerate has no limit).
    pub max_solve_limit: u64,
    /// Solution batches buffered per streaming call.
    pub buffer_batches: usize,
    pub default_batch_size: usize,
    /// The default batch of a packed stream (`packed_solutions`), for
    /// problems whose solutions are short enough (see
    /// [`ApiConfig::packed_batch_size`]).
    pub default_packed_batch_size: usize,
    /// Most solutions per batch a request may ask for.
    pub max_batch_size: usize,
    /// Kept solutions of a submitted job when the request says 0.
    pub default_keep: usize,
    pub max_keep: usize,
    /// The most mems a request's preprocessing (`preprocess`) may spend:
    /// DLX-PRE's `T`, past which the problem reduced so far is searched.
    pub max_preprocess_mems: u64,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            limits: ProblemLimits::default(),
            max_solve_limit: 100_000,
            buffer_batches: 8,
            default_batch_size: 256,
            default_packed_batch_size: 4096,
            max_batch_size: 65_536,
            default_keep: 100,
            max_keep: 100_000,
            max_preprocess_mems: preprocess::DEFAULT_MAX_MEMS,
        }
    }
}

/// Most option indices in a packed batch by default: 2 MiB, half of the
/// largest message gRPC clients take unless told otherwise.
const PACKED_BATCH_INDICES: usize = 1 << 19;

impl ApiConfig {
    /// The default batch of a packed stream of `problem`'s solutions:
    /// `default_packed_batch_size`, or fewer when its solutions can be so
    /// long that a batch would hold over [`PACKED_BATCH_INDICES`] indices;
    /// never fewer than `default_batch_size`.
    pub fn packed_batch_size(&self, problem: &Problem) -> usize {
        let fit = PACKED_BATCH_INDICES / problem.max_solution_len().max(1);
        fit.min(self.default_packed_batch_size)
            .max(self.default_batch_size)
    }

    /// The limits of a puzzle's encoding: a problem's limits, and the work
    /// of building it.
    pub fn puzzle_limits(&self) -> crate::puzzles::EncodingLimits {
        crate::puzzles::EncodingLimits {
            items: self.limits.max_items as u64,
            options: self.limits.max_options as u64,
            entries: self.limits.max_entries as u64,
            ..crate::puzzles::EncodingLimits::DEFAULT
        }
    }
}

pub struct SolverApi {
    pool: Arc<Pool>,
    jobs: Arc<JobRegistry>,
    config: ApiConfig,
    /// The job store, when submitted jobs are durable.
    durability: Option<Arc<Durability>>,
    estimator: Estimator,
    /// Encodes the puzzles of puzzle jobs.
    encoder: Arc<PuzzleEncoder>,
    /// Held by a CreateJob with a request_id from its lookup of the key to
    /// the job's registration (see `create_job`).
    keyed_creates: tokio::sync::Mutex<()>,
    /// Reductions (`preprocess`) run before their jobs are admitted: at
    /// most one a core at a time, so that requests cannot hold more cores
    /// than the server has by preprocessing; the others wait, within their
    /// deadline.
    preprocessing: tokio::sync::Semaphore,
}

impl SolverApi {
    pub fn new(
        pool: Arc<Pool>,
        jobs: Arc<JobRegistry>,
        config: ApiConfig,
        durability: Option<Arc<Durability>>,
        encoder: Arc<PuzzleEncoder>,
    ) -> SolverApi {
        SolverApi {
            pool,
            jobs,
            config,
            durability,
            estimator: Estimator::default(),
            encoder,
            keyed_creates: tokio::sync::Mutex::new(()),
            preprocessing: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, |n| n.get()),
            ),
        }
    }

    fn store(&self) -> Result<Arc<dyn JobStore>, Status> {
        self.durability
            .as_ref()
            .map(|d| d.store.clone())
            .ok_or_else(|| {
                status::error(
                    status::Reason::NoJobStore,
                    "this server keeps jobs in memory only: it has no job store to read \
                     solutions from (start it with --data-dir)",
                )
            })
    }

    fn submit(&self, problem: Arc<Problem>, spec: JobSpec) -> Result<Arc<Job>, Status> {
        self.pool.submit(problem, spec).map_err(refused)
    }

    fn job_message(&self, entry: &Entry) -> pb::Job {
        match entry {
            Entry::Live(job) => jobs::message(&self.pool, job),
            Entry::Ended(record) => record.message.clone(),
        }
    }

    /// The job `id` names, if `caller` may see it: another caller's job is
    /// as absent as one that never was.
    fn find(&self, id: &str, caller: &Caller) -> Result<Entry, Status> {
        let parsed = parse_id(id).ok_or_else(|| {
            status::invalid(format!(
                "name: {} is not a job name (jobs/{{id}})",
                quote(id)
            ))
        })?;
        self.jobs
            .get(parsed)
            .filter(|entry| caller.owns(entry.owner()))
            .ok_or_else(|| {
                status::job_not_found(id, format!("name: no job {id} (it may have expired)"))
            })
    }
}

/// Whether `entry` is a durable job's (its solutions are in the store).
fn durable_entry(entry: &Entry) -> bool {
    match entry {
        Entry::Live(job) => job.spec.durable,
        Entry::Ended(record) => record.durable(),
    }
}

/// The status for a job the pool refused.
pub(super) fn refused(e: SubmitError) -> Status {
    match e {
        SubmitError::TooManyJobs(_) => {
            status::exhausted(status::Reason::TooManyJobs, e.to_string())
        }
        SubmitError::TooManyInteractiveJobs(_) => {
            status::exhausted(status::Reason::TooManyInteractiveJobs, e.to_string())
        }
        SubmitError::TooManyJobsForCaller(limit) => {
            status::ApiError::new(status::Reason::TooManyJobsForKey, e.to_string())
                .meta("limit", limit)
                .quota(
                    "api_key",
                    format!("{limit} queued or running jobs per API key (--max-jobs-per-key)"),
                )
                .into()
        }
        SubmitError::ShuttingDown => status::shutting_down(e.to_string()),
        SubmitError::NeedsLocalThreads => {
            status::error(status::Reason::NeedsLocalThreads, e.to_string())
        }
        SubmitError::SearchMemoryLimit(need) => convert::memory_limit_status(&need),
        SubmitError::MemoryBusy {
            needed,
            free,
            total,
        } => status::exhausted_with(
            status::Reason::ServerMemoryBusy,
            e.to_string(),
            &[
                ("needed_bytes", needed.to_string()),
                ("free_bytes", free.to_string()),
                ("limit_bytes", total.to_string()),
            ],
            Some(Duration::from_secs(1)),
        ),
    }
}

#[tonic::async_trait]
impl SolverService for SolverApi {
    async fn solve(
        &self,
        request: Request<pb::SolveRequest>,
    ) -> Result<Response<pb::SolveResponse>, Status> {
        solve::solve(self, request).await
    }

    type EnumerateStream = EventStream<pb::EnumerateResponse>;

    async fn enumerate(
        &self,
        request: Request<pb::EnumerateRequest>,
    ) -> Result<Response<Self::EnumerateStream>, Status> {
        enumerate::enumerate(self, request).await
    }

    async fn create_job(
        &self,
        request: Request<pb::CreateJobRequest>,
    ) -> Result<Response<pb::CreateJobResponse>, Status> {
        jobs_api::create_job(self, request).await
    }

    type WatchJobStream = EventStream<pb::WatchJobResponse>;

    async fn watch_job(
        &self,
        request: Request<pb::WatchJobRequest>,
    ) -> Result<Response<Self::WatchJobStream>, Status> {
        watch::watch_job(self, request).await
    }

    async fn get_job(
        &self,
        request: Request<pb::GetJobRequest>,
    ) -> Result<Response<pb::GetJobResponse>, Status> {
        jobs_api::get_job(self, request).await
    }

    async fn cancel_job(
        &self,
        request: Request<pb::CancelJobRequest>,
    ) -> Result<Response<pb::CancelJobResponse>, Status> {
        jobs_api::cancel_job(self, request).await
    }

    async fn list_jobs(
        &self,
        request: Request<pb::ListJobsRequest>,
    ) -> Result<Response<pb::ListJobsResponse>, Status> {
        jobs_api::list_jobs(self, request).await
    }

    async fn list_job_solutions(
        &self,
        request: Request<pb::ListJobSolutionsRequest>,
    ) -> Result<Response<pb::ListJobSolutionsResponse>, Status> {
        solutions::list_job_solutions(self, request).await
    }

    async fn delete_job(
        &self,
        request: Request<pb::DeleteJobRequest>,
    ) -> Result<Response<pb::DeleteJobResponse>, Status> {
        jobs_api::delete_job(self, request).await
    }

    async fn estimate(
        &self,
        request: Request<pb::EstimateRequest>,
    ) -> Result<Response<pb::EstimateResponse>, Status> {
        self.estimator
            .estimate(&self.pool, &self.config.limits, request)
            .await
    }

    async fn list_workers(
        &self,
        _request: Request<pb::ListWorkersRequest>,
    ) -> Result<Response<pb::ListWorkersResponse>, Status> {
        let workers = self
            .pool
            .roster()
            .rows()
            .into_iter()
            .map(|row| pb::RemoteWorker {
                nodes_per_second: row.nodes_per_second(),
                id: row.id,
                name: row.name,
                address: row.address,
                slots: u32::try_from(row.slots).unwrap_or(u32::MAX),
                leases: u32::try_from(row.leases).unwrap_or(u32::MAX),
                nodes: row.nodes,
                connect_time: Some(convert::timestamp(row.joined)),
                last_heartbeat_time: Some(convert::timestamp(row.last_heartbeat)),
                rejected_reports: row.rejected_reports,
            })
            .collect();
        Ok(Response::new(pb::ListWorkersResponse { workers }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A problem whose solutions can have `n` options (`n` primary items).
    fn primary_items(n: usize) -> Problem {
        let items: Vec<String> = (0..n).map(|i| format!("i{i}")).collect();
        crate::xcc::dlx_format::parse(&format!("{}\n{}\n", items.join(" "), items.join(" ")))
            .unwrap()
    }

    #[test]
    fn a_packed_batch_stays_within_its_indices_by_default() {
        let config = ApiConfig::default();
        // latin5's solutions can have 75 options: the full default.
        assert_eq!(config.packed_batch_size(&primary_items(75)), 4096);
        assert_eq!(config.packed_batch_size(&primary_items(1024)), 512);
        // Never below the default of the other form.
        assert_eq!(config.packed_batch_size(&primary_items(10_000)), 256);
    }
}
