//! `xccd bench --scale`: how many workers one coordinator serves.
//!
//! For each N (10, 100, 1,000 by default) a fresh coordinator (`xccd serve
//! --threads 0`, a child process, so that its CPU time and memory are its
//! own) takes N simulated workers ([`SimWorker`]: the real protocol over
//! loopback gRPC, each lease run inline for a few nodes, then checkpointed)
//! and counts an instance through its API. The workload is thus a stream of
//! tiny leases: each is granted, checked and booked by the coordinator, and
//! the count must come out exact.
//!
//! Per N: leases and solutions per second; the coordinator's CPU while the
//! count runs (cores, and microseconds per lease) and while the N workers
//! are only connected; its memory per connected idle worker (resident set
//! with the N workers connected less that with none, over N); and the time
//! from a worker freeing its slot to its next lease (p50, p99, in the middle
//! 80 % of the count, when work is queued: not the ramp-up or the end). The
//! simulated workers run in this process, on one thread, so the
//! coordinator has the other core of a 2-core machine.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::watch;
use xccd::service::cluster::sim::{SimReport, SimWorker};
use xccd::service::credentials::WorkerToken;
use xccd::service::metrics as metric;
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;
use xccd::xcc::{CountOnly, RunConfig, Solver, Task};

use super::bench_out::{num, Rows};
use super::bench_set::BenchSet;
use super::CliError;

/// The token of this benchmark's workers (loopback only, for one run).
const TOKEN: &str = "bench-scale-worker-token";
/// The instance counted through the coordinator.
const INSTANCE: &str = "queens13";
/// The goals of issue 14.
const GOAL_WORKERS: usize = 1000;
const GOAL_LEASES_PER_S: f64 = 20_000.0;
const GOAL_KIB_PER_WORKER: f64 = 50.0;
/// /proc's clock ticks per second (USER_HZ, 100 on every Linux port).
const USER_HZ: f64 = 100.0;

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::Failed(e.to_string())
}

/// One row of the table.
pub struct ScaleRow {
    pub workers: usize,
    pub leases: u64,
    pub seconds: f64,
    pub leases_per_s: f64,
    pub solutions_per_s: f64,
    /// The coordinator's CPU while counting, in cores.
    pub coordinator_cores: f64,
    pub cpu_us_per_lease: f64,
    /// This process's (the simulated workers') CPU while counting, in cores.
    pub workers_cores: f64,
    /// The coordinator's CPU with the workers connected and idle, in cores.
    pub idle_cores: f64,
    pub kib_per_idle_worker: f64,
    pub p50_wait_ms: f64,
    pub p99_wait_ms: f64,
    /// Sessions' looks at their leases per lease while counting
    /// (`xccd_session_looks_total`): what a lease costs the coordinator in
    /// wake-ups, counted, not timed.
    pub looks_per_lease: f64,
    /// The looks, by cause.
    pub looks: BTreeMap<String, f64>,
}

fn print_header(out: Rows, lease_nodes: u64) {
    out.text(format_args!(
        "coordinator scale: `xccd serve --threads 0` (child process) with N simulated workers over loopback gRPC"
    ));
    out.text(format_args!(
        "workload: count {INSTANCE}, each lease run for at most {lease_nodes} nodes then checkpointed"
    ));
    out.text(format_args!(
        "goals: {GOAL_WORKERS} workers on one coordinator core, >= {GOAL_LEASES_PER_S:.0} leases/s, <= {GOAL_KIB_PER_WORKER:.0} KiB per idle worker"
    ));
    out.text(format_args!(
        "{:>7} {:>8} {:>7} {:>9} {:>10} {:>7} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8} {:>9}  goals",
        "workers",
        "leases",
        "secs",
        "leases/s",
        "sol/s",
        "coord",
        "us/lease",
        "workers",
        "idle",
        "KiB/idle",
        "p50 ms",
        "p99 ms",
        "looks/lse"
    ));
}

