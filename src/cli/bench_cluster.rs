//! `xccd bench --cluster`: the remote path, measured.
//!
//! - overhead: the same count with the in-process pool (2 threads) and with
//!   a coordinator (no local threads) and 2 single-thread `xccd worker`
//!   processes on this machine;
//! - fault cost: the same remote count when one of the two workers is
//!   killed (`kill -9`) half-way, and a new one starts in its place;
//! - auditing's cost: the same remote runs on coordinators that audit at
//!   each of `--audit-rates` (`serve --audit-rate`).
//!
//! The coordinator runs in this process; the workers are this binary.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use xccd::service::cluster::{AuditConfig, ClusterConfig};
use xccd::service::credentials::{ServerTls, WorkerToken};
use xccd::service::job::EndReason;
use xccd::service::server::{start, RunningServer, ServeConfig};
use xccd::service::{Pool, PoolConfig};

use serde_json::json;

use super::bench_out::{num, Rows};
use super::bench_service::{count, enumerate, enumerate_summary};
use super::bench_set::BenchSet;
use super::CliError;

/// The token of this benchmark's workers (loopback only, for one run).
const TOKEN: &str = "bench-cluster-worker-token";

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::Failed(e.to_string())
}

/// TLS for the cluster: the coordinator's certificate and key, and the CA
/// file its workers trust.
pub struct Tls {
    pub server: ServerTls,
    pub ca: PathBuf,
}

struct Workers {
    children: Vec<Child>,
    url: String,
    ca: Option<PathBuf>,
}

