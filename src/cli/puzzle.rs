//! `xccd puzzle`: solve, encode, check and generate puzzles (latin squares,
//! futoshiki, sudoku, queens, hitori, hidato, slitherlink).
//!
//! Exit codes: 0 when the command ran (`solve` with no solution included:
//! it says "no solution" on stderr), 2 on bad input (the message names the
//! file, line and column) or usage, and for `check` 1 when the puzzle is
//! invalid (no solution, or more than one), so scripts can test validity
//! like `cmp` or `grep` test their answer.

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Subcommand};
use xccd::puzzles::kinds::{self, EncodeOptions, Kind};
use xccd::puzzles::{Encoded, FutoshikiEncoding};
use xccd::xcc::{dlx_format, Flow, RunConfig, SolutionView, Solver, Stats, Status, Task, Visitor};

use super::solve::altogether;
use super::CliError;

#[derive(Args, Debug)]
pub struct PuzzleArgs {
    #[command(subcommand)]
    pub command: PuzzleCommand,
}

#[derive(Subcommand, Debug)]
pub enum PuzzleCommand {
    /// Solve a puzzle and print its solutions (the first one by default).
    Solve(SolveArgs),
    /// Print the puzzle's XCC problem in Knuth's DLX format.
    Encode(EncodeArgs),
    /// Tell whether the puzzle is valid (exactly one solution); exit 1 if not.
    Check(CheckArgs),
    /// Print a random valid puzzle (futoshiki, hitori, slitherlink).
    Generate(GenerateArgs),
}

/// How to read and encode a puzzle.
#[derive(Args, Debug)]
pub struct PuzzleInput {
    /// The kind of puzzle: latin, futoshiki, hitori, hidato, slitherlink,
    /// sudoku, queens.
    #[arg(value_name = "KIND")]
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
    /// Do not print the final statistics line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
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
        PuzzleCommand::Solve(a) => solve(a).map(|()| ExitCode::SUCCESS),
        PuzzleCommand::Encode(a) => encode(a).map(|()| ExitCode::SUCCESS),
        PuzzleCommand::Check(a) => check(a),
        PuzzleCommand::Generate(a) => generate(a).map(|()| ExitCode::SUCCESS),
    }
}

/// Reads the puzzle's text and encodes it; errors name the input.
fn read_and_encode(p: &PuzzleInput) -> Result<Box<dyn Encoded>, CliError> {
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
    let options = EncodeOptions {
        weak: p.weak,
        encoding: p.encoding,
    };
    kinds::encode(p.kind, &text, &options).map_err(|e| CliError::BadInput(format!("{name}: {e}")))
}

/// Streams decoded solutions, enforcing the puzzle's side conditions.
struct Printer<'a, W: Write> {
    encoded: &'a dyn Encoded,
    out: W,
    print: bool,
    count: u64,
    options: Vec<usize>,
    error: Option<io::Error>,
}

impl<W: Write> Visitor for Printer<'_, W> {
    fn solution(&mut self, s: &SolutionView<'_>) -> Flow {
        s.options_into(&mut self.options);
        if !self.encoded.accept(&self.options) {
            return Flow::Reject;
        }
        self.count += 1;
        if self.print {
            let mut text = self.encoded.decode(&self.options);
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let separator = if self.count > 1 { "\n" } else { "" };
            if let Err(e) = write!(self.out, "{separator}{text}") {
                self.error = Some(e);
                return Flow::Stop;
            }
        }
        Flow::Continue
    }
    fn partial(&mut self, s: &SolutionView<'_>) -> bool {
        s.options_into(&mut self.options);
        self.encoded.accept_partial(&self.options)
    }
}

/// Runs the search, printing solutions to `out` (if `print`).
fn search<W: Write>(
    encoded: &dyn Encoded,
    limit: Option<u64>,
    out: W,
    print: bool,
) -> Result<(Stats, Status, W), CliError> {
    let mut printer = Printer {
        encoded,
        out,
        print,
        count: 0,
        options: Vec::new(),
        error: None,
    };
    let config = RunConfig {
        max_solutions: limit,
        check_partial: encoded.prunes(),
        ..RunConfig::default()
    };
    let outcome = Solver::new(encoded.problem())
        .run(&Task::root(), &config, &mut printer)
        .map_err(|e| CliError::Failed(format!("internal error: {e}")))?;
    match printer.error {
        Some(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        Some(e) => return Err(CliError::Failed(format!("cannot write output: {e}"))),
        None => {}
    }
    Ok((outcome.stats, outcome.status, printer.out))
}

fn flush<W: Write>(mut out: W) -> Result<(), CliError> {
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(CliError::Failed(format!("cannot write output: {e}")))
        }
        _ => Ok(()),
    }
}

fn solve(args: SolveArgs) -> Result<(), CliError> {
    let encoded = read_and_encode(&args.puzzle)?;
    let limit = match (args.all, args.count, args.limit) {
        (_, _, Some(0)) => return Err(CliError::BadInput("--limit must be at least 1".into())),
        (_, _, Some(n)) => Some(n),
        (true, _, None) | (_, true, None) => None,
        (false, false, None) => Some(1),
    };
    let start = Instant::now();
    let stdout = io::stdout();
    let (stats, _, mut out) = search(&*encoded, limit, BufWriter::new(stdout.lock()), !args.count)?;
    if args.count {
        let _ = writeln!(out, "{}", stats.solutions);
    }
    flush(out)?;
    if stats.solutions == 0 {
        eprintln!("no solution");
    }
    if !args.quiet {
        eprintln!("{}", altogether(&stats, start.elapsed()));
    }
    Ok(())
}

fn encode(args: EncodeArgs) -> Result<(), CliError> {
    let encoded = read_and_encode(&args.puzzle)?;
    let mut out = BufWriter::new(io::stdout().lock());
    let _ = out.write_all(dlx_format::to_string(encoded.problem()).as_bytes());
    flush(out)
}

fn check(args: CheckArgs) -> Result<ExitCode, CliError> {
    let encoded = read_and_encode(&args.puzzle)?;
    let start = Instant::now();
    let (stats, status, _) = search(&*encoded, Some(2), io::sink(), false)?;
    let (verdict, code) = match (stats.solutions, status) {
        (0, _) => ("invalid: no solution", ExitCode::from(1)),
        (1, Status::Exhausted) => ("valid: exactly one solution", ExitCode::SUCCESS),
        _ => ("invalid: more than one solution", ExitCode::from(1)),
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
