//! `xccd solve --cheapest K`: the K cheapest solutions of a problem whose
//! options have costs (`|n`, Knuth's DLX5), printed in the order they were
//! found, each with its cost; DLX5's figures on stderr.
//!
//! A flag rather than an `--engine`: the search prunes by the costs of the
//! solutions it has found, so it runs whole on one thread (no --threads, no
//! --server), on its own dancing links (no --engine), and answers only
//! "which are the K cheapest" (no --all, --limit, --count, --memo).

use std::io::{self, BufWriter, Write};
use std::time::{Duration, Instant};

use xccd::xcc::cheapest::{self, CheapestConfig, CheapestOutcome};
use xccd::xcc::preprocess::Reduced;
use xccd::xcc::Problem;

use super::credentials::EngineChoice;
use super::solve_args::{Format, SolveArgs};
use super::CliError;

/// Finds the K cheapest solutions of `problem`, or with --preprocess of its
/// `reduced` form (DLX-PRE keeps the costs and removes only options in no
/// solution: the same cheapest costs), printed as the input's options.
pub fn run(
    args: &SolveArgs,
    problem: &Problem,
    k: usize,
    reduced: Option<&Reduced>,
) -> Result<(), CliError> {
    if args.at.server.is_some() || args.at.threads.is_some() {
        return Err(CliError::BadInput(
            "--cheapest runs on this thread (its pruning depends on every solution found before): drop --server and --threads".into(),
        ));
    }
    if args.at.engine != EngineChoice::Auto {
        return Err(CliError::BadInput(
            "--cheapest runs DLX5's search on its own dancing links: drop --engine".into(),
        ));
    }
    let mut config = CheapestConfig::new(k);
    if let Some(h) = args.lenthresh {
        if h == 0 {
            return Err(CliError::BadInput(
                "--lenthresh must be at least 1 (DLX5's h)".into(),
            ));
        }
        config.len_threshold = h;
    }
    config.z = args.zgiven.unwrap_or(0);
    config.prefixes = args.zchars.clone().unwrap_or_default().into_bytes();
    // DLX5 warns as it reads the options, whatever its verbosity.
    for warning in cheapest::z_warnings(problem, &config) {
        eprintln!("{warning}");
    }
    let start = Instant::now();
    let searched = reduced.map_or(problem, |r| &r.problem);
    let mut outcome = cheapest::cheapest(searched, &config)
        .map_err(|e| CliError::BadInput(format!("--cheapest: {e}")))?;
    if let Some(r) = reduced {
        for s in &mut outcome.solutions {
            s.options = r.map_back(&s.options);
        }
    }
    let elapsed = start.elapsed();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match write(problem, &outcome, args.format, &mut out).and_then(|_| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
        Err(e) => return Err(CliError::Failed(format!("cannot write output: {e}"))),
        Ok(()) => {}
    }
    if !args.quiet {
        eprintln!("{}", altogether(&outcome, k, elapsed));
    }
    Ok(())
}

/// The solutions: `N: cost C` (N its number in the order found) and its
/// options as in the input, each with its own cost; or one line of option
/// indices after the cost; or JSON.
fn write(
    problem: &Problem,
    outcome: &CheapestOutcome,
    format: Format,
    out: &mut impl Write,
) -> io::Result<()> {
    for s in &outcome.solutions {
        match format {
            Format::Knuth => {
                writeln!(out, "{}: cost {}", s.found, s.cost)?;
                for &o in &s.options {
                    match problem.cost(o) {
                        0 => writeln!(out, " {}", problem.format_option(o))?,
                        c => writeln!(out, " {} |{c}", problem.format_option(o))?,
                    }
                }
            }
            Format::Indices => {
                let line: Vec<String> = s.options.iter().map(|o| o.to_string()).collect();
                writeln!(out, "{}: {}", s.cost, line.join(" "))?;
            }
            Format::Json => {
                let value = serde_json::json!({
                    "solution": s.found, "cost": s.cost, "options": s.options
                });
                writeln!(out, "{value}")?;
            }
        }
    }
    Ok(())
}

/// DLX5's closing lines in xccd's words: the figures, then the costs kept
/// as DLX5 lists them ("The optimum cost is $C", or one line per cost).
pub fn altogether(outcome: &CheapestOutcome, k: usize, elapsed: Duration) -> String {
    let stats = &outcome.stats;
    let plural = if stats.solutions == 1 { "" } else { "s" };
    let mut text = format!(
        "Altogether {} solution{plural} found ({} kept), {} updates, {} cleansings, {} nodes, {:.3} s.",
        stats.solutions,
        outcome.solutions.len(),
        stats.updates,
        stats.cleansings,
        stats.nodes,
        elapsed.as_secs_f64()
    );
    let mut costs: Vec<u64> = outcome.solutions.iter().map(|s| s.cost).collect();
    costs.sort_unstable();
    if k == 1 {
        if let Some(c) = costs.first() {
            text.push_str(&format!("\nThe optimum cost is ${c}"));
        }
    } else if !costs.is_empty() {
        text.push_str("\nThe optimum costs are:");
        for run in costs.chunk_by(|a, b| a == b) {
            match run.len() {
                1 => text.push_str(&format!("\n ${}", run[0])),
                n => text.push_str(&format!("\n ${} (repeated {n} times)", run[0])),
            }
        }
    }
    text
}
