//! The n queens problem: n queens on an n x n board, no two in the same
//! row, column or diagonal.
//!
//! # Text format
//!
//! The integer n (surrounding whitespace allowed). Solutions print as n
//! lines of n characters, `Q` for a queen and `.` for an empty square.
//!
//! # Encoding (Knuth's, TAOCP 7.2.2.1 (23); Algorithm X with secondary items)
//!
//! Primary items `r{i}` and `c{j}` (0 <= i, j < n), declared in "organ-pipe"
//! order from the middle out (`r{n/2} c{n/2} r{n/2-1} c{n/2-1} ...`), which
//! makes the first-fewest-options rule start from the center where the
//! constraints bite hardest. Secondary items `a{s}` for the sum diagonals
//! s = i + j and `b{d}` for the difference diagonals d = j - i + n - 1,
//! leaving out the two of each kind that hold a single square (s = 0,
//! 2n - 2; d = 0, 2n - 2): no other queen can share them. One option
//! `r{i} c{j} a{i+j} b{j-i+n-1}` per square, in row-major order. This is
//! exactly the `queens8.dlx` example for n = 8.
//!
//! Why it is right: each row and each column item is covered exactly once,
//! so exactly one queen per row and per column (hence n queens). Each
//! diagonal item is secondary, covered at most once, so no diagonal holds
//! two queens; the omitted single-square diagonals can hold only one queen
//! anyway. Conversely n non-attacking queens cover every row and column
//! once and each diagonal at most once. Queens are squares, so covers and
//! placements correspond one to one.

use crate::xcc::{Problem, ProblemBuilder};

use super::latin::token_lines;
use super::size::{product, sum, EncodingSize};
use super::{Encoded, PuzzleError};
use crate::run::SideCondition;

/// The largest board accepted.
pub const MAX_N: usize = 1000;

/// Parses the text: the integer n.
pub fn parse(text: &str) -> Result<usize, PuzzleError> {
    let lines = token_lines(text);
    let Some(first) = lines.first() else {
        return Err(PuzzleError::new(
            1,
            1,
            "empty input: expected the board size n",
        ));
    };
    let t = first[0];
    let n: usize = t.text.parse().map_err(|_| {
        PuzzleError::new(
            t.line,
            t.column,
            format!("expected the board size n, found {:?}", t.text),
        )
    })?;
    if n == 0 || n > MAX_N {
        return Err(PuzzleError::new(
            t.line,
            t.column,
            format!("the board size must be between 1 and {MAX_N}, not {n}"),
        ));
    }
    if let Some(extra) = first.get(1).or_else(|| lines.get(1).map(|l| &l[0])) {
        return Err(PuzzleError::new(
            extra.line,
            extra.column,
            format!("unexpected {:?} after the board size", extra.text),
        ));
    }
    Ok(n)
}

/// The n queens problem as XCC (see the module documentation).
pub struct QueensEncoded {
    n: usize,
    problem: Problem,
}

/// Encodes n queens.
pub fn encode(n: usize) -> QueensEncoded {
    let mut b = ProblemBuilder::new();
    for t in 0..n {
        let i = if t % 2 == 0 {
            n / 2 + t / 2
        } else {
            n / 2 - t.div_ceil(2)
        };
        b.primary(&format!("r{i}")).expect("fresh item");
        b.primary(&format!("c{i}")).expect("fresh item");
    }
    for k in 1..(2 * n).saturating_sub(2) {
        b.secondary(&format!("a{k}")).expect("fresh item");
        b.secondary(&format!("b{k}")).expect("fresh item");
    }
    let long = |k: usize| k > 0 && k + 2 < 2 * n;
    for i in 0..n {
        for j in 0..n {
            let mut option = vec![format!("r{i}"), format!("c{j}")];
            if long(i + j) {
                option.push(format!("a{}", i + j));
            }
            if long(j + n - 1 - i) {
                option.push(format!("b{}", j + n - 1 - i));
            }
            let tokens: Vec<&str> = option.iter().map(String::as_str).collect();
            b.option_str(&tokens).expect("items exist");
        }
    }
    QueensEncoded {
        n,
        problem: b.build().expect("n >= 1 gives items"),
    }
}

