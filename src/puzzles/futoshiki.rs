//! Futoshiki (TAOCP 7.2.2.1, exercise 390): complete an n x n latin square
//! (values 1..n) that keeps the given digits (strong clues) and the
//! inequalities between adjacent cells (weak clues).
//!
//! # Text format
//!
//! Rows of cells alternate with lines of vertical relations:
//!
//! ```text
//! 3 .<. .
//!       ^
//! . .>1 .
//! v
//! . 2 . .
//! . . . .
//! ```
//!
//! (row 1: a 3, then an empty cell smaller than its right neighbour; the
//! last cell of row 1 is smaller than the one below it; in row 2 the second
//! cell exceeds the 1 next to it, and the first cell exceeds the one below.
//! Its unique solution prints as the same layout with `3 1<4 2`, ...)
//!
//! - A row of cells has a cell at every even (0-based) column 0, 2, 4, ...:
//!   a digit `1..=n` (a strong clue) or `.`; at the odd columns between two
//!   cells, `<` (left < right), `>` (left > right) or a space. The first row
//!   fixes n (at most 9); there must be n rows of n cells.
//! - Between two rows, a line may hold `^` (upper < lower) or `v` (upper >
//!   lower) exactly under a cell, spaces elsewhere. It may be blank or
//!   absent. Trailing spaces are ignored, as are blank lines before the
//!   first row and after the last.
//! - Every mistake is reported with its line and column (1-based).
//!   Contradictory clues are not a mistake: the puzzle has no solution.
//!
//! Solutions print in the same format (digits everywhere, the relations
//! kept, relation lines without relations left out).
//!
//! # Encodings
//!
//! Both start from the latin square encoding of [`super::latin`]: primary
//! items `p{r}_{c}`, `r{r}_{v}`, `c{c}_{v}`, and one option per value a cell
//! may take: a given cell only its digit, and (by default) only the values
//! left in the cell's domain by [`Futoshiki::domains`], a propagation of
//! the clues that provably keeps every solution's values (so the solution
//! set is unchanged; it makes 7x7 puzzles that took 350,000 nodes take
//! 1,600). [`Futoshiki::encode_with`] turns it off. Both add, for each weak clue
//! "x < y" between two cells, secondary items that appear only in the
//! options of x and y. A solution picks exactly one option of x (say x = v)
//! and one of y (y = w); the clue's items appear in no other option, so the
//! clue's items are consistent exactly when those two options are
//! compatible on them, and the clues do not interact with each other except
//! through the latin square. So each encoding is right as soon as, for one
//! clue, "option x = v and option y = w are compatible" is equivalent to
//! v < w. Items are named after the clue: `h{r}_{c}_{k}` for the clue
//! between (r, c) and (r, c+1), `v{r}_{c}_{k}` between (r, c) and (r+1, c).
//!
//! **Pairs** ([`FutoshikiEncoding::Pairs`], plain exact cover, no colors):
//! the forbidden pairs are (v, w) with v >= w. Rather than one item per
//! forbidden pair (n(n+1)/2 items), use n threshold items t_1..t_n, where
//! t_k stands for "x >= k and y <= k": option x = v contains t_k for every
//! k <= v, option y = w contains t_k for every k >= w. They share an item
//! iff some k has w <= k <= v, i.e. iff v >= w; an uncolored secondary item
//! may be covered at most once, so the two options are compatible iff
//! v < w. (Every forbidden pair (v, w) is witnessed by t_w, and no allowed
//! pair shares an item.) The seed's pair items p_{u,v} are the same idea
//! with a witness per pair.
//!
//! **Colors** ([`FutoshikiEncoding::Colors`], Algorithm C): items
//! s_1..s_n, where s_k carries the color `1` if x >= k and `0` if x < k.
//! Option x = v gives every s_k its true color: `s_k:1` for k <= v,
//! `s_k:0` for k > v (a "thermometer" of x). Option y = w asserts x < w:
//! it contains only `s_w:0`. The two options share only s_w, and agree on
//! its color iff x's thermometer says 0 there, i.e. iff v < w. (Option
//! y = 1 asks for `s_1:0`, which no option of x gives: y cannot be 1.)
//!
//! Neither relies on the latin square for the clue: both forbid v = w
//! too. (Neighbours share a row or a column, so v = w never happens in a
//! solution anyway, and n - 1 items "x >= k and y <= k - 1" would do;
//! keeping v = w forbidden makes each clue's proof self-contained.)
//!
//! The two encodings prune alike: choosing x = v removes exactly the
//! options y = w with w <= v (pairs: they contain a covered t_k; colors:
//! they ask `s_w:0` where x put 1), and choosing y = w removes exactly the
//! options x = v with v >= w. So Algorithms X and C walk the same search
//! tree (the same nodes); only the cost per node differs.
//!
//! The tests check both, with and without domains, against each other and
//! against a brute-force solver on hundreds of random puzzles.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::xcc::{Collect, Problem, ProblemBuilder, RunConfig, Solver, Task};

