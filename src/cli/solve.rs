//! `xccd solve`: read a DLX file, search, print solutions Knuth's way.

use std::io::{self, BufWriter, Read, Write};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use xccd::run::{run_root, Batch, Control, Port, RunEnd, RunSpec, Stop, Taken};
use xccd::xcc::{dlx_format, Problem, ProgressView, Stats};

use super::credentials::WhereArgs;
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
    /// Count by memoized search (Knuth's DLX6): states of the search met
    /// again are looked up, not searched again, and all solutions come out
    /// as a ZDD. Orders of magnitude faster where subproblems repeat
    /// (tilings, latin squares); answers --count, --zdd and --sample only.
    #[arg(long, conflicts_with_all = ["all", "limit", "max_nodes", "profile"])]
    pub memo: bool,
    /// With --memo: write the ZDD of all solutions to FILE, in the text
    /// format of Knuth's ZDD programs (what DLX6 `m1` prints).
    #[arg(long, value_name = "FILE", requires = "memo")]
    pub zdd: Option<std::path::PathBuf>,
    /// With --memo: print N solutions drawn uniformly at random (with
    /// replacement) from all solutions, in --format.
    #[arg(long, value_name = "N", requires = "memo")]
    pub sample: Option<u64>,
    /// With --memo --count: DLX6's search to the end, even where its cache
    /// does not pay (without it, a count whose cache is judged, in stages
    /// from its 256th node, to cost more than 1.2 times the plain count is
    /// finished by the plain search; --zdd and --sample always search to
    /// the end).
    #[arg(long, requires = "memo")]
    pub faithful: bool,
    /// The seed of --sample: the same seed draws the same solutions.
    #[arg(long, value_name = "S", default_value_t = 0, requires = "sample")]
    pub seed: u64,
    /// Reduce the problem first, as Knuth's DLX-PRE does (`xccd
    /// preprocess`), and search the reduced one: the same solutions (and
    /// counts, and cheapest costs), named by the input's options. Works with
    /// every search: --memo, --cheapest, --threads, and --server (the
    /// server preprocesses, the API's `preprocess`: the input is what is
    /// sent).
    #[arg(long)]
    pub preprocess: bool,
    /// Find the K cheapest solutions of a problem whose options have costs
    /// (`|n` on an option line, Knuth's DLX5), printed with their costs in
    /// the order they were found (`--format indices`: `COST: i j ...`;
    /// json adds "cost").
    #[arg(long, value_name = "K", conflicts_with_all = ["all", "limit", "count", "memo", "max_nodes", "profile", "progress"])]
    pub cheapest: Option<usize>,
    /// With --cheapest: DLX5's `h`, how many usable options of an item the
    /// branching choice counts before it takes the list's length instead
    /// (DLX5's default 10).
    #[arg(long, value_name = "N", requires = "cheapest")]
    pub lenthresh: Option<usize>,
    /// With --cheapest: DLX5's `z`. Every option has exactly N primary
    /// items besides its --zchars ones (warned about otherwise): a node
    /// whose active items' least costs cannot beat the cutoff is cut off.
    /// Wrong answers if the problem is not so; not with --preprocess, which
    /// removes items.
    #[arg(
        long,
        value_name = "N",
        requires = "cheapest",
        conflicts_with = "preprocess"
    )]
    pub zgiven: Option<u32>,
    /// With --cheapest: DLX5's `Z`, up to 7 characters; every option has
    /// exactly one primary item whose name begins with each (warned about
    /// otherwise), and the same lower bound as --zgiven applies.
    #[arg(
        long,
        value_name = "CHARS",
        requires = "cheapest",
        conflicts_with = "preprocess"
    )]
    pub zchars: Option<String>,
    #[command(flatten)]
    pub at: WhereArgs,
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
    read_problem_and_text(input).map(|(problem, _)| problem)
}

/// Like [`read_problem`], also returning the text (for a server).
pub fn read_problem_and_text(input: &str) -> Result<(Problem, String), CliError> {
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
    let problem =
        dlx_format::parse_bytes(&bytes).map_err(|e| CliError::BadInput(format!("{name}: {e}")))?;
    // Parsing succeeded, so the text is valid UTF-8 where it matters; lossy
    // conversion only touches comments.
    Ok((problem, String::from_utf8_lossy(&bytes).into_owned()))
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
pub struct SolutionWriter<'a, W: Write> {
    problem: &'a Problem,
    pub out: W,
    format: Format,
    print: bool,
    pub count: u64,
}

