//! The `SolverService` RPCs, on top of the pool.
//!
//! Streams are fed by a pump task per call: it forwards the job's solution
//! batches (through a channel of two messages, so a slow client holds back
//! the job's bounded buffer and through it the workers), sends progress at
//! the requested interval (a due progress event goes before the next
//! waiting batch), and ends the job when the client goes away or the
//! call's deadline passes. tonic's own timeout only covers the time until a
//! stream is returned, so the pump enforces the deadline for the whole call.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use tracing::Instrument;

use super::callers::Caller;
use super::convert::{self, JobProblem, ProblemLimits};
use super::durable::{self, Durability};
use super::estimate::Estimator;
use super::job::JobId;
use super::job::{Class, Delivery, EndReason, Event, Job, JobSpec, RequestKey, Solutions};
use super::job_filter::{Filter, JobFacts};
use super::jobs::{self, format_id, parse_id, Entry, JobRegistry, Record};
use super::page_token::{self, List};
use super::pool::{Pool, SubmitError};
use super::preprocess::{self, Preprocessed};
use super::proto as pb;
use super::proto::solver_service_server::SolverService;
use super::puzzle_input::PuzzleEncoder;
use super::status;
use super::store::{JobStore, StoreError};
use crate::puzzles::side_condition;
use crate::xcc::problem::quote;
use crate::xcc::{Engine, Problem};

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

/// Solutions per page of ListJobSolutions when the request says 0, and the
/// most a page may hold.
const DEFAULT_PAGE: usize = 1000;
/// Jobs per page of ListJobs when the request says 0, and the most.
const DEFAULT_JOBS_PAGE: usize = 100;
const MAX_JOBS_PAGE: usize = 1000;
const MAX_PAGE: usize = 100_000;
/// Solutions per message of a WatchJob of a durable job.
const WATCH_BATCH: usize = 1024;

impl SolverApi {
    /// The engine a request's job runs on: links for DLX6's and DLX5's own
    /// searches (`own_search`: memo, cheapest), else the request's choice.
    fn engine(&self, engine: i32, problem: &Problem, own_search: bool) -> Result<Engine, Status> {
        match own_search {
            true => Ok(Engine::Links),
            false => convert::engine(engine, problem, self.pool.run_memory_limit()),
        }
    }

    /// The reduction a request's `preprocess` asks for (see
    /// [`preprocess::for_request`]), done before its job starts.
    async fn preprocess(
        &self,
        requested: bool,
        problem: &Arc<Problem>,
        puzzle: bool,
        deadline: Option<Instant>,
    ) -> Result<Option<Arc<Preprocessed>>, Status> {
        if !requested {
            return Ok(None);
        }
        let wait = self.preprocessing.acquire();
        let _permit = match deadline {
            Some(d) => tokio::time::timeout_at(d, wait).await.map_err(|_| {
                status::deadline("the call's deadline passed while it waited to be preprocessed")
            })?,
            None => wait.await,
        }
        .map_err(|_| status::internal("the preprocessing's queue closed"))?;
        preprocess::for_request(
            requested,
            problem,
            puzzle,
            self.config.max_preprocess_mems,
            self.pool.run_memory_limit(),
            deadline.map(Instant::into_std),
        )
        .await
    }

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

/// A CreateJob's request_id, checked to be a UUID (AIP-155) and put in
/// lower case.
fn request_id(text: &str) -> Result<String, Status> {
    let uuid = text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
    if !uuid {
        return Err(status::invalid(format!(
            "request_id: {} is not a UUID (36 characters: 8-4-4-4-12 hexadecimal digits)",
            quote(&text.chars().take(64).collect::<String>())
        )));
    }
    Ok(text.to_ascii_lowercase())
}

/// The digest that tells a retried CreateJob from a different request
/// under the same request_id: SHA-256 of the request's encoding without
/// its request_id (prost encodes a message the same way every time).
fn request_digest(req: &pb::CreateJobRequest) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(prost::Message::encode_to_vec(req));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn nonzero(n: u64) -> Option<u64> {
    (n > 0).then_some(n)
}

/// Cancels a job if the call that owns it is dropped before it ends.
pub(super) struct CancelOnDrop {
    pub(super) pool: Arc<Pool>,
    pub(super) job: Arc<Job>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.job.summary().is_none() {
            self.pool.cancel(&self.job, EndReason::Cancelled);
        }
    }
}

