//! What every way of running `xccd solve` (and `xccd puzzle solve`) prints:
//! the solutions as they come, in the chosen format, and at the end the
//! count, the profile and Knuth's closing line, from how the search
//! [`Ended`]. It runs no search.

use std::io::{self, Write};
use std::time::Duration;

use xccd::service::proto as pb;
use xccd::xcc::{Problem, Stats};

use super::solve_args::{Format, SolveArgs};
use super::CliError;

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

/// How a search ended, whichever way it ran (this thread, the pool, a
/// server): what every way of running prints at the end.
pub struct Ended {
    pub stats: Stats,
    pub node_limit: bool,
    /// The output could not be written (the search was then stopped).
    pub write_error: Option<io::Error>,
    /// Why the search stopped before it did what was asked (the server
    /// shut down, ...): what was printed is partial.
    pub cut_short: Option<String>,
    /// What a server's preprocessing removed (the request's `preprocess`);
    /// `None` for a search run in this process.
    pub preprocessing: Option<pb::Preprocessing>,
}

/// Prints the count (with --count), the profile and Knuth's closing line.
pub fn finish<W: Write>(
    args: &SolveArgs,
    mut writer: SolutionWriter<'_, W>,
    end: Ended,
    elapsed: Duration,
) -> Result<(), CliError> {
    if args.count {
        let _ = writeln!(writer.out, "{}", end.stats.solutions);
    }
    let flushed = writer.out.flush();
    match end.write_error.or(flushed.err()) {
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
        eprintln!("{}", altogether(&end.stats, elapsed));
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
