//! `Puzzle::estimate`: sound upper bounds of every kind's encoding (never
//! below the real items, options and entries), reasonably tight on typical
//! puzzles, computed in milliseconds for the puzzles whose encodings would
//! take seconds and gigabytes, and within the service's limits for large
//! legitimate puzzles.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use xccd::puzzles::kinds::{generate, generate_rect};
use xccd::puzzles::{
    EncodeOptions, EncodingLimits, EncodingSize, FutoshikiEncoding, Kind, Measure, Puzzle,
    SizeError,
};

/// SplitMix64, for reproducible random puzzles.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
    /// True with probability `p` percent.
    fn chance(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.range(0, i);
            v.swap(i, j);
        }
    }
}

fn puzzle(kind: Kind, text: String) -> Puzzle {
    Puzzle {
        kind,
        text,
        options: EncodeOptions::default(),
    }
}

/// The real size of a puzzle's encoding.
fn real(p: &Puzzle) -> (u64, u64, u64) {
    let encoded = p.encode().expect("the test's puzzles are valid");
    let problem = encoded.problem();
    (
        problem.items().len() as u64,
        problem.options().len() as u64,
        problem.entries() as u64,
    )
}

/// The worst (largest) ratios estimate / real per kind, and how many
/// puzzles were checked.
#[derive(Default)]
struct Worst {
    checked: usize,
    items: f64,
    options: f64,
    entries: f64,
}

/// Checks that the estimate bounds the real encoding, and records the
/// ratios under the puzzle's kind.
fn check(p: &Puzzle, worst: &mut HashMap<String, Worst>) {
    check_as(p, &p.kind.to_string(), worst)
}

/// [`check`], recording the ratios under `label`.
fn check_as(p: &Puzzle, label: &str, worst: &mut HashMap<String, Worst>) {
    let size = p.estimate().unwrap_or_else(|e| panic!("{e}\n{}", p.text));
    let (items, options, entries) = real(p);
    assert!(
        size.items >= items && size.options >= options && size.entries >= entries,
        "{} estimate {size:?} below the real ({items}, {options}, {entries}) for\n{}",
        p.kind,
        p.text
    );
    assert!(size.work >= items + options + entries, "{size:?}");
    let ratio = |bound: u64, real: u64| bound as f64 / real.max(1) as f64;
    let w = worst.entry(label.to_string()).or_default();
    w.checked += 1;
    w.items = w.items.max(ratio(size.items, items));
    w.options = w.options.max(ratio(size.options, options));
    w.entries = w.entries.max(ratio(size.entries, entries));
}

/// Hidato labels: holes make the board distances longer than the plane's,
/// which the estimate uses.
const HOLES_RANDOM: &str = "hidato, random holes";
const HOLES_WALK: &str = "hidato, walk with holes";

/// A hidato board with holes where real puzzles have them: the cells of a
/// random self-avoiding king walk are the board, numbered along the walk,
/// `given` percent of them given; the other cells are holes.
fn walk_hidato(rng: &mut Rng, rows: usize, cols: usize, given: u64) -> String {
    let mut number = vec![0usize; rows * cols];
    let mut at = rng.range(0, rows * cols - 1);
    let length = rng.range(1, rows * cols);
    for k in 1..=length {
        number[at] = k;
        let (r, c) = ((at / cols) as i64, (at % cols) as i64);
        let free: Vec<usize> = (-1..=1i64)
            .flat_map(|dr| (-1..=1i64).map(move |dc| (r + dr, c + dc)))
            .filter(|&(rr, cc)| rr >= 0 && cc >= 0 && rr < rows as i64 && cc < cols as i64)
            .map(|(rr, cc)| rr as usize * cols + cc as usize)
            .filter(|&y| number[y] == 0)
            .collect();
        if free.is_empty() {
            break;
        }
        at = free[rng.range(0, free.len() - 1)];
    }
    let cell: Vec<String> = number
        .iter()
        .map(|&k| match k {
            0 => "#".to_string(),
            k if rng.chance(given) => k.to_string(),
            _ => ".".to_string(),
        })
        .collect();
    let mut text = String::new();
    for r in 0..rows {
        text.push_str(&cell[r * cols..(r + 1) * cols].join(" "));
        text.push('\n');
    }
    text
}

