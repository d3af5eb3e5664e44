//! `xccd bench --simulate`: how well one search spreads over N workers, in
//! virtual time ([`xccd::service::cluster::simulate`]: the real pool,
//! ledger, policy and engine; a fixed rate of nodes a second; a latency
//! per message).
//!
//! Per N: the virtual makespan, the speedup over one worker (the plain
//! count's nodes at the rate, and its lease's two messages) and the
//! efficiency (speedup / N), leases, give-aways (asked and made), nodes
//! replayed (explored past the plain count's), and the idle share of the
//! slots' time. The count must equal the plain count at every N, or the
//! bench fails. Deterministic for a seed: two runs print the same.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use xccd::service::cluster::simulate::{plain_count, simulate, SimConfig, SimOutcome};
use xccd::xcc::{dlx_format, Engine, Problem, POLL_INTERVAL};

use super::bench_out::{num, Rows};
use super::bench_set::BenchSet;
use super::CliError;

/// What `--simulate` was given.
pub struct SimulateArgs<'a> {
    /// A bench instance's name, or a DLX file.
    pub instance: &'a str,
    pub workers: &'a [usize],
    pub latency_ms: f64,
    pub seed: u64,
    pub rate: u64,
    pub engine: Engine,
}

/// A bench instance by name, else a DLX file by path.
fn load(set: &BenchSet, instance: &str) -> Result<Problem, CliError> {
    let path = Path::new(instance);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::BadInput(format!("cannot read {instance}: {e}")))?;
        return dlx_format::parse(&text)
            .map_err(|e| CliError::BadInput(format!("{instance}: {e}")));
    }
    Ok(set.load(instance)?.0)
}

pub fn run(set: &BenchSet, args: &SimulateArgs<'_>, out: Rows) -> Result<(), CliError> {
    if !(args.latency_ms.is_finite() && args.latency_ms >= 0.0) {
        return Err(CliError::BadInput(
            "--latency-ms must be a number of milliseconds, 0 or more".into(),
        ));
    }
    if args.rate == 0 || args.workers.contains(&0) {
        return Err(CliError::BadInput(
            "--rate and every count of --workers must be above 0".into(),
        ));
    }
    let problem = Arc::new(load(set, args.instance)?);
    let plain = plain_count(&problem, args.engine);
    let latency = Duration::from_secs_f64(args.latency_ms / 1000.0);
    out.text(format_args!(
        "simulated cluster: count {} ({} solutions, {} nodes in a plain run), {} engine",
        args.instance,
        plain.solutions,
        plain.nodes,
        args.engine.name()
    ));
    out.text(format_args!(
        "virtual time: {} nodes a second per worker, {} ms a message, seed {}; the real pool, ledger, policy and engine",
        args.rate, args.latency_ms, args.seed
    ));
    out.text(format_args!(
        "{:>6} {:>12} {:>9} {:>6} {:>8} {:>10} {:>10} {:>14} {:>7} {:>6}",
        "N",
        "makespan_s",
        "speedup",
        "eff",
        "leases",
        "give_asks",
        "give_aways",
        "replayed",
        "replay%",
        "idle%"
    ));
    for &workers in args.workers {
        let config = SimConfig {
            workers,
            latency,
            rate: args.rate,
            seed: args.seed,
            engine: args.engine,
            poll_interval: POLL_INTERVAL,
        };
        let started = Instant::now();
        let row = simulate(problem.clone(), &config, plain)
            .map_err(|e| CliError::Failed(format!("simulating {workers} workers: {e}")))?;
        // On stderr: the table is the same on every run of one seed.
        eprintln!(
            "{workers} workers simulated in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        print_row(out, args, &row);
    }
    Ok(())
}

fn print_row(out: Rows, args: &SimulateArgs<'_>, row: &SimOutcome) {
    let replay = row.replayed_nodes as f64 / (row.nodes + row.replayed_nodes).max(1) as f64;
    out.text(format_args!(
        "{:>6} {:>12.6} {:>9.2} {:>6.3} {:>8} {:>10} {:>10} {:>14} {:>6.2}% {:>5.1}%",
        row.workers,
        row.makespan.as_secs_f64(),
        row.speedup(),
        row.efficiency(),
        row.leases,
        row.give_asks,
        row.give_aways,
        row.replayed_nodes,
        100.0 * replay,
        100.0 * row.idle_share
    ));
    out.row(
        "simulate",
        json!({
            "instance": args.instance,
            "engine": args.engine.name(),
            "workers": row.workers,
            "latency_ms": num(args.latency_ms),
            "rate": args.rate,
            "seed": args.seed,
            "makespan_s": num(row.makespan.as_secs_f64()),
            "one_worker_s": num(row.one_worker.as_secs_f64()),
            "speedup": num(row.speedup()),
            "efficiency": num(row.efficiency()),
            "leases": row.leases,
            "give_asks": row.give_asks,
            "give_aways": row.give_aways,
            "nodes": row.nodes,
            "replayed_nodes": row.replayed_nodes,
            "replay_updates": row.replay_updates,
            "idle_share": num(row.idle_share),
            "solutions": row.solutions,
        }),
    );
}
