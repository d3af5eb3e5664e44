//! `xccd puzzle`: solve, encode, check and generate puzzles (latin squares,
//! futoshiki, sudoku, queens, hitori, hidato, slitherlink).
//!
//! Exit codes: 0 when the command ran (`solve` with no solution included:
//! it says "no solution" on stderr), 2 on bad input (the message names the
//! file, line and column) or usage, and for `check` 1 when the puzzle is
//! invalid (no solution, or more than one), so scripts can test validity
//! like `cmp` or `grep` test their answer.

use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Subcommand};
use xccd::puzzles::kinds::{self, EncodeOptions, Kind};
use xccd::puzzles::side_condition;
use xccd::puzzles::{formats, picture, svg};
use xccd::puzzles::{Encoded, FutoshikiEncoding, Puzzle};
use xccd::run::{memo_refusal, run_root, Batch, MemoRun, Port, RunEnd, RunSpec, Taken};
use xccd::service::proto as pb;
use xccd::service::puzzle_input::puzzle_message;
use xccd::service::JobSpec;
use xccd::xcc::{dlx_format, Stats, Task};

use super::credentials::WhereArgs;
use super::output::altogether;
use super::pooled::{authorized, delivery, on_pool, puzzle_remote};
use super::solve_args::solution_limit;
use super::CliError;

#[derive(Args, Debug)]
pub struct PuzzleArgs {
    #[command(subcommand)]
    pub command: PuzzleCommand,
}

#[derive(Subcommand, Debug)]
pub enum PuzzleCommand {
    /// Solve a puzzle and print its solutions (the first one by default).
    #[command(
        subcommand,
        subcommand_value_name = "KIND",
        subcommand_help_heading = "Kinds",
        override_usage = "xccd puzzle solve <KIND> [FILE] [OPTIONS]  (xccd puzzle solve KIND --help: its format)"
    )]
    Solve(ByKind<SolveArgs>),
    /// Print the puzzle's XCC problem in Knuth's DLX format.
    #[command(
        subcommand,
        subcommand_value_name = "KIND",
        subcommand_help_heading = "Kinds",
        override_usage = "xccd puzzle encode <KIND> [FILE] [OPTIONS]  (xccd puzzle encode KIND --help: its format)"
    )]
    Encode(ByKind<EncodeArgs>),
    /// Tell whether the puzzle is valid (exactly one solution); exit 1 if not.
    #[command(
        subcommand,
        subcommand_value_name = "KIND",
        subcommand_help_heading = "Kinds",
        override_usage = "xccd puzzle check <KIND> [FILE] [OPTIONS]  (xccd puzzle check KIND --help: its format)"
    )]
    Check(ByKind<CheckArgs>),
    /// Print a random valid puzzle (futoshiki, hitori, slitherlink).
    Generate(GenerateArgs),
}

/// The kinds, each a subcommand whose `--help` shows its input format
/// (`xccd puzzle solve sudoku --help`); `A` holds the command's arguments.
#[derive(Subcommand, Debug)]
pub enum ByKind<A: Args> {
    /// Latin squares: every value once per row and column.
    #[command(long_about = formats::LATIN)]
    Latin(A),
    /// Futoshiki: a latin square with inequalities between cells.
    #[command(long_about = formats::FUTOSHIKI)]
    Futoshiki(A),
    /// Hitori: shade cells so that no number repeats.
    #[command(long_about = formats::HITORI)]
    Hitori(A),
    /// Hidato: a king's path through 1..N.
    #[command(long_about = formats::HIDATO)]
    Hidato(A),
    /// Slitherlink: one loop around the clues.
    #[command(long_about = formats::SLITHERLINK)]
    Slitherlink(A),
    /// Sudoku, 4x4 to 100x100.
    #[command(long_about = formats::SUDOKU)]
    Sudoku(A),
    /// The n queens problem.
    #[command(long_about = formats::QUEENS)]
    Queens(A),
}

impl<A: Args> ByKind<A> {
    fn split(self) -> (Kind, A) {
        match self {
            ByKind::Latin(a) => (Kind::Latin, a),
            ByKind::Futoshiki(a) => (Kind::Futoshiki, a),
            ByKind::Hitori(a) => (Kind::Hitori, a),
            ByKind::Hidato(a) => (Kind::Hidato, a),
            ByKind::Slitherlink(a) => (Kind::Slitherlink, a),
            ByKind::Sudoku(a) => (Kind::Sudoku, a),
            ByKind::Queens(a) => (Kind::Queens, a),
        }
    }
}

