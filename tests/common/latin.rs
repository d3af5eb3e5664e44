//! Latin squares: a brute-force solver (plain backtracking over the cells
//! with the rules, no XCC) shared by latin squares, futoshiki and sudoku; a
//! random square; the latin text format (writer and reader) and the
//! library's layout of a solved square.

use super::rng::Rng;

/// A square of values `1..=n` (0 for an empty cell in givens).
pub type Grid = Vec<Vec<usize>>;
/// (row, column), 0-based.
pub type Cell = (usize, usize);
/// Inequality clues: (smaller cell, larger cell).
pub type Less = [(Cell, Cell)];

/// Every n x n latin square that keeps `givens` (0 = empty), has
/// `small < big` for every pair of cells in `less`, and, when `boxes` is
/// m > 0, holds every value once in each m x m box (a sudoku, n = m²); up
/// to `cap` of them, in lexicographic (row-major) order.
///
/// Cells are filled in row-major order; a value is tried in a cell only if
/// the cell's given allows it, no filled cell and no given cell of the
/// same row, column (or box) holds it, and every clue between this cell
/// and a filled or given cell holds.
pub fn brute_squares(
    n: usize,
    boxes: usize,
    givens: &[Vec<usize>],
    less: &Less,
    cap: usize,
) -> Vec<Grid> {
    /// The groups of a cell: its row, its column and its box (if any), as
    /// indices into one array of masks (bit v for value v).
    fn groups(n: usize, boxes: usize, (r, c): Cell) -> [usize; 3] {
        // Without boxes, a dummy group, always empty (never updated).
        let bx = match (r.checked_div(boxes), c.checked_div(boxes)) {
            (Some(i), Some(j)) => 2 * n + i * boxes + j,
            _ => 3 * n,
        };
        [r, n + c, bx]
    }
    struct Search<'a> {
        n: usize,
        boxes: usize,
        givens: &'a [Vec<usize>],
        /// For each cell, its clues: (other cell, whether this cell is the
        /// smaller one).
        clues: Vec<Vec<(Cell, bool)>>,
        cap: usize,
        /// Values placed, and values given, in each group.
        placed: Vec<u64>,
        given: Vec<u64>,
        grid: Grid,
        out: Vec<Grid>,
    }
    impl Search<'_> {
        /// The value of a cell filled before `k` or given (0 if neither).
        fn known(&self, (i, j): Cell, k: usize) -> usize {
            if i * self.n + j < k {
                self.grid[i][j]
            } else {
                self.givens[i][j]
            }
        }
        fn go(&mut self, k: usize) {
            let n = self.n;
            if self.out.len() >= self.cap {
                return;
            }
            if k == n * n {
                self.out.push(self.grid.clone());
                return;
            }
            let here = (k / n, k % n);
            let g = groups(n, self.boxes, here);
            let given = self.givens[here.0][here.1];
            let mut taken = g.iter().fold(0, |m, &x| m | self.placed[x]);
            if given == 0 {
                // A value given elsewhere in a group cannot go here.
                taken |= g.iter().fold(0, |m, &x| m | self.given[x]);
            }
            for v in 1..=n {
                if (given != 0 && given != v) || taken & 1 << v != 0 {
                    continue;
                }
                let clues_hold = self.clues[k].iter().all(|&(other, smaller)| {
                    let w = self.known(other, k);
                    w == 0 || (smaller && v < w) || (!smaller && w < v)
                });
                if !clues_hold {
                    continue;
                }
                self.grid[here.0][here.1] = v;
                let dummy = 3 * n;
                for &x in g.iter().filter(|&&x| x != dummy) {
                    self.placed[x] |= 1 << v;
                }
                self.go(k + 1);
                for &x in g.iter().filter(|&&x| x != dummy) {
                    self.placed[x] &= !(1 << v);
                }
                self.grid[here.0][here.1] = 0;
            }
        }
    }
    assert!(n < 64, "values are bits of a u64");
    let mut given = vec![0u64; 3 * n + 1];
    for (r, row) in givens.iter().enumerate() {
        for (c, &v) in row.iter().enumerate() {
            if v == 0 {
                continue;
            }
            for x in groups(n, boxes, (r, c)).into_iter().filter(|&x| x < 3 * n) {
                if given[x] & 1 << v != 0 {
                    // A value given twice in a group: no square at all.
                    return Vec::new();
                }
                given[x] |= 1 << v;
            }
        }
    }
    let mut clues = vec![Vec::new(); n * n];
    for &(small, big) in less {
        clues[small.0 * n + small.1].push((big, true));
        clues[big.0 * n + big.1].push((small, false));
    }
    let mut search = Search {
        n,
        boxes,
        givens,
        clues,
        cap,
        placed: vec![0; 3 * n + 1],
        given,
        grid: vec![vec![0; n]; n],
        out: Vec::new(),
    };
    search.go(0);
    search.out
}

