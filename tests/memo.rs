//! Memoized counting (`xccd solve --memo`, Knuth's DLX6) against DLX6's own
//! figures (bench/dlx6-reference.tsv), the ZDD it writes read back by a
//! reader of this file's own, and its random samples checked for validity
//! and uniformity.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn xccd(args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(args)
        .output()
        .expect("run xccd");
    assert!(
        out.status.success(),
        "xccd {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn number(line: &str, before: &str) -> String {
    let at = line
        .find(before)
        .unwrap_or_else(|| panic!("{before} in {line}"));
    line[..at].split_whitespace().last().unwrap().to_string()
}

#[test]
fn counts_nodes_updates_and_zdd_sizes_equal_dlx6s() {
    let table = std::fs::read_to_string(root().join("bench/dlx6-reference.tsv")).unwrap();
    let mut rows = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        // The tilings made for memoized counting, else a bench instance.
        let memo = root().join(format!("bench/memo/{}.dlx", f[0]));
        let file = if memo.exists() {
            memo
        } else {
            root().join(format!("bench/instances/{}.dlx", f[0]))
        };
        let (out, err) = xccd(&[
            "solve",
            "--memo",
            "--count",
            "--faithful",
            file.to_str().unwrap(),
        ]);
        assert_eq!(out.trim(), f[1], "{}: count", f[0]);
        let got = [
            number(&err, " solution"),
            number(&err, " nodes,"),
            number(&err, " updates"),
            number(&err, " cleansings"),
            number(&err, " ZDD nodes"),
            number(&err, " signatures"),
            number(&err, " hits"),
        ];
        assert_eq!(got.to_vec(), f[1..8].to_vec(), "{}: {err}", f[0]);
        rows += 1;
    }
    // The six tilings and the bench instances without multiplicities.
    assert!(rows >= 20, "{rows} rows");
}

/// Knuth's ZDD text, read without xccd: `id: (~var?lo:hi)` in hex ids,
/// the last line the dummy root. Returns the count and the node map.
fn read_zdd(text: &str) -> (u128, HashMap<u64, (u64, u64, u64)>, u64) {
    let mut nodes = HashMap::new();
    let mut last = 0;
    for line in text.lines() {
        let (id, rest) = line.split_once(": (~").expect("id: (~");
        let (var, rest) = rest.split_once('?').unwrap();
        let (lo, hi) = rest.trim_end_matches(')').split_once(':').unwrap();
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        let id = hex(id);
        nodes.insert(id, (var.parse::<u64>().unwrap(), hex(lo), hex(hi)));
        last = id;
    }
    fn count(
        id: u64,
        nodes: &HashMap<u64, (u64, u64, u64)>,
        memo: &mut HashMap<u64, u128>,
    ) -> u128 {
        match id {
            0 => 0,
            1 => 1,
            _ => {
                if let Some(&c) = memo.get(&id) {
                    return c;
                }
                let (_, lo, hi) = nodes[&id];
                let c = count(lo, nodes, memo) + count(hi, nodes, memo);
                memo.insert(id, c);
                c
            }
        }
    }
    let (var, lo, root) = nodes[&last];
    assert_eq!((var, lo), (0, 0), "the dummy root");
    (count(root, &nodes, &mut HashMap::new()), nodes, root)
}