/// How to read and encode a puzzle (its kind is the subcommand's name).
#[derive(Args, Debug)]
pub struct PuzzleInput {
    /// The kind, from the subcommand.
    #[arg(skip = Kind::Latin)]
    pub kind: Kind,
    /// The puzzle's text file, or `-` for standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: String,
    /// Hitori, slitherlink: accept weak solutions (skip connectivity / the
    /// single-loop condition).
    #[arg(long)]
    pub weak: bool,
    /// Futoshiki: how the inequalities are encoded.
    #[arg(long, value_name = "pairs|colors", default_value_t = FutoshikiEncoding::default())]
    pub encoding: FutoshikiEncoding,
}

#[derive(Args, Debug)]
pub struct SolveArgs {
    #[command(flatten)]
    pub puzzle: PuzzleInput,
    /// Print every solution.
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
    /// Print at most N solutions.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print only the number of solutions (all, or up to --limit).
    #[arg(long)]
    pub count: bool,
    /// With --count: count by memoized search (as `xccd solve --memo`),
    /// much faster where the puzzle's subproblems repeat (latin squares,
    /// weak hitori). A side condition that looks at whole solutions (the
    /// connectivity of hitori, slitherlink's one loop) cannot be cached:
    /// such puzzles are refused (count them with --weak, or without --memo).
    #[arg(long, requires = "count")]
    pub memo: bool,
    /// With --memo: DLX6's search to the end, even where its cache does not
    /// pay (without it, as with `xccd solve --memo --count`, a count whose
    /// cache is judged not to pay is finished by the plain search).
    #[arg(long, requires = "memo")]
    pub faithful: bool,
    /// How solutions print: `picture` (drawn with box-drawing characters,
    /// for a person), `text` (the puzzle's own format, for scripts), `svg`
    /// (an SVG document per solution, for a browser or a file; a blank
    /// line between two) or `auto` (a picture when standard output is a
    /// terminal, else text).
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub format: Format,
    /// Do not print the final statistics line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub at: WhereArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Auto,
    Picture,
    Text,
    Svg,
}

#[derive(Args, Debug)]
pub struct EncodeArgs {
    #[command(flatten)]
    pub puzzle: PuzzleInput,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub puzzle: PuzzleInput,
    /// Do not print the final statistics line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// The kind of puzzle: futoshiki, hitori or slitherlink.
    #[arg(value_name = "KIND")]
    pub kind: Kind,
    /// Side (rows for slitherlink).
    #[arg(long, value_name = "N")]
    pub size: usize,
    /// Columns (slitherlink only; default: --size).
    #[arg(long, value_name = "M")]
    pub cols: Option<usize>,
    /// Seed of the random choices: the same seed gives the same puzzle.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Do not print the timing line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs a `puzzle` subcommand; `Ok` carries the exit code (1 for an
/// invalid puzzle under `check`).
pub fn run(args: PuzzleArgs) -> Result<ExitCode, CliError> {
    match args.command {
        PuzzleCommand::Solve(a) => {
            let (kind, mut a) = a.split();
            a.puzzle.kind = kind;
            solve(a).map(|()| ExitCode::SUCCESS)
        }
        PuzzleCommand::Encode(a) => {
            let (kind, mut a) = a.split();
            a.puzzle.kind = kind;
            encode(a).map(|()| ExitCode::SUCCESS)
        }
        PuzzleCommand::Check(a) => {
            let (kind, mut a) = a.split();
            a.puzzle.kind = kind;
            check(a)
        }
        PuzzleCommand::Generate(a) => generate(a).map(|()| ExitCode::SUCCESS),
    }
}

/// Reads the puzzle's text; errors name the input.
fn read_puzzle(p: &PuzzleInput) -> Result<(String, Puzzle), CliError> {
    let (name, bytes) = if p.input == "-" {
        let mut buf = Vec::new();
        io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| CliError::BadInput(format!("cannot read standard input: {e}")))?;
        ("<stdin>".to_string(), buf)
    } else {
        let bytes = std::fs::read(&p.input)
            .map_err(|e| CliError::BadInput(format!("cannot read {}: {e}", p.input)))?;
        (p.input.clone(), bytes)
    };
    let text = String::from_utf8(bytes)
        .map_err(|e| CliError::BadInput(format!("{name}: not UTF-8 text: {e}")))?;
    let puzzle = Puzzle {
        kind: p.kind,
        text,
        options: EncodeOptions {
            weak: p.weak,
            encoding: p.encoding,
        },
    };
    Ok((name, puzzle))
}

/// Reads the puzzle's text and encodes it; errors name the input.
fn read_and_encode(p: &PuzzleInput) -> Result<(Box<dyn Encoded>, Puzzle), CliError> {
    let (name, puzzle) = read_puzzle(p)?;
    let encoded = puzzle
        .encode()
        .map_err(|e| CliError::BadInput(format!("{name}: {e}")))?;
    Ok((encoded, puzzle))
}