/// Prints a row (one place, so that other formats can hook in here).
fn print_row(out: Rows, row: &ScaleRow) {
    let mut goals = Vec::new();
    if row.workers >= GOAL_WORKERS {
        goals.push(if row.coordinator_cores <= 1.0 {
            "1 core ok"
        } else {
            "1 core MISSED"
        });
    }
    goals.push(if row.leases_per_s >= GOAL_LEASES_PER_S {
        "leases ok"
    } else {
        "leases MISSED"
    });
    // With few workers the process's fixed costs (buffers, allocator
    // arenas) outweigh theirs: memory per worker means something from 100.
    if row.workers >= 100 {
        goals.push(if row.kib_per_idle_worker <= GOAL_KIB_PER_WORKER {
            "memory ok"
        } else {
            "memory MISSED"
        });
    }
    out.row(
        "scale",
        json!({
            "workers": row.workers,
            "leases": row.leases,
            "seconds": num(row.seconds),
            "leases_per_s": num(row.leases_per_s),
            "solutions_per_s": num(row.solutions_per_s),
            "coordinator_cores": num(row.coordinator_cores),
            "cpu_us_per_lease": num(row.cpu_us_per_lease),
            "workers_cores": num(row.workers_cores),
            "idle_cores": num(row.idle_cores),
            "kib_per_idle_worker": num(row.kib_per_idle_worker),
            "p50_wait_ms": num(row.p50_wait_ms),
            "p99_wait_ms": num(row.p99_wait_ms),
            "looks_per_lease": num(row.looks_per_lease),
            "looks": row.looks,
            "goal_leases_per_s": GOAL_LEASES_PER_S,
            "goal_kib_per_idle_worker": GOAL_KIB_PER_WORKER,
            "goals": goals.join(", "),
        }),
    );
    out.text(format_args!(
        "{:>7} {:>8} {:>7.2} {:>9.0} {:>10.0} {:>7.2} {:>8.1} {:>8.2} {:>8.3} {:>9.1} {:>8.2} {:>8.2} {:>9.3}  {}",
        row.workers,
        row.leases,
        row.seconds,
        row.leases_per_s,
        row.solutions_per_s,
        row.coordinator_cores,
        row.cpu_us_per_lease,
        row.workers_cores,
        row.idle_cores,
        row.kib_per_idle_worker,
        row.p50_wait_ms,
        row.p99_wait_ms,
        row.looks_per_lease,
        goals.join(", ")
    ));
}

/// CPU seconds (user and system) of a process so far.
fn cpu_seconds(pid: &str) -> Result<f64, CliError> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(failed)?;
    // The fields after the command's name, which is in parentheses.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| failed("an unreadable /proc stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15, counted from 1 with the pid and
    // the name: 12 and 13 here.
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => Ok((user + system) as f64 / USER_HZ),
        _ => Err(failed("an unreadable /proc stat")),
    }
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: &str) -> Result<f64, CliError> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(failed)?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .ok_or_else(|| failed("no VmRSS in /proc status"))
}

fn free_port() -> Result<SocketAddr, CliError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(failed)?;
    listener.local_addr().map_err(failed)
}

/// A coordinator in a child process; killed when dropped.
struct Coordinator {
    child: Child,
    api: SocketAddr,
    workers: SocketAddr,
    metrics: SocketAddr,
}

