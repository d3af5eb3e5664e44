//! Latin squares: all squares of order n, or the completions of a partial
//! square.
//!
//! # Text format
//!
//! Either an integer `n` alone (all latin squares of order n), or an n x n
//! grid: n non-empty lines of n whitespace-separated tokens, each a number
//! `1..=n` (a given entry) or `.` (an empty cell). Blank lines are ignored.
//! Solutions are printed as grids in the same format.
//!
//! # Encoding (exact cover, Algorithm X)
//!
//! Primary items, all covered exactly once:
//! - `p{r}_{c}`: cell (r, c) holds a value;
//! - `r{r}_{v}`: row r holds value v;
//! - `c{c}_{v}`: column c holds value v.
//!
//! One option `p{r}_{c} r{r}_{v} c{c}_{v}` per placement "value v in cell
//! (r, c)" that the givens allow: every v for an empty cell, only the given
//! value for a given cell.
//!
//! Why it is right: an exact cover chooses exactly one option per cell item,
//! so it assigns one value to every cell, a value the givens allow. Each row
//! item `r{r}_{v}` is covered once, so value v occurs exactly once in row r;
//! likewise for columns. So a cover is a latin square that agrees with the
//! givens. Conversely such a square covers every item exactly once by its n²
//! placements (each cell once; each row and column holds every value once),
//! and all those placements are options. The map is one-to-one (the options
//! chosen are the square's placements), so solutions correspond exactly.

use crate::xcc::{Problem, ProblemBuilder};

use super::size::{product, sum, EncodingSize};
use super::{Encoded, PuzzleError};
use crate::run::SideCondition;

/// The largest order accepted (n³ options).
pub const MAX_ORDER: usize = 100;

/// A whitespace-separated token of a grid, with its 1-based place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub line: usize,
    pub column: usize,
    pub text: &'a str,
}

/// The non-blank lines of `text`, each as its tokens (columns count
/// characters, 1-based).
pub(crate) fn token_lines(text: &str) -> Vec<Vec<Token<'_>>> {
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut tokens = Vec::new();
        let mut start: Option<(usize, usize)> = None; // (byte, column)
        let mut column = 0;
        for (byte, ch) in line.char_indices() {
            column += 1;
            if ch.is_whitespace() {
                if let Some((b, c)) = start.take() {
                    tokens.push(Token {
                        line: i + 1,
                        column: c,
                        text: &line[b..byte],
                    });
                }
            } else if start.is_none() {
                start = Some((byte, column));
            }
        }
        if let Some((b, c)) = start {
            tokens.push(Token {
                line: i + 1,
                column: c,
                text: &line[b..],
            });
        }
        if !tokens.is_empty() {
            lines.push(tokens);
        }
    }
    lines
}

/// The place just after the last token of a line (for "missing" errors).
pub(crate) fn after(token: &Token<'_>) -> (usize, usize) {
    (token.line, token.column + token.text.chars().count())
}

/// Checks that a grid of token lines is square-shaped with `n` tokens per
/// line (the caller knows there are `n` lines).
pub(crate) fn check_rows(lines: &[Vec<Token<'_>>], n: usize) -> Result<(), PuzzleError> {
    for row in lines {
        if row.len() < n {
            let (line, column) = after(row.last().expect("lines are non-empty"));
            return Err(PuzzleError::new(
                line,
                column,
                format!("this row has {} entries, expected {n}", row.len()),
            ));
        }
        if row.len() > n {
            let t = row[n];
            return Err(PuzzleError::new(
                t.line,
                t.column,
                format!("this row has {} entries, expected {n}", row.len()),
            ));
        }
    }
    Ok(())
}

/// A latin square puzzle: its order and the given entries (1-based values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatinPuzzle {
    pub n: usize,
    /// Row-major; `None` for an empty cell.
    pub givens: Vec<Vec<Option<usize>>>,
}

impl LatinPuzzle {
    /// All latin squares of order `n`.
    pub fn empty(n: usize) -> LatinPuzzle {
        LatinPuzzle {
            n,
            givens: vec![vec![None; n]; n],
        }
    }