/// Prints solved grids as they come, a blank line between two, or only
/// counts them.
struct Grids<W: Write> {
    out: W,
    print: bool,
    count: u64,
    /// How the solutions of which kind are drawn (`None`: printed as text).
    drawing: Option<(Drawing, Kind)>,
}

/// How a solved grid is drawn instead of printed as text.
#[derive(Clone, Copy)]
enum Drawing {
    Picture,
    Svg,
}

impl<W: Write> Grids<W> {
    fn add(&mut self, text: &str) -> io::Result<()> {
        self.count += 1;
        if !self.print {
            return Ok(());
        }
        let drawn = self.drawing.and_then(|(how, kind)| match how {
            Drawing::Picture => picture::picture(kind, text),
            Drawing::Svg => svg::svg(kind, text),
        });
        let text = drawn.as_deref().unwrap_or(text);
        let separator = if self.count > 1 { "\n" } else { "" };
        let newline = if text.ends_with('\n') { "" } else { "\n" };
        write!(self.out, "{separator}{text}{newline}")
    }

    /// Decodes and adds an XCC solution.
    fn add_options(&mut self, encoded: &dyn Encoded, options: &[u32]) -> io::Result<()> {
        if !self.print {
            self.count += 1;
            return Ok(());
        }
        let options: Vec<usize> = options.iter().map(|&o| o as usize).collect();
        self.add(&encoded.decode(&options))
    }
}

/// The single-threaded run's port: decodes and prints.
struct Printer<'a, W: Write> {
    encoded: &'a dyn Encoded,
    grids: Grids<W>,
    error: Option<io::Error>,
    /// Why a memoized count gave up its cache, said on stderr.
    declined: Option<xccd::xcc::memo::Verdict>,
}

impl<W: Write> Port for Printer<'_, W> {
    fn deliver(&mut self, batch: Batch, _force: bool) -> Taken {
        if !self.grids.print {
            self.grids.count += batch.count;
            return Taken::All;
        }
        for solution in &batch.solutions {
            if let Err(e) = self.grids.add_options(self.encoded, solution) {
                self.error = Some(e);
                return Taken::Stop;
            }
        }
        Taken::All
    }

    fn memo_declined(&mut self, verdict: &xccd::xcc::memo::Verdict) {
        self.declined = Some(verdict.clone());
    }
}

/// A failed write: an error unless the reader closed the pipe.
fn written(error: Option<io::Error>) -> Result<(), CliError> {
    match error {
        Some(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(CliError::Failed(format!("cannot write output: {e}")))
        }
        _ => Ok(()),
    }
}

fn flush<W: Write>(mut out: W) -> Result<(), CliError> {
    written(out.flush().err())
}

