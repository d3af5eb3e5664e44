//! A solved puzzle read back from the text its kind prints (every kind
//! prints solutions in its input format): the grid as typed cells, signs,
//! shaded cells, holes and loop edges, for the renderers that draw it
//! ([`super::picture`] for a terminal, [`super::svg`] for a browser).
//!
//! Reading the text, not the options of an XCC solution, lets a solution
//! from any source be drawn: this process, a pool, a server, a file. Pure
//! code; it never fails loudly: a text that is not a solved grid of its
//! kind reads as `None`, and the caller prints the text as it is.

use super::kinds::Kind;

/// An inequality between two neighbouring cells, read left to right or
/// top to bottom: `Less` when the first cell holds the smaller value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sign {
    Less,
    Greater,
}

/// A slitherlink's board: its clues and the loop's edges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    pub rows: usize,
    pub cols: usize,
    /// The character in each cell (a clue digit, or the blank or `.` the
    /// solution printed).
    pub clue: Vec<Vec<char>>,
    /// `right[i][j]`: the loop runs along the edge from vertex (i, j) to
    /// vertex (i, j + 1); `rows + 1` rows of `cols` edges.
    pub right: Vec<Vec<bool>>,
    /// `down[i][j]`: the loop runs from vertex (i, j) to vertex (i + 1, j);
    /// `rows` rows of `cols + 1` edges.
    pub down: Vec<Vec<bool>>,
}

impl Loop {
    /// Whether the loop runs right of vertex (i, j) (false off the board).
    pub fn right_of(&self, i: usize, j: usize) -> bool {
        self.right.get(i).and_then(|r| r.get(j)).copied() == Some(true)
    }

    /// Whether the loop runs below vertex (i, j) (false off the board).
    pub fn below(&self, i: usize, j: usize) -> bool {
        self.down.get(i).and_then(|r| r.get(j)).copied() == Some(true)
    }

    /// The loop's edges at vertex (i, j): up, down, left, right.
    pub fn at_vertex(&self, i: usize, j: usize) -> (bool, bool, bool, bool) {
        (
            i > 0 && self.below(i - 1, j),
            self.below(i, j),
            j > 0 && self.right_of(i, j - 1),
            self.right_of(i, j),
        )
    }

    /// The number of edges on the loop.
    pub fn edges(&self) -> usize {
        self.right
            .iter()
            .chain(&self.down)
            .flatten()
            .filter(|&&e| e)
            .count()
    }
}

/// A solved grid of one kind. Grids of tokens are rectangular (square
/// where the kind requires it); `None` marks a shaded hitori cell or a
/// hidato hole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Solved {
    /// An n x n sudoku, n = `box_size`², boxes of `box_size` x `box_size`.
    Sudoku {
        box_size: usize,
        cells: Vec<Vec<String>>,
    },
    Latin {
        cells: Vec<Vec<String>>,
    },
    /// `right[r][c]` is the sign between (r, c) and (r, c + 1);
    /// `below[r][c]` the one between (r, c) and (r + 1, c) (an empty row
    /// when no line of signs followed row r).
    Futoshiki {
        cells: Vec<Vec<String>>,
        right: Vec<Vec<Option<Sign>>>,
        below: Vec<Vec<Option<Sign>>>,
    },
    Hitori {
        cells: Vec<Vec<Option<String>>>,
    },
    Hidato {
        cells: Vec<Vec<Option<String>>>,
    },
    Slitherlink(Loop),
    Queens {
        board: Vec<Vec<bool>>,
    },
}

impl Solved {
    /// The number of cells of the grid (a slitherlink's cells, a queens
    /// board's squares), the measure of what drawing it costs.
    pub fn cells(&self) -> usize {
        let area = |rows: usize, cols: usize| rows * cols;
        match self {
            Solved::Sudoku { cells, .. }
            | Solved::Latin { cells }
            | Solved::Futoshiki { cells, .. } => area(cells.len(), cells[0].len()),
            Solved::Hitori { cells } | Solved::Hidato { cells } => {
                area(cells.len(), cells[0].len())
            }
            Solved::Slitherlink(board) => area(board.rows + 1, board.cols + 1),
            Solved::Queens { board } => area(board.len(), board.len()),
        }
    }

