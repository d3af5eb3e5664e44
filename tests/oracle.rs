//! The engine against an independent brute-force oracle.
//!
//! Random small problems of every kind (plain exact cover, uncolored
//! secondary items, colors, multiplicities, multiplicities with colors) are
//! built through the `ProblemBuilder`; the oracle tries every subset of the
//! options and keeps those that satisfy the XCC rules, written from the
//! definition of a solution (not from the engine):
//! - chosen options are distinct and each contains a primary item;
//! - every primary item with bounds [u, v] is in at least u and at most v
//!   chosen options;
//! - for every secondary item, the colors the chosen options containing it
//!   give it are either none, a single occurrence, or all the same color.
//!
//! The engine's solution set must equal the oracle's (and so must the
//! memoized count's ZDD), with no duplicate,
//! every solution accepted by `Problem::verify`, and `stats.solutions` equal
//! to the count. Permuting the items, the options and the items inside each
//! option must not change the solution set (mapped back), and running twice
//! must give the same sequence and the same counters.

mod common;

use common::random_problems::{self, ItemSpec, Shape, Spec};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use xccd::xcc::problem::ItemKind;
use xccd::xcc::{
    dlx_format, Collect, CountOnly, Engine, Layout, Problem, ProblemBuilder, RunConfig, Solver,
    Stats, Status, Task,
};

/// Largest number of options a random problem gets (the oracle is 2^n).
const MAX_OPTIONS: usize = 12;

impl Spec {
    fn name(&self, item: usize) -> String {
        match self.items[item] {
            ItemSpec::Primary { .. } => format!("p{item}"),
            ItemSpec::Secondary => format!("s{item}"),
        }
    }

    fn is_primary(&self, item: usize) -> bool {
        matches!(self.items[item], ItemSpec::Primary { .. })
    }

    fn build(&self) -> Problem {
        self.build_with(
            |i| self.name(i),
            |k, index, kept| {
                assert_eq!(index, k);
                assert_eq!(
                    kept,
                    self.options[k].iter().any(|&(i, _)| self.is_primary(i))
                );
            },
        )
    }

    /// Options that take part in the search: those with a primary item.
    fn usable(&self) -> Vec<bool> {
        self.options
            .iter()
            .map(|o| o.iter().any(|&(i, _)| self.is_primary(i)))
            .collect()
    }

    fn has_multiplicities(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(*i, ItemSpec::Primary { min, max } if (min, max) != (1, 1)))
    }

    fn has_colors(&self) -> bool {
        self.options.iter().flatten().any(|&(_, c)| c.is_some())
    }

    /// Rebuilds the problem with items, options and the entries of each
    /// option permuted: new item k is old item `item_perm[k]`, new option k
    /// is old option `option_perm[k]`.
    fn permuted(&self, item_perm: &[usize], option_perm: &[usize], seed: u64) -> Spec {
        let mut new_index = vec![0; self.items.len()];
        for (k, &old) in item_perm.iter().enumerate() {
            new_index[old] = k;
        }
        let mut rng = seed | 1;
        let options = option_perm
            .iter()
            .map(|&old| {
                let mut o: Vec<(usize, Option<u8>)> = self.options[old]
                    .iter()
                    .map(|&(i, c)| (new_index[i], c))
                    .collect();
                for j in (1..o.len()).rev() {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    o.swap(j, (rng % (j as u64 + 1)) as usize);
                }
                o
            })
            .collect();
        Spec {
            items: item_perm.iter().map(|&old| self.items[old]).collect(),
            options,
        }
    }
}

/// Every solution, by trying every subset of options. Sorted.
fn oracle(spec: &Spec) -> Vec<Vec<usize>> {
    let n = spec.options.len();
    assert!(n <= 16);
    let usable = spec.usable();
    let mut out = Vec::new();
    'subsets: for mask in 0u32..(1 << n) {
        let chosen: Vec<usize> = (0..n).filter(|&k| mask >> k & 1 == 1).collect();
        if chosen.iter().any(|&k| !usable[k]) {
            continue;
        }
        let mut count = vec![0u32; spec.items.len()];
        let mut colors: Vec<Vec<Option<u8>>> = vec![Vec::new(); spec.items.len()];
        for &k in &chosen {
            for &(i, c) in &spec.options[k] {
                count[i] += 1;
                colors[i].push(c);
            }
        }
        for (i, item) in spec.items.iter().enumerate() {
            match *item {
                ItemSpec::Primary { min, max } => {
                    if count[i] < min || count[i] > max {
                        continue 'subsets;
                    }
                }
                ItemSpec::Secondary => {
                    let cs = &colors[i];
                    let ok = cs.len() <= 1 || cs.iter().all(|c| c.is_some() && *c == cs[0]);
                    if !ok {
                        continue 'subsets;
                    }
                }
            }
        }
        out.push(chosen);
    }
    out.sort();
    out
}