impl Workers {
    fn start_one(&self) -> Result<Child, CliError> {
        let mut command = Command::new(std::env::current_exe().map_err(failed)?);
        command.args(["worker", "--coordinator", &self.url]);
        if let Some(ca) = &self.ca {
            command.arg("--ca-cert").arg(ca);
        }
        command
            .args(["--threads", "1"])
            .env("RUST_LOG", "warn")
            .env("XCCD_WORKER_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| CliError::Failed(format!("cannot start a worker: {e}")))
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A coordinator (no local threads) and its two single-thread workers.
struct Cluster {
    server: RunningServer,
    workers: Workers,
}

impl Cluster {
    async fn start(tls: Option<&Tls>, audit: AuditConfig) -> Result<Cluster, CliError> {
        let server = start(ServeConfig {
            tls: tls.map(|t| t.server.clone()),
            listen: ([127, 0, 0, 1], 0).into(),
            pool: PoolConfig {
                threads: 0,
                ..PoolConfig::default()
            },
            cluster: ClusterConfig {
                token: Some(WorkerToken::new(TOKEN).map_err(failed)?),
                audit,
                ..ClusterConfig::default()
            },
            ..ServeConfig::default()
        })
        .await
        .map_err(failed)?;
        let port = server.worker_addr.expect("a worker listener").port();
        let mut workers = Workers {
            children: Vec::new(),
            url: match tls {
                Some(_) => format!("https://localhost:{port}"),
                None => format!("http://127.0.0.1:{port}"),
            },
            ca: tls.map(|t| t.ca.clone()),
        };
        for _ in 0..2 {
            let child = workers.start_one()?;
            workers.children.push(child);
        }
        wait_slots(&server.pool, 2).await?;
        Ok(Cluster { server, workers })
    }

    async fn shutdown(self) -> Result<(), CliError> {
        drop(self.workers);
        self.server.shutdown().await.map_err(failed)
    }
}

async fn wait_slots(pool: &Pool, slots: usize) -> Result<(), CliError> {
    let start = Instant::now();
    while pool.remote_slots() != slots {
        if start.elapsed() > Duration::from_secs(30) {
            return Err(CliError::Failed(format!(
                "{slots} worker slots did not connect within 30 s"
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

pub fn run(
    set: &BenchSet,
    filter: Option<&str>,
    tls: Option<Tls>,
    audit_rates: &[f64],
    out: Rows,
) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(failed)?;
    runtime.block_on(run_async(set, filter, tls, audit_rates, out))
}

async fn run_async(
    set: &BenchSet,
    filter: Option<&str>,
    tls: Option<Tls>,
    audit_rates: &[f64],
    out: Rows,
) -> Result<(), CliError> {
    // Audits as `serve` does them by default.
    let Cluster {
        server,
        mut workers,
    } = Cluster::start(tls.as_ref(), AuditConfig::default()).await?;
    let local = Pool::new(PoolConfig {
        threads: 2,
        ..PoolConfig::default()
    });
    let how = if tls.is_some() {
        "over TLS"
    } else {
        "plaintext"
    };
    out.text(format_args!("remote path (count only): in-process pool of 2 threads vs coordinator + 2 worker processes of 1 thread, {how}"));
    out.text(format_args!(
        "{:<12} {:>10} {:>12} {:>9} {:>9} {:>9} {:>9} {:>6}",
        "instance", "solutions", "nodes", "local s", "remote s", "overhead", "killed s", "lost"
    ));
    for name in ["queens15", "pent6x10", "langford12"] {
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let (problem, _) = set.load(name)?;
        let problem = Arc::new(problem);
        let (s_local, t_local, nodes) = count(&local, &problem).await?;
        let (s_remote, t_remote, _) = count(&server.pool, &problem).await?;
        // Kill one of the two workers half-way; a new one replaces it.
        let lost_before = server.pool.tasks_lost();
        let killer = async {
            tokio::time::sleep(Duration::from_secs_f64(t_remote / 2.0)).await;
            let _ = workers.children[0].kill();
            let _ = workers.children[0].wait();
            workers.start_one()
        };
        let (killed, replacement) = tokio::join!(count(&server.pool, &problem), killer);
        let (s_killed, t_killed, _) = killed?;
        workers.children[0] = replacement?;
        let lost = server.pool.tasks_lost() - lost_before;
        if s_local != s_remote || s_local != s_killed {
            return Err(CliError::Failed(format!(
                "{name}: counts differ: local {s_local}, remote {s_remote}, with a kill {s_killed}"
            )));
        }
        out.row(
            "remote",
            json!({
                "instance": name,
                "tls": tls.is_some(),
                "solutions": s_local,
                "nodes": nodes,
                "local_s": num(t_local),
                "remote_s": num(t_remote),
                "overhead_pct": num(100.0 * (t_remote / t_local - 1.0)),
                "killed_s": num(t_killed),
                "lost": lost,
            }),
        );
        out.text(format_args!(
            "{:<12} {:>10} {:>12} {:>9.3} {:>9.3} {:>8.1}% {:>9.3} {:>6}",
            name,
            s_local,
            nodes,
            t_local,
            t_remote,
            100.0 * (t_remote / t_local - 1.0),
            t_killed,
            lost
        ));
        wait_slots(&server.pool, 2).await?;
    }
    out.text("");
    out.text(
        "streaming every solution: remote solutions are checked by the coordinator before delivery",
    );
    out.text(format_args!(
        "{:<12} {:>10} {:>9} {:>9} {:>9}",
        "instance", "solutions", "local s", "remote s", "overhead"
    ));
    for name in ["latin5", "langford12"] {
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let (problem, _) = set.load(name)?;
        let problem = Arc::new(problem);
        let (s_local, t_local, _) = enumerate(&local, &problem, true).await?;
        let (s_remote, t_remote, _) = enumerate(&server.pool, &problem, true).await?;
        if s_local != s_remote {
            return Err(CliError::Failed(format!(
                "{name}: counts differ: local {s_local}, remote {s_remote}"
            )));
        }
        out.row(
            "remote_stream",
            json!({
                "instance": name,
                "tls": tls.is_some(),
                "solutions": s_local,
                "local_s": num(t_local),
                "remote_s": num(t_remote),
                "overhead_pct": num(100.0 * (t_remote / t_local - 1.0)),
            }),
        );
        out.text(format_args!(
            "{:<12} {:>10} {:>9.3} {:>9.3} {:>8.1}%",
            name,
            s_local,
            t_local,
            t_remote,
            100.0 * (t_remote / t_local - 1.0)
        ));
    }
    if filter.is_none_or(|f| "latency".contains(f)) {
        // Small calls on a pure coordinator: the remote leases yield.
        super::bench_service::latency_on(&server, "remote worker slots", 2, set, out).await?;
    }
    drop(workers);
    let pool = local;
    tokio::task::spawn_blocking(move || pool.shutdown())
        .await
        .map_err(failed)?;
    server.shutdown().await.map_err(failed)?;
    if !audit_rates.is_empty() {
        audit_costs(set, filter, tls.as_ref(), audit_rates, out).await?;
    }
    Ok(())
}

/// Rounds of the audit table: each measures every rate once, in turn, so
/// that a drift of the machine's speed falls on every rate alike.
const AUDIT_ROUNDS: usize = 3;

/// Auditing's cost: the same remote runs on a coordinator of its own per
/// rate (with its own two workers, started for each run), the median of
/// [`AUDIT_ROUNDS`] interleaved rounds. An audit runs a lease again on a
/// coordinator thread, which on this machine shares its cores with the
/// workers: the cost shows as time.
async fn audit_costs(
    set: &BenchSet,
    filter: Option<&str>,
    tls: Option<&Tls>,
    rates: &[f64],
    out: Rows,
) -> Result<(), CliError> {
    if let Some(bad) = rates.iter().find(|r| !(0.0..=1.0).contains(*r)) {
        return Err(CliError::BadInput(format!(
            "--audit-rates: {bad} is not a rate from 0 to 1"
        )));
    }
    out.text("");
    out.text(format_args!(
        "auditing (serve --audit-rate R): the same remote runs, a coordinator of its own per rate, median of {AUDIT_ROUNDS} interleaved rounds; cost against the first rate"
    ));
    out.text(format_args!(
        "{:<12} {:>7} {:>10} {:>7} {:>9} {:>9} {:>8}",
        "instance", "stream", "solutions", "rate", "audited", "remote s", "cost"
    ));
    for (name, stream) in [("langford12", false), ("queens14", false), ("latin5", true)] {
        if filter.is_some_and(|f| !name.contains(f) && !"audit".contains(f)) {
            continue;
        }
        let (problem, _) = set.load(name)?;
        let problem = Arc::new(problem);
        let mut seconds = vec![Vec::new(); rates.len()];
        let mut audited = vec![0u64; rates.len()];
        let mut solutions = None;
        for _ in 0..AUDIT_ROUNDS {
            for (k, &rate) in rates.iter().enumerate() {
                let audit = AuditConfig {
                    rate,
                    ..AuditConfig::default()
                };
                let cluster = Cluster::start(tls, audit).await?;
                let (summary, took) =
                    enumerate_summary(&cluster.server.pool, &problem, stream).await?;
                cluster.shutdown().await?;
                if summary.reason != EndReason::Complete {
                    return Err(CliError::Failed(format!(
                        "{name} at audit rate {rate}: the job ended {:?}: {:?}",
                        summary.reason, summary.failure
                    )));
                }
                if *solutions.get_or_insert(summary.solutions) != summary.solutions {
                    return Err(CliError::Failed(format!(
                        "{name}: counts differ across audit rates"
                    )));
                }
                seconds[k].push(took);
                audited[k] += summary.leases_audited;
            }
        }
        let medians: Vec<f64> = seconds.iter_mut().map(|s| median(s)).collect();
        for (k, &rate) in rates.iter().enumerate() {
            let cost = 100.0 * (medians[k] / medians[0] - 1.0);
            let audited = audited[k] as f64 / AUDIT_ROUNDS as f64;
            out.row(
                "audit",
                json!({
                    "instance": name,
                    "stream": stream,
                    "tls": tls.is_some(),
                    "solutions": solutions,
                    "audit_rate": rate,
                    "leases_audited": num(audited),
                    "remote_s": num(medians[k]),
                    "rounds_s": seconds[k].iter().map(|&t| num(t)).collect::<Vec<_>>(),
                    "cost_pct": num(cost),
                }),
            );
            out.text(format_args!(
                "{:<12} {:>7} {:>10} {:>7} {:>9.1} {:>9.3} {:>7.1}%",
                name,
                stream,
                solutions.unwrap_or(0),
                rate,
                audited,
                medians[k],
                cost
            ));
        }
    }
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