/// Every completion of `givens` (0 = empty) to a latin square, up to `cap`.
pub fn brute_latin(n: usize, givens: &[Vec<usize>], cap: usize) -> Vec<Grid> {
    brute_squares(n, 0, givens, &[], cap)
}

/// Every latin square completing `givens` with `small < big` for every
/// pair of cells in `less` (cells as (row, column)), up to `cap`.
pub fn brute(n: usize, givens: &[Vec<usize>], less: &Less, cap: usize) -> Vec<Grid> {
    brute_squares(n, 0, givens, less, cap)
}

/// A random latin square: the cyclic square with rows, columns and symbols
/// permuted, then randomized further by a brute-force random completion
/// of its first row (so not only isotopes of the cyclic group occur).
pub fn random_square(n: usize, rng: &mut Rng) -> Grid {
    let (pr, pc, ps) = (rng.permutation(n), rng.permutation(n), rng.permutation(n));
    let cyclic: Grid = (0..n)
        .map(|r| (0..n).map(|c| ps[(pr[r] + pc[c]) % n] + 1).collect())
        .collect();
    // Keep a random first row only and take a random completion.
    let mut givens = vec![vec![0; n]; n];
    givens[0] = cyclic[0].clone();
    let all = brute_latin(n, &givens, 2000);
    all[rng.below(all.len())].clone()
}

/// The latin text format of `givens` (0 = `.`), with random harmless
/// variations (double spaces, trailing spaces, blank lines).
pub fn latin_text(givens: &[Vec<usize>], rng: &mut Rng) -> String {
    let mut out = String::new();
    for row in givens {
        let cells: Vec<String> = row
            .iter()
            .map(|&v| if v == 0 { ".".into() } else { v.to_string() })
            .collect();
        out.push_str(&cells.join(if rng.chance(30) { "  " } else { " " }));
        out.push_str(if rng.chance(20) { " \n" } else { "\n" });
        if rng.chance(10) {
            out.push('\n');
        }
    }
    out
}

/// Reads the latin text format: an order `n` alone (no givens), or n
/// non-blank lines of n whitespace-separated tokens, numbers or `.`.
/// Returns the order and the givens (0 = empty). Panics on other text.
pub fn read_latin(text: &str) -> (usize, Grid) {
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<&str>>())
        .filter(|r| !r.is_empty())
        .collect();
    if rows.len() == 1 && rows[0].len() == 1 && rows[0][0] != "." {
        let n: usize = rows[0][0].parse().expect("an order");
        return (n, vec![vec![0; n]; n]);
    }
    let n = rows.len();
    let givens: Grid = rows
        .iter()
        .map(|row| {
            assert_eq!(row.len(), n, "a latin grid is square: {text:?}");
            row.iter()
                .map(|&t| {
                    if t == "." {
                        0
                    } else {
                        t.parse().expect("a number")
                    }
                })
                .collect()
        })
        .collect();
    (n, givens)
}

/// A solved square as the library prints it: rows of numbers right-aligned
/// to the width of n, separated by one space, each row ending in `\n`.
pub fn render_latin(grid: &[Vec<usize>]) -> String {
    let width = grid.len().to_string().len();
    let mut out = String::new();
    for row in grid {
        let cells: Vec<String> = row.iter().map(|v| format!("{v:>width$}")).collect();
        out.push_str(&cells.join(" "));
        out.push('\n');
    }
    out
}
