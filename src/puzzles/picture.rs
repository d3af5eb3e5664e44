//! Solved puzzles drawn for a person at a terminal, with box-drawing
//! characters: a sudoku with its boxes, latin squares and futoshiki with
//! their inequality signs between cells, hitori with its shaded cells as
//! blocks, hidato with its numbers and holes, slitherlink with its loop
//! drawn as lines around the clues, queens on a board.
//!
//! A picture is drawn from a solution's text (every kind prints solutions
//! in its input format), so it serves solutions from any source: this
//! process, a pool or a server. Pure code; the plain text stays what
//! scripts read.

use super::kinds::Kind;

/// The picture of a solution printed as `text` by a puzzle of `kind`, or
/// `None` if the text is not a solved grid of that kind (then print the
/// text).
pub fn picture(kind: Kind, text: &str) -> Option<String> {
    match kind {
        Kind::Sudoku => sudoku(text),
        Kind::Latin => latin(text),
        Kind::Futoshiki => futoshiki(text),
        Kind::Hitori => hitori(text),
        Kind::Hidato => hidato(text),
        Kind::Slitherlink => slitherlink(text),
        Kind::Queens => queens(text),
    }
}

/// Non-blank lines, without trailing blanks.
fn lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Whitespace-separated tokens of each line, all lines of one length.
fn token_grid(text: &str) -> Option<Vec<Vec<String>>> {
    let grid: Vec<Vec<String>> = lines(text)
        .iter()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    let cols = grid.first()?.len();
    (cols > 0 && grid.iter().all(|row| row.len() == cols)).then_some(grid)
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

/// Cells of numbers (or `#`), boxed and right-aligned; `shade` fills a
/// `#` cell.
fn numbers(grid: &[Vec<String>], shade: &str) -> String {
    let width = grid
        .iter()
        .flatten()
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(1)
        + 2;
    let cell = |r: usize, c: usize| {
        let token = &grid[r][c];
        if token == "#" {
            shade.repeat(width)
        } else {
            format!(" {token:>0$} ", width - 2)
        }
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

fn latin(text: &str) -> Option<String> {
    let grid = token_grid(text)?;
    (grid.len() == grid[0].len()).then(|| numbers(&grid, " "))
}

fn hitori(text: &str) -> Option<String> {
    Some(numbers(&token_grid(text)?, "█"))
}

fn hidato(text: &str) -> Option<String> {
    Some(numbers(&token_grid(text)?, "░"))
}

fn queens(text: &str) -> Option<String> {
    let rows = lines(text);
    let n = rows.len();
    if n == 0 || rows.iter().any(|l| l.chars().count() != n) {
        return None;
    }
    let board: Vec<Vec<char>> = rows.iter().map(|l| l.chars().collect()).collect();
    let cell = |r: usize, c: usize| match board[r][c] {
        'Q' => " ♛ ".to_string(),
        _ if (r + c) % 2 == 1 => " · ".to_string(),
        _ => "   ".to_string(),
    };
    Some(
        Boxed {
            rows: n,
            cols: n,
            width: 3,
            cell: &cell,
            between: &no_sign,
            below: &no_sign,
        }
        .draw(),
    )
}

/// Futoshiki's layout: cells at even columns with `<`/`>` between them,
/// and lines of `^`/`v` under cells between two rows.
fn futoshiki(text: &str) -> Option<String> {
    let mut cells: Vec<Vec<String>> = Vec::new();
    let mut between: Vec<Vec<Option<char>>> = Vec::new();
    let mut below: Vec<Vec<Option<char>>> = Vec::new();
    for line in lines(text) {
        let chars: Vec<char> = line.chars().collect();
        if chars.iter().any(|ch| ch.is_ascii_digit()) {
            let row: Vec<String> = chars.iter().step_by(2).map(|ch| ch.to_string()).collect();
            let signs: Vec<Option<char>> = (0..row.len().saturating_sub(1))
                .map(|j| match chars.get(2 * j + 1) {
                    Some('<') => Some('<'),
                    Some('>') => Some('>'),
                    _ => None,
                })
                .collect();
            cells.push(row);
            between.push(signs);
            below.push(Vec::new());
        } else {
            let last = below.last_mut()?;
            *last = chars
                .iter()
                .step_by(2)
                .map(|ch| match ch {
                    '^' => Some('∧'),
                    'v' => Some('∨'),
                    _ => None,
                })
                .collect();
        }
    }
    let n = cells.len();
    if n == 0 || cells.iter().any(|row| row.len() != n) {
        return None;
    }
    let cell = |r: usize, c: usize| centred(&cells[r][c], 3);
    let sign = |r: usize, c: usize| between[r][c];
    let mark = |r: usize, c: usize| below[r].get(c).copied().flatten();
    Some(
        Boxed {
            rows: n,
            cols: n,
            width: 3,
            cell: &cell,
            between: &sign,
            below: &mark,
        }
        .draw(),
    )
}

/// A sudoku's N x N values (digits side by side up to 9, tokens beyond),
/// drawn with a line around each m x m box.
fn sudoku(text: &str) -> Option<String> {
    let rows = lines(text);
    let grid: Vec<Vec<String>> = if rows.iter().all(|l| !l.contains(' ')) {
        rows.iter()
            .map(|l| l.chars().map(|ch| ch.to_string()).collect())
            .collect()
    } else {
        token_grid(text)?
    };
    let n = grid.len();
    let m = (1..=n).find(|m| m * m >= n)?;
    if n == 0 || m * m != n || grid.iter().any(|row| row.len() != n) {
        return None;
    }
    let width = grid.iter().flatten().map(|t| t.chars().count()).max()?;
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
    Some(out)
}

/// Slitherlink's `2 rows + 1` lines of `+`, `-`, `|` and clues, drawn with
/// the loop as lines: each cell three characters wide, a corner or a line
/// at each vertex the loop passes, `·` at the others.
fn slitherlink(text: &str) -> Option<String> {
    let raw: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    let raw: Vec<Vec<char>> = raw
        .into_iter()
        .skip_while(|l| l.iter().all(|c| *c == ' '))
        .collect();
    let height = raw.iter().rposition(|l| !l.iter().all(|c| *c == ' '))? + 1;
    if height % 2 == 0 || !raw[0].starts_with(&['+']) {
        return None;
    }
    let width = raw.iter().take(height).map(Vec::len).max()?;
    let at = |i: usize, j: usize| raw.get(i).and_then(|l| l.get(j)).copied().unwrap_or(' ');
    let (rows, cols) = (height / 2, width / 2);
    // Whether the horizontal edge right of vertex (i, j) and the vertical
    // one below it are on the loop.
    let right = |i: usize, j: usize| j < cols && at(2 * i, 2 * j + 1) == '-';
    let down = |i: usize, j: usize| i < rows && at(2 * i + 1, 2 * j) == '|';
    let mut out = String::new();
    for i in 0..=rows {
        for j in 0..=cols {
            let (u, d) = (i > 0 && down(i - 1, j), down(i, j));
            let (l, r) = (j > 0 && right(i, j - 1), right(i, j));
            out.push(match (u, d, l, r) {
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
            if j < cols {
                out.push_str(if right(i, j) { "───" } else { "   " });
            }
        }
        out.push('\n');
        if i < rows {
            for j in 0..=cols {
                out.push(if down(i, j) { '│' } else { ' ' });
                if j < cols {
                    out.push(' ');
                    out.push(at(2 * i + 1, 2 * j + 1));
                    out.push(' ');
                }
            }
            out.push('\n');
        }
    }
    Some(out.lines().map(|l| format!("{}\n", l.trim_end())).collect())
}
