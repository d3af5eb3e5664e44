//! `xccd solve --memo`: count by memoized search (Knuth's DLX6), write the
//! ZDD of all solutions, draw uniformly random solutions from it. A count
//! alone first judges whether the cache pays (the engine's probe,
//! [`MemoConfig::probe`]) and, where it does not, counts with the plain search; `--faithful` keeps DLX6's search.
//!
//! A flag rather than an `--engine`: the engines list solutions and split
//! into subtree tasks; the memoized search answers "how many?" (and "draw
//! some at random") from one cache, on one thread, so it takes no
//! --threads, --limit or --max-nodes.

use std::io::{self, BufWriter, Write};
use std::time::Instant;

use rand::SeedableRng;
use xccd::xcc::memo::{self, MemoConfig, MemoStats};
use xccd::xcc::preprocess::Reduced;
use xccd::xcc::Problem;

use super::credentials::search_memory_limit;
use super::output::SolutionWriter;
use super::solve_args::SolveArgs;
use super::CliError;

/// Counts `problem`, or with --preprocess its `reduced` form: the count is
/// the same, and the ZDD and the samples name the input's options.
pub fn run(args: &SolveArgs, problem: &Problem, reduced: Option<&Reduced>) -> Result<(), CliError> {
    if !args.count && args.zdd.is_none() && args.sample.is_none() {
        return Err(CliError::BadInput(
            "--memo answers --count, --zdd FILE or --sample N: add one of them".into(),
        ));
    }
    if args.at.engine != super::credentials::EngineChoice::Auto {
        return Err(CliError::BadInput(
            "--memo is its own search (DLX6's, on dancing links): drop --engine".into(),
        ));
    }
    if args.at.server.is_some() || args.at.threads.is_some() {
        return Err(CliError::BadInput(
            "--memo runs on this thread: drop --server and --threads".into(),
        ));
    }
    // A count alone may give up on the cache where it does not pay (the
    // engine's probe, `MemoConfig::probe`); the ZDD and samples need the
    // whole memoized search.
    let adaptive = args.count && args.zdd.is_none() && args.sample.is_none() && !args.faithful;
    let config = MemoConfig {
        memory_limit: Some(search_memory_limit()?),
        stop: None,
        probe: adaptive,
    };
    let start = Instant::now();
    let searched = reduced.map_or(problem, |r| &r.problem);
    let outcome = match memo::count(searched, &config) {
        Err(memo::MemoError::NoGain(verdict)) => {
            return count_plainly(args, searched, &verdict, start);
        }
        other => other.map_err(|e| {
            CliError::Failed(format!(
                "--memo: {e} (XCCD_MAX_SEARCH_MEMORY sets the limit)"
            ))
        })?,
    };
    let elapsed = start.elapsed();
    let count = outcome.zdd.count();
    if let Some(path) = &args.zdd {
        let file = std::fs::File::create(path)
            .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", path.display())))?;
        let mut out = BufWriter::new(file);
        let written = match reduced {
            // The reduced problem's options numbered as DLX6 numbers the
            // input's.
            Some(r) => {
                let input = xccd::xcc::zdd::dlx6_numbers(problem);
                let numbers: Vec<u32> = r.origin.iter().map(|&o| input[o]).collect();
                outcome.zdd.write_knuth_numbered(&numbers, &mut out)
            }
            None => outcome.zdd.write_knuth(problem, &mut out),
        };
        written
            .and_then(|_| out.flush())
            .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", path.display())))?;
    }
    let stdout = io::stdout();
    let mut writer = SolutionWriter::new(problem, BufWriter::new(stdout.lock()), args.format, true);
    let mut written: io::Result<()> = Ok(());
    if let Some(n) = args.sample {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
        for _ in 0..n {
            let Some(mut solution) = outcome.zdd.sample(&mut rng) else {
                if outcome.zdd.count_u128().is_none() {
                    return Err(CliError::Failed(
                        "--sample: more than 2^128 solutions, too many to draw from".into(),
                    ));
                }
                break; // no solution at all
            };
            if let Some(r) = reduced {
                solution = r.map_back(&solution);
            }
            solution.sort_unstable();
            written = writer.write(&solution);
            if written.is_err() {
                break;
            }
        }
    }
    if args.count && written.is_ok() {
        written = writeln!(writer.out, "{count}");
    }
    match written.and_then(|_| writer.out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
        Err(e) => return Err(CliError::Failed(format!("cannot write output: {e}"))),
        Ok(()) => {}
    }
    if !args.quiet {
        eprintln!(
            "{}",
            altogether(&count.to_string(), &outcome.stats, elapsed)
        );
    }
    Ok(())
}

/// The count without the cache: the plain search (the default engine, as
/// `solve --count`) from the root, after the probe gave up.
fn count_plainly(
    args: &SolveArgs,
    problem: &Problem,
    verdict: &memo::Verdict,
    start: Instant,
) -> Result<(), CliError> {
    use xccd::xcc::{CountOnly, Engine, RunConfig, Solver, Task};
    let outcome = Solver::with_engine(problem, Engine::auto(problem))
        .map_err(|e| CliError::Failed(format!("--memo: {e}")))?
        .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
        .map_err(|e| CliError::Failed(format!("--memo: {e:?}")))?;
    let elapsed = start.elapsed();
    let stats = outcome.stats;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match writeln!(out, "{}", stats.solutions).and_then(|_| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
        Err(e) => return Err(CliError::Failed(format!("cannot write output: {e}"))),
        Ok(()) => {}
    }
    if !args.quiet {
        let plural = if stats.solutions == 1 { "" } else { "s" };
        eprintln!("{verdict}");
        eprintln!(
            "Altogether {} solution{plural}, {} updates, {} nodes, {:.3} s.",
            stats.solutions,
            stats.updates,
            stats.nodes,
            elapsed.as_secs_f64()
        );
    }
    Ok(())
}

/// DLX6's closing line, in xccd's words.
pub fn altogether(count: &str, stats: &MemoStats, elapsed: std::time::Duration) -> String {
    let plural = if count == "1" { "" } else { "s" };
    let (failed, good) = stats.knuth_signatures();
    format!(
        "Altogether {count} solution{plural}, {} updates, {} cleansings, {} nodes, \
         {} ZDD nodes, {failed}+{good} signatures, {} hits, {} bytes, {:.3} s.",
        stats.updates,
        stats.cleansings,
        stats.nodes,
        stats.knuth_zdd_nodes(),
        stats.hits,
        stats.memory_bytes,
        elapsed.as_secs_f64()
    )
}