impl<'a, W: Write> SolutionWriter<'a, W> {
    pub fn new(problem: &'a Problem, out: W, format: Format, print: bool) -> Self {
        SolutionWriter {
            problem,
            out,
            format,
            print,
            count: 0,
        }
    }

    /// Whether solutions are printed (not only counted).
    pub fn prints(&self) -> bool {
        self.print
    }

    /// Counts solutions that are not printed.
    pub fn add_count(&mut self, n: u64) {
        self.count += n;
    }

    /// Counts a solution (option indices, ascending) and prints it unless
    /// only counting.
    pub fn write(&mut self, options: &[usize]) -> io::Result<()> {
        self.count += 1;
        if !self.print {
            return Ok(());
        }
        let n = self.count;
        match self.format {
            Format::Knuth => {
                writeln!(self.out, "{n}:")?;
                for &o in options {
                    writeln!(self.out, " {}", self.problem.format_option(o))?;
                }
            }
            Format::Indices => {
                let line: Vec<String> = options.iter().map(|o| o.to_string()).collect();
                writeln!(self.out, "{}", line.join(" "))?;
            }
            Format::Json => {
                let value = serde_json::json!({ "solution": n, "options": options });
                writeln!(self.out, "{value}")?;
            }
        }
        Ok(())
    }
}

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

/// What every way of running prints at the end.
pub struct Finish {
    pub stats: Stats,
    pub elapsed: Duration,
    pub node_limit: bool,
    /// Why the search stopped before it did what was asked, if it did.
    pub cut_short: Option<String>,
}

/// Prints the count (with --count), the profile and Knuth's closing line.
pub fn finish<W: Write>(
    args: &SolveArgs,
    mut writer: SolutionWriter<'_, W>,
    write_error: Option<io::Error>,
    end: Finish,
) -> Result<(), CliError> {
    if args.count {
        let _ = writeln!(writer.out, "{}", end.stats.solutions);
    }
    let flushed = writer.out.flush();
    match write_error.or(flushed.err()) {
        // A closed pipe (`xccd solve --all | head`) is the reader's choice.
        Some(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
        Some(e) => return Err(CliError::Failed(format!("cannot write output: {e}"))),
        None => {}
    }
    if args.profile {
        eprintln!("Profile:");
        for (level, nodes) in end.stats.profile.iter().enumerate() {
            eprintln!("{level:3}: {nodes}");
        }
    }
    if !args.quiet {
        if end.node_limit {
            eprintln!(
                "Search stopped after {} nodes (--max-nodes).",
                end.stats.nodes
            );
        }
        eprintln!("{}", altogether(&end.stats, end.elapsed));
    }
    match end.cut_short {
        Some(why) => Err(cut_short(why, args.count)),
        None => Ok(()),
    }
}

/// The error of a search cut short (exit code 3), saying why and that what
/// was printed is partial.
pub fn cut_short(why: String, count: bool) -> CliError {
    let printed = if count {
        "the count printed is partial"
    } else {
        "the solutions printed are not all that were asked for"
    };
    CliError::CutShort(format!("{why}; {printed}"))
}

/// How many solutions to look for: `--limit N`, every one with `--all` or
/// `--count`, else the first.
pub fn solution_limit(all: bool, count: bool, limit: Option<u64>) -> Result<Option<u64>, CliError> {
    let limit = match (all, count, limit) {
        (_, _, Some(n)) => Some(n),
        (true, _, None) | (_, true, None) => None,
        (false, false, None) => Some(1),
    };
    if limit == Some(0) {
        return Err(CliError::BadInput("--limit must be at least 1".into()));
    }
    Ok(limit)
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
    finish(
        &args,
        printer.writer,
        printer.error,
        Finish {
            stats: report.stats,
            elapsed: start.elapsed(),
            node_limit: report.end == RunEnd::Stopped(Stop::NodeLimit),
            cut_short: None,
        },
    )
}
