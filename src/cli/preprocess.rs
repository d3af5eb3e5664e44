//! `xccd preprocess`: Knuth's DLX-PRE on a DLX file (the reduced problem on
//! stdout, his report on stderr), and the step `xccd solve --preprocess`
//! takes before its search.

use std::io::{self, Write};

use clap::Args;
use xccd::xcc::preprocess::{self, input_mems, Config, Reduced, SHOW_BASICS, SHOW_WARNINGS};
use xccd::xcc::Problem;

use super::CliError;

#[derive(Args, Debug)]
pub struct PreprocessArgs {
    /// DLX file to read, or `-` for standard input.
    #[arg(default_value = "-")]
    pub input: String,
    /// DLX-PRE's `t`: rounds run while their number is below N (so at most
    /// N - 1 of them).
    #[arg(long, value_name = "N", default_value_t = Config::default().rounds)]
    pub rounds: u32,
    /// DLX-PRE's `T`: stop reducing after about this many mems (the output
    /// is still an equivalent problem).
    #[arg(long, value_name = "MEMS")]
    pub timeout: Option<u64>,
    /// DLX-PRE's `d`: a progress line on stderr every MEMS mems or so (0:
    /// none; by default the first after 10^9 mems, then every 10^10).
    #[arg(long, value_name = "MEMS")]
    pub delta: Option<u64>,
    /// DLX-PRE's `v`, a sum of: 1 statistics, 2 rounds, 4 every removal and
    /// why, 8 `| (from N)` after each option (N counts the input's options
    /// that have a primary item, from 1), 512 item totals, 1024 warnings.
    #[arg(long, value_name = "CODES", default_value_t = Config::default().verbose)]
    pub verbose: u32,
}

pub fn run(args: PreprocessArgs) -> Result<(), CliError> {
    let (problem, text) = super::input::read_problem_and_text(&args.input)?;
    let mut config = Config {
        rounds: args.rounds,
        verbose: args.verbose,
        ..Config::default()
    };
    if let Some(t) = args.timeout {
        config.timeout = t;
    }
    if let Some(d) = args.delta {
        config.delta = d;
        config.thresh = d;
    }
    // DLX-PRE's warnings quote the input's lines as they are: printed here,
    // from the text, rather than by the library from the problem.
    let warnings = config.verbose & SHOW_WARNINGS != 0;
    config.verbose &= !SHOW_WARNINGS;
    let reduced = reduce(&problem, &config)?;
    config.verbose |= if warnings { SHOW_WARNINGS } else { 0 };
    if warnings {
        for line in dropped_lines(&problem, &text) {
            let end = if line.ends_with('\n') { "" } else { "\n" };
            eprint!("Option ignored (no primary items): {line}{end}");
        }
    }
    eprint!("{}", reduced.log);
    let mut out = io::stdout().lock();
    match out
        .write_all(reduced.to_dlx_pre(config.verbose).as_bytes())
        .and_then(|()| out.flush())
    {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            return Err(CliError::Failed(format!("cannot write output: {e}")))
        }
        _ => {}
    }
    if config.verbose & SHOW_BASICS != 0 {
        eprintln!("{}", reduced.summary(input_mems(text.as_bytes())));
    }
    Ok(())
}

/// The lines of `text` that hold the options `problem` dropped.
fn dropped_lines<'a>(problem: &Problem, text: &'a str) -> Vec<&'a str> {
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r');
    let mut lines = text
        .split_inclusive('\n')
        .filter(|l| l.bytes().find(|&b| !blank(b)).is_some_and(|b| b != b'|'));
    lines.next(); // the item line
    let options: Vec<&str> = lines.collect();
    problem
        .dropped_options()
        .iter()
        .filter_map(|&o| options.get(o).copied())
        .collect()
}

fn reduce(problem: &Problem, config: &Config) -> Result<Reduced, CliError> {
    preprocess::preprocess(problem, config).map_err(|e| CliError::BadInput(e.to_string()))
}

/// `xccd solve --preprocess`: the reduced problem to search, its summary on
/// stderr unless quiet.
pub fn for_solve(problem: &Problem, text: &str, quiet: bool) -> Result<Reduced, CliError> {
    let config = Config {
        verbose: 0,
        ..Config::default()
    };
    let reduced = reduce(problem, &config)?;
    if !quiet {
        eprintln!(
            "Preprocessed (DLX-PRE): {}",
            reduced.summary(input_mems(text.as_bytes()))
        );
    }
    Ok(reduced)
}
