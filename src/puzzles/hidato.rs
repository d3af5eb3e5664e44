//! Hidato (TAOCP 7.2.2.1, exercise 404): Hamiltonian king paths.
//!
//! A hidato board is a grid of cells, some of them holes that are not part
//! of the board. With `N` board cells, a solution writes `1..=N` in them,
//! each once, so that the cells of `k` and `k + 1` are king neighbours
//! (horizontally, vertically or diagonally adjacent) for `1 <= k < N`, and
//! the given numbers stay where they are.
//!
//! # Text format
//!
//! Rows of whitespace-separated tokens (blank lines are ignored): an
//! integer in `1..=N` (a given), `.` (a blank board cell) or `#` (a hole).
//! The solution is printed in the same layout with every board cell
//! filled, holes as `#`, all entries right-aligned to one width, every line
//! ending in `\n`.
//! A grid has at most [`MAX_GRID_CELLS`](super::MAX_GRID_CELLS) cells.
//!
//! # The XCC encoding (Algorithm C)
//!
//! Items:
//! - primary `n{k}` for `1 <= k <= N`: number `k` is placed once;
//! - primary `x{r}_{c}` for every board cell: the cell gets one number;
//! - secondary `p{k}` for `2 <= k <= N`, whose colour is "the cell of `k`"
//!   (a cell index).
//!
//! Options: for `k < N`, every candidate cell `x` of `k` and every king
//! neighbour `y` of `x` that is a candidate cell of `k + 1`, the option
//! "`k` at `x`, followed by `y`":
//!
//! `n{k} x p{k}:x p{k+1}:y` (without `p{1}:x` when `k = 1`);
//!
//! and for `k = N`, every candidate cell `x` of `N`: `n{N} x p{N}:x`.
//!
//! Why it is right. In an XCC solution each `n{k}` is covered exactly once,
//! so every `k` has one chosen option, placing it in one cell `pos(k)`; each
//! cell item is covered once, so `pos` is a bijection between numbers and
//! board cells. For `k < N`, `p{k+1}` is coloured `y` by the option of `k`
//! and `pos(k+1)` by the option of `k + 1`; colours must agree, so
//! `pos(k+1) = y`, a king neighbour of `pos(k)`. Conversely, the options
//! `(k, pos(k), pos(k+1))` of a hidato solution cover every primary item
//! once and colour each `p{k}` with `pos(k)` only, provided each `pos(k)` is
//! a candidate; and the options are determined by the solution. So XCC
//! solutions and hidato solutions correspond one to one.
//!
//! (The seed's answer instead makes an item `T{k,s,t}` for every `k` and
//! every pair of neighbours `s`, `t`, to be covered exactly once; but a
//! solution uses one pair per `k`, so all the other `T` items stay
//! uncovered and that problem has no solution at all. Colours say "the
//! option of `k` and the option of `k + 1` agree on where `k + 1` is",
//! which is what the transition needs.)
//!
//! Candidates. A cell `x` is a candidate for `k` when it is not a given of
//! another number and, for every given `g` in cell `z`, the king distance
//! from `z` to `x` *through board cells* is at most `|k - g|`. That is
//! necessary in every solution (the path from `g` to `k` takes `|k - g|`
//! king steps over board cells), so no solution is lost; it places every
//! given (distance 0 for `g = k`), and it removes most options of a puzzle
//! with a fair number of givens, which is what makes the search fast.
//!
//! Choosing "`k` at `x`" fixes `p{k+1}`'s colour, which purifies away every
//! option of `k + 1` not at `y` (and `k`'s predecessor likewise through
//! `p{k}`), so the search grows the path from the givens with at most 8
//! choices per step. The cell items come before the number items: DLX2
//! takes the first item of minimum length, and that tie-break gave about
//! half the nodes on generated 9x9 puzzles.
//!
//! # Pruning
//!
//! The candidates use the givens only; the numbers placed during the search
//! constrain the others just as much, which exact cover does not see.
//! [`Encoded::accept_partial`] takes the known positions (the givens, and
//! for each chosen option "`k` at `x` followed by `y`" both `k` and
//! `k + 1`), the *free* cells (board cells with no known number) and the
//! *runs* of unknown numbers between consecutive known numbers `a < b` (and
//! before the first and after the last known number). In every solution
//! the numbers of a run fill a king path of free cells, so they lie in one
//! king-connected component of the free cells, next to the cells of `a`
//! and `b`. It rejects when
//!
//! - for some run between known `a` and `b`, no king path of at most
//!   `b - a - 1` free cells leads from `a`'s cell to a neighbour of `b`'s
//!   cell (a depth-limited breadth-first search);
//! - some run fits in no component (one next to both of its ends with at
//!   least as many cells as the run);
//! - some component has more cells than the runs that could lie in it can
//!   fill (every free cell gets a number of some run).
//!
//! These are necessary conditions, so no solution is lost. On 9x9 puzzles
//! they cut the search from up to 470,000 nodes to under 6,000.

