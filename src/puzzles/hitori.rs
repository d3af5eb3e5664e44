//! Hitori (TAOCP 7.2.2.1, exercises 436 and 437).
//!
//! A hitori puzzle is a grid of numbers. A solution blackens some cells so
//! that
//!
//! 1. no number occurs twice among the white cells of a row or a column;
//! 2. no two black cells are orthogonally adjacent;
//! 3. the white cells are orthogonally connected;
//!
//! and, following Knuth, every *seed* (a cell whose number occurs nowhere
//! else in its row or its column) is white. That last condition loses no
//! puzzle with a unique solution: if a solution had a black seed, whitening
//! it would give a second solution (the seed duplicates nothing, its
//! neighbours are white by rule 2 so it joins their component, and fewer
//! black cells cannot break rule 2). A *weak* solution satisfies 1, 2 and the
//! seed condition; a *full* solution satisfies 3 too.
//!
//! # Text format
//!
//! Rows of whitespace-separated integers, one row per line (blank lines are
//! ignored); every row has the same number of entries, each in
//! `1..=max(rows, cols)`. A solution is printed in the same layout with the
//! black cells as `#`, all entries right-aligned to one width, every line
//! ending in `\n`.
//! A grid has at most [`MAX_GRID_CELLS`] cells.
//!
//! # The XCC encoding (weak solutions)
//!
//! Items:
//! - primary `x{r}_{c}` for every cell: the cell gets exactly one colour;
//! - secondary `r{r}v{v}` for every row `r` and value `v` occurring at least
//!   twice in it, and `c{c}v{v}` likewise for columns: "the white copy of
//!   `v` in this line";
//! - secondary `h{r}_{c}` for each horizontal pair (r,c)-(r,c+1) and
//!   `v{r}_{c}` for each vertical pair (r,c)-(r+1,c) of non-seed cells: "the
//!   black cell of this pair".
//!
//! Options, for every cell `x` with number `v` in row `r` and column `c`:
//! - white: `x{r}_{c}`, plus `r{r}v{v}` if `v` is repeated in row `r`, plus
//!   `c{c}v{v}` if it is repeated in column `c`;
//! - black (non-seeds only): `x{r}_{c}` plus the pair items of its (non-seed)
//!   neighbours.
//!
//! Why it is right. All secondary items are uncolored, so each is covered at
//! most once. An XCC solution picks exactly one option per cell (its primary
//! item occurs in those two options only), which colours the grid with every
//! seed white (seeds have no black option). Two white copies of `v` in one
//! row would cover `r{r}v{v}` twice: rule 1 holds. Two adjacent black cells
//! would cover their pair item twice: rule 2 holds (a seed is never black, so
//! pairs involving a seed need no item). Conversely a colouring satisfying 1,
//! 2 and the seed condition covers each line item at most once (at most one
//! white copy) and each pair item at most once (at most one black end), so
//! its options form an XCC solution; and the options are determined by the
//! colouring. Hence XCC solutions and weak solutions correspond one to one.
//!
//! # Full solutions: connectivity
//!
//! Rule 3 is not exact cover. [`Encoded::accept`] checks it on complete
//! solutions; [`Encoded::accept_partial`] prunes a partial solution when the
//! cells not (yet) chosen black are disconnected. That never loses a
//! solution (on a grid of at least two cells): the final white cells are
//! among those cells, and if these fall into two or more components, some
//! component `K` holds no final white cell, so all of `K` ends black; `K` is
//! non-empty and any cell of it has a neighbour that is either in `K` (black)
//! or on the border of `K`, hence already black: two adjacent black cells,
//! against rule 2. The check is one breadth-first search over the grid.

use super::rng::Rng;
use super::size::{product, sum, EncodingSize};
use super::{Encoded, PuzzleError, MAX_GRID_CELLS};
use crate::run::SideCondition;
use crate::xcc::{Problem, ProblemBuilder};

/// A hitori puzzle: `numbers[r * cols + c]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hitori {
    pub rows: usize,
    pub cols: usize,
    pub numbers: Vec<u32>,
}

impl Hitori {
    pub fn at(&self, r: usize, c: usize) -> u32 {
        self.numbers[r * self.cols + c]
    }

