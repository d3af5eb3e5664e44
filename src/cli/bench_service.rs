//! `xccd bench --service`: the worker pool and the gRPC service, measured.
//!
//! - parallel speedup: the same count with a pool of 2 workers and of 1;
//! - streaming: every solution of an instance sent to a client over
//!   loopback, one message each and packed, against counting them in
//!   process on the same two workers;
//! - latency: Solve calls on a sudoku while an enumeration keeps every
//!   worker busy, against the goal of issue 14 (p99 within 10 ms);
//! - getjob: GetJob(max_solutions=1) on a job keeping 100,000 solutions,
//!   and Solve(queens8) while two clients poll it (issue 24);
//! - durable: a durable job with every solution stored, on SQLite and on
//!   PostgreSQL, against the same job kept in memory;
//! - searches: a memoized count (DLX6) and the cheapest solutions (DLX5)
//!   through Solve over loopback against the library's own call, the same
//!   answer checked.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;
use xccd::service::server::{start, RunningServer, ServeConfig};
use xccd::service::{JobSpec, Pool, PoolConfig};
use xccd::xcc::{Engine, Problem};

use super::bench_out::{num, Rows};
use super::bench_set::BenchSet;
use super::CliError;

/// The goal for the 99th percentile of a small Solve during a saturating
/// enumeration, in milliseconds.
const LATENCY_GOAL_P99_MS: f64 = 10.0;
/// Solve calls measured.
const LATENCY_CALLS: usize = 500;