impl QueensEncoded {
    /// The queens of a solution: the column of the queen in each row.
    pub fn columns(&self, options: &[usize]) -> Vec<usize> {
        let mut cols = vec![usize::MAX; self.n];
        for &o in options {
            cols[o / self.n] = o % self.n;
        }
        cols
    }
}

/// No condition beyond the XCC problem.
impl SideCondition for QueensEncoded {}

impl Encoded for QueensEncoded {
    fn problem(&self) -> &Problem {
        &self.problem
    }
    fn decode(&self, options: &[usize]) -> String {
        let mut out = String::new();
        for col in self.columns(options) {
            for j in 0..self.n {
                out.push(if j == col { 'Q' } else { '.' });
            }
            out.push('\n');
        }
        out
    }
}

/// The size of [`encode`]'s problem, exactly, without building it: 2n
/// primary items and 2(2n - 3) diagonal ones (none for n = 1); n² options
/// of a row, a column and the diagonals of length at least 2 through the
/// square (all but the two corner squares on each family's shortest
/// diagonals, which are the same square when n = 1). The work is the n²
/// squares, plus what the encoder builds.
pub fn estimate(n: usize) -> EncodingSize {
    let n = n as u64;
    let squares = product(&[n, n]);
    let short = if n == 1 { 1 } else { 2 };
    EncodingSize::new(
        sum(&[
            product(&[2, n]),
            product(&[2, product(&[2, n]).saturating_sub(3)]),
        ]),
        squares,
        sum(&[
            product(&[2, squares]),
            product(&[2, squares.saturating_sub(short)]),
        ]),
        squares,
    )
}

/// Parses and encodes.
pub fn encode_text(text: &str) -> Result<QueensEncoded, PuzzleError> {
    Ok(encode(parse(text)?))
}

/// Whether a board (lines of `Q` and `.`) holds n non-attacking queens.
pub fn is_solution(n: usize, board: &str) -> bool {
    let rows: Vec<&str> = board.lines().collect();
    if rows.len() != n {
        return false;
    }
    let mut queens = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if row.chars().count() != n || row.chars().any(|c| c != 'Q' && c != '.') {
            return false;
        }
        queens.extend(
            row.chars()
                .enumerate()
                .filter(|p| p.1 == 'Q')
                .map(|p| (i, p.0)),
        );
    }
    queens.len() == n
        && queens.iter().enumerate().all(|(k, &(i, j))| {
            queens[..k]
                .iter()
                .all(|&(a, b)| a != i && b != j && a.abs_diff(i) != b.abs_diff(j))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::puzzles::solve;

    #[test]
    fn eight_queens_matches_the_example_file() {
        let e = encode(8);
        let example = include_str!("../../examples/queens8.dlx");
        let parsed = crate::xcc::dlx_format::parse(example).unwrap();
        let mine = crate::xcc::dlx_format::to_string(e.problem());
        let theirs = crate::xcc::dlx_format::to_string(&parsed);
        // Same structure, decimal instead of base-36 names.
        assert_eq!(mine.lines().count(), theirs.lines().count());
        let s = solve(&e, None, 1);
        assert_eq!(s.count, 92);
        // The library picks the cells engine: its counts on queens8
        // (bench/cells-reference.tsv).
        assert_eq!((s.stats.nodes, s.stats.updates), (856, 15559));
        assert!(is_solution(8, &s.grids[0]));
    }

    #[test]
    fn parse_errors() {
        assert_eq!(parse(" 8 \n").unwrap(), 8);
        let e = parse("8 9").unwrap_err();
        assert_eq!((e.line, e.column), (1, 3));
        let e = parse("\n  x").unwrap_err();
        assert_eq!((e.line, e.column), (2, 3));
        assert!(parse("0").is_err());
    }
}
