//! Slitherlink: brute force over edge sets, random diagrams, the text
//! format (writer and reader) and the library's drawing of a solution.
//!
//! The rules (TAOCP 7.2.2.1, exercises 410-412, as documented in
//! `src/puzzles/slitherlink.rs`): a set of edges of the grid touching every
//! vertex twice or not at all, with exactly k edges around each cell with
//! clue k, forming a single loop (so not empty); a *weak* solution may
//! form any number of loops, none included.

use std::collections::BTreeSet;

use super::rng::Rng;

/// Edge numbering of the brute force (its own): horizontal edge (i, j)
/// from vertex (i, j) to (i, j+1) is `i * cols + j`; vertical edge (i, j)
/// from (i, j) to (i+1, j) is `H + i * (cols + 1) + j`.
pub struct Grid {
    pub rows: usize,
    pub cols: usize,
}

impl Grid {
    pub fn h(&self, i: usize, j: usize) -> usize {
        i * self.cols + j
    }
    pub fn v(&self, i: usize, j: usize) -> usize {
        (self.rows + 1) * self.cols + i * (self.cols + 1) + j
    }
    pub fn edges(&self) -> usize {
        (self.rows + 1) * self.cols + self.rows * (self.cols + 1)
    }
    pub fn at_vertex(&self, i: usize, j: usize) -> Vec<usize> {
        let mut e = Vec::new();
        if j > 0 {
            e.push(self.h(i, j - 1));
        }
        if j < self.cols {
            e.push(self.h(i, j));
        }
        if i > 0 {
            e.push(self.v(i - 1, j));
        }
        if i < self.rows {
            e.push(self.v(i, j));
        }
        e
    }
    pub fn around(&self, r: usize, c: usize) -> [usize; 4] {
        [
            self.h(r, c),
            self.h(r + 1, c),
            self.v(r, c),
            self.v(r, c + 1),
        ]
    }
    /// Whether the edge set is one loop (degrees assumed 0 or 2).
    pub fn one_loop(&self, on: &[bool]) -> bool {
        let w = self.cols + 1;
        let nv = (self.rows + 1) * w;
        let mut adj = vec![Vec::new(); nv];
        let mut count = 0;
        for i in 0..=self.rows {
            for j in 0..=self.cols {
                if j < self.cols && on[self.h(i, j)] {
                    adj[i * w + j].push(i * w + j + 1);
                    adj[i * w + j + 1].push(i * w + j);
                    count += 1;
                }
                if i < self.rows && on[self.v(i, j)] {
                    adj[i * w + j].push(i * w + j + w);
                    adj[i * w + j + w].push(i * w + j);
                    count += 1;
                }
            }
        }
        let Some(s) = (0..nv).find(|&v| !adj[v].is_empty()) else {
            return false;
        };
        let mut seen = vec![false; nv];
        seen[s] = true;
        let mut stack = vec![s];
        let mut reached = 0;
        while let Some(a) = stack.pop() {
            reached += 1;
            for &b in &adj[a] {
                if !seen[b] {
                    seen[b] = true;
                    stack.push(b);
                }
            }
        }
        reached == count
    }
}

/// Brute force: vertices in row-major order, each choosing its right and
/// down edges (its left and up edges are already set), checking its degree
/// once all its edges are set and the clues as their edges get set. Each
/// solution is the set of edges (numbered as in [`Grid`]).
pub fn slither_brute(
    rows: usize,
    cols: usize,
    clues: &[Option<u8>],
    weak: bool,
) -> BTreeSet<Vec<bool>> {
    let g = Grid { rows, cols };
    let mut out = BTreeSet::new();
    let mut on = vec![false; g.edges()];
    let mut set = vec![false; g.edges()];
    fn clues_ok(g: &Grid, clues: &[Option<u8>], on: &[bool], set: &[bool]) -> bool {
        (0..g.rows * g.cols).all(|cell| match clues[cell] {
            None => true,
            Some(k) => {
                let e = g.around(cell / g.cols, cell % g.cols);
                let yes = e.iter().filter(|&&x| set[x] && on[x]).count();
                let open = e.iter().filter(|&&x| !set[x]).count();
                yes <= k as usize && yes + open >= k as usize
            }
        })
    }
    #[allow(clippy::too_many_arguments)]
    fn go(
        v: usize,
        g: &Grid,
        clues: &[Option<u8>],
        weak: bool,
        on: &mut Vec<bool>,
        set: &mut Vec<bool>,
        out: &mut BTreeSet<Vec<bool>>,
    ) {
        let w = g.cols + 1;
        if v == (g.rows + 1) * w {
            if weak || g.one_loop(on) {
                out.insert(on.clone());
            }
            return;
        }
        let (i, j) = (v / w, v % w);
        let right = (j < g.cols).then(|| g.h(i, j));
        let down = (i < g.rows).then(|| g.v(i, j));
        for mask in 0..4 {
            let (a, b) = (mask & 1 == 1, mask & 2 == 2);
            if (a && right.is_none()) || (b && down.is_none()) {
                continue;
            }
            for (e, x) in [(right, a), (down, b)] {
                if let Some(e) = e {
                    on[e] = x;
                    set[e] = true;
                }
            }
            let degree = g.at_vertex(i, j).iter().filter(|&&e| on[e]).count();
            if (degree == 0 || degree == 2) && clues_ok(g, clues, on, set) {
                go(v + 1, g, clues, weak, on, set, out);
            }
            for e in [right, down].into_iter().flatten() {
                on[e] = false;
                set[e] = false;
            }
        }
    }
    go(0, &g, clues, weak, &mut on, &mut set, &mut out);
    out
}

