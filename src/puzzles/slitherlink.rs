//! Slitherlink (TAOCP 7.2.2.1, exercises 410 to 412).
//!
//! A slitherlink diagram is a grid of `rows x cols` cells, some holding a
//! clue `0..=3`. A solution is a set of edges of the grid (between its
//! `(rows + 1) x (cols + 1)` vertices) that touches every vertex twice or
//! not at all, has exactly `k` edges around each cell with clue `k`, and
//! forms a single loop. A *weak* solution (exercise 412) may form any number
//! of loops (none included).
//!
//! # Text format
//!
//! Rows of characters `0`-`3` (a clue) or `.` (no clue), no separators;
//! blank lines are ignored. A solution is drawn on `2 rows + 1` lines of
//! `2 cols + 1` characters: `+` at vertices, `-` and `|` for chosen edges,
//! spaces for absent ones, each clue at its cell's centre (a space for no
//! clue); every line ends in `\n`.
//! A grid has at most [`MAX_GRID_CELLS`] cells.
//!
//! # Weak solutions are colourings
//!
//! Colour every cell *in* or *out*, and count the region outside the grid
//! (the *exterior*) as out. The edges between differently coloured regions
//! form an edge set touching every vertex an even number of times: the
//! number of colour changes around the (up to) four regions at a vertex.
//! That number is 4 exactly for a *checkerboard* (the regions alternate),
//! which needs four distinct cells, so an interior vertex. Conversely, every
//! edge set `E` whose vertices all have even degree comes from exactly one
//! colouring: colour a cell by the parity of the number of `E` edges a walk
//! from the exterior to it crosses, stepping between regions sharing an
//! edge. That parity does not depend on the walk, because two walks differ
//! by closed walks, which are sums (mod 2) of the elementary closed walks
//! around single vertices, and each of those crosses `E` an even number of
//! times (the vertex's degree). So *weak solutions correspond one to one to
//! colourings with no checkerboard vertex in which every clue cell with
//! clue `k` has exactly `k` sides facing the other colour.*
//!
//! # The XCC encoding (weak solutions)
//!
//! Items:
//! - primary `q{r}_{c}` for every clue cell, and primary `V{i}_{j}` for
//!   every vertex (clue items first, see below);
//! - secondary `c{r}_{c}` for every cell, coloured `1` (in) or `0` (out).
//!
//! Options:
//! - for every vertex, every colouring of the (1, 2 or 4) cells around it
//!   except the two checkerboards: the vertex item and each of those cells
//!   with its colour;
//! - for every clue cell with clue `k`, every colouring of the cell and its
//!   neighbours in the grid with exactly `k` of the cell's four sides
//!   between different colours (a side on the border faces the exterior,
//!   which is out): the clue item and those cells with their colours.
//!
//! Why it is right. Every vertex item is covered once, and every cell is
//! around some vertex, so every cell gets a colour, and colours agreeing
//! means one colouring of the grid. It has no checkerboard (no vertex
//! option has one) and meets every clue (each clue item is covered by an
//! option that agrees with the colouring on the cell and its neighbours).
//! Conversely, such a colouring gives each vertex and clue item the one
//! option that matches it, and those options agree. So XCC solutions,
//! valid colourings and weak solutions correspond one to one.
//!
//! Colours rather than edges. Vertex options choosing 0 or 2 of the
//! vertex's edges, with the edges as secondary items coloured 0/1, are also
//! right (and the seed's formulation with edge items "of multiplicity 2" is
//! wrong: an absent edge is covered 0 times), but cell colours carry the
//! inside/outside parity across the whole grid, and that is what makes the
//! pruning below strong. Measured on generated 10x10 diagrams: the edge
//! formulation with the best pruning it allows (closed cycles, bridges of
//! the not-absent edges) took 12,000 to 70,000 nodes and 0.09 to 0.7 s;
//! this one takes under 1,000 nodes and 5 ms. The order of the items
//! matters as much: DLX2 takes the *first* item of minimum length, and with
//! the clue items first the search starts where the clues are (vertices
//! first, it starts in a corner and takes 10,000 to 120,000 nodes).
//!
//! # Full solutions: one loop
//!
//! Let `E` be a weak solution, `m` disjoint simple cycles. The plane minus
//! `E` has `m + 1` regions (Jordan). Two cells sharing an edge not in `E`
//! lie in one region and have one colour; at a vertex not on `E` all four
//! regions have one colour. So the regions are exactly the 4-connected
//! classes of same-coloured cells (the exterior joining the out cells on
//! the border). Hence `E` is a single loop iff the inside cells are
//! non-empty and 4-connected and the outside cells are 4-connected to the
//! exterior. [`Encoded::accept`] checks the loop on the edges directly;
//! [`Encoded::accept_partial`] looks at the cells whose colour the chosen
//! options have fixed and rejects when
//!
//! - (b) some cell known out cannot reach the border through cells not
//!   known in: the final outside is connected to the exterior and made of
//!   cells not known in;
//! - (a) the cells known in do not all lie in one component `K` of the
//!   cells not known out: the final inside is connected, contains them and
//!   is made of cells not known out, so it lies in `K`;
//! - (c) `K` is entirely known in, and colouring `K` in and every other
//!   cell out breaks a clue or leaves some out cell cut off from the
//!   exterior: the inside is then exactly `K` (it is connected, within `K`
//!   and contains all of it), so that colouring is the only completion;
//! - (d) some cell with a positive clue neither lies in `K` nor has a
//!   neighbour in `K`: a side of it is on the loop, so it or a neighbour is
//!   inside, and the inside lies in `K`.
//!
//! None of them rejects a partial solution that extends to a full one.