    /// The solution printed as `text` by a puzzle of `kind`, or `None` if
    /// the text is not a solved grid of that kind.
    pub fn read(kind: Kind, text: &str) -> Option<Solved> {
        match kind {
            Kind::Sudoku => sudoku(text),
            Kind::Latin => {
                let cells = token_grid(text)?;
                (cells.len() == cells[0].len()).then_some(Solved::Latin { cells })
            }
            Kind::Futoshiki => futoshiki(text),
            Kind::Hitori => Some(Solved::Hitori {
                cells: marked_grid(text)?,
            }),
            Kind::Hidato => Some(Solved::Hidato {
                cells: marked_grid(text)?,
            }),
            Kind::Slitherlink => slitherlink(text).map(Solved::Slitherlink),
            Kind::Queens => queens(text),
        }
    }
}

/// Non-blank lines, without trailing blanks.
fn lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Whitespace-separated tokens of each line, all lines of one length.
fn token_grid(text: &str) -> Option<Vec<Vec<String>>> {
    let grid: Vec<Vec<String>> = lines(text)
        .iter()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    let cols = grid.first()?.len();
    (cols > 0 && grid.iter().all(|row| row.len() == cols)).then_some(grid)
}

/// A token grid whose `#` cells are marked `None`.
fn marked_grid(text: &str) -> Option<Vec<Vec<Option<String>>>> {
    Some(
        token_grid(text)?
            .into_iter()
            .map(|row| row.into_iter().map(|t| (t != "#").then_some(t)).collect())
            .collect(),
    )
}

fn queens(text: &str) -> Option<Solved> {
    let rows = lines(text);
    let n = rows.len();
    if n == 0 || rows.iter().any(|l| l.chars().count() != n) {
        return None;
    }
    let board = rows
        .iter()
        .map(|l| l.chars().map(|ch| ch == 'Q').collect())
        .collect();
    Some(Solved::Queens { board })
}

/// Futoshiki's layout: cells at even columns with `<`/`>` between them,
/// and lines of `^`/`v` under cells between two rows (`^` points at the
/// smaller value, above).
fn futoshiki(text: &str) -> Option<Solved> {
    let mut cells: Vec<Vec<String>> = Vec::new();
    let mut right: Vec<Vec<Option<Sign>>> = Vec::new();
    let mut below: Vec<Vec<Option<Sign>>> = Vec::new();
    for line in lines(text) {
        let chars: Vec<char> = line.chars().collect();
        if chars.iter().any(|ch| ch.is_ascii_digit()) {
            let row: Vec<String> = chars.iter().step_by(2).map(|ch| ch.to_string()).collect();
            let signs: Vec<Option<Sign>> = (0..row.len().saturating_sub(1))
                .map(|j| match chars.get(2 * j + 1) {
                    Some('<') => Some(Sign::Less),
                    Some('>') => Some(Sign::Greater),
                    _ => None,
                })
                .collect();
            cells.push(row);
            right.push(signs);
            below.push(Vec::new());
        } else {
            let last = below.last_mut()?;
            *last = chars
                .iter()
                .step_by(2)
                .map(|ch| match ch {
                    '^' => Some(Sign::Less),
                    'v' => Some(Sign::Greater),
                    _ => None,
                })
                .collect();
        }
    }
    let n = cells.len();
    if n == 0 || cells.iter().any(|row| row.len() != n) {
        return None;
    }
    Some(Solved::Futoshiki {
        cells,
        right,
        below,
    })
}

