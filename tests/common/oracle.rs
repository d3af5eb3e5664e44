//! The oracle: random small puzzles of every kind in the kinds' text
//! formats, and all their solutions by brute force, printed exactly as the
//! library's decoders print them (`Encoded::decode` in
//! `src/puzzles/<kind>.rs`), so no normalisation is needed to compare.
//!
//! Nothing here calls into `xccd`: the texts are read by the readers of the
//! per-kind modules, solved by their brute-force solvers and printed by
//! their renderers.

use std::collections::BTreeSet;
use std::fmt;

use xccd::puzzles::{EncodeOptions, FutoshikiEncoding, Kind};

use super::futoshiki::{consistent_futoshiki, random_futoshiki, Fut};
use super::hidato::{
    add_givens, hidato_brute_up_to, hidato_text, random_board, random_path, read_hidato,
    render_hidato,
};
use super::hitori::{hitori_brute, hitori_text, random_hitori, read_hitori, render_hitori};
use super::latin::{brute, brute_latin, latin_text, random_square, read_latin, render_latin};
use super::queens::{brute_queens, read_queens, render_queens};
use super::rng::Rng;
use super::slitherlink::{
    random_slither, read_slither, render_slither, slither_brute, slither_text,
};
use super::sudoku::{brute_sudoku, random_solved, read_sudoku, render_sudoku, sudoku_text};

/// [`random_case`] draws again while a puzzle has more solutions than this
/// (for hitori and slitherlink, counting the weak ones, which include the
/// full ones).
pub const MAX_SOLUTIONS: usize = 300;

/// A puzzle: its kind, its text (in the kind's text format) and how it is
/// to be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub kind: Kind,
    pub text: String,
    /// Hitori and slitherlink: weak solutions (no connectivity, any number
    /// of loops). Always false for the other kinds.
    pub weak: bool,
    /// Futoshiki: the encoding of the inequalities. `Pairs` for the other
    /// kinds.
    pub encoding: FutoshikiEncoding,
}

impl Case {
    pub fn new(kind: Kind, text: impl Into<String>) -> Case {
        Case {
            kind,
            text: text.into(),
            weak: false,
            encoding: FutoshikiEncoding::Pairs,
        }
    }

    /// The library's encode options for this case.
    pub fn options(&self) -> EncodeOptions {
        EncodeOptions {
            weak: self.weak,
            encoding: self.encoding,
        }
    }

    /// The same puzzle with the other setting that matters for its kind:
    /// weak and full for hitori and slitherlink, the other encoding for
    /// futoshiki; `None` for the other kinds.
    pub fn variant(&self) -> Option<Case> {
        match self.kind {
            Kind::Hitori | Kind::Slitherlink => Some(Case {
                weak: !self.weak,
                ..self.clone()
            }),
            Kind::Futoshiki => Some(Case {
                encoding: match self.encoding {
                    FutoshikiEncoding::Pairs => FutoshikiEncoding::Colors,
                    FutoshikiEncoding::Colors => FutoshikiEncoding::Pairs,
                },
                ..self.clone()
            }),
            _ => None,
        }
    }

    /// A short label of the setting: "weak"/"full", "pairs"/"colors", or
    /// the kind's name.
    pub fn setting(&self) -> String {
        match self.kind {
            Kind::Hitori | Kind::Slitherlink => if self.weak { "weak" } else { "full" }.to_string(),
            Kind::Futoshiki => match self.encoding {
                FutoshikiEncoding::Pairs => "pairs",
                FutoshikiEncoding::Colors => "colors",
            }
            .to_string(),
            kind => kind_name(kind).to_string(),
        }
    }
}

/// The kind's name as the command line spells it.
pub fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Latin => "latin",
        Kind::Futoshiki => "futoshiki",
        Kind::Hitori => "hitori",
        Kind::Hidato => "hidato",
        Kind::Slitherlink => "slitherlink",
        Kind::Sudoku => "sudoku",
        Kind::Queens => "queens",
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} ({}), text {:?}:",
            kind_name(self.kind),
            self.setting(),
            self.text
        )?;
        write!(f, "{}", self.text)
    }
}

