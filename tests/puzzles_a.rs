//! Latin squares, futoshiki, sudoku and queens: every encoding against an
//! independent brute-force solver (in `tests/common`: plain backtracking
//! over cells with the puzzle's rules, no XCC), known counts, bad input through
//! the library and the binary, and generated puzzles.
//!
//! Solutions are compared through their printed form: the decoded text is
//! read back by the small readers below, not by the library's parsers.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Output, Stdio};

use xccd::puzzles::futoshiki::{self, Futoshiki, FutoshikiEncoding};
use xccd::puzzles::kinds::{self, EncodeOptions, Kind};
use xccd::puzzles::latin::LatinPuzzle;
use xccd::puzzles::sudoku::Sudoku;
use xccd::puzzles::{queens, solve, Encoded};

mod common;

use common::futoshiki::{consistent_futoshiki, random_futoshiki, Fut};
use common::latin::{brute, brute_latin, latin_text, random_square, Grid, Less};
use common::Rng;

/// An independent check of the latin rules, givens and inequalities.
fn obeys(n: usize, grid: &Grid, givens: &[Vec<usize>], less: &Less) -> bool {
    if grid.len() != n || grid.iter().any(|r| r.len() != n) {
        return false;
    }
    let want: BTreeSet<usize> = (1..=n).collect();
    for (i, row) in grid.iter().enumerate() {
        let row: BTreeSet<usize> = row.iter().copied().collect();
        let col: BTreeSet<usize> = grid.iter().map(|r| r[i]).collect();
        if row != want || col != want {
            return false;
        }
    }
    (0..n).all(|r| (0..n).all(|c| givens[r][c] == 0 || givens[r][c] == grid[r][c]))
        && less.iter().all(|&(a, b)| grid[a.0][a.1] < grid[b.0][b.1])
}

// ----- readers of printed solutions (independent of the library) -----

/// A grid printed as lines of space-separated numbers.
fn read_number_grid(text: &str) -> Grid {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(|t| t.parse().unwrap()).collect())
        .collect()
}

/// A futoshiki printed in its layout: the digits of the lines that start
/// with a digit, at the even columns.
fn read_futoshiki_grid(text: &str) -> Grid {
    text.lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            l.chars()
                .step_by(2)
                .map(|c| c.to_digit(10).unwrap() as usize)
                .collect()
        })
        .collect()
}

/// A 9x9 (or smaller) sudoku printed as lines of digits.
fn read_digit_grid(text: &str) -> Grid {
    text.lines()
        .map(|l| {
            l.chars()
                .map(|c| c.to_digit(10).unwrap() as usize)
                .collect()
        })
        .collect()
}

/// Every solution of an encoded puzzle, read back with `read`.
fn all_solutions(e: &dyn Encoded, read: fn(&str) -> Grid) -> (BTreeSet<Grid>, u64) {
    let s = solve(e, None, usize::MAX);
    assert!(s.complete);
    assert_eq!(s.grids.len() as u64, s.count);
    let set: BTreeSet<Grid> = s.grids.iter().map(|g| read(g)).collect();
    assert_eq!(set.len() as u64, s.count, "a solution printed twice");
    (set, s.count)
}

// ----- latin squares -----

#[test]
fn latin_known_counts() {
    for (n, count) in [(1, 1), (2, 2), (3, 12), (4, 576), (5, 161_280)] {
        let e = kinds::encode(Kind::Latin, &n.to_string(), &EncodeOptions::default()).unwrap();
        let s = solve(&*e, None, 0);
        assert_eq!((s.count, s.complete), (count, true), "order {n}");
    }
}

#[test]
fn latin_all_squares_of_order_4_are_latin_and_distinct() {
    let e = LatinPuzzle::parse("4").unwrap().encode();
    let (set, count) = all_solutions(&e, read_number_grid);
    assert_eq!(count, 576);
    let none = vec![vec![0; 4]; 4];
    assert!(set.iter().all(|g| obeys(4, g, &none, &[])));
    let brute: BTreeSet<Grid> = brute_latin(4, &none, usize::MAX).into_iter().collect();
    assert_eq!(set, brute);
}