    /// Cells whose number occurs nowhere else in their row or column.
    pub fn seeds(&self) -> Vec<bool> {
        let (rows, cols) = (self.rows, self.cols);
        (0..rows * cols)
            .map(|i| {
                let (r, c, v) = (i / cols, i % cols, self.numbers[i]);
                (0..cols).all(|k| k == c || self.at(r, k) != v)
                    && (0..rows).all(|k| k == r || self.at(k, c) != v)
            })
            .collect()
    }

    /// How many times each cell's number occurs in its row and in its
    /// column, and how many (line, value) pairs occur more than once, in
    /// time linear in the grid (a count per value, reset line by line).
    fn line_counts(&self) -> (Vec<u32>, Vec<u32>, u64) {
        let (rows, cols) = (self.rows, self.cols);
        let max = self.numbers.iter().copied().max().unwrap_or(0) as usize;
        let mut count = vec![0u32; max + 1];
        let mut repeated = 0u64;
        let mut count_line = |line: &[usize], out: &mut [u32]| {
            for &i in line {
                count[self.numbers[i] as usize] += 1;
            }
            for &i in line {
                out[i] = count[self.numbers[i] as usize];
            }
            for &i in line {
                let k = std::mem::take(&mut count[self.numbers[i] as usize]);
                repeated += u64::from(k > 1);
            }
        };
        let mut in_row = vec![0; rows * cols];
        let mut in_col = vec![0; rows * cols];
        let mut line = Vec::with_capacity(rows.max(cols));
        for r in 0..rows {
            line.clear();
            line.extend(r * cols..(r + 1) * cols);
            count_line(&line, &mut in_row);
        }
        for c in 0..cols {
            line.clear();
            line.extend((c..rows * cols).step_by(cols));
            count_line(&line, &mut in_col);
        }
        (in_row, in_col, repeated)
    }

    /// The size of [`HitoriEncoding::new`]'s problem, exactly, without
    /// building it, in time linear in the grid: a cell item per cell, a
    /// line item per (line, value) repeated in the line, a pair item per
    /// adjacent pair of non-seeds; a white option per cell (its item and
    /// the line items of its value) and a black one per non-seed (its item
    /// and its pairs).
    ///
    /// The work is not linear: the encoder compares every cell's number
    /// with its row and its column to find seeds and, for each option,
    /// repeated values, and scans a whole line per (line, distinct value)
    /// item candidate; that is `2 rows cols (rows + cols + values)` steps
    /// (`values` distinct numbers), plus sorting the numbers (64 steps a
    /// cell) and what it builds.
    pub fn estimate(&self) -> EncodingSize {
        let (rows, cols) = (self.rows, self.cols);
        let cells = rows * cols;
        let (in_row, in_col, line_items) = self.line_counts();
        let seed: Vec<bool> = (0..cells)
            .map(|i| in_row[i] == 1 && in_col[i] == 1)
            .collect();
        let (mut pairs, mut options, mut entries) = (0u64, 0u64, 0u64);
        for i in 0..cells {
            let (r, c) = (i / cols, i % cols);
            options += 1;
            entries += 1 + u64::from(in_row[i] > 1) + u64::from(in_col[i] > 1);
            if seed[i] {
                continue;
            }
            let right = c + 1 < cols && !seed[i + 1];
            let down = r + 1 < rows && !seed[i + cols];
            let left = c > 0 && !seed[i - 1];
            let up = r > 0 && !seed[i - cols];
            pairs += u64::from(right) + u64::from(down);
            options += 1;
            entries += 1 + [right, down, left, up].iter().filter(|&&b| b).count() as u64;
        }
        let max = self.numbers.iter().copied().max().unwrap_or(0) as usize;
        let mut present = vec![false; max + 1];
        for &v in &self.numbers {
            present[v as usize] = true;
        }
        let values = present.iter().filter(|&&p| p).count() as u64;
        let (rows, cols, cells) = (rows as u64, cols as u64, cells as u64);
        EncodingSize::new(
            sum(&[cells, line_items, pairs]),
            options,
            entries,
            sum(&[
                product(&[2, cells, sum(&[rows, cols, values])]),
                product(&[cells, 64]),
            ]),
        )
    }