    /// Parses the text format (see the module documentation).
    pub fn parse(text: &str) -> Result<LatinPuzzle, PuzzleError> {
        let lines = token_lines(text);
        let Some(first) = lines.first() else {
            return Err(PuzzleError::new(
                1,
                1,
                "empty input: expected an order n or an n x n grid",
            ));
        };
        if lines.len() == 1 && first.len() == 1 && first[0].text != "." {
            let t = first[0];
            let n: usize = t.text.parse().map_err(|_| {
                PuzzleError::new(
                    t.line,
                    t.column,
                    format!("expected an order n or an n x n grid, found {:?}", t.text),
                )
            })?;
            if n == 0 || n > MAX_ORDER {
                return Err(PuzzleError::new(
                    t.line,
                    t.column,
                    format!("the order must be between 1 and {MAX_ORDER}, not {n}"),
                ));
            }
            return Ok(LatinPuzzle::empty(n));
        }
        let n = lines.len();
        if n > MAX_ORDER {
            let t = lines[MAX_ORDER][0];
            return Err(PuzzleError::new(
                t.line,
                t.column,
                format!("too many rows: the largest order is {MAX_ORDER}"),
            ));
        }
        check_rows(&lines, n)?;
        let mut givens = vec![vec![None; n]; n];
        for (r, row) in lines.iter().enumerate() {
            for (c, t) in row.iter().enumerate() {
                givens[r][c] = parse_value(t, n, &["."])?;
            }
        }
        Ok(LatinPuzzle { n, givens })
    }

    /// The exact cover problem (see the module documentation).
    pub fn encode(&self) -> LatinEncoded {
        let n = self.n;
        let mut b = ProblemBuilder::new();
        for r in 1..=n {
            for c in 1..=n {
                b.primary(&format!("p{r}_{c}")).expect("fresh item");
            }
        }
        for r in 1..=n {
            for v in 1..=n {
                b.primary(&format!("r{r}_{v}")).expect("fresh item");
            }
        }
        for c in 1..=n {
            for v in 1..=n {
                b.primary(&format!("c{c}_{v}")).expect("fresh item");
            }
        }
        let mut placements = Vec::new();
        for r in 1..=n {
            for c in 1..=n {
                for v in 1..=n {
                    if self.givens[r - 1][c - 1].is_some_and(|g| g != v) {
                        continue;
                    }
                    b.option_str(&[
                        &format!("p{r}_{c}"),
                        &format!("r{r}_{v}"),
                        &format!("c{c}_{v}"),
                    ])
                    .expect("items exist");
                    placements.push((r - 1, c - 1, v));
                }
            }
        }
        LatinEncoded {
            n,
            problem: b.build().expect("n >= 1 gives items"),
            placements,
        }
    }
}

impl LatinPuzzle {
    /// The size of [`Self::encode`]'s problem, exactly, without building
    /// it (see [`grid_estimate`]).
    pub fn estimate(&self) -> EncodingSize {
        grid_estimate(self.n, &self.givens, 3)
    }
}

/// The size of the encoding of an n x n grid whose options each place one
/// value in one cell, with `per_option` entries (3 for a latin square: the
/// cell, its row and its column; 4 for a sudoku, with its box), exactly:
/// `per_option` n² items; one option per value of an empty cell and one per
/// given. The work is the n³ (cell, value) pairs the encoder looks at, plus
/// what it builds.
pub(crate) fn grid_estimate(
    n: usize,
    givens: &[Vec<Option<usize>>],
    per_option: u64,
) -> EncodingSize {
    let n = n as u64;
    let given = givens.iter().flatten().filter(|g| g.is_some()).count() as u64;
    let cells = product(&[n, n]);
    let options = sum(&[given, product(&[cells - given, n])]);
    EncodingSize::new(
        product(&[per_option, cells]),
        options,
        product(&[per_option, options]),
        product(&[n, n, n]),
    )
}