use super::rng::Rng;
use super::size::{product, sum, EncodingSize};
use super::{Encoded, PuzzleError, MAX_GRID_CELLS};
use crate::run::SideCondition;
use crate::xcc::{Problem, ProblemBuilder};

/// A slitherlink diagram: `clues[r * cols + c]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slitherlink {
    pub rows: usize,
    pub cols: usize,
    pub clues: Vec<Option<u8>>,
}

impl Slitherlink {
    /// Number of horizontal edges; they come first in edge numbering:
    /// `h(i, j) = i * cols + j`, then `v(i, j) = H + i * (cols + 1) + j`.
    pub fn horizontal_edges(&self) -> usize {
        (self.rows + 1) * self.cols
    }
    pub fn edge_count(&self) -> usize {
        self.horizontal_edges() + self.rows * (self.cols + 1)
    }
    pub fn vertex_count(&self) -> usize {
        (self.rows + 1) * (self.cols + 1)
    }
    /// Edge from vertex `(i, j)` to `(i, j + 1)`.
    pub fn h(&self, i: usize, j: usize) -> usize {
        i * self.cols + j
    }
    /// Edge from vertex `(i, j)` to `(i + 1, j)`.
    pub fn v(&self, i: usize, j: usize) -> usize {
        self.horizontal_edges() + i * (self.cols + 1) + j
    }
    /// The two vertices of an edge (as `i * (cols + 1) + j`).
    pub fn ends(&self, e: usize) -> (usize, usize) {
        let w = self.cols + 1;
        if e < self.horizontal_edges() {
            let (i, j) = (e / self.cols, e % self.cols);
            (i * w + j, i * w + j + 1)
        } else {
            let e = e - self.horizontal_edges();
            let (i, j) = (e / w, e % w);
            (i * w + j, (i + 1) * w + j)
        }
    }
    /// The cells on either side of an edge (above and below, or left and
    /// right), `None` outside the grid.
    pub fn edge_cells(&self, e: usize) -> (Option<usize>, Option<usize>) {
        let cols = self.cols;
        if e < self.horizontal_edges() {
            let (i, j) = (e / cols, e % cols);
            (
                (i > 0).then(|| (i - 1) * cols + j),
                (i < self.rows).then_some(i * cols + j),
            )
        } else {
            let e = e - self.horizontal_edges();
            let (i, j) = (e / (cols + 1), e % (cols + 1));
            (
                (j > 0).then(|| i * cols + j - 1),
                (j < cols).then_some(i * cols + j),
            )
        }
    }
    /// Top, bottom, left and right edges of cell `(r, c)`.
    pub fn cell_edges(&self, r: usize, c: usize) -> [usize; 4] {
        [
            self.h(r, c),
            self.h(r + 1, c),
            self.v(r, c),
            self.v(r, c + 1),
        ]
    }
    /// The drawing of an edge set (see the module documentation).
    pub fn format(&self, edges: &[bool]) -> String {
        let mut out = String::new();
        for i in 0..=self.rows {
            for j in 0..self.cols {
                out.push('+');
                out.push(if edges[self.h(i, j)] { '-' } else { ' ' });
            }
            out.push_str("+\n");
            if i == self.rows {
                break;
            }
            for j in 0..=self.cols {
                out.push(if edges[self.v(i, j)] { '|' } else { ' ' });
                if j < self.cols {
                    out.push(match self.clues[i * self.cols + j] {
                        Some(k) => (b'0' + k) as char,
                        None => ' ',
                    });
                }
            }
            out.push('\n');
        }
        out
    }

