//! `xccd solve`: read a DLX file, search, print solutions Knuth's way.

use std::io::{self, BufWriter, Read, Write};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use xccd::xcc::{
    dlx_format, Flow, Problem, ProgressView, Request, RunConfig, SolutionView, Solver, Stats,
    Status, Task, Visitor,
};

use super::CliError;

#[derive(Args, Debug)]
pub struct SolveArgs {
    /// DLX file to read, or `-` for standard input.
    #[arg(default_value = "-")]
    pub input: String,
    /// Print every solution (the default is the first one only).
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
    /// Print at most N solutions.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print only the number of solutions (all of them, or up to --limit).
    #[arg(long)]
    pub count: bool,
    /// How to print solutions.
    #[arg(long, value_enum, default_value_t = Format::Knuth)]
    pub format: Format,
    /// Give up after this many search-tree nodes.
    #[arg(long, value_name = "N")]
    pub max_nodes: Option<u64>,
    /// Print the number of nodes on each level of the search tree (stderr).
    #[arg(long)]
    pub profile: bool,
    /// Print Knuth's progress line on stderr about every SECONDS seconds.
    #[arg(long, value_name = "SECONDS")]
    pub progress: Option<f64>,
    /// Do not print the final statistics line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// `N:` then one line per option, its items as `name` or `name:color`.
    Knuth,
    /// One line per solution: the chosen option indices (0-based, input order).
    Indices,
    /// One JSON object per line: {"solution": N, "options": [...]}.
    Json,
}

/// Reads a DLX problem from a path or `-`, mapping every failure to a
/// message that names the input.
pub fn read_problem(input: &str) -> Result<Problem, CliError> {
    let (name, bytes) = if input == "-" {
        let mut buf = Vec::new();
        io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| CliError::BadInput(format!("cannot read standard input: {e}")))?;
        ("<stdin>".to_string(), buf)
    } else {
        let bytes = std::fs::read(input)
            .map_err(|e| CliError::BadInput(format!("cannot read {input}: {e}")))?;
        (input.to_string(), bytes)
    };
    dlx_format::parse_bytes(&bytes).map_err(|e| CliError::BadInput(format!("{name}: {e}")))
}

/// Warns about options Knuth's programs would drop, as they do.
pub fn warn_dropped(problem: &Problem) {
    const SHOWN: usize = 5;
    let dropped = problem.dropped_options();
    for &o in dropped.iter().take(SHOWN) {
        eprintln!(
            "Option ignored (no primary items): {}",
            problem.format_option(o)
        );
    }
    if dropped.len() > SHOWN {
        eprintln!(
            "... and {} more options ignored (no primary items)",
            dropped.len() - SHOWN
        );
    }
}

/// Knuth's closing line.
pub fn altogether(stats: &Stats, elapsed: Duration) -> String {
    let plural = if stats.solutions == 1 { "" } else { "s" };
    let cleansings = if stats.cleansings > 0 {
        format!("{} cleansings, ", stats.cleansings)
    } else {
        String::new()
    };
    format!(
        "Altogether {} solution{plural}, {} updates, {cleansings}{} nodes, {:.3} s.",
        stats.solutions,
        stats.updates,
        stats.nodes,
        elapsed.as_secs_f64()
    )
}

/// Writes solutions as they come, in the chosen format.
struct Printer<'a, W: Write> {
    problem: &'a Problem,
    out: W,
    format: Format,
    print: bool,
    printed: u64,
    options: Vec<usize>,
    error: Option<io::Error>,
    progress_every: Option<Duration>,
    last_progress: Instant,
}

impl<W: Write> Printer<'_, W> {
    fn write_solution(&mut self) -> io::Result<()> {
        let n = self.printed;
        match self.format {
            Format::Knuth => {
                writeln!(self.out, "{n}:")?;
                for &o in &self.options {
                    writeln!(self.out, " {}", self.problem.format_option(o))?;
                }
            }
            Format::Indices => {
                let line: Vec<String> = self.options.iter().map(|o| o.to_string()).collect();
                writeln!(self.out, "{}", line.join(" "))?;
            }
            Format::Json => {
                let value = serde_json::json!({ "solution": n, "options": self.options });
                writeln!(self.out, "{value}")?;
            }
        }
        Ok(())
    }
}

impl<W: Write> Visitor for Printer<'_, W> {
    fn solution(&mut self, solution: &SolutionView<'_>) -> Flow {
        self.printed += 1;
        if !self.print {
            return Flow::Continue;
        }
        solution.options_into(&mut self.options);
        match self.write_solution() {
            Ok(()) => Flow::Continue,
            Err(e) => {
                self.error = Some(e);
                Flow::Stop
            }
        }
    }

    fn poll(&mut self, progress: &ProgressView<'_>) -> Request {
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
        Request::Continue
    }
}

pub fn run(args: SolveArgs) -> Result<(), CliError> {
    let problem = read_problem(&args.input)?;
    if !args.quiet {
        warn_dropped(&problem);
    }
    let limit = match (args.all, args.count, args.limit) {
        (_, _, Some(n)) => Some(n),
        (true, _, None) | (_, true, None) => None,
        (false, false, None) => Some(1),
    };
    if limit == Some(0) {
        return Err(CliError::BadInput("--limit must be at least 1".into()));
    }
    let config = RunConfig {
        max_solutions: limit,
        max_nodes: args.max_nodes,
        profile: args.profile,
        poll_interval: if args.progress.is_some() {
            1024
        } else {
            1 << 16
        },
        ..RunConfig::default()
    };
    let stdout = io::stdout();
    let mut printer = Printer {
        problem: &problem,
        out: BufWriter::new(stdout.lock()),
        format: args.format,
        print: !args.count,
        printed: 0,
        options: Vec::new(),
        error: None,
        progress_every: args.progress.map(Duration::from_secs_f64),
        last_progress: Instant::now(),
    };
    let start = Instant::now();
    let mut solver = Solver::new(&problem);
    let outcome = solver
        .run(&Task::root(), &config, &mut printer)
        .map_err(|e| CliError::Failed(format!("internal error: {e}")))?;
    let elapsed = start.elapsed();
    if args.count {
        let _ = writeln!(printer.out, "{}", outcome.stats.solutions);
    }
    let flushed = printer.out.flush();
    match printer.error.or(flushed.err()) {
        // A closed pipe (`xccd solve --all | head`) is the reader's choice.
        Some(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
        Some(e) => return Err(CliError::Failed(format!("cannot write output: {e}"))),
        None => {}
    }
    if args.profile {
        eprintln!("Profile:");
        for (level, nodes) in outcome.stats.profile.iter().enumerate() {
            eprintln!("{level:3}: {nodes}");
        }
    }
    if !args.quiet {
        if outcome.status == Status::NodeLimit {
            eprintln!(
                "Search stopped after {} nodes (--max-nodes).",
                outcome.stats.nodes
            );
        }
        eprintln!("{}", altogether(&outcome.stats, elapsed));
    }
    Ok(())
}
