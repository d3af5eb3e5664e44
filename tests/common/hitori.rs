//! Hitori: brute force, random puzzles, the text format (writer and
//! reader) and the library's layout of a solution.
//!
//! The rules are the library's (TAOCP 7.2.2.1, exercises 436-437, as
//! documented in `src/puzzles/hitori.rs`): black out cells so that no
//! number repeats among the white cells of a row or column, no two black
//! cells are orthogonally adjacent, every *seed* (a cell whose number
//! occurs nowhere else in its row and column) is white, and, unless weak,
//! the white cells are orthogonally connected.

use std::collections::BTreeSet;

use super::rng::Rng;

/// Brute force: cells in row-major order, white or black, checking seeds,
/// adjacency and repeats as it goes; connectivity at the end. Each
/// solution is the black mask (row-major).
pub fn hitori_brute(rows: usize, cols: usize, numbers: &[u32], weak: bool) -> BTreeSet<Vec<bool>> {
    let n = rows * cols;
    let seed: Vec<bool> = (0..n)
        .map(|i| {
            (0..n).all(|j| {
                j == i || numbers[j] != numbers[i] || (j / cols != i / cols && j % cols != i % cols)
            })
        })
        .collect();
    fn connected(rows: usize, cols: usize, black: &[bool]) -> bool {
        let n = rows * cols;
        let Some(s) = (0..n).find(|&i| !black[i]) else {
            return true;
        };
        let mut seen = vec![false; n];
        seen[s] = true;
        let mut stack = vec![s];
        while let Some(i) = stack.pop() {
            let mut next = Vec::new();
            if i >= cols {
                next.push(i - cols);
            }
            if i + cols < n {
                next.push(i + cols);
            }
            if i % cols > 0 {
                next.push(i - 1);
            }
            if i % cols + 1 < cols {
                next.push(i + 1);
            }
            for j in next {
                if !black[j] && !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            }
        }
        (0..n).all(|i| black[i] || seen[i])
    }
    #[allow(clippy::too_many_arguments)]
    fn go(
        i: usize,
        rows: usize,
        cols: usize,
        numbers: &[u32],
        seed: &[bool],
        weak: bool,
        black: &mut Vec<bool>,
        out: &mut BTreeSet<Vec<bool>>,
    ) {
        let n = rows * cols;
        if i == n {
            if weak || connected(rows, cols, black) {
                out.insert(black.clone());
            }
            return;
        }
        let (r, c) = (i / cols, i % cols);
        // White: no earlier white equal in row or column.
        let repeat = (0..c).any(|k| !black[r * cols + k] && numbers[r * cols + k] == numbers[i])
            || (0..r).any(|k| !black[k * cols + c] && numbers[k * cols + c] == numbers[i]);
        if !repeat {
            black[i] = false;
            go(i + 1, rows, cols, numbers, seed, weak, black, out);
        }
        let touches = (c > 0 && black[i - 1]) || (r > 0 && black[i - cols]);
        if !seed[i] && !touches {
            black[i] = true;
            go(i + 1, rows, cols, numbers, seed, weak, black, out);
            black[i] = false;
        }
    }
    let mut out = BTreeSet::new();
    go(
        0,
        rows,
        cols,
        numbers,
        &seed,
        weak,
        &mut vec![false; n],
        &mut out,
    );
    out
}

/// The text format: rows of numbers separated by one space.
pub fn hitori_text(rows: usize, cols: usize, numbers: &[u32]) -> String {
    let mut s = String::new();
    for r in 0..rows {
        let row: Vec<String> = (0..cols)
            .map(|c| numbers[r * cols + c].to_string())
            .collect();
        s.push_str(&row.join(" "));
        s.push('\n');
    }
    s
}

/// A random puzzle of 1..=5 x 1..=5 cells: numbers at random, or a
/// latin-like grid with some numbers copied from the same line.
pub fn random_hitori(rng: &mut Rng) -> (usize, usize, Vec<u32>) {
    let rows = 1 + rng.below(5);
    let cols = 1 + rng.below(5);
    let max = rows.max(cols);
    let numbers: Vec<u32> = if rng.chance(50) {
        (0..rows * cols)
            .map(|_| 1 + rng.below(max) as u32)
            .collect()
    } else {
        // A latin-like grid with some numbers copied from the same line.
        let shift = rng.below(max);
        let mut v: Vec<u32> = (0..rows * cols)
            .map(|i| ((i / cols + i % cols + shift) % max) as u32 + 1)
            .collect();
        for i in 0..rows * cols {
            if rng.chance(30) {
                let (r, c) = (i / cols, i % cols);
                v[i] = if rng.chance(50) {
                    v[r * cols + rng.below(cols)]
                } else {
                    v[rng.below(rows) * cols + c]
                };
            }
        }
        v
    };
    (rows, cols, numbers)
}

/// Reads the text format: rows of whitespace-separated numbers (blank
/// lines ignored). Returns rows, columns and the numbers (row-major).
pub fn read_hitori(text: &str) -> (usize, usize, Vec<u32>) {
    let rows: Vec<Vec<u32>> = text
        .lines()
        .map(|l| {
            l.split_whitespace()
                .map(|t| t.parse().expect("a number"))
                .collect::<Vec<u32>>()
        })
        .filter(|r| !r.is_empty())
        .collect();
    let cols = rows[0].len();
    assert!(
        rows.iter().all(|r| r.len() == cols),
        "ragged rows: {text:?}"
    );
    (rows.len(), cols, rows.concat())
}

/// A solution as the library prints it: the puzzle's rows with the black
/// cells as `#`, every entry right-aligned to the width of the widest
/// number, separated by one space, each row ending in `\n`.
pub fn render_hitori(rows: usize, cols: usize, numbers: &[u32], black: &[bool]) -> String {
    let width = numbers
        .iter()
        .map(|v| v.to_string().len())
        .max()
        .unwrap_or(1);
    let mut out = String::new();
    for r in 0..rows {
        let cells: Vec<String> = (0..cols)
            .map(|c| {
                let i = r * cols + c;
                let cell = if black[i] {
                    "#".to_string()
                } else {
                    numbers[i].to_string()
                };
                format!("{cell:>width$}")
            })
            .collect();
        out.push_str(&cells.join(" "));
        out.push('\n');
    }
    out
}