use super::hitori::grid_tokens;
use super::rng::Rng;
use super::size::{product, sum, EncodingSize};
use super::{Encoded, PuzzleError};
use crate::run::SideCondition;
use crate::xcc::{Problem, ProblemBuilder};

/// A cell of a hidato grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    Hole,
    Blank,
    Given(u32),
}

/// A hidato puzzle: `cells[r * cols + c]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidato {
    pub rows: usize,
    pub cols: usize,
    pub cells: Vec<Cell>,
}

impl Hidato {
    /// Number of board cells (`N`).
    pub fn size(&self) -> usize {
        self.cells.iter().filter(|c| **c != Cell::Hole).count()
    }

    /// The king neighbours of grid cell `i` that are board cells.
    pub fn neighbours(&self, i: usize) -> Vec<usize> {
        let (r, c) = ((i / self.cols) as isize, (i % self.cols) as isize);
        let mut out = Vec::with_capacity(8);
        for dr in -1..=1 {
            for dc in -1..=1 {
                let (rr, cc) = (r + dr, c + dc);
                if (dr, dc) == (0, 0)
                    || rr < 0
                    || cc < 0
                    || rr >= self.rows as isize
                    || cc >= self.cols as isize
                {
                    continue;
                }
                let j = rr as usize * self.cols + cc as usize;
                if self.cells[j] != Cell::Hole {
                    out.push(j);
                }
            }
        }
        out
    }

    /// A grid of numbers (0 for holes) in the text layout.
    pub fn format(&self, values: &[u32]) -> String {
        let width = self.size().max(1).to_string().len();
        let mut out = String::new();
        for r in 0..self.rows {
            for c in 0..self.cols {
                if c > 0 {
                    out.push(' ');
                }
                let i = r * self.cols + c;
                let cell = match self.cells[i] {
                    Cell::Hole => "#".to_string(),
                    _ if values[i] == 0 => ".".to_string(),
                    _ => values[i].to_string(),
                };
                out.push_str(&format!("{cell:>width$}"));
            }
            out.push('\n');
        }
        out
    }

    /// The puzzle as text.
    pub fn to_text(&self) -> String {
        let values: Vec<u32> = self
            .cells
            .iter()
            .map(|c| match c {
                Cell::Given(v) => *v,
                _ => 0,
            })
            .collect();
        self.format(&values)
    }
}

/// For every `k` in `0..len`, `max` over the known `values[g]` of
/// `values[g] - |k - g|` (a very negative number when none is known), in
/// two linear passes.
fn max_minus_distance(values: &[Option<i64>]) -> Vec<i64> {
    const NONE: i64 = i64::MIN / 4;
    let mut out = vec![NONE; values.len()];
    let mut run = NONE;
    for (k, v) in values.iter().enumerate() {
        run = (run - 1).max(v.unwrap_or(NONE)).max(NONE);
        out[k] = run;
    }
    run = NONE;
    for (k, v) in values.iter().enumerate().rev() {
        run = (run - 1).max(v.unwrap_or(NONE)).max(NONE);
        out[k] = out[k].max(run);
    }
    out
}

/// Counts of cells with a property in rectangles of a grid, by prefix
/// sums.
struct RectCounts {
    rows: i64,
    cols: i64,
    /// `sums[r * (cols + 1) + c]`: the cells of rows `..r`, columns `..c`.
    sums: Vec<u32>,
}

/// A rectangle of grid cells, bounds included (empty when a low bound
/// exceeds the high one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rect {
    r0: i64,
    r1: i64,
    c0: i64,
    c1: i64,
}