#[test]
fn latin_random_partial_grids_match_brute_force() {
    let mut rng = Rng::new(0x1a71_5eed);
    let mut checked = 0;
    let mut with_solutions = 0;
    for round in 0..300 {
        let n = 4 + round % 2;
        let mut givens = vec![vec![0; n]; n];
        if round % 3 == 2 {
            // Fully random givens: often contradictory.
            for row in givens.iter_mut() {
                for v in row.iter_mut() {
                    if rng.chance(20) {
                        *v = 1 + rng.below(n);
                    }
                }
            }
        } else {
            let square = random_square(n, &mut rng);
            let keep = 15 + rng.below(40);
            for r in 0..n {
                for c in 0..n {
                    if rng.chance(keep) {
                        givens[r][c] = square[r][c];
                    }
                }
            }
        }
        let text = latin_text(&givens, &mut rng);
        let e = LatinPuzzle::parse(&text).unwrap().encode();
        let (got, _) = all_solutions(&e, read_number_grid);
        let want: BTreeSet<Grid> = brute_latin(n, &givens, usize::MAX).into_iter().collect();
        assert_eq!(got, want, "puzzle:\n{text}");
        assert!(got.iter().all(|g| obeys(n, g, &givens, &[])));
        checked += 1;
        with_solutions += usize::from(!got.is_empty());
    }
    assert_eq!(checked, 300);
    assert!(
        with_solutions > 150 && with_solutions < 300,
        "{with_solutions}"
    );
}

// ----- futoshiki -----

const ALL_ENCODINGS: [(FutoshikiEncoding, bool); 4] = [
    (FutoshikiEncoding::Pairs, true),
    (FutoshikiEncoding::Colors, true),
    (FutoshikiEncoding::Pairs, false),
    (FutoshikiEncoding::Colors, false),
];

#[test]
fn futoshiki_random_puzzles_match_brute_force_in_every_encoding() {
    let mut rng = Rng::new(0xf070_5b1c);
    let (mut solvable, mut unsolvable, mut unique) = (0, 0, 0);
    for round in 0..400 {
        let n = if round % 2 == 0 { 4 } else { 5 };
        let f = if round % 4 < 2 {
            consistent_futoshiki(n, &mut rng)
        } else {
            random_futoshiki(n, &mut rng)
        };
        let text = f.text(&mut rng);
        let less = f.less();
        let want: BTreeSet<Grid> = brute(n, &f.digits, &less, usize::MAX).into_iter().collect();
        let puzzle = Futoshiki::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        for (encoding, prune) in ALL_ENCODINGS {
            let e = puzzle.encode_with(encoding, prune);
            let (got, _) = all_solutions(&e, read_futoshiki_grid);
            assert_eq!(got, want, "{encoding} (pruned: {prune}), puzzle:\n{text}");
            for g in &got {
                assert!(obeys(n, g, &f.digits, &less));
            }
        }
        // The library's own checker agrees with ours on the solutions, and
        // the decoded text keeps the clues' layout.
        let s = solve(&puzzle.encode(FutoshikiEncoding::Colors), Some(3), 3);
        for text in &s.grids {
            let solved = Futoshiki::parse(text).unwrap();
            assert_eq!(solved.right, puzzle.right);
            assert_eq!(solved.down, puzzle.down);
            assert!(puzzle.is_solution(&read_futoshiki_grid(text)));
        }
        match want.len() {
            0 => unsolvable += 1,
            1 => {
                solvable += 1;
                unique += 1
            }
            _ => solvable += 1,
        }
    }
    // The mix covers every case.
    assert!(
        solvable > 100 && unsolvable > 50 && unique > 20,
        "{solvable} {unsolvable} {unique}"
    );
}

#[test]
fn futoshiki_domains_keep_every_solution() {
    // The pruned encoding is checked above; here the domains themselves:
    // every brute-force solution's values lie in them.
    let mut rng = Rng::new(0xd0_3a15);
    for round in 0..200 {
        let n = 4 + round % 2;
        let f = consistent_futoshiki(n, &mut rng);
        let puzzle = Futoshiki::parse(&f.text(&mut rng)).unwrap();
        let domains = puzzle.domains();
        for g in brute(n, &f.digits, &f.less(), usize::MAX) {
            for r in 0..n {
                for c in 0..n {
                    assert!(domains[r][c] & (1 << g[r][c]) != 0);
                }
            }
        }
    }
}

