//! `xccd bench`: count the solutions of every benchmark instance,
//! single-threaded, and compare with Knuth's programs.
//!
//! Nodes and updates are exact and machine-independent: they must equal the
//! reference counts of the same algorithm. Seconds depend on the machine;
//! the reference times were taken on a machine like ours, so the ratio is a
//! rough guide, and only ratios measured in one run are worth comparing.

use std::collections::HashMap;
use std::path::PathBuf;

use clap::Args;
use xccd::xcc::{Order, Stats};

use super::bench_measure::{measure, LayoutArg, Measured};
use super::bench_set::{BenchSet, ReferenceTable};
use super::CliError;
use xccd::service::telemetry::Exporter;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Folder holding `instances/*.dlx`, `knuth-reference.tsv`,
    /// `ssxcc-reference.tsv` and `cells-reference.tsv` (the repository's
    /// `bench/` has that shape).
    /// Default: the same set, built into this binary.
    #[arg(long, env = "XCCD_BENCH_DIR")]
    pub dir: Option<PathBuf>,
    /// Only run instances whose name contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Run each instance this many times and report the fastest.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Force the layout: `wide` (32-bit fields: 16-byte links nodes as
    /// Knuth's, 8-byte cells as SSXCC's) instead of the 16-bit fields that
    /// small problems get.
    #[arg(long, value_enum, default_value_t = LayoutArg::Auto)]
    pub layout: LayoutArg,
    /// Which engine to measure: `links` (checked against Knuth's DLX2/DLX3
    /// counts), `cells` (against its own, `cells-reference.tsv`, and timed
    /// against SSXCC), `ssxcc` (the cells engine making SSXCC's own
    /// choices, checked against SSXCC's counts), or `both` (links and
    /// cells) with the time ratio.
    #[arg(long, value_enum, default_value_t = EngineArg::Both)]
    pub engine: EngineArg,
    /// Measure the worker pool and the gRPC service instead (parallel
    /// speedup, streaming, latency, the job store, GetJob); --filter picks
    /// among speedup, stream, latency, durable, getjob.
    #[arg(long)]
    pub service: bool,
    /// Measure the remote path instead: the in-process pool against a
    /// coordinator with two worker processes, and the cost of killing one.
    #[arg(long, conflicts_with = "service")]
    pub cluster: bool,
    /// Measure how many workers one coordinator serves: a coordinator
    /// (`serve --threads 0`) with N simulated remote workers over loopback,
    /// each lease a few nodes of work.
    #[arg(long, conflicts_with_all = ["service", "cluster"])]
    pub scale: bool,
    /// Measure memoized counting (`solve --memo --count`, Knuth's DLX6)
    /// instead: every row of `dlx6-reference.tsv`, its figures checked
    /// against DLX6's, its time against DLX6's and against the plain count.
    #[arg(long, conflicts_with_all = ["service", "cluster", "scale"])]
    pub memo: bool,
    /// Simulate a cluster counting INSTANCE in virtual time instead: the
    /// real pool, ledger, policy and engine with N simulated workers, each
    /// exploring --rate nodes a second, each message taking --latency-ms.
    #[arg(long, requires = "instance", conflicts_with_all = ["service", "cluster", "scale", "memo"])]
    pub simulate: bool,
    /// With --simulate: a bench instance's name, or a DLX file.
    #[arg(requires = "simulate")]
    pub instance: Option<String>,
    /// With --scale or --simulate: the numbers of workers, one row each.
    #[arg(long, value_delimiter = ',', default_values_t = [10, 100, 1000])]
    pub workers: Vec<usize>,
    /// With --simulate: how long a message between the coordinator and a
    /// worker takes, in milliseconds.
    #[arg(long, default_value_t = 1.0, requires = "simulate")]
    pub latency_ms: f64,
    /// With --simulate: chooses which idle worker a task goes to.
    #[arg(long, default_value_t = 1, requires = "simulate")]
    pub seed: u64,
    /// With --simulate: nodes a simulated worker explores in a second.
    #[arg(long, default_value_t = 5_000_000, requires = "simulate")]
    pub rate: u64,
    /// With --scale: nodes a simulated worker explores per lease before it
    /// checkpoints.
    #[arg(long, default_value_t = 16, requires = "scale")]
    pub lease_nodes: u64,
    /// With --cluster: the audit rates (`serve --audit-rate`, each from 0
    /// to 1) whose cost the audit table measures, the first the baseline
    /// (`--filter audit` runs that table alone).
    #[arg(long, value_delimiter = ',', default_values_t = [0.0, 0.01, 0.1])]
    pub audit_rates: Vec<f64>,
    /// With --cluster: the coordinator serves over TLS with this
    /// certificate (PEM, for localhost) and key...
    #[arg(long, value_name = "FILE", requires_all = ["cluster", "tls_key", "ca_cert"])]
    pub tls_cert: Option<PathBuf>,
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// ...and the workers trust this CA.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub ca_cert: Option<PathBuf>,
    /// Print one JSON object per row instead of the tables (every mode),
    /// its table named first: `{"table": "engines", "instance": ...}`.
    #[arg(long)]
    pub json: bool,
    /// With --service or --cluster: measure with traces on, exported to
    /// this OTLP collector (as `serve --otlp-endpoint`); the workers
    /// --cluster starts export there too. Run once with, once without,
    /// to see what tracing costs.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
    Links,
    Cells,
    Ssxcc,
    Both,
}

