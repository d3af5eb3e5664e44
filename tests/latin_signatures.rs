//! Exercise 391: the `latin_signatures` example's counts, through the real
//! service, against a brute-force enumeration of latin squares that knows
//! nothing of XCC; and its sorting and merging on disk against a hash map.

#[path = "../examples/latin_signatures.rs"]
mod latin_signatures;

use std::collections::HashMap;

use latin_signatures::{count_with, Counts, Options, Signer, Tally};
use xccd::puzzles::latin::LatinPuzzle;
use xccd::puzzles::Encoded;

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

/// The counts of the squares of order n from [`brute_force`] and
/// [`comparisons`] in a hash map.
fn brute_force_counts(n: usize) -> Counts {
    let squares = brute_force(n);
    let mut groups: HashMap<Vec<bool>, usize> = HashMap::new();
    for s in &squares {
        *groups.entry(comparisons(s)).or_default() += 1;
    }
    Counts {
        squares: squares.len() as u64,
        signatures: groups.len() as u64,
        unique: groups.values().filter(|&&k| k == 1).count() as u64,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signatures_of_orders_3_to_5_match_brute_force() {
    for n in 3..=5 {
        let expected = brute_force_counts(n);
        let got = latin_signatures::count(n, None).await.unwrap();
        assert_eq!(got, expected, "order {n}");
    }
}

/// Squares through runs on disk, merged a few at a time, give the counts
/// of the all-in-memory path, and leave nothing on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sorted_runs_on_disk_give_the_same_counts() {
    let temp = tempfile::tempdir().unwrap();
    for (n, memory) in [(4, 16 * 40), (5, 16 * 1000)] {
        let (in_memory, none) = count_with(n, &Options::default()).await.unwrap();
        assert_eq!(none.runs, 0, "order {n} fits in memory");
        let options = Options {
            memory,
            temp_dir: temp.path().to_path_buf(),
            fan_in: 4,
            ..Options::default()
        };
        let (spilled, how) = count_with(n, &options).await.unwrap();
        assert_eq!(spilled, in_memory, "order {n}");
        // 576 squares in runs of 40, 161,280 in runs of 1000.
        let runs = in_memory.squares.div_ceil(memory as u64 / 16);
        assert_eq!(how.runs as u64, runs, "order {n}");
        assert!(how.merged_runs > 0, "order {n}: merges before the last");
        assert!(how.peak_bytes >= 8 * in_memory.squares, "order {n}");
        assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
    }
}

/// A SplitMix64 generator.
fn random(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The tally's distinct and once-seen values, in memory and through runs
/// merged in several passes, against a hash map, on random values with
/// many repeats (and on none, and one).
#[test]
fn tally_counts_like_a_hash_map() {
    let temp = tempfile::tempdir().unwrap();
    let mut seed = 7;
    for (len, range) in [
        (0, 1),
        (1, 1),
        (5000, 3000),
        (20_000, 1 << 40),
        (30_011, 20_000),
    ] {
        let values: Vec<u64> = (0..len).map(|_| random(&mut seed) % range).collect();
        let mut map: HashMap<u64, u32> = HashMap::new();
        for &v in &values {
            *map.entry(v).or_default() += 1;
        }
        let expected = (
            map.len() as u64,
            map.values().filter(|&&k| k == 1).count() as u64,
        );
        for (memory, fan_in) in [(1 << 30, 64), (16 * 1000, 3), (16 * 777, 2), (16, 5)] {
            if memory == 16 && len > 1 {
                continue; // a run per value: too many files
            }
            let mut tally = Tally::new(memory, temp.path(), fan_in);
            for &v in &values {
                tally.push(v).unwrap();
            }
            let (distinct, unique, spilled) = tally.finish(false).unwrap();
            assert_eq!(
                (distinct, unique),
                expected,
                "{len} values below {range}, memory {memory}, fan-in {fan_in}"
            );
            let buffer = (memory / 16) as u64;
            assert_eq!(spilled.runs > 0, len as u64 > buffer);
        }
    }
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
}

#[test]
fn count_groups_of_a_sorted_sequence() {
    let groups =
        |values: &[u64]| latin_signatures::count_groups(values.iter().map(|&v| Ok(v))).unwrap();
    assert_eq!(groups(&[]), (0, 0));
    assert_eq!(groups(&[4]), (1, 1));
    assert_eq!(groups(&[4, 4]), (1, 0));
    assert_eq!(groups(&[1, 4, 4, 9]), (3, 2));
    assert_eq!(groups(&[1, 1, 4, 9, 9, 9]), (3, 1));
}

/// The signer's table, read from the decoder, gives each square of order 4
/// the signature of its decoded grid; and squares with different
/// comparisons get different signatures.
#[test]
fn signer_agrees_with_the_grid() {
    let n = 4;
    let encoded = LatinPuzzle::empty(n).encode();
    let option_of = |r: usize, c: usize, v: usize| {
        (0..encoded.problem().options().len())
            .find(|&o| encoded.grid(&[o])[r][c] == v)
            .unwrap() as u32
    };
    let signer = Signer::new(n);
    let mut by_signature: HashMap<u64, Vec<bool>> = HashMap::new();
    for grid in brute_force(n) {
        let mut options: Vec<u32> = (0..n * n)
            .map(|cell| option_of(cell / n, cell % n, grid[cell / n][cell % n]))
            .collect();
        options.sort_unstable();
        assert_eq!(
            encoded.grid(&options.iter().map(|&o| o as usize).collect::<Vec<_>>()),
            grid
        );
        let s = latin_signatures::signature(&grid);
        assert_eq!(signer.sign(options.iter().copied()), s);
        let seen = by_signature.entry(s).or_insert_with(|| comparisons(&grid));
        assert_eq!(*seen, comparisons(&grid));
    }
    assert_eq!(by_signature.len(), 418);
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