#[test]
fn futoshiki_without_clues_is_all_latin_squares() {
    for encoding in [FutoshikiEncoding::Pairs, FutoshikiEncoding::Colors] {
        let e = futoshiki::encode_text(". . . .\n. . . .\n. . . .\n. . . .\n", encoding).unwrap();
        assert_eq!(solve(&e, None, 0).count, 576);
    }
}

#[test]
fn futoshiki_chain_forces_the_row() {
    // 1 < 2 < 3 < 4 along the first row; the rest is free.
    let text = ".<.<.<.\n. . . .\n. . . .\n. . . .\n";
    for encoding in [FutoshikiEncoding::Pairs, FutoshikiEncoding::Colors] {
        let e = futoshiki::encode_text(text, encoding).unwrap();
        let s = solve(&e, None, usize::MAX);
        assert_eq!(s.count, 576 / 24);
        assert!(s.grids.iter().all(|g| g.starts_with("1<2<3<4\n")));
    }
}

#[test]
fn futoshiki_contradictions_have_no_solution() {
    // Some clue sets, counted by brute force.
    for text in [
        "1<.\n. .\n",
        ".<.\n^ ^\n.>.\n",
        ".<.\nv\n.<.\n",
        "2<.\n. .\n",
        "3 . .\n. 3 .\n. . .\n",
        ".<.<.\n^ v ^\n. . .\nv\n. .>.\n",
    ] {
        let f = Futoshiki::parse(text).unwrap();
        let n = f.n;
        let mut t = Fut::empty(n);
        for r in 0..n {
            for c in 0..n {
                t.digits[r][c] = f.digits[r][c].unwrap_or(0);
                if c + 1 < n {
                    t.h[r][c] = f.right[r][c].map_or(0, |o| o as i8);
                }
                if r + 1 < n {
                    t.v[r][c] = f.down[r][c].map_or(0, |o| o as i8);
                }
            }
        }
        let want = brute(n, &t.digits, &t.less(), usize::MAX).len() as u64;
        for encoding in [FutoshikiEncoding::Pairs, FutoshikiEncoding::Colors] {
            assert_eq!(solve(&f.encode(encoding), None, 0).count, want, "{text}");
        }
    }
    // The plainly contradictory ones.
    for text in ["2<.\n. .\n", "3 . .\n3 . .\n. . .\n", ".<.\nv v\n.>.\n"] {
        for encoding in [FutoshikiEncoding::Pairs, FutoshikiEncoding::Colors] {
            let e = futoshiki::encode_text(text, encoding).unwrap();
            assert_eq!(solve(&e, None, 0).count, 0, "{text}");
        }
    }
}

#[test]
fn generated_futoshiki_are_valid_by_brute_force() {
    for n in 1..=5 {
        for seed in 0..4 {
            let text = kinds::generate(Kind::Futoshiki, n, seed).unwrap();
            assert_eq!(text, kinds::generate(Kind::Futoshiki, n, seed).unwrap());
            let f = Futoshiki::parse(&text).unwrap();
            let mut t = Fut::empty(n);
            for r in 0..n {
                for c in 0..n {
                    t.digits[r][c] = f.digits[r][c].unwrap_or(0);
                    if c + 1 < n {
                        t.h[r][c] = f.right[r][c].map_or(0, |o| o as i8);
                    }
                    if r + 1 < n {
                        t.v[r][c] = f.down[r][c].map_or(0, |o| o as i8);
                    }
                }
            }
            let sols = brute(n, &t.digits, &t.less(), 2);
            assert_eq!(sols.len(), 1, "n = {n}, seed {seed}:\n{text}");
            let e = f.encode(FutoshikiEncoding::Pairs);
            let s = solve(&e, Some(2), 0);
            assert_eq!((s.count, s.complete), (1, true));
        }
    }
}

#[test]
fn generated_7x7_futoshiki_is_valid() {
    let text = kinds::generate(Kind::Futoshiki, 7, 42).unwrap();
    for encoding in [FutoshikiEncoding::Pairs, FutoshikiEncoding::Colors] {
        let e = futoshiki::encode_text(&text, encoding).unwrap();
        let s = solve(&e, Some(2), 1);
        assert_eq!((s.count, s.complete), (1, true), "{text}");
        assert!(e.puzzle().is_solution(&read_futoshiki_grid(&s.grids[0])));
    }
}