fn run_all(solver: &mut Solver) -> (Vec<Vec<usize>>, Stats) {
    let mut c = Collect::default();
    let outcome = solver
        .run(&Task::root(), &RunConfig::default(), &mut c)
        .expect("the root task is always valid");
    assert_eq!(outcome.status, Status::Exhausted);
    assert!(outcome.remaining.is_empty());
    (c.solutions, outcome.stats)
}

fn sorted(mut v: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    v.sort();
    v
}

/// The whole battery for one problem and one permutation of it.
fn check(spec: &Spec, item_perm: &[usize], option_perm: &[usize], seed: u64) {
    let problem = spec.build();
    let usable = spec.usable();
    let dropped: Vec<usize> = (0..usable.len()).filter(|&k| !usable[k]).collect();
    assert_eq!(problem.dropped_options(), &dropped[..]);
    assert_eq!(problem.options().len(), spec.options.len());

    let expected = oracle(spec);

    // The verifier that checks solutions from remote workers accepts
    // exactly the oracle's solutions among all subsets of the options.
    let mut verifier = xccd::xcc::verifier::Verifier::new(&problem);
    let n = spec.options.len();
    for mask in 0u32..(1 << n) {
        let chosen: Vec<usize> = (0..n).filter(|&k| mask >> k & 1 == 1).collect();
        let ok = verifier.verify(&chosen).is_ok();
        assert_eq!(
            ok,
            expected.binary_search(&chosen).is_ok(),
            "the verifier says {ok} for {chosen:?}\n{problem}"
        );
    }

    let mut solver = Solver::new(&problem);
    let expected_algorithm = if spec.has_multiplicities() {
        "M"
    } else if spec.has_colors() {
        "C"
    } else {
        "X"
    };
    assert_eq!(solver.algorithm(), expected_algorithm);

    let (sequence, stats) = run_all(&mut solver);
    for s in &sequence {
        assert!(s.windows(2).all(|w| w[0] < w[1]), "not sorted: {s:?}");
        if let Err(e) = problem.verify(s) {
            panic!("engine solution {s:?} fails verify: {e}\n{problem}");
        }
    }
    let set = sorted(sequence.clone());
    let mut dedup = set.clone();
    dedup.dedup();
    assert_eq!(dedup.len(), set.len(), "duplicate solutions: {sequence:?}");
    assert_eq!(set, expected, "engine vs oracle on\n{problem}");
    assert_eq!(stats.solutions, expected.len() as u64);
    assert!(stats.nodes >= stats.solutions);

    // Determinism: the same solver again, and a fresh one.
    let (again, stats_again) = run_all(&mut solver);
    assert_eq!(again, sequence);
    assert_eq!(stats_again, stats);
    let (fresh, stats_fresh) = run_all(&mut Solver::new(&problem));
    assert_eq!(fresh, sequence);
    assert_eq!(stats_fresh, stats);
    // The wide node layout (for large problems) runs the same search.
    let mut wide = Solver::with_layout(&problem, Layout::Wide);
    assert_eq!(wide.layout(), Layout::Wide);
    let (wide_sequence, wide_stats) = run_all(&mut wide);
    assert_eq!(wide_sequence, sequence);
    assert_eq!(wide_stats, stats);

    // The cells engine (SSXCC; SSMCC's Algorithm M on sparse sets for
    // multiplicities) searches another tree for the same solutions, the
    // same way every time; and so does it making SSXCC's or SSMCC's own
    // choices (`Order::Ssxcc`).
    assert!(Engine::Cells.supports(&problem));
    let mut cells = Solver::with_engine_layout(&problem, Engine::Cells, Layout::Narrow).unwrap();
    assert_eq!(
        cells.layout(),
        // Multiplicities have one layout, 32-bit words (cells_mcc.rs).
        if spec.has_multiplicities() {
            Layout::Wide
        } else {
            Layout::Narrow
        },
        "small problems fit 16-bit cells"
    );
    assert_eq!(cells.algorithm(), expected_algorithm);
    let (cells_sequence, cells_stats) = run_all(&mut cells);
    for s in &cells_sequence {
        assert!(s.windows(2).all(|w| w[0] < w[1]), "not sorted: {s:?}");
    }
    let cells_set = sorted(cells_sequence.clone());
    let mut dedup = cells_set.clone();
    dedup.dedup();
    assert_eq!(dedup.len(), cells_set.len(), "cells: duplicate solutions");
    assert_eq!(cells_set, expected, "cells engine vs oracle on\n{problem}");
    assert_eq!(cells_stats.solutions, expected.len() as u64);
    let (again, again_stats) = run_all(&mut cells);
    assert_eq!((&again, &again_stats), (&cells_sequence, &cells_stats));
    // The 32-bit layout (for large problems) runs the same search.
    let mut wide = Solver::with_engine_layout(&problem, Engine::Cells, Layout::Wide).unwrap();
    assert_eq!(wide.layout(), Layout::Wide);
    assert_eq!(run_all(&mut wide), (cells_sequence, cells_stats));
    let mut knuth = Solver::ssxcc(&problem).unwrap();
    let (knuth_sequence, knuth_stats) = run_all(&mut knuth);
    assert_eq!(
        sorted(knuth_sequence),
        expected,
        "cells engine in Knuth's order vs oracle on\n{problem}"
    );
    assert_eq!(knuth_stats.solutions, expected.len() as u64);

    // The memoized count (DLX6's Algorithm C, or M with multiplicities)
    // holds the same solutions in its ZDD, each once, no option twice.
    let memo = xccd::xcc::memo::count(&problem, &Default::default()).expect("memoized count");
    let memo_set = sorted(
        memo.zdd
            .solutions(usize::MAX)
            .into_iter()
            .map(|s| {
                let s = sorted_usize(s);
                assert!(s.windows(2).all(|w| w[0] < w[1]), "an option twice: {s:?}");
                s
            })
            .collect(),
    );
    assert_eq!(memo_set, expected, "memo vs oracle on\n{problem}");
    assert_eq!(memo.zdd.count().to_string(), expected.len().to_string());

    // Permutation invariance (mapped back to the original option indices).
    let permuted = spec.permuted(item_perm, option_perm, seed);
    let pproblem = permuted.build();
    let (psequence, pstats) = run_all(&mut Solver::new(&pproblem));
    let mapped = sorted(
        psequence
            .iter()
            .map(|s| sorted_usize(s.iter().map(|&k| option_perm[k]).collect()))
            .collect(),
    );
    assert_eq!(
        mapped, expected,
        "permuted problem gives another solution set\n{pproblem}"
    );
    assert_eq!(pstats.solutions, expected.len() as u64);
}

