//! The `PuzzleService` RPCs: puzzles encoded as XCC problems, solved on the
//! same pool and job queue as generic problems, answered with decoded grids.

use std::sync::Arc;

use tokio::time::Instant;
use tonic::{Request, Response, Status};

use super::callers::Caller;
use super::convert;
use super::grpc::{refused, CancelOnDrop, EventStream, Pump, StreamEvents};
use super::job::{Class, Delivery, EndReason, Job, JobSpec, Solutions};
use super::pool::Pool;
use super::proto as pb;
use super::proto::puzzle_service_server::PuzzleService;
use super::puzzle_input::{grid, kind_in, EncodedPuzzle, PuzzleEncoder};
use super::status;
use crate::puzzles::solved::Solved;
use crate::puzzles::{side_condition, svg, Encoded};
use crate::xcc::dlx_format;

/// Most solutions a SolvePuzzle call may ask for.
const MAX_SOLVE_LIMIT: u64 = 10_000;
/// Solutions per batch of EnumeratePuzzle, unless the request says.
const DEFAULT_BATCH: usize = 64;
/// Most solutions per batch a request may ask for.
const MAX_BATCH: usize = 65_536;
/// The longest solution text DrawPuzzle reads.
const MAX_DRAWN_TEXT: usize = 512 * 1024;
/// The most cells DrawPuzzle draws (a 200 x 200 grid): pictures of about
/// 4 MB at most.
const MAX_DRAWN_CELLS: usize = 40_000;

pub struct PuzzleApi {
    pool: Arc<Pool>,
    encoder: Arc<PuzzleEncoder>,
    /// Solution batches buffered per EnumeratePuzzle stream
    /// ([`ApiConfig::buffer_batches`](super::grpc::ApiConfig), as Enumerate's).
    buffer_batches: usize,
}

impl PuzzleApi {
    /// Puzzle RPCs on `pool`, encoding puzzles with `encoder` (shared with
    /// the puzzle jobs of SolverService, so that one server builds at most
    /// one encoding per core), buffering `buffer_batches` batches per
    /// stream.
    pub fn new(pool: Arc<Pool>, encoder: Arc<PuzzleEncoder>, buffer_batches: usize) -> PuzzleApi {
        PuzzleApi {
            pool,
            encoder,
            buffer_batches,
        }
    }

    /// Starts a job on an encoded puzzle. The job carries the puzzle
    /// itself, so that remote workers rebuild its encoding and side
    /// condition.
    fn submit(
        &self,
        caller: &Caller,
        encoded: &EncodedPuzzle,
        limit: Option<u64>,
        max_nodes: Option<u64>,
        delivery: Delivery,
        engine: i32,
    ) -> Result<Arc<Job>, Status> {
        let (encoded, puzzle) = encoded;
        let engine = convert::engine(engine, encoded.problem(), self.pool.run_memory_limit())?;
        self.pool
            .submit(
                Arc::new(encoded.problem().clone()),
                JobSpec {
                    limit,
                    max_nodes,
                    delivery,
                    condition: side_condition(encoded),
                    puzzle: Some(puzzle.clone()),
                    // The stream decodes its own grids (PuzzleEvents).
                    grids: None,
                    request: None,
                    owner: caller.clone(),
                    durable: false,
                    engine,
                    waits_on_call: true,
                    // Memoized counts of puzzles go through CreateJob
                    // (`memo`), which checks the side condition.
                    memo: None,
                    cheapest: None,
                    preprocessed: None,
                    // The call's trace (Pool::submit takes the current span's).
                    traceparent: None,
                    // The calls that keep their solutions (SolvePuzzle,
                    // CheckPuzzle) are small ones a client waits on; the
                    // streams are batch work.
                    class: match delivery {
                        Delivery::Keep { .. } => Class::Interactive,
                        _ => Class::Batch,
                    },
                },
            )
            .map_err(refused)
    }

    /// Runs a job that keeps its solutions, to its end or the deadline.
    async fn run_kept(
        &self,
        caller: &Caller,
        encoded: &EncodedPuzzle,
        limit: u64,
        deadline: Option<Instant>,
        engine: i32,
    ) -> Result<(Arc<Job>, super::job::Summary), Status> {
        let job = self.submit(
            caller,
            encoded,
            Some(limit),
            None,
            Delivery::Keep {
                keep: limit as usize,
            },
            engine,
        )?;
        let guard = CancelOnDrop {
            pool: self.pool.clone(),
            job: job.clone(),
        };
        let summary = match deadline {
            Some(d) => match tokio::time::timeout_at(d, job.wait()).await {
                Ok(s) => s,
                Err(_) => {
                    self.pool.cancel(&job, EndReason::Deadline);
                    return Err(status::deadline("the call's deadline passed"));
                }
            },
            None => job.wait().await,
        };
        drop(guard);
        Ok((job, summary))
    }
}

/// A puzzle's events on an EnumeratePuzzle stream.
struct PuzzleEvents(Arc<dyn Encoded>);

impl StreamEvents for PuzzleEvents {
    type Message = pb::EnumeratePuzzleResponse;
    fn solutions(&self, batch: Solutions) -> Self::Message {
        use pb::enumerate_puzzle_response::Event as E;
        let solutions = batch.iter().map(|s| grid(&*self.0, s)).collect();
        pb::EnumeratePuzzleResponse {
            event: Some(E::Solutions(pb::PuzzleSolutionBatch { solutions })),
        }
    }
    fn progress(&self, progress: pb::Progress) -> Self::Message {
        use pb::enumerate_puzzle_response::Event as E;
        pb::EnumeratePuzzleResponse {
            event: Some(E::Progress(progress)),
        }
    }
    fn summary(&self, summary: pb::Summary) -> Self::Message {
        use pb::enumerate_puzzle_response::Event as E;
        pb::EnumeratePuzzleResponse {
            event: Some(E::Summary(summary)),
        }
    }
}