// ----- sudoku -----

const WIKIPEDIA: &str =
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";
const WIKIPEDIA_SOLUTION: &str = "534678912\n672195348\n198342567\n859761423\n426853791\n\
                                  713924856\n961537284\n287419635\n345286179\n";
const HARDEST: &str =
    "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..";
const HARDEST_SOLUTION: &str = "812753649\n943682175\n675491283\n154237896\n369845721\n\
                                287169534\n521974368\n438526917\n796318452\n";
/// The first 17-clue puzzle of Gordon Royle's list.
const SEVENTEEN: &str =
    "000000010400000000020000000000050407008000300001090000300400200050100000000806000";

/// An independent sudoku check: rows, columns and boxes, givens kept.
fn sudoku_ok(puzzle: &str, grid: &Grid) -> bool {
    let givens: Vec<usize> = puzzle
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c.to_digit(10).unwrap_or(0) as usize)
        .collect();
    let ok_group = |cells: Vec<usize>| {
        let set: BTreeSet<usize> = cells.into_iter().collect();
        set == (1..=9).collect()
    };
    grid.len() == 9
        && (0..9).all(|i| {
            ok_group(grid[i].clone())
                && ok_group((0..9).map(|r| grid[r][i]).collect())
                && ok_group(
                    (0..9)
                        .map(|k| grid[3 * (i / 3) + k / 3][3 * (i % 3) + k % 3])
                        .collect(),
                )
        })
        && (0..81).all(|k| givens[k] == 0 || givens[k] == grid[k / 9][k % 9])
}

#[test]
fn sudoku_known_puzzles_are_unique() {
    for (puzzle, solution) in [
        (WIKIPEDIA, Some(WIKIPEDIA_SOLUTION)),
        (HARDEST, Some(HARDEST_SOLUTION)),
        (SEVENTEEN, None),
    ] {
        let e = kinds::encode(Kind::Sudoku, puzzle, &EncodeOptions::default()).unwrap();
        let s = solve(&*e, Some(2), 2);
        assert_eq!((s.count, s.complete), (1, true), "{puzzle}");
        let grid = read_digit_grid(&s.grids[0]);
        assert!(sudoku_ok(puzzle, &grid), "{}", s.grids[0]);
        if let Some(solution) = solution {
            assert_eq!(s.grids[0], solution);
        }
    }
}

#[test]
fn sudoku_spellings_agree() {
    // Nine lines of nine, groups, tokens, 0 for blanks: the same puzzle.
    let rows: Vec<&str> = (0..9).map(|r| &WIKIPEDIA[9 * r..9 * r + 9]).collect();
    let lines = rows.join("\n");
    let groups: String = WIKIPEDIA
        .chars()
        .enumerate()
        .flat_map(|(k, c)| {
            let sep = if k % 9 == 8 {
                Some('\n')
            } else if k % 3 == 2 {
                Some(' ')
            } else {
                None
            };
            std::iter::once(c).chain(sep)
        })
        .collect();
    let tokens: String = rows
        .iter()
        .map(|r| {
            let t: Vec<String> = r
                .chars()
                .map(|c| if c == '.' { "0".into() } else { c.to_string() })
                .collect();
            t.join(" ") + "\n"
        })
        .collect();
    let reference = Sudoku::parse(WIKIPEDIA).unwrap();
    for text in [lines, groups, tokens, WIKIPEDIA.replace('.', "0")] {
        assert_eq!(Sudoku::parse(&text).unwrap(), reference, "{text}");
    }
}

#[test]
fn sudoku_4x4_random_grids_match_brute_force() {
    // A 4x4 sudoku is a latin square whose four 2x2 boxes hold 1..4.
    let boxes_ok = |g: &Grid| {
        (0..4).all(|b| {
            let set: BTreeSet<usize> = (0..4)
                .map(|k| g[2 * (b / 2) + k / 2][2 * (b % 2) + k % 2])
                .collect();
            set.len() == 4
        })
    };
    let mut rng = Rng::new(0x5d0c_0404);
    for _ in 0..200 {
        let mut givens = vec![vec![0; 4]; 4];
        for row in givens.iter_mut() {
            for v in row.iter_mut() {
                if rng.chance(25) {
                    *v = 1 + rng.below(4);
                }
            }
        }
        let text: String = givens
            .iter()
            .map(|r| r.iter().map(|v| v.to_string()).collect::<String>() + "\n")
            .collect();
        let want: BTreeSet<Grid> = brute_latin(4, &givens, usize::MAX)
            .into_iter()
            .filter(|g| boxes_ok(g))
            .collect();
        let e = Sudoku::parse(&text).unwrap().encode();
        let (got, _) = all_solutions(&e, read_digit_grid);
        assert_eq!(got, want, "{text}");
    }
}