    /// The diagram as text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for r in 0..self.rows {
            for c in 0..self.cols {
                out.push(match self.clues[r * self.cols + c] {
                    Some(k) => (b'0' + k) as char,
                    None => '.',
                });
            }
            out.push('\n');
        }
        out
    }
}

impl Slitherlink {
    /// The size of [`SlitherlinkEncoding::new`]'s problem, exactly,
    /// without building it: a clue item per clue cell, a vertex item per
    /// vertex, a colour item per cell. Options: 2^m per vertex with m cells
    /// around it (1 at the 4 corners, 2 on the sides, 4 inside), minus the
    /// 2 checkerboards of the inner vertices, each of 1 + m entries; for a
    /// clue k in a cell with d neighbours (4 - d sides on the border),
    /// C(d, k) colourings with the cell out and C(d, 4 - k) with it in,
    /// each of 2 + d entries. The work is linear: at most 16 colourings per
    /// vertex and 32 per clue, 4 steps each, plus what the encoder builds.
    pub fn estimate(&self) -> EncodingSize {
        let (rows, cols) = (self.rows as u64, self.cols as u64);
        let cells = product(&[rows, cols]);
        let vertices = product(&[rows + 1, cols + 1]);
        let inner = product(&[rows.saturating_sub(1), cols.saturating_sub(1)]);
        let sides = product(&[2, sum(&[rows.saturating_sub(1), cols.saturating_sub(1)])]);
        let mut options = sum(&[
            product(&[4, 2]),
            product(&[sides, 4]),
            product(&[inner, 14]),
        ]);
        let mut entries = sum(&[
            product(&[4, 2, 2]),
            product(&[sides, 4, 3]),
            product(&[inner, 14, 5]),
        ]);
        let choose = |d: u64, k: i64| match k {
            0 => 1,
            1 => d,
            2 if d >= 2 => d * (d - 1) / 2,
            3 if d >= 3 => d * (d - 1) * (d - 2) / 6,
            4 if d == 4 => 1,
            _ => 0,
        };
        let mut clues = 0u64;
        for (x, clue) in self.clues.iter().enumerate() {
            let Some(k) = *clue else { continue };
            let (r, c) = (x / self.cols, x % self.cols);
            let d = [r > 0, r + 1 < self.rows, c > 0, c + 1 < self.cols]
                .iter()
                .filter(|&&b| b)
                .count() as u64;
            let k = i64::from(k);
            let colourings = choose(d, k) + choose(d, 4 - k);
            clues += 1;
            options += colourings;
            entries += colourings * (2 + d);
        }
        EncodingSize::new(
            sum(&[clues, vertices, cells]),
            options,
            entries,
            sum(&[product(&[vertices, 16, 4]), product(&[clues, 32, 4])]),
        )
    }
}