/// A sudoku's N x N values (digits side by side up to 9, tokens beyond).
fn sudoku(text: &str) -> Option<Solved> {
    let rows = lines(text);
    let cells: Vec<Vec<String>> = if rows.iter().all(|l| !l.contains(' ')) {
        rows.iter()
            .map(|l| l.chars().map(|ch| ch.to_string()).collect())
            .collect()
    } else {
        token_grid(text)?
    };
    let n = cells.len();
    let box_size = (1..=n).find(|m| m * m >= n)?;
    if box_size * box_size != n || cells.iter().any(|row| row.len() != n) {
        return None;
    }
    Some(Solved::Sudoku { box_size, cells })
}

/// Slitherlink's `2 rows + 1` lines of `+`, `-`, `|` and clues.
fn slitherlink(text: &str) -> Option<Loop> {
    let raw: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    let raw: Vec<Vec<char>> = raw
        .into_iter()
        .skip_while(|l| l.iter().all(|c| *c == ' '))
        .collect();
    let height = raw.iter().rposition(|l| !l.iter().all(|c| *c == ' '))? + 1;
    if height % 2 == 0 || !raw[0].starts_with(&['+']) {
        return None;
    }
    let width = raw.iter().take(height).map(Vec::len).max()?;
    let at = |i: usize, j: usize| raw.get(i).and_then(|l| l.get(j)).copied().unwrap_or(' ');
    let (rows, cols) = (height / 2, width / 2);
    Some(Loop {
        rows,
        cols,
        clue: (0..rows)
            .map(|i| (0..cols).map(|j| at(2 * i + 1, 2 * j + 1)).collect())
            .collect(),
        right: (0..=rows)
            .map(|i| (0..cols).map(|j| at(2 * i, 2 * j + 1) == '-').collect())
            .collect(),
        down: (0..rows)
            .map(|i| (0..=cols).map(|j| at(2 * i + 1, 2 * j) == '|').collect())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hitori_reads_shaded_cells_as_none() {
        let Some(Solved::Hitori { cells }) = Solved::read(Kind::Hitori, "1 #\n# 1\n") else {
            panic!("not read");
        };
        assert_eq!(cells[0], vec![Some("1".to_string()), None]);
        assert_eq!(cells[1], vec![None, Some("1".to_string())]);
    }

    #[test]
    fn futoshiki_reads_its_signs_in_reading_order() {
        let Some(Solved::Futoshiki { right, below, .. }) =
            Solved::read(Kind::Futoshiki, "1<2\n^ v\n2>1\n")
        else {
            panic!("not read");
        };
        assert_eq!(
            right,
            vec![vec![Some(Sign::Less)], vec![Some(Sign::Greater)]]
        );
        assert_eq!(below[0], vec![Some(Sign::Less), Some(Sign::Greater)]);
        assert!(below[1].is_empty());
    }

    #[test]
    fn slitherlink_reads_the_loop_around_one_cell() {
        let l = Solved::read(Kind::Slitherlink, "+-+\n|4|\n+-+\n").unwrap();
        let Solved::Slitherlink(l) = l else {
            panic!("not a loop");
        };
        assert_eq!((l.rows, l.cols, l.edges()), (1, 1, 4));
        assert_eq!(l.clue, vec![vec!['4']]);
        assert_eq!(l.at_vertex(0, 0), (false, true, false, true));
        assert_eq!(l.at_vertex(1, 1), (true, false, true, false));
    }

    #[test]
    fn what_is_not_a_grid_of_its_kind_reads_as_none() {
        assert_eq!(Solved::read(Kind::Latin, "1 2\n2\n"), None);
        assert_eq!(Solved::read(Kind::Queens, "Q.\n"), None);
        assert_eq!(Solved::read(Kind::Sudoku, "123\n231\n312\n"), None);
        assert_eq!(Solved::read(Kind::Slitherlink, "no loop\n"), None);
        assert_eq!(Solved::read(Kind::Hitori, ""), None);
    }
}
