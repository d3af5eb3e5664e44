//! Problems for the crate's own unit tests.

use super::{dlx_format, Problem};

/// The n queens problem as Knuth writes it: rows and columns primary,
/// diagonals secondary (92 solutions for n = 8, 4 for n = 6).
pub(crate) fn queens(n: usize) -> Problem {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!("R{i} C{i} "));
    }
    text.push('|');
    for d in 0..2 * n - 1 {
        text.push_str(&format!(" A{d} B{d}"));
    }
    text.push('\n');
    for r in 0..n {
        for c in 0..n {
            text.push_str(&format!("R{r} C{c} A{} B{}\n", r + c, r + n - 1 - c));
        }
    }
    dlx_format::parse(&text).expect("a valid problem")
}

/// A problem of the repository's `bench/` folder, by its path there
/// (`instances/latin4.dlx`).
pub(crate) fn bench_problem(relative: &str) -> Problem {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("bench")
        .join(relative);
    let text = std::fs::read_to_string(&path).expect("a bench instance");
    dlx_format::parse(&text).expect("a valid problem")
}
