//! Futoshiki as the tests know it: a latin square with inequality clues
//! between neighbours. Random puzzles, the text format (writer and reader)
//! and the library's layout of a solution; the brute force is
//! [`super::latin::brute`].

use super::latin::{random_square, Cell, Grid};
use super::rng::Rng;

/// A futoshiki: digits (0 = empty), `h[r][c]` the sign between (r, c) and
/// (r, c+1), `v[r][c]` between (r, c) and (r+1, c): -1 for "first <
/// second" (`<`, `^`), 1 for "first > second" (`>`, `v`), 0 for none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fut {
    pub n: usize,
    pub digits: Vec<Vec<usize>>,
    pub h: Vec<Vec<i8>>,
    pub v: Vec<Vec<i8>>,
}

impl Fut {
    pub fn empty(n: usize) -> Fut {
        Fut {
            n,
            digits: vec![vec![0; n]; n],
            h: vec![vec![0; n - 1]; n],
            v: vec![vec![0; n]; n - 1],
        }
    }

    /// The clues as (smaller cell, larger cell).
    pub fn less(&self) -> Vec<(Cell, Cell)> {
        let mut out = Vec::new();
        for r in 0..self.n {
            for c in 0..self.n {
                if c + 1 < self.n {
                    match self.h[r][c] {
                        -1 => out.push(((r, c), (r, c + 1))),
                        1 => out.push(((r, c + 1), (r, c))),
                        _ => {}
                    }
                }
                if r + 1 < self.n {
                    match self.v[r][c] {
                        -1 => out.push(((r, c), (r + 1, c))),
                        1 => out.push(((r + 1, c), (r, c))),
                        _ => {}
                    }
                }
            }
        }
        out
    }

    /// The text format, with random harmless variations (relation lines
    /// left out or blank, trailing spaces).
    pub fn text(&self, rng: &mut Rng) -> String {
        let n = self.n;
        let mut out = String::new();
        for r in 0..n {
            for c in 0..n {
                if c > 0 {
                    out.push(match self.h[r][c - 1] {
                        -1 => '<',
                        1 => '>',
                        _ => ' ',
                    });
                }
                match self.digits[r][c] {
                    0 => out.push('.'),
                    d => out.push_str(&d.to_string()),
                }
            }
            if rng.chance(15) {
                out.push_str("  ");
            }
            out.push('\n');
            if r + 1 < n {
                let line: String = (0..2 * n - 1)
                    .map(|j| {
                        if j % 2 == 1 {
                            ' '
                        } else {
                            match self.v[r][j / 2] {
                                -1 => '^',
                                1 => 'v',
                                _ => ' ',
                            }
                        }
                    })
                    .collect();
                let trimmed = line.trim_end();
                if !trimmed.is_empty() || rng.chance(50) {
                    out.push_str(if rng.chance(20) { &line } else { trimmed });
                    out.push('\n');
                }
            }
        }
        out
    }

    /// Reads the text format: rows of cells (a digit or `.` at columns 1,
    /// 3, 5, ..., `<`, `>` or a space between them), and between two rows
    /// an optional line with `^` or `v` under a cell. Panics on text that
    /// is not in the format.
    pub fn read(text: &str) -> Fut {
        let is_row = |l: &str| l.starts_with(|ch: char| ch == '.' || ch.is_ascii_digit());
        // Each row of cells with the relation line just before it, if any.
        let mut rows: Vec<(Vec<char>, Option<Vec<char>>)> = Vec::new();
        let mut pending: Option<Vec<char>> = None;
        for line in text.lines().map(str::trim_end) {
            if is_row(line) {
                rows.push((line.chars().collect(), pending.take()));
            } else if !line.is_empty() {
                assert!(
                    !rows.is_empty() && pending.is_none(),
                    "misplaced line {line:?}"
                );
                pending = Some(line.chars().collect());
            }
        }
        assert!(pending.is_none(), "relations after the last row");
        let n = rows[0].0.len().div_ceil(2);
        assert_eq!(
            rows.len(),
            n,
            "a futoshiki has as many rows as cells per row"
        );
        let mut f = Fut::empty(n);
        for (r, (cells, relations)) in rows.iter().enumerate() {
            assert_eq!(cells.len(), 2 * n - 1, "row {r} of {text:?}");
            for (j, &ch) in cells.iter().enumerate() {
                if j % 2 == 0 {
                    f.digits[r][j / 2] = match ch {
                        '.' => 0,
                        d => d.to_digit(10).expect("a digit") as usize,
                    };
                } else {
                    f.h[r][j / 2] = match ch {
                        '<' => -1,
                        '>' => 1,
                        ' ' => 0,
                        other => panic!("unexpected {other:?} between cells"),
                    };
                }
            }
            if let Some(relations) = relations {
                for (j, &ch) in relations.iter().enumerate() {
                    let sign = match ch {
                        '^' => -1,
                        'v' => 1,
                        ' ' => continue,
                        other => panic!("unexpected {other:?} between rows"),
                    };
                    assert!(j % 2 == 0, "a vertical relation stands under a cell");
                    f.v[r - 1][j / 2] = sign;
                }
            }
        }
        f
    }

    /// A solution as the library prints it: the puzzle's layout with every
    /// cell filled, relation lines trimmed at the end and left out when
    /// they hold no relation, every line ending in `\n`.
    pub fn render(&self, grid: &[Vec<usize>]) -> String {
        let mut out = String::new();
        for (r, row) in grid.iter().enumerate() {
            if r > 0 {
                let signs: Vec<&str> = self.v[r - 1]
                    .iter()
                    .map(|&sign| match sign {
                        -1 => "^",
                        1 => "v",
                        _ => " ",
                    })
                    .collect();
                let line = signs.join(" ");
                let line = line.trim_end();
                if !line.is_empty() {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            for (c, value) in row.iter().enumerate() {
                if c > 0 {
                    out.push(match self.h[r][c - 1] {
                        -1 => '<',
                        1 => '>',
                        _ => ' ',
                    });
                }
                out.push_str(&value.to_string());
            }
            out.push('\n');
        }
        out
    }
}

/// Random clues true of a random latin square.
pub fn consistent_futoshiki(n: usize, rng: &mut Rng) -> Fut {
    let square: Grid = random_square(n, rng);
    let mut f = Fut::empty(n);
    let (pd, pw) = (rng.below(25), 20 + rng.below(50));
    for r in 0..n {
        for c in 0..n {
            if rng.chance(pd) {
                f.digits[r][c] = square[r][c];
            }
            let sign = |a: usize, b: usize| if a < b { -1 } else { 1 };
            if c + 1 < n && rng.chance(pw) {
                f.h[r][c] = sign(square[r][c], square[r][c + 1]);
            }
            if r + 1 < n && rng.chance(pw) {
                f.v[r][c] = sign(square[r][c], square[r + 1][c]);
            }
        }
    }
    f
}

/// Fully random clues (often contradictory).
pub fn random_futoshiki(n: usize, rng: &mut Rng) -> Fut {
    let mut f = Fut::empty(n);
    let sign = |rng: &mut Rng| match rng.below(8) {
        0 | 1 => -1,
        2 | 3 => 1,
        _ => 0,
    };
    for r in 0..n {
        for c in 0..n {
            if rng.chance(12) {
                f.digits[r][c] = 1 + rng.below(n);
            }
            if c + 1 < n {
                f.h[r][c] = sign(rng);
            }
            if r + 1 < n {
                f.v[r][c] = sign(rng);
            }
        }
    }
    f
}