    /// The grid with the cells of `black` as `#`, in the text layout.
    pub fn format(&self, black: &[bool]) -> String {
        let width = self
            .numbers
            .iter()
            .map(|v| v.to_string().len())
            .max()
            .unwrap_or(1);
        let mut out = String::new();
        for r in 0..self.rows {
            for c in 0..self.cols {
                if c > 0 {
                    out.push(' ');
                }
                let i = r * self.cols + c;
                let cell = if black[i] {
                    "#".to_string()
                } else {
                    self.numbers[i].to_string()
                };
                out.push_str(&format!("{cell:>width$}"));
            }
            out.push('\n');
        }
        out
    }

    /// The puzzle as text (no cell black).
    pub fn to_text(&self) -> String {
        self.format(&vec![false; self.numbers.len()])
    }
}

/// A token of a whitespace-separated grid, with its 1-based place.
pub(super) struct Token<'a> {
    pub line: usize,
    pub column: usize,
    pub text: &'a str,
}

/// Splits a text into rows of whitespace-separated tokens (blank lines are
/// skipped), checking that there is at least one row, that all rows have
/// as many tokens as the first, and that there are at most
/// [`MAX_GRID_CELLS`] tokens.
pub(super) fn grid_tokens(text: &str) -> Result<Vec<Vec<Token<'_>>>, PuzzleError> {
    let mut rows: Vec<Vec<Token<'_>>> = Vec::new();
    let mut total = 0;
    for (l, line) in text.lines().enumerate() {
        let mut row = Vec::new();
        let mut start: Option<(usize, usize)> = None; // (byte, column)
        let mut column = 0;
        for (byte, ch) in line.char_indices() {
            column += 1;
            if start.is_none() && !ch.is_whitespace() {
                total += 1;
                if total > MAX_GRID_CELLS {
                    return Err(too_many_cells(l + 1, column));
                }
            }
            if ch.is_whitespace() {
                if let Some((b, col)) = start.take() {
                    row.push(Token {
                        line: l + 1,
                        column: col,
                        text: &line[b..byte],
                    });
                }
            } else if start.is_none() {
                start = Some((byte, column));
            }
        }
        if let Some((b, col)) = start {
            row.push(Token {
                line: l + 1,
                column: col,
                text: &line[b..],
            });
        }
        if row.is_empty() {
            continue;
        }
        if let Some(first) = rows.first() {
            if row.len() != first.len() {
                let (line_no, col) = if row.len() > first.len() {
                    (l + 1, row[first.len()].column)
                } else {
                    (l + 1, line.chars().count() + 1)
                };
                return Err(PuzzleError::new(
                    line_no,
                    col,
                    format!(
                        "ragged rows: this row has {} entries, the first row has {}",
                        row.len(),
                        first.len()
                    ),
                ));
            }
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(PuzzleError::new(1, 1, "empty puzzle: no rows"));
    }
    Ok(rows)
}

/// The error of a grid with more than [`MAX_GRID_CELLS`] cells, at the
/// first cell too many.
pub(super) fn too_many_cells(line: usize, column: usize) -> PuzzleError {
    PuzzleError::new(
        line,
        column,
        format!("too many cells: a grid has at most {MAX_GRID_CELLS}"),
    )
}

/// Reads a hitori puzzle.
pub fn parse(text: &str) -> Result<Hitori, PuzzleError> {
    let grid = grid_tokens(text)?;
    let (rows, cols) = (grid.len(), grid[0].len());
    let max = rows.max(cols) as u64;
    let mut numbers = Vec::with_capacity(rows * cols);
    for token in grid.iter().flatten() {
        if !token.text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(PuzzleError::new(
                token.line,
                token.column,
                format!("unknown symbol {:?}: expected a number", token.text),
            ));
        }
        let value = token.text.parse::<u64>().unwrap_or(u64::MAX);
        if value == 0 || value > max {
            return Err(PuzzleError::new(
                token.line,
                token.column,
                format!("number {} out of range 1..={max}", token.text),
            ));
        }
        numbers.push(value as u32);
    }
    Ok(Hitori {
        rows,
        cols,
        numbers,
    })
}

