//! Sudoku of side N = m² (4x4, 9x9, 16x16, ...).
//!
//! # Text format
//!
//! Two spellings, told apart by the shape of the text:
//! - **Characters** (4x4 and 9x9): the cells in row-major order, one
//!   character each, a digit `1..=N` or `.` / `0` for an empty cell;
//!   whitespace is ignored anywhere (one line of 81 characters, nine lines
//!   of nine, groups of three, ...). 16 characters make a 4x4 sudoku, 81 a
//!   9x9 one.
//! - **Tokens** (any side, needed from 16x16 on): N non-blank lines of N
//!   whitespace-separated tokens, each a number `1..=N` or `.` / `0`. The
//!   text is read this way when its first non-blank line has more than one
//!   token and as many tokens as there are non-blank lines.
//!
//! Solutions print as N lines: for N <= 9 the digits side by side, for
//! larger sides numbers separated by spaces (both are valid input).
//!
//! # Encoding (exact cover, Algorithm X)
//!
//! Primary items, all covered exactly once: `p{r}_{c}` (cell (r, c) is
//! filled), `r{r}_{v}` (row r holds v), `c{c}_{v}` (column c holds v),
//! `b{b}_{v}` (box b holds v). One option
//! `p{r}_{c} r{r}_{v} c{c}_{v} b{b}_{v}` per placement "v in (r, c)" the
//! givens allow (a given cell has only its value).
//!
//! Why it is right: it is the latin square encoding (see
//! [`super::latin`]) with one more family of items. A cover picks one
//! allowed value per cell, and every row, column and box holds each value
//! exactly once, which is the sudoku rule; a solved grid conversely covers
//! each item exactly once by its N² placements. Givens that contradict one
//! another leave no cover, which is the right answer (no solution).

use crate::xcc::{Problem, ProblemBuilder};

use super::latin::{check_rows, grid_estimate, parse_value, token_lines};
use super::size::EncodingSize;
use super::{Encoded, PuzzleError};
use crate::run::SideCondition;

/// Largest box size m (sides up to 100).
pub const MAX_BOX: usize = 10;

/// A sudoku: box size m, side n = m², and the givens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sudoku {
    pub m: usize,
    pub n: usize,
    /// Row-major; `None` for an empty cell.
    pub givens: Vec<Vec<Option<usize>>>,
}

fn isqrt(n: usize) -> usize {
    let mut m = 0;
    while (m + 1) * (m + 1) <= n {
        m += 1;
    }
    m
}

impl Sudoku {
    /// Parses either spelling (see the module documentation).
    pub fn parse(text: &str) -> Result<Sudoku, PuzzleError> {
        let lines = token_lines(text);
        if lines.is_empty() {
            return Err(PuzzleError::new(
                1,
                1,
                "empty input: expected a sudoku grid",
            ));
        }
        if lines.len() > 1 && lines[0].len() == lines.len() {
            Self::parse_tokens(&lines)
        } else {
            Self::parse_chars(text)
        }
    }

