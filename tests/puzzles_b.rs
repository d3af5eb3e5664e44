//! Hitori, hidato and slitherlink: every encoding against a brute-force
//! solver (in `tests/common`, no XCC), on many random small puzzles; decoded
//! solutions against independent checkers; pruning against no pruning;
//! generators; bad inputs. `cargo test --profile ci --test puzzles_b --
//! --ignored --nocapture bench` prints the benchmark figures.

use std::collections::BTreeSet;
use std::time::Instant;

use xccd::puzzles::{self, hidato, hitori, slitherlink, Encoded, PuzzleError};
use xccd::xcc::{Flow, RunConfig, SolutionView, Solver, Task, Visitor};

mod common;

use common::hidato::{add_givens, hidato_brute, hidato_text, random_board, Board};
use common::hitori::{hitori_brute, hitori_text, random_hitori};
use common::slitherlink::{random_slither, slither_brute, slither_text, Grid};
use common::Rng;

/// All accepted solutions of an encoding, decoded, with or without the
/// pruning hook (running the engine directly).
fn engine_solutions(encoded: &dyn Encoded, check_partial: bool) -> (BTreeSet<String>, u64) {
    struct V<'a> {
        encoded: &'a dyn Encoded,
        out: Vec<String>,
        options: Vec<usize>,
    }
    impl Visitor for V<'_> {
        fn solution(&mut self, s: &SolutionView<'_>) -> Flow {
            s.options_into(&mut self.options);
            assert!(self.encoded.problem().verify(&self.options).is_ok());
            if !self.encoded.accept(&self.options) {
                return Flow::Reject;
            }
            self.out.push(self.encoded.decode(&self.options));
            Flow::Continue
        }
        fn partial(&mut self, s: &SolutionView<'_>) -> bool {
            s.options_into(&mut self.options);
            self.encoded.accept_partial(&self.options)
        }
    }
    let mut v = V {
        encoded,
        out: Vec::new(),
        options: Vec::new(),
    };
    let config = RunConfig {
        check_partial,
        ..RunConfig::default()
    };
    let outcome = Solver::new(encoded.problem())
        .run(&Task::root(), &config, &mut v)
        .unwrap();
    let n = v.out.len();
    let set: BTreeSet<String> = v.out.into_iter().collect();
    assert_eq!(set.len(), n, "a solution was found twice");
    (set, outcome.stats.nodes)
}

/// The solutions through `puzzles::solve`, with both pruning settings
/// compared; returns the set.
fn all_solutions(encoded: &dyn Encoded) -> BTreeSet<String> {
    let found = puzzles::solve(encoded, None, usize::MAX);
    assert!(found.complete);
    assert_eq!(found.count as usize, found.grids.len());
    let set: BTreeSet<String> = found.grids.iter().cloned().collect();
    assert_eq!(set.len(), found.grids.len());
    if encoded.prunes() {
        let (plain, _) = engine_solutions(encoded, false);
        let (pruned, _) = engine_solutions(encoded, true);
        assert_eq!(plain, set, "solutions without pruning differ");
        assert_eq!(pruned, set, "solutions with pruning differ");
    }
    set
}

fn assert_error(result: Result<Box<dyn Encoded>, PuzzleError>, line: usize, column: usize) {
    match result {
        Ok(_) => panic!("accepted a bad input"),
        Err(e) => assert_eq!(
            (e.line, e.column),
            (line, column),
            "wrong place for error {e}"
        ),
    }
}

// ---------------------------------------------------------------- hitori

/// The black cells of a decoded hitori grid, checking the white numbers.
fn hitori_mask(grid: &str, rows: usize, cols: usize, numbers: &[u32]) -> Vec<bool> {
    let tokens: Vec<&str> = grid.split_whitespace().collect();
    assert_eq!(tokens.len(), rows * cols);
    assert_eq!(grid.lines().count(), rows);
    let lens: BTreeSet<usize> = grid.lines().map(str::len).collect();
    assert_eq!(lens.len(), 1, "columns are aligned");
    tokens
        .iter()
        .zip(numbers)
        .map(|(t, &v)| {
            if *t == "#" {
                true
            } else {
                assert_eq!(t.parse::<u32>().unwrap(), v);
                false
            }
        })
        .collect()
}