impl Rect {
    fn contains(&self, r: i64, c: i64) -> bool {
        (self.r0..=self.r1).contains(&r) && (self.c0..=self.c1).contains(&c)
    }
    fn intersect(&self, o: &Rect) -> Rect {
        Rect {
            r0: self.r0.max(o.r0),
            r1: self.r1.min(o.r1),
            c0: self.c0.max(o.c0),
            c1: self.c1.min(o.c1),
        }
    }
    /// The rectangle moved by `(-dr, -dc)`.
    fn back(&self, (dr, dc): (i64, i64)) -> Rect {
        Rect {
            r0: self.r0 - dr,
            r1: self.r1 - dr,
            c0: self.c0 - dc,
            c1: self.c1 - dc,
        }
    }
}

impl RectCounts {
    fn new(rows: usize, cols: usize, has: impl Fn(usize, usize) -> bool) -> RectCounts {
        let w = cols + 1;
        let mut sums = vec![0u32; (rows + 1) * w];
        for r in 0..rows {
            for c in 0..cols {
                sums[(r + 1) * w + c + 1] = sums[r * w + c + 1] + sums[(r + 1) * w + c]
                    - sums[r * w + c]
                    + u32::from(has(r, c));
            }
        }
        RectCounts {
            rows: rows as i64,
            cols: cols as i64,
            sums,
        }
    }

    fn count(&self, rect: &Rect) -> u64 {
        let (r0, r1) = (rect.r0.max(0), rect.r1.min(self.rows - 1));
        let (c0, c1) = (rect.c0.max(0), rect.c1.min(self.cols - 1));
        if r0 > r1 || c0 > c1 {
            return 0;
        }
        let w = self.cols as usize + 1;
        let at = |r: i64, c: i64| u64::from(self.sums[r as usize * w + c as usize]);
        at(r1 + 1, c1 + 1) + at(r0, c0) - at(r0, c1 + 1) - at(r1 + 1, c0)
    }
}