/// Parses a grid token: a number in `1..=n`, or one of `blanks`.
pub(crate) fn parse_value(
    t: &Token<'_>,
    n: usize,
    blanks: &[&str],
) -> Result<Option<usize>, PuzzleError> {
    if blanks.contains(&t.text) {
        return Ok(None);
    }
    if !t.text.is_empty() && t.text.bytes().all(|b| b.is_ascii_digit()) {
        return match t.text.parse::<usize>() {
            Ok(v) if (1..=n).contains(&v) => Ok(Some(v)),
            _ => Err(PuzzleError::new(
                t.line,
                t.column,
                format!("value {} out of range 1..{n}", t.text),
            )),
        };
    }
    let blank_names: Vec<String> = blanks.iter().map(|b| format!("'{b}'")).collect();
    Err(PuzzleError::new(
        t.line,
        t.column,
        format!(
            "unknown symbol {:?}: expected a number 1..{n} or {}",
            t.text,
            blank_names.join(" or ")
        ),
    ))
}

/// Renders a grid of values as rows of space-separated numbers.
pub fn format_grid(grid: &[Vec<usize>]) -> String {
    let width = grid.len().to_string().len();
    let mut out = String::new();
    for row in grid {
        let cells: Vec<String> = row.iter().map(|v| format!("{v:>width$}")).collect();
        out.push_str(&cells.join(" "));
        out.push('\n');
    }
    out
}

/// A latin square puzzle as an exact cover problem.
pub struct LatinEncoded {
    n: usize,
    problem: Problem,
    /// Option index -> (row, column, value), rows and columns 0-based.
    placements: Vec<(usize, usize, usize)>,
}

impl LatinEncoded {
    /// The square of a solution (option indices).
    pub fn grid(&self, options: &[usize]) -> Vec<Vec<usize>> {
        crate::puzzles::grid_of(self.n, &self.placements, options)
    }
}

/// No condition beyond the XCC problem.
impl SideCondition for LatinEncoded {}

impl Encoded for LatinEncoded {
    fn problem(&self) -> &Problem {
        &self.problem
    }
    fn decode(&self, options: &[usize]) -> String {
        format_grid(&self.grid(options))
    }
}

/// Parses and encodes.
pub fn encode_text(text: &str) -> Result<LatinEncoded, PuzzleError> {
    Ok(LatinPuzzle::parse(text)?.encode())
}

/// Whether `grid` is a latin square of order n: n rows of n values, each
/// row and each column holding every value 1..=n once.
pub fn is_latin(grid: &[Vec<usize>], n: usize) -> bool {
    fn all_once(n: usize, values: impl IntoIterator<Item = usize>) -> bool {
        let mut seen = vec![false; n + 1];
        values
            .into_iter()
            .all(|v| (1..=n).contains(&v) && !std::mem::replace(&mut seen[v], true))
    }
    grid.len() == n
        && grid
            .iter()
            .all(|row| row.len() == n && all_once(n, row.iter().copied()))
        && (0..n).all(|c| all_once(n, grid.iter().map(|row| row[c])))
}

/// Whether `grid` is a latin square of order n completing `puzzle`.
pub fn is_solution(puzzle: &LatinPuzzle, grid: &[Vec<usize>]) -> bool {
    let n = puzzle.n;
    is_latin(grid, n)
        && (0..n).all(|r| (0..n).all(|c| puzzle.givens[r][c].is_none_or(|g| g == grid[r][c])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::puzzles::solve;

    #[test]
    fn small_orders_count() {
        for (n, count) in [(1, 1), (2, 2), (3, 12), (4, 576)] {
            let e = LatinPuzzle::empty(n).encode();
            assert_eq!(solve(&e, None, 0).count, count, "order {n}");
        }
    }

    #[test]
    fn parse_and_complete() {
        let e = LatinPuzzle::parse("1 . .\n. . 1\n. . .\n")
            .unwrap()
            .encode();
        assert_eq!(solve(&e, None, 0).count, 2);
        let e = LatinPuzzle::parse("1 2 .\n. . 1\n. . .\n")
            .unwrap()
            .encode();
        let s = solve(&e, None, 10);
        assert_eq!(s.count, 1);
        assert_eq!(s.grids[0], "1 2 3\n2 3 1\n3 1 2\n");
    }

    #[test]
    fn errors_have_places() {
        let e = LatinPuzzle::parse("1 2\n3 .\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 1));
        let e = LatinPuzzle::parse("1 2\n.\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 2));
        let e = LatinPuzzle::parse("1 2\n. x\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 3));
        let e = LatinPuzzle::parse("  0").unwrap_err();
        assert_eq!((e.line, e.column), (1, 3));
    }
}