#[test]
fn sudoku_16x16_in_tokens() {
    // A solved 16x16 pattern with a third of the cells blanked.
    let solved: Grid = (0..16)
        .map(|r| {
            (0..16)
                .map(|c| (4 * (r % 4) + r / 4 + c) % 16 + 1)
                .collect()
        })
        .collect();
    let mut rng = Rng::new(16);
    let text: String = solved
        .iter()
        .map(|row| {
            let t: Vec<String> = row
                .iter()
                .map(|v| {
                    if rng.chance(33) {
                        ".".into()
                    } else {
                        v.to_string()
                    }
                })
                .collect();
            t.join(" ") + "\n"
        })
        .collect();
    let puzzle = Sudoku::parse(&text).unwrap();
    assert_eq!((puzzle.m, puzzle.n), (4, 16));
    let e = puzzle.encode();
    let s = solve(&e, Some(1), 1);
    assert_eq!(s.count, 1);
    let grid = read_number_grid(&s.grids[0]);
    assert!(puzzle.is_solution(&grid));
    assert!(puzzle.is_solution(&solved));
}

// ----- queens -----

#[test]
fn queens_known_counts_and_boards() {
    let counts = [1, 0, 0, 2, 10, 4, 40, 92, 352, 724];
    for (k, &count) in counts.iter().enumerate() {
        let n = k + 1;
        let e = queens::encode_text(&format!("{n}\n")).unwrap();
        let s = solve(&e, None, usize::MAX);
        assert_eq!(s.count, count, "n = {n}");
        // Every board: n queens, none attacking another (checked here).
        let boards: BTreeSet<&String> = s.grids.iter().collect();
        assert_eq!(boards.len() as u64, count);
        for b in &s.grids {
            let queens: Vec<(usize, usize)> = b
                .lines()
                .enumerate()
                .flat_map(|(i, l)| {
                    l.chars()
                        .enumerate()
                        .filter(|p| p.1 == 'Q')
                        .map(move |p| (i, p.0))
                })
                .collect();
            assert_eq!(queens.len(), n);
            for (x, &(i, j)) in queens.iter().enumerate() {
                for &(a, c) in &queens[..x] {
                    assert!(a != i && c != j && a.abs_diff(i) != c.abs_diff(j), "{b}");
                }
            }
        }
    }
}

#[test]
fn queens_11_and_12() {
    for (n, count) in [(11, 2680), (12, 14200)] {
        let e = queens::encode(n);
        assert_eq!(solve(&e, None, 0).count, count);
    }
}

// ----- bad input, through the library -----

