//! `xccd solve`: read a DLX file, search, print solutions Knuth's way.

use std::io::{self, BufWriter, Write};
use std::time::{Duration, Instant};

use xccd::run::{run_root, Batch, Control, Port, RunEnd, RunSpec, Stop, Taken};
use xccd::xcc::ProgressView;

use super::input::{read_problem_and_text, warn_dropped};
use super::output::{finish, Ended, SolutionWriter};
use super::solve_args::{solution_limit, SolveArgs};
use super::CliError;

/// The single-threaded run's port: prints, and reports progress.
struct Printer<'a, W: Write> {
    writer: SolutionWriter<'a, W>,
    /// The input's index of each option searched (with --preprocess).
    origin: Option<&'a [usize]>,
    options: Vec<usize>,
    error: Option<io::Error>,
    progress_every: Option<Duration>,
    last_progress: Instant,
    bar: super::progress::Bar,
}

impl<W: Write> Port for Printer<'_, W> {
    fn deliver(&mut self, batch: Batch, _force: bool) -> Taken {
        if !self.writer.prints() {
            self.writer.add_count(batch.count);
            return Taken::All;
        }
        for solution in &batch.solutions {
            self.options.clear();
            let origin = self.origin;
            let input = |o: u32| origin.map_or(o as usize, |m| m[o as usize]);
            self.options.extend(solution.iter().map(|&o| input(o)));
            if let Err(e) = self.writer.write(&self.options) {
                self.error = Some(e);
                return Taken::Stop;
            }
        }
        Taken::All
    }

    fn control(&mut self, progress: &ProgressView<'_>) -> Control {
        if let Some(every) = self.progress_every {
            if self.last_progress.elapsed() >= every {
                self.last_progress = Instant::now();
                eprintln!(
                    " after {} nodes: {} sols, {} {:.5}",
                    progress.stats.nodes,
                    progress.stats.solutions,
                    progress.knuth_path(),
                    progress.fraction()
                );
            }
        }
        self.bar.update(
            progress.stats.solutions,
            progress.stats.nodes,
            progress.fraction(),
        );
        Control::Continue
    }
}

/// The interval of `--progress SECONDS`.
fn progress_interval(seconds: Option<f64>) -> Result<Option<Duration>, CliError> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(CliError::BadInput(format!(
            "--progress takes a positive number of seconds, not {s}"
        ))),
    }
}

pub fn run(args: SolveArgs) -> Result<(), CliError> {
    let progress_every = progress_interval(args.progress)?;
    let limit = solution_limit(args.all, args.count, args.limit)?;
    let (problem, text) = read_problem_and_text(&args.input)?;
    if !args.quiet {
        warn_dropped(&problem);
    }
    // A server preprocesses itself (the request's `preprocess`); every
    // other search runs on the problem reduced here and prints its
    // solutions as the input's options.
    if let (Some(url), false, None) = (args.at.server.clone(), args.memo, args.cheapest) {
        if problem.has_costs() && !args.quiet {
            eprintln!(
                "The options' costs are ignored (--cheapest K finds the K cheapest solutions)."
            );
        }
        return super::pooled::run_remote(&args, &problem, text, &url);
    }
    let reduced = match args.preprocess {
        true => Some(super::preprocess::for_solve(&problem, &text, args.quiet)?),
        false => None,
    };
    if args.memo {
        return super::memo::run(&args, &problem, reduced.as_ref());
    }
    if let Some(k) = args.cheapest {
        return super::cheapest::run(&args, &problem, k, reduced.as_ref());
    }
    if problem.has_costs() && !args.quiet {
        eprintln!("The options' costs are ignored (--cheapest K finds the K cheapest solutions).");
    }
    if let Some(threads) = args.at.threads {
        return super::pooled::run_local(&args, problem, threads, reduced.as_ref());
    }
    let searched = reduced.as_ref().map_or(&problem, |r| &r.problem);
    let spec = RunSpec {
        limit,
        max_nodes: args.max_nodes,
        want_solutions: !args.count,
        batch_size: 64,
        profile: args.profile,
        poll_interval: if progress_every.is_some() {
            1024
        } else {
            1 << 14
        },
        ..RunSpec::default()
    };
    let stdout = io::stdout();
    let mut printer = Printer {
        writer: SolutionWriter::new(
            &problem,
            BufWriter::new(stdout.lock()),
            args.format,
            !args.count,
        ),
        origin: reduced.as_ref().map(|r| r.origin.as_slice()),
        options: Vec::new(),
        error: None,
        progress_every,
        last_progress: Instant::now(),
        bar: super::progress::Bar::new(args.quiet || progress_every.is_some()),
    };
    let start = Instant::now();
    let engine = args.at.engine.resolve(searched)?;
    let report = run_root(searched, engine, &spec, None, &mut printer);
    printer.bar.finish();
    if let RunEnd::Failed(error) = report.end {
        return Err(CliError::Failed(format!("internal error: {error}")));
    }
    let ended = Ended {
        stats: report.stats,
        node_limit: report.end == RunEnd::Stopped(Stop::NodeLimit),
        write_error: printer.error,
        cut_short: None,
        preprocessing: None,
    };
    finish(&args, printer.writer, ended, start.elapsed())
}
