//! The `PuzzleService` RPCs: puzzles encoded as XCC problems, solved on the
//! same pool and job queue as generic problems, answered with decoded grids.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use tracing::Instrument;

use super::convert;
use super::grpc::{refused, CancelOnDrop, EventStream};
use super::job::{Delivery, EndReason, Event, Job, JobSpec, SideCondition};
use super::pool::Pool;
use super::proto as pb;
use super::proto::puzzle_service_server::PuzzleService;
use crate::puzzles::futoshiki::FutoshikiEncoding;
use crate::puzzles::kinds::{self, EncodeOptions, Kind};
use crate::puzzles::Encoded;
use crate::xcc::dlx_format;

/// Most solutions a SolvePuzzle call may ask for.
const MAX_SOLVE_LIMIT: u64 = 10_000;

pub struct PuzzleApi {
    pool: Arc<Pool>,
}

impl PuzzleApi {
    pub fn new(pool: Arc<Pool>) -> PuzzleApi {
        PuzzleApi { pool }
    }

    fn submit(
        &self,
        encoded: &Arc<dyn Encoded>,
        limit: Option<u64>,
        delivery: Delivery,
    ) -> Result<Arc<Job>, Status> {
        self.pool
            .submit(
                Arc::new(encoded.problem().clone()),
                JobSpec {
                    limit,
                    max_nodes: None,
                    delivery,
                    // Remote workers can run puzzles without a side
                    // condition: those are plain XCC problems.
                    condition: encoded
                        .has_side_condition()
                        .then(|| Arc::new(Condition(encoded.clone())) as _),
                },
            )
            .map_err(refused)
    }

    /// Runs a job that keeps its solutions, to its end or the deadline.
    async fn run_kept(
        &self,
        encoded: &Arc<dyn Encoded>,
        limit: u64,
        deadline: Option<Instant>,
    ) -> Result<(Arc<Job>, super::job::Summary), Status> {
        let job = self.submit(
            encoded,
            Some(limit),
            Delivery::Keep {
                keep: limit as usize,
            },
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
                    return Err(Status::deadline_exceeded("the call's deadline passed"));
                }
            },
            None => job.wait().await,
        };
        drop(guard);
        Ok((job, summary))
    }
}

/// A puzzle's side condition, checked by the workers.
struct Condition(Arc<dyn Encoded>);

impl SideCondition for Condition {
    fn accept(&self, options: &[usize]) -> bool {
        self.0.accept(options)
    }
    fn accept_partial(&self, options: &[usize]) -> bool {
        self.0.accept_partial(options)
    }
    fn prunes(&self) -> bool {
        self.0.prunes()
    }
}

fn kind(value: i32) -> Result<Kind, Status> {
    Ok(match pb::PuzzleKind::try_from(value) {
        Ok(pb::PuzzleKind::Latin) => Kind::Latin,
        Ok(pb::PuzzleKind::Futoshiki) => Kind::Futoshiki,
        Ok(pb::PuzzleKind::Hitori) => Kind::Hitori,
        Ok(pb::PuzzleKind::Hidato) => Kind::Hidato,
        Ok(pb::PuzzleKind::Slitherlink) => Kind::Slitherlink,
        Ok(pb::PuzzleKind::Sudoku) => Kind::Sudoku,
        Ok(pb::PuzzleKind::Queens) => Kind::Queens,
        Ok(pb::PuzzleKind::Unspecified) | Err(_) => {
            return Err(Status::invalid_argument(format!(
                "puzzle.kind: required, one of latin, futoshiki, hitori, hidato, slitherlink, sudoku, queens (got {value})"
            )))
        }
    })
}