use super::rng::Rng;
use super::size::{product, sum, EncodingSize};
use super::{Encoded, PuzzleError};
use crate::run::SideCondition;

/// The largest side: cells are single digits.
pub const MAX_N: usize = 9;

/// How weak clues are encoded (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FutoshikiEncoding {
    /// Uncolored threshold items: plain exact cover (Algorithm X). The
    /// default: the same search tree as `Colors`, a little faster per node.
    #[default]
    Pairs,
    /// Colored threshold items (Algorithm C).
    Colors,
}

impl FromStr for FutoshikiEncoding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pairs" => Ok(FutoshikiEncoding::Pairs),
            "colors" => Ok(FutoshikiEncoding::Colors),
            _ => Err(format!(
                "unknown futoshiki encoding {s:?} (expected pairs or colors)"
            )),
        }
    }
}

impl fmt::Display for FutoshikiEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            FutoshikiEncoding::Pairs => "pairs",
            FutoshikiEncoding::Colors => "colors",
        })
    }
}

/// A futoshiki puzzle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Futoshiki {
    pub n: usize,
    /// Strong clues, row-major; `None` for an empty cell.
    pub digits: Vec<Vec<Option<usize>>>,
    /// `right[r][c]`: how (r, c) compares to (r, c+1) (`Less` for `<`);
    /// n rows of n - 1.
    pub right: Vec<Vec<Option<Ordering>>>,
    /// `down[r][c]`: how (r, c) compares to (r+1, c) (`Less` for `^`);
    /// n - 1 rows of n.
    pub down: Vec<Vec<Option<Ordering>>>,
}

/// A weak clue as "small < big", cells (row, column) 0-based, with the
/// prefix of its items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeakClue {
    pub small: (usize, usize),
    pub big: (usize, usize),
    pub name: String,
}

fn is_cell_char(ch: char) -> bool {
    ch == '.' || ch.is_ascii_digit()
}

impl Futoshiki {
    /// A puzzle without clues.
    pub fn empty(n: usize) -> Futoshiki {
        Futoshiki {
            n,
            digits: vec![vec![None; n]; n],
            right: vec![vec![None; n.saturating_sub(1)]; n],
            down: vec![vec![None; n]; n.saturating_sub(1)],
        }
    }