#[test]
fn hitori_matches_brute_force() {
    let mut rng = Rng::new(437);
    let mut puzzles = 0;
    let mut solutions = [0usize; 2];
    for _ in 0..400 {
        let (rows, cols, numbers) = random_hitori(&mut rng);
        let text = hitori_text(rows, cols, &numbers);
        let puzzle = hitori::parse(&text).unwrap();
        assert_eq!(puzzle.numbers, numbers);
        for (w, weak) in [true, false].into_iter().enumerate() {
            let expected = hitori_brute(rows, cols, &numbers, weak);
            let encoded = hitori::encode_text(&text, weak).unwrap();
            let got: BTreeSet<Vec<bool>> = all_solutions(&*encoded)
                .iter()
                .map(|g| {
                    let mask = hitori_mask(g, rows, cols, &numbers);
                    hitori::check(&puzzle, &mask, weak).unwrap();
                    mask
                })
                .collect();
            assert_eq!(got, expected, "weak={weak}\n{text}");
            solutions[w] += got.len();
        }
        puzzles += 1;
    }
    assert_eq!(puzzles, 400);
    // The random puzzles are not all trivial.
    assert!(solutions[0] > 600 && solutions[1] > 300, "{solutions:?}");
}

#[test]
fn hitori_checker_rejects_each_rule() {
    let p = hitori::parse("1 1 2\n2 1 1\n1 2 2\n").unwrap();
    // All white: 1 repeats in row 0.
    assert!(hitori::check(&p, &[false; 9], true).is_err());
    // The diagonal: a weak solution whose white cells fall in two parts.
    let diagonal = [true, false, false, false, true, false, false, false, true];
    hitori::check(&p, &diagonal, true).unwrap();
    assert!(hitori::check(&p, &diagonal, false).is_err());
    assert_eq!(hitori_brute(3, 3, &p.numbers, false).len(), 0);
    let adjacent = [true, true, false, false, false, true, false, true, false];
    assert!(hitori::check(&p, &adjacent, true).is_err());
    let q = hitori::parse("1 2 3\n2 3 3\n3 1 2\n").unwrap();
    let good = [false, false, false, false, false, true, false, false, false];
    hitori::check(&q, &good, false).unwrap();
    // (0,1) is a seed.
    let seed_black = [false, true, false, false, false, true, false, false, false];
    assert!(hitori::check(&q, &seed_black, true).is_err());
}

#[test]
fn hitori_bad_inputs() {
    assert_error(hitori::encode_text("", false), 1, 1);
    assert_error(hitori::encode_text("  \n\n", true), 1, 1);
    assert_error(hitori::encode_text("1 2\n2 1 1\n", false), 2, 5);
    assert_error(hitori::encode_text("1 2 3\n2 1\n3 1 2\n", false), 2, 4);
    assert_error(hitori::encode_text("1 2\n2 x\n", false), 2, 3);
    assert_error(hitori::encode_text("1 -2\n2 1\n", false), 1, 3);
    assert_error(hitori::encode_text("1 2\n2 3\n", false), 2, 3);
    assert_error(hitori::encode_text("0 2\n2 1\n", false), 1, 1);
    assert_error(
        hitori::encode_text("1 2\n2 99999999999999999999999\n", false),
        2,
        3,
    );
    let e = hitori::encode_text("1 2\n2 3\n", false).err().unwrap();
    assert_eq!(
        e.to_string(),
        "line 2, column 3: number 3 out of range 1..=2"
    );
    // Blank lines and extra spaces are fine.
    assert!(hitori::encode_text("\n 1   2 \n\n2 1\n\n", false).is_ok());
}