fn sorted_usize(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Primary items only, bounds [1, 1].
    Exact,
    /// Plus uncolored secondary items.
    Secondary,
    /// Plus colors (2 or 3) on secondary items.
    Colors,
    /// Primary bounds [u, v], 0 <= u <= v <= 3, v >= 1; uncolored secondaries.
    Mult,
    /// Multiplicities and colors.
    MultColors,
}

/// A random problem of the given kind. Items are declared primaries first,
/// then secondaries (the permutation test interleaves them); some problems
/// get a planted solution (see [`common::random_problems`]).
fn spec_strategy(kind: Kind) -> impl Strategy<Value = Spec> {
    random_problems::spec_strategy(Shape {
        primaries: 1..=6,
        secondaries: if kind == Kind::Exact { 0..=0 } else { 0..=3 },
        options: 1..=MAX_OPTIONS,
        multiplicities: Just(matches!(kind, Kind::Mult | Kind::MultColors)).boxed(),
        colors: Just(matches!(kind, Kind::Colors | Kind::MultColors)).boxed(),
    })
}

/// A problem with an item permutation, an option permutation and a seed for
/// shuffling the entries of each option.
fn case_strategy(kind: Kind) -> impl Strategy<Value = (Spec, Vec<usize>, Vec<usize>, u64)> {
    spec_strategy(kind).prop_flat_map(|spec| {
        let items: Vec<usize> = (0..spec.items.len()).collect();
        let options: Vec<usize> = (0..spec.options.len()).collect();
        (
            Just(spec),
            Just(items).prop_shuffle(),
            Just(options).prop_shuffle(),
            any::<u64>(),
        )
    })
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn exact_cover_matches_oracle((spec, ip, op, seed) in case_strategy(Kind::Exact)) {
        check(&spec, &ip, &op, seed);
    }

    #[test]
    fn secondary_items_match_oracle((spec, ip, op, seed) in case_strategy(Kind::Secondary)) {
        check(&spec, &ip, &op, seed);
    }

    #[test]
    fn colors_match_oracle((spec, ip, op, seed) in case_strategy(Kind::Colors)) {
        check(&spec, &ip, &op, seed);
    }

    #[test]
    fn multiplicities_match_oracle((spec, ip, op, seed) in case_strategy(Kind::Mult)) {
        check(&spec, &ip, &op, seed);
    }

    #[test]
    fn multiplicities_with_colors_match_oracle(
        (spec, ip, op, seed) in case_strategy(Kind::MultColors)
    ) {
        check(&spec, &ip, &op, seed);
    }
}