pub(super) type EventStream<T> =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send>>;

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
        let arrived = Instant::now();
        let deadline = convert::deadline(&request);
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let limit = req.limit.max(1);
        if limit > self.config.max_solve_limit {
            return Err(status::invalid(format!(
                "limit: {limit} exceeds the limit of {} for Solve; use Enumerate",
                self.config.max_solve_limit
            )));
        }
        let problem = Arc::new(convert::problem(req.problem, &self.config.limits)?);
        let preprocessed = self
            .preprocess(
                req.preprocess,
                &problem,
                false,
                deadline.map(|d| convert::unary_deadline(arrived, d)),
            )
            .await?;
        let searched = preprocessed.as_ref().map_or(&problem, |p| &p.problem);
        let memo = convert::memo(
            req.memo,
            (req.limit != 0).then_some(
                "Solve with memo returns the count of all solutions, not solutions: leave limit at 0",
            ),
            req.engine,
            searched,
            false,
            self.pool.run_memory_limit(),
        )?;
        let cheapest = convert::cheapest(
            req.cheapest,
            if req.limit != 0 {
                Some("Solve returns the K cheapest solutions, K its number: leave limit at 0")
            } else if u64::from(req.cheapest) > self.config.max_solve_limit {
                Some("K exceeds this server's limit of solutions for Solve")
            } else {
                None
            },
            req.memo,
            req.engine,
            searched,
            false,
            self.pool.run_memory_limit(),
        )?;
        let engine = self.engine(req.engine, searched, memo.is_some() || cheapest.is_some())?;
        let job = self.submit(
            problem.clone(),
            JobSpec {
                engine,
                memo,
                cheapest,
                preprocessed,
                // The cheapest-solutions search ends with its K solutions
                // (no limit to stop it before: they would not be the
                // cheapest).
                limit: (memo.is_none() && cheapest.is_none()).then_some(limit),
                max_nodes: nonzero(req.max_nodes),
                delivery: match (memo, cheapest) {
                    (Some(_), _) => Delivery::CountOnly,
                    (None, Some(k)) => Delivery::Keep { keep: k },
                    (None, None) => Delivery::Keep {
                        keep: limit as usize,
                    },
                },
                owner: caller.clone(),
                class: Class::Interactive,
                waits_on_call: true,
                ..JobSpec::default()
            },
        )?;
        let _guard = CancelOnDrop {
            pool: self.pool.clone(),
            job: job.clone(),
        };
        let span = tracing::info_span!("job", id = job.id, rpc = "Solve");
        let summary = async {
            match deadline {
                // tonic's own timeout on the same deadline answers
                // CANCELLED; answer DEADLINE_EXCEEDED just before it fires.
                Some(d) => {
                    match tokio::time::timeout_at(convert::unary_deadline(arrived, d), job.wait())
                        .await
                    {
                        Ok(summary) => Ok(summary),
                        Err(_) => {
                            self.pool.cancel(&job, EndReason::Deadline);
                            Err(status::deadline(format!(
                                "deadline of {:.3} s passed",
                                d.as_secs_f64()
                            )))
                        }
                    }
                }
                None => Ok(job.wait().await),
            }
        }
        .instrument(span)
        .await?;
        if let Some(status) = convert::end_status(&summary) {
            return Err(status);
        }
        let solutions = job
            .kept_from(0)
            .iter()
            .map(|s| convert::solution(&problem, s, req.include_option_text))
            .collect();
        Ok(Response::new(pb::SolveResponse {
            solutions,
            exhausted: summary.reason == EndReason::Complete,
            statistics: Some(convert::summary_statistics(&summary)),
            reason: convert::end_reason(summary.reason) as i32,
        }))
    }

    type EnumerateStream = EventStream<pb::EnumerateResponse>;

    async fn enumerate(
        &self,
        request: Request<pb::EnumerateRequest>,
    ) -> Result<Response<Self::EnumerateStream>, Status> {
        let deadline = convert::deadline(&request).map(|d| Instant::now() + d);
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let interval =
            convert::interval("progress_interval_seconds", req.progress_interval_seconds)?;
        // 0 for the default, which depends on the form and the problem.
        let batch_size =
            status::count("batch_size", req.batch_size, 0, self.config.max_batch_size)?;
        if req.packed_solutions && req.include_option_text {
            return Err(status::invalid(
                "packed_solutions: the packed form has no option text; ask for one or the other",
            ));
        }
        let problem = Arc::new(convert::problem(req.problem, &self.config.limits)?);
        let preprocessed = self
            .preprocess(req.preprocess, &problem, false, deadline)
            .await?;
        let searched = preprocessed.as_ref().map_or(&problem, |p| &p.problem);
        let memo = convert::memo(
            req.memo,
            (!req.count_only).then_some("a memoized search answers a count: set count_only"),
            req.engine,
            searched,
            false,
            self.pool.run_memory_limit(),
        )?;
        let cheapest = convert::cheapest(
            req.cheapest,
            if req.count_only {
                Some("the cheapest-solutions search answers solutions: leave count_only unset")
            } else if req.limit != 0 {
                Some("the stream sends the K cheapest solutions, K its number: leave limit at 0")
            } else {
                None
            },
            req.memo,
            req.engine,
            searched,
            false,
            self.pool.run_memory_limit(),
        )?;
        let engine = self.engine(req.engine, searched, memo.is_some() || cheapest.is_some())?;
        let packed_index_bytes = if req.packed_solutions {
            convert::packed_index_bytes(&problem)
        } else {
            0
        };
        let batch_size = match batch_size {
            0 if req.packed_solutions => self.config.packed_batch_size(&problem),
            0 => self.config.default_batch_size,
            n => n,
        };
        let delivery = if req.count_only {
            Delivery::CountOnly
        } else {
            Delivery::Stream {
                buffer_batches: self.config.buffer_batches,
                batch_size,
            }
        };
        let job = self.submit(
            problem.clone(),
            JobSpec {
                engine,
                memo,
                cheapest,
                preprocessed,
                limit: nonzero(req.limit),
                max_nodes: nonzero(req.max_nodes),
                delivery,
                owner: caller.clone(),
                waits_on_call: true,
                ..JobSpec::default()
            },
        )?;
        let pump = Pump {
            pool: self.pool.clone(),
            job: job.clone(),
            events: ProblemEvents {
                problem,
                with_text: req.include_option_text,
                packed_index_bytes,
            },
            interval,
            deadline,
        };
        Ok(pump.start(tracing::info_span!("job", id = job.id, rpc = "Enumerate")))
    }

    async fn create_job(
        &self,
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
            Some(_) => Some(self.keyed_creates.lock().await),
            None => None,
        };
        if let Some(key) = &key {
            if let Some(entry) = self.jobs.find_request(&caller, &key.id) {
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
                    job: Some(self.job_message(&entry)),
                }));
            }
        }
        let keep = status::count(
            "keep_solutions",
            req.keep_solutions,
            self.config.default_keep,
            self.config.max_keep,
        )?;
        let (problem, puzzle) = match req.source {
            Some(pb::create_job_request::Source::Problem(problem)) => (
                Arc::new(convert::problem(Some(problem), &self.config.limits)?),
                None,
            ),
            Some(pb::create_job_request::Source::Puzzle(puzzle)) => {
                let (encoded, puzzle) = self.encoder.encode(Some(puzzle), deadline).await?;
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
        let preprocessed = self
            .preprocess(req.preprocess, &problem, puzzle.is_some(), deadline)
            .await?;
        let searched = preprocessed.as_ref().map_or(&problem, |p| &p.problem);
        let memo = convert::memo(
            req.memo,
            (!req.count_only).then_some("a memoized search answers a count: set count_only"),
            req.engine,
            searched,
            condition.as_ref().is_some_and(|c| c.filters()),
            self.pool.run_memory_limit(),
        )?;
        let cheapest = convert::cheapest(
            req.cheapest,
            if req.count_only {
                Some("the cheapest-solutions search answers solutions: leave count_only unset")
            } else if req.limit != 0 {
                Some("the job finds the K cheapest solutions, K its number: leave limit at 0")
            } else {
                None
            },
            req.memo,
            req.engine,
            searched,
            condition.as_ref().is_some_and(|c| c.filters()),
            self.pool.run_memory_limit(),
        )?;
        let engine = self.engine(req.engine, searched, memo.is_some() || cheapest.is_some())?;
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
        let job = match &self.durability {
            None => self.submit(problem, spec)?,
            Some(durability) => {
                let d = durability.clone();
                if let Some(refusal) = blocking(move || Ok(d.refuse_new_job())).await? {
                    return Err(refusal);
                }
                spec.delivery = durable::delivery(req.count_only);
                spec.durable = true;
                let job = self.submit(problem, spec)?;
                let (d, j) = (durability.clone(), job.clone());
                if let Err(status) =
                    blocking(move || d.create(&j, req.count_only).map_err(|e| status::store(&e)))
                        .await
                {
                    self.pool.cancel(&job, EndReason::Cancelled);
                    return Err(status);
                }
                durable::start_writer(self.pool.clone(), durability.clone(), job.clone());
                job
            }
        };
        self.jobs.insert(job.clone());
        tracing::info!(job = job.id, "job created");
        Ok(Response::new(pb::CreateJobResponse {
            job: Some(self.job_message(&Entry::Live(job))),
        }))
    }

    type WatchJobStream = EventStream<pb::WatchJobResponse>;

    async fn watch_job(
        &self,
        request: Request<pb::WatchJobRequest>,
    ) -> Result<Response<Self::WatchJobStream>, Status> {
        let deadline = convert::deadline(&request).map(|d| Instant::now() + d);
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let interval =
            convert::interval("progress_interval_seconds", req.progress_interval_seconds)?;
        let entry = self.find(&req.name, &caller)?;
        let pool = self.pool.clone();
        let span = tracing::info_span!("job", id = entry.id(), rpc = "WatchJob");
        let packed = req.packed_solutions;
        let durable = match &entry {
            Entry::Live(job) => job.spec.durable,
            Entry::Ended(record) => record.durable(),
        };
        if durable && req.include_solutions {
            let store = self.store()?;
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

    async fn get_job(
        &self,
        request: Request<pb::GetJobRequest>,
    ) -> Result<Response<pb::GetJobResponse>, Status> {
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let entry = self.find(&req.name, &caller)?;
        let durable = match &entry {
            Entry::Live(job) => job.spec.durable,
            Entry::Ended(record) => record.durable(),
        };
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
                    0 => self.config.default_keep,
                    n => n.min(MAX_PAGE),
                };
                let store = self.store()?;
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
            job: Some(self.job_message(&entry)),
            solutions,
        }))
    }

    async fn cancel_job(
        &self,
        request: Request<pb::CancelJobRequest>,
    ) -> Result<Response<pb::CancelJobResponse>, Status> {
        let caller = Caller::of(&request);
        let entry = self.find(&request.into_inner().name, &caller)?;
        if let Entry::Live(job) = &entry {
            self.pool.cancel(job, EndReason::Cancelled);
            tracing::info!(job = job.id, "job cancelled");
        }
        Ok(Response::new(pb::CancelJobResponse {
            job: Some(self.job_message(&entry)),
        }))
    }

    async fn list_jobs(
        &self,
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
        let after = page_token::decode(&req.page_token, List::Jobs, &req.filter).map_err(|e| {
            status::invalid_because(status::Reason::InvalidPageToken, e.to_string())
        })?;
        let mine: Vec<Entry> = self
            .jobs
            .list()
            .into_iter()
            .filter(|entry| caller.owns(entry.owner()))
            .filter(|entry| after.is_none_or(|after| entry.id() > after))
            .filter(|entry| filter.matches(&facts(&self.job_message(entry))))
            .collect();
        let more = mine.len() > size;
        let page = &mine[..mine.len().min(size)];
        let next_page_token = match page.last() {
            Some(last) if more => page_token::encode(List::Jobs, last.id(), &req.filter),
            _ => String::new(),
        };
        let jobs = page.iter().map(|entry| self.job_message(entry)).collect();
        Ok(Response::new(pb::ListJobsResponse {
            jobs,
            next_page_token,
        }))
    }

    async fn list_job_solutions(
        &self,
        request: Request<pb::ListJobSolutionsRequest>,
    ) -> Result<Response<pb::ListJobSolutionsResponse>, Status> {
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let entry = self.find(&req.name, &caller)?;
        let store = self.store()?;
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
        if req.packed_solutions && req.include_option_text {
            return Err(status::invalid(
                "packed_solutions: the packed form has no option text; ask for one or the other",
            ));
        }
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

    async fn delete_job(
        &self,
        request: Request<pb::DeleteJobRequest>,
    ) -> Result<Response<pb::DeleteJobResponse>, Status> {
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let entry = self.find(&req.name, &caller)?;
        if let Entry::Live(job) = &entry {
            self.pool.cancel(job, EndReason::Cancelled);
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
        let jobs = self.jobs.clone();
        let id = entry.id();
        blocking(move || jobs.remove(id).map_err(|e| status::store(&e))).await?;
        tracing::info!(job = id, "job deleted");
        Ok(Response::new(pb::DeleteJobResponse {}))
    }

    async fn estimate(
        &self,
        request: Request<pb::EstimateRequest>,
    ) -> Result<Response<pb::EstimateResponse>, Status> {
        self.estimator
            .estimate(&self.pool, &self.config.limits, request)
            .await
    }
}

/// Solutions a reply converts or copies on the async runtime's thread;
/// more go to a blocking thread (a few microseconds each: a window this
/// small costs less than the hand-over).
const INLINE_SOLUTIONS: usize = 256;

/// Runs store work off the async runtime's threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Status> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|_| Err(status::internal("reading the job store failed")))
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

/// A running job's problem, as its solutions' messages need it.
fn job_problem(job: &Job) -> JobProblem {
    JobProblem {
        problem: job.problem.clone(),
        puzzle: job.spec.grids.clone(),
    }
}

/// The problem of a durable job, for its options' text and a puzzle job's
/// grids: a running job's own, an ended one's rebuilt from the store (once
/// per call, not per page).
async fn stored_problem(store: Arc<dyn JobStore>, entry: Entry) -> Result<JobProblem, Status> {
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
async fn stored_solutions(
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
async fn stored_lists(
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
fn solution_messages(
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
        let far = Instant::now() + Duration::from_secs(100 * 365 * 86400);
        let deadline = self.deadline.unwrap_or(far);
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

/// The messages of one kind of solution stream (Enumerate's,
/// EnumeratePuzzle's): how a batch, a progress event and the summary go out.
pub(super) trait StreamEvents: Send + 'static {
    type Message: Send + 'static;
    fn solutions(&self, batch: Solutions) -> Self::Message;
    fn progress(&self, progress: pb::Progress) -> Self::Message;
    fn summary(&self, summary: pb::Summary) -> Self::Message;
}

/// A problem's events on an Enumerate stream.
struct ProblemEvents {
    problem: Arc<Problem>,
    with_text: bool,
    /// Solutions in SolutionBatch's packed form, with indices of this many
    /// bytes (0: one Solution message each).
    packed_index_bytes: u32,
}

impl StreamEvents for ProblemEvents {
    type Message = pb::EnumerateResponse;
    fn solutions(&self, batch: Solutions) -> Self::Message {
        use pb::enumerate_response::Event as E;
        let batch = if self.packed_index_bytes > 0 {
            convert::packed_solutions(batch, self.packed_index_bytes)
        } else {
            pb::SolutionBatch {
                solutions: batch
                    .iter()
                    .map(|s| convert::solution(&self.problem, s, self.with_text))
                    .collect(),
                ..Default::default()
            }
        };
        pb::EnumerateResponse {
            event: Some(E::Solutions(batch)),
        }
    }
    fn progress(&self, progress: pb::Progress) -> Self::Message {
        pb::EnumerateResponse {
            event: Some(pb::enumerate_response::Event::Progress(progress)),
        }
    }
    fn summary(&self, summary: pb::Summary) -> Self::Message {
        pb::EnumerateResponse {
            event: Some(pb::enumerate_response::Event::Summary(summary)),
        }
    }
}

/// Feeds one solution stream from its job: it forwards the job's batches,
/// sends progress at the requested interval, and ends the job when the
/// client goes away or the call's deadline passes.
pub(super) struct Pump<E: StreamEvents> {
    pub(super) pool: Arc<Pool>,
    pub(super) job: Arc<Job>,
    pub(super) events: E,
    pub(super) interval: Duration,
    pub(super) deadline: Option<Instant>,
}

impl<E: StreamEvents> Pump<E> {
    /// Starts pumping in the background; the response streams what it
    /// sends. Two messages in flight at most, so a slow client holds back
    /// the job's bounded buffer, and through it the workers.
    pub(super) fn start(self, span: tracing::Span) -> Response<EventStream<E::Message>> {
        stream_from(span, move |tx| self.run(tx))
    }

    async fn run(self, tx: mpsc::Sender<Result<E::Message, Status>>) {
        let _cancel = CancelOnDrop {
            pool: self.pool.clone(),
            job: self.job.clone(),
        };
        let far = Instant::now() + Duration::from_secs(100 * 365 * 86400);
        let deadline = self.deadline.unwrap_or(far);
        let mut ticker = tokio::time::interval_at(Instant::now() + self.interval, self.interval);
        // A reader slower than the interval gets one progress event after
        // each wait, not a burst of stale ones.
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let progress = || convert::progress(&self.pool.progress(&self.job));
        loop {
            // Progress that is due goes before the next batch: solutions
            // are nearly always waiting in the job's buffer (the workers
            // outrun any reader), and a progress event queued behind them
            // would never come. It is taken when it is sent, so it is the
            // latest, and the reader sees it after only what the channel
            // and the transport already hold.
            let message = tokio::select! {
                biased;
                () = tx.closed() => return,
                () = tokio::time::sleep_until(deadline) => {
                    self.pool.cancel(&self.job, EndReason::Deadline);
                    let _ = tx.send(Err(status::deadline("the call's deadline passed"))).await;
                    return;
                }
                _ = ticker.tick() => self.events.progress(progress()),
                event = self.job.next_event() => match event {
                    Event::Solutions(mut batch) => {
                        self.job.take_more_solutions(&mut batch);
                        self.events.solutions(batch)
                    }
                    // Only durable jobs take snapshots, and no call streams them.
                    Event::Snapshot(_) => continue,
                    Event::Done(summary) => {
                        // A stream that cannot end with its summary before
                        // the deadline ends with DEADLINE_EXCEEDED, never OK.
                        let summary_event = self.events.summary(convert::summary(&summary));
                        if !send_until(&tx, Ok(self.events.progress(progress())), deadline).await
                            || !send_until(&tx, Ok(summary_event), deadline).await
                        {
                            return deadline_passed(&tx, deadline).await;
                        }
                        // Cut short or failed: the status says so after the summary.
                        if let Some(status) = convert::end_status(&summary) {
                            let _ = send_until(&tx, Err(status), deadline).await;
                        }
                        return;
                    }
                },
            };
            if !send_until(&tx, Ok(message), deadline).await {
                if Instant::now() >= deadline {
                    self.pool.cancel(&self.job, EndReason::Deadline);
                    let _ = tx
                        .send(Err(status::deadline("the call's deadline passed")))
                        .await;
                }
                return;
            }
        }
    }
}

/// A response stream fed by `feed`, run in the background with two
/// messages in flight at most. If `feed` panics, the stream ends with
/// INTERNAL (not with a silent end that would look like success), and the
/// server goes on.
pub(super) fn stream_from<T, F, Fut>(span: tracing::Span, feed: F) -> Response<EventStream<T>>
where
    T: Send + 'static,
    F: FnOnce(mpsc::Sender<Result<T, Status>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(2);
    let last_word = tx.clone();
    let feeding = tokio::spawn(feed(tx).instrument(span.clone()));
    tokio::spawn(
        async move {
            if let Err(error) = feeding.await {
                if error.is_panic() {
                    tracing::error!("a stream's feeder panicked: the call ends with INTERNAL");
                    let _ = last_word
                        .send(Err(status::internal(
                            "the server failed while streaming this call; it has been logged",
                        )))
                        .await;
                }
            }
        }
        .instrument(span),
    );
    Response::new(Box::pin(ReceiverStream::new(rx)))
}

/// Sends unless the client is gone or the deadline passes first.
async fn send_until<T>(tx: &mpsc::Sender<T>, message: T, deadline: Instant) -> bool {
    matches!(
        tokio::time::timeout_at(deadline, tx.send(message)).await,
        Ok(Ok(()))
    )
}

/// Ends a stream whose send failed: with DEADLINE_EXCEEDED if that is why.
async fn deadline_passed<T>(tx: &mpsc::Sender<Result<T, Status>>, deadline: Instant) {
    if Instant::now() >= deadline {
        let _ = tx
            .send(Err(status::deadline("the call's deadline passed")))
            .await;
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
    let far = Instant::now() + Duration::from_secs(100 * 365 * 86400);
    let deadline = deadline.unwrap_or(far);
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
