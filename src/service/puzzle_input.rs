//! Puzzles as requests give them: a `pb::Puzzle` read into a [`Puzzle`]
//! (its text, from cells if given cell by cell), encoded off the async
//! runtime within the server's limits, and a solution decoded back to its
//! grid. Shared by PuzzleService and by puzzle jobs (CreateJob).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;
use tonic::Status;

use super::proto as pb;
use super::status;
use crate::puzzles::futoshiki::FutoshikiEncoding;
use crate::puzzles::kinds::{EncodeOptions, Kind};
use crate::puzzles::{Encoded, EncodingLimits, Puzzle, SizeError};
use crate::service::metrics as metric;
use crate::xcc::problem::quote;

/// Builds puzzles' encodings for requests: at most one per core at once,
/// never on the async runtime, refused before any is built when the
/// puzzle's bound passes the limits.
pub struct PuzzleEncoder {
    limits: EncodingLimits,
    /// Encodings being built at once: one per core at most.
    encoders: Arc<Semaphore>,
}

impl PuzzleEncoder {
    pub fn new(limits: EncodingLimits) -> PuzzleEncoder {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        PuzzleEncoder {
            limits,
            encoders: Arc::new(Semaphore::new(cores)),
        }
    }

    /// Reads and encodes a request's puzzle. Its encoding's size is bounded
    /// from the text first, and past the limits the puzzle is refused with
    /// nothing built; the encoding is then built on a blocking thread, never
    /// on the async runtime, at most one per core, and the call gives up at
    /// its deadline.
    pub async fn encode(
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
                    metrics::counter!(metric::PUZZLES_TOO_LARGE).increment(1);
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
}

/// A puzzle encoded, and the puzzle as given.
pub type EncodedPuzzle = (Arc<dyn Encoded>, Puzzle);

/// A kind's name in the API. The kinds and their names are
/// [`Kind::ALL`] and [`Kind::name`]; this is only their wire enum, an
/// exhaustive match so a new kind cannot be forgotten here.
pub fn kind_message(kind: Kind) -> pb::PuzzleKind {
    match kind {
        Kind::Latin => pb::PuzzleKind::Latin,
        Kind::Futoshiki => pb::PuzzleKind::Futoshiki,
        Kind::Hitori => pb::PuzzleKind::Hitori,
        Kind::Hidato => pb::PuzzleKind::Hidato,
        Kind::Slitherlink => pb::PuzzleKind::Slitherlink,
        Kind::Sudoku => pb::PuzzleKind::Sudoku,
        Kind::Queens => pb::PuzzleKind::Queens,
    }
}

/// The kind a `puzzle.kind` field names.
pub fn kind(value: i32) -> Result<Kind, Status> {
    kind_in("puzzle.kind", value)
}

/// The kind the field `field` names, or INVALID_ARGUMENT naming it.
pub fn kind_in(field: &str, value: i32) -> Result<Kind, Status> {
    Kind::ALL
        .into_iter()
        .find(|&kind| kind_message(kind) as i32 == value)
        .ok_or_else(|| {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            status::invalid(format!(
                "{field}: required, one of {} (got {value})",
                names.join(", ")
            ))
        })
}

/// The message for a puzzle given as text (for clients of this API: the
/// CLI's `--server`).
pub fn puzzle_message(puzzle: &Puzzle) -> pb::Puzzle {
    pb::Puzzle {
        kind: kind_message(puzzle.kind) as i32,
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
pub fn read_puzzle(puzzle: Option<pb::Puzzle>) -> Result<Puzzle, Status> {
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

/// A solution of a puzzle as its grid.
pub fn grid(encoded: &dyn Encoded, indices: &[u32]) -> pb::PuzzleSolution {
    let options: Vec<usize> = indices.iter().map(|&o| o as usize).collect();
    let text = encoded.decode(&options);
    pb::PuzzleSolution {
        lines: text.lines().map(str::to_string).collect(),
        text,
    }
}