// ----- Hand-checked instances -----

fn build(primaries: &[(&str, u32, u32)], secondaries: &[&str], options: &[&str]) -> Problem {
    let mut b = ProblemBuilder::new();
    for &(name, min, max) in primaries {
        b.primary_with_bounds(name, min, max).unwrap();
    }
    for &name in secondaries {
        b.secondary(name).unwrap();
    }
    for o in options {
        let tokens: Vec<&str> = o.split_whitespace().collect();
        b.option_str(&tokens).unwrap();
    }
    b.build().unwrap()
}

fn solve(problem: &Problem) -> Vec<Vec<usize>> {
    sorted(run_all(&mut Solver::new(problem)).0)
}

/// Knuth, TAOCP 7.2.2.1, (49): the unique solution is options 1 and 3.
#[test]
fn knuth_color_example() {
    let p = build(
        &[("p", 1, 1), ("q", 1, 1), ("r", 1, 1)],
        &["x", "y"],
        &["p q x y:A", "p r x:A y", "p x:B", "q x:A", "r y:B"],
    );
    assert_eq!(solve(&p), vec![vec![1, 3]]);
}

/// Every color rule, one at a time, with the expected solutions by hand.
#[test]
fn color_rules_by_hand() {
    // Two options agreeing on a color: both may be chosen.
    let p = build(
        &[("a", 1, 1), ("b", 1, 1)],
        &["x"],
        &["a x:R", "b x:R", "a b"],
    );
    assert_eq!(solve(&p), vec![vec![0, 1], vec![2]]);
    // Disagreeing colors: not together.
    let p = build(
        &[("a", 1, 1), ("b", 1, 1)],
        &["x"],
        &["a x:R", "b x:G", "a b"],
    );
    assert_eq!(solve(&p), vec![vec![2]]);
    // Uncolored with colored: conflict, whatever the order.
    let p = build(&[("a", 1, 1), ("b", 1, 1)], &["x"], &["a x", "b x:R"]);
    assert_eq!(solve(&p), Vec::<Vec<usize>>::new());
    let p = build(&[("a", 1, 1), ("b", 1, 1)], &["x"], &["a x:R", "b x"]);
    assert_eq!(solve(&p), Vec::<Vec<usize>>::new());
    // Two uncolored: conflict; one alone is fine.
    let p = build(&[("a", 1, 1), ("b", 1, 1)], &["x"], &["a x", "b x", "b"]);
    assert_eq!(solve(&p), vec![vec![0, 2]]);
    // Three options agreeing on one color.
    let p = build(
        &[("a", 1, 1), ("b", 1, 1), ("c", 1, 1)],
        &["x", "y"],
        &["a x:R y", "b x:R", "c x:R", "c x:G"],
    );
    assert_eq!(solve(&p), vec![vec![0, 1, 2]]);
}

