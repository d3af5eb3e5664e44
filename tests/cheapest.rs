//! The cheapest-solutions search (`xccd solve --cheapest K`, Knuth's DLX5)
//! against DLX5's own figures and solutions (bench/dlx5-reference.tsv,
//! bench/dlx5-solutions.tsv: bench/costs/, and instances without costs from
//! bench/instances/), against enumerating every solution with the
//! existing engine on random problems with costs, and on bad input.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use xccd::xcc::cheapest::{self, CheapestConfig, CheapestError, CostedSolution, MAX_K};
use xccd::xcc::{dlx_format, Collect, Problem, RunConfig, Solver, Task};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn xccd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run xccd")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Data lines of a bench table (after its `#` lines and header), split.
fn table(name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(root().join("bench").join(name)).unwrap();
    assert!(
        text.starts_with("# Knuth's DLX5"),
        "{name} says how it was made"
    );
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn problem(case: &str) -> Problem {
    let path = root().join(format!("bench/{case}.dlx"));
    dlx_format::parse_bytes(&std::fs::read(path).unwrap()).unwrap()
}

/// A solution as the solutions table writes it: each option's items sorted,
/// the options sorted, joined by "; ".
fn option_set(problem: &Problem, options: &[usize]) -> String {
    let mut keys: Vec<String> = options
        .iter()
        .map(|&o| {
            let text = problem.format_option(o);
            let mut items: Vec<&str> = text.split(' ').collect();
            items.sort_unstable();
            items.join(" ")
        })
        .collect();
    keys.sort();
    keys.join("; ")
}

/// A solution found: its number, its cost, its option set.
type Found = (u64, u64, String);

#[test]
fn nodes_updates_costs_and_solutions_equal_dlx5s() {
    // Every solution DLX5 found, by (case, k, params), in its order.
    let mut found: BTreeMap<(String, String, String), Vec<Found>> = BTreeMap::new();
    for row in table("dlx5-solutions.tsv") {
        found
            .entry((row[0].clone(), row[1].clone(), row[5].clone()))
            .or_default()
            .push((
                row[2].parse().unwrap(),
                row[3].parse().unwrap(),
                row[4].clone(),
            ));
    }
    let rows = table("dlx5-reference.tsv");
    for row in &rows {
        let (case, k) = (&row[0], row[1].parse::<usize>().unwrap());
        let params = &row[8];
        let p = problem(case);
        let mut seen = Vec::new();
        let outcome = cheapest::cheapest_with(&p, &dlx5_params(k, params), |s| {
            seen.push((s.found, s.cost, option_set(&p, &s.options)))
        })
        .unwrap();
        let s = &outcome.stats;
        let figures = [s.solutions, s.nodes, s.updates, s.cleansings].map(|n| n.to_string());
        assert_eq!(
            figures.to_vec(),
            row[2..6].to_vec(),
            "{case} k={k} {params}"
        );
        let mut costs: Vec<u64> = outcome.solutions.iter().map(|s| s.cost).collect();
        costs.sort_unstable();
        let expected: Vec<u64> = row[6].split(',').map(|c| c.parse().unwrap()).collect();
        assert_eq!(costs, expected, "{case} k={k} {params}: the k best costs");
        assert_eq!(
            seen,
            found[&(case.clone(), row[1].clone(), params.clone())],
            "{case} k={k} {params}: the solutions found, in order"
        );
        // The ones kept are solutions found, in the order found, and valid.
        for kept in &outcome.solutions {
            let (_, cost, set) = &seen[kept.found as usize - 1];
            assert_eq!((cost, set), (&kept.cost, &option_set(&p, &kept.options)));
            assert_eq!(p.verify(&kept.options), Ok(()));
        }
        assert!(outcome
            .solutions
            .windows(2)
            .all(|w| w[0].found < w[1].found));
    }
    assert_eq!(
        rows.len(),
        52,
        "8 instances with costs, 7 without, 11 with DLX5's parameters, k = 1 and 10"
    );
    for param in ["h", "z", "Z"] {
        assert!(
            rows.iter().any(|r| r[8].contains(param)),
            "a row with DLX5's {param}"
        );
    }
    assert!(rows.iter().any(|r| r[5] != "0"), "an instance with colors");
}

/// DLX5's parameters as a reference row writes them (`h2`, `z1 Zw`).
fn dlx5_params(k: usize, params: &str) -> CheapestConfig {
    let mut config = CheapestConfig::new(k);
    for param in params.split_whitespace() {
        let (name, value) = param.split_at(1);
        match name {
            "h" => config.len_threshold = value.parse().unwrap(),
            "z" => config.z = value.parse().unwrap(),
            "Z" => config.prefixes = value.as_bytes().to_vec(),
            _ => panic!("an unknown DLX5 parameter {param}"),
        }
    }
    config
}

/// The CLI flags of DLX5's parameters.
fn cli_params(params: &str) -> Vec<String> {
    let mut args = Vec::new();
    for param in params.split_whitespace() {
        let (name, value) = param.split_at(1);
        let flag = match name {
            "h" => "--lenthresh",
            "z" => "--zgiven",
            _ => "--zchars",
        };
        args.extend([flag.to_string(), value.to_string()]);
    }
    args
}

#[test]
fn the_cli_flags_of_dlx5s_parameters_give_its_figures() {
    for row in table("dlx5-reference.tsv")
        .into_iter()
        .filter(|r| !r[8].is_empty() && r[0] != "costs/domino12x12")
    {
        let path = format!("bench/{}.dlx", row[0]);
        let mut args: Vec<String> = ["solve", &path, "--cheapest", &row[1]]
            .map(String::from)
            .to_vec();
        args.extend(cli_params(&row[8]));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = xccd(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let expected = format!(
            "Altogether {} solution{} found ({} kept), {} updates, {} cleansings, {} nodes, ",
            row[2],
            if row[2] == "1" { "" } else { "s" },
            row[6].split(',').count(),
            row[4],
            row[5],
            row[3]
        );
        let stderr = text(&out.stderr);
        assert!(stderr.starts_with(&expected), "{args:?}: {stderr}");
    }
    // DLX5's warnings on options that do not fit z and Z, and its refusal
    // of a z that does not divide the primary items.
    let out = xccd(&[
        "solve",
        "bench/costs/assign8.dlx",
        "--cheapest",
        "1",
        "--zgiven",
        "1",
    ]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("Option has 2 non-Z primary items, not 1: w0 j0\n"),
        "{stderr}"
    );
    let out = xccd(&[
        "solve",
        "bench/costs/assign8.dlx",
        "--cheapest",
        "1",
        "--zchars",
        "wx",
    ]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Option lacks a x item: w0 j0"), "{stderr}");
    let out = xccd(&[
        "solve",
        "bench/costs/assign8.dlx",
        "--cheapest",
        "1",
        "--zgiven",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("there are 16 primary items, but z=3 and Z="),
        "{stderr}"
    );
    for bad in [
        &["--lenthresh", "0"][..],
        &["--zchars", "abcdefgh"],
        &["--zgiven", "1", "--preprocess"],
    ] {
        let args = [
            &["solve", "bench/costs/assign8.dlx", "--cheapest", "1"][..],
            bad,
        ]
        .concat();
        let out = xccd(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!text(&out.stderr).contains("panicked"), "{args:?}");
    }
}

#[test]
fn the_cli_prints_the_k_cheapest_with_their_costs_and_dlx5s_figures() {
    let row = table("dlx5-reference.tsv")
        .into_iter()
        .find(|r| r[0] == "costs/rooms12" && r[1] == "10")
        .unwrap();
    let out = xccd(&["solve", "bench/costs/rooms12.dlx", "--cheapest", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let headers: Vec<(u64, u64)> = stdout
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| {
            let (n, cost) = l.split_once(": cost ").expect("N: cost C");
            (n.parse().unwrap(), cost.parse().unwrap())
        })
        .collect();
    assert_eq!(headers.len(), 10);
    assert!(headers.windows(2).all(|w| w[0].0 < w[1].0), "order found");
    let mut costs: Vec<String> = headers.iter().map(|h| h.1.to_string()).collect();
    costs.sort_by_key(|c| c.parse::<u64>().unwrap());
    assert_eq!(costs.join(","), row[6]);
    // Each option line is the option as written, with its cost.
    let p = problem("costs/rooms12");
    let first = stdout.lines().nth(1).unwrap();
    let (items, cost) = first.trim().rsplit_once(" |").unwrap();
    let o = (0..p.options().len())
        .find(|&o| p.format_option(o) == items)
        .unwrap();
    assert_eq!(p.cost(o).to_string(), cost);
    let expected = format!(
        "Altogether {} solutions found (10 kept), {} updates, {} cleansings, {} nodes, ",
        row[2], row[4], row[5], row[3]
    );
    assert!(stderr.starts_with(&expected), "{stderr}");
    assert!(stderr.contains("\nThe optimum costs are:\n $29 (repeated 2 times)\n"));
    // Indices and JSON.
    let out = xccd(&["solve", "bench/costs/assign8.dlx", "--cheapest", "1", "-q"]);
    assert_eq!(
        text(&out.stdout).lines().count(),
        9,
        "a header and 8 options"
    );
    assert!(text(&out.stderr).is_empty());
    let out = xccd(&[
        "solve",
        "bench/costs/assign8.dlx",
        "--cheapest",
        "2",
        "--format",
        "json",
    ]);
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["options"].as_array().unwrap().len(), 8);
    let out = xccd(&["solve", "bench/costs/assign8.dlx", "--cheapest", "1"]);
    assert!(text(&out.stderr).contains("\nThe optimum cost is $61\n"));
    let out = xccd(&[
        "solve",
        "bench/costs/assign8.dlx",
        "--cheapest",
        "1",
        "--format",
        "indices",
    ]);
    assert!(
        text(&out.stdout).starts_with("61: "),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn the_other_searches_ignore_costs_and_say_so() {
    let out = xccd(&["solve", "bench/costs/assign8.dlx", "--count"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "40320\n", "8! assignments");
    assert!(text(&out.stderr).starts_with("The options' costs are ignored (--cheapest K"));
    let out = xccd(&["solve", "examples/toy.dlx", "--count"]);
    assert!(!text(&out.stderr).contains("costs"), "no costs, no note");
}

#[test]
fn bad_input_and_conflicting_flags_are_refused_clearly() {
    let file = "bench/costs/assign8.dlx";
    let refused = |args: &[&str], says: &str| {
        let out = xccd(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    };
    for flag in ["--all", "--count", "--memo", "--profile"] {
        refused(
            &["solve", file, "--cheapest", "3", flag],
            "cannot be used with",
        );
    }
    refused(
        &["solve", file, "--cheapest", "3", "--limit", "2"],
        "cannot be used with",
    );
    refused(
        &["solve", file, "--cheapest", "3", "--max-nodes", "9"],
        "cannot be used with",
    );
    refused(
        &["solve", file, "--cheapest", "3", "--threads", "2"],
        "drop --server and --threads",
    );
    refused(
        &[
            "solve",
            file,
            "--cheapest",
            "3",
            "--server",
            "http://127.0.0.1:1",
        ],
        "drop --server and --threads",
    );
    refused(
        &["solve", file, "--cheapest", "3", "--engine", "links"],
        "drop --engine",
    );
    refused(
        &["solve", file, "--cheapest", "0"],
        "k must be between 1 and 15000",
    );
    refused(
        &["solve", file, "--cheapest", "15001"],
        "k must be between 1 and 15000",
    );
    refused(
        &["solve", "bench/instances/mcc_simple.dlx", "--cheapest", "1"],
        "does not handle multiplicities",
    );
    refused(&["solve", file, "--cheapest", "x"], "invalid value 'x'");
    let dir = std::env::temp_dir().join(format!("xccd-cheapest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (body, says) in [
        (
            "A B\nA |3\nB |x\n",
            "line 3, column 3: option cost should be a decimal number (|n, as in DLX5) (at \"|x\")",
        ),
        (
            "A B\nA B |12z\n",
            "line 2, column 5: illegal digit in option cost",
        ),
        (
            "A B\nA B |5000000000\n",
            "line 2, column 5: option cost too large",
        ),
    ] {
        let path = dir.join("bad.dlx");
        std::fs::write(&path, body).unwrap();
        refused(&["solve", path.to_str().unwrap(), "--cheapest", "1"], says);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // The library's errors are typed.
    let p = problem("costs/assign8");
    assert_eq!(
        cheapest::cheapest(&p, &CheapestConfig::new(0)),
        Err(CheapestError::KOutOfRange(0))
    );
    assert!(cheapest::cheapest(&p, &CheapestConfig::new(MAX_K)).is_ok());
    let m = dlx_format::parse("2|A B\nA |1\nA B\n").unwrap();
    assert_eq!(
        cheapest::cheapest(&m, &CheapestConfig::new(1)),
        Err(CheapestError::Multiplicities)
    );
}

/// A random problem with costs: a few primary items, maybe secondary ones
/// with colors, options of random items, costs 0..=4 (many ties) or none.
#[derive(Debug, Clone)]
struct Spec {
    primary: usize,
    secondary: usize,
    /// Per option: items (index, color 0 = none), cost.
    options: Vec<(Vec<(usize, u8)>, u64)>,
}

impl Spec {
    fn text(&self) -> String {
        let name = |i: usize| {
            if i < self.primary {
                format!("p{i}")
            } else {
                format!("s{}", i - self.primary)
            }
        };
        let mut out: Vec<String> = (0..self.primary).map(name).collect();
        if self.secondary > 0 {
            out.push("|".into());
            out.extend((self.primary..self.primary + self.secondary).map(name));
        }
        let mut text = out.join(" ") + "\n";
        for (items, cost) in &self.options {
            let mut seen = Vec::new();
            let mut tokens = Vec::new();
            for &(i, color) in items {
                if seen.contains(&i) {
                    continue;
                }
                seen.push(i);
                match color {
                    c if c > 0 && i >= self.primary => tokens.push(format!("{}:{c}", name(i))),
                    _ => tokens.push(name(i)),
                }
            }
            if *cost > 0 {
                tokens.push(format!("|{cost}"));
            }
            text += &(tokens.join(" ") + "\n");
        }
        text
    }
}

fn spec() -> impl Strategy<Value = Spec> {
    (1usize..6, 0usize..3).prop_flat_map(|(primary, secondary)| {
        let n = primary + secondary;
        let item = (0..n, 0u8..3);
        let option = (prop::collection::vec(item, 1..4), 0u64..5);
        prop::collection::vec(option, 1..14).prop_map(move |options| Spec {
            primary,
            secondary,
            options,
        })
    })
}

/// Every solution's cost, by the existing engine's full enumeration.
fn all_costs(problem: &Problem) -> Vec<u64> {
    let mut all = Collect::default();
    Solver::new(problem)
        .run(&Task::root(), &RunConfig::default(), &mut all)
        .unwrap();
    let mut costs: Vec<u64> = all
        .solutions
        .iter()
        .map(|s| s.iter().map(|&o| problem.cost(o)).sum())
        .collect();
    costs.sort_unstable();
    costs
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn the_k_cheapest_costs_are_those_of_all_solutions_sorted(spec in spec(), k in 1usize..7) {
        let text = spec.text();
        let problem = dlx_format::parse(&text).unwrap();
        let all = all_costs(&problem);
        let mut seen: Vec<CostedSolution> = Vec::new();
        let outcome = cheapest::cheapest_with(&problem, &CheapestConfig::new(k), |s| seen.push(s.clone())).unwrap();
        let mut costs: Vec<u64> = outcome.solutions.iter().map(|s| s.cost).collect();
        costs.sort_unstable();
        prop_assert_eq!(&costs[..], &all[..all.len().min(k)], "{}", text);
        for s in &outcome.solutions {
            prop_assert_eq!(problem.verify(&s.options), Ok(()));
            let sum: u64 = s.options.iter().map(|&o| problem.cost(o)).sum();
            prop_assert_eq!(sum, s.cost);
            prop_assert_eq!(&seen[s.found as usize - 1], s);
        }
        // Each solution found beats the k-th best found before it.
        for (n, s) in seen.iter().enumerate() {
            prop_assert_eq!(s.found, n as u64 + 1);
            let mut before: Vec<u64> = seen[..n].iter().map(|s| s.cost).collect();
            before.sort_unstable();
            if let Some(&kth) = before.get(k - 1) {
                prop_assert!(s.cost < kth, "{}", text);
            }
        }
        prop_assert_eq!(outcome.stats.solutions, seen.len() as u64);
    }
}

/// `xccd bench --service`'s searches rows: a memoized count (DLX6's, of
/// bench/dlx6-reference.tsv) and the 10 cheapest costs (DLX5's, of
/// bench/dlx5-reference.tsv) answered alike by Solve and by the library.
#[test]
fn bench_service_runs_memo_and_cheapest_through_the_service() {
    let out = xccd(&["bench", "--service", "--filter", "searches", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let dlx6 = std::fs::read_to_string(root().join("bench/dlx6-reference.tsv")).unwrap();
    let count = dlx6
        .lines()
        .find_map(|l| l.strip_prefix("domino10x10\t"))
        .and_then(|rest| rest.split('\t').next())
        .unwrap();
    assert_eq!(rows[0]["search"], "memo");
    assert_eq!(rows[0]["answer"], count);
    let costs = table("dlx5-reference.tsv")
        .into_iter()
        .find(|r| r[0] == "costs/cover46" && r[1] == "10" && r[8].is_empty())
        .unwrap()[6]
        .clone();
    assert_eq!(rows[1]["search"], "cheapest");
    assert_eq!(rows[1]["answer"], format!("[{}]", costs.replace(',', ", ")));
    for row in &rows {
        assert!(row["service_s"].as_f64().unwrap() > 0.0, "{row}");
    }
}