/// Checks a colouring against the rules, independently of any encoding:
/// seeds white, no repeated white number in a line, no adjacent black cells,
/// and (unless `weak`) connected white cells. Returns the first violation.
pub fn check(puzzle: &Hitori, black: &[bool], weak: bool) -> Result<(), String> {
    let (rows, cols) = (puzzle.rows, puzzle.cols);
    if black.len() != rows * cols {
        return Err("wrong number of cells".into());
    }
    let seeds = puzzle.seeds();
    for i in 0..rows * cols {
        if seeds[i] && black[i] {
            return Err(format!("seed ({}, {}) is black", i / cols, i % cols));
        }
    }
    for i in 0..rows * cols {
        for j in i + 1..rows * cols {
            let same_line = i / cols == j / cols || i % cols == j % cols;
            if same_line && !black[i] && !black[j] && puzzle.numbers[i] == puzzle.numbers[j] {
                return Err(format!("cells {i} and {j} repeat a white number"));
            }
            let adjacent = (i / cols == j / cols && j == i + 1) || j == i + cols;
            if adjacent && black[i] && black[j] {
                return Err(format!("black cells {i} and {j} are adjacent"));
            }
        }
    }
    if !weak && !connected(rows, cols, |i| !black[i]) {
        return Err("white cells are not connected".into());
    }
    Ok(())
}

/// Whether the cells where `open` holds are orthogonally connected (true
/// when there are none).
fn connected(rows: usize, cols: usize, open: impl Fn(usize) -> bool) -> bool {
    let n = rows * cols;
    let Some(start) = (0..n).find(|&i| open(i)) else {
        return true;
    };
    let total = (0..n).filter(|&i| open(i)).count();
    let mut seen = vec![false; n];
    let mut stack = vec![start];
    seen[start] = true;
    let mut reached = 1;
    while let Some(i) = stack.pop() {
        let (r, c) = (i / cols, i % cols);
        let mut visit = |j: usize| {
            if !seen[j] && open(j) {
                seen[j] = true;
                reached += 1;
                stack.push(j);
            }
        };
        if r > 0 {
            visit(i - cols);
        }
        if r + 1 < rows {
            visit(i + cols);
        }
        if c > 0 {
            visit(i - 1);
        }
        if c + 1 < cols {
            visit(i + 1);
        }
    }
    reached == total
}

/// A hitori puzzle encoded as XCC (see the module documentation).
pub struct HitoriEncoding {
    pub puzzle: Hitori,
    pub weak: bool,
    problem: Problem,
    /// For each option: its cell and whether it makes the cell black.
    option_cell: Vec<(usize, bool)>,
}