#[tonic::async_trait]
impl PuzzleService for PuzzleApi {
    async fn solve_puzzle(
        &self,
        request: Request<pb::SolvePuzzleRequest>,
    ) -> Result<Response<pb::SolvePuzzleResponse>, Status> {
        let arrived = Instant::now();
        let deadline = convert::deadline(&request).map(|d| convert::unary_deadline(arrived, d));
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let limit = req.limit.max(1);
        if limit > MAX_SOLVE_LIMIT {
            return Err(status::invalid(format!(
                "limit: {limit} exceeds {MAX_SOLVE_LIMIT}; use EnumeratePuzzle"
            )));
        }
        let encoded = self.encoder.encode(req.puzzle, deadline).await?;
        let (job, summary) = self
            .run_kept(&caller, &encoded, limit, deadline, req.engine)
            .await?;
        if let Some(status) = convert::end_status(&summary) {
            return Err(status);
        }
        Ok(Response::new(pb::SolvePuzzleResponse {
            solutions: job
                .kept_from(0)
                .iter()
                .map(|s| grid(&*encoded.0, s))
                .collect(),
            exhausted: summary.reason == EndReason::Complete,
            statistics: Some(convert::statistics(
                &summary.stats,
                summary.solutions,
                summary.elapsed,
                summary.engine,
            )),
        }))
    }

    type EnumeratePuzzleStream = EventStream<pb::EnumeratePuzzleResponse>;

    async fn enumerate_puzzle(
        &self,
        request: Request<pb::EnumeratePuzzleRequest>,
    ) -> Result<Response<Self::EnumeratePuzzleStream>, Status> {
        let deadline = convert::deadline(&request).map(|d| Instant::now() + d);
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let interval =
            convert::interval("progress_interval_seconds", req.progress_interval_seconds)?;
        let batch_size = status::count("batch_size", req.batch_size, DEFAULT_BATCH, MAX_BATCH)?;
        let encoded = self.encoder.encode(req.puzzle, deadline).await?;
        let delivery = if req.count_only {
            Delivery::CountOnly
        } else {
            Delivery::Stream {
                buffer_batches: self.buffer_batches,
                batch_size,
            }
        };
        let job = self.submit(
            &caller,
            &encoded,
            (req.limit > 0).then_some(req.limit),
            (req.max_nodes > 0).then_some(req.max_nodes),
            delivery,
            req.engine,
        )?;
        let pump = Pump {
            pool: self.pool.clone(),
            job: job.clone(),
            events: PuzzleEvents(encoded.0),
            interval,
            deadline,
        };
        Ok(pump.start(tracing::info_span!(
            "job",
            id = job.id,
            rpc = "EnumeratePuzzle"
        )))
    }

    async fn check_puzzle(
        &self,
        request: Request<pb::CheckPuzzleRequest>,
    ) -> Result<Response<pb::CheckPuzzleResponse>, Status> {
        let arrived = Instant::now();
        let deadline = convert::deadline(&request).map(|d| convert::unary_deadline(arrived, d));
        let caller = Caller::of(&request);
        let encoded = self
            .encoder
            .encode(request.into_inner().puzzle, deadline)
            .await?;
        let (job, summary) = self.run_kept(&caller, &encoded, 2, deadline, 0).await?;
        if let Some(status) = convert::end_status(&summary) {
            return Err(status);
        }
        let kept = job.kept_from(0);
        let valid = kept.len() == 1 && summary.reason == EndReason::Complete;
        Ok(Response::new(pb::CheckPuzzleResponse {
            valid,
            solutions_found: kept.len() as u32,
            solution: valid.then(|| grid(&*encoded.0, &kept[0])),
            statistics: Some(convert::statistics(
                &summary.stats,
                summary.solutions,
                summary.elapsed,
                summary.engine,
            )),
        }))
    }

    async fn encode_puzzle(
        &self,
        request: Request<pb::EncodePuzzleRequest>,
    ) -> Result<Response<pb::EncodePuzzleResponse>, Status> {
        let arrived = Instant::now();
        let deadline = convert::deadline(&request).map(|d| convert::unary_deadline(arrived, d));
        let (encoded, _) = self
            .encoder
            .encode(request.into_inner().puzzle, deadline)
            .await?;
        Ok(Response::new(pb::EncodePuzzleResponse {
            dlx: dlx_format::to_string(encoded.problem()),
            has_side_condition: encoded.restricts(),
        }))
    }

    async fn draw_puzzle(
        &self,
        request: Request<pb::DrawPuzzleRequest>,
    ) -> Result<Response<pb::DrawPuzzleResponse>, Status> {
        let request = request.into_inner();
        let kind = kind_in("kind", request.kind)?;
        let text = request.solution.map(|s| s.text).unwrap_or_default();
        // Bounds before reading: a grid's cells cost tens of bytes each
        // while read, and its picture about 100.
        if text.len() > MAX_DRAWN_TEXT {
            return Err(status::invalid(format!(
                "solution.text: {} bytes, at most {MAX_DRAWN_TEXT} are drawn",
                text.len()
            )));
        }
        let solved = Solved::read(kind, &text).ok_or_else(|| {
            status::invalid(format!(
                "solution.text: not a solved {} grid (give the text of a solution of this kind)",
                kind.name()
            ))
        })?;
        if solved.cells() > MAX_DRAWN_CELLS {
            return Err(status::invalid(format!(
                "solution.text: {} cells, at most {MAX_DRAWN_CELLS} are drawn",
                solved.cells()
            )));
        }
        Ok(Response::new(pb::DrawPuzzleResponse {
            svg: svg::draw(solved),
        }))
    }
}