/// Reads a slitherlink diagram.
pub fn parse(text: &str) -> Result<Slitherlink, PuzzleError> {
    let mut clues = Vec::new();
    let (mut rows, mut cols) = (0, 0);
    for (l, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let mut count = 0;
        for (k, ch) in line.chars().enumerate() {
            let clue = match ch {
                '0'..='3' => Some(ch as u8 - b'0'),
                '.' => None,
                '4'..='9' => {
                    return Err(PuzzleError::new(
                        l + 1,
                        k + 1,
                        format!("clue {ch} out of range 0..=3"),
                    ))
                }
                _ => {
                    return Err(PuzzleError::new(
                        l + 1,
                        k + 1,
                        format!("unknown symbol {ch:?}: expected 0-3 or '.'"),
                    ))
                }
            };
            if clues.len() == MAX_GRID_CELLS {
                return Err(super::hitori::too_many_cells(l + 1, k + 1));
            }
            if rows > 0 && count == cols {
                return Err(PuzzleError::new(
                    l + 1,
                    k + 1,
                    format!("ragged rows: this row is longer than the first ({cols} cells)"),
                ));
            }
            clues.push(clue);
            count += 1;
        }
        if rows == 0 {
            cols = count;
        } else if count != cols {
            return Err(PuzzleError::new(
                l + 1,
                count + 1,
                format!("ragged rows: this row has {count} cells, the first has {cols}"),
            ));
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(PuzzleError::new(1, 1, "empty puzzle: no rows"));
    }
    Ok(Slitherlink { rows, cols, clues })
}

/// Whether `edges` is a single loop: non-empty, every vertex of degree 0
/// or 2, connected.
fn single_loop(p: &Slitherlink, edges: &[bool]) -> bool {
    let mut degree = vec![0u8; p.vertex_count()];
    let mut adjacency = vec![Vec::new(); p.vertex_count()];
    let mut first = None;
    let mut present = 0;
    for e in (0..p.edge_count()).filter(|&e| edges[e]) {
        let (a, b) = p.ends(e);
        degree[a] += 1;
        degree[b] += 1;
        adjacency[a].push(b);
        adjacency[b].push(a);
        first.get_or_insert(a);
        present += 1;
    }
    let Some(start) = first else {
        return false;
    };
    if degree.iter().any(|&d| d != 0 && d != 2) {
        return false;
    }
    // Connected: a traversal from `start` sees every present edge (a cycle
    // has as many edges as vertices).
    let mut seen = vec![false; p.vertex_count()];
    seen[start] = true;
    let mut stack = vec![start];
    let mut vertices = 0;
    while let Some(a) = stack.pop() {
        vertices += 1;
        for &b in &adjacency[a] {
            if !seen[b] {
                seen[b] = true;
                stack.push(b);
            }
        }
    }
    vertices == present
}

/// Checks an edge set against the rules, independently of any encoding:
/// degrees 0 or 2, clues, and (unless `weak`) a single loop.
pub fn check(p: &Slitherlink, edges: &[bool], weak: bool) -> Result<(), String> {
    if edges.len() != p.edge_count() {
        return Err("wrong number of edges".into());
    }
    let mut degree = vec![0; p.vertex_count()];
    for e in (0..p.edge_count()).filter(|&e| edges[e]) {
        let (a, b) = p.ends(e);
        degree[a] += 1;
        degree[b] += 1;
    }
    if let Some(v) = degree.iter().position(|&d| d != 0 && d != 2) {
        return Err(format!("vertex {v} has degree {}", degree[v]));
    }
    for r in 0..p.rows {
        for c in 0..p.cols {
            if let Some(k) = p.clues[r * p.cols + c] {
                let n = p.cell_edges(r, c).iter().filter(|&&e| edges[e]).count();
                if n != k as usize {
                    return Err(format!("cell ({r}, {c}) has {n} edges, clue {k}"));
                }
            }
        }
    }
    if !weak && !single_loop(p, edges) {
        return Err("the edges are not a single loop".into());
    }
    Ok(())
}

const OUT: u8 = 0;
const IN: u8 = 1;
const UNKNOWN: u8 = 2;

/// A slitherlink diagram encoded as XCC (see the module documentation).
pub struct SlitherlinkEncoding {
    pub puzzle: Slitherlink,
    pub weak: bool,
    problem: Problem,
    /// For each option: the cells it colours, and whether each is inside.
    option_cells: Vec<Vec<(u32, bool)>>,
    /// The clue cells: (cell, clue).
    clue_cells: Vec<(u32, u8)>,
}

impl SlitherlinkEncoding {
    pub fn new(puzzle: Slitherlink, weak: bool) -> SlitherlinkEncoding {
        let p = &puzzle;
        let (rows, cols) = (p.rows as isize, p.cols as isize);
        let cell = |r: isize, c: isize| {
            (r >= 0 && c >= 0 && r < rows && c < cols).then(|| (r * cols + c) as usize)
        };
        let built = "slitherlink items are declared once, with valid names";
        let mut b = ProblemBuilder::new();
        // Clue items first: DLX2 takes the first item of minimum length, and
        // breaking ties towards clues starts the search where the clues
        // are (about 50 times fewer nodes on 10x10 diagrams than vertices
        // first, which starts in a corner).
        for r in 0..p.rows {
            for c in 0..p.cols {
                if p.clues[r * p.cols + c].is_some() {
                    b.primary(&format!("q{r}_{c}")).expect(built);
                }
            }
        }
        for i in 0..=p.rows {
            for j in 0..=p.cols {
                b.primary(&format!("V{i}_{j}")).expect(built);
            }
        }
        let names: Vec<String> = (0..p.rows * p.cols)
            .map(|x| format!("c{}_{}", x / p.cols, x % p.cols))
            .collect();
        for name in &names {
            b.secondary(name).expect(built);
        }
        let mut option_cells: Vec<Vec<(u32, bool)>> = Vec::new();
        let mut add = |b: &mut ProblemBuilder, head: String, cells: Vec<(usize, bool)>| {
            let tokens: Vec<String> = std::iter::once(head)
                .chain(
                    cells
                        .iter()
                        .map(|&(x, inside)| format!("{}:{}", names[x], u8::from(inside))),
                )
                .collect();
            let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
            b.option_str(&tokens).expect(built);
            option_cells.push(cells.iter().map(|&(x, i)| (x as u32, i)).collect());
        };
        for i in 0..=rows {
            for j in 0..=cols {
                // The cells around the vertex: NW, NE, SW, SE.
                let around = [
                    cell(i - 1, j - 1),
                    cell(i - 1, j),
                    cell(i, j - 1),
                    cell(i, j),
                ];
                let real: Vec<usize> = (0..4).filter(|&z| around[z].is_some()).collect();
                for mask in 0..1u32 << real.len() {
                    let mut colour = [false; 4];
                    for (bit, &z) in real.iter().enumerate() {
                        colour[z] = mask >> bit & 1 == 1;
                    }
                    // A checkerboard is the only way to degree 4.
                    if colour[0] == colour[3] && colour[1] == colour[2] && colour[0] != colour[1] {
                        continue;
                    }
                    let cells = real.iter().map(|&z| (around[z].unwrap(), colour[z]));
                    add(&mut b, format!("V{i}_{j}"), cells.collect());
                }
            }
        }
        let mut clue_cells = Vec::new();
        for r in 0..rows {
            for c in 0..cols {
                let x = (r * cols + c) as usize;
                let Some(k) = p.clues[x] else {
                    continue;
                };
                clue_cells.push((x as u32, k));
                let around = [
                    cell(r - 1, c),
                    cell(r + 1, c),
                    cell(r, c - 1),
                    cell(r, c + 1),
                ];
                let real: Vec<usize> = around.iter().flatten().copied().collect();
                let outside = 4 - real.len();
                for own in [false, true] {
                    for mask in 0..1u32 << real.len() {
                        let inside = |bit: usize| mask >> bit & 1 == 1;
                        let differ = (0..real.len()).filter(|&z| inside(z) != own).count()
                            + if own { outside } else { 0 };
                        if differ != usize::from(k) {
                            continue;
                        }
                        let cells = std::iter::once((x, own))
                            .chain(real.iter().enumerate().map(|(z, &y)| (y, inside(z))));
                        add(&mut b, format!("q{r}_{c}"), cells.collect());
                    }
                }
            }
        }
        SlitherlinkEncoding {
            problem: b.build().expect(built),
            option_cells,
            clue_cells,
            weak,
            puzzle,
        }
    }

    /// The cell colours a (partial) solution fixes: 0 out, 1 in,
    /// 2 unknown.
    fn colours(&self, options: &[usize]) -> Vec<u8> {
        let mut colour = vec![UNKNOWN; self.puzzle.clues.len()];
        for &o in options {
            for &(x, inside) in &self.option_cells[o] {
                colour[x as usize] = u8::from(inside);
            }
        }
        colour
    }

    /// The edge set of a complete solution: the edges between cells of
    /// different colours (the exterior is out).
    pub fn edges(&self, options: &[usize]) -> Vec<bool> {
        let colour = self.colours(options);
        let p = &self.puzzle;
        let inside = |x: Option<usize>| x.is_some_and(|x| colour[x] == IN);
        (0..p.edge_count())
            .map(|e| {
                let (a, b) = p.edge_cells(e);
                inside(a) != inside(b)
            })
            .collect()
    }

    /// The 4-neighbours of cell `x`.
    fn neighbours(&self, x: usize) -> impl Iterator<Item = usize> {
        let (rows, cols) = (self.puzzle.rows, self.puzzle.cols);
        let (r, c) = (x / cols, x % cols);
        [
            (r > 0).then(|| x - cols),
            (r + 1 < rows).then(|| x + cols),
            (c > 0).then(|| x - 1),
            (c + 1 < cols).then(|| x + 1),
        ]
        .into_iter()
        .flatten()
    }

    fn on_border(&self, x: usize) -> bool {
        let (rows, cols) = (self.puzzle.rows, self.puzzle.cols);
        x < cols || x >= (rows - 1) * cols || x.is_multiple_of(cols) || x % cols == cols - 1
    }

    /// Marks the cells reachable from `start` through cells `open` allows.
    fn reach(&self, start: &[usize], open: impl Fn(usize) -> bool) -> Vec<bool> {
        let mut seen = vec![false; self.puzzle.clues.len()];
        let mut stack = Vec::new();
        for &x in start {
            if open(x) && !seen[x] {
                seen[x] = true;
                stack.push(x);
            }
        }
        while let Some(x) = stack.pop() {
            for y in self.neighbours(x) {
                if !seen[y] && open(y) {
                    seen[y] = true;
                    stack.push(y);
                }
            }
        }
        seen
    }

    /// The pruning tests of the module documentation, on cell colours.
    fn may_be_one_loop(&self, colour: &[u8]) -> bool {
        let n = colour.len();
        // (b) Every known-out cell reaches the exterior through cells not
        // known in.
        let border: Vec<usize> = (0..n).filter(|&x| self.on_border(x)).collect();
        let outer = self.reach(&border, |x| colour[x] != IN);
        if (0..n).any(|x| colour[x] == OUT && !outer[x]) {
            return false;
        }
        let Some(first) = (0..n).find(|&x| colour[x] == IN) else {
            return true;
        };
        // (a) The known-in cells lie in one component of the cells not
        // known out, which holds the whole inside.
        let inner = self.reach(&[first], |x| colour[x] != OUT);
        if (0..n).any(|x| colour[x] == IN && !inner[x]) {
            return false;
        }
        // (c) A closed inside: that component is all known in, so it is
        // the inside, everything else is out, and the clues must hold.
        if (0..n).all(|x| !inner[x] || colour[x] == IN) {
            let done: Vec<u8> = inner.iter().map(|&i| u8::from(i)).collect();
            return self.clues_hold(&done)
                && self
                    .reach(&border, |x| done[x] == OUT)
                    .iter()
                    .zip(&done)
                    .all(|(&reached, &c)| reached || c == IN);
        }
        // (d) Every cell with a positive clue has the loop on one of its
        // sides: it or a neighbour is inside.
        self.clue_cells.iter().all(|&(x, k)| {
            let x = x as usize;
            k == 0 || inner[x] || self.neighbours(x).any(|y| inner[y])
        })
    }

    /// Whether a complete colouring meets every clue.
    fn clues_hold(&self, colour: &[u8]) -> bool {
        let p = &self.puzzle;
        self.clue_cells.iter().all(|&(x, k)| {
            let x = x as usize;
            let (r, c) = (x / p.cols, x % p.cols);
            let inside = |y: Option<usize>| y.is_some_and(|y| colour[y] == IN);
            let differ = p
                .cell_edges(r, c)
                .iter()
                .filter(|&&e| {
                    let (a, b) = p.edge_cells(e);
                    inside(a) != inside(b)
                })
                .count();
            differ == usize::from(k)
        })
    }
}

impl Encoded for SlitherlinkEncoding {
    fn problem(&self) -> &Problem {
        &self.problem
    }
    fn decode(&self, options: &[usize]) -> String {
        self.puzzle.format(&self.edges(options))
    }
}

impl SideCondition for SlitherlinkEncoding {
    fn accept(&self, options: &[usize]) -> bool {
        self.weak || single_loop(&self.puzzle, &self.edges(options))
    }
    fn accept_partial(&self, options: &[usize]) -> bool {
        self.weak || self.may_be_one_loop(&self.colours(options))
    }
    fn prunes(&self) -> bool {
        !self.weak
    }
}

/// Encodes a slitherlink diagram's text: weak solutions if `weak`, else
/// full ones.
pub fn encode_text(text: &str, weak: bool) -> Result<Box<dyn Encoded>, PuzzleError> {
    Ok(Box::new(SlitherlinkEncoding::new(parse(text)?, weak)))
}

/// Largest number of rows or columns [`generate`] accepts.
pub const MAX_GENERATE: usize = 30;

/// Generates a `rows x cols` diagram with exactly one full solution,
/// deterministically from `seed`.
///
/// The loop is the boundary of a random region of cells, grown one
/// neighbouring cell at a time as long as its boundary stays a single loop.
/// Every cell first gets its clue (the number of loop edges around it),
/// which makes the loop the only solution (the clues then determine every
/// edge); clues are then removed in random order, each removal kept only if
/// the solver still proves the solution unique.
pub fn generate(rows: usize, cols: usize, seed: u64) -> Result<String, PuzzleError> {
    if rows == 0 || cols == 0 || rows > MAX_GENERATE || cols > MAX_GENERATE {
        return Err(PuzzleError::new(
            0,
            0,
            format!("slitherlink rows and columns must be in 1..={MAX_GENERATE}"),
        ));
    }
    let mut rng = Rng::new(seed);
    let n = rows * cols;
    let mut p = Slitherlink {
        rows,
        cols,
        clues: vec![None; n],
    };
    let boundary = |p: &Slitherlink, inside: &[bool]| -> Vec<bool> {
        let at = |r: isize, c: isize| {
            r >= 0
                && c >= 0
                && (r as usize) < rows
                && (c as usize) < cols
                && inside[r as usize * cols + c as usize]
        };
        (0..p.edge_count())
            .map(|e| {
                let (a, b) = p.ends(e);
                let w = cols + 1;
                let (i, j) = ((a / w) as isize, (a % w) as isize);
                if b == a + 1 {
                    at(i - 1, j) != at(i, j)
                } else {
                    at(i, j - 1) != at(i, j)
                }
            })
            .collect()
    };
    let mut inside = vec![false; n];
    inside[rng.below(n)] = true;
    let target = n * (35 + rng.below(30)) / 100;
    let mut size = 1;
    let mut failures = 0;
    while size < target.max(1) && failures < 20 * n {
        let cell = rng.below(n);
        let (r, c) = (cell / cols, cell % cols);
        let touches = (r > 0 && inside[cell - cols])
            || (r + 1 < rows && inside[cell + cols])
            || (c > 0 && inside[cell - 1])
            || (c + 1 < cols && inside[cell + 1]);
        if inside[cell] || !touches {
            failures += 1;
            continue;
        }
        inside[cell] = true;
        if single_loop(&p, &boundary(&p, &inside)) {
            size += 1;
        } else {
            inside[cell] = false;
            failures += 1;
        }
    }
    let edges = boundary(&p, &inside);
    for r in 0..rows {
        for c in 0..cols {
            let k = p.cell_edges(r, c).iter().filter(|&&e| edges[e]).count();
            p.clues[r * cols + c] = Some(k as u8);
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    for cell in order {
        let clue = p.clues[cell].take();
        let found = super::solve(&SlitherlinkEncoding::new(p.clone(), false), Some(2), 0);
        if !(found.count == 1 && found.complete) {
            p.clues[cell] = clue;
        }
    }
    Ok(p.to_text())
}