fn latin_text(rng: &mut Rng, n: usize, fill: u64) -> String {
    if rng.chance(15) {
        return format!("{n}\n");
    }
    let mut text = String::new();
    for _ in 0..n {
        let row: Vec<String> = (0..n)
            .map(|_| {
                if rng.chance(fill) {
                    rng.range(1, n).to_string()
                } else {
                    ".".into()
                }
            })
            .collect();
        text.push_str(&row.join(" "));
        text.push('\n');
    }
    text
}

fn sudoku_text(rng: &mut Rng, box_side: usize, fill: u64) -> String {
    let n = box_side * box_side;
    let value = |rng: &mut Rng| {
        if rng.chance(fill) {
            rng.range(1, n)
        } else {
            0
        }
    };
    let mut text = String::new();
    if n <= 9 && rng.chance(50) {
        // One character per cell.
        for _ in 0..n {
            for _ in 0..n {
                let v = value(rng);
                text.push(if v == 0 {
                    '.'
                } else {
                    (b'0' + v as u8) as char
                });
            }
            text.push('\n');
        }
    } else {
        for _ in 0..n {
            let row: Vec<String> = (0..n)
                .map(|_| match value(rng) {
                    0 => ".".to_string(),
                    v => v.to_string(),
                })
                .collect();
            text.push_str(&row.join(" "));
            text.push('\n');
        }
    }
    text
}

fn futoshiki_text(rng: &mut Rng, n: usize) -> String {
    let mut text = String::new();
    for r in 0..n {
        if r > 0 {
            let line: String = (0..2 * n - 1)
                .map(|j| match (j % 2, rng.range(0, 9)) {
                    (0, 0) => '^',
                    (0, 1) => 'v',
                    _ => ' ',
                })
                .collect();
            text.push_str(line.trim_end());
            text.push('\n');
        }
        for c in 0..n {
            if c > 0 {
                text.push(match rng.range(0, 7) {
                    0 => '<',
                    1 => '>',
                    _ => ' ',
                });
            }
            if rng.chance(20) {
                text.push_str(&rng.range(1, n).to_string());
            } else {
                text.push('.');
            }
        }
        text.push('\n');
    }
    text
}

fn hitori_text(rng: &mut Rng, rows: usize, cols: usize) -> String {
    let max = rows.max(cols);
    // Few values make many repeats, many values many seeds.
    let values = rng.range(1, max);
    let mut text = String::new();
    for _ in 0..rows {
        let row: Vec<String> = (0..cols)
            .map(|_| rng.range(1, values).to_string())
            .collect();
        text.push_str(&row.join(" "));
        text.push('\n');
    }
    text
}

/// A hidato board with `holes` and `givens` percent of holes and givens
/// (distinct numbers at random board cells; at least one board cell).
fn hidato_text(rng: &mut Rng, rows: usize, cols: usize, holes: u64, givens: u64) -> String {
    let mut hole: Vec<bool> = (0..rows * cols).map(|_| rng.chance(holes)).collect();
    let keep = rng.range(0, rows * cols - 1);
    hole[keep] = false;
    let board: Vec<usize> = (0..rows * cols).filter(|&i| !hole[i]).collect();
    let n = board.len();
    let mut numbers: Vec<usize> = (1..=n).collect();
    rng.shuffle(&mut numbers);
    let mut cell = vec![String::from("#"); rows * cols];
    for (&i, &k) in board.iter().zip(&numbers) {
        cell[i] = if rng.chance(givens) {
            k.to_string()
        } else {
            ".".into()
        };
    }
    let mut text = String::new();
    for r in 0..rows {
        text.push_str(&cell[r * cols..(r + 1) * cols].join(" "));
        text.push('\n');
    }
    text
}

