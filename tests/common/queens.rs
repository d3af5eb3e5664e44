//! The n queens problem: brute force (a queen per row, column by column),
//! the text format and the library's layout of a board.

/// Every placement of n non-attacking queens, as the column of the queen
/// in each row, in lexicographic order.
pub fn brute_queens(n: usize) -> Vec<Vec<usize>> {
    fn go(n: usize, cols: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        let i = cols.len();
        if i == n {
            out.push(cols.clone());
            return;
        }
        for j in 0..n {
            let free = cols
                .iter()
                .enumerate()
                .all(|(a, &b)| b != j && i - a != b.abs_diff(j));
            if free {
                cols.push(j);
                go(n, cols, out);
                cols.pop();
            }
        }
    }
    let mut out = Vec::new();
    go(n, &mut Vec::new(), &mut out);
    out
}

/// Reads the text: the integer n, whitespace around it allowed.
pub fn read_queens(text: &str) -> usize {
    text.trim().parse().expect("the board size")
}

/// A board as the library prints it: n lines of n characters, `Q` for a
/// queen and `.` for an empty square.
pub fn render_queens(cols: &[usize]) -> String {
    let n = cols.len();
    let mut out = String::new();
    for &col in cols {
        out.extend((0..n).map(|j| if j == col { 'Q' } else { '.' }));
        out.push('\n');
    }
    out
}
