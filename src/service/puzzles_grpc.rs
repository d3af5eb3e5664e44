//! The `PuzzleService` RPCs: puzzles encoded as XCC problems, solved on the
//! same pool and job queue as generic problems, answered with decoded grids.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;
use tonic::{Request, Response, Status};

use super::callers::Caller;
use super::convert;
use super::grpc::{refused, CancelOnDrop, EventStream, Pump, StreamEvents};
use super::job::{Class, Delivery, EndReason, Job, JobSpec, Solutions};
use super::pool::Pool;
use super::proto as pb;
use super::proto::puzzle_service_server::PuzzleService;
use super::status;
use crate::puzzles::futoshiki::FutoshikiEncoding;
use crate::puzzles::kinds::{EncodeOptions, Kind};
use crate::puzzles::{Encoded, EncodingLimits, Puzzle, SizeError};
use crate::run::SideCondition;
use crate::xcc::dlx_format;
use crate::xcc::problem::quote;

/// Most solutions a SolvePuzzle call may ask for.
const MAX_SOLVE_LIMIT: u64 = 10_000;
/// Solutions per batch of EnumeratePuzzle, unless the request says.
const DEFAULT_BATCH: usize = 64;
/// Most solutions per batch a request may ask for.
const MAX_BATCH: usize = 65_536;

pub struct PuzzleApi {
    pool: Arc<Pool>,
    limits: EncodingLimits,
    /// Encodings being built at once: one per core at most.
    encoders: Arc<Semaphore>,
}

impl PuzzleApi {
    /// Puzzle RPCs on `pool`; puzzles whose encoding would exceed `limits`
    /// are refused before it is built.
    pub fn new(pool: Arc<Pool>, limits: EncodingLimits) -> PuzzleApi {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        PuzzleApi {
            pool,
            limits,
            encoders: Arc::new(Semaphore::new(cores)),
        }
    }

