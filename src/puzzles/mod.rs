//! Puzzles as XCC problems: encoders from a puzzle's text to an XCC
//! [`Problem`], and decoders from a solution back to the puzzle's grid.
//!
//! Pure code on top of the engine: no I/O, no async. Each puzzle lives in its
//! own module with its text format, its encoding (with the reasoning that
//! makes it right), its decoder, an independent checker of the puzzle's
//! rules, and tests against a brute-force solver that knows nothing of XCC.
//!
//! Conditions that exact cover cannot express (white cells connected in
//! hitori, a single loop in slitherlink) are each encoding's
//! [`SideCondition`]: checked on complete solutions and, to prune the
//! search, on partial ones, wherever a task of the puzzle runs (see
//! [`crate::run`]). [`formats`] describes each kind's input for people;
//! [`solved`] reads a solution's text back as a grid, which [`picture`]
//! draws for a terminal and [`svg`] for a browser.

pub mod formats;
pub mod futoshiki;
pub mod hidato;
pub mod hitori;
pub mod kinds;
pub mod latin;
pub mod picture;
pub mod queens;
pub mod rng;
pub mod size;
pub mod slitherlink;
pub mod solved;
pub mod sudoku;
pub mod svg;

pub use futoshiki::FutoshikiEncoding;
pub use kinds::{EncodeOptions, Kind, Puzzle};
pub use size::{EncodingLimits, EncodingSize, Measure, SizeError, TooLarge};

use std::sync::Arc;

use crate::run::{run_root, Batch, RunEnd, RunSpec, SideCondition, Sink, Taken};
use crate::xcc::Problem;

/// The most cells (holes included) a hitori, hidato or slitherlink grid
/// may have: 1000 x 1000 or so. Their encodings are refused well before
/// that by [`EncodingLimits`]; this bounds the memory and time of parsing
/// and of [`Puzzle::estimate`] whatever the text.
pub const MAX_GRID_CELLS: usize = 1 << 20;

/// A mistake in a puzzle's text, with its place (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct PuzzleError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl PuzzleError {
    pub fn new(line: usize, column: usize, message: impl Into<String>) -> PuzzleError {
        PuzzleError {
            line,
            column,
            message: message.into(),
        }
    }
}

/// The n x n grid of values that the chosen placement options write, for
/// the grid puzzles whose options each place one value in one cell
/// (`placements[option] = (row, column, value)`, 0-based row and column).
pub fn grid_of(
    n: usize,
    placements: &[(usize, usize, usize)],
    options: &[usize],
) -> Vec<Vec<usize>> {
    let mut grid = vec![vec![0; n]; n];
    for &o in options {
        let (r, c, v) = placements[o];
        grid[r][c] = v;
    }
    grid
}

/// A puzzle encoded as an XCC problem, with what it takes to decode, and
/// the conditions exact cover cannot express as its [`SideCondition`]
/// (none for most kinds).
pub trait Encoded: SideCondition + Send + Sync {
    /// The XCC problem whose solutions are the puzzle's (weak) solutions.
    fn problem(&self) -> &Problem;
    /// The puzzle's solution for an XCC solution (option indices,
    /// ascending), in the puzzle's text layout.
    fn decode(&self, options: &[usize]) -> String;
}

/// The side condition a search of `encoded` must check, if its kind has
/// one that restricts anything (hitori's and slitherlink's connectivity):
/// a job on the others is spared a check that admits every solution.
pub fn side_condition(encoded: &Arc<dyn Encoded>) -> Option<Arc<dyn SideCondition>> {
    let condition: Arc<dyn SideCondition> = encoded.clone();
    condition.restricts().then_some(condition)
}

/// Up to `limit` decoded solutions of an encoded puzzle, and whether the
/// search was complete (so "exactly one solution" can be proved with
/// `limit = 2`).
pub struct Solutions {
    pub grids: Vec<String>,
    /// Solutions counted (all of them when `complete`).
    pub count: u64,
    pub complete: bool,
    pub stats: crate::xcc::Stats,
    /// Why the search failed, if it did (a bug: a panic in an encoding).
    pub error: Option<String>,
}

/// Solves an encoded puzzle on this thread, keeping the first `keep`
/// solutions decoded.
pub fn solve(encoded: &dyn Encoded, limit: Option<u64>, keep: usize) -> Solutions {
    // Decodes the first `keep` solutions.
    let (mut grids, mut options) = (Vec::new(), Vec::new());
    let mut port = Sink(|batch: Batch| {
        for solution in &batch.solutions {
            if grids.len() >= keep {
                break;
            }
            options.clear();
            options.extend(solution.iter().map(|&o| o as usize));
            grids.push(encoded.decode(&options));
        }
        Taken::All
    });
    let spec = RunSpec {
        limit,
        want_solutions: keep > 0,
        ..RunSpec::default()
    };
    let engine = crate::xcc::Engine::auto(encoded.problem());
    let report = run_root(encoded.problem(), engine, &spec, Some(encoded), &mut port);
    Solutions {
        grids,
        count: report.delivered,
        complete: report.end == RunEnd::Exhausted,
        stats: report.stats,
        error: match report.end {
            RunEnd::Failed(error) => Some(error),
            _ => None,
        },
    }
}
