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

/// Knuth's n queens as DLX text: rows and columns primary, the diagonals
/// secondary (a search of minutes for n = 16 and more).
pub fn queens_dlx(n: usize) -> String {
    let mut text = String::new();
    for i in 0..n {
        text += &format!("r{i} c{i} ");
    }
    text += "|";
    for d in 0..2 * n - 1 {
        text += &format!(" a{d} b{d}");
    }
    text += "\n";
    for i in 0..n {
        for j in 0..n {
            text += &format!("r{i} c{j} a{} b{}\n", i + j, i + n - 1 - j);
        }
    }
    text
}