impl Hidato {
    /// Upper bounds of [`HidatoEncoding::new`]'s problem, without building
    /// it, in time linear in the grid.
    ///
    /// Items: exactly the board cells, `N` numbers and `N - 1` positions.
    ///
    /// Options: the encoder's candidates of `k` are the cells within board
    /// distance `|k - g|` of every given `g`. King distance in the plane is
    /// never longer, so they lie in the rectangle `R(k)`, the intersection
    /// of the squares of radius `|k - g|` around the givens (found for all
    /// `k` at once by two passes over the numbers); they are blank cells of
    /// the king-connected part of the board that holds the givens (there
    /// are none if the givens are in different parts), or the given's own
    /// cell when `k` is given. The options of `k < N` are then at most the
    /// king-adjacent pairs `(x, y)` with `x` a candidate in `R(k)` and `y`
    /// one in `R(k + 1)`, counted per direction with prefix sums of "blank
    /// cell whose neighbour in that direction is blank"; those of `N` at
    /// most its candidates. Entries: 3 for the options of 1 and `N`, 4 for
    /// the others (2 when `N = 1`). Without holes, king distance through
    /// the board is the plane's, and these counts are exact.
    ///
    /// Work: the encoder's breadth-first search from every given over the
    /// grid, keeping every distance (`32 G cells` steps for `G` givens: a
    /// distance of 8 bytes and up to 8 neighbours to look at per cell,
    /// about 30 ns measured, more once the distances outgrow the caches),
    /// its `(N + 1) x cells` candidate table (as many bytes), the distance
    /// tests of every (number, blank cell) pair against up to `G` givens
    /// (`(N blanks + G) G`), its scan of the table for options
    /// (`N cells`) and of the candidates' neighbours, and what it builds.
    /// That is quadratic or worse where the output may be small (a fully
    /// given board has one option per number).
    pub fn estimate(&self) -> EncodingSize {
        let (rows, cols) = (self.rows, self.cols);
        let cells = rows * cols;
        let n = self.size();
        let mut given_at = vec![None; n + 1];
        for (x, cell) in self.cells.iter().enumerate() {
            if let Cell::Given(g) = *cell {
                if let Some(slot) = given_at.get_mut(g as usize) {
                    *slot = Some(x);
                }
            }
        }
        let givens = given_at.iter().flatten().count() as u64;
        let place = |z: usize| ((z / cols) as i64, (z % cols) as i64);
        let in_grid =
            |r: i64, c: i64| (0..rows as i64).contains(&r) && (0..cols as i64).contains(&c);
        let king = [
            (-1, -1),
            (-1, 0),
            (-1, 1),
            (0, -1),
            (0, 1),
            (1, -1),
            (1, 0),
            (1, 1),
        ];
        // With givens, every candidate is at a finite board distance from
        // all of them: in the king-connected component of the board that
        // holds them all, and there is none if they are apart.
        let mut usable: Vec<bool> = self.cells.iter().map(|c| *c == Cell::Blank).collect();
        let mut apart = false;
        if let Some(&first) = given_at.iter().flatten().next() {
            let mut seen = vec![false; cells];
            seen[first] = true;
            let mut stack = vec![first];
            while let Some(x) = stack.pop() {
                let (r, c) = place(x);
                for (dr, dc) in king {
                    let (rr, cc) = (r + dr, c + dc);
                    if in_grid(rr, cc) {
                        let y = rr as usize * cols + cc as usize;
                        if !seen[y] && self.cells[y] != Cell::Hole {
                            seen[y] = true;
                            stack.push(y);
                        }
                    }
                }
            }
            apart = !given_at.iter().flatten().all(|&z| seen[z]);
            for (u, s) in usable.iter_mut().zip(&seen) {
                *u &= *s && !apart;
            }
        }
        let usable_at = |r: i64, c: i64| usable[r as usize * cols + c as usize];
        let (options, entries, all_candidates) = if givens == 0 {
            // Every board cell is a candidate of every number.
            let free = usable.iter().filter(|&&u| u).count() as u64;
            let mut adjacent = 0u64; // ordered pairs of king neighbours
            for x in (0..cells).filter(|&x| usable[x]) {
                let (r, c) = place(x);
                for (dr, dc) in [(0, 1), (1, 1), (1, 0), (1, -1)] {
                    let (rr, cc) = (r + dr, c + dc);
                    if in_grid(rr, cc) && usable_at(rr, cc) {
                        adjacent += 2;
                    }
                }
            }
            let n = n as u64;
            if n <= 1 {
                (free, 2 * free, free)
            } else {
                (
                    sum(&[product(&[n - 1, adjacent]), free]),
                    sum(&[
                        product(&[3, adjacent]),
                        product(&[4, n - 2, adjacent]),
                        product(&[3, free]),
                    ]),
                    product(&[n, free]),
                )
            }
        } else {
            let coordinate = |f: fn(usize, usize) -> i64| {
                let values: Vec<Option<i64>> = given_at
                    .iter()
                    .map(|z| z.map(|z| f(z / cols, z % cols)))
                    .collect();
                max_minus_distance(&values)
            };
            let r0 = coordinate(|r, _| r as i64);
            let r1 = coordinate(|r, _| -(r as i64));
            let c0 = coordinate(|_, c| c as i64);
            let c1 = coordinate(|_, c| -(c as i64));
            let rect = |k: usize| Rect {
                r0: r0[k],
                r1: -r1[k],
                c0: c0[k],
                c1: -c1[k],
            };
            let blanks = RectCounts::new(rows, cols, |r, c| usable[r * cols + c]);
            // Usable cells whose neighbour in direction `d` is usable; the four
            // other directions are these pairs read backwards.
            let directions = [(0i64, 1i64), (1, 1), (1, 0), (1, -1)];
            let pairs: Vec<RectCounts> = directions
                .iter()
                .map(|&(dr, dc)| {
                    RectCounts::new(rows, cols, |r, c| {
                        let (rr, cc) = (r as i64 + dr, c as i64 + dc);
                        usable[r * cols + c] && in_grid(rr, cc) && usable_at(rr, cc)
                    })
                })
                .collect();
            // A given's own cell is its only candidate.
            let candidates = |k: usize| match given_at[k] {
                Some(z) => u64::from(!apart && rect(k).contains(place(z).0, place(z).1)),
                None => blanks.count(&rect(k)),
            };
            let mut all_candidates = 0u64;
            let mut options = 0u64;
            let mut entries = 0u64;
            // Blank stretches far from the givens repeat the same rectangles.
            let mut last: Option<(Rect, Rect, u64)> = None;
            for k in 1..=n {
                let here = candidates(k);
                all_candidates += here;
                if k == n {
                    options += here;
                    entries += here * if n == 1 { 2 } else { 3 };
                    break;
                }
                let (a, b) = (rect(k), rect(k + 1));
                let transitions = match (given_at[k], given_at[k + 1]) {
                    (Some(z), next) => {
                        let (r, c) = place(z);
                        if here == 0 {
                            0
                        } else {
                            king.iter()
                                .filter(|&&(dr, dc)| {
                                    let (rr, cc) = (r + dr, c + dc);
                                    in_grid(rr, cc)
                                        && b.contains(rr, cc)
                                        && match next {
                                            Some(y) => place(y) == (rr, cc),
                                            None => usable_at(rr, cc),
                                        }
                                })
                                .count() as u64
                        }
                    }
                    (None, Some(y)) => {
                        let (r, c) = place(y);
                        if apart || !b.contains(r, c) {
                            0
                        } else {
                            king.iter()
                                .filter(|&&(dr, dc)| {
                                    let (rr, cc) = (r - dr, c - dc);
                                    in_grid(rr, cc) && a.contains(rr, cc) && usable_at(rr, cc)
                                })
                                .count() as u64
                        }
                    }
                    (None, None) => match last {
                        Some((la, lb, t)) if (la, lb) == (a, b) => t,
                        _ => {
                            let t = directions
                                .iter()
                                .zip(&pairs)
                                .map(|(&d, counts)| {
                                    counts.count(&a.intersect(&b.back(d)))
                                        + counts.count(&b.intersect(&a.back(d)))
                                })
                                .sum();
                            last = Some((a, b, t));
                            t
                        }
                    },
                };
                options += transitions;
                entries += transitions * if k == 1 { 3 } else { 4 };
            }
            (options, entries, all_candidates)
        };
        let (n, cells) = (n as u64, cells as u64);
        let board = self.cells.iter().filter(|c| **c != Cell::Hole).count() as u64;
        let blank_cells = board - givens;
        EncodingSize::new(
            sum(&[board, n, n.saturating_sub(1)]),
            options,
            entries,
            sum(&[
                product(&[9, cells]),
                product(&[32, givens, cells]),
                product(&[n + 1, cells]),
                product(&[sum(&[product(&[n, blank_cells]), givens]), givens]),
                product(&[n, cells]),
                product(&[8, all_candidates]),
            ]),
        )
    }
}