    /// Parses the text format (see the module documentation).
    pub fn parse(text: &str) -> Result<Futoshiki, PuzzleError> {
        let lines: Vec<Vec<char>> = text
            .lines()
            .map(|l| l.trim_end().chars().collect())
            .collect();
        let Some(first) = lines.iter().position(|l| !l.is_empty()) else {
            return Err(PuzzleError::new(
                1,
                1,
                "empty input: expected rows of cells",
            ));
        };
        let last = lines
            .iter()
            .rposition(|l| !l.is_empty())
            .expect("non-empty");
        let mut puzzle: Option<Futoshiki> = None;
        let mut rows = 0;
        // A relation line seen since the last row of cells: (index, chars).
        let mut pending: Option<usize> = None;
        for (i, line) in lines.iter().enumerate().take(last + 1).skip(first) {
            let number = i + 1;
            if line.first().is_some_and(|&ch| is_cell_char(ch)) {
                let p = puzzle.get_or_insert_with(|| {
                    let n = line.len().div_ceil(2).min(MAX_N + 1);
                    Futoshiki::empty(n)
                });
                let n = p.n;
                if rows == 0 && line.len() > 2 * MAX_N - 1 {
                    return Err(PuzzleError::new(
                        number,
                        2 * MAX_N + 1,
                        format!("too many cells: at most {MAX_N} per row (values are digits)"),
                    ));
                }
                if rows == n {
                    return Err(PuzzleError::new(
                        number,
                        1,
                        format!("too many rows: the first row has {n} cells, so {n} rows"),
                    ));
                }
                if let Some(rel) = pending.take() {
                    p.parse_relations(rel + 1, &lines[rel], rows - 1)?;
                }
                p.parse_row(number, line, rows)?;
                rows += 1;
            } else {
                if rows == 0 {
                    let (column, ch) = first_symbol(line);
                    return Err(PuzzleError::new(
                        number,
                        column,
                        format!(
                            "expected a row of cells (a digit or '.' in column 1), found {ch:?}"
                        ),
                    ));
                }
                if pending.is_some() {
                    let (column, ch) = first_symbol(line);
                    let what = if line.is_empty() {
                        "a blank line".to_string()
                    } else {
                        format!("{ch:?}")
                    };
                    return Err(PuzzleError::new(
                        number,
                        column,
                        format!(
                            "expected a row of cells (a digit or '.' in column 1) after a line \
                             of relations, found {what}"
                        ),
                    ));
                }
                pending = Some(i);
            }
        }
        let p = puzzle.expect("the first non-blank line is a row");
        if let Some(rel) = pending {
            // Not blank: trailing blank lines were skipped.
            let (column, _) = first_symbol(&lines[rel]);
            return Err(PuzzleError::new(
                rel + 1,
                column,
                "a line of relations after the last row",
            ));
        }
        if rows < p.n {
            return Err(PuzzleError::new(
                last + 2,
                1,
                format!(
                    "only {rows} rows: the first row has {} cells, so {} rows",
                    p.n, p.n
                ),
            ));
        }
        Ok(p)
    }

    fn parse_row(&mut self, line: usize, chars: &[char], r: usize) -> Result<(), PuzzleError> {
        let n = self.n;
        for (j, &ch) in chars.iter().enumerate() {
            let column = j + 1;
            if j % 2 == 1 && j + 1 == chars.len() && ch != ' ' {
                return Err(PuzzleError::new(
                    line,
                    column,
                    format!("a row must end with a cell, not {ch:?}"),
                ));
            }
            if j >= 2 * n - 1 {
                return Err(PuzzleError::new(
                    line,
                    column,
                    format!("row longer than the first row ({n} cells)"),
                ));
            }
            if j % 2 == 0 {
                self.digits[r][j / 2] = match ch {
                    '.' => None,
                    '1'..='9' if (ch as usize - '0' as usize) <= n => {
                        Some(ch as usize - '0' as usize)
                    }
                    '0'..='9' => {
                        return Err(PuzzleError::new(
                            line,
                            column,
                            format!("value {ch} out of range 1..{n}"),
                        ))
                    }
                    '<' | '>' | '^' | 'v' => {
                        return Err(PuzzleError::new(
                            line,
                            column,
                            format!(
                                "relation {ch:?} where a cell belongs: cells are at columns \
                                 1, 3, 5, ..., relations between them"
                            ),
                        ))
                    }
                    ' ' => {
                        return Err(PuzzleError::new(
                            line,
                            column,
                            "missing cell: expected a digit or '.'",
                        ))
                    }
                    _ => {
                        return Err(PuzzleError::new(
                            line,
                            column,
                            format!("unknown symbol {ch:?}: expected a digit or '.'"),
                        ))
                    }
                };
            } else {
                self.right[r][j / 2] = match ch {
                    ' ' => None,
                    '<' => Some(Ordering::Less),
                    '>' => Some(Ordering::Greater),
                    '^' | 'v' => {
                        return Err(PuzzleError::new(
                            line,
                            column,
                            format!(
                                "vertical relation {ch:?} on a row of cells: it belongs on a \
                                 line between two rows"
                            ),
                        ))
                    }
                    c if is_cell_char(c) => {
                        return Err(PuzzleError::new(
                            line,
                            column,
                            format!(
                                "cell {ch:?} where a relation belongs: cells are at columns \
                                 1, 3, 5, ..., separated by '<', '>' or a space"
                            ),
                        ))
                    }
                    _ => {
                        return Err(PuzzleError::new(
                            line,
                            column,
                            format!("unknown symbol {ch:?}: expected '<', '>' or a space"),
                        ))
                    }
                };
            }
        }
        if chars.len() < 2 * n - 1 {
            let cells = chars.len().div_ceil(2);
            return Err(PuzzleError::new(
                line,
                chars.len() + 1,
                format!("this row has {cells} cells, the first row has {n}"),
            ));
        }
        Ok(())
    }

