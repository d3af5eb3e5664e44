//! Command-line interface: argument parsing and the subcommands.
//!
//! Exit codes: 0 when the command ran (even when it found no solution), 2 on
//! bad input or usage, 3 when a server cut the search short (it shut down:
//! what was printed is partial), 1 on any other failure.

mod bench;
mod bench_cluster;
mod bench_measure;
mod bench_memo;
mod bench_out;
mod bench_scale;
mod bench_service;
mod bench_set;
mod bench_simulate;
mod cheapest;
mod credentials;
mod estimate;
mod input;
mod logging;
mod memo;
mod output;
mod pooled;
mod preprocess;
mod progress;
mod puzzle;
mod serve;
mod solve;
mod solve_args;
mod worker;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "xccd",
    version,
    about = "Exact cover with color controls and multiplicities (Knuth's Algorithms X, C, M)",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Solve an XCC problem written in Knuth's DLX format.
    Solve(solve_args::SolveArgs),
    /// Reduce an XCC problem to an equivalent smaller one (Knuth's DLX-PRE),
    /// written in DLX format.
    Preprocess(preprocess::PreprocessArgs),
    /// Estimate the search tree's size and the time to search it, by
    /// Knuth's random probes, before running it.
    Estimate(estimate::EstimateArgs),
    /// Serve the gRPC API with a pool of worker threads.
    // Boxed: its many flags make it far larger than the other commands.
    Serve(Box<serve::ServeArgs>),
    /// Run the benchmark instances single-threaded and print a table.
    Bench(bench::BenchArgs),
    /// Puzzles as XCC problems: solve, encode, check, generate.
    Puzzle(puzzle::PuzzleArgs),
    /// Run tasks for a coordinator (`xccd serve`), as a remote worker.
    Worker(worker::WorkerArgs),
}

/// An error that ends the command, with the exit code it deserves.
#[derive(Debug)]
pub enum CliError {
    /// The user gave something wrong: exit code 2.
    BadInput(String),
    /// Anything else: exit code 1.
    Failed(String),
    /// The search was cut short (the server shut down): what was printed
    /// is partial. Exit code 3, so that a script cannot take it for the
    /// answer.
    CutShort(String),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Solve(args) => solve::run(args),
        Command::Estimate(args) => estimate::run(args),
        Command::Preprocess(args) => preprocess::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Bench(args) => bench::run(args),
        Command::Worker(args) => worker::run(args),
        // `check` exits 1 for an invalid puzzle without being an error.
        Command::Puzzle(args) => match puzzle::run(args) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::BadInput(msg)) => {
            eprintln!("xccd: error: {msg}");
            ExitCode::from(2)
        }
        Err(CliError::Failed(msg)) => {
            eprintln!("xccd: error: {msg}");
            ExitCode::from(1)
        }
        Err(CliError::CutShort(msg)) => {
            eprintln!("xccd: cut short: {msg}");
            ExitCode::from(3)
        }
    }
}