/// Reads a hidato puzzle.
pub fn parse(text: &str) -> Result<Hidato, PuzzleError> {
    let grid = grid_tokens(text)?;
    let (rows, cols) = (grid.len(), grid[0].len());
    let mut cells = Vec::with_capacity(rows * cols);
    for token in grid.iter().flatten() {
        cells.push(match token.text {
            "#" => Cell::Hole,
            "." => Cell::Blank,
            t if t.bytes().all(|b| b.is_ascii_digit()) => {
                Cell::Given(t.parse::<u32>().unwrap_or(u32::MAX))
            }
            t => {
                return Err(PuzzleError::new(
                    token.line,
                    token.column,
                    format!("unknown symbol {t:?}: expected a number, '.' or '#'"),
                ))
            }
        });
    }
    let n = cells.iter().filter(|c| **c != Cell::Hole).count();
    if n == 0 {
        return Err(PuzzleError::new(
            grid[0][0].line,
            grid[0][0].column,
            "the board has no cells (all holes)",
        ));
    }
    let mut seen = vec![false; n + 1];
    for (token, cell) in grid.iter().flatten().zip(&cells) {
        if let Cell::Given(v) = *cell {
            if v == 0 || v as usize > n {
                return Err(PuzzleError::new(
                    token.line,
                    token.column,
                    format!("number {} out of range 1..={n}", token.text),
                ));
            }
            if seen[v as usize] {
                return Err(PuzzleError::new(
                    token.line,
                    token.column,
                    format!("number {v} is given twice"),
                ));
            }
            seen[v as usize] = true;
        }
    }
    Ok(Hidato { rows, cols, cells })
}