fn pool_count(problem: &Arc<Problem>, threads: usize) -> Result<(u64, f64, u64), CliError> {
    let pool = Pool::new(PoolConfig {
        threads,
        max_jobs: 1,
        ..PoolConfig::default()
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(e.to_string()))?;
    runtime.block_on(count(&pool, problem))
}

/// Counts the solutions of `problem` on `pool`: solutions, seconds, nodes.
pub(super) async fn count(
    pool: &Pool,
    problem: &Arc<Problem>,
) -> Result<(u64, f64, u64), CliError> {
    enumerate(pool, problem, false).await
}

/// Enumerates `problem` on `pool`, streaming every solution to this task
/// when `stream` (else counting): solutions, seconds, nodes.
pub(super) async fn enumerate(
    pool: &Pool,
    problem: &Arc<Problem>,
    stream: bool,
) -> Result<(u64, f64, u64), CliError> {
    let (summary, seconds) = enumerate_summary(pool, problem, stream).await?;
    Ok((summary.solutions, seconds, summary.stats.nodes))
}

/// As [`enumerate`]: the job's summary, and the seconds it took.
pub(super) async fn enumerate_summary(
    pool: &Pool,
    problem: &Arc<Problem>,
    stream: bool,
) -> Result<(xccd::service::job::Summary, f64), CliError> {
    let start = Instant::now();
    let api = xccd::service::grpc::ApiConfig::default();
    let spec = JobSpec {
        delivery: if stream {
            // Buffered and batched as the server's Enumerate streams.
            xccd::service::Delivery::Stream {
                buffer_batches: api.buffer_batches,
                batch_size: api.default_batch_size,
            }
        } else {
            xccd::service::Delivery::CountOnly
        },
        // The engine the server would pick.
        engine: Engine::auto(problem),
        ..JobSpec::default()
    };
    let job = pool
        .submit(problem.clone(), spec)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let mut streamed = 0u64;
    let summary = loop {
        match job.next_event().await {
            xccd::service::job::Event::Solutions(batch) => streamed += batch.len() as u64,
            xccd::service::job::Event::Snapshot(_) => {}
            xccd::service::job::Event::Done(summary) => break summary,
        }
    };
    if stream && streamed != summary.solutions {
        return Err(CliError::Failed(format!(
            "{streamed} solutions streamed, {} counted",
            summary.solutions
        )));
    }
    Ok((summary, start.elapsed().as_secs_f64()))
}

pub fn run(set: &BenchSet, filter: Option<&str>, out: Rows) -> Result<(), CliError> {
    let wanted = |name: &str| filter.is_none_or(|f| name.contains(f));
    if wanted("speedup") {
        out.text("parallel speedup (count only, pool of N worker threads)");
        out.text(format_args!(
            "{:<12} {:>10} {:>12} {:>9} {:>9} {:>8}",
            "instance", "solutions", "nodes", "1 thr s", "2 thr s", "speedup"
        ));
        for name in ["queens15", "pent6x10"] {
            let (problem, _) = set.load(name)?;
            let problem = Arc::new(problem);
            let (s1, t1, n1) = pool_count(&problem, 1)?;
            let (s2, t2, n2) = pool_count(&problem, 2)?;
            if s1 != s2 || n1 != n2 {
                return Err(CliError::Failed(format!(
                    "{name}: 1 and 2 threads disagree ({s1}/{n1} vs {s2}/{n2})"
                )));
            }
            out.row(
                "speedup",
                json!({
                    "instance": name,
                    "solutions": s1,
                    "nodes": n1,
                    "threads_1_s": num(t1),
                    "threads_2_s": num(t2),
                    "speedup": num(t1 / t2),
                }),
            );
            out.text(format_args!(
                "{:<12} {:>10} {:>12} {:>9.3} {:>9.3} {:>8.2}",
                name,
                s1,
                n1,
                t1,
                t2,
                t1 / t2
            ));
        }
    }
    let runtime = tokio::runtime::Runtime::new().map_err(|e| CliError::Failed(e.to_string()))?;
    if wanted("stream") {
        runtime.block_on(streaming(set, out))?;
    }
    if wanted("latency") {
        runtime.block_on(latency(set, out))?;
    }
    if wanted("durable") {
        runtime.block_on(durability(set, out))?;
    }
    if wanted("getjob") {
        runtime.block_on(get_job(set, out))?;
    }
    if wanted("searches") {
        runtime.block_on(searches(set, out))?;
    }
    Ok(())
}

/// Runs of each side of the searches table; the best counts.
const SEARCH_RUNS: usize = 3;

/// A memoized count and the K cheapest solutions, each through Solve on a
/// server over loopback and by the library's call in this process: the
/// same answer, and what the service adds to its time.
async fn searches(set: &BenchSet, out: Rows) -> Result<(), CliError> {
    use xccd::xcc::{cheapest, memo};
    let failed = |e: &dyn std::fmt::Display| CliError::Failed(e.to_string());
    let server = start_server(2).await?;
    let mut client = client(server.addr).await?;
    out.text("");
    out.text(format_args!(
        "own searches through Solve over loopback against the library in process (best of {SEARCH_RUNS})"
    ));
    out.text(format_args!(
        "{:<12} {:<12} {:>14} {:>10} {:>10} {:>7}",
        "instance", "search", "answer", "library s", "service s", "ratio"
    ));
    let (memo_problem, memo_text) = {
        let problem = set.load_memo("domino10x10")?;
        let text = xccd::xcc::dlx_format::to_string(&problem);
        (problem, text)
    };
    let (cost_problem, cost_text) = set.load_costs("cover46")?;
    for search in ["memo", "cheapest"] {
        let (name, problem, text) = match search {
            "memo" => ("domino10x10", &memo_problem, &memo_text),
            _ => ("cover46", &cost_problem, &cost_text),
        };
        let (mut library, mut service) = (f64::INFINITY, f64::INFINITY);
        let (mut expected, mut got) = (String::new(), String::new());
        for _ in 0..SEARCH_RUNS {
            let start = Instant::now();
            expected = match search {
                "memo" => memo::count(problem, &memo::MemoConfig::default())
                    .map_err(|e| failed(&e))?
                    .zdd
                    .count()
                    .to_string(),
                _ => {
                    let found = cheapest::cheapest(problem, &cheapest::CheapestConfig::new(10))
                        .map_err(|e| failed(&e))?;
                    let mut costs: Vec<u64> = found.solutions.iter().map(|s| s.cost).collect();
                    costs.sort_unstable();
                    format!("{:?}", costs)
                }
            };
            library = library.min(start.elapsed().as_secs_f64());
            let start = Instant::now();
            let response = client
                .solve(pb::SolveRequest {
                    problem: dlx(text.clone()),
                    memo: search == "memo",
                    cheapest: if search == "cheapest" { 10 } else { 0 },
                    ..Default::default()
                })
                .await
                .map_err(|e| failed(&e))?
                .into_inner();
            service = service.min(start.elapsed().as_secs_f64());
            got = match search {
                "memo" => response.statistics.unwrap_or_default().solutions_decimal,
                _ => {
                    let mut costs: Vec<u64> = response.solutions.iter().map(|s| s.cost).collect();
                    costs.sort_unstable();
                    format!("{:?}", costs)
                }
            };
        }
        if got != expected {
            return Err(CliError::Failed(format!(
                "{name} {search}: the service answered {got}, the library {expected}"
            )));
        }
        let answer = match search {
            "memo" => expected.clone(),
            _ => "10 costs".to_string(),
        };
        out.row(
            "searches",
            json!({
                "instance": name,
                "search": search,
                "answer": expected,
                "library_s": num(library),
                "service_s": num(service),
                "ratio": num(service / library),
            }),
        );
        out.text(format_args!(
            "{:<12} {:<12} {:>14} {:>10.4} {:>10.4} {:>7.2}",
            name,
            search,
            answer,
            library,
            service,
            service / library
        ));
    }
    let _ = server.shutdown().await;
    Ok(())
}

/// CPU seconds this process has used (user and system; Linux's
/// /proc/self/stat, NaN elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command's closing parenthesis: utime is the 14th
    // field of the line, stime the 15th, in clock ticks (100 a second).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => f64::NAN,
    }
}

