//! Solved puzzles drawn as SVG documents, for a browser or a file: a
//! sudoku with its boxes, futoshiki and latin squares with their
//! inequality signs, hitori with its shaded cells, hidato with its path
//! through the numbers and its holes, slitherlink with its loop around the
//! clues, queens on a board.
//!
//! Drawn from the solution's text read back as a [`Solved`] grid, like
//! the terminal pictures of [`super::picture`], so any solution from any
//! source draws the same. Every text that came from a puzzle is escaped:
//! nothing a user typed becomes markup. Each drawn thing carries a class
//! (`cell`, `number`, `shaded`, `hole`, `sign`, `path`, `loop`, `dot`,
//! `clue`, `queen`) so that pages can style it and tests can count it.

use std::fmt::Write;

use super::kinds::Kind;
use super::solved::{Loop, Sign, Solved};

/// The side of a cell, in SVG user units.
const CELL: usize = 40;
/// The space around the grid.
const MARGIN: usize = 10;
/// The gap between futoshiki cells, where the signs go.
const GAP: usize = 20;

/// The SVG document of a solution printed as `text` by a puzzle of
/// `kind`, or `None` if the text is not a solved grid of that kind.
pub fn svg(kind: Kind, text: &str) -> Option<String> {
    Some(draw(Solved::read(kind, text)?))
}

/// The SVG document of a solved grid: about 100 bytes per cell.
pub fn draw(solved: Solved) -> String {
    match solved {
        Solved::Sudoku { box_size, cells } => sudoku(box_size, &cells),
        Solved::Latin { cells } => futoshiki(&cells, &[], &[], "latin"),
        Solved::Futoshiki {
            cells,
            right,
            below,
        } => futoshiki(&cells, &right, &below, "futoshiki"),
        Solved::Hitori { cells } => marked(&cells, "hitori"),
        Solved::Hidato { cells } => marked(&cells, "hidato"),
        Solved::Slitherlink(board) => slitherlink(&board),
        Solved::Queens { board } => queens(&board),
    }
}

/// `text` with the characters that mean markup in XML replaced.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(ch),
        }
    }
    out
}

/// An SVG document being written: its size, its style, then its shapes.
struct Doc {
    out: String,
}