    fn parse_tokens(lines: &[Vec<super::latin::Token<'_>>]) -> Result<Sudoku, PuzzleError> {
        let n = lines.len();
        let m = isqrt(n);
        if m * m != n || m > MAX_BOX {
            return Err(PuzzleError::new(
                lines[0][0].line,
                lines[0][0].column,
                format!(
                    "a grid of {n} rows of {n} is not a sudoku: the side must be a square \
                     (4, 9, 16, ..., {})",
                    MAX_BOX * MAX_BOX
                ),
            ));
        }
        check_rows(lines, n)?;
        let mut givens = vec![vec![None; n]; n];
        for (r, row) in lines.iter().enumerate() {
            for (c, t) in row.iter().enumerate() {
                givens[r][c] = parse_value(t, n, &[".", "0"])?;
            }
        }
        Ok(Sudoku { m, n, givens })
    }

    fn parse_chars(text: &str) -> Result<Sudoku, PuzzleError> {
        // (line, column, character) of every non-blank character.
        let mut cells = Vec::new();
        let mut end = (1, 1);
        for (i, line) in text.lines().enumerate() {
            for (j, ch) in line.chars().enumerate() {
                if ch.is_whitespace() {
                    continue;
                }
                if !(ch == '.' || ch.is_ascii_digit()) {
                    return Err(PuzzleError::new(
                        i + 1,
                        j + 1,
                        format!("unknown symbol {ch:?}: expected a digit, '.' or '0'"),
                    ));
                }
                if cells.len() == 81 {
                    return Err(PuzzleError::new(
                        i + 1,
                        j + 1,
                        "too many cells: a 9x9 sudoku has 81",
                    ));
                }
                cells.push((i + 1, j + 1, ch));
                end = (i + 1, j + 2);
            }
        }
        let (m, n) = match cells.len() {
            16 => (2, 4),
            81 => (3, 9),
            k => {
                return Err(PuzzleError::new(
                    end.0,
                    end.1,
                    format!(
                        "found {k} cells: a sudoku has 81 (9x9) or 16 (4x4); \
                         larger ones are written as rows of numbers"
                    ),
                ))
            }
        };
        let mut givens = vec![vec![None; n]; n];
        for (k, &(line, column, ch)) in cells.iter().enumerate() {
            let value = match ch {
                '.' | '0' => None,
                d => {
                    let v = d as usize - '0' as usize;
                    if v > n {
                        return Err(PuzzleError::new(
                            line,
                            column,
                            format!("value {v} out of range 1..{n}"),
                        ));
                    }
                    Some(v)
                }
            };
            givens[k / n][k % n] = value;
        }
        Ok(Sudoku { m, n, givens })
    }

    /// The box (0-based, row-major) of cell (r, c).
    pub fn box_of(&self, r: usize, c: usize) -> usize {
        (r / self.m) * self.m + c / self.m
    }

    /// The exact cover problem (see the module documentation).
    pub fn encode(&self) -> SudokuEncoded {
        let n = self.n;
        let mut b = ProblemBuilder::new();
        for prefix in ["p", "r", "c", "b"] {
            for i in 1..=n {
                for j in 1..=n {
                    b.primary(&format!("{prefix}{i}_{j}")).expect("fresh item");
                }
            }
        }
        let mut placements = Vec::new();
        for r in 0..n {
            for c in 0..n {
                for v in 1..=n {
                    if self.givens[r][c].is_some_and(|g| g != v) {
                        continue;
                    }
                    let bx = self.box_of(r, c);
                    b.option_str(&[
                        &format!("p{}_{}", r + 1, c + 1),
                        &format!("r{}_{v}", r + 1),
                        &format!("c{}_{v}", c + 1),
                        &format!("b{}_{v}", bx + 1),
                    ])
                    .expect("items exist");
                    placements.push((r, c, v));
                }
            }
        }
        SudokuEncoded {
            n,
            problem: b.build().expect("the grid is not empty"),
            placements,
        }
    }

    /// The size of [`Self::encode`]'s problem, exactly, without building
    /// it (see [`grid_estimate`]).
    pub fn estimate(&self) -> EncodingSize {
        grid_estimate(self.n, &self.givens, 4)
    }

    /// Whether `grid` is a solved sudoku that keeps the givens (an
    /// independent check of the rules).
    pub fn is_solution(&self, grid: &[Vec<usize>]) -> bool {
        let n = self.n;
        if grid.len() != n || grid.iter().any(|row| row.len() != n) {
            return false;
        }
        let mut seen = vec![false; 3 * n * (n + 1)];
        for (r, row) in grid.iter().enumerate() {
            for (c, &v) in row.iter().enumerate() {
                if v == 0 || v > n || self.givens[r][c].is_some_and(|g| g != v) {
                    return false;
                }
                for (family, i) in [(0, r), (1, c), (2, self.box_of(r, c))] {
                    let k = (family * n + i) * (n + 1) + v;
                    if seen[k] {
                        return false;
                    }
                    seen[k] = true;
                }
            }
        }
        true
    }
}

/// Renders a sudoku grid: digits side by side up to 9x9, numbers separated
/// by spaces beyond.
pub fn format_grid(grid: &[Vec<usize>]) -> String {
    if grid.len() > 9 {
        return super::latin::format_grid(grid);
    }
    let mut out = String::new();
    for row in grid {
        for v in row {
            out.push_str(&v.to_string());
        }
        out.push('\n');
    }
    out
}

/// A sudoku as an exact cover problem.
pub struct SudokuEncoded {
    n: usize,
    problem: Problem,
    /// Option index -> (row, column, value), rows and columns 0-based.
    placements: Vec<(usize, usize, usize)>,
}

impl SudokuEncoded {
    /// The grid of a solution (option indices).
    pub fn grid(&self, options: &[usize]) -> Vec<Vec<usize>> {
        crate::puzzles::grid_of(self.n, &self.placements, options)
    }
}

/// No condition beyond the XCC problem.
impl SideCondition for SudokuEncoded {}

impl Encoded for SudokuEncoded {
    fn problem(&self) -> &Problem {
        &self.problem
    }
    fn decode(&self, options: &[usize]) -> String {
        format_grid(&self.grid(options))
    }
}

/// Parses and encodes.
pub fn encode_text(text: &str) -> Result<SudokuEncoded, PuzzleError> {
    Ok(Sudoku::parse(text)?.encode())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::puzzles::solve;

    #[test]
    fn wikipedia_puzzle_is_unique() {
        let text =
            "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";
        let s = Sudoku::parse(text).unwrap();
        let e = s.encode();
        let sol = solve(&e, Some(2), 2);
        assert_eq!(sol.count, 1);
        assert!(sol.complete);
        assert_eq!(
            sol.grids[0].lines().next().unwrap(),
            "534678912",
            "{}",
            sol.grids[0]
        );
        let again = Sudoku::parse(&sol.grids[0]).unwrap();
        assert!(again.givens.iter().flatten().all(Option::is_some));
    }

    #[test]
    fn both_spellings_agree() {
        let chars = "1...\n..2.\n.3..\n...4\n";
        let tokens = "1 . . .\n. . 2 .\n. 3 . .\n. . . 4\n";
        assert_eq!(
            Sudoku::parse(chars).unwrap(),
            Sudoku::parse(tokens).unwrap()
        );
        let e = Sudoku::parse("12 . . .\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 9));
    }
}