/// (kind, text, line, column, a word of the message)
const BAD: &[(Kind, &str, usize, usize, &str)] = &[
    (Kind::Latin, "", 1, 1, "empty"),
    (Kind::Latin, "x", 1, 1, "expected an order"),
    (Kind::Latin, "  0\n", 1, 3, "between 1 and"),
    (Kind::Latin, "1 2\n3 .\n", 2, 1, "out of range"),
    (Kind::Latin, "1 2\n.\n", 2, 2, "1 entries, expected 2"),
    (Kind::Latin, "1 2 3\n. . .\n", 1, 5, "3 entries, expected 2"),
    (Kind::Latin, "1 2\n. x\n", 2, 3, "unknown symbol"),
    (Kind::Latin, "1 2\n. 0\n", 2, 3, "out of range"),
    (Kind::Queens, "", 1, 1, "empty"),
    (Kind::Queens, "abc", 1, 1, "board size"),
    (Kind::Queens, "\n 0", 2, 2, "between 1 and"),
    (Kind::Queens, "8 8", 1, 3, "unexpected"),
    (Kind::Queens, "8\n1", 2, 1, "unexpected"),
    (Kind::Sudoku, "", 1, 1, "empty"),
    (
        Kind::Sudoku,
        "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..7x",
        1,
        81,
        "unknown symbol",
    ),
    (
        Kind::Sudoku,
        "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..7",
        1,
        81,
        "found 80 cells",
    ),
    (
        Kind::Sudoku,
        "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..799",
        1,
        82,
        "too many cells",
    ),
    (
        Kind::Sudoku,
        "1..7\n....\n....\n....\n",
        1,
        4,
        "out of range 1..4",
    ),
    (
        Kind::Sudoku,
        "1 . . .\n. . 2 .\n. 3\n. . . 4\n",
        3,
        4,
        "2 entries, expected 4",
    ),
    (
        Kind::Sudoku,
        "1 . . .\n. . 2 .\n. 3 . 5\n. . . 4\n",
        3,
        7,
        "out of range",
    ),
    (Kind::Sudoku, "1 . .\n. . 2\n. 3 .\n", 1, 1, "not a sudoku"),
    (
        Kind::Sudoku,
        "1 . . .\n. . 2 .\n. 3 . ?\n. . . 4\n",
        3,
        7,
        "unknown symbol",
    ),
    (Kind::Futoshiki, "", 1, 1, "empty"),
    (Kind::Futoshiki, " \n\n", 1, 1, "empty"),
    (
        Kind::Futoshiki,
        "1 2\n2 1 3\n",
        2,
        4,
        "longer than the first row",
    ),
    (Kind::Futoshiki, "1 2 3\n2 3\n3 1 2\n", 2, 4, "2 cells"),
    (Kind::Futoshiki, "1 x\n. .\n", 1, 3, "unknown symbol"),
    (Kind::Futoshiki, "1 3\n. .\n", 1, 3, "out of range 1..2"),
    (Kind::Futoshiki, "1 0\n. .\n", 1, 3, "out of range"),
    (
        Kind::Futoshiki,
        ". . .\n. . <\n. . .\n",
        2,
        5,
        "where a cell belongs",
    ),
    (Kind::Futoshiki, ".^.\n. .\n", 1, 2, "vertical relation"),
    (Kind::Futoshiki, ". .\n ^\n. .\n", 2, 2, "under a"),
    (
        Kind::Futoshiki,
        ". .\n <\n. .\n",
        2,
        2,
        "horizontal relation",
    ),
    (
        Kind::Futoshiki,
        ". .\n    ^\n. .\n",
        2,
        5,
        "longer than the rows",
    ),
    (
        Kind::Futoshiki,
        "^\n. .\n. .\n",
        1,
        1,
        "expected a row of cells",
    ),
    (Kind::Futoshiki, ". .\n. .\n^\n", 3, 1, "after the last row"),
    (
        Kind::Futoshiki,
        ". .\n^\nv\n. .\n",
        3,
        1,
        "expected a row of cells",
    ),
    (Kind::Futoshiki, ". .\n^\n\n. .\n", 3, 1, "blank line"),
    (Kind::Futoshiki, ". .\n. .\n. .\n", 3, 1, "too many rows"),
    (Kind::Futoshiki, ". . .\n. . .\n", 3, 1, "only 2 rows"),
    (Kind::Futoshiki, ". .<\n", 1, 4, "end with a cell"),
    (
        Kind::Futoshiki,
        ". .\n  1\n. .\n",
        2,
        3,
        "on a line of relations",
    ),
    (Kind::Futoshiki, ". .\nx\n. .\n", 2, 1, "unknown symbol"),
    (Kind::Futoshiki, ". . . . . . . . . .\n", 1, 19, "at most 9"),
    (Kind::Futoshiki, ".\t.\n. .\n", 1, 2, "unknown symbol"),
    (Kind::Futoshiki, ".   .\n", 1, 3, "missing cell"),
    (
        Kind::Futoshiki,
        ".2.\n. .\n",
        1,
        2,
        "where a relation belongs",
    ),
];

#[test]
fn bad_input_is_reported_with_its_place() {
    for &(kind, text, line, column, word) in BAD {
        let err = match kinds::encode(kind, text, &EncodeOptions::default()) {
            Ok(_) => panic!("{kind} {text:?} was accepted"),
            Err(e) => e,
        };
        assert_eq!(
            (err.line, err.column),
            (line, column),
            "{kind} {text:?}: {err}"
        );
        assert!(err.message.contains(word), "{kind} {text:?}: {err}");
    }
}