/// A random small puzzle of the given kind (brute force in well under
/// 50 ms, at most [`MAX_SOLUTIONS`] solutions, a mix of none, one and
/// several), covering the edge cases of each kind's encoder: 1x1 and
/// bare-order latin squares, contradictory givens, futoshiki with
/// inequalities only, 4x4 and 9x9 sudoku in every spelling, hitori with
/// many duplicates and long strips (two-digit numbers), hidato with holes,
/// blank slitherlink grids of 1x1 to 2x3. Hitori and slitherlink pick
/// `weak` at random, futoshiki the encoding.
pub fn random_case(kind: Kind, rng: &mut Rng) -> Case {
    loop {
        let case = draw(kind, rng);
        let widest = Case {
            weak: true,
            ..case.clone()
        };
        let probe = if matches!(kind, Kind::Hitori | Kind::Slitherlink) {
            &widest
        } else {
            &case
        };
        if brute_solutions_up_to(probe, MAX_SOLUTIONS + 1).len() <= MAX_SOLUTIONS {
            return case;
        }
    }
}

fn draw(kind: Kind, rng: &mut Rng) -> Case {
    let mut case = Case::new(kind, String::new());
    case.text = match kind {
        Kind::Latin => draw_latin(rng),
        Kind::Futoshiki => {
            case.encoding = if rng.chance(50) {
                FutoshikiEncoding::Pairs
            } else {
                FutoshikiEncoding::Colors
            };
            draw_futoshiki(rng)
        }
        Kind::Sudoku => draw_sudoku(rng),
        Kind::Queens => {
            let n = 1 + rng.below(8);
            match rng.below(4) {
                0 => format!(" {n} \n"),
                1 => format!("\n{n}"),
                _ => format!("{n}\n"),
            }
        }
        Kind::Hitori => {
            case.weak = rng.chance(50);
            draw_hitori(rng)
        }
        Kind::Hidato => draw_hidato(rng),
        Kind::Slitherlink => {
            case.weak = rng.chance(50);
            draw_slitherlink(rng)
        }
    };
    case
}

fn draw_latin(rng: &mut Rng) -> String {
    if rng.chance(10) {
        // All squares of order n (1, 2 or 12 of them).
        let n = 1 + rng.below(3);
        return if rng.chance(50) {
            format!("{n}\n")
        } else {
            format!("  {n}")
        };
    }
    let n = rng.pick(&[1, 2, 3, 3, 4, 4, 4, 5, 5, 5]);
    let mut givens = vec![vec![0; n]; n];
    if rng.chance(30) {
        // Random givens: often contradictory.
        let density = if n == 5 { 35 } else { 20 };
        for row in givens.iter_mut() {
            for v in row.iter_mut() {
                if rng.chance(density) {
                    *v = 1 + rng.below(n);
                }
            }
        }
    } else {
        // Givens of a random square: at least one solution.
        let square = random_square(n, rng);
        let keep = [0, 0, 0, 5, 15, 35][n] + rng.below(40);
        for r in 0..n {
            for c in 0..n {
                if rng.chance(keep) {
                    givens[r][c] = square[r][c];
                }
            }
        }
    }
    latin_text(&givens, rng)
}

fn draw_futoshiki(rng: &mut Rng) -> String {
    let n = rng.pick(&[1, 2, 3, 3, 4, 4, 4, 5, 5, 5]);
    let mut f = if rng.chance(60) {
        consistent_futoshiki(n, rng)
    } else {
        random_futoshiki(n, rng)
    };
    if rng.chance(20) {
        // Inequalities only.
        f.digits = vec![vec![0; n]; n];
    }
    f.text(rng)
}

fn draw_sudoku(rng: &mut Rng) -> String {
    if rng.chance(25) {
        // 9x9: a solved grid with a few cells blanked.
        let mut grid = random_solved(3, rng);
        let blanks = 1 + rng.below(30);
        for _ in 0..blanks {
            grid[rng.below(9)][rng.below(9)] = 0;
        }
        return sudoku_text(3, &grid, rng);
    }
    let mut givens = vec![vec![0; 4]; 4];
    if rng.chance(35) {
        // Random givens: often contradictory.
        for row in givens.iter_mut() {
            for v in row.iter_mut() {
                if rng.chance(25) {
                    *v = 1 + rng.below(4);
                }
            }
        }
    } else {
        // Givens of a solved 4x4 (none at all: its 288 solutions).
        let solved = random_solved(2, rng);
        let keep = rng.below(70);
        for r in 0..4 {
            for c in 0..4 {
                if rng.chance(keep) {
                    givens[r][c] = solved[r][c];
                }
            }
        }
    }
    sudoku_text(2, &givens, rng)
}

/// Random harmless spacing in a text of whitespace-separated tokens.
fn vary_spacing(text: &str, rng: &mut Rng) -> String {
    let mut out = String::new();
    if rng.chance(10) {
        out.push('\n');
    }
    for line in text.lines() {
        if rng.chance(20) {
            out.push(' ');
        }
        for (k, token) in line.split(' ').enumerate() {
            if k > 0 {
                out.push_str(if rng.chance(20) { "  " } else { " " });
            }
            out.push_str(token);
        }
        if rng.chance(10) {
            out.push(' ');
        }
        out.push('\n');
    }
    out
}