/// Checks a filled grid (0 at holes) against the rules, independently of
/// any encoding. Returns the first violation.
pub fn check(puzzle: &Hidato, values: &[u32]) -> Result<(), String> {
    let n = puzzle.size();
    if values.len() != puzzle.cells.len() {
        return Err("wrong number of cells".into());
    }
    let mut place = vec![usize::MAX; n + 1];
    for (i, (&v, cell)) in values.iter().zip(&puzzle.cells).enumerate() {
        match *cell {
            Cell::Hole if v != 0 => return Err(format!("hole {i} holds {v}")),
            Cell::Hole => continue,
            Cell::Given(g) if g != v => return Err(format!("given {g} at {i} became {v}")),
            _ => {}
        }
        if v == 0 || v as usize > n {
            return Err(format!("cell {i} holds {v}, not in 1..={n}"));
        }
        if place[v as usize] != usize::MAX {
            return Err(format!("{v} is written twice"));
        }
        place[v as usize] = i;
    }
    for k in 1..n {
        let (a, b) = (place[k], place[k + 1]);
        let (ra, ca) = (a / puzzle.cols, a % puzzle.cols);
        let (rb, cb) = (b / puzzle.cols, b % puzzle.cols);
        if ra.abs_diff(rb) > 1 || ca.abs_diff(cb) > 1 {
            return Err(format!("{k} and {} are not king neighbours", k + 1));
        }
    }
    Ok(())
}

/// A hidato puzzle encoded as XCC (see the module documentation).
pub struct HidatoEncoding {
    pub puzzle: Hidato,
    problem: Problem,
    /// For each option: its number, its grid cell, and the cell of the
    /// next number (`usize::MAX` for `N`).
    option_place: Vec<(u32, usize, usize)>,
    /// King neighbours (board cells) of every grid cell.
    neighbours: Vec<Vec<usize>>,
    /// Position of every given number (`usize::MAX` if not given).
    given_at: Vec<usize>,
}

impl HidatoEncoding {
    pub fn new(puzzle: Hidato) -> HidatoEncoding {
        let n = puzzle.size();
        let cells = puzzle.cells.len();
        let neighbours: Vec<Vec<usize>> = (0..cells).map(|i| puzzle.neighbours(i)).collect();
        // King distances through board cells from every given.
        let givens: Vec<(u32, Vec<usize>)> = (0..cells)
            .filter_map(|z| match puzzle.cells[z] {
                Cell::Given(g) => {
                    let mut dist = vec![usize::MAX; cells];
                    dist[z] = 0;
                    let mut queue = std::collections::VecDeque::from([z]);
                    while let Some(i) = queue.pop_front() {
                        for &j in &neighbours[i] {
                            if dist[j] == usize::MAX {
                                dist[j] = dist[i] + 1;
                                queue.push_back(j);
                            }
                        }
                    }
                    Some((g, dist))
                }
                _ => None,
            })
            .collect();
        // candidate[k][x]
        let candidate: Vec<Vec<bool>> = (0..=n as u32)
            .map(|k| {
                (0..cells)
                    .map(|x| {
                        k >= 1
                            && match puzzle.cells[x] {
                                Cell::Hole => false,
                                Cell::Given(g) => g == k,
                                Cell::Blank => true,
                            }
                            && givens
                                .iter()
                                .all(|(g, dist)| dist[x] <= k.abs_diff(*g) as usize)
                    })
                    .collect()
            })
            .collect();
        let cell_name = |i: usize| format!("x{}_{}", i / puzzle.cols, i % puzzle.cols);
        let built = "hidato items are declared once, with valid names";
        let mut b = ProblemBuilder::new();
        // Cell items first: DLX2 breaks ties of minimum length towards the
        // first item, and cells first gave about half the nodes of numbers
        // first on generated 9x9 puzzles.
        for x in 0..cells {
            if puzzle.cells[x] != Cell::Hole {
                b.primary(&cell_name(x)).expect(built);
            }
        }
        for k in 1..=n {
            b.primary(&format!("n{k}")).expect(built);
        }
        for k in 2..=n {
            b.secondary(&format!("p{k}")).expect(built);
        }
        let mut option_place = Vec::new();
        for k in 1..=n {
            for x in (0..cells).filter(|&x| candidate[k][x]) {
                let head = [format!("n{k}"), cell_name(x)];
                let own = (k >= 2).then(|| format!("p{k}:{x}"));
                if k == n {
                    let mut tokens: Vec<&str> = head.iter().map(String::as_str).collect();
                    tokens.extend(own.as_deref());
                    b.option_str(&tokens).expect(built);
                    option_place.push((k as u32, x, usize::MAX));
                    continue;
                }
                for &y in neighbours[x].iter().filter(|&&y| candidate[k + 1][y]) {
                    let next = format!("p{}:{y}", k + 1);
                    let mut tokens: Vec<&str> = head.iter().map(String::as_str).collect();
                    tokens.extend(own.as_deref());
                    tokens.push(&next);
                    b.option_str(&tokens).expect(built);
                    option_place.push((k as u32, x, y));
                }
            }
        }
        let mut given_at = vec![usize::MAX; n + 1];
        for (x, cell) in puzzle.cells.iter().enumerate() {
            if let Cell::Given(g) = *cell {
                given_at[g as usize] = x;
            }
        }
        HidatoEncoding {
            puzzle,
            problem: b.build().expect(built),
            option_place,
            neighbours,
            given_at,
        }
    }