#[test]
fn hitori_generate_is_unique_and_deterministic() {
    for size in 1..=6 {
        for seed in 0..4 {
            let text = hitori::generate(size, seed).unwrap();
            assert_eq!(text, hitori::generate(size, seed).unwrap());
            let p = hitori::parse(&text).unwrap();
            assert_eq!((p.rows, p.cols), (size, size));
            let found = puzzles::solve(&*hitori::encode_text(&text, false).unwrap(), None, 2);
            assert_eq!(found.count, 1, "{text}");
            if size <= 5 {
                assert_eq!(hitori_brute(size, size, &p.numbers, false).len(), 1);
            }
        }
    }
    assert_ne!(
        hitori::generate(6, 1).unwrap(),
        hitori::generate(6, 2).unwrap()
    );
    assert!(hitori::generate(0, 1).is_err());
}

// ---------------------------------------------------------------- hidato

fn hidato_values(grid: &str, rows: usize, cols: usize) -> Vec<u32> {
    assert_eq!(grid.lines().count(), rows);
    let lens: BTreeSet<usize> = grid.lines().map(str::len).collect();
    assert_eq!(lens.len(), 1, "columns are aligned");
    let v: Vec<u32> = grid
        .split_whitespace()
        .map(|t| if t == "#" { 0 } else { t.parse().unwrap() })
        .collect();
    assert_eq!(v.len(), rows * cols);
    v
}

#[test]
fn hidato_matches_brute_force() {
    let mut rng = Rng::new(404);
    let mut total = 0;
    let mut solved = 0;
    for round in 0..400 {
        let rows = 1 + rng.below(4);
        let cols = 1 + rng.below(4);
        let mut board = random_board(rows, cols, &mut rng);
        // Givens: from a real solution when there is one (most rounds), else
        // at random.
        let percent = [10, 25, 40][round % 3];
        add_givens(rows, cols, &mut board, percent, round % 4 != 0, &mut rng);
        let text = hidato_text(rows, cols, &board);
        let puzzle = hidato::parse(&text).unwrap();
        let expected = hidato_brute(rows, cols, &board);
        let encoded = hidato::encode_text(&text).unwrap();
        let got: BTreeSet<Vec<u32>> = all_solutions(&*encoded)
            .iter()
            .map(|g| {
                let v = hidato_values(g, rows, cols);
                hidato::check(&puzzle, &v).unwrap();
                v
            })
            .collect();
        assert_eq!(got, expected, "\n{text}");
        total += got.len();
        solved += usize::from(!got.is_empty());
    }
    assert!(total > 10_000 && solved > 200, "{total} {solved}");
}

/// Exercise 404's 4x4 puzzle (i). The seed's rendering of solution (iv) is
/// garbled (rows lose their blanks); the grid below is the reconstruction,
/// checked here by the independent checker and by the brute force.
#[test]
fn hidato_knuth_example() {
    let text = ".  3 14  1\n.  .  .  .\n5  9  .  .\n.  .  8  .\n";
    let solution = "16  3 14  1\n 4 15  2 13\n 5  9 10 12\n 6  7  8 11\n";
    let puzzle = hidato::parse(text).unwrap();
    let values = hidato_values(solution, 4, 4);
    hidato::check(&puzzle, &values).unwrap();
    let board: Board = puzzle
        .cells
        .iter()
        .map(|c| match c {
            hidato::Cell::Hole => None,
            hidato::Cell::Blank => Some(0),
            hidato::Cell::Given(g) => Some(*g),
        })
        .collect();
    assert_eq!(
        hidato_brute(4, 4, &board).into_iter().collect::<Vec<_>>(),
        vec![values]
    );
    let found = puzzles::solve(&*hidato::encode_text(text).unwrap(), None, 10);
    assert_eq!(found.grids, vec![solution.to_string()]);
    // Puzzle (iii), with 2, 4 and 6 filled in, has the same solution.
    let iii = ".  3 14  1\n4  .  2  .\n5  9  .  .\n6  .  8  .\n";
    let found = puzzles::solve(&*hidato::encode_text(iii).unwrap(), None, 10);
    assert_eq!(found.grids, vec![solution.to_string()]);
}

