//! Hidato: brute force, random puzzles, the text format (writer and
//! reader) and the library's layout of a solution.
//!
//! The rules (TAOCP 7.2.2.1, exercise 404, as documented in
//! `src/puzzles/hidato.rs`): with N board cells (the cells that are not
//! holes), write 1..=N in them, each once, so that the cells of k and k + 1
//! are king neighbours, keeping the givens.

use std::collections::BTreeSet;

use super::rng::Rng;

/// A hidato board: `None` hole, `Some(0)` blank, `Some(g)` given
/// (row-major).
pub type Board = Vec<Option<u32>>;

/// Brute force: every Hamiltonian king path over the board cells that
/// respects the givens, as filled grids (0 at holes). The path grows from
/// 1; a branch stops when the next given number is further (in king moves,
/// ignoring holes) than the numbers left before it.
pub fn hidato_brute(rows: usize, cols: usize, board: &Board) -> BTreeSet<Vec<u32>> {
    hidato_brute_up_to(rows, cols, board, usize::MAX)
}

/// [`hidato_brute`], stopping after `cap` solutions.
pub fn hidato_brute_up_to(
    rows: usize,
    cols: usize,
    board: &Board,
    cap: usize,
) -> BTreeSet<Vec<u32>> {
    let n = board.iter().filter(|c| c.is_some()).count();
    let mut at_given = vec![usize::MAX; n + 2];
    for (i, c) in board.iter().enumerate() {
        if let Some(g) = *c {
            if g > 0 {
                at_given[g as usize] = i;
            }
        }
    }
    // next_given[k]: the smallest given number above k (0 if none).
    let mut next_given = vec![0; n + 2];
    for k in (0..=n).rev() {
        next_given[k] = if at_given[k + 1] != usize::MAX {
            k + 1
        } else {
            next_given[k + 1]
        };
    }
    struct Search<'a> {
        n: usize,
        rows: usize,
        cols: usize,
        board: &'a Board,
        at_given: Vec<usize>,
        next_given: Vec<usize>,
        cap: usize,
        values: Vec<u32>,
        out: BTreeSet<Vec<u32>>,
    }
    impl Search<'_> {
        /// Number k is at cell `at`: place k + 1, ..., n.
        fn go(&mut self, k: usize, at: usize) {
            if self.out.len() >= self.cap {
                return;
            }
            if k == self.n {
                self.out.insert(self.values.clone());
                return;
            }
            let cols = self.cols;
            let g = self.next_given[k];
            if g != 0 {
                let z = self.at_given[g];
                let king = (at / cols)
                    .abs_diff(z / cols)
                    .max((at % cols).abs_diff(z % cols));
                if king > g - k {
                    return;
                }
            }
            let (r, c) = ((at / cols) as i64, (at % cols) as i64);
            for dr in -1..=1i64 {
                for dc in -1..=1i64 {
                    let (rr, cc) = (r + dr, c + dc);
                    if rr < 0 || cc < 0 || rr >= self.rows as i64 || cc >= cols as i64 {
                        continue;
                    }
                    let j = (rr * cols as i64 + cc) as usize;
                    let fits = match self.board[j] {
                        None => false,
                        Some(0) => self.at_given[k + 1] == usize::MAX,
                        Some(g) => g as usize == k + 1,
                    };
                    if fits && self.values[j] == 0 {
                        self.values[j] = k as u32 + 1;
                        self.go(k + 1, j);
                        self.values[j] = 0;
                    }
                }
            }
        }
    }
    let mut search = Search {
        n,
        rows,
        cols,
        board,
        at_given,
        next_given,
        cap,
        values: vec![0; board.len()],
        out: BTreeSet::new(),
    };
    if n == 0 {
        return search.out;
    }
    for (s, cell) in board.iter().enumerate() {
        let fits = match *cell {
            None => false,
            Some(0) => search.at_given[1] == usize::MAX,
            Some(g) => g == 1,
        };
        if fits {
            search.values[s] = 1;
            search.go(1, s);
            search.values[s] = 0;
        }
    }
    search.out
}

/// The text format: rows of `#`, `.` and numbers separated by one space.
pub fn hidato_text(rows: usize, cols: usize, board: &Board) -> String {
    let mut s = String::new();
    for r in 0..rows {
        let row: Vec<String> = (0..cols)
            .map(|c| match board[r * cols + c] {
                None => "#".to_string(),
                Some(0) => ".".to_string(),
                Some(g) => g.to_string(),
            })
            .collect();
        s.push_str(&row.join(" "));
        s.push('\n');
    }
    s
}

/// A board of `rows` x `cols` cells, each a hole with probability 1/5
/// (all blank otherwise), with at least one board cell.
pub fn random_board(rows: usize, cols: usize, rng: &mut Rng) -> Board {
    let mut board: Board = (0..rows * cols)
        .map(|_| if rng.chance(20) { None } else { Some(0) })
        .collect();
    if board.iter().all(Option::is_none) {
        board[0] = Some(0);
    }
    board
}