    /// The numbers placed by a solution, per grid cell (0 where none).
    pub fn values(&self, options: &[usize]) -> Vec<u32> {
        let mut values = vec![0; self.puzzle.cells.len()];
        for &o in options {
            let (k, x, _) = self.option_place[o];
            values[x] = k;
        }
        values
    }

    /// The pruning tests of the module documentation.
    fn may_complete(&self, options: &[usize]) -> bool {
        let n = self.given_at.len() - 1;
        let cells = self.puzzle.cells.len();
        let mut pos = self.given_at.clone();
        for &o in options {
            let (k, x, y) = self.option_place[o];
            pos[k as usize] = x;
            if y != usize::MAX {
                pos[k as usize + 1] = y;
            }
        }
        let mut free: Vec<bool> = self.puzzle.cells.iter().map(|c| *c != Cell::Hole).collect();
        for &x in pos.iter().skip(1) {
            if x != usize::MAX {
                free[x] = false;
            }
        }
        // Components of the free cells (king moves).
        const NONE: usize = usize::MAX;
        let mut component = vec![NONE; cells];
        let mut size: Vec<usize> = Vec::new();
        let mut stack = Vec::new();
        for s in 0..cells {
            if !free[s] || component[s] != NONE {
                continue;
            }
            let id = size.len();
            size.push(0);
            component[s] = id;
            stack.push(s);
            while let Some(x) = stack.pop() {
                size[id] += 1;
                for &y in &self.neighbours[x] {
                    if free[y] && component[y] == NONE {
                        component[y] = id;
                        stack.push(y);
                    }
                }
            }
        }
        if size.is_empty() {
            return true;
        }
        // The runs of unknown numbers: (cell before, cell after, length);
        // NONE for the ends of the path.
        let mut runs = Vec::new();
        let mut last = 0; // last known number (0: none yet)
        for k in 1..=n + 1 {
            if k <= n && pos[k] == NONE {
                continue;
            }
            if k > last + 1 {
                let before = if last == 0 { NONE } else { pos[last] };
                let after = if k > n { NONE } else { pos[k] };
                runs.push((before, after, k - last - 1));
            }
            last = k;
        }
        let mut capacity = vec![0; size.len()];
        let mut seen = vec![usize::MAX; cells];
        let mut marks = Vec::new();
        for (r, &(before, after, length)) in runs.iter().enumerate() {
            // Components next to both ends (to one end for the ends of the
            // path; to any cell when no number is known).
            let touching = |c: usize, end: usize| {
                end == NONE
                    || self.neighbours[end]
                        .iter()
                        .any(|&y| free[y] && component[y] == c)
            };
            let mut fits = false;
            for c in 0..size.len() {
                if touching(c, before) && touching(c, after) {
                    capacity[c] += length;
                    fits |= size[c] >= length;
                }
            }
            if !fits {
                return false;
            }
            // Distance: `after` within `length + 1` king moves of `before`
            // through free cells.
            if before != NONE && after != NONE {
                marks.clear();
                marks.push(before);
                seen[before] = r;
                let mut reached = false;
                'bfs: for _ in 0..length {
                    let frontier = std::mem::take(&mut marks);
                    for x in frontier {
                        for &y in &self.neighbours[x] {
                            if free[y] && seen[y] != r {
                                if self.neighbours[y].contains(&after) {
                                    reached = true;
                                    break 'bfs;
                                }
                                seen[y] = r;
                                marks.push(y);
                            }
                        }
                    }
                }
                if !reached {
                    return false;
                }
            }
        }
        capacity.iter().zip(&size).all(|(c, s)| c >= s)
    }
}