#[test]
fn hidato_checker_rejects_each_rule() {
    let p = hidato::parse(". . #\n. 2 .\n").unwrap();
    hidato::check(&p, &[1, 3, 0, 5, 2, 4]).unwrap_err(); // 4 at (1,2), 5 at (1,0)
    hidato::check(&p, &[1, 5, 0, 4, 2, 3]).unwrap_err(); // 3 at (1,2), 4 at (1,0)
    hidato::check(&p, &[1, 4, 0, 5, 2, 3]).unwrap();
    hidato::check(&p, &[2, 4, 0, 5, 1, 3]).unwrap_err(); // given moved
    hidato::check(&p, &[1, 4, 6, 5, 2, 3]).unwrap_err(); // hole filled
    hidato::check(&p, &[1, 4, 0, 4, 2, 3]).unwrap_err(); // repeated
}

#[test]
fn hidato_bad_inputs() {
    assert_error(hidato::encode_text(""), 1, 1);
    assert_error(hidato::encode_text(". .\n. . .\n"), 2, 5);
    assert_error(hidato::encode_text(". . .\n. .\n"), 2, 4);
    assert_error(hidato::encode_text(". .\n. x\n"), 2, 3);
    assert_error(hidato::encode_text(". .\n. 1.5\n"), 2, 3);
    assert_error(hidato::encode_text(". #\n. 4\n"), 2, 3);
    assert_error(hidato::encode_text("0 .\n. .\n"), 1, 1);
    assert_error(hidato::encode_text("1 .\n. 1\n"), 2, 3);
    assert_error(hidato::encode_text("# #\n# #\n"), 1, 1);
    let e = hidato::encode_text(". #\n. 4\n").err().unwrap();
    assert_eq!(
        e.to_string(),
        "line 2, column 3: number 4 out of range 1..=3"
    );
}

#[test]
fn hidato_generate_is_unique() {
    for (rows, cols) in [(1, 1), (2, 3), (4, 4), (5, 3)] {
        for seed in 0..3 {
            let text = hidato::generate(rows, cols, seed).unwrap();
            assert_eq!(text, hidato::generate(rows, cols, seed).unwrap());
            let p = hidato::parse(&text).unwrap();
            let board: Board = p
                .cells
                .iter()
                .map(|c| match c {
                    hidato::Cell::Hole => None,
                    hidato::Cell::Blank => Some(0),
                    hidato::Cell::Given(g) => Some(*g),
                })
                .collect();
            assert_eq!(hidato_brute(rows, cols, &board).len(), 1, "{text}");
        }
    }
}

// ----------------------------------------------------------- slitherlink

/// Reads a drawing back into edges (the tests' own numbering, the same as
/// the module's), checking its layout.
fn slither_edges(drawing: &str, rows: usize, cols: usize, clues: &[Option<u8>]) -> Vec<bool> {
    let g = Grid { rows, cols };
    let lines: Vec<Vec<char>> = drawing.lines().map(|l| l.chars().collect()).collect();
    assert_eq!(lines.len(), 2 * rows + 1);
    assert!(drawing.ends_with('\n'));
    let mut on = vec![false; g.edges()];
    for (y, line) in lines.iter().enumerate() {
        assert_eq!(line.len(), 2 * cols + 1);
        for (x, &ch) in line.iter().enumerate() {
            match (y % 2, x % 2) {
                (0, 0) => assert_eq!(ch, '+'),
                (0, 1) => {
                    assert!(ch == '-' || ch == ' ');
                    on[g.h(y / 2, x / 2)] = ch == '-';
                }
                (1, 0) => {
                    assert!(ch == '|' || ch == ' ');
                    on[g.v(y / 2, x / 2)] = ch == '|';
                }
                _ => {
                    let expect = match clues[(y / 2) * cols + x / 2] {
                        Some(k) => (b'0' + k) as char,
                        None => ' ',
                    };
                    assert_eq!(ch, expect);
                }
            }
        }
    }
    on
}

