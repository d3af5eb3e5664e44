//! `xccd bench --memo`: memoized counting (Knuth's DLX6) on every row of
//! `dlx6-reference.tsv`, its figures checked against DLX6's, its time set
//! beside DLX6's and beside the plain count's.
//!
//! The figures (solutions, nodes, updates, cleansings, ZDD nodes,
//! signatures, hits) are exact and must equal DLX6's: a row that differs
//! fails the run. DLX6's seconds in the table are the whole process (its
//! start-up and the allocation of its default tables included) on a machine
//! like ours, so `vs_dlx6` is a rough guide. `vs_plain` is measured here,
//! in this run: the memoized count's time over the plain count's (the
//! engine `--engine auto` picks), on the instances where a plain count is
//! quick (the `instances/` folder; the tilings of `memo/` take the plain
//! search seconds to days). It says where memoization does not pay.

use std::collections::HashMap;
use std::time::Instant;

use xccd::xcc::memo::{self, MemoConfig, MemoOutcome};
use xccd::xcc::{Engine, Order};

use super::bench_measure::{measure, LayoutArg, Measured};
use super::bench_out::{num, Rows};
use super::bench_set::{BenchSet, ReferenceTable};
use super::CliError;

/// One row of `dlx6-reference.tsv`.
struct Dlx6Row {
    case: String,
    /// solutions, nodes, updates, cleansings, zdd_nodes, signatures, hits:
    /// as printed, to compare as printed.
    figures: [String; 7],
    seconds: f64,
}

fn read_table(set: &BenchSet) -> Result<Vec<Dlx6Row>, CliError> {
    let text = set
        .reference(ReferenceTable::Dlx6)
        .ok_or_else(|| CliError::BadInput("the bench set has no dlx6-reference.tsv".into()))?;
    let mut rows = Vec::new();
    let mut header: Option<HashMap<&str, usize>> = None;
    for (number, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let Some(columns) = &header else {
            header = Some(fields.iter().enumerate().map(|(i, f)| (*f, i)).collect());
            continue;
        };
        let field = |name: &str| -> Result<&str, CliError> {
            columns
                .get(name)
                .and_then(|&i| fields.get(i).copied())
                .ok_or_else(|| {
                    CliError::BadInput(format!(
                        "dlx6-reference.tsv line {}: no {name} column",
                        number + 1
                    ))
                })
        };
        let figures = [
            "solutions",
            "nodes",
            "updates",
            "cleansings",
            "zdd_nodes",
            "signatures",
            "hits",
        ]
        .map(|name| field(name).map(str::to_string));
        let [a, b, c, d, e, f, g] = figures;
        rows.push(Dlx6Row {
            case: field("case")?.to_string(),
            figures: [a?, b?, c?, d?, e?, f?, g?],
            seconds: field("seconds")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0.0),
        });
    }
    Ok(rows)
}

/// xccd's figures in the table's columns.
fn figures(outcome: &MemoOutcome) -> [String; 7] {
    let s = &outcome.stats;
    let (failed, good) = s.knuth_signatures();
    [
        outcome.zdd.count().to_string(),
        s.nodes.to_string(),
        s.updates.to_string(),
        s.cleansings.to_string(),
        s.knuth_zdd_nodes().to_string(),
        format!("{failed}+{good}"),
        s.hits.to_string(),
    ]
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (a > 0.0 && b > 0.0).then(|| a / b)
}

fn shown(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.2}"))
}

pub fn run(set: &BenchSet, filter: Option<&str>, repeat: u32, out: Rows) -> Result<(), CliError> {
    out.text(format_args!(
        "{:<20} {:>14} {:>8} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9}",
        "instance",
        "solutions",
        "nodes",
        "zdd_nodes",
        "memo_s",
        "dlx6_s",
        "vs_dlx6",
        "plain_s",
        "vs_plain"
    ));
    let mut mismatches = 0;
    for row in read_table(set)? {
        if filter.is_some_and(|f| !row.case.contains(f)) {
            continue;
        }
        let problem = set.load_memo(&row.case)?;
        let mut best = f64::INFINITY;
        let mut outcome = None;
        for _ in 0..repeat.max(1) {
            let start = Instant::now();
            let counted = memo::count(&problem, &MemoConfig::default())
                .map_err(|e| CliError::Failed(format!("{}: {e}", row.case)))?;
            best = best.min(start.elapsed().as_secs_f64());
            outcome = Some(counted);
        }
        let outcome = outcome.expect("at least one run");
        let got = figures(&outcome);
        let same = got == row.figures;
        if !same {
            mismatches += 1;
        }
        // The plain count, where it is quick: the bench instances proper.
        let plain = if set.load(&row.case).is_ok() {
            let engine = match Engine::auto(&problem) {
                Engine::Cells => Measured::Cells(Order::Exact),
                Engine::Links => Measured::Links,
            };
            Some(measure(&problem, engine, LayoutArg::Auto, repeat)?.0)
        } else {
            None
        };
        let vs_dlx6 = ratio(best, row.seconds);
        let vs_plain = plain.and_then(|p| ratio(best, p));
        out.row(
            "memo",
            serde_json::json!({
                "instance": row.case,
                "solutions": got[0],
                "nodes": outcome.stats.nodes,
                "updates": outcome.stats.updates,
                "zdd_nodes": outcome.stats.knuth_zdd_nodes(),
                "memory_bytes": outcome.stats.memory_bytes,
                "seconds": num(best),
                "dlx6_seconds": num(row.seconds),
                "vs_dlx6": vs_dlx6.map(num),
                "plain_seconds": plain.map(num),
                "vs_plain": vs_plain.map(num),
                "matches_reference": same,
            }),
        );
        out.text(format_args!(
            "{:<20} {:>14} {:>8} {:>9} {:>9.4} {:>9.3} {:>8} {:>9} {:>9}{}",
            row.case,
            got[0],
            outcome.stats.nodes,
            outcome.stats.knuth_zdd_nodes(),
            best,
            row.seconds,
            shown(vs_dlx6),
            plain.map_or("-".into(), |p| format!("{p:.4}")),
            shown(vs_plain),
            if same {
                String::new()
            } else {
                format!("  figures differ from DLX6's: {got:?} != {:?}", row.figures)
            }
        ));
    }
    if mismatches > 0 {
        return Err(CliError::Failed(format!(
            "{mismatches} row(s) disagree with DLX6's figures"
        )));
    }
    Ok(())
}