/// A hidato whose givens follow a Hamiltonian king path (a snake), `given`
/// percent of the numbers given: closer to real puzzles than random givens.
fn snake_hidato(rng: &mut Rng, rows: usize, cols: usize, given: u64) -> String {
    let mut cell = vec![String::new(); rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            let k = r * cols + if r % 2 == 0 { c } else { cols - 1 - c } + 1;
            cell[r * cols + c] = if rng.chance(given) {
                k.to_string()
            } else {
                ".".into()
            };
        }
    }
    let mut text = String::new();
    for r in 0..rows {
        text.push_str(&cell[r * cols..(r + 1) * cols].join(" "));
        text.push('\n');
    }
    text
}

fn slitherlink_text(rng: &mut Rng, rows: usize, cols: usize, clues: u64) -> String {
    let mut text = String::new();
    for _ in 0..rows {
        for _ in 0..cols {
            text.push(if rng.chance(clues) {
                (b'0' + rng.range(0, 3) as u8) as char
            } else {
                '.'
            });
        }
        text.push('\n');
    }
    text
}

#[test]
fn estimates_bound_random_puzzles_of_every_kind() {
    let mut rng = Rng(0x5eed_0f51_2e00);
    let mut worst: HashMap<String, Worst> = HashMap::new();
    for _ in 0..120 {
        let n = rng.range(1, 9);
        let fill = rng.range(0, 60) as u64;
        check(
            &puzzle(Kind::Latin, latin_text(&mut rng, n, fill)),
            &mut worst,
        );
    }
    for n in [12, 16, 20] {
        check(
            &puzzle(Kind::Latin, latin_text(&mut rng, n, 30)),
            &mut worst,
        );
    }
    for _ in 0..120 {
        let side = if rng.chance(50) { 2 } else { 3 };
        let fill = rng.range(0, 60) as u64;
        check(
            &puzzle(Kind::Sudoku, sudoku_text(&mut rng, side, fill)),
            &mut worst,
        );
    }
    for side in [4, 5] {
        check(
            &puzzle(Kind::Sudoku, sudoku_text(&mut rng, side, 40)),
            &mut worst,
        );
    }
    for n in (1..=40).chain([64, 100]) {
        check(&puzzle(Kind::Queens, format!("{n}\n")), &mut worst);
    }
    for seed in 0..150u64 {
        let n = rng.range(1, 9);
        let mut p = if seed < 30 {
            let n = 3 + seed as usize % 4;
            puzzle(Kind::Futoshiki, generate(Kind::Futoshiki, n, seed).unwrap())
        } else {
            puzzle(Kind::Futoshiki, futoshiki_text(&mut rng, n))
        };
        check(&p, &mut worst);
        p.options.encoding = FutoshikiEncoding::Colors;
        check(&p, &mut worst);
    }
    for seed in 0..150u64 {
        let p = if seed < 30 {
            let n = 2 + seed as usize % 6;
            puzzle(Kind::Hitori, generate(Kind::Hitori, n, seed).unwrap())
        } else {
            let (rows, cols) = (rng.range(1, 12), rng.range(1, 12));
            puzzle(Kind::Hitori, hitori_text(&mut rng, rows, cols))
        };
        check(&p, &mut worst);
    }
    check(
        &puzzle(Kind::Hitori, hitori_text(&mut rng, 40, 40)),
        &mut worst,
    );
    for i in 0..400 {
        let (rows, cols) = (rng.range(1, 9), rng.range(1, 9));
        let (label, text) = match i % 5 {
            0 => ("hidato", hidato_text(&mut rng, rows, cols, 0, 0)),
            1 => {
                let holes = rng.range(0, 40) as u64;
                (HOLES_RANDOM, hidato_text(&mut rng, rows, cols, holes, 0))
            }
            2 => {
                let (holes, givens) = (rng.range(0, 40) as u64, rng.range(0, 60) as u64);
                (
                    HOLES_RANDOM,
                    hidato_text(&mut rng, rows, cols, holes, givens),
                )
            }
            3 => {
                let given = rng.range(10, 60) as u64;
                ("hidato", snake_hidato(&mut rng, rows, cols, given))
            }
            _ => {
                let given = rng.range(0, 60) as u64;
                (HOLES_WALK, walk_hidato(&mut rng, rows, cols, given))
            }
        };
        // Random holes may leave no hole.
        let label = if text.contains('#') { label } else { "hidato" };
        check_as(&puzzle(Kind::Hidato, text), label, &mut worst);
    }
    for (rows, cols) in [(12, 12), (1, 40), (3, 30), (15, 15)] {
        check(
            &puzzle(Kind::Hidato, snake_hidato(&mut rng, rows, cols, 30)),
            &mut worst,
        );
        let text = walk_hidato(&mut rng, rows, cols, 30);
        let label = if text.contains('#') {
            HOLES_WALK
        } else {
            "hidato"
        };
        check_as(&puzzle(Kind::Hidato, text), label, &mut worst);
    }
    for seed in 0..200u64 {
        let p = if seed < 30 {
            let (rows, cols) = (2 + seed as usize % 5, 2 + seed as usize / 5 % 5);
            let text = generate_rect(Kind::Slitherlink, rows, cols, seed).unwrap();
            puzzle(Kind::Slitherlink, text)
        } else {
            let (rows, cols) = (rng.range(1, 15), rng.range(1, 15));
            let clues = rng.range(0, 100) as u64;
            puzzle(
                Kind::Slitherlink,
                slitherlink_text(&mut rng, rows, cols, clues),
            )
        };
        check(&p, &mut worst);
    }
    check(
        &puzzle(Kind::Slitherlink, slitherlink_text(&mut rng, 60, 45, 50)),
        &mut worst,
    );

    let mut labels: Vec<String> = Kind::ALL.iter().map(Kind::to_string).collect();
    labels.extend([HOLES_WALK.to_string(), HOLES_RANDOM.to_string()]);
    for label in labels {
        let w = &worst[&label];
        eprintln!(
            "{label:>23}: {:>3} puzzles, worst estimate/real: items {:.3}, options {:.3}, \
             entries {:.3}",
            w.checked, w.items, w.options, w.entries
        );
        assert!(w.checked >= 40, "{label}: {} puzzles", w.checked);
        assert!(w.items <= 1.0, "{label}");
        match label.as_str() {
            // Random holes make mostly unsolvable boards with a handful of
            // options, where a few extra ones are a large ratio.
            HOLES_RANDOM => {}
            HOLES_WALK => assert!(w.options <= 10.0 && w.entries <= 10.0, "{label}"),
            // Exact.
            _ => assert!(w.options <= 1.0 && w.entries <= 1.0, "{label}"),
        }
    }
}