#[test]
fn slitherlink_matches_brute_force() {
    let mut rng = Rng::new(412);
    let mut counts = [0usize; 2];
    for _ in 0..300 {
        let (rows, cols, clues) = random_slither(&mut rng);
        let text = slither_text(rows, cols, &clues);
        let puzzle = slitherlink::parse(&text).unwrap();
        assert_eq!(puzzle.clues, clues);
        for (w, weak) in [true, false].into_iter().enumerate() {
            let expected = slither_brute(rows, cols, &clues, weak);
            let encoded = slitherlink::encode_text(&text, weak).unwrap();
            let got: BTreeSet<Vec<bool>> = all_solutions(&*encoded)
                .iter()
                .map(|d| {
                    let on = slither_edges(d, rows, cols, &clues);
                    slitherlink::check(&puzzle, &on, weak).unwrap();
                    on
                })
                .collect();
            assert_eq!(got, expected, "weak={weak}\n{text}");
            counts[w] += got.len();
        }
    }
    assert!(counts[0] > 5000 && counts[1] > 1000, "{counts:?}");
}

#[test]
fn slitherlink_small_examples() {
    // A 1x1 cell with clue 4 is out of range; with no clue, the only loop
    // is its boundary and the weak solutions are it and the empty set.
    let found = puzzles::solve(&*slitherlink::encode_text(".", true).unwrap(), None, 9);
    assert_eq!(found.count, 2);
    let found = puzzles::solve(&*slitherlink::encode_text(".", false).unwrap(), None, 9);
    assert_eq!(found.grids, vec!["+-+\n| |\n+-+\n".to_string()]);
    let found = puzzles::solve(&*slitherlink::encode_text("3\n", false).unwrap(), None, 9);
    assert_eq!(found.count, 0);
    let found = puzzles::solve(&*slitherlink::encode_text("0\n", false).unwrap(), None, 9);
    assert_eq!(found.count, 0);
    let found = puzzles::solve(&*slitherlink::encode_text("0\n", true).unwrap(), None, 9);
    assert_eq!(found.grids, vec!["+ +\n 0 \n+ +\n".to_string()]);
    // Two separate squares are a weak solution, not a full one: the strip
    // of three cells has 6 loops (its intervals of cells), and the weak
    // solutions add the empty set and the two end squares.
    let weak = puzzles::solve(&*slitherlink::encode_text("...", true).unwrap(), None, 99);
    let full = puzzles::solve(&*slitherlink::encode_text("...", false).unwrap(), None, 99);
    assert_eq!((weak.count, full.count), (8, 6));
    let two = "+-+ +-+\n| | | |\n+-+ +-+\n".to_string();
    assert!(weak.grids.contains(&two) && !full.grids.contains(&two));
    // With clues 3 at both ends, only the whole strip's boundary is left.
    let weak = puzzles::solve(&*slitherlink::encode_text("3.3", true).unwrap(), None, 99);
    let full = puzzles::solve(&*slitherlink::encode_text("3.3", false).unwrap(), None, 99);
    assert_eq!(weak.grids, full.grids);
    assert_eq!(full.grids, vec!["+-+-+-+\n|3   3|\n+-+-+-+\n".to_string()]);
}

#[test]
fn slitherlink_checker_rejects_each_rule() {
    let p = slitherlink::parse("3.\n").unwrap();
    let g = Grid { rows: 1, cols: 2 };
    let mut on = vec![false; g.edges()];
    for e in g.around(0, 0) {
        on[e] = true;
    }
    slitherlink::check(&p, &on, false).unwrap_err(); // clue 3, four edges
    let p = slitherlink::parse("..\n").unwrap();
    slitherlink::check(&p, &on, false).unwrap();
    on[g.h(0, 1)] = true; // a vertex of degree 3
    slitherlink::check(&p, &on, true).unwrap_err();
    let p = slitherlink::parse(".\n.\n.\n").unwrap();
    let g = Grid { rows: 3, cols: 1 };
    let mut on = vec![false; g.edges()];
    for e in g.around(0, 0).into_iter().chain(g.around(2, 0)) {
        on[e] = true;
    }
    slitherlink::check(&p, &on, true).unwrap();
    slitherlink::check(&p, &on, false).unwrap_err(); // two loops
    slitherlink::check(&p, &vec![false; g.edges()], false).unwrap_err(); // none
}

