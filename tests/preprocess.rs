//! `xccd preprocess` and `xccd solve --preprocess` against Knuth's DLX-PRE
//! and against the search itself.
//!
//! - Every reference in `bench/dlx-pre/` (DLX-PRE's stdout on a bench
//!   instance, its stderr in the header) is what `xccd preprocess` prints:
//!   the same items and options in the same order, the same text, the same
//!   report on stderr.
//! - The reduced problem has the input's solutions: on bench instances the
//!   CLI counts and lists the same solutions with and without
//!   `--preprocess`; on random small problems with colors (and random round
//!   and mem limits, which stop the reduction early) the engine finds the
//!   same solutions in both, once mapped back through `Reduced::origin`.
//! - With --memo, --cheapest, --threads and --server (a real `xccd serve`)
//!   the reduced problem gives the unpreprocessed answers: the same counts,
//!   the same solutions as sets of the input's options, samples that are
//!   solutions of the input, the same cheapest costs.
//! - Bad input is an error with exit code 2, never a panic.

mod common;

use common::service::{Log, Server};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use proptest::prelude::*;
use xccd::xcc::preprocess::{preprocess, Config, PreprocessError, Reduced};
use xccd::xcc::problem::{Entry, EntrySpec};
use xccd::xcc::{dlx_format, Collect, Problem, ProblemBuilder, RunConfig, Solver, Task};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn xccd(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the xccd binary runs");
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The references: (instance, DLX-PRE's stderr lines, its stdout).
fn references() -> Vec<(PathBuf, String, String)> {
    let dir = root().join("bench/dlx-pre");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("bench/dlx-pre is in the repository") {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "dlx") {
            continue;
        }
        let reference = std::fs::read_to_string(&path).unwrap();
        let mut lines = reference.split_inclusive('\n');
        let header = lines.next().unwrap();
        assert!(header.starts_with("| made by Knuth's DLX-PRE"), "{header}");
        let mut stderr = String::new();
        let mut stdout = String::new();
        for line in lines {
            match line.strip_prefix("| ") {
                Some(err) if stdout.is_empty() => stderr.push_str(err),
                _ => stdout.push_str(line),
            }
        }
        // The header names the instance: `dlx-pre < bench/DIR/NAME.dlx;`.
        let instance = header
            .split_once("dlx-pre < ")
            .and_then(|(_, rest)| rest.split_once(';'))
            .map(|(instance, _)| root().join(instance))
            .unwrap_or_else(|| panic!("{}: no instance in {header}", path.display()));
        assert_eq!(instance.file_name(), path.file_name(), "{header}");
        out.push((instance, stderr, stdout));
    }
    out.sort();
    out
}

/// Items (name, kind) and options (entries as text) in order.
fn shape(p: &Problem) -> (Vec<String>, Vec<String>) {
    let items = p
        .items()
        .iter()
        .map(|i| format!("{} {:?}", i.name, i.kind))
        .collect();
    let options = (0..p.options().len()).map(|o| p.format_option(o)).collect();
    (items, options)
}

#[test]
fn preprocess_prints_what_dlx_pre_prints_on_every_reference() {
    let refs = references();
    assert!(refs.len() >= 28, "only {} references", refs.len());
    for (instance, stderr, stdout) in &refs {
        let name = instance.display().to_string();
        let out = xccd(&["preprocess", &name], b"");
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let expected = dlx_format::parse(stdout).unwrap();
        let got = dlx_format::parse(&text(&out.stdout)).unwrap();
        assert_eq!(shape(&got), shape(&expected), "{name}");
        assert_eq!(text(&out.stdout), *stdout, "{name}");
        assert_eq!(text(&out.stderr), *stderr, "{name}");

        // The library says the same, and each kept option is its input
        // option without the removed items.
        let input = dlx_format::parse(&std::fs::read_to_string(instance).unwrap()).unwrap();
        let reduced = preprocess(&input, &Config::default()).unwrap();
        assert_eq!(shape(&reduced.problem), shape(&expected), "{name}");
        check_origin(&input, &reduced);
    }
}

/// Every reduced option is its input option less removed items, in order,
/// colors kept; no input option is named twice; the removed items are those
/// missing.
fn check_origin(input: &Problem, reduced: &Reduced) {
    let p = &reduced.problem;
    assert_eq!(reduced.origin.len(), p.options().len());
    assert_eq!(
        reduced.origin.iter().collect::<BTreeSet<_>>().len(),
        reduced.origin.len()
    );
    let name_of = |q: &Problem, e: &Entry| {
        let color = e.color.map(|c| q.colors()[c as usize].clone());
        (q.items()[e.item].name.clone(), color)
    };
    let kept: BTreeSet<&str> = p.items().iter().map(|i| i.name.as_str()).collect();
    let removed: BTreeSet<&str> = reduced
        .removed_items
        .iter()
        .map(|&i| input.items()[i].name.as_str())
        .collect();
    assert!(kept.is_disjoint(&removed));
    assert_eq!(kept.len() + removed.len(), input.items().len());
    for (k, &o) in reduced.origin.iter().enumerate() {
        assert!(!input.is_dropped(o));
        let want: Vec<_> = input.options()[o]
            .iter()
            .map(|e| name_of(input, e))
            .filter(|(n, _)| kept.contains(n.as_str()))
            .collect();
        let got: Vec<_> = p.options()[k].iter().map(|e| name_of(p, e)).collect();
        assert_eq!(got, want, "option {k} from {o}");
    }
}

/// Solutions as sets of input option indices, via `--format indices`.
fn cli_solutions(args: &[&str]) -> BTreeSet<Vec<usize>> {
    let out = xccd(args, b"");
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| {
            let mut s: Vec<usize> = l.split(' ').map(|n| n.parse().unwrap()).collect();
            s.sort_unstable();
            s
        })
        .collect()
}