/// The text format: a row of characters per row, a clue `0`-`3` or `.`.
pub fn slither_text(rows: usize, cols: usize, clues: &[Option<u8>]) -> String {
    let mut s = String::new();
    for r in 0..rows {
        for c in 0..cols {
            s.push(match clues[r * cols + c] {
                Some(k) => (b'0' + k) as char,
                None => '.',
            });
        }
        s.push('\n');
    }
    s
}

/// Clues from the boundary of a random set of cells (so a weak solution
/// exists when that boundary has no crossing), some of them dropped.
pub fn random_slither(rng: &mut Rng) -> (usize, usize, Vec<Option<u8>>) {
    let rows = 1 + rng.below(4);
    let cols = 1 + rng.below(4);
    let inside: Vec<bool> = (0..rows * cols).map(|_| rng.chance(40)).collect();
    let keep = [30, 50, 70][rng.below(3)];
    let clues = (0..rows * cols)
        .map(|cell| {
            if !rng.chance(keep) {
                return None;
            }
            if rng.chance(10) {
                return Some(rng.below(4) as u8);
            }
            let (r, c) = (cell / cols, cell % cols);
            let at = |r: i64, c: i64| {
                r >= 0
                    && c >= 0
                    && r < rows as i64
                    && c < cols as i64
                    && inside[r as usize * cols + c as usize]
            };
            let (r, c) = (r as i64, c as i64);
            let k = [(-1, 0), (1, 0), (0, -1), (0, 1)]
                .iter()
                .filter(|(dr, dc)| at(r + dr, c + dc) != at(r, c))
                .count();
            Some(k.min(3) as u8)
        })
        .collect();
    (rows, cols, clues)
}

/// Reads the text format: non-blank lines (trailing whitespace ignored)
/// of `0`-`3` and `.`, all as long.
pub fn read_slither(text: &str) -> (usize, usize, Vec<Option<u8>>) {
    let rows: Vec<Vec<Option<u8>>> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.chars()
                .map(|ch| match ch {
                    '.' => None,
                    '0'..='3' => Some(ch as u8 - b'0'),
                    other => panic!("unexpected {other:?} in a slitherlink"),
                })
                .collect()
        })
        .collect();
    let cols = rows[0].len();
    assert!(
        rows.iter().all(|r| r.len() == cols),
        "ragged rows: {text:?}"
    );
    (rows.len(), cols, rows.concat())
}

/// A solution as the library draws it: 2 rows + 1 lines of 2 cols + 1
/// characters, `+` at vertices, `-` and `|` for chosen edges, spaces for
/// the others, each clue at its cell's centre (a space for none), every
/// line ending in `\n` (trailing spaces kept).
pub fn render_slither(rows: usize, cols: usize, clues: &[Option<u8>], on: &[bool]) -> String {
    let g = Grid { rows, cols };
    let mut out = String::new();
    for i in 0..=rows {
        for j in 0..cols {
            out.push('+');
            out.push(if on[g.h(i, j)] { '-' } else { ' ' });
        }
        out.push_str("+\n");
        if i == rows {
            break;
        }
        for j in 0..=cols {
            out.push(if on[g.v(i, j)] { '|' } else { ' ' });
            if j < cols {
                out.push(match clues[i * cols + j] {
                    Some(k) => (b'0' + k) as char,
                    None => ' ',
                });
            }
        }
        out.push('\n');
    }
    out
}
