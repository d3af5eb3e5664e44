//! Puzzles as XCC problems: encoders from a puzzle's text to an XCC
//! [`Problem`], and decoders from a solution back to the puzzle's grid.
//!
//! Pure code on top of the engine: no I/O, no async. Each puzzle lives in its
//! own module with its text format, its encoding (with the reasoning that
//! makes it right), its decoder, an independent checker of the puzzle's
//! rules, and tests against a brute-force solver that knows nothing of XCC.
//!
//! Conditions that exact cover cannot express (white cells connected in
//! hitori, a single loop in slitherlink) are checked by [`Encoded::accept`]
//! on complete solutions and, to prune the search, by
//! [`Encoded::accept_partial`] on partial ones (see [`solve`]).

pub mod futoshiki;
pub mod hidato;
pub mod hitori;
pub mod kinds;
pub mod latin;
pub mod queens;
pub mod slitherlink;
pub mod sudoku;

pub use futoshiki::FutoshikiEncoding;
pub use kinds::{EncodeOptions, Kind};

use crate::xcc::{Flow, Problem, RunConfig, SolutionView, Solver, Task, Visitor};

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

/// A puzzle encoded as an XCC problem, with what it takes to decode.
pub trait Encoded: Send + Sync {
    /// The XCC problem whose solutions are the puzzle's (weak) solutions.
    fn problem(&self) -> &Problem;
    /// The puzzle's solution for an XCC solution (option indices,
    /// ascending), in the puzzle's text layout.
    fn decode(&self, options: &[usize]) -> String;
    /// Whether an XCC solution is a solution of the puzzle (conditions the
    /// encoding cannot express). Default: always.
    fn accept(&self, _options: &[usize]) -> bool {
        true
    }
    /// Whether a partial XCC solution (the options chosen so far) may still
    /// extend to an accepted one; `false` prunes the search. Default: yes.
    fn accept_partial(&self, _options: &[usize]) -> bool {
        true
    }
    /// Whether `accept_partial` does anything (it costs a call per node).
    fn prunes(&self) -> bool {
        false
    }
    /// Whether `accept` or `accept_partial` can say no: the XCC problem
    /// alone does not define the puzzle's solutions.
    fn has_side_condition(&self) -> bool {
        self.prunes()
    }
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
}

/// Solves an encoded puzzle on one thread.
pub fn solve(encoded: &dyn Encoded, limit: Option<u64>, keep: usize) -> Solutions {
    struct Keep<'a> {
        encoded: &'a dyn Encoded,
        grids: Vec<String>,
        keep: usize,
        options: Vec<usize>,
        count: u64,
    }
    impl Visitor for Keep<'_> {
        fn solution(&mut self, s: &SolutionView<'_>) -> Flow {
            s.options_into(&mut self.options);
            if !self.encoded.accept(&self.options) {
                return Flow::Reject;
            }
            self.count += 1;
            if self.grids.len() < self.keep {
                self.grids.push(self.encoded.decode(&self.options));
            }
            Flow::Continue
        }
        fn partial(&mut self, s: &SolutionView<'_>) -> bool {
            s.options_into(&mut self.options);
            self.encoded.accept_partial(&self.options)
        }
    }
    let mut visitor = Keep {
        encoded,
        grids: Vec::new(),
        keep,
        options: Vec::new(),
        count: 0,
    };
    let config = RunConfig {
        max_solutions: limit,
        check_partial: encoded.prunes(),
        ..RunConfig::default()
    };
    let outcome = Solver::new(encoded.problem())
        .run(&Task::root(), &config, &mut visitor)
        .expect("the root task is always valid");
    Solutions {
        grids: visitor.grids,
        count: visitor.count,
        complete: outcome.status == crate::xcc::Status::Exhausted,
        stats: outcome.stats,
    }
}
