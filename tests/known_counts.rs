//! Known solution counts, and Knuth's node and update counts, on the shared
//! benchmark instances and on problems generated here.

use std::path::PathBuf;

use xccd::xcc::{
    dlx_format, Collect, CountOnly, Engine, Layout, Order, ProblemBuilder, RunConfig, Solver,
    Stats, Task,
};

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench")
}

fn count(problem: &xccd::xcc::Problem) -> Stats {
    count_with(problem, Layout::Narrow)
}

fn count_with(problem: &xccd::xcc::Problem, layout: Layout) -> Stats {
    Solver::with_layout(problem, layout)
        .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
        .expect("root task is valid")
        .stats
}

/// The rows of a reference table of `bench` (tab-separated, a
/// header line `case ...`, comments), each with its instance parsed.
fn reference_rows(table: &str) -> Vec<(Vec<String>, xccd::xcc::Problem)> {
    let text = std::fs::read_to_string(bench_dir().join(table))
        .unwrap_or_else(|e| panic!("bench/{table} is part of the repository: {e}"));
    text.lines()
        .filter(|line| {
            !(line.starts_with('#') || line.starts_with("case") || line.trim().is_empty())
        })
        .map(|line| {
            let fields: Vec<String> = line.split('\t').map(str::to_string).collect();
            let path = bench_dir()
                .join("instances")
                .join(format!("{}.dlx", fields[0]));
            let problem = dlx_format::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
            (fields, problem)
        })
        .collect()
}

/// Every instance of the shared benchmark: the solution count, and for the
/// algorithms we follow (DLX2 = Algorithm C, DLX3 = Algorithm M) the exact
/// nodes, updates and cleansings of Knuth's programs.
#[test]
fn benchmark_instances_match_knuths_counts() {
    let mut checked = 0;
    for (f, problem) in reference_rows("knuth-reference.tsv") {
        let name = f[0].as_str();
        let num = |i: usize| f[i].parse::<u64>().unwrap();
        // Every instance fits the narrow nodes that `Solver::new` picks; the
        // wide ones (for larger problems) must count exactly the same.
        assert_eq!(Solver::new(&problem).layout(), Layout::Narrow, "{name}");
        let stats = count(&problem);
        let wide = count_with(&problem, Layout::Wide);
        assert_eq!(stats, wide, "{name}: the two node layouts differ");
        let algorithm = Solver::new(&problem).algorithm();
        assert_eq!(stats.solutions, num(1), "{name}: solutions");
        assert_eq!(stats.nodes, num(3), "{name}: nodes");
        assert_eq!(stats.updates, num(4), "{name}: updates");
        assert_eq!(stats.cleansings, num(5), "{name}: cleansings");
        let expected_algorithm = if f[2] == "dlx3" { "M" } else { "XC" };
        assert!(
            expected_algorithm.contains(algorithm),
            "{name}: algorithm {algorithm}"
        );
        checked += 1;
    }
    assert_eq!(
        checked, 32,
        "every instance of the reference table was checked"
    );
}

/// Every instance of SSXCC's reference table: the cells engine making
/// SSXCC's own choices (`Order::Ssxcc`) follows SSXCC step by step, so its
/// solutions, nodes and updates equal SSXCC's, in either layout (16-bit and
/// 32-bit words: every instance fits both).
#[test]
fn benchmark_instances_match_ssxcc_counts_in_both_layouts() {
    check_cells_table("ssxcc-reference.tsv", Order::Ssxcc, 22);
}

/// Every instance with multiplicities: the cells engine making SSMCC's own
/// choices (`Order::Ssxcc` on a problem with bounds) follows SSMCC step by
/// step, so its solutions, nodes and updates equal SSMCC's.
#[test]
fn multiplicity_instances_match_ssmcc_counts() {
    check_cells_table("ssmcc-reference.tsv", Order::Ssxcc, 10);
}

/// Every instance of the cells engine's own table (its default order,
/// whose counts a split search keeps: tests/exact_counts.rs), in either
/// layout; `Solver::ssxcc` picks the default layout.
#[test]
fn benchmark_instances_match_the_cells_engines_counts_in_both_layouts() {
    check_cells_table("cells-reference.tsv", Order::Exact, 32);
}

