//! Solved puzzles drawn for a person at a terminal, with box-drawing
//! characters: a sudoku with its boxes, latin squares and futoshiki with
//! their inequality signs between cells, hitori with its shaded cells as
//! blocks, hidato with its numbers and holes, slitherlink with its loop
//! drawn as lines around the clues, queens on a board.
//!
//! A picture is drawn from the solution's text read back as a
//! [`Solved`] grid, so it serves solutions from any source: this process,
//! a pool or a server. Pure code; the plain text stays what scripts read.

use super::kinds::Kind;
use super::solved::{Loop, Sign, Solved};

/// The picture of a solution printed as `text` by a puzzle of `kind`, or
/// `None` if the text is not a solved grid of that kind (then print the
/// text).
pub fn picture(kind: Kind, text: &str) -> Option<String> {
    Some(match Solved::read(kind, text)? {
        Solved::Sudoku { box_size, cells } => sudoku(box_size, &cells),
        Solved::Latin { cells } => {
            let cells: Vec<Vec<Option<String>>> = cells
                .into_iter()
                .map(|row| row.into_iter().map(Some).collect())
                .collect();
            numbers(&cells, " ")
        }
        Solved::Futoshiki {
            cells,
            right,
            below,
        } => futoshiki(&cells, &right, &below),
        Solved::Hitori { cells } => numbers(&cells, "█"),
        Solved::Hidato { cells } => numbers(&cells, "░"),
        Solved::Slitherlink(board) => slitherlink(&board),
        Solved::Queens { board } => queens(&board),
    })
}

/// A grid of cells each drawn `width` characters wide between light
/// lines. `between(r, c)` may replace the line between cells (r, c) and
/// (r, c + 1) (an inequality sign); `below(r, c)` may mark the middle of
/// the line under cell (r, c).
struct Boxed<'a> {
    rows: usize,
    cols: usize,
    width: usize,
    cell: &'a dyn Fn(usize, usize) -> String,
    between: &'a dyn Fn(usize, usize) -> Option<char>,
    below: &'a dyn Fn(usize, usize) -> Option<char>,
}

impl Boxed<'_> {
    fn draw(&self) -> String {
        let mut out = String::new();
        let rule = |out: &mut String,
                    left: char,
                    mid: char,
                    right: char,
                    mark: &dyn Fn(usize) -> Option<char>| {
            out.push(left);
            for c in 0..self.cols {
                let half = self.width / 2;
                for i in 0..self.width {
                    match mark(c) {
                        Some(m) if i == half => out.push(m),
                        _ => out.push('─'),
                    }
                }
                out.push(if c + 1 == self.cols { right } else { mid });
            }
            out.push('\n');
        };
        rule(&mut out, '┌', '┬', '┐', &|_| None);
        for r in 0..self.rows {
            out.push('│');
            for c in 0..self.cols {
                out.push_str(&(self.cell)(r, c));
                if c + 1 == self.cols {
                    out.push('│');
                } else {
                    out.push((self.between)(r, c).unwrap_or('│'));
                }
            }
            out.push('\n');
            if r + 1 < self.rows {
                rule(&mut out, '├', '┼', '┤', &|c| (self.below)(r, c));
            }
        }
        rule(&mut out, '└', '┴', '┘', &|_| None);
        out
    }
}

/// `token` centred in `width` characters (one space each side at least).
fn centred(token: &str, width: usize) -> String {
    let len = token.chars().count();
    let left = (width.saturating_sub(len)) / 2;
    let right = width.saturating_sub(len + left);
    format!("{}{token}{}", " ".repeat(left), " ".repeat(right))
}

fn no_sign(_: usize, _: usize) -> Option<char> {
    None
}