#[test]
fn slitherlink_bad_inputs() {
    assert_error(slitherlink::encode_text("", false), 1, 1);
    assert_error(slitherlink::encode_text("\n \n", true), 1, 1);
    assert_error(slitherlink::encode_text("..\n...\n", false), 2, 3);
    assert_error(slitherlink::encode_text("...\n..\n", false), 2, 3);
    assert_error(slitherlink::encode_text("..\n.x\n", false), 2, 2);
    assert_error(slitherlink::encode_text(". .\n...\n", false), 1, 2);
    assert_error(slitherlink::encode_text("..\n.4\n", false), 2, 2);
    let e = slitherlink::encode_text("12\n39\n", false).err().unwrap();
    assert_eq!(e.to_string(), "line 2, column 2: clue 9 out of range 0..=3");
    assert!(slitherlink::encode_text("\n.3\r\n2.  \n\n", false).is_ok());
}

#[test]
fn slitherlink_generate_is_unique_and_deterministic() {
    for (rows, cols) in [(1, 1), (2, 2), (3, 4), (4, 4), (4, 3)] {
        for seed in 0..3 {
            let text = slitherlink::generate(rows, cols, seed).unwrap();
            assert_eq!(text, slitherlink::generate(rows, cols, seed).unwrap());
            let p = slitherlink::parse(&text).unwrap();
            assert_eq!((p.rows, p.cols), (rows, cols));
            assert_eq!(
                slither_brute(rows, cols, &p.clues, false).len(),
                1,
                "{text}"
            );
        }
    }
    assert!(slitherlink::generate(0, 3, 1).is_err());
}

// ------------------------------------------------------------- benchmarks

/// Solves and proves unique with pruning (`puzzles::solve`, limit 2) and
/// without (the engine with `check_partial: false`); prints one line.
fn bench_one(name: &str, seed: u64, generated: std::time::Duration, encoded: &dyn Encoded) {
    let t = Instant::now();
    let found = puzzles::solve(encoded, Some(2), 1);
    let with = t.elapsed();
    assert!(found.complete);
    assert_eq!(found.count, 1);
    let t = Instant::now();
    let (plain, nodes_plain) = engine_solutions(encoded, false);
    let without = t.elapsed();
    assert_eq!(plain.len(), 1);
    println!(
        "{name} seed {seed}: generated in {:.0} ms; {} options; pruned {:.2} ms, {} nodes; \
         unpruned {:.2} ms, {} nodes",
        generated.as_secs_f64() * 1e3,
        encoded.problem().options().len(),
        with.as_secs_f64() * 1e3,
        found.stats.nodes,
        without.as_secs_f64() * 1e3,
        nodes_plain,
    );
}

#[test]
#[ignore]
fn bench_hitori() {
    for seed in 1..=5 {
        let t = Instant::now();
        let text = hitori::generate(12, seed).unwrap();
        let generated = t.elapsed();
        if seed == 1 {
            println!("{text}");
        }
        let encoded = hitori::encode_text(&text, false).unwrap();
        bench_one("hitori 12x12", seed, generated, &*encoded);
    }
}

#[test]
#[ignore]
fn bench_slitherlink() {
    for seed in 1..=5 {
        let t = Instant::now();
        let text = slitherlink::generate(10, 10, seed).unwrap();
        let generated = t.elapsed();
        if seed == 1 {
            println!("{text}");
        }
        let encoded = slitherlink::encode_text(&text, false).unwrap();
        bench_one("slitherlink 10x10", seed, generated, &*encoded);
    }
}

#[test]
#[ignore]
fn bench_hidato() {
    for seed in 1..=5 {
        let t = Instant::now();
        let text = hidato::generate(9, 9, seed).unwrap();
        let generated = t.elapsed();
        if seed == 1 {
            println!("{text}");
        }
        let encoded = hidato::encode_text(&text).unwrap();
        bench_one("hidato 9x9", seed, generated, &*encoded);
    }
}