#[test]
fn futoshiki_layout_variations_are_accepted() {
    let reference = Futoshiki::parse("1<.\n^\n. .\n").unwrap();
    for text in [
        "1<.  \n^   \n. .\n",
        "\n\n1<.\n^\n. .\n\n\n",
        "1<.\r\n^\r\n. .\r\n",
        "1<.\n^\n. .",
    ] {
        assert_eq!(Futoshiki::parse(text).unwrap(), reference, "{text:?}");
    }
    // Blank or absent relation lines.
    let a = Futoshiki::parse("1 .\n\n. .\n").unwrap();
    let b = Futoshiki::parse("1 .\n. .\n").unwrap();
    assert_eq!(a, b);
}

// ----- the binary -----

fn xccd(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the xccd binary runs");
    // The program may exit (bad arguments) before reading its input: a
    // broken pipe here is not the test's failure.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn cli_reports_bad_input_with_place_and_exit_2() {
    for &(kind, input, line, column, _) in BAD {
        for sub in ["solve", "check", "encode"] {
            let out = xccd(&["puzzle", sub, kind.name(), "-"], input);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{sub} {kind} {input:?}: {err}");
            assert!(
                err.contains(&format!("<stdin>: line {line}, column {column}:")),
                "{sub} {kind} {input:?}: {err}"
            );
        }
    }
    // A file's name is in the message.
    let path = std::env::temp_dir().join(format!("xccd-puzzles-a-{}.txt", std::process::id()));
    std::fs::write(&path, "1 x\n. .\n").unwrap();
    let out = xccd(
        &["puzzle", "solve", "futoshiki", path.to_str().unwrap()],
        "",
    );
    std::fs::remove_file(&path).unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}: line 1, column 3: unknown symbol",
            path.display()
        )),
        "{err}"
    );
    // Unknown kinds and encodings are usage errors.
    assert_eq!(
        xccd(&["puzzle", "solve", "kakuro", "-"], "").status.code(),
        Some(2)
    );
    let out = xccd(
        &["puzzle", "solve", "futoshiki", "-", "--encoding", "bits"],
        ". .\n. .\n",
    );
    assert_eq!(out.status.code(), Some(2));
    let out = xccd(&["puzzle", "generate", "sudoku", "--size", "9"], "");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn cli_solves_counts_and_prints_statistics() {
    let out = xccd(&["puzzle", "solve", "queens", "-", "--count"], "8\n");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "92\n");
    let err = text(&out.stderr);
    assert!(
        err.contains("Altogether 92 solutions, 15559 updates, 856 nodes"),
        "{err}"
    );
    let out = xccd(
        &[
            "puzzle", "solve", "queens", "-", "--count", "--engine", "links",
        ],
        "8\n",
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("Altogether 92 solutions, 16680 updates, 1049 nodes"),
        "{err}"
    );

    let out = xccd(&["puzzle", "solve", "queens", "-", "--all", "--quiet"], "4");
    assert_eq!(
        text(&out.stdout),
        ".Q..\n...Q\nQ...\n..Q.\n\n..Q.\nQ...\n...Q\n.Q..\n"
    );
    assert_eq!(text(&out.stderr), "");

    let out = xccd(
        &["puzzle", "solve", "latin", "-", "--limit", "3", "-q"],
        "3",
    );
    assert_eq!(text(&out.stdout).split("\n\n").count(), 3);

    let out = xccd(&["puzzle", "solve", "sudoku", "-"], WIKIPEDIA);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), WIKIPEDIA_SOLUTION);

    // No solution: exit 0, "no solution" on stderr.
    let out = xccd(&["puzzle", "solve", "futoshiki", "-"], "2<.\n. .\n");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "");
    assert!(text(&out.stderr).contains("no solution"));

    for encoding in ["pairs", "colors"] {
        let out = xccd(
            &[
                "puzzle",
                "solve",
                "futoshiki",
                "-",
                "--count",
                "--encoding",
                encoding,
            ],
            ".<.<.<.\n. . . .\n. . . .\n. . . .\n",
        );
        assert_eq!(text(&out.stdout), "24\n", "{encoding}");
    }
}