impl HitoriEncoding {
    pub fn new(puzzle: Hitori, weak: bool) -> HitoriEncoding {
        let (rows, cols) = (puzzle.rows, puzzle.cols);
        let seeds = puzzle.seeds();
        let repeated_in_row =
            |r: usize, v: u32| (0..cols).filter(|&k| puzzle.at(r, k) == v).count() > 1;
        let repeated_in_col =
            |c: usize, v: u32| (0..rows).filter(|&k| puzzle.at(k, c) == v).count() > 1;
        let mut b = ProblemBuilder::new();
        let built = "hitori items are declared once, with valid names";
        for r in 0..rows {
            for c in 0..cols {
                b.primary(&format!("x{r}_{c}")).expect(built);
            }
        }
        let mut values: Vec<u32> = puzzle.numbers.clone();
        values.sort_unstable();
        values.dedup();
        for r in 0..rows {
            for &v in &values {
                if repeated_in_row(r, v) {
                    b.secondary(&format!("r{r}v{v}")).expect(built);
                }
            }
        }
        for c in 0..cols {
            for &v in &values {
                if repeated_in_col(c, v) {
                    b.secondary(&format!("c{c}v{v}")).expect(built);
                }
            }
        }
        for r in 0..rows {
            for c in 0..cols {
                let i = r * cols + c;
                if c + 1 < cols && !seeds[i] && !seeds[i + 1] {
                    b.secondary(&format!("h{r}_{c}")).expect(built);
                }
                if r + 1 < rows && !seeds[i] && !seeds[i + cols] {
                    b.secondary(&format!("v{r}_{c}")).expect(built);
                }
            }
        }
        let mut option_cell = Vec::new();
        for r in 0..rows {
            for c in 0..cols {
                let i = r * cols + c;
                let v = puzzle.at(r, c);
                let mut white = vec![format!("x{r}_{c}")];
                if repeated_in_row(r, v) {
                    white.push(format!("r{r}v{v}"));
                }
                if repeated_in_col(c, v) {
                    white.push(format!("c{c}v{v}"));
                }
                let tokens: Vec<&str> = white.iter().map(String::as_str).collect();
                b.option_str(&tokens).expect(built);
                option_cell.push((i, false));
                if seeds[i] {
                    continue;
                }
                let mut black = vec![format!("x{r}_{c}")];
                if c > 0 && !seeds[i - 1] {
                    black.push(format!("h{r}_{}", c - 1));
                }
                if c + 1 < cols && !seeds[i + 1] {
                    black.push(format!("h{r}_{c}"));
                }
                if r > 0 && !seeds[i - cols] {
                    black.push(format!("v{}_{c}", r - 1));
                }
                if r + 1 < rows && !seeds[i + cols] {
                    black.push(format!("v{r}_{c}"));
                }
                let tokens: Vec<&str> = black.iter().map(String::as_str).collect();
                b.option_str(&tokens).expect(built);
                option_cell.push((i, true));
            }
        }
        HitoriEncoding {
            puzzle,
            weak,
            problem: b.build().expect(built),
            option_cell,
        }
    }

    /// The black cells named by a (partial) solution.
    pub fn black_cells(&self, options: &[usize]) -> Vec<bool> {
        let mut black = vec![false; self.puzzle.numbers.len()];
        for &o in options {
            let (cell, is_black) = self.option_cell[o];
            if is_black {
                black[cell] = true;
            }
        }
        black
    }
}

impl Encoded for HitoriEncoding {
    fn problem(&self) -> &Problem {
        &self.problem
    }
    fn decode(&self, options: &[usize]) -> String {
        self.puzzle.format(&self.black_cells(options))
    }
}

impl SideCondition for HitoriEncoding {
    fn accept(&self, options: &[usize]) -> bool {
        self.weak || {
            let black = self.black_cells(options);
            connected(self.puzzle.rows, self.puzzle.cols, |i| !black[i])
        }
    }
    fn accept_partial(&self, options: &[usize]) -> bool {
        // Cells not known black must be connected (module documentation).
        self.accept(options)
    }
    fn prunes(&self) -> bool {
        !self.weak
    }
}

/// Encodes a hitori puzzle's text: weak solutions if `weak`, else full ones.
pub fn encode_text(text: &str, weak: bool) -> Result<Box<dyn Encoded>, PuzzleError> {
    Ok(Box::new(HitoriEncoding::new(parse(text)?, weak)))
}

/// Largest size [`generate`] accepts.
pub const MAX_GENERATE: usize = 30;