    /// Reads and encodes a request's puzzle. Its encoding's size is bounded
    /// from the text first, and past the limits the puzzle is refused with
    /// nothing built; the encoding is then built on a blocking thread, never
    /// on the async runtime, at most one per core, and the call gives up at
    /// its deadline.
    async fn encode(
        &self,
        puzzle: Option<pb::Puzzle>,
        deadline: Option<Instant>,
    ) -> Result<EncodedPuzzle, Status> {
        let puzzle = read_puzzle(puzzle)?;
        let far = Instant::now() + Duration::from_secs(3600);
        let deadline = deadline.unwrap_or(far);
        let late =
            || status::deadline("the call's deadline passed while the puzzle waited to be encoded");
        let permit = tokio::time::timeout_at(deadline, self.encoders.clone().acquire_owned())
            .await
            .map_err(|_| late())?
            .map_err(|_| status::shutting_down("the server is shutting down"))?;
        let limits = self.limits;
        let building = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            puzzle.check_size(&limits).map_err(|e| match e {
                SizeError::Puzzle(e) => status::invalid(format!("puzzle.text: {e}")),
                SizeError::TooLarge(e) => {
                    metrics::counter!("xccd_puzzles_too_large_total").increment(1);
                    status::invalid_because(status::Reason::PuzzleTooLarge, format!("puzzle: {e}"))
                }
            })?;
            let encoded = puzzle
                .encode()
                .map_err(|e| status::invalid(format!("puzzle.text: {e}")))?;
            Ok((Arc::from(encoded), puzzle))
        });
        match tokio::time::timeout_at(deadline, building).await {
            Err(_) => Err(late()),
            Ok(Err(panic)) => Err(status::internal(format!(
                "encoding the puzzle failed: {panic}"
            ))),
            Ok(Ok(result)) => result,
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
        let condition: Arc<dyn SideCondition> = encoded.clone();
        self.pool
            .submit(
                Arc::new(encoded.problem().clone()),
                JobSpec {
                    limit,
                    max_nodes,
                    delivery,
                    condition: condition.restricts().then_some(condition),
                    puzzle: Some(puzzle.clone()),
                    owner: caller.clone(),
                    durable: false,
                    engine,
                    waits_on_call: true,
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

/// A puzzle encoded, and the puzzle as given.
type EncodedPuzzle = (Arc<dyn Encoded>, Puzzle);

/// The kinds and their names in the API.
const KINDS: [(Kind, pb::PuzzleKind); 7] = [
    (Kind::Latin, pb::PuzzleKind::Latin),
    (Kind::Futoshiki, pb::PuzzleKind::Futoshiki),
    (Kind::Hitori, pb::PuzzleKind::Hitori),
    (Kind::Hidato, pb::PuzzleKind::Hidato),
    (Kind::Slitherlink, pb::PuzzleKind::Slitherlink),
    (Kind::Sudoku, pb::PuzzleKind::Sudoku),
    (Kind::Queens, pb::PuzzleKind::Queens),
];

fn kind(value: i32) -> Result<Kind, Status> {
    KINDS
        .iter()
        .find(|(_, named)| *named as i32 == value && *named != pb::PuzzleKind::Unspecified)
        .map(|&(kind, _)| kind)
        .ok_or_else(|| {
            status::invalid(format!(
                "puzzle.kind: required, one of latin, futoshiki, hitori, hidato, slitherlink, sudoku, queens (got {value})"
            ))
        })
}

/// The message for a puzzle given as text (for clients of this API: the
/// CLI's `--server`).
pub fn puzzle_message(puzzle: &Puzzle) -> pb::Puzzle {
    let kind = KINDS
        .iter()
        .find(|(kind, _)| *kind == puzzle.kind)
        .map_or(pb::PuzzleKind::Unspecified, |&(_, named)| named);
    pb::Puzzle {
        kind: kind as i32,
        grid: Some(pb::puzzle::Grid::Text(puzzle.text.clone())),
        weak: puzzle.options.weak,
        futoshiki_encoding: match puzzle.options.encoding {
            FutoshikiEncoding::Pairs => pb::FutoshikiEncoding::Pairs,
            FutoshikiEncoding::Colors => pb::FutoshikiEncoding::Colors,
        } as i32,
    }
}

/// The puzzle's text format from cells given one by one.
fn grid_text(kind: Kind, grid: &pb::CellGrid) -> Result<String, Status> {
    if grid.rows.is_empty() {
        return Err(status::invalid("puzzle.cells.rows: empty grid"));
    }
    let cols = grid.rows[0].cells.len();
    if cols == 0 {
        return Err(status::invalid(
            "puzzle.cells.rows[0]: a row needs at least one cell",
        ));
    }
    for (r, row) in grid.rows.iter().enumerate() {
        if row.cells.len() != cols {
            return Err(status::invalid(format!(
                "puzzle.cells.rows[{r}]: {} cells, but row 0 has {cols}",
                row.cells.len()
            )));
        }
        for (c, cell) in row.cells.iter().enumerate() {
            if cell.is_empty() || cell.chars().any(char::is_whitespace) {
                return Err(status::invalid(format!(
                    "puzzle.cells.rows[{r}].cells[{c}]: {} is not a cell token",
                    quote(cell)
                )));
            }
        }
    }
    if kind != Kind::Futoshiki && !grid.inequalities.is_empty() {
        return Err(status::invalid(
            "puzzle.cells.inequalities: only futoshiki has inequalities",
        ));
    }
    Ok(match kind {
        Kind::Slitherlink => grid
            .rows
            .iter()
            .map(|row| row.cells.concat())
            .collect::<Vec<_>>()
            .join("\n"),
        Kind::Futoshiki => futoshiki_text(grid, cols)?,
        Kind::Queens => {
            return Err(status::invalid(
                "puzzle.cells: queens takes its size as text (\"8\")",
            ))
        }
        _ => grid
            .rows
            .iter()
            .map(|row| row.cells.join(" "))
            .collect::<Vec<_>>()
            .join("\n"),
    } + "\n")
}

/// Futoshiki's layout: cells at even columns, `<`/`>` between them, and
/// `^`/`v` lines between rows.
fn futoshiki_text(grid: &pb::CellGrid, cols: usize) -> Result<String, Status> {
    let rows = grid.rows.len();
    let width = 2 * cols - 1;
    let mut lines: Vec<Vec<char>> = Vec::new();
    for (r, row) in grid.rows.iter().enumerate() {
        if r > 0 {
            lines.push(vec![' '; width]);
        }
        let mut line = vec![' '; width];
        for (c, cell) in row.cells.iter().enumerate() {
            let mut chars = cell.chars();
            match (chars.next(), chars.next()) {
                (Some(ch), None) => line[2 * c] = ch,
                _ => {
                    return Err(status::invalid(format!(
                        "puzzle.cells.rows[{r}].cells[{c}]: futoshiki cells are one digit or '.'"
                    )))
                }
            }
        }
        lines.push(line);
    }
    for (k, q) in grid.inequalities.iter().enumerate() {
        let (r, c, r2, c2) = (
            q.row as usize,
            q.col as usize,
            q.other_row as usize,
            q.other_col as usize,
        );
        let bad = |why: &str| status::invalid(format!("puzzle.cells.inequalities[{k}]: {why}"));
        if r >= rows || r2 >= rows || c >= cols || c2 >= cols {
            return Err(bad("a cell is outside the grid"));
        }
        let (line, col, sign) = match (r2 as isize - r as isize, c2 as isize - c as isize) {
            (0, 1) => (2 * r, 2 * c + 1, '<'),
            (0, -1) => (2 * r, 2 * c2 + 1, '>'),
            (1, 0) => (2 * r + 1, 2 * c, '^'),
            (-1, 0) => (2 * r2 + 1, 2 * c, 'v'),
            _ => return Err(bad("the two cells are not adjacent")),
        };
        if lines[line][col] != ' ' && lines[line][col] != sign {
            return Err(bad("contradicts another inequality between the same cells"));
        }
        lines[line][col] = sign;
    }
    Ok(lines
        .into_iter()
        .map(|l| l.into_iter().collect::<String>().trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The puzzle a request gives (its text, for cells).
fn read_puzzle(puzzle: Option<pb::Puzzle>) -> Result<Puzzle, Status> {
    let puzzle = puzzle.ok_or_else(|| status::invalid("puzzle: required"))?;
    let kind = kind(puzzle.kind)?;
    let text = match puzzle.grid {
        Some(pb::puzzle::Grid::Text(text)) => text,
        Some(pb::puzzle::Grid::Cells(cells)) => grid_text(kind, &cells)?,
        None => return Err(status::invalid("puzzle.grid: give text or cells")),
    };
    let encoding = match pb::FutoshikiEncoding::try_from(puzzle.futoshiki_encoding) {
        Ok(pb::FutoshikiEncoding::Colors) => FutoshikiEncoding::Colors,
        Ok(_) => FutoshikiEncoding::Pairs,
        Err(_) => {
            return Err(status::invalid(format!(
                "puzzle.futoshiki_encoding: unknown value {}",
                puzzle.futoshiki_encoding
            )))
        }
    };
    Ok(Puzzle {
        kind,
        text,
        options: EncodeOptions {
            weak: puzzle.weak,
            encoding,
        },
    })
}

/// A puzzle's events on an EnumeratePuzzle stream.
struct PuzzleEvents(Arc<dyn Encoded>);

impl StreamEvents for PuzzleEvents {
    type Message = pb::EnumeratePuzzleResponse;
    fn solutions(&self, batch: Solutions) -> Self::Message {
        use pb::enumerate_puzzle_response::Event as E;
        let solutions = batch.iter().map(|s| solution(&*self.0, s)).collect();
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

fn solution(encoded: &dyn Encoded, indices: &[u32]) -> pb::PuzzleSolution {
    let options: Vec<usize> = indices.iter().map(|&o| o as usize).collect();
    let text = encoded.decode(&options);
    pb::PuzzleSolution {
        lines: text.lines().map(str::to_string).collect(),
        text,
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
        let encoded = self.encode(req.puzzle, deadline).await?;
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
                .map(|s| solution(&*encoded.0, s))
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
        let encoded = self.encode(req.puzzle, deadline).await?;
        let delivery = if req.count_only {
            Delivery::CountOnly
        } else {
            Delivery::Stream {
                buffer_batches: 8,
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
        let encoded = self.encode(request.into_inner().puzzle, deadline).await?;
        let (job, summary) = self.run_kept(&caller, &encoded, 2, deadline, 0).await?;
        if let Some(status) = convert::end_status(&summary) {
            return Err(status);
        }
        let kept = job.kept_from(0);
        let valid = kept.len() == 1 && summary.reason == EndReason::Complete;
        Ok(Response::new(pb::CheckPuzzleResponse {
            valid,
            solutions_found: kept.len() as u32,
            solution: valid.then(|| solution(&*encoded.0, &kept[0])),
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
        let (encoded, _) = self.encode(request.into_inner().puzzle, deadline).await?;
        Ok(Response::new(pb::EncodePuzzleResponse {
            dlx: dlx_format::to_string(encoded.problem()),
            has_side_condition: encoded.restricts(),
        }))
    }
}
