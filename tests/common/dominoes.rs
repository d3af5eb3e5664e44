//! The domino tilings of an m x n board as an XCC problem: an item per
//! cell, an option per domino (written here, independently of
//! bench/gen/domino.py). Memoized counting's showcase: the counts grow past
//! 2^64 at 14x14 while a memoized count stays small.

/// The DLX text of the tilings of an `m` x `n` board.
pub fn dominoes(m: usize, n: usize) -> String {
    let mut text = String::new();
    for r in 0..m {
        for c in 0..n {
            text.push_str(&format!("{r}_{c} "));
        }
    }
    text.push('\n');
    for r in 0..m {
        for c in 0..n {
            if c + 1 < n {
                text.push_str(&format!("{r}_{c} {r}_{}\n", c + 1));
            }
            if r + 1 < m {
                text.push_str(&format!("{r}_{c} {}_{c}\n", r + 1));
            }
        }
    }
    text
}