impl Coordinator {
    fn start() -> Result<Coordinator, CliError> {
        let (api, workers, metrics) = (free_port()?, free_port()?, free_port()?);
        let log = std::env::temp_dir().join("xccd-bench-scale-coordinator.log");
        let child = Command::new(std::env::current_exe().map_err(failed)?)
            .args(["serve", "--threads", "0", "--data-dir", "none"])
            .arg("--listen")
            .arg(api.to_string())
            .arg("--worker-listen")
            .arg(workers.to_string())
            .arg("--metrics-listen")
            .arg(metrics.to_string())
            .env("RUST_LOG", "warn")
            .env("XCCD_WORKER_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).map_err(failed)?)
            .spawn()
            .map_err(|e| failed(format!("cannot start the coordinator: {e}")))?;
        let coordinator = Coordinator {
            child,
            api,
            workers,
            metrics,
        };
        let start = Instant::now();
        while TcpStream::connect(api).is_err() || TcpStream::connect(workers).is_err() {
            if start.elapsed() > Duration::from_secs(20) {
                return Err(failed(format!(
                    "the coordinator did not listen within 20 s (see {})",
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(coordinator)
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// Its sessions' looks at their leases so far, by cause
    /// (`xccd_session_looks_total` on its `/metrics`).
    fn session_looks(&self) -> Result<BTreeMap<String, f64>, CliError> {
        use std::io::{Read, Write};
        let mut stream = TcpStream::connect(self.metrics).map_err(failed)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(failed)?;
        write!(
            stream,
            "GET /metrics HTTP/1.0\r\nHost: {}\r\n\r\n",
            self.metrics
        )
        .map_err(failed)?;
        let mut page = String::new();
        stream.read_to_string(&mut page).map_err(failed)?;
        // Lines such as `xccd_session_looks_total{cause="hunger"} 30846`.
        Ok(page
            .lines()
            .filter_map(|line| line.strip_prefix(metric::SESSION_LOOKS))
            .filter_map(|rest| {
                let (labels, value) = rest.rsplit_once(' ')?;
                let cause = labels.split('"').nth(1).unwrap_or("").to_string();
                Some((cause, value.parse::<f64>().ok()?))
            })
            .collect())
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the table for each count of workers.
pub fn run(set: &BenchSet, workers: &[usize], lease_nodes: u64, out: Rows) -> Result<(), CliError> {
    let (problem, text) = set.load(INSTANCE)?;
    let expected = Solver::new(&problem)
        .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
        .map_err(failed)?
        .stats
        .solutions;
    // One thread for the simulated workers: the coordinator has the other.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(failed)?;
    print_header(out, lease_nodes);
    for &n in workers {
        let row = runtime.block_on(measure(n, &text, expected, lease_nodes))?;
        print_row(out, &row);
    }
    Ok(())
}

async fn measure(
    n: usize,
    text: &str,
    expected: u64,
    lease_nodes: u64,
) -> Result<ScaleRow, CliError> {
    let coordinator = Coordinator::start()?;
    let pid = coordinator.pid();
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", coordinator.api))
        .map_err(failed)?
        .connect()
        .await
        .map_err(failed)?;
    let mut client = SolverServiceClient::new(channel);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_before = rss_kib(&pid)?;

    // N workers connect, in waves (a listen backlog is finite).
    let token = WorkerToken::new(TOKEN).map_err(failed)?;
    let url = format!("http://{}", coordinator.workers);
    let (stop, stopped) = watch::channel(false);
    let mut running = Vec::with_capacity(n);
    for wave in (0..n).step_by(50) {
        let connecting: Vec<_> = (wave..n.min(wave + 50))
            .map(|i| {
                let (url, token) = (url.clone(), token.clone());
                tokio::spawn(async move {
                    SimWorker::connect(&url, Some(&token), &format!("sim-{i}")).await
                })
            })
            .collect();
        for handle in connecting {
            let worker = handle.await.map_err(failed)?.map_err(failed)?;
            running.push(tokio::spawn(worker.run(lease_nodes, stopped.clone())));
        }
    }
    // Connected and idle, heartbeating.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_cpu = cpu_seconds(&pid)?;
    let idle_start = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_cores = (cpu_seconds(&pid)? - idle_cpu) / idle_start.elapsed().as_secs_f64();
    let rss_idle = rss_kib(&pid)?;

    // The count.
    let looks_start = coordinator.session_looks()?;
    let (cpu_start, own_start) = (cpu_seconds(&pid)?, cpu_seconds("self")?);
    let start = Instant::now();
    let request = pb::EnumerateRequest {
        problem: Some(pb::Problem {
            source: Some(pb::problem::Source::Dlx(text.to_string())),
        }),
        count_only: true,
        progress_interval_seconds: 60.0,
        ..Default::default()
    };
    let mut stream = client
        .enumerate(request)
        .await
        .map_err(failed)?
        .into_inner();
    let summary = loop {
        match stream.message().await.map_err(failed)? {
            Some(pb::EnumerateResponse {
                event: Some(pb::enumerate_response::Event::Summary(summary)),
            }) => break summary,
            Some(_) => {}
            None => return Err(failed("the count ended without a summary")),
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds(&pid)? - cpu_start;
    let own = cpu_seconds("self")? - own_start;
    let looks: BTreeMap<String, f64> = coordinator
        .session_looks()?
        .into_iter()
        .map(|(cause, n)| {
            let before = looks_start.get(&cause).copied().unwrap_or(0.0);
            (cause, n - before)
        })
        .collect();
    let _ = stop.send(true);
    let mut reports: Vec<SimReport> = Vec::with_capacity(n);
    for handle in running {
        reports.push(handle.await.map_err(failed)?);
    }
    drop(coordinator);

    if summary.solutions != expected || summary.reason != pb::EndReason::Complete as i32 {
        return Err(failed(format!(
            "{n} workers: {} solutions ({:?}), expected {expected}",
            summary.solutions, summary.reason
        )));
    }
    if let Some(error) = reports.iter().find_map(|r| r.error.as_ref()) {
        return Err(failed(format!("a simulated worker: {error}")));
    }
    let reported: u64 = reports.iter().map(|r| r.solutions).sum();
    if reported != expected {
        return Err(failed(format!(
            "{n} workers reported {reported} solutions, expected {expected}"
        )));
    }
    let leases: u64 = reports.iter().map(|r| r.leases).sum();
    // Waits in the middle 80 % of the count: at its start and end the
    // workers wait for work that does not exist yet or any more, which is
    // the search's shape, not the coordinator's speed.
    let (from, to) = (
        start + Duration::from_secs_f64(seconds * 0.1),
        start + Duration::from_secs_f64(seconds * 0.9),
    );
    let mut waits: Vec<Duration> = reports
        .into_iter()
        .flat_map(|r| r.waits)
        .filter(|&(freed, _)| freed >= from && freed <= to)
        .map(|(_, wait)| wait)
        .collect();
    waits.sort_unstable();
    let quantile = |q: f64| {
        waits
            .get(((waits.len() as f64 * q) as usize).min(waits.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    Ok(ScaleRow {
        workers: n,
        leases,
        seconds,
        leases_per_s: leases as f64 / seconds,
        solutions_per_s: expected as f64 / seconds,
        coordinator_cores: cpu / seconds,
        cpu_us_per_lease: cpu * 1e6 / leases.max(1) as f64,
        workers_cores: own / seconds,
        idle_cores,
        kib_per_idle_worker: (rss_idle - rss_before) / n.max(1) as f64,
        p50_wait_ms: quantile(0.50),
        p99_wait_ms: quantile(0.99),
        looks_per_lease: looks.values().sum::<f64>() / leases.max(1) as f64,
        looks,
    })
}
