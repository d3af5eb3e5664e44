//! Every puzzle kind through the library (`kinds::encode`, then
//! `puzzles::solve`) against the independent brute-force oracle of
//! `tests/common`: on random small puzzles, the set of decoded solutions
//! must equal the oracle's, string for string. Hitori and slitherlink run
//! each puzzle weak and full, futoshiki in both encodings.
//!
//! `cargo test --profile ci --test puzzle_oracle -- --nocapture` shows a
//! summary line per kind.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::{brute_solutions, random_case, Case, Rng};
use xccd::puzzles::{self, kinds, FutoshikiEncoding, Kind};

/// Random puzzles per kind (each run in both settings where there are
/// two); the environment variable `ORACLE_CASES` overrides it, for a longer
/// hunt (`ORACLE_CASES=5000` takes seconds).
const CASES: usize = 500;

fn cases() -> usize {
    std::env::var("ORACLE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES)
}

/// The decoded solutions through the library path.
fn library_solutions(case: &Case) -> BTreeSet<String> {
    let encoded = kinds::encode(case.kind, &case.text, &case.options())
        .unwrap_or_else(|e| panic!("the library rejects {case}: {e}"));
    let found = puzzles::solve(&*encoded, None, usize::MAX);
    assert!(found.complete, "{case}");
    assert_eq!(found.count as usize, found.grids.len(), "{case}");
    let set: BTreeSet<String> = found.grids.iter().cloned().collect();
    assert_eq!(
        set.len(),
        found.grids.len(),
        "a solution found twice: {case}"
    );
    set
}

/// Solution counts of one setting: cases, solutions, and how many cases
/// had 0, 1 and more solutions.
#[derive(Default)]
struct Tally {
    cases: usize,
    solutions: usize,
    none: usize,
    one: usize,
    many: usize,
    most: usize,
}

impl Tally {
    fn add(&mut self, count: usize) {
        self.cases += 1;
        self.solutions += count;
        match count {
            0 => self.none += 1,
            1 => self.one += 1,
            _ => self.many += 1,
        }
        self.most = self.most.max(count);
    }
}

fn show(set: &BTreeSet<String>) -> String {
    set.iter().take(4).map(|s| format!("{s}\n")).collect()
}

/// Runs [`cases`] random puzzles of a kind through the library and the
/// oracle; prints one summary line per setting.
fn check_kind(kind: Kind, seed: u64) {
    let start = Instant::now();
    let mut rng = Rng::new(seed);
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let (mut brute_time, mut slowest) = (Duration::ZERO, Duration::ZERO);
    let mut slowest_draw = Duration::ZERO;
    for _ in 0..cases() {
        let t = Instant::now();
        let case = random_case(kind, &mut rng);
        slowest_draw = slowest_draw.max(t.elapsed());
        for case in std::iter::once(case.clone()).chain(case.variant()) {
            let t = Instant::now();
            let want = brute_solutions(&case);
            brute_time += t.elapsed();
            slowest = slowest.max(t.elapsed());
            let got = library_solutions(&case);
            if got != want {
                let extra: BTreeSet<String> = got.difference(&want).cloned().collect();
                let missing: BTreeSet<String> = want.difference(&got).cloned().collect();
                panic!(
                    "{case}\nlibrary: {} solutions, oracle: {}\n\
                     only in the library ({}):\n{}only in the oracle ({}):\n{}",
                    got.len(),
                    want.len(),
                    extra.len(),
                    show(&extra),
                    missing.len(),
                    show(&missing),
                );
            }
            tallies.entry(case.setting()).or_default().add(want.len());
        }
    }
    for (setting, t) in &tallies {
        eprintln!(
            "{kind} ({setting}): {} cases, {} solutions (at most {}); \
             {} with none, {} with one, {} with more",
            t.cases, t.solutions, t.most, t.none, t.one, t.many
        );
    }
    eprintln!(
        "{kind}: {:.2} s in all, {:.2} s in the brute force (at most {:.1} ms a puzzle, \
         {:.1} ms to draw one)",
        start.elapsed().as_secs_f64(),
        brute_time.as_secs_f64(),
        slowest.as_secs_f64() * 1e3,
        slowest_draw.as_secs_f64() * 1e3,
    );
    // The mix covers every case, in every setting.
    for (setting, t) in &tallies {
        assert!(
            t.none > 0 && t.one > 0 && t.many > 0,
            "{kind} ({setting}): {} with none, {} with one, {} with more",
            t.none,
            t.one,
            t.many
        );
    }
}

#[test]
fn latin_matches_the_oracle() {
    check_kind(Kind::Latin, 0x1a71_0001);
}

#[test]
fn futoshiki_matches_the_oracle() {
    check_kind(Kind::Futoshiki, 0xf070_0002);
}

#[test]
fn hitori_matches_the_oracle() {
    check_kind(Kind::Hitori, 0x4170_0003);
}

#[test]
fn hidato_matches_the_oracle() {
    check_kind(Kind::Hidato, 0x41da_0004);
}

#[test]
fn slitherlink_matches_the_oracle() {
    check_kind(Kind::Slitherlink, 0x5117_0005);
}

#[test]
fn sudoku_matches_the_oracle() {
    check_kind(Kind::Sudoku, 0x5d0c_0006);
}

#[test]
fn queens_matches_the_oracle() {
    check_kind(Kind::Queens, 0x0ee5_0007);
}

/// Puzzles the random ones reach rarely or never: blank grids (every
/// loop, every Hamiltonian king path), every board size of queens, the
/// bare orders of latin squares, hitori up to 6x6, futoshiki 6x6, 9x9
/// sudoku with many blanks.
#[test]
fn edge_cases_match_the_oracle() {
    let check = |case: Case| {
        let want = brute_solutions(&case);
        assert_eq!(library_solutions(&case), want, "{case}");
    };
    let both = |kind, text: String| {
        for weak in [false, true] {
            let mut case = Case::new(kind, text.clone());
            case.weak = weak;
            check(case);
        }
    };
    for (rows, cols) in [
        (1, 1),
        (1, 2),
        (1, 4),
        (2, 1),
        (2, 2),
        (2, 4),
        (3, 3),
        (4, 1),
    ] {
        both(
            Kind::Slitherlink,
            (0..rows).map(|_| ".".repeat(cols) + "\n").collect(),
        );
    }
    for (rows, cols) in [(1, 1), (1, 5), (2, 2), (2, 4), (3, 3), (5, 1)] {
        let text = (0..rows)
            .map(|_| vec!["."; cols].join(" ") + "\n")
            .collect::<String>();
        check(Case::new(Kind::Hidato, text));
    }
    check(Case::new(Kind::Hidato, ". # .\n# . #\n. # .\n"));
    check(Case::new(Kind::Hidato, ". . .\n. # .\n. . .\n"));
    check(Case::new(Kind::Hidato, "# # #\n# . #\n"));
    for n in 1..=9 {
        check(Case::new(Kind::Queens, n.to_string()));
    }
    for text in ["1", "2", "3", "4", ".", "1\n", ". .\n. .\n"] {
        check(Case::new(Kind::Latin, text));
    }
    let mut rng = Rng::new(0xed6e);
    for _ in 0..20 {
        let (rows, cols) = (4 + rng.below(3), 4 + rng.below(3));
        let max = rows.max(cols);
        let numbers: Vec<u32> = (0..rows * cols)
            .map(|_| 1 + rng.below(max) as u32)
            .collect();
        both(
            Kind::Hitori,
            common::hitori::hitori_text(rows, cols, &numbers),
        );
    }
    for _ in 0..10 {
        let f = common::futoshiki::consistent_futoshiki(6, &mut rng);
        let mut case = Case::new(Kind::Futoshiki, f.text(&mut rng));
        if common::brute_solutions_up_to(&case, 1001).len() <= 1000 {
            check(case.clone());
            case.encoding = FutoshikiEncoding::Colors;
            check(case);
        }
    }
    for _ in 0..10 {
        let mut grid = common::sudoku::random_solved(3, &mut rng);
        for _ in 0..45 {
            grid[rng.below(9)][rng.below(9)] = 0;
        }
        let case = Case::new(
            Kind::Sudoku,
            common::sudoku::sudoku_text(3, &grid, &mut rng),
        );
        if common::brute_solutions_up_to(&case, 1001).len() <= 1000 {
            check(case);
        }
    }
}

/// The oracle on puzzles whose answers are known (from the library's own
/// tests and the literature), so that a bug shared by the oracle and the
/// library would show.
#[test]
fn oracle_knows_small_answers() {
    let count = |kind, text: &str, weak| {
        let mut case = Case::new(kind, text);
        case.weak = weak;
        brute_solutions(&case).len()
    };
    assert_eq!(count(Kind::Latin, "4", false), 576);
    assert_eq!(count(Kind::Latin, "1 . .\n. . 1\n. . .\n", false), 2);
    assert_eq!(count(Kind::Queens, "8", false), 92);
    assert_eq!(count(Kind::Queens, "6", false), 4);
    assert_eq!(count(Kind::Sudoku, "................", false), 288);
    assert_eq!(
        count(
            Kind::Futoshiki,
            ".<.<.<.\n. . . .\n. . . .\n. . . .\n",
            false
        ),
        24
    );
    assert_eq!(count(Kind::Slitherlink, ".", true), 2);
    assert_eq!(count(Kind::Slitherlink, ".", false), 1);
    assert_eq!(count(Kind::Slitherlink, "...", true), 8);
    assert_eq!(count(Kind::Slitherlink, "...", false), 6);
    assert_eq!(count(Kind::Slitherlink, "0", false), 0);

    let one = |kind, text: &str, weak| {
        let mut case = Case::new(kind, text);
        case.weak = weak;
        brute_solutions(&case).into_iter().collect::<Vec<String>>()
    };
    assert_eq!(one(Kind::Slitherlink, "0\n", true), ["+ +\n 0 \n+ +\n"]);
    assert_eq!(
        one(Kind::Slitherlink, "3.3", false),
        ["+-+-+-+\n|3   3|\n+-+-+-+\n"]
    );
    assert_eq!(
        one(Kind::Latin, "1 2 .\n. . 1\n. . .\n", false),
        ["1 2 3\n2 3 1\n3 1 2\n"]
    );
    assert_eq!(
        one(
            Kind::Futoshiki,
            "3 .<. .\n      ^\n. .>1 .\nv\n. 2 . .\n. . . .\n",
            false
        ),
        ["3 1<4 2\n      ^\n2 4>1 3\nv\n1 2 3 4\n4 3 2 1\n"]
    );
    assert_eq!(
        one(
            Kind::Hidato,
            ".  3 14  1\n.  .  .  .\n5  9  .  .\n.  .  8  .\n",
            false
        ),
        ["16  3 14  1\n 4 15  2 13\n 5  9 10 12\n 6  7  8 11\n"]
    );
    let wikipedia =
        "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";
    assert_eq!(
        one(Kind::Sudoku, wikipedia, false),
        ["534678912\n672195348\n198342567\n859761423\n426853791\n\
          713924856\n961537284\n287419635\n345286179\n"]
    );
    // Hitori: the diagonal is a weak solution only; the two 3s of column 2
    // and of row 1 need (1, 2) black, or (0, 2) and (1, 1).
    assert_eq!(count(Kind::Hitori, "1 1 2\n2 1 1\n1 2 2\n", false), 0);
    assert!(one(Kind::Hitori, "1 1 2\n2 1 1\n1 2 2\n", true)
        .contains(&"# 1 2\n2 # 1\n1 2 #\n".to_string()));
    assert_eq!(
        one(Kind::Hitori, "1 2 3\n2 3 3\n3 1 2\n", false),
        ["1 2 #\n2 # 3\n3 1 2\n", "1 2 3\n2 3 #\n3 1 2\n"]
    );
    // Seeds (numbers alone in their row and column) stay white, as the
    // library defines hitori (after Knuth): here every cell is a seed, so
    // blackening one cell, allowed by the usual rules, is not a solution.
    assert_eq!(one(Kind::Hitori, "1 2\n2 1\n", false), ["1 2\n2 1\n"]);
    // Two-digit hitori numbers align, black cells too.
    assert!(one(Kind::Hitori, "10 1 2 3 4 5 6 7 8 9 10\n", true)
        .contains(&"10  1  2  3  4  5  6  7  8  9  #\n".to_string()));
}