#[test]
fn solve_with_preprocess_counts_and_lists_the_same_solutions() {
    let instances = [
        "sudoku_hard17",
        "sudoku_royle17a",
        "sudoku_royle17b",
        "color_debruijn4",
        "color_simple",
        "pent3x20",
        "queens8",
        "langford8",
        "latin4",
    ];
    for name in instances {
        let path = format!("bench/instances/{name}.dlx");
        let count = |extra: &[&str]| {
            let mut args = vec!["solve", &path, "--count", "-q"];
            args.extend_from_slice(extra);
            let out = xccd(&args, b"");
            assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
            text(&out.stdout).trim().parse::<u64>().unwrap()
        };
        let plain = count(&[]);
        assert!(plain > 0, "{name}");
        assert_eq!(count(&["--preprocess"]), plain, "{name}");
        let all = ["solve", &path, "--all", "-q", "--format", "indices"];
        let with = [&all[..], &["--preprocess"]].concat();
        let solutions = cli_solutions(&all);
        assert_eq!(solutions.len() as u64, plain, "{name}");
        assert_eq!(cli_solutions(&with), solutions, "{name}");
    }
    // In Knuth's format the options print as the input's (toy: three
    // options, each written as in the input).
    let out = xccd(&["solve", "examples/toy.dlx", "--preprocess"], b"");
    let printed: BTreeSet<String> = text(&out.stdout).lines().map(String::from).collect();
    let expected: BTreeSet<String> = ["1:", " A D", " B G", " C E F"].map(String::from).into();
    assert_eq!(printed, expected);
    assert!(text(&out.stderr).contains("Preprocessed (DLX-PRE): Removed 3 options and 4 items"));
}