impl Doc {
    fn new(kind: &str, width: usize, height: usize) -> Doc {
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"xccd-puzzle {kind}\" \
             width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">\n\
             <style>\
             .cell{{fill:#fff;stroke:#555;stroke-width:1}}\
             .box{{fill:none;stroke:#000;stroke-width:3}}\
             .shaded{{fill:#222}}\
             .hole{{fill:#ccc}}\
             .dark{{fill:#e8e0d0}}\
             text{{font-family:sans-serif;text-anchor:middle;dominant-baseline:central}}\
             .number{{font-size:20px;fill:#000}}\
             .sign{{font-size:18px;fill:#b00}}\
             .clue{{font-size:20px;fill:#000}}\
             .path{{fill:none;stroke:#6a9fd8;stroke-width:6;stroke-linecap:round;stroke-linejoin:round;opacity:0.6}}\
             .loop{{stroke:#0a5;stroke-width:4;stroke-linecap:round}}\
             .dot{{fill:#000}}\
             .queen{{fill:#222}}\
             </style>\n"
        );
        Doc { out }
    }

    fn rect(&mut self, class: &str, x: usize, y: usize, w: usize, h: usize) {
        let _ = writeln!(
            self.out,
            "<rect class=\"{class}\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\"/>"
        );
    }

    fn text(&mut self, class: &str, x: usize, y: usize, text: &str) {
        let _ = writeln!(
            self.out,
            "<text class=\"{class}\" x=\"{x}\" y=\"{y}\">{}</text>",
            escape(text)
        );
    }

    fn line(&mut self, class: &str, (x1, y1): (usize, usize), (x2, y2): (usize, usize)) {
        let _ = writeln!(
            self.out,
            "<line class=\"{class}\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\"/>"
        );
    }

    fn circle(&mut self, class: &str, (x, y): (usize, usize), r: usize) {
        let _ = writeln!(
            self.out,
            "<circle class=\"{class}\" cx=\"{x}\" cy=\"{y}\" r=\"{r}\"/>"
        );
    }

    fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// The size of a document holding `rows` x `cols` cells `pitch` apart.
fn size(rows: usize, cols: usize, pitch: usize) -> (usize, usize) {
    let span = |n: usize| 2 * MARGIN + n.saturating_sub(1) * pitch + CELL;
    (span(cols), span(rows))
}

/// The top left corner of cell (r, c) when cells are `pitch` apart.
fn corner(r: usize, c: usize, pitch: usize) -> (usize, usize) {
    (MARGIN + c * pitch, MARGIN + r * pitch)
}

/// The centre of cell (r, c) when cells are `pitch` apart.
fn centre(r: usize, c: usize, pitch: usize) -> (usize, usize) {
    let (x, y) = corner(r, c, pitch);
    (x + CELL / 2, y + CELL / 2)
}

/// A cell with its number at each place of the grid, cells `pitch` apart.
fn numbered_cells(doc: &mut Doc, cells: &[Vec<String>], pitch: usize) {
    for (r, row) in cells.iter().enumerate() {
        for (c, value) in row.iter().enumerate() {
            let (x, y) = corner(r, c, pitch);
            doc.rect("cell", x, y, CELL, CELL);
            let (x, y) = centre(r, c, pitch);
            doc.text("number", x, y, value);
        }
    }
}

fn sudoku(m: usize, cells: &[Vec<String>]) -> String {
    let n = cells.len();
    let (w, h) = size(n, n, CELL);
    let mut doc = Doc::new("sudoku", w, h);
    numbered_cells(&mut doc, cells, CELL);
    for br in 0..m {
        for bc in 0..m {
            let (x, y) = corner(br * m, bc * m, CELL);
            doc.rect("box", x, y, m * CELL, m * CELL);
        }
    }
    doc.finish()
}

/// A latin square of numbers, with futoshiki's signs between cells
/// where there are any (a gap between all cells then, for the signs).
fn futoshiki(
    cells: &[Vec<String>],
    right: &[Vec<Option<Sign>>],
    below: &[Vec<Option<Sign>>],
    kind: &str,
) -> String {
    let n = cells.len();
    let signed = !right.is_empty();
    let pitch = if signed { CELL + GAP } else { CELL };
    let (w, h) = size(n, n, pitch);
    let mut doc = Doc::new(kind, w, h);
    numbered_cells(&mut doc, cells, pitch);
    let sign_at = |r: usize, c: usize, s: Sign, across: bool| {
        let (x, y) = centre(r, c, pitch);
        let glyph = match (s, across) {
            (Sign::Less, true) => "<",
            (Sign::Greater, true) => ">",
            (Sign::Less, false) => "∧",
            (Sign::Greater, false) => "∨",
        };
        if across {
            (x + pitch / 2, y, glyph)
        } else {
            (x, y + pitch / 2, glyph)
        }
    };
    for (r, signs) in right.iter().enumerate() {
        for (c, s) in signs.iter().enumerate() {
            if let Some(s) = *s {
                let (x, y, glyph) = sign_at(r, c, s, true);
                doc.text("sign", x, y, glyph);
            }
        }
    }
    for (r, signs) in below.iter().enumerate() {
        for (c, s) in signs.iter().enumerate() {
            if let Some(s) = *s {
                let (x, y, glyph) = sign_at(r, c, s, false);
                doc.text("sign", x, y, glyph);
            }
        }
    }
    doc.finish()
}

/// A grid of numbers whose marked cells are shaded (hitori) or holes
/// (hidato); hidato's path runs through the centres of 1, 2, 3, ...
fn marked(cells: &[Vec<Option<String>>], kind: &str) -> String {
    let (rows, cols) = (cells.len(), cells[0].len());
    let (w, h) = size(rows, cols, CELL);
    let mut doc = Doc::new(kind, w, h);
    let mark = if kind == "hidato" { "hole" } else { "shaded" };
    for (r, row) in cells.iter().enumerate() {
        for (c, value) in row.iter().enumerate() {
            let (x, y) = corner(r, c, CELL);
            doc.rect(
                if value.is_some() { "cell" } else { mark },
                x,
                y,
                CELL,
                CELL,
            );
        }
    }
    if kind == "hidato" {
        path(&mut doc, cells);
    }
    for (r, row) in cells.iter().enumerate() {
        for (c, value) in row.iter().enumerate() {
            if let Some(value) = value {
                let (x, y) = centre(r, c, CELL);
                doc.text("number", x, y, value);
            }
        }
    }
    doc.finish()
}

/// Hidato's path: a polyline through the cells numbered 1, 2, 3, ... as
/// far as the numbers run without a gap.
fn path(doc: &mut Doc, cells: &[Vec<Option<String>>]) {
    let mut at: Vec<Option<(usize, usize)>> = Vec::new();
    for (r, row) in cells.iter().enumerate() {
        for (c, value) in row.iter().enumerate() {
            let Some(k) = value.as_deref().and_then(|v| v.parse::<usize>().ok()) else {
                continue;
            };
            if k == 0 || k > rows_times_cols(cells) {
                continue;
            }
            if at.len() < k {
                at.resize(k, None);
            }
            at[k - 1] = Some(centre(r, c, CELL));
        }
    }
    let points: Vec<String> = at
        .iter()
        .map_while(|p| p.map(|(x, y)| format!("{x},{y}")))
        .collect();
    if points.len() > 1 {
        let _ = writeln!(
            doc.out,
            "<polyline class=\"path\" points=\"{}\"/>",
            points.join(" ")
        );
    }
}

fn rows_times_cols(cells: &[Vec<Option<String>>]) -> usize {
    cells.iter().map(Vec::len).sum()
}

/// Slitherlink: a dot at each vertex, the clues in their cells, the
/// loop's edges as lines.
fn slitherlink(board: &Loop) -> String {
    let (w, h) = (
        2 * MARGIN + board.cols * CELL,
        2 * MARGIN + board.rows * CELL,
    );
    let mut doc = Doc::new("slitherlink", w, h);
    let vertex = |i: usize, j: usize| (MARGIN + j * CELL, MARGIN + i * CELL);
    for (i, row) in board.clue.iter().enumerate() {
        for (j, &clue) in row.iter().enumerate() {
            if clue.is_ascii_digit() {
                let (x, y) = vertex(i, j);
                doc.text("clue", x + CELL / 2, y + CELL / 2, &clue.to_string());
            }
        }
    }
    for i in 0..=board.rows {
        for j in 0..=board.cols {
            if board.right_of(i, j) {
                doc.line("loop", vertex(i, j), vertex(i, j + 1));
            }
            if board.below(i, j) {
                doc.line("loop", vertex(i, j), vertex(i + 1, j));
            }
        }
    }
    for i in 0..=board.rows {
        for j in 0..=board.cols {
            doc.circle("dot", vertex(i, j), 3);
        }
    }
    doc.finish()
}

/// Queens on a chequered board, each a disc.
fn queens(board: &[Vec<bool>]) -> String {
    let n = board.len();
    let (w, h) = size(n, n, CELL);
    let mut doc = Doc::new("queens", w, h);
    for (r, row) in board.iter().enumerate() {
        for (c, &queen) in row.iter().enumerate() {
            let (x, y) = corner(r, c, CELL);
            doc.rect(
                if (r + c) % 2 == 1 {
                    "cell dark"
                } else {
                    "cell"
                },
                x,
                y,
                CELL,
                CELL,
            );
            if queen {
                doc.circle("queen", centre(r, c, CELL), CELL / 3);
            }
        }
    }
    doc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_leaves_no_markup() {
        assert_eq!(
            escape("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &apos;b&apos;&lt;/script&gt;"
        );
    }

    #[test]
    fn a_token_that_looks_like_markup_is_drawn_as_text() {
        let doc = svg(Kind::Latin, "<b> x\nx <b>\n").unwrap();
        assert!(!doc.contains("<b>"), "{doc}");
        assert_eq!(doc.matches("&lt;b&gt;").count(), 2);
    }

    #[test]
    fn hidato_path_runs_through_the_numbers_in_order() {
        let doc = svg(Kind::Hidato, "1 2\n# 3\n").unwrap();
        assert!(doc.contains("points=\"30,30 70,30 70,70\""), "{doc}");
        assert_eq!(doc.matches("class=\"hole\"").count(), 1);
    }
}
