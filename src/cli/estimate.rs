//! `xccd estimate`: Knuth's estimate of the search tree's size by random
//! probes, and of the time a full run would take on this machine.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::Args;
use xccd::xcc::estimate::{estimate, measure_rate, Estimate, Rate, DEFAULT_PROBES};
use xccd::xcc::Solver;

use super::credentials::EngineChoice;
use super::input::read_problem;
use super::CliError;

#[derive(Args, Debug)]
pub struct EstimateArgs {
    /// DLX file to read, or `-` for standard input.
    #[arg(default_value = "-")]
    pub input: String,
    /// Random walks from the root to average; more narrow the spread.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PROBES)]
    pub probes: u64,
    /// Seed of the random choices: the same seed gives the same estimate.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// The engine whose search tree to estimate (their trees differ).
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    pub engine: EngineChoice,
}

/// How long the measuring run of the speed takes at most.
const RATE_BUDGET: Duration = Duration::from_millis(200);

pub fn run(args: EstimateArgs) -> Result<(), CliError> {
    if args.probes == 0 {
        return Err(CliError::BadInput("--probes must be at least 1".into()));
    }
    let problem = read_problem(&args.input)?;
    let engine = args.engine.resolve(&problem)?;
    let mut solver =
        Solver::with_engine(&problem, engine).map_err(|e| CliError::BadInput(e.to_string()))?;
    let estimate = estimate(&mut solver, args.probes, args.seed);
    let rate = measure_rate(&mut solver, RATE_BUDGET, &AtomicBool::new(false));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if args.json {
        let mut object = json(&estimate, solver.algorithm(), &rate, threads);
        object["engine"] = solver.engine().name().into();
        println!("{object}");
    } else {
        print!("{}", text(&estimate, solver.algorithm(), &rate, threads));
    }
    Ok(())
}

fn json(estimate: &Estimate, algorithm: &str, rate: &Rate, threads: usize) -> serde_json::Value {
    let per_second = rate.nodes_per_second();
    let seconds = estimate.seconds(per_second);
    serde_json::json!({
        "probes": estimate.probes,
        "seed": estimate.seed,
        "algorithm": algorithm,
        "nodes": estimate.nodes,
        "solutions": estimate.solutions,
        "deepest": estimate.deepest,
        "rate": rate,
        "nodes_per_second": per_second,
        "threads": threads,
        "seconds_one_thread": seconds,
        "seconds_all_threads": seconds / threads as f64,
    })
}

fn text(estimate: &Estimate, algorithm: &str, rate: &Rate, threads: usize) -> String {
    let per_second = rate.nodes_per_second();
    let seconds = estimate.seconds(per_second);
    let mut s = format!(
        "Knuth's estimate from {} random probes (seed {}, Algorithm {algorithm}):\n",
        estimate.probes, estimate.seed
    );
    s += &format!(
        "  nodes:     {} ± {} (standard error; one probe's deviation {})\n",
        number(estimate.nodes.mean),
        number(estimate.nodes.standard_error),
        number(estimate.nodes.standard_deviation),
    );
    s += &format!(
        "  solutions: {} ± {}\n",
        number(estimate.solutions.mean),
        number(estimate.solutions.standard_error),
    );
    s += &format!(
        "  speed:     {} nodes/s on one thread (measured: {} nodes in {:.3} s{})\n",
        number(per_second),
        rate.nodes,
        rate.seconds,
        if rate.complete {
            ", the whole tree"
        } else {
            ""
        },
    );
    s += &format!(
        "  time:      {} on one thread, {} on {threads} threads\n",
        duration(seconds),
        duration(seconds / threads as f64),
    );
    s
}

/// A count for people: whole up to ten million, then three significant
/// digits with an exponent.
fn number(x: f64) -> String {
    if !x.is_finite() {
        "overflow".to_string()
    } else if x.abs() < 1e7 {
        format!("{x:.0}")
    } else {
        format!("{x:.3e}")
    }
}

/// Seconds for people, in the largest unit that keeps them readable.
fn duration(seconds: f64) -> String {
    const UNITS: [(f64, &str); 5] = [
        (365.25 * 86400.0, "years"),
        (86400.0, "days"),
        (3600.0, "hours"),
        (60.0, "minutes"),
        (1.0, "s"),
    ];
    if !seconds.is_finite() {
        return "forever".to_string();
    }
    if seconds < 1.0 {
        return format!("{seconds:.3} s");
    }
    if seconds >= 1000.0 * UNITS[0].0 {
        return format!("{:.3e} years", seconds / UNITS[0].0);
    }
    let (size, name) = UNITS
        .iter()
        .find(|(size, _)| seconds >= *size)
        .copied()
        .unwrap_or((1.0, "s"));
    format!("{:.1} {name}", seconds / size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(duration(0.25), "0.250 s");
        assert_eq!(duration(42.0), "42.0 s");
        assert_eq!(duration(90.0), "1.5 minutes");
        assert_eq!(duration(7200.0), "2.0 hours");
        assert_eq!(duration(3.0 * 86400.0), "3.0 days");
        assert_eq!(duration(f64::INFINITY), "forever");
        assert_eq!(number(1049.4), "1049");
        assert_eq!(number(3.14159e9), "3.142e9");
    }
}