    /// Reads the relations between row `r` and row `r + 1`.
    fn parse_relations(
        &mut self,
        line: usize,
        chars: &[char],
        r: usize,
    ) -> Result<(), PuzzleError> {
        let n = self.n;
        for (j, &ch) in chars.iter().enumerate() {
            let column = j + 1;
            if ch == ' ' {
                continue;
            }
            if j >= 2 * n - 1 {
                return Err(PuzzleError::new(
                    line,
                    column,
                    format!("relation line longer than the rows ({n} cells)"),
                ));
            }
            let relation = match ch {
                '^' => Ordering::Less,
                'v' => Ordering::Greater,
                '<' | '>' => {
                    return Err(PuzzleError::new(
                        line,
                        column,
                        format!(
                            "horizontal relation {ch:?} on a line between rows: it belongs \
                             between two cells of a row"
                        ),
                    ))
                }
                c if is_cell_char(c) => {
                    return Err(PuzzleError::new(
                        line,
                        column,
                        format!(
                            "cell {ch:?} on a line of relations (a row of cells starts in \
                             column 1)"
                        ),
                    ))
                }
                _ => {
                    return Err(PuzzleError::new(
                        line,
                        column,
                        format!(
                            "unknown symbol {ch:?}: a line between rows holds only '^', 'v' \
                             and spaces"
                        ),
                    ))
                }
            };
            if j % 2 == 1 {
                return Err(PuzzleError::new(
                    line,
                    column,
                    format!(
                        "vertical relation {ch:?} between two columns: it must stand under a \
                         cell (columns 1, 3, 5, ...)"
                    ),
                ));
            }
            self.down[r][j / 2] = Some(relation);
        }
        Ok(())
    }

    /// Writes the puzzle in its text format.
    pub fn to_text(&self) -> String {
        let grid: Vec<Vec<Option<usize>>> = self.digits.clone();
        self.render(&grid)
    }

    /// Writes a filled grid with this puzzle's relations.
    pub fn render_solution(&self, grid: &[Vec<usize>]) -> String {
        let grid: Vec<Vec<Option<usize>>> = grid
            .iter()
            .map(|row| row.iter().map(|&v| Some(v)).collect())
            .collect();
        self.render(&grid)
    }