/// Cells of numbers (or `None`), boxed and right-aligned; `shade` fills
/// a `None` cell.
fn numbers(grid: &[Vec<Option<String>>], shade: &str) -> String {
    let width = grid
        .iter()
        .flatten()
        .map(|t| t.as_ref().map_or(1, |t| t.chars().count()))
        .max()
        .unwrap_or(1)
        + 2;
    let cell = |r: usize, c: usize| match &grid[r][c] {
        None => shade.repeat(width),
        Some(token) => format!(" {token:>0$} ", width - 2),
    };
    Boxed {
        rows: grid.len(),
        cols: grid[0].len(),
        width,
        cell: &cell,
        between: &no_sign,
        below: &no_sign,
    }
    .draw()
}

fn queens(board: &[Vec<bool>]) -> String {
    let cell = |r: usize, c: usize| match board[r][c] {
        true => " ♛ ".to_string(),
        false if (r + c) % 2 == 1 => " · ".to_string(),
        false => "   ".to_string(),
    };
    Boxed {
        rows: board.len(),
        cols: board.len(),
        width: 3,
        cell: &cell,
        between: &no_sign,
        below: &no_sign,
    }
    .draw()
}

/// Futoshiki's cells with `<`/`>` between them and `∧`/`∨` under them.
fn futoshiki(
    cells: &[Vec<String>],
    right: &[Vec<Option<Sign>>],
    below: &[Vec<Option<Sign>>],
) -> String {
    let n = cells.len();
    let cell = |r: usize, c: usize| centred(&cells[r][c], 3);
    let sign = |r: usize, c: usize| {
        right[r][c].map(|s| match s {
            Sign::Less => '<',
            Sign::Greater => '>',
        })
    };
    let mark = |r: usize, c: usize| {
        below[r].get(c).copied().flatten().map(|s| match s {
            Sign::Less => '∧',
            Sign::Greater => '∨',
        })
    };
    Boxed {
        rows: n,
        cols: n,
        width: 3,
        cell: &cell,
        between: &sign,
        below: &mark,
    }
    .draw()
}

/// A sudoku drawn with a line around each box.
fn sudoku(m: usize, grid: &[Vec<String>]) -> String {
    let width = grid
        .iter()
        .flatten()
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(1);
    let rule = |left: char, mid: char, right: char| {
        let mut line = String::new();
        line.push(left);
        for b in 0..m {
            line.push_str(&"─".repeat(m * (width + 1) + 1));
            line.push(if b + 1 == m { right } else { mid });
        }
        line.push('\n');
        line
    };
    let mut out = rule('┌', '┬', '┐');
    for (r, row) in grid.iter().enumerate() {
        if r > 0 && r % m == 0 {
            out.push_str(&rule('├', '┼', '┤'));
        }
        for (c, value) in row.iter().enumerate() {
            if c % m == 0 {
                out.push('│');
            }
            out.push_str(&format!(" {value:>width$}"));
            if c % m == m - 1 {
                out.push(' ');
            }
        }
        out.push_str("│\n");
    }
    out.push_str(&rule('└', '┴', '┘'));
    out
}

/// Slitherlink's loop drawn as lines: each cell three characters wide, a
/// corner or a line at each vertex the loop passes, `·` at the others.
fn slitherlink(board: &Loop) -> String {
    let mut out = String::new();
    for i in 0..=board.rows {
        for j in 0..=board.cols {
            out.push(match board.at_vertex(i, j) {
                (false, true, false, true) => '┌',
                (false, true, true, false) => '┐',
                (true, false, false, true) => '└',
                (true, false, true, false) => '┘',
                (false, false, true, true) => '─',
                (true, true, false, false) => '│',
                (false, false, false, false) => '·',
                // Not a loop's vertex (degree 1, 3 or 4): show it as is.
                _ => '+',
            });
            if j < board.cols {
                out.push_str(if board.right_of(i, j) {
                    "───"
                } else {
                    "   "
                });
            }
        }
        out.push('\n');
        if i < board.rows {
            for j in 0..=board.cols {
                out.push(if board.below(i, j) { '│' } else { ' ' });
                if j < board.cols {
                    out.push(' ');
                    out.push(board.clue[i][j]);
                    out.push(' ');
                }
            }
            out.push('\n');
        }
    }
    out.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}