/// Gives each board cell a number with probability `percent`: from a
/// random solution of the blank board when `from_solution` and there is
/// one (found by [`hidato_brute`]: keep boards small), else distinct
/// numbers drawn at random (often no solution).
pub fn add_givens(
    rows: usize,
    cols: usize,
    board: &mut Board,
    percent: usize,
    from_solution: bool,
    rng: &mut Rng,
) {
    let n = board.iter().filter(|c| c.is_some()).count();
    let free = if from_solution {
        hidato_brute(rows, cols, board)
    } else {
        BTreeSet::new()
    };
    let solutions: Vec<&Vec<u32>> = free.iter().collect();
    if !solutions.is_empty() {
        let sol = solutions[rng.below(solutions.len())];
        for i in 0..board.len() {
            if board[i].is_some() && rng.chance(percent) {
                board[i] = Some(sol[i]);
            }
        }
    } else {
        let mut numbers: Vec<u32> = (1..=n as u32).collect();
        rng.shuffle(&mut numbers);
        let mut next = 0;
        for cell in board.iter_mut() {
            if cell.is_some() && rng.chance(percent) {
                *cell = Some(numbers[next]);
                next += 1;
            }
        }
    }
}

/// A random solution of a board without givens (a Hamiltonian king path
/// over its cells, as the number of each cell, 0 at holes): a depth-first
/// search from a random cell trying the neighbours in random order. `None`
/// when the board has no such path, or none was found within a budget of
/// steps (rare on the small boards of the tests).
pub fn random_path(cols: usize, board: &Board, rng: &mut Rng) -> Option<Vec<u32>> {
    let n = board.iter().filter(|c| c.is_some()).count();
    let king = |i: usize| {
        let (r, c) = (i / cols, i % cols);
        (0..board.len()).filter(move |&j| {
            j != i
                && board[j].is_some()
                && (j / cols).abs_diff(r) <= 1
                && (j % cols).abs_diff(c) <= 1
        })
    };
    fn go(
        at: usize,
        k: u32,
        n: u32,
        values: &mut Vec<u32>,
        budget: &mut usize,
        moves: &dyn Fn(usize, &mut Vec<u32>) -> Vec<usize>,
    ) -> bool {
        if k == n {
            return true;
        }
        for j in moves(at, values) {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            values[j] = k + 1;
            if go(j, k + 1, n, values, budget, moves) {
                return true;
            }
            values[j] = 0;
        }
        false
    }
    let mut starts: Vec<usize> = (0..board.len()).filter(|&i| board[i].is_some()).collect();
    rng.shuffle(&mut starts);
    // Random orders drawn up front (the search borrows no generator).
    let orders: Vec<Vec<usize>> = (0..board.len())
        .map(|i| {
            let mut next: Vec<usize> = king(i).collect();
            rng.shuffle(&mut next);
            next
        })
        .collect();
    let moves = |at: usize, values: &mut Vec<u32>| -> Vec<usize> {
        orders[at]
            .iter()
            .copied()
            .filter(|&j| values[j] == 0)
            .collect()
    };
    let mut budget = 100_000;
    for s in starts {
        let mut values = vec![0; board.len()];
        values[s] = 1;
        if go(s, 1, n as u32, &mut values, &mut budget, &moves) {
            return Some(values);
        }
    }
    None
}

/// Reads the text format: rows of whitespace-separated tokens, a number
/// (given), `.` (blank) or `#` (hole); blank lines ignored.
pub fn read_hidato(text: &str) -> (usize, usize, Board) {
    let rows: Vec<Board> = text
        .lines()
        .map(|l| {
            l.split_whitespace()
                .map(|t| match t {
                    "#" => None,
                    "." => Some(0),
                    t => Some(t.parse().expect("a number")),
                })
                .collect::<Board>()
        })
        .filter(|r| !r.is_empty())
        .collect();
    let cols = rows[0].len();
    assert!(
        rows.iter().all(|r| r.len() == cols),
        "ragged rows: {text:?}"
    );
    (rows.len(), cols, rows.concat())
}

/// A solution as the library prints it: holes as `#`, every entry
/// right-aligned to the width of N, separated by one space, each row
/// ending in `\n`.
pub fn render_hidato(rows: usize, cols: usize, board: &Board, values: &[u32]) -> String {
    let n = board.iter().filter(|c| c.is_some()).count();
    let width = n.max(1).to_string().len();
    let mut out = String::new();
    for r in 0..rows {
        let cells: Vec<String> = (0..cols)
            .map(|c| {
                let i = r * cols + c;
                let cell = match board[i] {
                    None => "#".to_string(),
                    Some(_) => values[i].to_string(),
                };
                format!("{cell:>width$}")
            })
            .collect();
        out.push_str(&cells.join(" "));
        out.push('\n');
    }
    out
}