fn draw_hitori(rng: &mut Rng) -> String {
    let (rows, cols, numbers) = match rng.below(10) {
        0..=5 => random_hitori(rng),
        6 | 7 => {
            // Many duplicates: two or three numbers only.
            let (rows, cols) = (2 + rng.below(4), 2 + rng.below(4));
            let top = (2 + rng.below(2)).min(rows.max(cols));
            let numbers = (0..rows * cols)
                .map(|_| 1 + rng.below(top) as u32)
                .collect();
            (rows, cols, numbers)
        }
        _ => {
            // A strip of up to 12 cells: numbers of two digits.
            let len = 2 + rng.below(11);
            let numbers = (0..len).map(|_| 1 + rng.below(len) as u32).collect();
            if rng.chance(50) {
                (1, len, numbers)
            } else {
                (len, 1, numbers)
            }
        }
    };
    vary_spacing(&hitori_text(rows, cols, &numbers), rng)
}

fn draw_hidato(rng: &mut Rng) -> String {
    let (rows, cols) = loop {
        let (rows, cols) = (1 + rng.below(4), 1 + rng.below(4));
        if rows * cols <= 12 || rng.chance(30) {
            break (rows, cols);
        }
    };
    let mut board = random_board(rows, cols, rng);
    let percent = rng.pick(&[10, 25, 40, 60, 100]);
    // Givens from a random solution (most puzzles), or at random.
    match random_path(cols, &board, rng).filter(|_| rng.chance(75)) {
        Some(path) => {
            for (cell, &k) in board.iter_mut().zip(&path) {
                if cell.is_some() && rng.chance(percent) {
                    *cell = Some(k);
                }
            }
        }
        None => add_givens(rows, cols, &mut board, percent, false, rng),
    }
    vary_spacing(&hidato_text(rows, cols, &board), rng)
}

fn draw_slitherlink(rng: &mut Rng) -> String {
    let (rows, cols, clues) = if rng.chance(25) {
        // A blank grid: every loop (or set of loops) of a small grid.
        let (rows, cols) = (1 + rng.below(2), 1 + rng.below(3));
        (rows, cols, vec![None; rows * cols])
    } else {
        random_slither(rng)
    };
    let text = slither_text(rows, cols, &clues);
    if rng.chance(10) {
        format!("\n{text}\n")
    } else {
        text
    }
}

/// Every solution of the case, each printed exactly as the library's
/// decoder prints it.
pub fn brute_solutions(case: &Case) -> BTreeSet<String> {
    brute_solutions_up_to(case, usize::MAX)
}

/// [`brute_solutions`], stopping after `cap` solutions (to bound the work
/// on puzzles with very many).
pub fn brute_solutions_up_to(case: &Case, cap: usize) -> BTreeSet<String> {
    let text = case.text.as_str();
    match case.kind {
        Kind::Latin => {
            let (n, givens) = read_latin(text);
            brute_latin(n, &givens, cap)
                .iter()
                .map(|g| render_latin(g))
                .collect()
        }
        Kind::Futoshiki => {
            let f = Fut::read(text);
            brute(f.n, &f.digits, &f.less(), cap)
                .iter()
                .map(|g| f.render(g))
                .collect()
        }
        Kind::Sudoku => {
            let (m, givens) = read_sudoku(text);
            brute_sudoku(m, &givens, cap)
                .iter()
                .map(|g| render_sudoku(g))
                .collect()
        }
        Kind::Queens => brute_queens(read_queens(text))
            .iter()
            .take(cap)
            .map(|q| render_queens(q))
            .collect(),
        Kind::Hitori => {
            let (rows, cols, numbers) = read_hitori(text);
            hitori_brute(rows, cols, &numbers, case.weak)
                .iter()
                .take(cap)
                .map(|black| render_hitori(rows, cols, &numbers, black))
                .collect()
        }
        Kind::Hidato => {
            let (rows, cols, board) = read_hidato(text);
            hidato_brute_up_to(rows, cols, &board, cap)
                .iter()
                .map(|values| render_hidato(rows, cols, &board, values))
                .collect()
        }
        Kind::Slitherlink => {
            let (rows, cols, clues) = read_slither(text);
            slither_brute(rows, cols, &clues, case.weak)
                .iter()
                .take(cap)
                .map(|on| render_slither(rows, cols, &clues, on))
                .collect()
        }
    }
}