/// Traces on for the measurement: the exporter of `serve --otlp-endpoint`
/// on a runtime of its own (the measurements make and drop theirs), its
/// layer on this process's subscriber. Kept until the bench ends, when the
/// last spans are sent.
struct Traces {
    exporter: Option<Exporter>,
    runtime: tokio::runtime::Runtime,
}

impl Traces {
    fn start(url: &str) -> Result<Traces, CliError> {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| CliError::Failed(e.to_string()))?;
        let exporter = {
            let _in_runtime = runtime.enter();
            Exporter::start(url, "xccd-bench").map_err(CliError::BadInput)?
        };
        tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new("info"))
            .with(exporter.layer())
            .init();
        // The worker processes --cluster starts read the standard variable
        // (they are started after this, by this thread).
        std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", url);
        Ok(Traces {
            exporter: Some(exporter),
            runtime,
        })
    }
}

impl Drop for Traces {
    fn drop(&mut self) {
        // The exporter flushes on its runtime.
        let _in_runtime = self.runtime.enter();
        self.exporter.take();
    }
}

struct Reference {
    solutions: u64,
    nodes: u64,
    updates: u64,
    seconds: f64,
    program: String,
}

fn read_reference(set: &BenchSet, table: ReferenceTable) -> HashMap<String, Reference> {
    let program = match table {
        ReferenceTable::Ssmcc => "ssmcc",
        _ => "ssxcc",
    };
    let Some(text) = set.reference(table) else {
        return HashMap::new();
    };
    let mut table = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("case"))
    {
        let f: Vec<&str> = line.split('\t').collect();
        let num = |i: usize| f[i].trim().parse::<u64>().unwrap_or(0);
        let reference = match f.len() {
            // knuth-reference.tsv: case solutions algo nodes updates cleansings seconds ...
            7.. => Reference {
                solutions: num(1),
                nodes: num(3),
                updates: num(4),
                seconds: f[6].trim().parse().unwrap_or(0.0),
                program: f[2].to_string(),
            },
            // ssxcc-reference.tsv, ssmcc-reference.tsv: case solutions
            // nodes updates seconds
            5 => Reference {
                solutions: num(1),
                nodes: num(2),
                updates: num(3),
                seconds: f[4].trim().parse().unwrap_or(0.0),
                program: program.to_string(),
            },
            // cells-reference.tsv: case solutions nodes updates
            4 => Reference {
                solutions: num(1),
                nodes: num(2),
                updates: num(3),
                seconds: 0.0,
                program: "cells".to_string(),
            },
            _ => continue,
        };
        table.insert(f[0].to_string(), reference);
    }
    table
}