/// The costs printed by `--cheapest 10`: "N: cost C" lines.
fn cheapest_costs(stdin: &[u8]) -> Vec<String> {
    let out = xccd(&["solve", "-", "--cheapest", "10"], stdin);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .filter(|l| l.contains(": cost "))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_reduced_problem_keeps_its_options_costs() {
    // DLX-PRE removes `A D` and `B C D` (no solution holds them); the
    // options it keeps keep their DLX5 costs, so the cheapest solutions
    // of the reduced problem are the input's.
    let input = b"A B C D\nA B |3\nC D |1\nA C |2\nB D |5\nA D |4\nB |9\nB C D |6\n";
    let out = xccd(&["preprocess"], input);
    assert!(out.status.success());
    let reduced = text(&out.stdout);
    assert_eq!(
        reduced,
        " A B C D\n A B |3\n A C |2\n B D |5\n B |9\n C D |1\n"
    );
    assert!(text(&out.stderr).contains("Removed 2 options and 0 items"));
    let costs = cheapest_costs(input);
    assert_eq!(costs, ["1: cost 4", "2: cost 7"]);
    assert_eq!(cheapest_costs(reduced.as_bytes()), costs);
}

#[test]
fn a_primary_item_in_no_option_is_all_dlx_pre_prints() {
    // C is in no option from the start: 0 rounds, every option and item
    // counted as removed (Knuth's counts).
    let out = xccd(&["preprocess"], b"A B C | X\nA X\nB X\nA B\n");
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "C\n");
    assert_eq!(
        text(&out.stderr),
        "(3 options, 3+1 items, 9 entries successfully read)\n\
         Removed 3 options and 4 items, after 167+3 mems, 0 rounds.\n"
    );
    let out = xccd(&["solve", "--count", "--preprocess"], b"A B C | X\nA X\n");
    assert_eq!(text(&out.stdout), "0\n");
}

