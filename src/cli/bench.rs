//! `xccd bench`: count the solutions of every benchmark instance,
//! single-threaded, and compare with Knuth's programs.
//!
//! Nodes and updates are exact and machine-independent: they must equal the
//! reference counts of the same algorithm. Seconds depend on the machine;
//! the reference times were taken on a machine like ours, so the ratio is a
//! rough guide, and only ratios measured in one run are worth comparing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use xccd::xcc::{CountOnly, Layout, RunConfig, Solver, Task};

use super::CliError;

const DEFAULT_BENCH_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/bench");

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Folder holding `instances/*.dlx` and `knuth-reference.tsv`.
    #[arg(long, env = "XCCD_BENCH_DIR", default_value = DEFAULT_BENCH_DIR)]
    pub dir: PathBuf,
    /// Only run instances whose name contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Run each instance this many times and report the fastest.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Force the node layout: `wide` (16-byte nodes, Knuth's) instead of
    /// the 8-byte nodes that problems of up to 65,535 nodes get.
    #[arg(long, value_enum, default_value_t = LayoutArg::Auto)]
    pub layout: LayoutArg,
    /// Measure the worker pool and the gRPC service instead (parallel
    /// speedup, streaming, latency); --filter picks among speedup, stream,
    /// latency.
    #[arg(long)]
    pub service: bool,
    /// Measure the remote path instead: the in-process pool against a
    /// coordinator with two worker processes, and the cost of killing one.
    #[arg(long, conflicts_with = "service")]
    pub cluster: bool,
    /// With --cluster: the coordinator serves over TLS with this
    /// certificate (PEM, for localhost) and key...
    #[arg(long, value_name = "FILE", requires_all = ["cluster", "tls_key", "ca_cert"])]
    pub tls_cert: Option<PathBuf>,
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// ...and the workers trust this CA.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub ca_cert: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutArg {
    Auto,
    Wide,
}

struct Reference {
    solutions: u64,
    nodes: u64,
    updates: u64,
    seconds: f64,
    program: String,
}

fn read_reference(path: &Path) -> HashMap<String, Reference> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return HashMap::new();
    };
    let mut table = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("case"))
    {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 7 {
            continue;
        }
        let num = |i: usize| f[i].trim().parse::<u64>().unwrap_or(0);
        table.insert(
            f[0].to_string(),
            Reference {
                solutions: num(1),
                nodes: num(3),
                updates: num(4),
                seconds: f[6].trim().parse().unwrap_or(0.0),
                program: f[2].to_string(),
            },
        );
    }
    table
}

pub fn run(args: BenchArgs) -> Result<(), CliError> {
    if args.cluster {
        let tls = match (&args.tls_cert, &args.tls_key, &args.ca_cert) {
            (Some(cert), Some(key), Some(ca)) => Some(super::bench_cluster::Tls {
                server: super::credentials::server_tls(Some(cert), Some(key), None)?
                    .expect("a certificate and a key"),
                ca: ca.clone(),
            }),
            _ => None,
        };
        return super::bench_cluster::run(&args.dir, args.filter.as_deref(), tls);
    }
    if args.service {
        return super::bench_service::run(&args.dir, args.filter.as_deref());
    }
    let dir = args.dir.join("instances");
    let reference = read_reference(&args.dir.join("knuth-reference.tsv"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| CliError::BadInput(format!("cannot read {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "dlx"))
        .filter(|p| {
            args.filter
                .as_ref()
                .is_none_or(|f| p.to_string_lossy().contains(f.as_str()))
        })
        .collect();
    files.sort();
    println!(
        "{:<20} {:>10} {:>10} {:>12} {:>5} {:>9} {:>9} {:>9} {:>7}",
        "instance",
        "solutions",
        "nodes",
        "updates",
        "algo",
        "seconds",
        "Mupd/s",
        "knuth_s",
        "speedup"
    );
    let mut mismatches = 0;
    for path in files {
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let problem = super::solve::read_problem(&path.to_string_lossy())?;
        let mut best = f64::INFINITY;
        let mut stats = None;
        let mut algorithm = "";
        for _ in 0..args.repeat.max(1) {
            let start = Instant::now();
            let mut solver = match args.layout {
                LayoutArg::Auto => Solver::new(&problem),
                LayoutArg::Wide => Solver::with_layout(&problem, Layout::Wide),
            };
            algorithm = solver.algorithm();
            let outcome = solver
                .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
                .map_err(|e| CliError::Failed(e.to_string()))?;
            best = best.min(start.elapsed().as_secs_f64());
            stats = Some(outcome.stats);
        }
        let stats = stats.expect("at least one run");
        let (knuth_s, speedup, flag) = match reference.get(&name) {
            Some(r) => {
                let same = r.solutions == stats.solutions
                    && (r.program != "dlx2" && r.program != "dlx3"
                        || (r.nodes == stats.nodes && r.updates == stats.updates));
                if !same {
                    mismatches += 1;
                }
                (
                    format!("{:.2}", r.seconds),
                    if best > 0.0 && r.seconds > 0.0 {
                        format!("{:.2}", r.seconds / best)
                    } else {
                        "-".into()
                    },
                    if same {
                        ""
                    } else {
                        "  counts differ from Knuth's!"
                    },
                )
            }
            None => ("-".into(), "-".into(), ""),
        };
        println!(
            "{:<20} {:>10} {:>10} {:>12} {:>5} {:>9.3} {:>9.1} {:>9} {:>7}{flag}",
            name,
            stats.solutions,
            stats.nodes,
            stats.updates,
            algorithm,
            best,
            stats.updates as f64 / best.max(1e-9) / 1e6,
            knuth_s,
            speedup
        );
    }
    if mismatches > 0 {
        return Err(CliError::Failed(format!(
            "{mismatches} instance(s) disagree with Knuth's counts"
        )));
    }
    Ok(())
}