/// Generates a `size` x `size` hitori puzzle with exactly one full
/// solution, deterministically from `seed`.
///
/// A random latin square (a shuffled cyclic one) has the all-white solution;
/// a random set of cells is blackened keeping rules 2 and 3, and each black
/// cell gets the number of a white cell of its row or column (so the
/// intended colouring stays a solution and no black cell is a seed). While
/// the solver finds a second solution, it is killed: if a cell is black in
/// ours but white in the other, its number becomes that of a cell white in
/// both, in the same line; otherwise the other solution blackens a cell `w`
/// white in ours (hitori allows any extra black cell that breaks no rule),
/// and the black duplicates of `w` get other numbers, making `w` a seed.
/// After a few repairs without success, a new square is drawn.
pub fn generate(size: usize, seed: u64) -> Result<String, PuzzleError> {
    if size == 0 || size > MAX_GENERATE {
        return Err(PuzzleError::new(
            0,
            0,
            format!("hitori size must be in 1..={MAX_GENERATE}"),
        ));
    }
    let n = size;
    let mut rng = Rng::new(seed);
    for _attempt in 0..1000 {
        // A random latin square.
        let mut perm_r: Vec<usize> = (0..n).collect();
        let mut perm_c: Vec<usize> = (0..n).collect();
        let mut perm_v: Vec<u32> = (1..=n as u32).collect();
        rng.shuffle(&mut perm_r);
        rng.shuffle(&mut perm_c);
        rng.shuffle(&mut perm_v);
        let mut numbers: Vec<u32> = (0..n * n)
            .map(|i| perm_v[(perm_r[i / n] + perm_c[i % n]) % n])
            .collect();
        // A random black set: cells in random order, each blackened with
        // probability 1/2 when it keeps rules 2 and 3.
        let mut order: Vec<usize> = (0..n * n).collect();
        rng.shuffle(&mut order);
        let mut black = vec![false; n * n];
        for &i in &order {
            if rng.below(2) == 0 {
                continue;
            }
            let (r, c) = (i / n, i % n);
            let touches = (r > 0 && black[i - n])
                || (r + 1 < n && black[i + n])
                || (c > 0 && black[i - 1])
                || (c + 1 < n && black[i + 1]);
            if touches {
                continue;
            }
            black[i] = true;
            if !connected(n, n, |j| !black[j]) {
                black[i] = false;
            }
        }
        let line_whites = |black: &[bool], i: usize| -> Vec<usize> {
            let (r, c) = (i / n, i % n);
            (0..n)
                .map(|k| r * n + k)
                .chain((0..n).map(|k| k * n + c))
                .filter(|&j| j != i && !black[j])
                .collect()
        };
        let square = numbers.clone();
        for i in 0..n * n {
            if black[i] {
                let whites = line_whites(&black, i);
                if whites.is_empty() {
                    black[i] = false;
                    continue;
                }
                numbers[i] = square[whites[rng.below(whites.len())]];
            }
        }
        for _repair in 0..4 * n {
            let puzzle = Hitori {
                rows: n,
                cols: n,
                numbers: numbers.clone(),
            };
            let encoding = HitoriEncoding::new(puzzle.clone(), false);
            let found = super::solve(&encoding, Some(2), 2);
            if found.count == 1 && found.complete {
                return Ok(puzzle.to_text());
            }
            let Some(other) = found
                .grids
                .iter()
                .map(|g| {
                    g.split_whitespace()
                        .map(|t| t == "#")
                        .collect::<Vec<bool>>()
                })
                .find(|g| *g != black)
            else {
                break;
            };
            // Cells black in ours, white in the other; and a white-in-both
            // cell of the same line to copy.
            let mut fixes = Vec::new();
            for i in 0..n * n {
                if black[i] && !other[i] {
                    for j in line_whites(&black, i) {
                        if !other[j] {
                            fixes.push((i, j));
                        }
                    }
                }
            }
            if !fixes.is_empty() {
                let (i, j) = fixes[rng.below(fixes.len())];
                numbers[i] = numbers[j];
                continue;
            }
            // Otherwise the other solution blackens a cell `w` white in ours
            // whose duplicates are all black in ours: give those duplicates
            // other numbers, which makes `w` a seed (always white).
            let extra: Vec<usize> = (0..n * n).filter(|&i| !black[i] && other[i]).collect();
            if extra.is_empty() {
                break;
            }
            let w = extra[rng.below(extra.len())];
            let (r, c) = (w / n, w % n);
            let twins: Vec<usize> = (0..n)
                .map(|k| r * n + k)
                .chain((0..n).map(|k| k * n + c))
                .filter(|&i| i != w && numbers[i] == numbers[w])
                .collect();
            for b in twins {
                let choices: Vec<usize> = line_whites(&black, b)
                    .into_iter()
                    .filter(|&j| numbers[j] != numbers[w])
                    .collect();
                if choices.is_empty() {
                    break;
                }
                numbers[b] = numbers[choices[rng.below(choices.len())]];
            }
        }
    }
    Err(PuzzleError::new(
        0,
        0,
        format!("no unique {n}x{n} hitori found from seed {seed}"),
    ))
}
