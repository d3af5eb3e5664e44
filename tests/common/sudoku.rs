//! Sudoku of side n = m² (the oracle makes 4x4 and 9x9): random solved
//! grids and puzzles, both spellings of the text format (writer and
//! reader) and the library's layout of a solution; the brute force is
//! [`super::latin::brute_squares`] with boxes.

use super::latin::{brute_squares, render_latin, Grid};
use super::rng::Rng;

/// Every solution of a sudoku with box size m (0 = empty in `givens`), up
/// to `cap`.
pub fn brute_sudoku(m: usize, givens: &[Vec<usize>], cap: usize) -> Vec<Grid> {
    brute_squares(m * m, m, givens, &[], cap)
}

/// A random solved sudoku with box size m: the pattern
/// `(m (r mod m) + r div m + c) mod n` with its digits, bands, stacks and
/// the rows (columns) within each band (stack) permuted, maybe transposed.
pub fn random_solved(m: usize, rng: &mut Rng) -> Grid {
    let n = m * m;
    let digits = rng.permutation(n);
    let order = |rng: &mut Rng| -> Vec<usize> {
        let outer = rng.permutation(m);
        outer
            .iter()
            .flat_map(|&b| {
                rng.permutation(m)
                    .into_iter()
                    .map(move |i| b * m + i)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let rows = order(rng);
    let cols = order(rng);
    let transpose = rng.chance(50);
    (0..n)
        .map(|r| {
            (0..n)
                .map(|c| {
                    let (r, c) = if transpose { (c, r) } else { (r, c) };
                    let (r, c) = (rows[r], cols[c]);
                    digits[(m * (r % m) + r / m + c) % n] + 1
                })
                .collect()
        })
        .collect()
}

/// The text of a sudoku (0 = empty) in a random spelling: characters (one
/// line, n lines, or n lines in groups of m; blanks `.` or `0`) or, for
/// any side, n lines of n tokens.
pub fn sudoku_text(m: usize, givens: &[Vec<usize>], rng: &mut Rng) -> String {
    let n = m * m;
    let blank = if rng.chance(70) { "." } else { "0" };
    let cell = |v: usize| {
        if v == 0 {
            blank.to_string()
        } else {
            v.to_string()
        }
    };
    let spelling = if n > 9 { 3 } else { rng.below(4) };
    let mut out = String::new();
    for (r, row) in givens.iter().enumerate() {
        match spelling {
            0 => {
                out.extend(row.iter().map(|&v| cell(v)));
                if r + 1 == n {
                    out.push('\n');
                }
            }
            1 => {
                out.extend(row.iter().map(|&v| cell(v)));
                out.push('\n');
            }
            2 => {
                let groups: Vec<String> = row
                    .chunks(m)
                    .map(|g| g.iter().map(|&v| cell(v)).collect())
                    .collect();
                out.push_str(&groups.join(" "));
                out.push('\n');
            }
            _ => {
                let tokens: Vec<String> = row.iter().map(|&v| cell(v)).collect();
                out.push_str(&tokens.join(" "));
                out.push('\n');
            }
        }
    }
    out
}

/// Reads a sudoku in either spelling: tokens when the first non-blank line
/// has more than one token and as many as there are non-blank lines, else
/// characters (16 make a 4x4, 81 a 9x9), whitespace ignored. Blanks are
/// `.` or `0`. Returns the box size m and the givens (0 = empty). Panics
/// on other text.
pub fn read_sudoku(text: &str) -> (usize, Grid) {
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<&str>>())
        .filter(|l| !l.is_empty())
        .collect();
    let value = |t: &str| match t {
        "." | "0" => 0,
        t => t.parse::<usize>().expect("a number"),
    };
    if lines.len() > 1 && lines[0].len() == lines.len() {
        let n = lines.len();
        let m = (1..=n).find(|m| m * m >= n).expect("n >= 1");
        assert_eq!(m * m, n, "the side of a sudoku is a square");
        let givens = lines
            .iter()
            .map(|l| {
                assert_eq!(l.len(), n);
                l.iter().map(|&t| value(t)).collect()
            })
            .collect();
        return (m, givens);
    }
    let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    let (m, n) = match chars.len() {
        16 => (2, 4),
        81 => (3, 9),
        k => panic!("{k} cells are no sudoku"),
    };
    let givens = chars
        .chunks(n)
        .map(|row| row.iter().map(|ch| value(&ch.to_string())).collect())
        .collect();
    (m, givens)
}

/// A solution as the library prints it: n lines of the digits side by side
/// up to 9x9, of numbers separated by spaces beyond.
pub fn render_sudoku(grid: &[Vec<usize>]) -> String {
    if grid.len() > 9 {
        return render_latin(grid);
    }
    grid.iter()
        .map(|row| row.iter().map(|v| v.to_string()).collect::<String>() + "\n")
        .collect()
}
