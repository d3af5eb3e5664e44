//! Each puzzle kind's input format for people: the grammar, an example,
//! what each symbol means, the sizes allowed and the options that change
//! the encoding. `xccd puzzle solve KIND --help` prints these texts, and
//! docs/puzzles.md holds the same descriptions with examples that the doc
//! test runs. The parsers (one module per kind) are the authority; their
//! module documentation says why the encodings are right.

use super::kinds::Kind;

/// The format of `kind`'s puzzle text, as `--help` prints it.
pub fn format(kind: Kind) -> &'static str {
    match kind {
        Kind::Latin => LATIN,
        Kind::Futoshiki => FUTOSHIKI,
        Kind::Hitori => HITORI,
        Kind::Hidato => HIDATO,
        Kind::Slitherlink => SLITHERLINK,
        Kind::Sudoku => SUDOKU,
        Kind::Queens => QUEENS,
    }
}

pub const LATIN: &str = "\
Latin squares: every value once in each row and each column.

Input: either an integer n alone (all latin squares of order n), or an
n x n grid: n lines of n tokens separated by spaces, each a number 1..n (a
given) or `.` (an empty cell). Blank lines are ignored. n is 1 to 100.

Example (the completions of a partial square of order 3):
  1 . .
  . . 1
  . 1 .

Solutions print as grids in the same format.";

pub const FUTOSHIKI: &str = "\
Futoshiki: a latin square of order n (values 1..n) that keeps the given
digits and the inequalities between neighbouring cells.

Input: rows of cells alternate with lines of vertical relations.
- A row of cells has a cell at every other column (0, 2, 4, ...): a digit
  1..n (a given) or `.` (empty); between two cells `<` (left < right), `>`
  (left > right) or a space. The first row fixes n (1 to 9); there must be
  n rows of n cells.
- Between two rows, a line may hold `^` (upper < lower) or `v` (upper >
  lower) exactly under a cell, spaces elsewhere; it may be blank or absent.

Example:
  3 .<. .
        ^
  . .>1 .
  v
  . 2 . .
  . . . .

Solutions print in the same layout. --encoding pairs|colors chooses how the
inequalities are encoded (pairs, the default: exact cover forbidding pairs
of values; colors: Algorithm C with colored items); both give the same
solutions.";

pub const HITORI: &str = "\
Hitori: shade cells so that no number repeats among the unshaded cells of
a row or a column, no two shaded cells touch side by side, and the
unshaded cells are connected.

Input: rows of numbers separated by spaces, one row per line (blank lines
are ignored); every row has the same length, and every number is in
1..max(rows, cols). At most 1048576 cells.

Example:
  1 4 2 2
  4 4 1 2
  2 1 3 4
  3 1 4 2

Solutions print the grid with the shaded cells as `#`. --weak accepts weak
solutions: the unshaded cells need not be connected.";

pub const HIDATO: &str = "\
Hidato: write 1..N in the N cells of the board, each once, so that k and
k + 1 are king neighbours (side by side or diagonal) and the given numbers
stay where they are.

Input: rows of tokens separated by spaces (blank lines are ignored): a
number in 1..N (a given), `.` (an empty cell of the board) or `#` (a hole,
not part of the board). N is the number of non-hole cells. At most 1048576
cells.

Example:
  1 . 3 #
  . 7 . .
  # . . 10

Solutions print the grid filled in, holes as `#`.";

pub const SLITHERLINK: &str = "\
Slitherlink: draw one loop along the grid's edges so that each clue k has
exactly k of its cell's four sides on the loop.

Input: rows of characters with no separators (blank lines are ignored):
`0`, `1`, `2` or `3` (a clue) or `.` (no clue); every row has the same
length. At most 1048576 cells.

Example:
  ..3
  121
  .2.

Solutions print the loop: `+` at the grid's vertices, `-` and `|` for the
loop's edges, the clues in their cells. --weak accepts weak solutions: any
number of loops (none included).";

pub const SUDOKU: &str = "\
Sudoku of side N = m x m (4, 9, 16, ..., 100): every value 1..N once in each
row, each column and each m x m box.

Input, either spelling:
- characters (4x4 and 9x9): the cells row by row, one character each, a
  digit 1..N or `.` or `0` (empty); whitespace is ignored anywhere (one
  line of 81 characters, nine lines of nine, ...);
- tokens (any side, needed from 16x16 on): N lines of N tokens separated by
  spaces, each a number 1..N or `.` or `0`.

Example (9x9, one line):
  .......1.4.........2...........5.4.7..8...3....1.9....3..4..2...5.1........8.6...

Solutions print as N lines: digits side by side up to 9x9, numbers separated
by spaces beyond.";

pub const QUEENS: &str = "\
The n queens problem: n queens on an n x n board, no two in the same row,
column or diagonal.

Input: the integer n, 1 to 1000.

Example:
  8

Solutions print as n lines of n characters, `Q` for a queen and `.` for an
empty square.";

#[cfg(test)]
mod tests {
    use super::*;

    /// Each text's example is a puzzle its kind parses: the help cannot
    /// show an input the parser refuses.
    #[test]
    fn every_example_parses() {
        for kind in Kind::ALL {
            let text = format(kind);
            let example: String = text
                .split("Example")
                .nth(1)
                .unwrap_or_else(|| panic!("{kind}: no example"))
                .lines()
                .skip(1)
                .take_while(|l| !l.trim().is_empty())
                .map(|l| format!("{}\n", l.strip_prefix("  ").unwrap_or(l)))
                .collect();
            let puzzle = super::super::Puzzle {
                kind,
                text: example.clone(),
                options: Default::default(),
            };
            assert!(puzzle.encode().is_ok(), "{kind}: {example:?}");
        }
    }
}