pub fn run(args: BenchArgs) -> Result<(), CliError> {
    let _traces = match &args.otlp_endpoint {
        Some(url) if args.service || args.cluster => Some(Traces::start(url)?),
        Some(_) => {
            return Err(CliError::BadInput(
                "--otlp-endpoint measures the service: give --service or --cluster".into(),
            ))
        }
        None => None,
    };
    let out = super::bench_out::Rows::new(args.json);
    let set = BenchSet::new(args.dir.clone());
    if args.cluster {
        let tls = match (&args.tls_cert, &args.tls_key, &args.ca_cert) {
            (Some(cert), Some(key), Some(ca)) => Some(super::bench_cluster::Tls {
                server: super::credentials::server_tls(Some(cert), Some(key), None)?
                    .expect("a certificate and a key"),
                ca: ca.clone(),
            }),
            _ => None,
        };
        return super::bench_cluster::run(
            &set,
            args.filter.as_deref(),
            tls,
            &args.audit_rates,
            out,
        );
    }
    if args.simulate {
        let engine = match args.engine {
            EngineArg::Cells => xccd::xcc::Engine::Cells,
            EngineArg::Links | EngineArg::Both => xccd::xcc::Engine::Links,
            EngineArg::Ssxcc => {
                return Err(CliError::BadInput(
                    "--simulate runs the links or the cells engine".into(),
                ))
            }
        };
        let simulate = super::bench_simulate::SimulateArgs {
            instance: args.instance.as_deref().unwrap_or_default(),
            workers: &args.workers,
            latency_ms: args.latency_ms,
            seed: args.seed,
            rate: args.rate,
            engine,
        };
        return super::bench_simulate::run(&set, &simulate, out);
    }
    if args.scale {
        return super::bench_scale::run(&set, &args.workers, args.lease_nodes, out);
    }
    if args.service {
        return super::bench_service::run(&set, args.filter.as_deref(), out);
    }
    if args.memo {
        return super::bench_memo::run(&set, args.filter.as_deref(), args.repeat, out);
    }
    let links_reference = read_reference(&set, ReferenceTable::Knuth);
    // SSXCC's counts, and SSMCC's for the instances with multiplicities
    // (which the cells engine searches by SSMCC's Algorithm M).
    let mut ssxcc_reference = read_reference(&set, ReferenceTable::Ssxcc);
    ssxcc_reference.extend(read_reference(&set, ReferenceTable::Ssmcc));
    // The cells engine's own counts, timed against SSXCC or SSMCC (the same
    // search but for its ties).
    let cells_reference: HashMap<String, Reference> = read_reference(&set, ReferenceTable::Cells)
        .into_iter()
        .map(|(name, r)| {
            let ssxcc = ssxcc_reference.get(&name);
            let timed = Reference {
                seconds: ssxcc.map_or(0.0, |s| s.seconds),
                program: ssxcc.map_or("-", |s| s.program.as_str()).to_string(),
                ..r
            };
            (name, timed)
        })
        .collect();
    let names: Vec<String> = set
        .names()?
        .into_iter()
        .filter(|name| {
            args.filter
                .as_ref()
                .is_none_or(|f| name.contains(f.as_str()))
        })
        .collect();
    let engines: &[Measured] = match args.engine {
        EngineArg::Links => &[Measured::Links],
        EngineArg::Cells => &[Measured::Cells(Order::Exact)],
        EngineArg::Ssxcc => &[Measured::Cells(Order::Ssxcc)],
        EngineArg::Both => &[Measured::Links, Measured::Cells(Order::Exact)],
    };
    out.text(format_args!(
        "{:<20} {:>6} {:>10} {:>10} {:>12} {:>5} {:>9} {:>9} {:>9} {:>6} {:>7}",
        "instance",
        "engine",
        "solutions",
        "nodes",
        "updates",
        "algo",
        "seconds",
        "Mupd/s",
        "knuth_s",
        "vs",
        "speedup"
    ));
    let mut mismatches = 0;
    for name in names {
        let (problem, _) = set.load(&name)?;
        let mut seconds = Vec::new();
        for &engine in engines {
            let (best, stats, algorithm) = measure(&problem, engine, args.layout, args.repeat)?;
            seconds.push(best);
            let reference = match engine {
                Measured::Links => &links_reference,
                Measured::Cells(Order::Exact) => &cells_reference,
                Measured::Cells(Order::Ssxcc) => &ssxcc_reference,
            };
            let (knuth_s, program, speedup, flag) = match reference.get(&name) {
                Some(r) => {
                    // Only the program whose search this engine follows has
                    // comparable node and update counts.
                    let same_tree =
                        matches!(r.program.as_str(), "dlx2" | "dlx3" | "ssxcc" | "ssmcc")
                            || engine == Measured::Cells(Order::Exact);
                    let same = r.solutions == stats.solutions
                        && (!same_tree || (r.nodes == stats.nodes && r.updates == stats.updates));
                    if !same {
                        mismatches += 1;
                    }
                    (
                        format!("{:.2}", r.seconds),
                        r.program.clone(),
                        if best > 0.0 && r.seconds > 0.0 {
                            format!("{:.2}", r.seconds / best)
                        } else {
                            "-".into()
                        },
                        if same {
                            ""
                        } else {
                            "  counts differ from the reference!"
                        },
                    )
                }
                None => ("-".into(), "-".into(), "-".into(), ""),
            };
            let known = reference.get(&name);
            out.row(
                "engines",
                engine_row(
                    &name,
                    engine,
                    &stats,
                    algorithm,
                    best,
                    known,
                    flag.is_empty(),
                ),
            );
            out.text(format_args!(
                "{:<20} {:>6} {:>10} {:>10} {:>12} {:>5} {:>9.3} {:>9.1} {:>9} {:>6} {:>7}{flag}",
                name,
                engine.name(),
                stats.solutions,
                stats.nodes,
                stats.updates,
                algorithm,
                best,
                stats.updates as f64 / best.max(1e-9) / 1e6,
                knuth_s,
                program,
                speedup
            ));
        }
        if let [links, cells] = seconds[..] {
            out.row(
                "engine_ratio",
                serde_json::json!({"instance": name, "cells_over_links": cells / links.max(1e-9)}),
            );
            out.text(format_args!(
                "{name:<20} {:>6} cells/links time ratio {:.2}",
                "ratio",
                cells / links.max(1e-9)
            ));
        }
    }
    if mismatches > 0 {
        return Err(CliError::Failed(format!(
            "{mismatches} row(s) disagree with the reference counts"
        )));
    }
    Ok(())
}

/// The `--json` row of one instance on one engine.
fn engine_row(
    name: &str,
    engine: Measured,
    stats: &Stats,
    algorithm: &str,
    seconds: f64,
    reference: Option<&Reference>,
    matches_reference: bool,
) -> serde_json::Value {
    use super::bench_out::num;
    serde_json::json!({
        "instance": name,
        "engine": engine.name(),
        "solutions": stats.solutions,
        "nodes": stats.nodes,
        "updates": stats.updates,
        "algorithm": algorithm,
        "seconds": num(seconds),
        "mupdates_per_s": num(stats.updates as f64 / seconds.max(1e-9) / 1e6),
        "reference_program": reference.map(|r| r.program.as_str()),
        "reference_seconds": reference.map(|r| num(r.seconds)),
        "speedup": reference.filter(|r| seconds > 0.0 && r.seconds > 0.0).map(|r| num(r.seconds / seconds)),
        "matches_reference": reference.map(|_| matches_reference),
    })
}