impl Encoded for HidatoEncoding {
    fn problem(&self) -> &Problem {
        &self.problem
    }
    fn decode(&self, options: &[usize]) -> String {
        self.puzzle.format(&self.values(options))
    }
}

/// Hidato's XCC problem defines its solutions; the check of partial ones
/// only prunes branches that cannot complete.
impl SideCondition for HidatoEncoding {
    fn accept_partial(&self, options: &[usize]) -> bool {
        self.may_complete(options)
    }
    fn prunes(&self) -> bool {
        true
    }
    fn filters(&self) -> bool {
        false
    }
}

/// Encodes a hidato puzzle's text.
pub fn encode_text(text: &str) -> Result<Box<dyn Encoded>, PuzzleError> {
    Ok(Box::new(HidatoEncoding::new(parse(text)?)))
}

/// Largest number of rows or columns [`generate`] accepts.
pub const MAX_GENERATE: usize = 20;

/// A random Hamiltonian king path of a `rows x cols` board (no holes), as
/// the number of each cell: a depth-first search that tries the neighbours
/// with the fewest free neighbours first (Warnsdorff's rule, ties broken at
/// random), restarted from a new random cell when it takes too long.
fn random_king_path(rows: usize, cols: usize, rng: &mut Rng) -> Vec<u32> {
    let board = Hidato {
        rows,
        cols,
        cells: vec![Cell::Blank; rows * cols],
    };
    let n = rows * cols;
    let neighbours: Vec<Vec<usize>> = (0..n).map(|i| board.neighbours(i)).collect();
    loop {
        let mut values = vec![0u32; n];
        let mut path = vec![rng.below(n)];
        values[path[0]] = 1;
        // Per depth: the ordered moves not yet tried.
        let mut moves: Vec<Vec<usize>> = Vec::new();
        let mut budget = 20 * n;
        let order = |values: &[u32], at: usize, rng: &mut Rng| {
            let mut next: Vec<(usize, u64, usize)> = neighbours[at]
                .iter()
                .filter(|&&j| values[j] == 0)
                .map(|&j| {
                    let free = neighbours[j].iter().filter(|&&k| values[k] == 0).count();
                    (free, rng.next_u64(), j)
                })
                .collect();
            next.sort_unstable();
            next.into_iter().rev().map(|t| t.2).collect::<Vec<usize>>()
        };
        moves.push(order(&values, path[0], rng));
        while path.len() < n && budget > 0 {
            budget -= 1;
            match moves.last_mut().and_then(Vec::pop) {
                Some(j) => {
                    path.push(j);
                    values[j] = path.len() as u32;
                    moves.push(order(&values, j, rng));
                }
                None => {
                    moves.pop();
                    let Some(j) = path.pop() else { break };
                    values[j] = 0;
                    if path.is_empty() {
                        break;
                    }
                }
            }
        }
        if path.len() == n {
            return values;
        }
    }
}

/// Generates a `rows x cols` hidato puzzle (no holes) with exactly one
/// solution, deterministically from `seed`: a random Hamiltonian king path
/// with every number given, then givens removed in random order, each
/// removal kept only if the solver still proves the solution unique (so no
/// single given can be removed from the result).
pub fn generate(rows: usize, cols: usize, seed: u64) -> Result<String, PuzzleError> {
    if rows == 0 || cols == 0 || rows > MAX_GENERATE || cols > MAX_GENERATE {
        return Err(PuzzleError::new(
            0,
            0,
            format!("hidato rows and columns must be in 1..={MAX_GENERATE}"),
        ));
    }
    let mut rng = Rng::new(seed);
    let values = random_king_path(rows, cols, &mut rng);
    let mut puzzle = Hidato {
        rows,
        cols,
        cells: values.iter().map(|&v| Cell::Given(v)).collect(),
    };
    let mut order: Vec<usize> = (0..rows * cols).collect();
    rng.shuffle(&mut order);
    for cell in order {
        let given = std::mem::replace(&mut puzzle.cells[cell], Cell::Blank);
        let found = super::solve(&HidatoEncoding::new(puzzle.clone()), Some(2), 0);
        if !(found.count == 1 && found.complete) {
            puzzle.cells[cell] = given;
        }
    }
    Ok(puzzle.to_text())
}