/// Estimates a puzzle, timing it (best of three, to leave out a cold
/// cache or a busy machine).
fn timed_estimate(p: &Puzzle) -> (Result<EncodingSize, xccd::puzzles::PuzzleError>, Duration) {
    let mut best = Duration::MAX;
    let mut result = None;
    for _ in 0..3 {
        let start = Instant::now();
        let r = p.estimate();
        best = best.min(start.elapsed());
        result = Some(r);
    }
    (result.unwrap(), best)
}

fn blank_grid(rows: usize, cols: usize, cell: &str) -> String {
    let row = vec![cell; cols].join(" ");
    format!("{row}\n").repeat(rows)
}

#[test]
fn pathological_puzzles_are_refused_in_time_linear_in_their_text() {
    let limits = EncodingLimits::DEFAULT;
    let mut one_clue = blank_grid(40, 40, ".");
    one_clue.replace_range(0..1, "1");
    let cyclic_1000: String = (0..1000)
        .map(|r| {
            let row: Vec<String> = (0..1000)
                .map(|c| ((r + c) % 1000 + 1).to_string())
                .collect();
            row.join(" ") + "\n"
        })
        .collect();
    let mut rng = Rng(7);
    let cases = [
        // 50 million options: 15-30 s and several GB to encode.
        (
            "blank hidato 1x5000",
            puzzle(Kind::Hidato, blank_grid(1, 5000, ".")),
        ),
        // 20 million options.
        ("hidato 40x40, one clue", puzzle(Kind::Hidato, one_clue)),
        // A fully given 150 x 150 hidato has 22,500 options, but the
        // encoder searches the grid from each of its 22,500 givens, keeps
        // 4 GB of distances and fills a 500 MB table.
        (
            "given hidato 150x150",
            puzzle(Kind::Hidato, snake_hidato(&mut rng, 150, 150, 100)),
        ),
        // 1,000,000 items, options and entries: within the limits, but the
        // encoder compares every cell with its row and column (6 billion
        // steps).
        ("latin hitori 1000x1000", puzzle(Kind::Hitori, cyclic_1000)),
        // 100,000 seeds: the encoder compares each with the whole row.
        (
            "hitori 1x100000",
            puzzle(
                Kind::Hitori,
                (1..=100_000).map(|v| format!("{v} ")).collect(),
            ),
        ),
        (
            "blank slitherlink 600x600",
            puzzle(Kind::Slitherlink, blank_grid(600, 1, &".".repeat(600))),
        ),
        (
            "blank hidato 1000x1000",
            puzzle(Kind::Hidato, blank_grid(1000, 1000, ".")),
        ),
    ];
    for (name, p) in &cases {
        let (size, time) = timed_estimate(p);
        let size = size.unwrap_or_else(|e| panic!("{name}: {e}"));
        let refused = limits.check(&size).expect_err(name);
        eprintln!(
            "{name:>26}: estimated in {:>8.3} ms ({} bytes of text): {size:?}: {refused}",
            time.as_secs_f64() * 1e3,
            p.text.len()
        );
        // Linear in the text: about 10 ns a byte here. The bound only has to
        // tell an estimate from an encoding (seconds to minutes for these
        // cases), so it is wide enough for a machine loaded many times over:
        // a timed test must not fail on a busy machine (at 100 ns a byte it
        // did, at load 10).
        let allowed = Duration::from_millis(500) + Duration::from_micros(p.text.len() as u64);
        assert!(time < allowed, "{name}: {time:?}");
        assert!(matches!(
            p.check_size(&limits),
            Err(SizeError::TooLarge(e)) if e == refused
        ));
    }
    let hidato = cases[0].1.estimate().unwrap();
    assert!(hidato.options > 40_000_000, "{hidato:?}");
    let hitori = limits.check(&cases[3].1.estimate().unwrap()).unwrap_err();
    assert_eq!(hitori.measure, Measure::Work);
    assert!(hitori.to_string().contains("steps of work"), "{hitori}");

    // Texts beyond the kinds' hard limits are refused by the parser, as
    // by `encode`, before anything is counted.
    let too_big = [
        ("queens 100000", puzzle(Kind::Queens, "100000".into())),
        ("latin 101", puzzle(Kind::Latin, "101".into())),
        (
            "hidato 1x1100000",
            puzzle(Kind::Hidato, blank_grid(1, 1_100_000, ".")),
        ),
        (
            "slitherlink 1100x1000",
            puzzle(Kind::Slitherlink, blank_grid(1100, 1, &".".repeat(1000))),
        ),
    ];
    for (name, p) in &too_big {
        let (size, time) = timed_estimate(p);
        let e = size.expect_err(name);
        eprintln!(
            "{name:>26}: refused in {:>8.3} ms: {e}",
            time.as_secs_f64() * 1e3
        );
        assert!(time < Duration::from_millis(500), "{name}: {time:?}");
        assert!(matches!(p.check_size(&limits), Err(SizeError::Puzzle(_))));
    }
}

