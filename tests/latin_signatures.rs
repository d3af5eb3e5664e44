//! Exercise 391: the `latin_signatures` example's counts, through the real
//! service, against a brute-force enumeration of latin squares that knows
//! nothing of XCC.

#[path = "../examples/latin_signatures.rs"]
mod latin_signatures;

use std::collections::HashMap;

/// Every latin square of order n, by filling cells in order.
fn brute_force(n: usize) -> Vec<Vec<Vec<usize>>> {
    fn fill(n: usize, cell: usize, grid: &mut Vec<Vec<usize>>, out: &mut Vec<Vec<Vec<usize>>>) {
        if cell == n * n {
            out.push(grid.clone());
            return;
        }
        let (r, c) = (cell / n, cell % n);
        for v in 1..=n {
            if (0..c).all(|k| grid[r][k] != v) && (0..r).all(|k| grid[k][c] != v) {
                grid[r][c] = v;
                fill(n, cell + 1, grid, out);
                grid[r][c] = 0;
            }
        }
    }
    let mut out = Vec::new();
    fill(n, 0, &mut vec![vec![0; n]; n], &mut out);
    out
}

/// The signature computed independently: the list of comparisons, rows
/// first, then columns.
fn comparisons(grid: &[Vec<usize>]) -> Vec<bool> {
    let mut v: Vec<bool> = grid
        .iter()
        .flat_map(|row| row.windows(2).map(|w| w[0] < w[1]))
        .collect();
    for pair in grid.windows(2) {
        v.extend(pair[0].iter().zip(&pair[1]).map(|(a, b)| a < b));
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signatures_of_orders_3_to_5_match_brute_force() {
    for n in 3..=5 {
        let squares = brute_force(n);
        let mut groups: HashMap<Vec<bool>, usize> = HashMap::new();
        for s in &squares {
            *groups.entry(comparisons(s)).or_default() += 1;
        }
        let expected = latin_signatures::Counts {
            squares: squares.len() as u64,
            signatures: groups.len(),
            unique: groups.values().filter(|&&k| k == 1).count(),
        };
        let got = latin_signatures::count(n, None).await.unwrap();
        assert_eq!(got, expected, "order {n}");
    }
}

#[test]
fn known_counts_of_latin_squares() {
    assert_eq!(brute_force(4).len(), 576);
    // The same signature function must tell apart squares that differ in
    // one comparison.
    let a = vec![vec![1, 2], vec![2, 1]];
    let b = vec![vec![2, 1], vec![1, 2]];
    assert_ne!(
        latin_signatures::signature(&a),
        latin_signatures::signature(&b)
    );
}