/// Runs a submitted job to its end through `server`; returns its seconds
/// and message.
async fn submitted(
    server: &xccd::service::server::RunningServer,
    text: &str,
) -> Result<(f64, pb::Job), CliError> {
    let failed = |e: tonic::Status| CliError::Failed(e.to_string());
    let mut client = client(server.addr).await?;
    let start = Instant::now();
    let name = client
        .create_job(pb::CreateJobRequest {
            source: dlx(text.to_string()).map(pb::create_job_request::Source::Problem),
            ..Default::default()
        })
        .await
        .map_err(failed)?
        .into_inner()
        .job
        .expect("CreateJob returns the job")
        .name;
    loop {
        let job = client
            .get_job(pb::GetJobRequest {
                name: name.clone(),
                max_solutions: 1,
            })
            .await
            .map_err(failed)?
            .into_inner()
            .job
            .unwrap_or_default();
        if job.state().is_final() {
            return Ok((start.elapsed().as_secs_f64(), job));
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// One run of a durable job on a store: its seconds, CPU seconds (of this
/// process), the job, and the seconds to read its solutions back (plain
/// and packed).
struct StoredRun {
    seconds: f64,
    cpu: f64,
    solutions: u64,
    read_s: f64,
    packed_read_s: f64,
}

/// Runs `text` as a durable job on a server of `config`, checks that
/// every solution is stored (as many as `memory_solutions`, the
/// memory-only run's) and reads them all back.
async fn stored_run(
    name: &str,
    text: &str,
    config: ServeConfig,
    memory_solutions: u64,
) -> Result<StoredRun, CliError> {
    let server = start(config)
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let cpu = cpu_seconds();
    let (seconds, job) = submitted(&server, text).await?;
    let cpu = cpu_seconds() - cpu;
    let solutions = job.summary.as_ref().map_or(0, |s| s.solutions);
    if job.stored_solutions != solutions || solutions != memory_solutions {
        return Err(CliError::Failed(format!(
            "{name}: {} stored of {solutions} found ({memory_solutions} in memory)",
            job.stored_solutions
        )));
    }
    let mut client = client(server.addr).await?;
    let (read, read_s) = read_stored(&mut client, &job.name, false).await?;
    let (packed_read, packed_read_s) = read_stored(&mut client, &job.name, true).await?;
    let _ = server.shutdown().await;
    if read != solutions || packed_read != solutions {
        return Err(CliError::Failed(format!(
            "{name}: read back {read} (packed: {packed_read}) of {solutions} stored solutions"
        )));
    }
    Ok(StoredRun {
        seconds,
        cpu,
        solutions,
        read_s,
        packed_read_s,
    })
}

/// The goal of issue 29: a durable queens15 on PostgreSQL at most this many
/// times a memory-only one.
const POSTGRES_GOAL: f64 = 1.5;

/// The cost of the job store: a submitted job with every solution stored
/// against the same job kept in memory (its first 100 solutions), the
/// bytes a stored solution takes on disk, and reading them all back; on
/// the SQLite store, and on PostgreSQL (a server of the bench's own, where
/// PostgreSQL is installed; `XCCD_BENCH_STORE_URL` names another, whose
/// database must be empty of jobs).
async fn durability(set: &BenchSet, out: Rows) -> Result<(), CliError> {
    let name = "queens15";
    let (_, text) = set.load(name)?;
    let memory_server = start_server(2).await?;
    let cpu = cpu_seconds();
    let (memory_s, memory_job) = submitted(&memory_server, &text).await?;
    let memory_cpu = cpu_seconds() - cpu;
    let _ = memory_server.shutdown().await;
    let memory_solutions = memory_job.summary.as_ref().map_or(0, |s| s.solutions);
    let data = std::env::temp_dir().join(format!("xccd-bench-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let sqlite = stored_run(
        name,
        &text,
        ServeConfig {
            data_dir: Some(data.clone()),
            ..local_server_config(2)
        },
        memory_solutions,
    )
    .await?;
    let bytes: u64 = std::fs::read_dir(&data)
        .map_err(|e| CliError::Failed(e.to_string()))?
        .filter_map(|entry| entry.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    let _ = std::fs::remove_dir_all(&data);
    let postgres = match postgres_run(name, &text, memory_solutions).await? {
        Some(run) => Some(run),
        None => {
            out.text("durable_postgres: skipped, no PostgreSQL (install Debian's postgresql, or set XCCD_BENCH_STORE_URL)");
            None
        }
    };
    let mut rows = vec![("durable", sqlite, bytes)];
    rows.extend(postgres.map(|(run, bytes)| ("durable_postgres", run, bytes)));
    out.text("");
    out.text("durable jobs (CreateJob, 2 workers): every solution stored vs kept in memory");
    out.text(format_args!(
        "{:<16} {:<9} {:>10} {:>9} {:>9} {:>6} {:>10} {:>10} {:>11} {:>6} {:>7} {:>13}",
        "store",
        "instance",
        "solutions",
        "memory s",
        "stored s",
        "ratio",
        "mem cpu s",
        "store cpu s",
        "store bytes",
        "B/sol",
        "read s",
        "packed read s"
    ));
    for (row, run, bytes) in rows {
        let ratio = run.seconds / memory_s;
        let mut fields = json!({
            "instance": name,
            "solutions": run.solutions,
            "memory_s": num(memory_s),
            "stored_s": num(run.seconds),
            "ratio": num(ratio),
            "memory_cpu_s": num(memory_cpu),
            "store_cpu_s": num(run.cpu),
            "store_bytes": bytes,
            "bytes_per_solution": num(bytes as f64 / run.solutions.max(1) as f64),
            "read_s": num(run.read_s),
            "packed_read_s": num(run.packed_read_s),
        });
        if row == "durable_postgres" {
            fields["solutions_per_s"] = num(run.solutions as f64 / run.seconds);
            fields["goal_ratio"] = num(POSTGRES_GOAL);
            fields["meets_goal"] = json!(ratio <= POSTGRES_GOAL);
        }
        out.row(row, fields);
        out.text(format_args!(
            "{:<16} {:<9} {:>10} {:>9.3} {:>9.3} {:>6.2} {:>10.2} {:>10.2} {:>11} {:>6.1} {:>7.3} {:>13.3}",
            if row == "durable" { "sqlite" } else { "postgres" },
            name,
            run.solutions,
            memory_s,
            run.seconds,
            ratio,
            memory_cpu,
            run.cpu,
            bytes,
            bytes as f64 / run.solutions.max(1) as f64,
            run.read_s,
            run.packed_read_s
        ));
    }
    Ok(())
}

/// The durable run on PostgreSQL, with the bytes its tables take; None
/// when there is no PostgreSQL to run on.
async fn postgres_run(
    name: &str,
    text: &str,
    memory_solutions: u64,
) -> Result<Option<(StoredRun, u64)>, CliError> {
    use xccd::service::store::local_postgres::{self, LocalPostgres};
    let failed = |e: String| CliError::Failed(format!("PostgreSQL: {e}"));
    let (url, local) = match std::env::var("XCCD_BENCH_STORE_URL") {
        Ok(url) if !url.is_empty() => (url, None),
        _ if local_postgres::bin_dir().is_none() => return Ok(None),
        _ => {
            let local = tokio::task::spawn_blocking(LocalPostgres::start)
                .await
                .map_err(|e| failed(e.to_string()))?
                .map_err(failed)?;
            (local.url(), Some(local))
        }
    };
    let run = stored_run(
        name,
        text,
        ServeConfig {
            store_url: Some(url.clone()),
            ..local_server_config(2)
        },
        memory_solutions,
    )
    .await?;
    // The sync client, off the runtime's threads.
    let bytes = tokio::task::spawn_blocking(move || -> Result<u64, String> {
        let mut client =
            postgres::Client::connect(&url, postgres::NoTls)
            .map_err(|e| xccd::service::store::postgres::describe(&e))?;
        let bytes: i64 = client
            .query_one(
                "SELECT (pg_total_relation_size('solutions') + pg_total_relation_size('jobs'))::BIGINT",
                &[],
            )
            .map_err(|e| e.to_string())?
            .get(0);
        Ok(bytes as u64)
    })
    .await
    .map_err(|e| failed(e.to_string()))?
    .map_err(failed)?;
    drop(local);
    Ok(Some((run, bytes)))
}

/// Reads every stored solution of a job with ListJobSolutions, in pages of
/// 100,000, one message per solution or packed: how many, in how long.
async fn read_stored(
    client: &mut SolverServiceClient<tonic::transport::Channel>,
    name: &str,
    packed: bool,
) -> Result<(u64, f64), CliError> {
    let start = Instant::now();
    let mut read = 0u64;
    let mut token = String::new();
    loop {
        let page = client
            .list_job_solutions(pb::ListJobSolutionsRequest {
                name: name.to_string(),
                page_size: 100_000,
                page_token: token,
                include_option_text: false,
                packed_solutions: packed,
            })
            .await
            .map_err(|e| CliError::Failed(e.to_string()))?
            .into_inner();
        read += match page.packed {
            Some(batch) if packed => batch.packed_lengths.len(),
            _ => page.solutions.len(),
        } as u64;
        token = page.next_page_token;
        if token.is_empty() {
            break;
        }
    }
    Ok((read, start.elapsed().as_secs_f64()))
}

fn dlx(text: String) -> Option<pb::Problem> {
    Some(pb::Problem {
        source: Some(pb::problem::Source::Dlx(text)),
    })
}

async fn client(
    addr: std::net::SocketAddr,
) -> Result<SolverServiceClient<tonic::transport::Channel>, CliError> {
    SolverServiceClient::connect(format!("http://{addr}"))
        .await
        .map_err(|e| CliError::Failed(e.to_string()))
}

fn local_server_config(threads: usize) -> ServeConfig {
    ServeConfig {
        listen: ([127, 0, 0, 1], 0).into(),
        pool: PoolConfig {
            threads,
            max_jobs: 64,
            ..PoolConfig::default()
        },
        ..ServeConfig::default()
    }
}

/// Runs of each measurement in the streaming table; the fastest counts.
const STREAM_RUNS: usize = 5;
/// The goal: streaming every solution at most this many times the count.
const STREAM_GOAL: f64 = 1.5;

/// Every solution of latin5 streamed over loopback (Enumerate, one
/// message per solution and the packed form) against counting them on the
/// same two workers in process; the fastest of a few runs of each.
async fn streaming(set: &BenchSet, out: Rows) -> Result<(), CliError> {
    let name = "latin5";
    let (problem, text) = set.load(name)?;
    let problem = Arc::new(problem);
    let pool = Pool::new(PoolConfig {
        threads: 2,
        max_jobs: 1,
        ..PoolConfig::default()
    });
    let mut in_process = f64::INFINITY;
    let mut counted = 0;
    for _ in 0..STREAM_RUNS {
        let (solutions, seconds, _) = count(&pool, &problem).await?;
        counted = solutions;
        in_process = in_process.min(seconds);
    }
    drop(pool);
    let server = start_server(2).await?;
    let mut client = client(server.addr).await?;
    out.text("");
    out.text(format_args!(
        "streaming every solution over loopback (Enumerate) against counting them in process \
         (2 workers each, best of {STREAM_RUNS})"
    ));
    out.text(format_args!(
        "{:<8} {:<8} {:>10} {:>9} {:>10} {:>11} {:>7} {:>6} {:>12}",
        "instance",
        "form",
        "solutions",
        "messages",
        "count s",
        "streamed s",
        "ratio",
        "goal",
        "solutions/s"
    ));
    for packed in [false, true] {
        let mut streamed = f64::INFINITY;
        let mut messages = 0;
        for _ in 0..STREAM_RUNS {
            let (received, sent, seconds) = stream_all(&mut client, &text, packed).await?;
            if received != counted {
                return Err(CliError::Failed(format!(
                    "{name}: streamed {received} solutions, counted {counted}"
                )));
            }
            messages = sent;
            streamed = streamed.min(seconds);
        }
        let form = if packed { "packed" } else { "messages" };
        out.row(
            "stream",
            json!({
                "instance": name,
                "form": form,
                "solutions": counted,
                "messages": messages,
                "in_process_s": num(in_process),
                "streamed_s": num(streamed),
                "ratio": num(streamed / in_process),
                "goal_ratio": STREAM_GOAL,
                "solutions_per_s": num(counted as f64 / streamed),
            }),
        );
        out.text(format_args!(
            "{:<8} {:<8} {:>10} {:>9} {:>10.3} {:>11.3} {:>7.2} {:>6} {:>12.0}",
            name,
            form,
            counted,
            messages,
            in_process,
            streamed,
            streamed / in_process,
            format!("{STREAM_GOAL}"),
            counted as f64 / streamed
        ));
    }
    let _ = server.shutdown().await;
    Ok(())
}

/// Streams every solution of `text`: solutions received, messages, seconds.
async fn stream_all(
    client: &mut SolverServiceClient<tonic::transport::Channel>,
    text: &str,
    packed: bool,
) -> Result<(u64, u64, f64), CliError> {
    let start = Instant::now();
    let mut stream = client
        .enumerate(pb::EnumerateRequest {
            problem: dlx(text.to_string()),
            packed_solutions: packed,
            ..Default::default()
        })
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?
        .into_inner();
    let mut received = 0u64;
    let mut messages = 0u64;
    while let Some(message) = stream
        .message()
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?
    {
        messages += 1;
        if let Some(pb::enumerate_response::Event::Solutions(batch)) = message.event {
            received += if packed {
                // The indices are all there, as wide as the batch says.
                xccd::service::convert::packed_width(&batch).map_err(CliError::Failed)?;
                batch.packed_lengths.len()
            } else {
                batch.solutions.len()
            } as u64;
        }
    }
    Ok((received, messages, start.elapsed().as_secs_f64()))
}

async fn start_server(threads: usize) -> Result<xccd::service::server::RunningServer, CliError> {
    start(local_server_config(threads))
        .await
        .map_err(|e| CliError::Failed(e.to_string()))
}

/// Small Solve calls (sudoku_hard17, one after another) while a count of
/// queens15 holds every worker of an in-process pool of 2 threads: the
/// latency a client sees, against the goal.
async fn latency(set: &BenchSet, out: Rows) -> Result<(), CliError> {
    let server = start_server(2).await?;
    let measured = latency_on(&server, "local threads", 2, set, out).await;
    let _ = server.shutdown().await;
    measured
}

/// [`latency`] on a running server whose `workers` task slots (on `path`:
/// local threads or remote workers) the enumeration is to hold.
pub(super) async fn latency_on(
    server: &RunningServer,
    path: &str,
    workers: usize,
    set: &BenchSet,
    out: Rows,
) -> Result<(), CliError> {
    let (_, big) = set.load("queens15")?;
    let (_, sudoku) = set.load("sudoku_hard17")?;
    let mut background = client(server.addr).await?;
    let mut enumeration = background
        .enumerate(pb::EnumerateRequest {
            problem: dlx(big),
            count_only: true,
            ..Default::default()
        })
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?
        .into_inner();
    // Let the enumeration fill the pool first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let busy_before = server.pool.busy_workers();
    let mut client = client(server.addr).await?;
    let mut times = Vec::new();
    // The time from the job's start to its end in the pool (waiting for a
    // worker, and running): the rest of a call is gRPC and the runtime.
    let mut in_pool = Vec::new();
    for _ in 0..LATENCY_CALLS {
        let start = Instant::now();
        let reply = client
            .solve(pb::SolveRequest {
                problem: dlx(sudoku.clone()),
                limit: 2,
                ..Default::default()
            })
            .await
            .map_err(|e| CliError::Failed(e.to_string()))?
            .into_inner();
        times.push(start.elapsed().as_secs_f64() * 1e3);
        in_pool.push(
            reply
                .statistics
                .as_ref()
                .map_or(f64::NAN, |s| s.seconds * 1e3),
        );
        if reply.solutions.len() != 1 || !reply.exhausted {
            return Err(CliError::Failed("sudoku: expected one solution".into()));
        }
    }
    // The enumeration must have held the workers until the last call.
    let throughout = server.pool.active_jobs() > 0;
    drop(enumeration.message().await);
    drop(enumeration);
    // The server stops the enumeration (its stream is gone) within a poll.
    let start = Instant::now();
    while server.pool.active_jobs() > 0 && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    times.sort_by(f64::total_cmp);
    in_pool.sort_by(f64::total_cmp);
    let pct = |times: &[f64], p: f64| {
        times[((times.len() as f64 * p).ceil() as usize).clamp(1, times.len()) - 1]
    };
    let (p50, p99, max) = (pct(&times, 0.50), pct(&times, 0.99), times[times.len() - 1]);
    let (pool_p50, pool_p99) = (pct(&in_pool, 0.50), pct(&in_pool, 0.99));
    out.row(
        "latency",
        json!({
            "call": "sudoku_hard17",
            "rpc": "Solve",
            "during": "queens15 count",
            "path": path,
            "workers": workers,
            "calls": times.len(),
            "busy_before": busy_before,
            "saturated_throughout": throughout && busy_before == workers,
            "p50_ms": num(p50),
            "p99_ms": num(p99),
            "max_ms": num(max),
            "in_pool_p50_ms": num(pool_p50),
            "in_pool_p99_ms": num(pool_p99),
            "goal_p99_ms": LATENCY_GOAL_P99_MS,
            "meets_goal": p99 <= LATENCY_GOAL_P99_MS,
        }),
    );
    out.text("");
    out.text(format_args!(
        "Solve latency during an enumeration (queens15 count) holding {workers} {path}"
    ));
    out.text(format_args!(
        "{:<14} {:>6} {:>12} {:>8} {:>8} {:>8} {:>12} {:>12} {:>12}",
        "call",
        "calls",
        "busy before",
        "p50 ms",
        "p99 ms",
        "max ms",
        "pool p50 ms",
        "pool p99 ms",
        "goal p99 ms"
    ));
    out.text(format_args!(
        "{:<14} {:>6} {:>12} {:>8.2} {:>8.2} {:>8.2} {:>12.2} {:>12.2} {:>12}",
        "sudoku_hard17",
        times.len(),
        busy_before,
        p50,
        p99,
        max,
        pool_p50,
        pool_p99,
        format!(
            "<= {LATENCY_GOAL_P99_MS:.0}{}",
            if p99 <= LATENCY_GOAL_P99_MS {
                ""
            } else {
                " (missed)"
            }
        )
    ));
    out.text("(pool: from the job's start to its end in the pool, waiting and running; the rest is gRPC)");
    if !throughout {
        out.text(
            "(the enumeration ended before the last call: the later calls ran on an idle pool)",
        );
    }
    Ok(())
}

/// GetJob calls measured on their own, and Solve calls while it is polled.
const GETJOB_CALLS: usize = 50;
const POLLED_SOLVE_CALLS: usize = 200;
/// Solutions the polled job keeps (the server's largest keep_solutions).
const GETJOB_KEPT: u32 = 100_000;

/// The p50 and p99 of `times` (sorted here), and the largest.
fn percentiles(times: &mut [f64]) -> (f64, f64, f64) {
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() as f64 * p).ceil() as usize).clamp(1, times.len()) - 1];
    (pct(0.50), pct(0.99), times[times.len() - 1])
}

/// GetJob(max_solutions=1) on a job keeping 100,000 solutions of latin5,
/// on its own, and the latency of Solve(queens8) alone and while two
/// clients poll that job: a reply's cost should follow what it returns.
async fn get_job(set: &BenchSet, out: Rows) -> Result<(), CliError> {
    let failed = |e: tonic::Status| CliError::Failed(e.to_string());
    let (_, latin) = set.load("latin5")?;
    let (_, queens) = set.load("queens8")?;
    let server = start_server(2).await?;
    let mut client = client(server.addr).await?;
    let name = client
        .create_job(pb::CreateJobRequest {
            source: dlx(latin).map(pb::create_job_request::Source::Problem),
            keep_solutions: GETJOB_KEPT,
            ..Default::default()
        })
        .await
        .map_err(failed)?
        .into_inner()
        .job
        .expect("CreateJob returns the job")
        .name;
    let get = pb::GetJobRequest {
        name: name.clone(),
        max_solutions: 1,
    };
    loop {
        let job = client
            .get_job(get.clone())
            .await
            .map_err(failed)?
            .into_inner();
        if job.job.is_some_and(|j| j.state().is_final()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut alone = Vec::new();
    for _ in 0..GETJOB_CALLS {
        let start = Instant::now();
        let reply = client
            .get_job(get.clone())
            .await
            .map_err(failed)?
            .into_inner();
        alone.push(start.elapsed().as_secs_f64() * 1e3);
        if reply.solutions.len() != 1 {
            return Err(CliError::Failed(format!(
                "GetJob(max_solutions=1) returned {} solutions",
                reply.solutions.len()
            )));
        }
    }
    let solve = |client: SolverServiceClient<tonic::transport::Channel>, calls: usize| {
        let queens = queens.clone();
        async move {
            let mut client = client;
            let mut times = Vec::new();
            for _ in 0..calls {
                let start = Instant::now();
                let reply = client
                    .solve(pb::SolveRequest {
                        problem: dlx(queens.clone()),
                        ..Default::default()
                    })
                    .await
                    .map_err(failed)?
                    .into_inner();
                times.push(start.elapsed().as_secs_f64() * 1e3);
                if reply.solutions.len() != 1 {
                    return Err(CliError::Failed("queens8: expected one solution".into()));
                }
            }
            Ok(times)
        }
    };
    let mut quiet = solve(client.clone(), POLLED_SOLVE_CALLS).await?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut pollers = Vec::new();
    for _ in 0..2 {
        let mut poller = self::client(server.addr).await?;
        let (stop, get) = (stop.clone(), get.clone());
        pollers.push(tokio::spawn(async move {
            let mut polls = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if poller.get_job(get.clone()).await.is_err() {
                    break;
                }
                polls += 1;
            }
            polls
        }));
    }
    let polled = solve(client.clone(), POLLED_SOLVE_CALLS).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut polls = 0;
    for poller in pollers {
        polls += poller.await.unwrap_or(0);
    }
    let mut polled = polled?;
    let _ = server.shutdown().await;
    let (get_p50, get_p99, get_max) = percentiles(&mut alone);
    let (quiet_p50, quiet_p99, _) = percentiles(&mut quiet);
    let (polled_p50, polled_p99, polled_max) = percentiles(&mut polled);
    out.row(
        "getjob",
        json!({
            "instance": "latin5",
            "kept": GETJOB_KEPT,
            "getjob_calls": GETJOB_CALLS,
            "getjob_p50_ms": num(get_p50),
            "getjob_p99_ms": num(get_p99),
            "getjob_max_ms": num(get_max),
            "solve": "queens8",
            "solve_calls": POLLED_SOLVE_CALLS,
            "solve_p50_ms": num(quiet_p50),
            "solve_p99_ms": num(quiet_p99),
            "polled_solve_p50_ms": num(polled_p50),
            "polled_solve_p99_ms": num(polled_p99),
            "polled_solve_max_ms": num(polled_max),
            "polls": polls,
        }),
    );
    out.text("");
    out.text(format_args!(
        "GetJob(max_solutions=1) on a job keeping {GETJOB_KEPT} solutions (latin5), and \
         Solve(queens8) alone and while 2 clients poll it"
    ));
    out.text(format_args!(
        "{:<22} {:>6} {:>8} {:>8} {:>8}",
        "call", "calls", "p50 ms", "p99 ms", "max ms"
    ));
    out.text(format_args!(
        "{:<22} {:>6} {:>8.2} {:>8.2} {:>8.2}",
        "GetJob", GETJOB_CALLS, get_p50, get_p99, get_max
    ));
    out.text(format_args!(
        "{:<22} {:>6} {:>8.2} {:>8.2} {:>8}",
        "Solve(queens8)", POLLED_SOLVE_CALLS, quiet_p50, quiet_p99, ""
    ));
    out.text(format_args!(
        "{:<22} {:>6} {:>8.2} {:>8.2} {:>8.2}",
        "Solve(queens8), polled", POLLED_SOLVE_CALLS, polled_p50, polled_p99, polled_max
    ));
    out.text(format_args!("({polls} GetJob polls meanwhile)"));
    Ok(())
}