/// The puzzle's text format from cells given one by one.
fn grid_text(kind: Kind, grid: &pb::CellGrid) -> Result<String, Status> {
    if grid.rows.is_empty() {
        return Err(Status::invalid_argument("puzzle.cells.rows: empty grid"));
    }
    let cols = grid.rows[0].cells.len();
    for (r, row) in grid.rows.iter().enumerate() {
        if row.cells.len() != cols {
            return Err(Status::invalid_argument(format!(
                "puzzle.cells.rows[{r}]: {} cells, but row 0 has {cols}",
                row.cells.len()
            )));
        }
        for (c, cell) in row.cells.iter().enumerate() {
            if cell.is_empty() || cell.chars().any(char::is_whitespace) {
                return Err(Status::invalid_argument(format!(
                    "puzzle.cells.rows[{r}].cells[{c}]: {cell:?} is not a cell token"
                )));
            }
        }
    }
    if kind != Kind::Futoshiki && !grid.inequalities.is_empty() {
        return Err(Status::invalid_argument(
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
            return Err(Status::invalid_argument(
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
                    return Err(Status::invalid_argument(format!(
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
        let bad =
            |why: &str| Status::invalid_argument(format!("puzzle.cells.inequalities[{k}]: {why}"));
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

fn encode(puzzle: Option<pb::Puzzle>) -> Result<Arc<dyn Encoded>, Status> {
    let puzzle = puzzle.ok_or_else(|| Status::invalid_argument("puzzle: required"))?;
    let kind = kind(puzzle.kind)?;
    let text = match puzzle.grid {
        Some(pb::puzzle::Grid::Text(text)) => text,
        Some(pb::puzzle::Grid::Cells(cells)) => grid_text(kind, &cells)?,
        None => return Err(Status::invalid_argument("puzzle.grid: give text or cells")),
    };
    let encoding = match pb::FutoshikiEncoding::try_from(puzzle.futoshiki_encoding) {
        Ok(pb::FutoshikiEncoding::Colors) => FutoshikiEncoding::Colors,
        Ok(_) => FutoshikiEncoding::Pairs,
        Err(_) => {
            return Err(Status::invalid_argument(format!(
                "puzzle.futoshiki_encoding: unknown value {}",
                puzzle.futoshiki_encoding
            )))
        }
    };
    let options = EncodeOptions {
        weak: puzzle.weak,
        encoding,
    };
    let encoded = kinds::encode(kind, &text, &options)
        .map_err(|e| Status::invalid_argument(format!("puzzle.text: {e}")))?;
    Ok(Arc::from(encoded))
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
        let req = request.into_inner();
        let limit = req.limit.max(1);
        if limit > MAX_SOLVE_LIMIT {
            return Err(Status::invalid_argument(format!(
                "limit: {limit} exceeds {MAX_SOLVE_LIMIT}; use EnumeratePuzzle"
            )));
        }
        let encoded = encode(req.puzzle)?;
        let (job, summary) = self.run_kept(&encoded, limit, deadline).await?;
        if let Some(status) = convert::failure(&summary) {
            return Err(status);
        }
        Ok(Response::new(pb::SolvePuzzleResponse {
            solutions: job
                .kept_from(0)
                .iter()
                .map(|s| solution(&*encoded, s))
                .collect(),
            exhausted: summary.reason == EndReason::Complete,
            statistics: Some(convert::statistics(
                &summary.stats,
                summary.solutions,
                summary.elapsed,
            )),
        }))
    }

    type EnumeratePuzzleStream = EventStream<pb::EnumeratePuzzleResponse>;

    async fn enumerate_puzzle(
        &self,
        request: Request<pb::EnumeratePuzzleRequest>,
    ) -> Result<Response<Self::EnumeratePuzzleStream>, Status> {
        let deadline = convert::deadline(&request).map(|d| Instant::now() + d);
        let req = request.into_inner();
        let encoded = encode(req.puzzle)?;
        let job = self.submit(
            &encoded,
            (req.limit > 0).then_some(req.limit),
            Delivery::Stream {
                buffer_batches: 8,
                batch_size: 64,
            },
        )?;
        let (tx, rx) = mpsc::channel(4);
        let pool = self.pool.clone();
        let interval = convert::interval(req.progress_interval_seconds);
        let span = tracing::info_span!("job", id = job.id, rpc = "EnumeratePuzzle");
        tokio::spawn(
            async move {
                use pb::enumerate_puzzle_response::Event as E;
                let _cancel = CancelOnDrop {
                    pool: pool.clone(),
                    job: job.clone(),
                };
                let wrap = |e| Ok(pb::EnumeratePuzzleResponse { event: Some(e) });
                let deadline =
                    deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 32));
                let mut ticker = tokio::time::interval_at(Instant::now() + interval, interval);
                loop {
                    let messages = tokio::select! {
                        biased;
                        () = tx.closed() => return,
                        () = tokio::time::sleep_until(deadline) => {
                            pool.cancel(&job, EndReason::Deadline);
                            let _ = tx.send(Err(Status::deadline_exceeded("the call's deadline passed"))).await;
                            return;
                        }
                        event = job.next_event() => match event {
                            Event::Solutions(batch) => batch
                                .iter()
                                .map(|s| wrap(E::Solution(solution(&*encoded, s))))
                                .collect::<Vec<_>>(),
                            Event::Done(summary) => {
                                let _ = tx.send(wrap(E::Summary(convert::summary(&summary)))).await;
                                if let Some(status) = convert::failure(&summary) {
                                    let _ = tx.send(Err(status)).await;
                                }
                                return;
                            }
                        },
                        _ = ticker.tick() => vec![wrap(E::Progress(convert::progress(&pool.progress(&job))))],
                    };
                    for message in messages {
                        if tx.send(message).await.is_err() {
                            return;
                        }
                    }
                }
            }
            .instrument(span),
        );
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn check_puzzle(
        &self,
        request: Request<pb::CheckPuzzleRequest>,
    ) -> Result<Response<pb::CheckPuzzleResponse>, Status> {
        let arrived = Instant::now();
        let deadline = convert::deadline(&request).map(|d| convert::unary_deadline(arrived, d));
        let encoded = encode(request.into_inner().puzzle)?;
        let (job, summary) = self.run_kept(&encoded, 2, deadline).await?;
        let kept = job.kept_from(0);
        let valid = kept.len() == 1 && summary.reason == EndReason::Complete;
        Ok(Response::new(pb::CheckPuzzleResponse {
            valid,
            solutions_found: kept.len() as u32,
            solution: valid.then(|| solution(&*encoded, &kept[0])),
            statistics: Some(convert::statistics(
                &summary.stats,
                summary.solutions,
                summary.elapsed,
            )),
        }))
    }

    async fn encode_puzzle(
        &self,
        request: Request<pb::EncodePuzzleRequest>,
    ) -> Result<Response<pb::EncodePuzzleResponse>, Status> {
        let encoded = encode(request.into_inner().puzzle)?;
        Ok(Response::new(pb::EncodePuzzleResponse {
            dlx: dlx_format::to_string(encoded.problem()),
            has_side_condition: encoded.has_side_condition(),
        }))
    }
}
