//! Reading a DLX problem from a file or standard input, for every command
//! that takes one, and the warning about the options Knuth's programs drop.

use std::io::{self, Read};

use xccd::xcc::{dlx_format, Problem};

use super::CliError;

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