#[test]
fn large_legitimate_puzzles_are_accepted() {
    let limits = EncodingLimits::DEFAULT;
    let mut rng = Rng(11);
    let hitori_15 = {
        // A latin square with a few changed numbers, like a real hitori.
        let text: String = (0..15)
            .map(|r| {
                let row: Vec<String> = (0..15)
                    .map(|c| {
                        if rng.chance(30) {
                            rng.range(1, 15)
                        } else {
                            (r + 2 * c) % 15 + 1
                        }
                        .to_string()
                    })
                    .collect();
                row.join(" ") + "\n"
            })
            .collect();
        puzzle(Kind::Hitori, text)
    };
    let cases = [
        (
            "sudoku 25x25",
            puzzle(Kind::Sudoku, sudoku_text(&mut rng, 5, 30)),
        ),
        (
            "blank sudoku 25x25",
            puzzle(Kind::Sudoku, blank_grid(25, 25, ".")),
        ),
        ("blank latin 16", puzzle(Kind::Latin, "16".into())),
        (
            "latin 16",
            puzzle(Kind::Latin, latin_text(&mut rng, 16, 30)),
        ),
        ("queens 100", puzzle(Kind::Queens, "100".into())),
        (
            "slitherlink 30x30",
            puzzle(Kind::Slitherlink, slitherlink_text(&mut rng, 30, 30, 50)),
        ),
        (
            "blank slitherlink 30x30",
            puzzle(Kind::Slitherlink, slitherlink_text(&mut rng, 30, 30, 0)),
        ),
        ("hitori 15x15", hitori_15),
        (
            "blank hidato 10x10",
            puzzle(Kind::Hidato, blank_grid(10, 10, ".")),
        ),
        (
            "hidato 10x10",
            puzzle(Kind::Hidato, snake_hidato(&mut rng, 10, 10, 30)),
        ),
        (
            "hidato 20x20",
            puzzle(Kind::Hidato, snake_hidato(&mut rng, 20, 20, 40)),
        ),
        (
            "futoshiki 9x9",
            puzzle(Kind::Futoshiki, futoshiki_text(&mut rng, 9)),
        ),
    ];
    for (name, p) in &cases {
        let size = p
            .check_size(&limits)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let start = Instant::now();
        let (items, options, entries) = real(p);
        let encoding = start.elapsed();
        eprintln!(
            "{name:>24}: {size:?}, real ({items}, {options}, {entries}), encoded in {:.1} ms",
            encoding.as_secs_f64() * 1e3
        );
        assert!(size.items >= items && size.options >= options && size.entries >= entries);
    }
    // The largest puzzles of the kinds with a hard limit are within the
    // limits too (estimated only: they take a second or so to encode).
    for (name, p) in [
        ("blank latin 100", puzzle(Kind::Latin, "100".into())),
        ("queens 1000", puzzle(Kind::Queens, "1000".into())),
        (
            "blank sudoku 100x100",
            puzzle(Kind::Sudoku, blank_grid(100, 100, ".")),
        ),
        (
            "blank slitherlink 200x200",
            puzzle(Kind::Slitherlink, blank_grid(200, 1, &".".repeat(200))),
        ),
    ] {
        let size = p
            .check_size(&limits)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        eprintln!("{name:>24}: {size:?}");
    }
    let latin = puzzle(Kind::Latin, "100".into()).estimate().unwrap();
    assert_eq!(
        (latin.items, latin.options, latin.entries),
        (30_000, 1_000_000, 3_000_000)
    );
}

#[test]
fn estimate_fails_exactly_where_encode_does() {
    let texts = [
        (Kind::Latin, "1 2\n2 x\n"),
        (Kind::Latin, "0"),
        (Kind::Sudoku, "1234"),
        (Kind::Queens, "8 9"),
        (Kind::Futoshiki, "1<2\n"),
        (Kind::Hitori, "1 2\n3 1\n"),
        (Kind::Hidato, "# #\n# #\n"),
        (Kind::Hidato, "1 1\n. .\n"),
        (Kind::Slitherlink, "..4\n"),
        (Kind::Slitherlink, "..\n.\n"),
    ];
    for (kind, text) in texts {
        let p = puzzle(kind, text.into());
        let estimated = p.estimate().expect_err(text);
        let encoded = p.encode().err().expect(text);
        assert_eq!(estimated, encoded, "{kind} {text:?}");
    }
}