    fn render(&self, grid: &[Vec<Option<usize>>]) -> String {
        let n = self.n;
        let mut out = String::new();
        for (r, cells) in grid.iter().enumerate() {
            if r > 0 {
                let mut line = String::new();
                for c in 0..n {
                    if c > 0 {
                        line.push(' ');
                    }
                    line.push(match self.down[r - 1][c] {
                        Some(Ordering::Less) => '^',
                        Some(Ordering::Greater) => 'v',
                        _ => ' ',
                    });
                }
                let line = line.trim_end();
                if !line.is_empty() {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            for (c, cell) in cells.iter().enumerate() {
                if c > 0 {
                    out.push(match self.right[r][c - 1] {
                        Some(Ordering::Less) => '<',
                        Some(Ordering::Greater) => '>',
                        _ => ' ',
                    });
                }
                match cell {
                    Some(v) => out.push_str(&v.to_string()),
                    None => out.push('.'),
                }
            }
            out.push('\n');
        }
        out
    }

    /// The weak clues, each as "small < big".
    pub fn weak_clues(&self) -> Vec<WeakClue> {
        let mut clues = Vec::new();
        let n = self.n;
        for r in 0..n {
            for c in 0..n {
                let neighbours = [
                    (
                        self.right
                            .get(r)
                            .and_then(|row| row.get(c))
                            .copied()
                            .flatten(),
                        (r, c + 1),
                        format!("h{}_{}", r + 1, c + 1),
                    ),
                    (
                        self.down
                            .get(r)
                            .and_then(|row| row.get(c))
                            .copied()
                            .flatten(),
                        (r + 1, c),
                        format!("v{}_{}", r + 1, c + 1),
                    ),
                ];
                for (relation, other, name) in neighbours {
                    match relation {
                        Some(Ordering::Less) => clues.push(WeakClue {
                            small: (r, c),
                            big: other,
                            name,
                        }),
                        Some(Ordering::Greater) => clues.push(WeakClue {
                            small: other,
                            big: (r, c),
                            name,
                        }),
                        _ => {}
                    }
                }
            }
        }
        clues
    }

    /// The XCC problem (see the module documentation).
    pub fn encode(&self, encoding: FutoshikiEncoding) -> FutoshikiEncoded {
        self.encode_with(encoding, true)
    }

    /// The values each cell can take in a solution, as bit masks (bit v
    /// for value v), found by propagating to a fixed point four rules, each
    /// of which keeps "every solution's value of a cell is in its domain"
    /// true, so no solution is lost:
    /// - a given cell holds its digit;
    /// - a cell whose domain is {d} holds d, so no other cell of its row
    ///   or column does;
    /// - if value v fits only one cell of a row (column), that cell holds
    ///   v, since every row (column) holds every value;
    /// - for a clue x < y, x < y <= max D(y) and y > x >= min D(x).
    ///
    /// An empty domain means no solution (the encoding then has a cell
    /// item without options, and the solver finds nothing).
    pub fn domains(&self) -> Vec<Vec<u16>> {
        let n = self.n;
        let full: u16 = ((1u32 << (n + 1)) - 2) as u16;
        let mut d: Vec<Vec<u16>> = (0..n)
            .map(|r| {
                (0..n)
                    .map(|c| self.digits[r][c].map_or(full, |v| 1 << v))
                    .collect()
            })
            .collect();
        let clues = self.weak_clues();
        let lines: Vec<Vec<(usize, usize)>> = (0..n)
            .map(|r| (0..n).map(|c| (r, c)).collect())
            .chain((0..n).map(|c| (0..n).map(|r| (r, c)).collect()))
            .collect();
        loop {
            let before = d.clone();
            for line in &lines {
                for &(r, c) in line {
                    let m = d[r][c];
                    if m.count_ones() == 1 {
                        for &(i, j) in line {
                            if (i, j) != (r, c) {
                                d[i][j] &= !m;
                            }
                        }
                    }
                }
                for v in 1..=n {
                    let bit = 1u16 << v;
                    let mut fits = line.iter().filter(|&&(i, j)| d[i][j] & bit != 0);
                    if let (Some(&(i, j)), None) = (fits.next(), fits.next()) {
                        d[i][j] &= bit;
                    }
                }
            }
            for clue in &clues {
                let (x, y) = (clue.small, clue.big);
                let (dx, dy) = (d[x.0][x.1], d[y.0][y.1]);
                if dx == 0 || dy == 0 {
                    continue;
                }
                let max_y = 15 - dy.leading_zeros() as usize;
                let min_x = dx.trailing_zeros() as usize;
                d[x.0][x.1] &= ((1u32 << max_y) - 1) as u16; // values < max_y
                d[y.0][y.1] &= !(((1u32 << (min_x + 1)) - 1) as u16); // values > min_x
            }
            if d == before {
                return d;
            }
        }
    }

    /// The XCC problem; with `prune`, only the values in [`Self::domains`]
    /// get options (the same solutions, a smaller problem), without it
    /// every value of an empty cell does (the encodings in their plain
    /// form, which the tests check too).
    pub fn encode_with(&self, encoding: FutoshikiEncoding, prune: bool) -> FutoshikiEncoded {
        let n = self.n;
        let clues = self.weak_clues();
        let domains = if prune { Some(self.domains()) } else { None };
        let mut b = ProblemBuilder::new();
        for prefix in ["p", "r", "c"] {
            for i in 1..=n {
                for j in 1..=n {
                    b.primary(&format!("{prefix}{i}_{j}")).expect("fresh item");
                }
            }
        }
        for clue in &clues {
            for k in 1..=n {
                b.secondary(&format!("{}_{k}", clue.name))
                    .expect("fresh item");
            }
        }
        let mut placements = Vec::new();
        for r in 0..n {
            for c in 0..n {
                for v in 1..=n {
                    if self.digits[r][c].is_some_and(|g| g != v) {
                        continue;
                    }
                    if domains.as_ref().is_some_and(|d| d[r][c] & (1 << v) == 0) {
                        continue;
                    }
                    let mut option = vec![
                        format!("p{}_{}", r + 1, c + 1),
                        format!("r{}_{v}", r + 1),
                        format!("c{}_{v}", c + 1),
                    ];
                    for clue in &clues {
                        let name = &clue.name;
                        match encoding {
                            FutoshikiEncoding::Pairs => {
                                // t_k = "small >= k and big <= k".
                                if clue.small == (r, c) {
                                    option.extend((1..=v).map(|k| format!("{name}_{k}")));
                                } else if clue.big == (r, c) {
                                    option.extend((v..=n).map(|k| format!("{name}_{k}")));
                                }
                            }
                            FutoshikiEncoding::Colors => {
                                // s_k colored [small >= k].
                                if clue.small == (r, c) {
                                    option.extend(
                                        (1..=n).map(|k| format!("{name}_{k}:{}", u8::from(v >= k))),
                                    );
                                } else if clue.big == (r, c) {
                                    option.push(format!("{name}_{v}:0"));
                                }
                            }
                        }
                    }
                    let tokens: Vec<&str> = option.iter().map(String::as_str).collect();
                    b.option_str(&tokens).expect("items exist");
                    placements.push((r, c, v));
                }
            }
        }
        FutoshikiEncoded {
            puzzle: self.clone(),
            problem: b.build().expect("n >= 1 gives items"),
            placements,
        }
    }

    /// The size of [`Self::encode`]'s problem, exactly, without building
    /// it (n <= 9, so this is cheap): it runs the encoder's propagation
    /// ([`Self::domains`]) and counts, per value left in a cell's domain,
    /// the option's 3 latin entries plus its clue items (pairs: `v` items
    /// of a clue where the cell is the small one, `n - v + 1` where it is
    /// the big one; colors: `n` and 1). Items: 3n² plus n per weak clue.
    /// The work: the propagation, at most n³ + 1 rounds (each but the last
    /// removes a value) of O(n³ + clues) steps, and the encoder's n³
    /// (cell, value) pairs times its loop over the clues, plus what it
    /// builds.
    pub fn estimate(&self, encoding: FutoshikiEncoding) -> EncodingSize {
        let n = self.n;
        let clues = self.weak_clues();
        let domains = self.domains();
        let (mut options, mut entries) = (0u64, 0u64);
        for (r, row) in domains.iter().enumerate() {
            for (c, &domain) in row.iter().enumerate() {
                for v in (1..=n).filter(|&v| domain & (1 << v) != 0) {
                    options += 1;
                    entries += 3;
                    for clue in &clues {
                        entries += match encoding {
                            FutoshikiEncoding::Pairs if clue.small == (r, c) => v,
                            FutoshikiEncoding::Pairs if clue.big == (r, c) => n - v + 1,
                            FutoshikiEncoding::Colors if clue.small == (r, c) => n,
                            FutoshikiEncoding::Colors if clue.big == (r, c) => 1,
                            _ => 0,
                        } as u64;
                    }
                }
            }
        }
        let (n, clues) = (n as u64, clues.len() as u64);
        let cube = product(&[n, n, n]);
        let propagation = product(&[cube + 1, sum(&[product(&[4, cube]), clues, n * n])]);
        EncodingSize::new(
            sum(&[product(&[3, n, n]), product(&[clues, n])]),
            options,
            entries,
            sum(&[propagation, product(&[cube, clues + 1])]),
        )
    }

    /// Whether `grid` solves the puzzle: a latin square keeping every
    /// strong and weak clue (an independent check of the rules).
    pub fn is_solution(&self, grid: &[Vec<usize>]) -> bool {
        let n = self.n;
        if !super::latin::is_latin(grid, n) {
            return false;
        }
        for (r, row) in grid.iter().enumerate() {
            for (c, &value) in row.iter().enumerate() {
                if self.digits[r][c].is_some_and(|d| d != value) {
                    return false;
                }
                if c + 1 < n && self.right[r][c].is_some_and(|o| value.cmp(&row[c + 1]) != o) {
                    return false;
                }
                if r + 1 < n && self.down[r][c].is_some_and(|o| value.cmp(&grid[r + 1][c]) != o) {
                    return false;
                }
            }
        }
        true
    }
}

/// The (1-based) column and the first non-space character of a line, for
/// messages.
fn first_symbol(line: &[char]) -> (usize, char) {
    line.iter()
        .position(|&c| c != ' ')
        .map_or((1, ' '), |j| (j + 1, line[j]))
}

/// A futoshiki as an XCC problem.
pub struct FutoshikiEncoded {
    puzzle: Futoshiki,
    problem: Problem,
    /// Option index -> (row, column, value), rows and columns 0-based.
    placements: Vec<(usize, usize, usize)>,
}

impl FutoshikiEncoded {
    /// The grid of a solution (option indices).
    pub fn grid(&self, options: &[usize]) -> Vec<Vec<usize>> {
        crate::puzzles::grid_of(self.puzzle.n, &self.placements, options)
    }

    pub fn puzzle(&self) -> &Futoshiki {
        &self.puzzle
    }
}

/// No condition beyond the XCC problem.
impl SideCondition for FutoshikiEncoded {}

impl Encoded for FutoshikiEncoded {
    fn problem(&self) -> &Problem {
        &self.problem
    }
    fn decode(&self, options: &[usize]) -> String {
        self.puzzle.render_solution(&self.grid(options))
    }
}

/// Parses and encodes.
pub fn encode_text(
    text: &str,
    encoding: FutoshikiEncoding,
) -> Result<FutoshikiEncoded, PuzzleError> {
    Ok(Futoshiki::parse(text)?.encode(encoding))
}

/// A random latin square of order n: backtracking cell by cell, trying the
/// values in a random order.
pub fn random_latin_square(n: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    fn fill(grid: &mut [Vec<usize>], k: usize, n: usize, rng: &mut Rng, budget: &mut u32) -> bool {
        if k == n * n {
            return true;
        }
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let (r, c) = (k / n, k % n);
        let mut values: Vec<usize> = (1..=n)
            .filter(|&v| (0..c).all(|j| grid[r][j] != v) && (0..r).all(|i| grid[i][c] != v))
            .collect();
        rng.shuffle(&mut values);
        for v in values {
            grid[r][c] = v;
            if fill(grid, k + 1, n, rng, budget) {
                return true;
            }
        }
        grid[r][c] = 0;
        false
    }
    loop {
        // Restart when a bad start makes the backtracking drag on.
        let mut grid = vec![vec![0; n]; n];
        let mut budget = 20_000;
        if fill(&mut grid, 0, n, rng, &mut budget) {
            return grid;
        }
    }
}

/// The solutions of a puzzle, up to 2 (so 2 means "more than one"), and
/// whether the search was complete (it may stop at `max_nodes`).
fn up_to_two(puzzle: &Futoshiki, max_nodes: Option<u64>) -> (Vec<Vec<Vec<usize>>>, bool) {
    let encoded = puzzle.encode(FutoshikiEncoding::Pairs);
    let mut collect = Collect::default();
    let config = RunConfig {
        max_solutions: Some(2),
        max_nodes,
        ..RunConfig::default()
    };
    let outcome = Solver::new(encoded.problem())
        .run(&Task::root(), &config, &mut collect)
        .expect("the root task is always valid");
    let grids = collect.solutions.iter().map(|s| encoded.grid(s)).collect();
    (grids, outcome.status != crate::xcc::Status::NodeLimit)
}

/// Search-tree nodes allowed for proving that removing a clue keeps the
/// solution unique; beyond that the clue stays (the puzzle stays valid,
/// perhaps not minimal). Keeps 9x9 generation to seconds; the count is
/// deterministic, so the same seed still gives the same puzzle.
pub const REMOVAL_NODE_BUDGET: u64 = 50_000;

/// A valid futoshiki (exactly one solution) of side n, the same for the
/// same seed. A random latin square gives every weak clue; while that is
/// not enough for a unique solution, a strong clue is added where another
/// solution differs; then clues are removed, in random order, whenever the
/// solution provably stays unique (within [`REMOVAL_NODE_BUDGET`] nodes).
pub fn generate(n: usize, seed: u64) -> Result<Futoshiki, PuzzleError> {
    if n == 0 || n > MAX_N {
        return Err(PuzzleError::new(
            1,
            1,
            format!("futoshiki size must be between 1 and {MAX_N}, not {n}"),
        ));
    }
    let mut rng = Rng::new(seed ^ 0x6675_746f_7368_696b);
    let square = random_latin_square(n, &mut rng);
    let mut puzzle = Futoshiki::empty(n);
    for r in 0..n {
        for c in 0..n {
            if c + 1 < n {
                puzzle.right[r][c] = Some(square[r][c].cmp(&square[r][c + 1]));
            }
            if r + 1 < n {
                puzzle.down[r][c] = Some(square[r][c].cmp(&square[r + 1][c]));
            }
        }
    }
    loop {
        let (grids, _) = up_to_two(&puzzle, None);
        debug_assert!(!grids.is_empty(), "the square itself is a solution");
        if grids.len() == 1 {
            break;
        }
        let other = grids
            .iter()
            .find(|g| **g != square)
            .expect("two distinct solutions");
        let differ: Vec<(usize, usize)> = (0..n * n)
            .map(|k| (k / n, k % n))
            .filter(|&(r, c)| other[r][c] != square[r][c])
            .collect();
        let (r, c) = differ[rng.below(differ.len())];
        puzzle.digits[r][c] = Some(square[r][c]);
    }
    // Every clue, then try removing each in a random order.
    #[derive(Clone, Copy)]
    enum Clue {
        Digit(usize, usize),
        Right(usize, usize),
        Down(usize, usize),
    }
    let mut clues = Vec::new();
    for r in 0..n {
        for c in 0..n {
            if puzzle.digits[r][c].is_some() {
                clues.push(Clue::Digit(r, c));
            }
            if c + 1 < n {
                clues.push(Clue::Right(r, c));
            }
            if r + 1 < n {
                clues.push(Clue::Down(r, c));
            }
        }
    }
    rng.shuffle(&mut clues);
    for clue in clues {
        let mut trial = puzzle.clone();
        match clue {
            Clue::Digit(r, c) => trial.digits[r][c] = None,
            Clue::Right(r, c) => trial.right[r][c] = None,
            Clue::Down(r, c) => trial.down[r][c] = None,
        }
        let (grids, complete) = up_to_two(&trial, Some(REMOVAL_NODE_BUDGET));
        if complete && grids.len() == 1 {
            puzzle = trial;
        }
    }
    Ok(puzzle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::puzzles::solve;

    #[test]
    fn parses_the_layout() {
        let text = "3 .<. .\n      ^\n. .>1 .\nv\n. 2 . .\n. . . .\n";
        let p = Futoshiki::parse(text).unwrap();
        assert_eq!(p.n, 4);
        assert_eq!(p.digits[0][0], Some(3));
        assert_eq!(p.digits[1][2], Some(1));
        assert_eq!(p.right[0][1], Some(Ordering::Less));
        assert_eq!(p.down[0][3], Some(Ordering::Less));
        assert_eq!(solve(&p.encode(FutoshikiEncoding::Pairs), None, 0).count, 1);
        assert_eq!(p.right[1][1], Some(Ordering::Greater));
        assert_eq!(p.down[1][0], Some(Ordering::Greater));
        assert_eq!(p.to_text(), text);
        assert_eq!(p.weak_clues().len(), 4);
        let e = Futoshiki::parse("3 . .\n. . . .\n. . .\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 6));
        let e = Futoshiki::parse("3 . <\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 5));
    }

    #[test]
    fn encodings_agree_on_a_small_puzzle() {
        let text = ".<. .\n    v\n. . .\n^\n. . .\n";
        let p = Futoshiki::parse(text).unwrap();
        let a = solve(&p.encode(FutoshikiEncoding::Pairs), None, 100);
        let b = solve(&p.encode(FutoshikiEncoding::Colors), None, 100);
        assert_eq!(a.grids, b.grids);
        assert!(a.count > 0 && a.count < 12);
    }

    #[test]
    fn generated_puzzles_are_valid() {
        for seed in 0..3 {
            let p = generate(4, seed).unwrap();
            let s = solve(&p.encode(FutoshikiEncoding::Colors), Some(2), 0);
            assert_eq!(s.count, 1);
            assert_eq!(generate(4, seed).unwrap(), p);
        }
    }
}