/// Multiplicities by hand: choose between 1 and 2 of three singletons, and
/// items with lower bound 0.
#[test]
fn multiplicities_by_hand() {
    let p = build(&[("a", 1, 2)], &[], &["a", "a", "a"]);
    assert_eq!(
        solve(&p),
        vec![
            vec![0],
            vec![0, 1],
            vec![0, 2],
            vec![1],
            vec![1, 2],
            vec![2]
        ]
    );
    // Lower bound 0: the empty solution counts.
    let p = build(&[("a", 0, 1)], &[], &["a", "a"]);
    assert_eq!(solve(&p), vec![vec![], vec![0], vec![1]]);
    // Bounds [2, 2] with a color on a shared secondary.
    let p = build(&[("a", 2, 2)], &["x"], &["a x:R", "a x:R", "a x:G", "a"]);
    assert_eq!(
        solve(&p),
        vec![vec![0, 1], vec![0, 3], vec![1, 3], vec![2, 3]]
    );
    // The counts agree with the oracle on a slightly larger one:
    // 0/1 matrices 3x3 with row and column sums 1 or 2.
    let mut options = Vec::new();
    for i in 0..3 {
        for j in 0..3 {
            options.push(format!("r{i} c{j}"));
        }
    }
    let refs: Vec<&str> = options.iter().map(String::as_str).collect();
    let p = build(
        &[
            ("r0", 1, 2),
            ("r1", 1, 2),
            ("r2", 1, 2),
            ("c0", 1, 2),
            ("c1", 1, 2),
            ("c2", 1, 2),
        ],
        &[],
        &refs,
    );
    let spec = Spec {
        items: vec![ItemSpec::Primary { min: 1, max: 2 }; 6],
        options: (0..9)
            .map(|k| vec![(k / 3, None), (3 + k % 3, None)])
            .collect(),
    };
    assert_eq!(solve(&p), oracle(&spec));
    assert!(matches!(
        p.items()[0].kind,
        ItemKind::Primary { min: 1, max: 2 }
    ));
}

/// An option without a primary item is dropped but keeps its index.
#[test]
fn dropped_options_keep_indices() {
    let p = build(
        &[("a", 1, 1), ("b", 1, 1)],
        &["x"],
        &["x", "a x", "b", "x:R", "a b"],
    );
    assert_eq!(p.dropped_options(), &[0, 3]);
    assert_eq!(solve(&p), vec![vec![1, 2], vec![4]]);
}

/// A run that counts nodes plainly (no profile, no node limit) and one
/// that takes the general path (a profile, a node limit) count the same,
/// on both engines and whatever the poll interval; a node limit stops at
/// exactly that many nodes.
#[test]
fn node_limits_and_profiles_count_like_a_plain_run() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/queens8.dlx"))
            .expect("examples/queens8.dlx");
    let problem = dlx_format::parse(&text).expect("a valid problem");
    for engine in [Engine::Links, Engine::Cells] {
        let mut solver = Solver::with_engine(&problem, engine).unwrap();
        for poll_interval in [1, 7, 4096] {
            let run = |solver: &mut Solver, config: RunConfig| {
                let config = RunConfig {
                    poll_interval,
                    ..config
                };
                solver.run(&Task::root(), &config, &mut CountOnly).unwrap()
            };
            let plain = run(&mut solver, RunConfig::default());
            assert_eq!(plain.status, Status::Exhausted);
            assert_eq!(plain.stats.solutions, 92, "{engine:?}");
            let profiled = run(
                &mut solver,
                RunConfig {
                    profile: true,
                    ..RunConfig::default()
                },
            );
            assert_eq!(profiled.stats.nodes, plain.stats.nodes, "{engine:?}");
            assert_eq!(profiled.stats.updates, plain.stats.updates, "{engine:?}");
            assert_eq!(
                profiled.stats.max_level, plain.stats.max_level,
                "{engine:?}"
            );
            // The links engine counts a solution as a node of its own, as
            // DLX2 does, outside the profile.
            let apart = match engine {
                Engine::Links => plain.stats.solutions,
                _ => 0,
            };
            assert_eq!(
                profiled.stats.profile.iter().sum::<u64>() + apart,
                plain.stats.nodes,
                "{engine:?}"
            );
            for limit in [1, 100, plain.stats.nodes - 1] {
                let limited = run(
                    &mut solver,
                    RunConfig {
                        max_nodes: Some(limit),
                        ..RunConfig::default()
                    },
                );
                assert_eq!(limited.status, Status::NodeLimit, "{engine:?} {limit}");
                assert_eq!(limited.stats.nodes, limit, "{engine:?}");
            }
            let exact = run(
                &mut solver,
                RunConfig {
                    max_nodes: Some(plain.stats.nodes),
                    ..RunConfig::default()
                },
            );
            assert_eq!(exact.status, Status::Exhausted, "{engine:?}");
            assert_eq!(exact.stats, plain.stats, "{engine:?}");
        }
    }
}