fn check_cells_table(table: &str, order: Order, rows: usize) {
    let mut checked = 0;
    for (f, problem) in reference_rows(table) {
        let name = f[0].as_str();
        let num = |i: usize| f[i].parse::<u64>().unwrap();
        // Multiplicities have one layout (32-bit words, cells_mcc.rs).
        let mcc = problem.has_multiplicities();
        let mut layouts = if mcc { vec![] } else { vec![Layout::Narrow] };
        // The wide layout on the quicker instances (the largest take
        // seconds each, and the oracle and split tests run both layouts on
        // random problems).
        if num(3) < 100_000_000 || mcc {
            layouts.push(Layout::Wide);
        }
        // The default: 16-bit cells when the 32-bit arrays would overflow
        // a 32 KiB first-level cache: of the table's instances, only the
        // pentomino ones' would (see cells::narrow_pays).
        let default = Solver::with_engine(&problem, Engine::Cells)
            .unwrap()
            .layout();
        let big = ["pent6x10", "pent3x20"].contains(&name);
        assert_eq!(default == Layout::Narrow, big, "{name}: default layout");
        assert_eq!(Solver::ssxcc(&problem).unwrap().layout(), default, "{name}");
        for layout in layouts {
            let mut solver = Solver::cells(&problem, layout, order).unwrap();
            assert_eq!(solver.layout(), layout, "{name}");
            assert_eq!(solver.order(), Some(order), "{name}");
            let stats = solver
                .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
                .expect("root task is valid")
                .stats;
            let row = (stats.solutions, stats.nodes, stats.updates);
            assert_eq!(
                row,
                (num(1), num(2), num(3)),
                "{name} ({layout:?}, {order:?})"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, rows, "every instance of {table}");
}

/// n queens as exact cover: rows and columns primary, diagonals secondary.
fn queens(n: usize) -> xccd::xcc::Problem {
    let mut b = ProblemBuilder::new();
    for i in 0..n {
        b.primary(&format!("r{i}")).unwrap();
        b.primary(&format!("c{i}")).unwrap();
    }
    for d in 0..2 * n - 1 {
        b.secondary(&format!("a{d}")).unwrap();
        b.secondary(&format!("b{d}")).unwrap();
    }
    for i in 0..n {
        for j in 0..n {
            let (r, c, a, d) = (
                format!("r{i}"),
                format!("c{j}"),
                format!("a{}", i + j),
                format!("b{}", i + n - 1 - j),
            );
            b.option_str(&[&r, &c, &a, &d]).unwrap();
        }
    }
    b.build().unwrap()
}

#[test]
fn n_queens_counts() {
    let known = [1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200];
    for (n, &expected) in (1..).zip(known.iter()) {
        let problem = queens(n);
        let stats = count(&problem);
        assert_eq!(stats.solutions, expected, "{n} queens");
        // Every solution is a valid placement.
        let mut all = Collect::default();
        Solver::new(&problem)
            .run(&Task::root(), &RunConfig::default(), &mut all)
            .unwrap();
        assert_eq!(all.solutions.len() as u64, expected);
        for s in &all.solutions {
            problem.verify(s).unwrap();
        }
    }
}

/// Langford pairs: place two copies of each k in 1..=n in 2n slots with k
/// slots between them; counts include reversals.
#[test]
fn langford_counts() {
    for (n, expected) in [(3, 2), (4, 2), (7, 52), (8, 300)] {
        let mut b = ProblemBuilder::new();
        for k in 1..=n {
            b.primary(&format!("v{k}")).unwrap();
        }
        for s in 0..2 * n {
            b.primary(&format!("s{s}")).unwrap();
        }
        for k in 1..=n {
            for i in 0..2 * n {
                let j = i + k + 1;
                if j < 2 * n {
                    b.option_str(&[&format!("v{k}"), &format!("s{i}"), &format!("s{j}")])
                        .unwrap();
                }
            }
        }
        let stats = count(&b.build().unwrap());
        assert_eq!(stats.solutions, expected, "langford {n}");
    }
}

/// 0/1 matrices with all row and column sums k (Algorithm M): 4x4 with
/// k = 2 has 90, 3x3 with k = 1 is the 6 permutation matrices, 3x3 with
/// k = 2 their complements.
#[test]
fn multiplicity_matrix_counts() {
    for (n, k, expected) in [(3, 1, 6), (3, 2, 6), (4, 2, 90), (5, 2, 2040)] {
        let mut b = ProblemBuilder::new();
        for i in 0..n {
            b.primary_with_bounds(&format!("r{i}"), k, k).unwrap();
        }
        for j in 0..n {
            b.primary_with_bounds(&format!("c{j}"), k, k).unwrap();
        }
        for i in 0..n {
            for j in 0..n {
                b.option_str(&[&format!("r{i}"), &format!("c{j}")]).unwrap();
            }
        }
        let stats = count(&b.build().unwrap());
        assert_eq!(stats.solutions, expected, "{n}x{n} sums {k}");
    }
}

/// Bounds with slack: choose between 1 and 2 of 4 options covering one
/// item, each option also covering its own optional item: C(4,1)+C(4,2).
#[test]
fn slack_bounds_count_subsets() {
    let mut b = ProblemBuilder::new();
    b.primary_with_bounds("P", 1, 2).unwrap();
    for i in 0..4 {
        b.primary_with_bounds(&format!("o{i}"), 0, 1).unwrap();
    }
    for i in 0..4 {
        b.option_str(&["P", &format!("o{i}")]).unwrap();
    }
    let problem = b.build().unwrap();
    let mut all = Collect::default();
    Solver::new(&problem)
        .run(&Task::root(), &RunConfig::default(), &mut all)
        .unwrap();
    assert_eq!(all.solutions.len(), 4 + 6);
    for s in &all.solutions {
        problem.verify(s).unwrap();
    }
}

#[test]
fn sudoku_instances_have_unique_solutions() {
    for name in ["sudoku_hard17", "sudoku_royle17a", "sudoku_royle17b"] {
        let path = bench_dir().join("instances").join(format!("{name}.dlx"));
        let problem = dlx_format::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut all = Collect::default();
        let outcome = Solver::new(&problem)
            .run(
                &Task::root(),
                &RunConfig {
                    max_solutions: Some(2),
                    ..RunConfig::default()
                },
                &mut all,
            )
            .unwrap();
        assert_eq!(outcome.status, xccd::xcc::Status::Exhausted, "{name}");
        assert_eq!(all.solutions.len(), 1, "{name}");
        problem.verify(&all.solutions[0]).unwrap();
    }
}

/// Problems too large for 8-byte nodes get 16-byte ones, and still count
/// right: more than 65,535 nodes, or more than 32,766 items.
#[test]
fn large_problems_get_wide_nodes() {
    let mut b = ProblemBuilder::new();
    b.primary("a").unwrap();
    b.secondary("s").unwrap();
    for i in 0..40_000 {
        let color = format!("c{}", i % 7);
        b.option_str(&["a", &format!("s:{color}")]).unwrap();
    }
    let many_options = b.build().unwrap();
    let mut solver = Solver::new(&many_options);
    assert_eq!(solver.layout(), Layout::Wide);
    let stats = solver
        .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
        .unwrap()
        .stats;
    assert_eq!(stats.solutions, 40_000);

    // Few nodes, but item numbers beyond 16 bits.
    let mut b = ProblemBuilder::new();
    b.primary("p").unwrap();
    for i in 0..33_000 {
        b.secondary(&format!("s{i}")).unwrap();
    }
    b.option_str(&["p", "s32999"]).unwrap();
    b.option_str(&["p", "s0"]).unwrap();
    let many_items = b.build().unwrap();
    let mut solver = Solver::new(&many_items);
    assert_eq!(solver.layout(), Layout::Wide);
    let stats = solver
        .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
        .unwrap()
        .stats;
    assert_eq!(stats.solutions, 2);

    // The cells engine: both problems are too large for 16-bit cells.
    for (problem, solutions) in [(&many_options, 40_000), (&many_items, 2)] {
        let mut solver = Solver::with_engine(problem, Engine::Cells).unwrap();
        assert_eq!(solver.layout(), Layout::Wide);
        let stats = solver
            .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
            .unwrap()
            .stats;
        assert_eq!(stats.solutions, solutions);
    }
}

/// 16-bit cells hold item numbers as nonnegative `i16`s: the cells
/// engine's `set` (two words per item and one per item occurrence) may
/// have 32,767 entries, not 32,768. Both problems have 16,382 solutions.
#[test]
fn cells_take_16_bit_words_up_to_the_limit() {
    for (pairs, single, layout) in [
        (16_381, true, Layout::Narrow),
        (16_382, false, Layout::Wide),
    ] {
        let mut b = ProblemBuilder::new();
        b.primary("a").unwrap();
        b.secondary("s").unwrap();
        for i in 0..pairs {
            b.option_str(&["a", &format!("s:c{}", i % 7)]).unwrap();
        }
        if single {
            b.option_str(&["a"]).unwrap();
        }
        let problem = b.build().unwrap();
        assert_eq!(
            problem.entries() + 2 * problem.items().len(),
            32_767 + usize::from(!single)
        );
        let mut solver =
            Solver::with_engine_layout(&problem, Engine::Cells, Layout::Narrow).unwrap();
        assert_eq!(solver.layout(), layout);
        let stats = solver
            .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
            .unwrap()
            .stats;
        assert_eq!(stats.solutions, 16_382, "{layout:?}");
    }
}