#[test]
fn warnings_quote_the_dropped_lines_as_written() {
    // What DLX-PRE prints for this text with a newline at its end.
    let out = xccd(&["preprocess"], b"A B | X Y\n  X:0   Y:1\t\nA X\n| c\nB\nY");
    assert_eq!(text(&out.stdout), " A B\n A\n B\n");
    assert_eq!(
        text(&out.stderr),
        "Option ignored (no primary items):   X:0   Y:1\t\n\
         Option ignored (no primary items): Y\n\
         (2 options, 2+2 items, 5 entries successfully read)\n\
         Removed 0 options and 2 items, after 197+171 mems, 2 rounds.\n"
    );
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let cases: &[(&[&str], &[u8], &str)] = &[
        (&["preprocess"], b"A 2:3|B\nA B\n", "multiplicity"),
        (
            &["preprocess", "bench/instances/mcc_simple.dlx"],
            b"",
            "multiplicity",
        ),
        (&["preprocess"], b"A B\nA C\n", "unknown item \"C\""),
        (&["preprocess"], b"| only a comment\n", "no item line"),
        (&["preprocess", "no/such/file.dlx"], b"", "cannot read"),
        (&["preprocess", "--rounds=-1"], b"A\nA\n", "--rounds"),
        (&["preprocess", "--verbose", "x"], b"A\nA\n", "--verbose"),
        (&["solve", "--preprocess"], b"A 2|B\nA B\n", "multiplicity"),
        (
            &["solve", "--preprocess", "--memo"],
            b"A\nA\n",
            "--memo answers",
        ),
        (
            &["solve", "--preprocess", "--cheapest", "2", "--threads", "2"],
            b"A\nA\n",
            "--cheapest runs on this thread",
        ),
    ];
    for (args, stdin, message) in cases {
        let out = xccd(args, stdin);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let p = dlx_format::parse("A 0:2|B\nA B\n").unwrap();
    assert_eq!(
        preprocess(&p, &Config::default()).unwrap_err(),
        PreprocessError::Multiplicity("B".into())
    );
}

/// Every solution the engine finds, each sorted, as a set.
fn solutions(problem: &Problem) -> BTreeSet<Vec<usize>> {
    let mut c = Collect::default();
    Solver::new(problem)
        .run(&Task::root(), &RunConfig::default(), &mut c)
        .expect("the root task is valid");
    let n = c.solutions.len();
    let set: BTreeSet<Vec<usize>> = c
        .solutions
        .into_iter()
        .map(|mut s| {
            s.sort_unstable();
            s
        })
        .collect();
    assert_eq!(set.len(), n, "no solution twice");
    set
}

/// A small random problem: primary items `p*`, secondary `s*`, options of
/// one to four items, a secondary item colored half the time.
fn problem() -> impl Strategy<Value = Problem> {
    let entry = (0usize..10, prop::option::weighted(0.5, 0u8..3));
    let option = prop::collection::vec(entry, 1..5);
    (1usize..7, 0usize..5, prop::collection::vec(option, 0..14)).prop_map(
        |(primary, secondary, options)| {
            let names: Vec<String> = (0..primary)
                .map(|i| format!("p{i}"))
                .chain((0..secondary).map(|i| format!("s{i}")))
                .collect();
            let mut b = ProblemBuilder::new();
            for (i, name) in names.iter().enumerate() {
                if i < primary {
                    b.primary(name).unwrap();
                } else {
                    b.secondary(name).unwrap();
                }
            }
            let colors = ["a", "b", "c"];
            for option in options {
                let mut seen = BTreeSet::new();
                let entries: Vec<EntrySpec> = option
                    .into_iter()
                    .map(|(i, c)| (i % names.len(), c))
                    .filter(|&(i, _)| seen.insert(i))
                    .map(|(i, c)| EntrySpec {
                        item: &names[i],
                        color: c.filter(|_| i >= primary).map(|c| colors[c as usize]),
                    })
                    .collect();
                b.option(entries).unwrap();
            }
            b.build().unwrap()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn the_reduced_problem_has_the_same_solutions(
        problem in problem(),
        rounds in prop::option::weighted(0.2, 0u32..4),
        timeout in prop::option::weighted(0.2, 0u64..2000),
    ) {
        let mut config = Config { verbose: 0, ..Config::default() };
        if let Some(r) = rounds {
            config.rounds = r;
        }
        if let Some(t) = timeout {
            config.timeout = t;
        }
        let reduced = preprocess(&problem, &config).unwrap();
        let expected = solutions(&problem);
        let mapped: BTreeSet<Vec<usize>> = solutions(&reduced.problem)
            .into_iter()
            .map(|s| {
                let mut s = reduced.map_back(&s);
                s.sort_unstable();
                s
            })
            .collect();
        prop_assert_eq!(&mapped, &expected, "{}", problem);
        for s in &expected {
            prop_assert!(problem.verify(s).is_ok());
        }
        match reduced.infeasible {
            Some(item) => {
                prop_assert!(expected.is_empty());
                prop_assert!(problem.items()[item].is_primary());
                prop_assert_eq!(reduced.problem.options().len(), 0);
            }
            None => {
                check_origin(&problem, &reduced);
                let f = reduced.figures;
                let kept = problem.options().len() - problem.dropped_options().len();
                prop_assert_eq!(f.options_in, kept);
                prop_assert_eq!(kept - f.options_out, reduced.problem.options().len());
                prop_assert_eq!(f.items_out, reduced.removed_items.len());
            }
        }
        // The text DLX-PRE writes reads back as the reduced problem.
        let written = reduced.to_dlx_pre(0);
        let read = dlx_format::parse(&written).unwrap();
        prop_assert_eq!(shape(&read), shape(&reduced.problem));
    }
}

/// `solve --count` with `extra` arguments.
fn cli_count(path: &str, extra: &[&str]) -> String {
    let mut args = vec!["solve", path, "--count", "-q"];
    args.extend_from_slice(extra);
    let out = xccd(&args, b"");
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

#[test]
fn preprocess_with_threads_and_a_server_finds_the_same_solutions() {
    // `xccd serve` on a free loopback port (2 threads, no store).
    let mut server = Server::start(&["--threads", "2", "--data-dir", "none"], Log::Null);
    server.wait_listening();
    let url = server.url();
    let url = url.as_str();
    for name in [
        "sudoku_hard17",
        "color_simple",
        "color_debruijn4",
        "queens8",
        "langford8",
        "latin4",
        "pent3x20",
    ] {
        let path = format!("bench/instances/{name}.dlx");
        let plain = cli_count(&path, &[]);
        for with in [
            &["--preprocess", "--threads", "2"][..],
            &["--preprocess", "--server", url],
        ] {
            assert_eq!(cli_count(&path, with), plain, "{name} {with:?}");
        }
        let all = ["solve", &path, "--all", "-q", "--format", "indices"];
        let solutions = cli_solutions(&all);
        assert_eq!(solutions.len().to_string(), plain, "{name}");
        for with in [
            &["--preprocess", "--threads", "2"][..],
            &["--preprocess", "--server", url],
        ] {
            let got = cli_solutions(&[&all[..], with].concat());
            assert_eq!(got, solutions, "{name} {with:?}");
        }
    }
    // Knuth's format prints the input's options, not the reduced ones.
    for with in [&["--threads", "2"][..], &["--server", url]] {
        let args = [&["solve", "examples/toy.dlx", "--preprocess"][..], with].concat();
        let out = xccd(&args, b"");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let printed: BTreeSet<String> = text(&out.stdout).lines().map(String::from).collect();
        let expected: BTreeSet<String> = ["1:", " A D", " B G", " C E F"].map(String::from).into();
        assert_eq!(printed, expected, "{args:?}");
    }
}

#[test]
fn preprocess_with_memo_counts_the_same_and_samples_input_solutions() {
    let instances = [
        "instances/sudoku_hard17",
        "instances/color_simple",
        "instances/color_debruijn4",
        "instances/queens8",
        "instances/langford8",
        "instances/latin4",
        "memo/domino6x6",
        "memo/color_domino6x6",
    ];
    for name in instances {
        let path = format!("bench/{name}.dlx");
        let plain = cli_count(&path, &[]);
        assert_eq!(cli_count(&path, &["--memo"]), plain, "{name}");
        assert_eq!(
            cli_count(&path, &["--memo", "--preprocess"]),
            plain,
            "{name}"
        );
        // Samples drawn from the reduced problem's ZDD are solutions of
        // the input, named by its options.
        let all = cli_solutions(&["solve", &path, "--all", "-q", "--format", "indices"]);
        let args = [
            "solve",
            &path,
            "--memo",
            "--preprocess",
            "--sample",
            "20",
            "--seed",
            "7",
            "-q",
            "--format",
            "indices",
        ];
        let samples = cli_solutions(&args);
        assert!(!samples.is_empty(), "{name}");
        assert!(samples.is_subset(&all), "{name}: {samples:?}");
    }
}

/// `--cheapest 10 --format indices`: (cost, options sorted) per solution,
/// the costs sorted.
fn cli_cheapest(path: &str, extra: &[&str]) -> Vec<(u64, Vec<usize>)> {
    let mut args = vec![
        "solve",
        path,
        "--cheapest",
        "10",
        "-q",
        "--format",
        "indices",
    ];
    args.extend_from_slice(extra);
    let out = xccd(&args, b"");
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| {
            let (cost, options) = l.split_once(": ").unwrap();
            let mut s: Vec<usize> = options.split(' ').map(|n| n.parse().unwrap()).collect();
            s.sort_unstable();
            (cost.parse().unwrap(), s)
        })
        .collect()
}

#[test]
fn preprocess_with_cheapest_finds_the_same_costs_as_input_solutions() {
    let instances = [
        "costs/assign8",
        "costs/assign12ties",
        "costs/domino6x8",
        "costs/rooms12",
        "costs/cover40",
        "instances/queens8",
        "instances/color_debruijn4",
    ];
    for name in instances {
        let path = format!("bench/{name}.dlx");
        let input =
            dlx_format::parse(&std::fs::read_to_string(root().join(&path)).unwrap()).unwrap();
        let costs = |found: &[(u64, Vec<usize>)]| {
            let mut c: Vec<u64> = found.iter().map(|(c, _)| *c).collect();
            c.sort_unstable();
            c
        };
        let plain = cli_cheapest(&path, &[]);
        let reduced = cli_cheapest(&path, &["--preprocess"]);
        assert_eq!(plain.len(), 10, "{name}");
        // The cheapest costs are the same; with ties the solutions of equal
        // cost may differ, but each is a solution of the input, its cost
        // the input's options' costs.
        assert_eq!(costs(&reduced), costs(&plain), "{name}");
        for (cost, options) in &reduced {
            assert!(input.verify(options).is_ok(), "{name}: {options:?}");
            let sum: u64 = options.iter().map(|&o| input.cost(o)).sum();
            assert_eq!(sum, *cost, "{name}: {options:?}");
        }
        let distinct: BTreeSet<&Vec<usize>> = reduced.iter().map(|(_, s)| s).collect();
        assert_eq!(distinct.len(), reduced.len(), "{name}: a solution twice");
    }
}