#[test]
fn cli_check_says_valid_or_invalid() {
    let out = xccd(&["puzzle", "check", "sudoku", "-"], HARDEST);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "valid: exactly one solution\n");
    assert!(text(&out.stderr).contains("Altogether 1 solution,"));

    let out = xccd(&["puzzle", "check", "futoshiki", "-", "-q"], "2<.\n. .\n");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "invalid: no solution\n");

    let out = xccd(&["puzzle", "check", "latin", "-", "-q"], "3");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "invalid: more than one solution\n");
}

#[test]
fn cli_generate_then_check_then_encode() {
    let out = xccd(
        &[
            "puzzle",
            "generate",
            "futoshiki",
            "--size",
            "5",
            "--seed",
            "7",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let puzzle = text(&out.stdout);
    let again = xccd(
        &[
            "puzzle",
            "generate",
            "futoshiki",
            "--size",
            "5",
            "--seed",
            "7",
            "-q",
        ],
        "",
    );
    assert_eq!(text(&again.stdout), puzzle);
    for encoding in ["pairs", "colors"] {
        let out = xccd(
            &["puzzle", "check", "futoshiki", "-", "--encoding", encoding],
            &puzzle,
        );
        assert_eq!(out.status.code(), Some(0), "{puzzle}");
        assert_eq!(text(&out.stdout), "valid: exactly one solution\n");

        // The DLX text solves to one solution with `xccd solve`.
        let out = xccd(
            &["puzzle", "encode", "futoshiki", "-", "--encoding", encoding],
            &puzzle,
        );
        assert_eq!(out.status.code(), Some(0));
        let dlx = text(&out.stdout);
        assert_eq!(
            dlx.contains(':'),
            encoding == "colors",
            "colors only in colors"
        );
        let out = xccd(&["solve", "-", "--count", "-q"], &dlx);
        assert_eq!(text(&out.stdout), "1\n");
    }
}

// ----- a benchmark (run by hand) -----

/// Solves with at most 2 solutions and `max_nodes`; prints one line.
fn bench_line(label: &str, e: &dyn Encoded, max_nodes: Option<u64>) {
    use xccd::xcc::{CountOnly, RunConfig, Solver, Status, Task};
    let config = RunConfig {
        max_solutions: Some(2),
        max_nodes,
        ..RunConfig::default()
    };
    let start = std::time::Instant::now();
    let outcome = Solver::new(e.problem())
        .run(&Task::root(), &config, &mut CountOnly)
        .unwrap();
    let stopped = if outcome.status == Status::NodeLimit {
        " (stopped at the node limit)"
    } else {
        ""
    };
    println!(
        "  {label}: {} solution(s), {} nodes, {} updates, {:.3} s{stopped}",
        outcome.stats.solutions,
        outcome.stats.nodes,
        outcome.stats.updates,
        start.elapsed().as_secs_f64()
    );
}

/// `cargo test --profile ci --test puzzles_a -- --ignored --nocapture`:
/// time and nodes to solve and prove unique generated 9x9 futoshiki in
/// each encoding (with domains; without them, up to 50 million nodes), and
/// the "hardest" sudoku.
#[test]
#[ignore]
fn benchmark_futoshiki_9x9_and_hard_sudoku() {
    for seed in 1..=3 {
        let start = std::time::Instant::now();
        let text = kinds::generate(Kind::Futoshiki, 9, seed).unwrap();
        let clues = text
            .chars()
            .filter(|c| "<>^v123456789".contains(*c))
            .count();
        println!(
            "futoshiki 9x9 seed {seed}: {clues} clues, generated in {:.2} s",
            start.elapsed().as_secs_f64()
        );
        let puzzle = Futoshiki::parse(&text).unwrap();
        for (encoding, prune) in ALL_ENCODINGS {
            let e = puzzle.encode_with(encoding, prune);
            let limit = if prune { None } else { Some(50_000_000) };
            bench_line(&format!("{encoding:6} domains={prune:5}"), &e, limit);
        }
    }
    let e = kinds::encode(Kind::Sudoku, HARDEST, &EncodeOptions::default()).unwrap();
    bench_line("sudoku 'hardest'", &*e, None);
    let e = kinds::encode(Kind::Sudoku, WIKIPEDIA, &EncodeOptions::default()).unwrap();
    bench_line("sudoku Wikipedia", &*e, None);
}