fn solve(args: SolveArgs) -> Result<(), CliError> {
    let limit = solution_limit(args.all, args.count, args.limit)?;
    let start = Instant::now();
    let stdout = io::stdout();
    let drawing = match args.format {
        Format::Picture => Some(Drawing::Picture),
        Format::Svg => Some(Drawing::Svg),
        Format::Text => None,
        Format::Auto => stdout.is_terminal().then_some(Drawing::Picture),
    };
    let mut grids = Grids {
        out: BufWriter::new(stdout.lock()),
        print: !args.count,
        count: 0,
        drawing: drawing.map(|how| (how, args.puzzle.kind)),
    };
    if args.memo
        && (args.at.server.is_some()
            || args.at.threads.is_some()
            || args.at.engine != super::credentials::EngineChoice::Auto)
    {
        return Err(CliError::BadInput(
            "--memo counts on this thread with its own search: drop --server, --threads and --engine"
                .into(),
        ));
    }
    let mut exact_count = None;
    let mut declined = None;
    let (stats, write_error, cut_short) = if let Some(url) = &args.at.server {
        let (_, puzzle) = read_puzzle(&args.puzzle)?;
        let request = pb::EnumeratePuzzleRequest {
            puzzle: Some(puzzle_message(&puzzle)),
            limit: limit.unwrap_or(0),
            count_only: args.count,
            progress_interval_seconds: 0.2,
            engine: args.at.engine.proto(),
            ..Default::default()
        };
        let tls = args.at.tls.load()?;
        let request = authorized(request, args.at.api_key.load()?.as_deref())?;
        let ended = puzzle_remote(url, &tls, request, args.quiet, |solution| {
            grids.add(&solution.text)
        })?;
        (ended.stats, ended.write_error, ended.cut_short)
    } else {
        let (encoded, puzzle) = read_and_encode(&args.puzzle)?;
        let encoded: Arc<dyn Encoded> = Arc::from(encoded);
        match args.at.threads {
            Some(threads) => {
                let spec = JobSpec {
                    limit,
                    delivery: delivery(args.count),
                    condition: side_condition(&encoded),
                    puzzle: Some(puzzle),
                    engine: args.at.engine.resolve(encoded.problem())?,
                    ..JobSpec::default()
                };
                let problem = Arc::new(encoded.problem().clone());
                let ended = on_pool(problem, spec, threads, args.quiet, |solution| {
                    grids.add_options(&*encoded, solution)
                })?;
                (ended.stats, ended.write_error, ended.cut_short)
            }
            None => {
                let memo = match args.memo {
                    false => None,
                    true => {
                        let restricted = side_condition(&encoded).is_some_and(|c| c.filters());
                        if let Some(why) = memo_refusal(&Task::root(), restricted) {
                            return Err(CliError::BadInput(format!("--memo: {why}")));
                        }
                        Some(MemoRun {
                            memory_limit: Some(super::credentials::search_memory_limit()?),
                            probe: !args.faithful,
                        })
                    }
                };
                let spec = RunSpec {
                    limit,
                    want_solutions: !args.count,
                    batch_size: 16,
                    memo,
                    ..RunSpec::default()
                };
                let mut printer = Printer {
                    encoded: &*encoded,
                    grids,
                    error: None,
                    declined: None,
                };
                let engine = args.at.engine.resolve(encoded.problem())?;
                let report = run_root(
                    encoded.problem(),
                    engine,
                    &spec,
                    Some(&*encoded),
                    &mut printer,
                );
                match report.end {
                    RunEnd::Failed(error) => {
                        return Err(CliError::Failed(format!("internal error: {error}")))
                    }
                    RunEnd::OutOfMemory(error) => {
                        return Err(CliError::Failed(format!(
                            "{error} (XCCD_MAX_SEARCH_MEMORY sets the limit)"
                        )))
                    }
                    _ => {}
                }
                exact_count = report.exact_count;
                declined = printer.declined;
                grids = printer.grids;
                (report.stats, printer.error, None)
            }
        }
    };
    written(write_error)?;
    // Printed solutions are counted as they come; counted ones (a pool or a
    // server counting only sends none) by the search's summary.
    let solutions = if args.count {
        stats.solutions
    } else {
        grids.count
    };
    if args.count {
        let _ = match &exact_count {
            Some(exact) => writeln!(grids.out, "{exact}"),
            None => writeln!(grids.out, "{solutions}"),
        };
    }
    flush(grids.out)?;
    if solutions == 0 && cut_short.is_none() {
        eprintln!("no solution");
    }
    if !args.quiet {
        if let Some(verdict) = declined {
            eprintln!("{verdict}");
        }
        let stats = Stats { solutions, ..stats };
        eprintln!("{}", altogether(&stats, start.elapsed()));
    }
    match cut_short {
        Some(why) => Err(super::output::cut_short(why, args.count)),
        None => Ok(()),
    }
}

fn encode(args: EncodeArgs) -> Result<(), CliError> {
    let (encoded, _) = read_and_encode(&args.puzzle)?;
    let mut out = BufWriter::new(io::stdout().lock());
    let _ = out.write_all(dlx_format::to_string(encoded.problem()).as_bytes());
    flush(out)
}

fn check(args: CheckArgs) -> Result<ExitCode, CliError> {
    let (encoded, _) = read_and_encode(&args.puzzle)?;
    let start = Instant::now();
    let found = xccd::puzzles::solve(&*encoded, Some(2), 0);
    if let Some(error) = found.error {
        return Err(CliError::Failed(format!("internal error: {error}")));
    }
    let (verdict, code) = match (found.count, found.complete) {
        (0, _) => ("invalid: no solution", ExitCode::from(1)),
        (1, true) => ("valid: exactly one solution", ExitCode::SUCCESS),
        _ => ("invalid: more than one solution", ExitCode::from(1)),
    };
    let stats = Stats {
        solutions: found.count,
        ..found.stats
    };
    println!("{verdict}");
    if !args.quiet {
        eprintln!("{}", altogether(&stats, start.elapsed()));
    }
    Ok(code)
}

fn generate(args: GenerateArgs) -> Result<(), CliError> {
    if !args.kind.can_generate() {
        return Err(CliError::BadInput(format!(
            "cannot generate {} puzzles (only futoshiki, hitori and slitherlink)",
            args.kind
        )));
    }
    let start = Instant::now();
    let cols = args.cols.unwrap_or(args.size);
    let text = kinds::generate_rect(args.kind, args.size, cols, args.seed)
        .map_err(|e| CliError::BadInput(e.message))?;
    let mut out = BufWriter::new(io::stdout().lock());
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    flush(out)?;
    if !args.quiet {
        eprintln!(
            "Generated a valid {} puzzle (seed {}) in {:.3} s.",
            args.kind,
            args.seed,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