#[test]
fn a_written_zdd_counts_the_same_when_read_back() {
    let dir = tempdir();
    for case in ["domino8x8", "color_domino6x6", "domino10x10"] {
        let zdd = dir.join(format!("{case}.zdd"));
        let file = root().join(format!("bench/memo/{case}.dlx"));
        let (out, _) = xccd(&[
            "solve",
            "--memo",
            "--count",
            "--zdd",
            zdd.to_str().unwrap(),
            file.to_str().unwrap(),
        ]);
        let (count, nodes, _) = read_zdd(&std::fs::read_to_string(&zdd).unwrap());
        assert_eq!(count.to_string(), out.trim(), "{case}");
        assert!(nodes.len() > 100);
    }
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xccd-memo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn all_solutions(file: &Path) -> Vec<String> {
    let (out, _) = xccd(&[
        "solve",
        "--all",
        "--format",
        "indices",
        file.to_str().unwrap(),
    ]);
    let mut all: Vec<String> = out
        .lines()
        .map(|l| {
            let mut v: Vec<u32> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            v.sort_unstable();
            format!("{v:?}")
        })
        .collect();
    all.sort();
    all
}

#[test]
fn samples_are_solutions_drawn_uniformly() {
    // 4x4 domino tilings: 36 solutions, every one listed by the plain search.
    let dir = tempdir();
    let file = dir.join("domino4x4.dlx");
    let mut text = String::new();
    let cell = |r: usize, c: usize| format!("{r}{c}");
    for r in 0..4 {
        for c in 0..4 {
            text.push_str(&cell(r, c));
            text.push(' ');
        }
    }
    text.push('\n');
    for r in 0..4 {
        for c in 0..4 {
            if c + 1 < 4 {
                text.push_str(&format!("{} {}\n", cell(r, c), cell(r, c + 1)));
            }
            if r + 1 < 4 {
                text.push_str(&format!("{} {}\n", cell(r, c), cell(r + 1, c)));
            }
        }
    }
    std::fs::write(&file, text).unwrap();
    let all = all_solutions(&file);
    assert_eq!(all.len(), 36);
    let draws = 36 * 200;
    let (out, _) = xccd(&[
        "solve",
        "--memo",
        "--sample",
        &draws.to_string(),
        "--seed",
        "11",
        "--format",
        "indices",
        file.to_str().unwrap(),
    ]);
    let mut seen: HashMap<String, u64> = HashMap::new();
    for line in out.lines() {
        let mut v: Vec<u32> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        v.sort_unstable();
        let key = format!("{v:?}");
        assert!(all.binary_search(&key).is_ok(), "{key} is not a solution");
        *seen.entry(key).or_default() += 1;
    }
    assert_eq!(seen.values().sum::<u64>(), draws);
    // Chi-squared with 35 degrees of freedom: 66.6 is its 0.999 quantile,
    // so a uniform sampler fails this seed-fixed test with odds 1/1000.
    let expected = draws as f64 / 36.0;
    let chi2: f64 = all
        .iter()
        .map(|s| {
            let o = *seen.get(s).unwrap_or(&0) as f64;
            (o - expected).powi(2) / expected
        })
        .sum();
    assert!(chi2 < 66.6, "chi-squared {chi2} over 35 degrees of freedom");
    // The same seed draws the same solutions.
    let (again, _) = xccd(&[
        "solve",
        "--memo",
        "--sample",
        "50",
        "--seed",
        "11",
        "--format",
        "indices",
        file.to_str().unwrap(),
    ]);
    assert_eq!(
        again.lines().collect::<Vec<_>>(),
        out.lines().take(50).collect::<Vec<_>>()
    );
}

#[test]
fn memo_needs_a_question_and_its_own_search() {
    let file = root().join("bench/memo/domino4x7.dlx");
    let out = Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(["solve", "--memo", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--count"));
    // --memo is its own search: an engine asked for is refused, not ignored.
    let out = Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(["solve", "--memo", "--count", "--engine", "cells"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("drop --engine"));
}

/// Algorithm M memoized: on every multiplicity instance of bench/instances
/// the count is the plain search's (the links engine, as multiplicities
/// need), the ZDD written reads back to it, and samples are solutions the
/// plain search lists.
#[test]
fn multiplicities_count_as_the_plain_search_and_their_zdd_reads_back() {
    let dir = tempdir();
    let mut seen = 0;
    let mut names: Vec<PathBuf> = std::fs::read_dir(root().join("bench/instances"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("mcc_"))
        .collect();
    names.sort();
    for file in names {
        let name = file.file_stem().unwrap().to_string_lossy().to_string();
        let (plain, _) = xccd(&["solve", "--count", file.to_str().unwrap()]);
        let zdd = dir.join(format!("{name}.zdd"));
        let (memo, err) = xccd(&[
            "solve",
            "--memo",
            "--count",
            "--zdd",
            zdd.to_str().unwrap(),
            file.to_str().unwrap(),
        ]);
        assert_eq!(memo.trim(), plain.trim(), "{name}: {err}");
        assert!(plain.trim().parse::<u64>().unwrap() > 0, "{name}");
        let (count, _, _) = read_zdd(&std::fs::read_to_string(&zdd).unwrap());
        assert_eq!(count.to_string(), plain.trim(), "{name}: the ZDD read back");
        let all = all_solutions(&file);
        let (samples, _) = xccd(&[
            "solve",
            "--memo",
            "--sample",
            "200",
            "--seed",
            "5",
            "--format",
            "indices",
            file.to_str().unwrap(),
        ]);
        assert_eq!(samples.lines().count(), 200, "{name}");
        for line in samples.lines() {
            let mut v: Vec<u32> = line
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            v.sort_unstable();
            let key = format!("{v:?}");
            assert!(
                all.binary_search(&key).is_ok(),
                "{name}: {key} is not a solution"
            );
        }
        seen += 1;
    }
    assert!(seen >= 3, "{seen} instances");
}

/// A count alone gives the cache up where its hits stand for little of the
/// plain tree (queens and langford of every size, pentominoes): the plain
/// search counts, the same number, and it gives up at its first stage, 256
/// nodes, so that even a small board (queens8, langford8: a plain tree of
/// 900 to 2300 nodes) costs at most a few hundred memoized nodes more than
/// the plain count. Where states repeat (tilings, colored tilings, latin5,
/// multiplicities) it searches to the end with DLX6's figures, as
/// --faithful always does.
#[test]
fn a_count_gives_the_cache_up_where_it_does_not_pay() {
    for (case, pays) in [
        ("instances/queens8", false),
        ("instances/queens9", false),
        ("instances/queens12", false),
        ("instances/langford8", false),
        ("instances/langford11", false),
        ("instances/pent3x20", false),
        ("instances/latin5", true),
        ("instances/mcc_rowcol6k3", true),
        ("memo/domino8x8", true),
        ("memo/color_domino8x8", true),
        ("memo/domino10x10", true),
    ] {
        let file = root().join(format!("bench/{case}.dlx"));
        let file = file.to_str().unwrap();
        let (adaptive, err) = xccd(&["solve", "--memo", "--count", file]);
        let (faithful, ferr) = xccd(&["solve", "--memo", "--count", "--faithful", file]);
        assert_eq!(adaptive, faithful, "{case}");
        if !case.starts_with("memo/") {
            // (The plain count of the 10x10 board would take days.)
            let (plain, _) = xccd(&["solve", "--count", file]);
            assert_eq!(adaptive, plain, "{case}");
        }
        assert_eq!(err.contains("does not pay"), !pays, "{case}: {err}");
        assert!(ferr.contains("signatures"), "{case}: {ferr}");
        if pays {
            // DLX6's figures (the bytes hold the probe's per-entry sizes
            // too, and the time differs).
            let figures = |e: &str| {
                let e = &e[..e.rfind(" bytes").unwrap()];
                e[..e.rfind(", ").unwrap()].to_string()
            };
            assert_eq!(figures(&err), figures(&ferr), "{case}");
        } else {
            assert!(!err.contains("signatures"), "{case}: {err}");
            assert!(err.contains("its first 256 nodes"), "{case}: {err}");
        }
    }
}

/// `xccd puzzle solve --count --memo` makes the same judgement, with the
/// same words: queens give the cache up, latin squares and weak
/// slitherlink keep it; --faithful keeps DLX6's search.
#[test]
fn a_puzzle_count_gives_the_cache_up_where_it_does_not_pay() {
    let dir = tempdir();
    let size = |n: u32| {
        let path = dir.join(format!("size{n}.txt"));
        std::fs::write(&path, format!("{n}\n")).unwrap();
        path.to_str().unwrap().to_string()
    };
    let slitherlink = root().join("examples/puzzles/slitherlink_10x10.txt");
    let slitherlink = slitherlink.to_str().unwrap();
    for (args, pays) in [
        (vec!["queens".to_string(), size(10)], false),
        (vec!["latin".to_string(), size(5)], true),
        (
            vec![
                "slitherlink".to_string(),
                slitherlink.to_string(),
                "--weak".to_string(),
            ],
            true,
        ),
    ] {
        let mut argv = vec!["puzzle", "solve"];
        argv.extend(args.iter().map(String::as_str));
        argv.push("--count");
        let (plain, _) = xccd(&argv);
        argv.push("--memo");
        let (adaptive, err) = xccd(&argv);
        argv.push("--faithful");
        let (faithful, ferr) = xccd(&argv);
        assert_eq!(adaptive, plain, "{args:?}");
        assert_eq!(faithful, plain, "{args:?}");
        assert_eq!(err.contains("does not pay"), !pays, "{args:?}: {err}");
        if !pays {
            // The words of `xccd solve --memo --count`.
            assert!(
                err.contains("Memoizing does not pay here (its first 256 nodes")
                    && err.contains("counted without it (--faithful keeps DLX6's search)."),
                "{err}"
            );
        }
        assert!(!ferr.contains("does not pay"), "{args:?}: {ferr}");
    }
}
