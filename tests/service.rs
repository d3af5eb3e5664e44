//! The gRPC service end to end, over loopback: every RPC of
//! `proto/xccd/v1/solver.proto` against the in-process engine and the known
//! counts of the shared benchmark, plus cancellation, deadlines, many
//! clients, backpressure, rejections, limits, progress, health, reflection
//! and graceful shutdown.
//!
//! Each test starts its own server on `127.0.0.1:0` with a pool of two
//! workers. The tests take a global lock so that they run one at a time:
//! they measure the pool's idleness and the process's memory, which other
//! tests' servers in the same process would disturb. Every wait is bounded
//! in time (and every loop in count).
//!
//! Four tests came from bugs they found (a deadline status lost in a full
//! channel, tonic's own timeout answering CANCELLED first, oversized
//! batches, exited workers counted busy):
//! `deadline_passing_while_the_client_does_not_read`,
//! `solve_past_its_deadline`, `enumerate_batches_respect_batch_size` and
//! `no_busy_workers_after_shutdown`.

// Requests name the fields they set and default the rest, also when they
// set them all, so that they keep compiling as the contract grows.
#![allow(clippy::needless_update)]

mod common;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::{Code, Request, Status, Streaming};
use xccd::service::grpc::ApiConfig;
use xccd::service::job::Event as JobEvent;
use xccd::service::proto as pb;
use xccd::service::server::{start, RunningServer, ServeConfig};
use xccd::service::{Delivery, JobSpec, Pool, PoolConfig};
use xccd::xcc::{dlx_format, Collect, Engine, Problem, RunConfig, Solver, Task};

use common::fixtures::instance;
use common::service::{connect, create_job, dlx, wait_for, Client};
use pb::enumerate_response::Event;

/// Runs the tests one at a time (see the module's documentation).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The bound of one step that should take well under a second.
const STEP: Duration = Duration::from_secs(30);
/// The bound of a whole stream.
const STREAM: Duration = Duration::from_secs(120);
/// Most messages a test reads from one stream.
const MAX_MESSAGES: usize = 2_000_000;

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

fn bench_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/bench"))
}

/// The solution counts of `knuth-reference.tsv` (independent of this crate).
fn known_counts() -> HashMap<String, u64> {
    let table = std::fs::read_to_string(bench_dir().join("knuth-reference.tsv")).unwrap();
    table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("case") && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), f[1].parse().unwrap())
        })
        .collect()
}

fn known(name: &str) -> u64 {
    *known_counts()
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not in knuth-reference.tsv"))
}

fn parse(text: &str) -> Problem {
    dlx_format::parse(text).expect("benchmark instances parse")
}

/// Every solution, from the engine in this process.
async fn all_solutions(problem: &Problem) -> BTreeSet<Vec<u32>> {
    let problem = problem.clone();
    tokio::task::spawn_blocking(move || {
        let mut collect = Collect::default();
        Solver::new(&problem)
            .run(&Task::root(), &RunConfig::default(), &mut collect)
            .expect("the root task is valid");
        let all: BTreeSet<Vec<u32>> = collect
            .solutions
            .iter()
            .map(|s| s.iter().map(|&o| o as u32).collect())
            .collect();
        assert_eq!(all.len(), collect.solutions.len(), "in-process duplicates");
        all
    })
    .await
    .unwrap()
}

fn structured(s: pb::StructuredProblem) -> Option<pb::Problem> {
    Some(pb::Problem {
        source: Some(pb::problem::Source::Structured(s)),
    })
}

/// Translates DLX text into the structured form, independently of the
/// crate's reader (a minimal reading of the format, enough for the
/// benchmark instances: `|` comments, `u:v|name` and `v|name` bounds).
fn to_structured(text: &str) -> pb::StructuredProblem {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('|'));
    let item_line = lines.next().expect("an item line");
    let mut items = Vec::new();
    let mut secondary = false;
    for token in item_line.split_whitespace() {
        let name = if token == "|" {
            secondary = true;
            continue;
        } else if let Some(rest) = token.strip_prefix('|') {
            secondary = true;
            rest
        } else {
            token
        };
        let item = if secondary {
            pb::Item {
                name: name.to_string(),
                kind: pb::ItemKind::Secondary as i32,
                ..Default::default()
            }
        } else if let Some((bounds, name)) = name.split_once('|') {
            let (min, max) = match bounds.split_once(':') {
                Some((u, v)) => (u.parse().unwrap(), v.parse().unwrap()),
                None => (bounds.parse().unwrap(), bounds.parse().unwrap()),
            };
            pb::Item {
                name: name.to_string(),
                kind: pb::ItemKind::Primary as i32,
                min,
                max,
                ..Default::default()
            }
        } else {
            pb::Item {
                name: name.to_string(),
                kind: pb::ItemKind::Primary as i32,
                ..Default::default()
            }
        };
        items.push(item);
    }
    let options = lines
        .map(|line| pb::ProblemOption {
            entries: line
                .split_whitespace()
                .map(|t| {
                    let (item, color) = t.split_once(':').unwrap_or((t, ""));
                    pb::OptionEntry {
                        item: item.to_string(),
                        color: color.to_string(),
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    pb::StructuredProblem {
        items,
        options,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------
// Server and client helpers
// ---------------------------------------------------------------------------

fn config(max_jobs: usize) -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        pool: PoolConfig {
            threads: 2,
            max_jobs,
            ..PoolConfig::default()
        },
        metrics_listen: None,
        ..Default::default()
    }
}

async fn serve(config: ServeConfig) -> RunningServer {
    start(config).await.expect("the server starts on loopback")
}

/// Awaits `f`, failing the test if it takes longer than `limit`.
async fn within<F: Future>(what: &str, limit: Duration, f: F) -> F::Output {
    match tokio::time::timeout(limit, f).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: no answer within {limit:?}"),
    }
}

/// Waits until the pool has no job and no busy worker; returns the time.
async fn wait_idle(server: &RunningServer, limit: Duration) -> Duration {
    let pool = server.pool.clone();
    wait_for("the pool becomes idle", limit, move || {
        pool.active_jobs() == 0 && pool.busy_workers() == 0 && pool.queued_tasks() == 0
    })
    .await
}

fn indices(s: &pb::Solution) -> Vec<u32> {
    s.option_indices.clone()
}

/// Checks a solution from the server: ascending indices, an exact cover of
/// `problem` (its own check), and, when given, option texts that match.
fn check_solution(name: &str, problem: &Problem, s: &pb::Solution, with_text: bool) {
    let idx = &s.option_indices;
    assert!(
        idx.windows(2).all(|w| w[0] < w[1]),
        "{name}: indices not ascending: {idx:?}"
    );
    let chosen: Vec<usize> = idx.iter().map(|&o| o as usize).collect();
    if let Err(e) = problem.verify(&chosen) {
        panic!("{name}: the server's solution {idx:?} is not a solution: {e}");
    }
    if with_text {
        let expected: Vec<String> = chosen.iter().map(|&o| problem.format_option(o)).collect();
        assert_eq!(s.option_texts, expected, "{name}: option texts");
    } else {
        assert!(s.option_texts.is_empty(), "{name}: unasked option texts");
    }
}

/// What a stream of events delivered.
#[derive(Default, Debug)]
struct Events {
    solutions: Vec<pb::Solution>,
    batches: Vec<usize>,
    /// `packed_index_bytes` of the packed batches.
    index_bytes: BTreeSet<u32>,
    progress: Vec<pb::Progress>,
    summary: Option<pb::Summary>,
    /// Messages after the summary (there must be none).
    after_summary: usize,
    messages: usize,
}

impl Events {
    fn push(&mut self, event: Event) {
        self.messages += 1;
        if self.summary.is_some() {
            self.after_summary += 1;
        }
        match event {
            Event::Solutions(b) => {
                let packed = unpack(&b);
                assert!(
                    packed.is_empty() || b.solutions.is_empty(),
                    "a batch is packed or not, never both"
                );
                self.batches.push(b.solutions.len() + packed.len());
                if !packed.is_empty() {
                    self.index_bytes.insert(b.packed_index_bytes);
                }
                self.solutions.extend(b.solutions);
                self.solutions.extend(packed);
            }
            Event::Progress(p) => self.progress.push(p),
            Event::Summary(s) => {
                assert!(self.summary.is_none(), "two summaries");
                self.summary = Some(s);
            }
        }
    }

    fn summary(&self) -> &pb::Summary {
        assert_eq!(self.after_summary, 0, "messages after the summary");
        self.summary
            .as_ref()
            .expect("the stream ended with a summary")
    }
}

/// A problem of `n + 1` options and `n` solutions: option `i < n` covers A
/// (and a secondary item of its own), option `n` covers B, so a solution
/// holds index `n`.
fn pairs(n: usize) -> String {
    let mut text = String::from("A B |");
    for i in 0..n {
        text.push_str(&format!(" x{i}"));
    }
    text.push('\n');
    for i in 0..n {
        text.push_str(&format!("A x{i}\n"));
    }
    text.push_str("B\n");
    text
}

/// The solutions of a batch in the packed form, as Solution messages.
fn unpack(batch: &pb::SolutionBatch) -> Vec<pb::Solution> {
    common::packed::unpack(batch)
        .into_iter()
        .map(|option_indices| pb::Solution {
            option_indices,
            ..Default::default()
        })
        .collect()
}

fn enum_event(r: pb::EnumerateResponse) -> Event {
    r.event.expect("every message has an event")
}

fn watch_event(r: pb::WatchJobResponse) -> Event {
    use pb::watch_job_response::Event as W;
    match r.event.expect("every message has an event") {
        W::Solutions(b) => Event::Solutions(b),
        W::Progress(p) => Event::Progress(p),
        W::Summary(s) => Event::Summary(s),
    }
}

/// Reads one message, failing the test if none comes within `limit`.
async fn next<T>(stream: &mut Streaming<T>, limit: Duration) -> Result<Option<T>, Status> {
    within("the next message of a stream", limit, stream.message()).await
}

/// Reads a stream to its end (or error) within `limit`.
async fn drain<T>(
    stream: &mut Streaming<T>,
    limit: Duration,
    events: &mut Events,
    event: fn(T) -> Event,
) -> Result<(), Status> {
    let deadline = tokio::time::Instant::now() + limit;
    for _ in 0..MAX_MESSAGES {
        let message = match tokio::time::timeout_at(deadline, stream.message()).await {
            Ok(m) => m?,
            Err(_) => panic!("the stream did not end within {limit:?} ({events:?})"),
        };
        match message {
            Some(m) => events.push(event(m)),
            None => return Ok(()),
        }
    }
    panic!("the stream sent more than {MAX_MESSAGES} messages");
}

async fn enumerate_all(
    client: &mut Client,
    request: pb::EnumerateRequest,
) -> Result<Events, Status> {
    let mut stream = within("Enumerate", STEP, client.enumerate(request))
        .await?
        .into_inner();
    let mut events = Events::default();
    drain(&mut stream, STREAM, &mut events, enum_event).await?;
    Ok(events)
}

/// Asserts an error status: its code, and words its message must contain.
fn assert_status<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, Status>,
    code: Code,
    words: &[&str],
) {
    match result {
        Ok(v) => panic!("{what}: expected {code:?}, got {v:?}"),
        Err(status) => {
            assert_eq!(status.code(), code, "{what}: {status:?}");
            for word in words {
                assert!(
                    status.message().contains(word),
                    "{what}: message {:?} lacks {word:?}",
                    status.message()
                );
            }
            eprintln!("{what}: {code:?}: {}", status.message());
        }
    }
}

/// The resident set size of this process, in KiB: `VmRSS` of
/// `/proc/self/status`, the same count as the second field of
/// `/proc/self/statm` but in KiB (statm counts pages, assumed 4 KiB here
/// only if `VmRSS` cannot be read).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let vm_rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    vm_rss.unwrap_or_else(|| {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4
    })
}

fn solve_request(text: &str, limit: u64) -> pb::SolveRequest {
    pb::SolveRequest {
        problem: dlx(text),
        limit,
        include_option_text: true,
        max_nodes: 0,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------
// 1. Known counts end to end
// ---------------------------------------------------------------------------

const SMALL: &[&str] = &[
    "queens8",
    "queens9",
    "queens10",
    "queens11",
    "latin4",
    "langford7",
    "langford8",
    "pent3x20",
    "sudoku_hard17",
    "sudoku_royle17a",
    "sudoku_royle17b",
    "color_simple",
    "color_torus4x4w2x2",
    "color_debruijn4",
    "mcc_simple",
    "mcc_rowcol4k2",
    "mcc_rowcol5k2",
];

/// Solve, Enumerate (solutions and count only) and a job on one instance.
async fn check_instance(client: &mut Client, name: &str) {
    let started = Instant::now();
    let text = instance(name);
    let problem = parse(&text);
    let expected = known(name);
    let all = all_solutions(&problem).await;
    assert_eq!(
        all.len() as u64,
        expected,
        "{name}: engine vs the reference"
    );

    // Solve with limit 2: "is the solution unique?"
    let r = within("Solve", STEP, client.solve(solve_request(&text, 2)))
        .await
        .unwrap_or_else(|e| panic!("{name}: Solve: {e:?}"))
        .into_inner();
    for s in &r.solutions {
        check_solution(name, &problem, s, true);
        assert!(all.contains(&indices(s)), "{name}: unknown solution");
    }
    let stats = r.statistics.as_ref().expect("statistics");
    assert_eq!(stats.solutions, r.solutions.len() as u64, "{name}");
    assert!(stats.nodes > 0, "{name}: nodes");
    if expected == 1 {
        assert!(r.exhausted, "{name}: unique solution, exhausted");
        assert_eq!(r.reason, pb::EndReason::Complete as i32, "{name}");
        assert_eq!(r.solutions.len(), 1, "{name}");
        assert_eq!(Some(&indices(&r.solutions[0])), all.first(), "{name}");
    } else {
        assert!(!r.exhausted, "{name}: more than 2 solutions exist");
        assert_eq!(r.reason, pb::EndReason::Limit as i32, "{name}");
        assert_eq!(r.solutions.len(), 2, "{name}");
        assert_ne!(r.solutions[0], r.solutions[1], "{name}: distinct");
    }

    // Enumerate every solution.
    let batch_size = 100;
    let ev = enumerate_all(
        client,
        pb::EnumerateRequest {
            problem: dlx(&text),
            batch_size,
            ..Default::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{name}: Enumerate: {e:?}"));
    let got: Vec<Vec<u32>> = ev.solutions.iter().map(indices).collect();
    let set: BTreeSet<Vec<u32>> = got.iter().cloned().collect();
    assert_eq!(got.len() as u64, expected, "{name}: solutions streamed");
    assert_eq!(set.len(), got.len(), "{name}: duplicate solutions");
    assert_eq!(set, all, "{name}: the streamed set differs from in-process");
    for s in ev.solutions.iter().take(200) {
        check_solution(name, &problem, s, false);
    }
    assert!(ev.batches.iter().all(|&b| b >= 1), "{name}: empty batch");
    // (That batches respect `batch_size` is the test
    // `enumerate_batches_respect_batch_size`.)
    let summary = ev.summary();
    assert_eq!(summary.solutions, expected, "{name}: summary count");
    assert!(summary.exhausted, "{name}: exhausted");
    assert_eq!(summary.reason, pb::EndReason::Complete as i32, "{name}");

    // Enumerate, counting only.
    let ev = enumerate_all(
        client,
        pb::EnumerateRequest {
            problem: dlx(&text),
            count_only: true,
            ..Default::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{name}: Enumerate count_only: {e:?}"));
    assert!(ev.batches.is_empty(), "{name}: count_only sent solutions");
    let summary = ev.summary();
    assert_eq!(summary.solutions, expected, "{name}: count_only count");
    assert!(summary.exhausted, "{name}: count_only exhausted");

    check_job(client, name, &text, &problem, expected, Some(&all), 50).await;
    eprintln!(
        "known counts: {name}: {expected} solutions, checked in {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

/// CreateJob, WatchJob to the end, GetJob; returns the job's id.
async fn check_job(
    client: &mut Client,
    name: &str,
    text: &str,
    problem: &Problem,
    expected: u64,
    all: Option<&BTreeSet<Vec<u32>>>,
    keep: u32,
) -> String {
    let id = within(
        "CreateJob",
        STEP,
        client.create_job(pb::CreateJobRequest {
            source: dlx(text).map(pb::create_job_request::Source::Problem),
            keep_solutions: keep,
            ..Default::default()
        }),
    )
    .await
    .unwrap_or_else(|e| panic!("{name}: CreateJob: {e:?}"))
    .into_inner()
    .job
    .expect("CreateJob returns the job")
    .name;
    assert!(!id.is_empty(), "{name}: job id");

    // Two watchers from the start, the second asking for the packed form.
    let mut watchers = Vec::new();
    for packed in [false, true] {
        let watch = within(
            "WatchJob",
            STEP,
            client.watch_job(pb::WatchJobRequest {
                name: id.clone(),
                include_solutions: true,
                progress_interval_seconds: 0.05,
                packed_solutions: packed,
                ..Default::default()
            }),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: WatchJob: {e:?}"))
        .into_inner();
        watchers.push(watch);
    }
    let mut ev = Events::default();
    drain(&mut watchers[0], STREAM, &mut ev, watch_event)
        .await
        .unwrap_or_else(|e| panic!("{name}: WatchJob stream: {e:?}"));
    let mut packed_ev = Events::default();
    drain(&mut watchers[1], STREAM, &mut packed_ev, watch_event)
        .await
        .unwrap_or_else(|e| panic!("{name}: packed WatchJob stream: {e:?}"));
    let summary = ev.summary().clone();
    assert_eq!(summary.solutions, expected, "{name}: job summary count");
    assert!(summary.exhausted, "{name}: job exhausted");
    let fractions: Vec<f64> = ev.progress.iter().map(|p| p.fraction_done).collect();
    assert!(
        fractions.windows(2).all(|w| w[0] <= w[1]),
        "{name}: WatchJob fractions not monotone: {fractions:?}"
    );
    assert_eq!(fractions.last(), Some(&1.0), "{name}: final fraction");

    let got = within(
        "GetJob",
        STEP,
        client.get_job(pb::GetJobRequest {
            name: id.clone(),
            max_solutions: 0,
            ..Default::default()
        }),
    )
    .await
    .unwrap_or_else(|e| panic!("{name}: GetJob: {e:?}"))
    .into_inner();
    let job = got.job.expect("job");
    assert_eq!(job.name, id);
    assert_eq!(job.state(), pb::JobState::Succeeded, "{name}: state");
    let s = job.summary.expect("a done job has a summary");
    assert_eq!(s.solutions, expected, "{name}: GetJob count");
    assert_eq!(s.reason, pb::EndReason::Complete as i32, "{name}");
    assert!(s.exhausted);
    let created = std::time::SystemTime::try_from(job.create_time.expect("create_time")).unwrap();
    let ended =
        std::time::SystemTime::try_from(job.end_time.expect("an ended job's end_time")).unwrap();
    assert!(
        created > std::time::UNIX_EPOCH + Duration::from_secs(1_600_000_000),
        "{name}: created time"
    );
    assert!(
        ended >= created,
        "{name}: end_time {ended:?} before create_time {created:?}"
    );
    let kept = expected.min(u64::from(keep)) as usize;
    assert_eq!(got.solutions.len(), kept, "{name}: kept solutions");
    let distinct: HashSet<Vec<u32>> = got.solutions.iter().map(indices).collect();
    assert_eq!(distinct.len(), kept, "{name}: kept solutions distinct");
    for s in &got.solutions {
        check_solution(name, problem, s, true);
        if let Some(all) = all {
            assert!(all.contains(&indices(s)), "{name}: unknown kept solution");
        }
    }
    // WatchJob streamed the same kept solutions, in the same order, packed
    // or not, while the job ran and after it ended.
    let watched: Vec<Vec<u32>> = ev.solutions.iter().map(indices).collect();
    let read: Vec<Vec<u32>> = got.solutions.iter().map(indices).collect();
    assert_eq!(watched, read, "{name}: WatchJob vs GetJob solutions");
    let packed: Vec<Vec<u32>> = packed_ev.solutions.iter().map(indices).collect();
    assert_eq!(packed, read, "{name}: packed WatchJob vs GetJob solutions");
    let width = match problem.options().len() {
        0..=0x100 => 1,
        0x101..=0x1_0000 => 2,
        _ => 4,
    };
    if !read.is_empty() {
        assert_eq!(
            packed_ev.index_bytes,
            [width].into(),
            "{name}: the packed watcher's batches"
        );
    }
    let mut replay = client
        .watch_job(pb::WatchJobRequest {
            name: id.clone(),
            include_solutions: true,
            packed_solutions: true,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{name}: WatchJob of the ended job: {e:?}"))
        .into_inner();
    let mut replay_ev = Events::default();
    drain(&mut replay, STREAM, &mut replay_ev, watch_event)
        .await
        .unwrap_or_else(|e| panic!("{name}: WatchJob of the ended job: {e:?}"));
    let replayed: Vec<Vec<u32>> = replay_ev.solutions.iter().map(indices).collect();
    assert_eq!(replayed, read, "{name}: packed WatchJob of the ended job");

    // max_solutions truncates.
    if kept > 1 {
        let two = client
            .get_job(pb::GetJobRequest {
                name: id.clone(),
                max_solutions: 1,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(two.solutions.len(), 1);
        assert_eq!(indices(&two.solutions[0]), read[0]);
    }
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_counts_end_to_end() {
    let _serial = SERIAL.lock().await;
    let started = Instant::now();
    let server = serve(config(64)).await;
    let mut client = connect(server.addr).await;
    for name in SMALL {
        check_instance(&mut client, name).await;
    }

    // latin5, counting only (161280 solutions), and as a job keeping 10.
    let text = instance("latin5");
    let problem = parse(&text);
    let ev = enumerate_all(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(&text),
            count_only: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let summary = ev.summary();
    assert_eq!(summary.solutions, known("latin5"));
    assert!(summary.exhausted);
    assert!(ev.batches.is_empty());
    let latin5_job = check_job(
        &mut client,
        "latin5",
        &text,
        &problem,
        known("latin5"),
        None,
        10,
    )
    .await;

    // ListJobs remembers the submitted jobs, done.
    let jobs = client
        .list_jobs(pb::ListJobsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert_eq!(jobs.len(), SMALL.len() + 1, "one job per instance");
    assert!(jobs.iter().any(|j| j.name == latin5_job));
    assert!(jobs
        .iter()
        .all(|j| j.state() == pb::JobState::Succeeded && j.summary.is_some()));

    // The structured form gives what the DLX text gives.
    for name in [
        "queens8",
        "langford7",
        "latin4",
        "sudoku_hard17",
        "color_simple",
        "color_torus4x4w2x2",
        "color_debruijn4",
        "mcc_simple",
        "mcc_rowcol4k2",
        "mcc_rowcol5k2",
    ] {
        let text = instance(name);
        let problem = parse(&text);
        let all = all_solutions(&problem).await;
        let s = to_structured(&text);
        assert_eq!(s.options.len(), problem.options().len(), "{name}");
        let ev = enumerate_all(
            &mut client,
            pb::EnumerateRequest {
                problem: structured(s.clone()),
                include_option_text: true,
                ..Default::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: structured Enumerate: {e:?}"));
        let set: BTreeSet<Vec<u32>> = ev.solutions.iter().map(indices).collect();
        assert_eq!(set.len(), ev.solutions.len(), "{name}: duplicates");
        assert_eq!(set, all, "{name}: structured vs DLX text");
        for sol in &ev.solutions {
            check_solution(name, &problem, sol, true);
        }
        assert_eq!(ev.summary().solutions, known(name));

        let r = client
            .solve(pb::SolveRequest {
                problem: structured(s),
                limit: 2,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.exhausted, known(name) == 1, "{name}: structured Solve");
        for sol in &r.solutions {
            assert!(all.contains(&indices(sol)), "{name}: structured Solve");
        }
    }
    within("shutdown", STEP, server.shutdown())
        .await
        .expect("clean shutdown");
    eprintln!(
        "known_counts_end_to_end: {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

/// A search split among threads (finely: a poll every 32 nodes) counts the
/// nodes, updates and cleansings of the single-threaded search exactly; the
/// replay of the tasks' paths is counted apart. A node limit stops the
/// search within a poll and says NODE_LIMIT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_searches_count_like_one_thread() {
    let _serial = SERIAL.lock().await;
    let mut config = config(8);
    config.pool.poll_interval = 32;
    let server = serve(config).await;
    let mut client = connect(server.addr).await;
    for name in [
        "latin5",
        "queens10",
        "langford8",
        "color_torus4x4w2x2",
        "mcc_rowcol5k2",
        "pent3x20",
    ] {
        let text = instance(name);
        let mut one = xccd::xcc::CountOnly;
        let alone = Solver::new(&parse(&text))
            .run(&Task::root(), &RunConfig::default(), &mut one)
            .unwrap()
            .stats;
        // Splits depend on scheduling: on a loaded machine a small search
        // may end before the other thread wakes. Rounds go on (at least
        // two, at most 50) until one was split.
        let mut replayed = 0;
        for round in 0..50 {
            if round >= 2 && replayed > 0 {
                break;
            }
            let ev = enumerate_all(
                &mut client,
                pb::EnumerateRequest {
                    problem: dlx(&text),
                    count_only: true,
                    engine: pb::Engine::Links as i32,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
            let summary = ev.summary();
            let stats = summary.statistics.clone().unwrap();
            assert_eq!(stats.engine, "links");
            assert_eq!(summary.solutions, alone.solutions, "{name}");
            assert_eq!(
                (stats.nodes, stats.updates, stats.cleansings),
                (alone.nodes, alone.updates, alone.cleansings),
                "{name} (round {round}): nodes, updates, cleansings"
            );
            replayed += stats.replay_updates;
        }
        assert!(
            replayed > 0,
            "{name}: no task was split in 50 rounds, the test tests nothing"
        );
        // The cells engine's split runs find the same solutions (their node
        // counts may differ: see src/xcc/cells.rs); the server picks it
        // unless Engine::auto prefers links (exact multiplicities only).
        let ev = enumerate_all(
            &mut client,
            pb::EnumerateRequest {
                problem: dlx(&text),
                count_only: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let summary = ev.summary();
        assert_eq!(
            summary.solutions, alone.solutions,
            "{name} on the server's engine"
        );
        let expected_engine = xccd::xcc::Engine::auto(&parse(&text)).name();
        assert_eq!(summary.statistics.as_ref().unwrap().engine, expected_engine);
    }
    // A node limit of 1 on queens8 (1049 nodes) stops at once.
    let text = instance("queens8");
    for max_nodes in [1, 100] {
        let ev = enumerate_all(
            &mut client,
            pb::EnumerateRequest {
                problem: dlx(&text),
                count_only: true,
                max_nodes,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let summary = ev.summary();
        assert_eq!(summary.reason, pb::EndReason::NodeLimit as i32);
        assert!(!summary.exhausted);
        let nodes = summary.statistics.as_ref().unwrap().nodes;
        assert!(
            nodes >= max_nodes && nodes <= max_nodes + 2 * 32,
            "max_nodes {max_nodes}: {nodes} nodes"
        );
        let solve = client
            .solve(pb::SolveRequest {
                problem: dlx(&text),
                limit: 100,
                max_nodes,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(solve.reason, pb::EndReason::NodeLimit as i32);
        assert!(!solve.exhausted);
    }
    within("shutdown", STEP, server.shutdown())
        .await
        .expect("clean shutdown");
}

// ---------------------------------------------------------------------------
// 2. Cancellation: CancelJob, and a dropped Enumerate stream
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_enumeration() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let pool = server.pool.clone();
    let mut client = connect(server.addr).await;

    // A submitted job, cancelled with CancelJob once both workers run it.
    let id = create_job(
        &mut client,
        pb::CreateJobRequest {
            source: dlx(instance("queens15")).map(pb::create_job_request::Source::Problem),
            ..Default::default()
        },
    )
    .await;
    let p = pool.clone();
    wait_for("both workers busy with queens15", STEP, move || {
        p.busy_workers() == 2
    })
    .await;
    let running = client
        .get_job(pb::GetJobRequest {
            name: id.clone(),
            max_solutions: 1,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(running.state, pb::JobState::Running as i32);
    assert!(running.summary.is_none());

    let cancelled_at = Instant::now();
    let c = client
        .cancel_job(pb::CancelJobRequest {
            name: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(c.name, id);
    let mut done = None;
    for _ in 0..1000 {
        let job = client
            .get_job(pb::GetJobRequest {
                name: id.clone(),
                max_solutions: 0,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .job
            .unwrap();
        if job.state().is_final() {
            done = Some(job);
            break;
        }
        assert!(cancelled_at.elapsed() < Duration::from_secs(5), "job ends");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let done = done.expect("the cancelled job ends");
    let job_ended = cancelled_at.elapsed();
    let summary = done.summary.expect("summary");
    assert_eq!(summary.reason, pb::EndReason::Cancelled as i32);
    assert!(!summary.exhausted);
    assert!(summary.solutions < known("queens15"));
    let idle = wait_idle(&server, Duration::from_secs(5)).await;
    eprintln!(
        "CancelJob: job DONE/CANCELLED after {:.3} s, pool idle after {:.3} s, {} solutions counted",
        job_ended.as_secs_f64(),
        (cancelled_at.elapsed()).as_secs_f64().max(idle.as_secs_f64()),
        summary.solutions
    );
    // Watching a cancelled job ends at once with its summary.
    let mut w = client
        .watch_job(pb::WatchJobRequest {
            name: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut ev = Events::default();
    drain(&mut w, STEP, &mut ev, watch_event).await.unwrap();
    assert_eq!(ev.summary().reason, pb::EndReason::Cancelled as i32);
    // Cancelling again is harmless.
    let again = client
        .cancel_job(pb::CancelJobRequest {
            name: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(again.state(), pb::JobState::Cancelled);
    assert!(again.end_time.is_some(), "a cancelled job has an end_time");
    assert_eq!(
        again.summary.unwrap().reason,
        pb::EndReason::Cancelled as i32
    );

    // Disconnect: drop streams mid-way, with solutions and counting only.
    for (name, count_only) in [("queens15", false), ("pent6x10", true), ("queens15", true)] {
        let mut stream = client
            .enumerate(pb::EnumerateRequest {
                problem: dlx(instance(name)),
                count_only,
                batch_size: 64,
                progress_interval_seconds: 0.05,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut ev = Events::default();
        for _ in 0..5 {
            let m = next(&mut stream, STEP).await.unwrap().expect("more");
            ev.push(enum_event(m));
        }
        assert!(ev.summary.is_none(), "{name} still running");
        if count_only {
            // (A stream of solutions may already be held back by its
            // unread buffers, its workers idle.)
            let p = pool.clone();
            wait_for("both workers busy", STEP, move || p.busy_workers() == 2).await;
        }
        assert_eq!(pool.active_jobs(), 1);
        let dropped_at = Instant::now();
        drop(stream);
        let idle = wait_idle(&server, Duration::from_secs(5)).await;
        eprintln!(
            "dropped Enumerate {name} (count_only {count_only}) after {} solutions: pool idle after {:.3} s",
            ev.solutions.len(),
            idle.as_secs_f64().min(dropped_at.elapsed().as_secs_f64())
        );
    }
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 3. Deadlines
// ---------------------------------------------------------------------------

/// Enumerates `name` with a 300 ms deadline, reading with `pause` between
/// messages; returns the status the stream ended with and what it read.
async fn enumerate_past_deadline(
    client: &mut Client,
    name: &str,
    count_only: bool,
    batch_size: u32,
    pause: Duration,
) -> (Result<(), Status>, Events, Duration) {
    let mut request = Request::new(pb::EnumerateRequest {
        problem: dlx(instance(name)),
        count_only,
        batch_size,
        progress_interval_seconds: 0.05,
        ..Default::default()
    });
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let mut stream = client.enumerate(request).await.unwrap().into_inner();
    let mut ev = Events::default();
    let limit = Duration::from_secs(60);
    let mut end = Ok(());
    for _ in 0..MAX_MESSAGES {
        match next(&mut stream, limit).await {
            Ok(Some(m)) => ev.push(enum_event(m)),
            Ok(None) => break,
            Err(status) => {
                end = Err(status);
                break;
            }
        }
        assert!(
            started.elapsed() < limit,
            "the stream outlives its deadline"
        );
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    (end, ev, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_expires_mid_stream() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;

    // Enumerate, with a client that reads as fast as it can.
    for (name, count_only, batch, what) in [
        ("queens15", false, 256, "fast reader"),
        ("pent6x10", true, 0, "count only"),
    ] {
        let (end, ev, took) =
            enumerate_past_deadline(&mut client, name, count_only, batch, Duration::ZERO).await;
        eprintln!(
            "deadline, {what} ({name}): ended after {:.3} s with {:?}, {} messages, {} solutions",
            took.as_secs_f64(),
            end.as_ref()
                .map_err(|s| (s.code(), s.message().to_string())),
            ev.messages,
            ev.solutions.len(),
        );
        assert!(ev.summary.is_none(), "{what}: {:?}", ev.summary);
        assert_status(
            &format!("Enumerate past its deadline, {what}"),
            end,
            Code::DeadlineExceeded,
            &[],
        );
        assert!(took < Duration::from_secs(10), "{what}: took {took:?}");
        let idle = wait_idle(&server, Duration::from_secs(5)).await;
        eprintln!(
            "deadline, {what}: pool idle {:.3} s later",
            idle.as_secs_f64()
        );
    }

    // WatchJob: the watch ends with DEADLINE_EXCEEDED, the job goes on.
    let id = create_job(
        &mut client,
        pb::CreateJobRequest {
            source: dlx(instance("queens15")).map(pb::create_job_request::Source::Problem),
            ..Default::default()
        },
    )
    .await;
    let mut request = Request::new(pb::WatchJobRequest {
        name: id.clone(),
        include_solutions: true,
        progress_interval_seconds: 0.05,
        ..Default::default()
    });
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let mut watch = client.watch_job(request).await.unwrap().into_inner();
    let mut ev = Events::default();
    let end = drain(&mut watch, STEP, &mut ev, watch_event).await;
    eprintln!(
        "deadline, WatchJob: ended after {:.3} s with {:?}, {} messages",
        started.elapsed().as_secs_f64(),
        end.as_ref().map_err(|s| s.code()),
        ev.messages
    );
    assert!(ev.summary.is_none());
    assert_status(
        "WatchJob past its deadline",
        end,
        Code::DeadlineExceeded,
        &[],
    );
    let job = client
        .get_job(pb::GetJobRequest {
            name: id.clone(),
            max_solutions: 1,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(
        job.state,
        pb::JobState::Running as i32,
        "watching never stops the job"
    );
    client
        .cancel_job(pb::CancelJobRequest {
            name: id,
            ..Default::default()
        })
        .await
        .unwrap();
    wait_idle(&server, Duration::from_secs(5)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// A client that stops reading for a while across its deadline: when the
/// deadline passes, the server's pump is waiting for room in the call's
/// channel. The stream must still end with DEADLINE_EXCEEDED once the client
/// reads again, not with an OK status and no summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_passing_while_the_client_does_not_read() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    // Small HTTP/2 windows, so that the transport's buffers fill at once.
    let channel = within(
        "connect",
        STEP,
        Channel::from_shared(format!("http://{}", server.addr))
            .unwrap()
            .initial_stream_window_size(Some(64 << 10))
            .initial_connection_window_size(Some(64 << 10))
            .connect(),
    )
    .await
    .unwrap();
    let mut client = Client::new(channel);
    let mut request = Request::new(pb::EnumerateRequest {
        problem: dlx(instance("queens15")),
        batch_size: 256,
        ..Default::default()
    });
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let mut stream = client.enumerate(request).await.unwrap().into_inner();
    let mut ev = Events::default();
    for _ in 0..2 {
        let m = next(&mut stream, STEP).await.unwrap().expect("a message");
        ev.push(enum_event(m));
    }
    // Not reading across the deadline.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let idle = wait_idle(&server, Duration::from_secs(5)).await;
    let end = drain(&mut stream, STEP, &mut ev, enum_event).await;
    eprintln!(
        "deadline while not reading (queens15): pool idle {:.3} s after the pause; stream ended after {:.3} s with {:?}, \
         {} messages, {} solutions, summary {:?}",
        idle.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        end.as_ref().map_err(|s| (s.code(), s.message().to_string())),
        ev.messages,
        ev.solutions.len(),
        ev.summary
    );
    assert!(ev.summary.is_none(), "{:?}", ev.summary);
    assert!((ev.solutions.len() as u64) < known("queens15"));
    assert_status(
        "Enumerate past its deadline, client not reading",
        end,
        Code::DeadlineExceeded,
        &[],
    );
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// A Solve whose deadline passes: DEADLINE_EXCEEDED (what `solve` in
/// grpc.rs answers), and the search stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solve_past_its_deadline() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;
    let mut request = Request::new(solve_request(&instance("pent6x10"), 100_000));
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let r = within("Solve with a deadline", STEP, client.solve(request)).await;
    let took = started.elapsed();
    let idle = wait_idle(&server, Duration::from_secs(5)).await;
    eprintln!(
        "deadline, Solve: answered after {:.3} s with {:?}, pool idle {:.3} s later",
        took.as_secs_f64(),
        r.as_ref()
            .map(|_| ())
            .map_err(|s| (s.code(), s.message().to_string())),
        idle.as_secs_f64()
    );
    assert!(took < Duration::from_secs(10), "Solve took {took:?}");
    assert_status("Solve past its deadline", r, Code::DeadlineExceeded, &[]);
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 4. Many concurrent clients while an enumeration fills the pool
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_clients() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(128)).await;
    let pool = server.pool.clone();
    let mut client = connect(server.addr).await;

    let sudokus = ["sudoku_hard17", "sudoku_royle17a", "sudoku_royle17b"];
    let mut answers = Vec::new();
    for name in sudokus {
        let text = instance(name);
        let all = all_solutions(&parse(&text)).await;
        assert_eq!(all.len(), 1);
        answers.push((name, text, all.into_iter().next().unwrap()));
    }
    let answers = Arc::new(answers);

    let mut big = client
        .enumerate(pb::EnumerateRequest {
            problem: dlx(instance("pent6x10")),
            count_only: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let p = pool.clone();
    wait_for("both workers busy with pent6x10", STEP, move || {
        p.busy_workers() == 2
    })
    .await;

    let addr = server.addr;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..50 {
        let answers = answers.clone();
        tasks.spawn(async move {
            let mut client = connect(addr).await;
            let (name, text, solution) = &answers[i % answers.len()];
            let t = Instant::now();
            let r = client
                .solve(solve_request(text, 2))
                .await
                .unwrap_or_else(|e| panic!("client {i}: Solve {name}: {e:?}"))
                .into_inner();
            assert!(r.exhausted, "client {i}: {name} exhausted");
            assert_eq!(r.solutions.len(), 1, "client {i}: {name}");
            assert_eq!(&r.solutions[0].option_indices, solution, "client {i}");
            t.elapsed()
        });
    }
    let queens = [("queens8", 92), ("queens9", 352), ("queens10", 724)];
    for i in 0..12 {
        let (name, count) = queens[i % queens.len()];
        assert_eq!(count, known(name));
        tasks.spawn(async move {
            let mut client = connect(addr).await;
            let t = Instant::now();
            let ev = enumerate_all(
                &mut client,
                pb::EnumerateRequest {
                    problem: dlx(instance(name)),
                    count_only: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap_or_else(|e| panic!("client {i}: Enumerate {name}: {e:?}"));
            assert_eq!(ev.summary().solutions, count, "client {i}: {name}");
            assert!(ev.summary().exhausted);
            t.elapsed()
        });
    }
    let mut latencies = Vec::new();
    for _ in 0..62 {
        let joined = within(
            "the concurrent clients",
            Duration::from_secs(120),
            tasks.join_next(),
        )
        .await
        .expect("62 tasks");
        latencies.push(joined.expect("a client task failed"));
    }
    let all_done = started.elapsed();
    latencies.sort();
    eprintln!(
        "62 concurrent clients (50 Solve, 12 Enumerate) during pent6x10: all answered in {:.3} s; latency median {:.3} s, max {:.3} s",
        all_done.as_secs_f64(),
        latencies[latencies.len() / 2].as_secs_f64(),
        latencies.last().unwrap().as_secs_f64()
    );
    // The big enumeration kept running throughout.
    assert_eq!(
        pool.active_jobs(),
        1,
        "only pent6x10 is left, still running"
    );
    let m = next(&mut big, STEP)
        .await
        .unwrap()
        .expect("pent6x10 still streams");
    assert!(
        matches!(enum_event(m), Event::Progress(_)),
        "pent6x10 has not ended"
    );
    drop(big);
    wait_idle(&server, Duration::from_secs(5)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 5. Slow reader: backpressure stops the workers, memory stays bounded
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_reader_backpressure() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let pool = server.pool.clone();
    let mut client = connect(server.addr).await;
    let text = instance("latin5");
    let problem = parse(&text);
    let expected = known("latin5");
    assert_eq!(expected, 161_280);
    assert!(problem.options().len() <= 128, "solutions fit a u128 mask");

    let rss_before = rss_kib();
    let mut stream = client
        .enumerate(pb::EnumerateRequest {
            problem: dlx(&text),
            batch_size: 16,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut ev = Events::default();
    for _ in 0..4 {
        let m = next(&mut stream, STEP).await.unwrap().expect("a message");
        ev.push(enum_event(m));
    }
    let read_before_pause = ev.solutions.len();
    let pause_started = Instant::now();

    // The client stops reading. The transport's buffers (HTTP/2 windows)
    // absorb some messages, then the job's buffer fills and the workers must
    // go idle for good while the job stays. Stop reading for at least 2 s,
    // until no worker has been busy for the last second (at most 15 s).
    let mut samples = 0usize;
    let mut busy_samples = 0usize;
    let mut last_busy: Option<Duration> = None;
    let mut quiet_since = Duration::ZERO;
    loop {
        let now = pause_started.elapsed();
        samples += 1;
        if pool.busy_workers() > 0 {
            busy_samples += 1;
            last_busy = Some(now);
            quiet_since = now;
        }
        assert_eq!(pool.active_jobs(), 1, "the job waits for its reader");
        if now >= Duration::from_secs(2) && now - quiet_since >= Duration::from_secs(1) {
            break;
        }
        assert!(
            now < Duration::from_secs(15) && samples < 100_000,
            "workers still busy {now:?} after the client stopped reading (last busy at {last_busy:?})"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let rss_paused = rss_kib();
    let paused = pause_started.elapsed();
    let growth = rss_paused.saturating_sub(rss_before);
    eprintln!(
        "slow reader: read {read_before_pause} solutions, then paused {:.2} s; workers last seen busy at {:?} \
         into the pause ({busy_samples} busy of {samples} samples), idle since; \
         RSS before {} KiB, paused {} KiB, growth {} KiB",
        paused.as_secs_f64(),
        last_busy,
        rss_before,
        rss_paused,
        growth
    );
    assert_eq!(pool.busy_workers(), 0);
    assert!(
        growth < 50 * 1024,
        "RSS grew by {growth} KiB while the client did not read"
    );

    // Read the rest: every solution exactly once.
    drain(&mut stream, STREAM, &mut ev, enum_event)
        .await
        .expect("the stream ends well");
    let rss_end = rss_kib();
    let summary = ev.summary().clone();
    assert_eq!(summary.solutions, expected);
    assert!(summary.exhausted);
    assert_eq!(ev.solutions.len() as u64, expected, "solutions received");
    let mut seen: HashSet<u128> = HashSet::with_capacity(ev.solutions.len());
    for s in &ev.solutions {
        let mask = s
            .option_indices
            .iter()
            .fold(0u128, |m, &o| m | (1u128 << o));
        assert!(
            seen.insert(mask),
            "duplicate solution {:?}",
            s.option_indices
        );
    }
    for s in ev.solutions.iter().step_by(97) {
        check_solution("latin5", &problem, s, false);
    }
    // (Batches over `batch_size`: see `enumerate_batches_respect_batch_size`.)
    eprintln!(
        "slow reader: {} solutions in {} batches (largest {:?}), all distinct; RSS at the end {} KiB",
        ev.solutions.len(),
        ev.batches.len(),
        ev.batches.iter().max(),
        rss_end
    );
    wait_idle(&server, Duration::from_secs(5)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 6. Invalid problems and ids
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_are_rejected() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;

    let bad_dlx: [(&str, &str, &[&str]); 5] = [
        (
            "unknown item",
            "A B\nA B\n| comment\nA C\n",
            &["problem.dlx", "line 4", "\"C\""],
        ),
        (
            "duplicate item",
            "A B A\nA B\n",
            &["problem.dlx", "line 1", "duplicate", "\"A\""],
        ),
        (
            "bound above",
            "3:2|A B\nA B\n",
            &["problem.dlx", "line 1", "bound", "\"A\""],
        ),
        (
            "bad bound digit",
            "A 1:x|B\nA B\n",
            &["problem.dlx", "line 1", "bound"],
        ),
        ("no item line", "| only a comment\n", &["problem.dlx"]),
    ];
    for (what, text, words) in bad_dlx {
        let r = client.solve(solve_request(text, 1)).await;
        assert_status(&format!("Solve, {what}"), r, Code::InvalidArgument, words);
        let r = client
            .enumerate(pb::EnumerateRequest {
                problem: dlx(text),
                ..Default::default()
            })
            .await
            .map(|_| ());
        assert_status(
            &format!("Enumerate, {what}"),
            r,
            Code::InvalidArgument,
            words,
        );
        let r = client
            .create_job(pb::CreateJobRequest {
                source: dlx(text).map(pb::create_job_request::Source::Problem),
                ..Default::default()
            })
            .await;
        assert_status(
            &format!("CreateJob, {what}"),
            r,
            Code::InvalidArgument,
            words,
        );
    }

    let item = |name: &str, kind: pb::ItemKind| pb::Item {
        name: name.into(),
        kind: kind as i32,
        ..Default::default()
    };
    let entry = |item: &str, color: &str| pb::OptionEntry {
        item: item.into(),
        color: color.into(),
        ..Default::default()
    };
    let color_on_primary = pb::StructuredProblem {
        items: vec![
            item("A", pb::ItemKind::Primary),
            item("X", pb::ItemKind::Secondary),
        ],
        options: vec![
            pb::ProblemOption {
                entries: vec![entry("X", "red"), entry("A", "")],
                ..Default::default()
            },
            pb::ProblemOption {
                entries: vec![entry("X", ""), entry("A", "blue")],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let r = client
        .solve(pb::SolveRequest {
            problem: structured(color_on_primary),
            ..Default::default()
        })
        .await;
    assert_status(
        "structured, color on a primary item",
        r,
        Code::InvalidArgument,
        &["problem.structured.options[1].entries[1]", "\"A\""],
    );
    let unknown = pb::StructuredProblem {
        items: vec![item("A", pb::ItemKind::Unspecified)],
        options: vec![pb::ProblemOption {
            entries: vec![entry("A", ""), entry("Z", "")],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = client
        .solve(pb::SolveRequest {
            problem: structured(unknown),
            ..Default::default()
        })
        .await;
    assert_status(
        "structured, unknown item",
        r,
        Code::InvalidArgument,
        &["problem.structured.options[0].entries[1]", "\"Z\""],
    );
    let bad_bounds = pb::StructuredProblem {
        items: vec![pb::Item {
            name: "A".into(),
            kind: pb::ItemKind::Primary as i32,
            min: 2,
            max: 0,
            ..Default::default()
        }],
        options: vec![pb::ProblemOption {
            entries: vec![entry("A", "")],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = client
        .solve(pb::SolveRequest {
            problem: structured(bad_bounds),
            ..Default::default()
        })
        .await;
    assert_status(
        "structured, max 0 with min set",
        r,
        Code::InvalidArgument,
        &["problem.structured.items[0]"],
    );

    let r = client.solve(pb::SolveRequest::default()).await;
    assert_status(
        "Solve without a problem",
        r,
        Code::InvalidArgument,
        &["problem"],
    );
    let r = client
        .enumerate(pb::EnumerateRequest {
            problem: Some(pb::Problem { source: None }),
            ..Default::default()
        })
        .await
        .map(|_| ());
    assert_status(
        "Enumerate with an empty problem",
        r,
        Code::InvalidArgument,
        &["problem"],
    );
    let r = client.create_job(pb::CreateJobRequest::default()).await;
    assert_status(
        "CreateJob without a problem",
        r,
        Code::InvalidArgument,
        &["problem"],
    );

    for (id, code) in [
        ("", Code::InvalidArgument),
        ("banana", Code::InvalidArgument),
        ("job-987654321", Code::NotFound),
    ] {
        let r = client
            .get_job(pb::GetJobRequest {
                name: id.into(),
                max_solutions: 0,
                ..Default::default()
            })
            .await;
        assert_status(&format!("GetJob {id:?}"), r, code, &["name"]);
        let r = client
            .cancel_job(pb::CancelJobRequest {
                name: id.into(),
                ..Default::default()
            })
            .await;
        assert_status(&format!("CancelJob {id:?}"), r, code, &["name"]);
        let r = client
            .watch_job(pb::WatchJobRequest {
                name: id.into(),
                ..Default::default()
            })
            .await
            .map(|_| ());
        assert_status(&format!("WatchJob {id:?}"), r, code, &["name"]);
    }

    // Nothing leaked, and the server still answers.
    assert_eq!(server.pool.active_jobs(), 0);
    let r = client
        .solve(solve_request(&instance("sudoku_hard17"), 2))
        .await
        .unwrap()
        .into_inner();
    assert!(r.exhausted);
    assert_eq!(r.solutions.len(), 1);
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 7. Limits: too many jobs, problems too big
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_enforced() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(1)).await;
    let mut client = connect(server.addr).await;
    let id = create_job(
        &mut client,
        pb::CreateJobRequest {
            source: dlx(instance("pent6x10")).map(pb::create_job_request::Source::Problem),
            ..Default::default()
        },
    )
    .await;
    let small = instance("queens8");
    let r = client
        .create_job(pb::CreateJobRequest {
            source: dlx(&small).map(pb::create_job_request::Source::Problem),
            ..Default::default()
        })
        .await;
    assert_status(
        "a second job",
        r,
        Code::ResourceExhausted,
        &["too many jobs"],
    );
    // Small calls have their own limit: long jobs filling theirs do not
    // refuse them.
    let r = client.solve(solve_request(&small, 1)).await.unwrap();
    assert_eq!(
        r.into_inner().solutions.len(),
        1,
        "Solve while long jobs are full"
    );
    let r = client
        .enumerate(pb::EnumerateRequest {
            problem: dlx(&small),
            ..Default::default()
        })
        .await
        .map(|_| ());
    assert_status("Enumerate while full", r, Code::ResourceExhausted, &[]);
    client
        .cancel_job(pb::CancelJobRequest {
            name: id,
            ..Default::default()
        })
        .await
        .unwrap();
    wait_idle(&server, Duration::from_secs(5)).await;
    let r = client.solve(solve_request(&small, 1)).await.unwrap();
    assert_eq!(r.into_inner().solutions.len(), 1, "a slot is free again");
    within("shutdown", STEP, server.shutdown()).await.unwrap();

    // Size limits.
    let mut cfg = config(16);
    cfg.api = ApiConfig::default();
    cfg.api.limits.max_text_bytes = 1000;
    cfg.api.limits.max_options = 100;
    let server = serve(cfg).await;
    let mut client = connect(server.addr).await;
    let big = instance("queens10");
    assert!(big.len() > 1000 && small.len() <= 1000);
    let r = client.solve(solve_request(&big, 1)).await;
    assert_status(
        "DLX text over the limit",
        r,
        Code::InvalidArgument,
        &["problem.dlx", "limit", "1000", &big.len().to_string()],
    );
    let r = client
        .enumerate(pb::EnumerateRequest {
            problem: structured(to_structured(&instance("queens11"))),
            count_only: true,
            ..Default::default()
        })
        .await
        .map(|_| ());
    assert_status(
        "structured, too many options",
        r,
        Code::InvalidArgument,
        &["options", "limit", "100", "121"],
    );
    let ev = enumerate_all(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(&small),
            count_only: true,
            ..Default::default()
        },
    )
    .await
    .expect("a problem within the limits");
    assert_eq!(ev.summary().solutions, known("queens8"));
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 8. Progress
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_monotone_and_ends_at_one() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;
    for (name, count_only) in [
        ("queens13", true),
        ("langford11", false),
        ("queens14", true),
    ] {
        let started = Instant::now();
        let ev = enumerate_all(
            &mut client,
            pb::EnumerateRequest {
                problem: dlx(instance(name)),
                count_only,
                progress_interval_seconds: 0.05,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let took = started.elapsed();
        let summary = ev.summary();
        assert!(summary.exhausted, "{name}");
        assert_eq!(summary.solutions, known(name), "{name}");
        let f: Vec<f64> = ev.progress.iter().map(|p| p.fraction_done).collect();
        eprintln!(
            "progress {name}: {:.2} s, {} progress events, fractions {:?}",
            took.as_secs_f64(),
            f.len(),
            f.iter()
                .map(|x| (x * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        );
        assert!(
            f.iter().all(|x| (0.0..=1.0).contains(x)),
            "{name}: in [0, 1]"
        );
        assert!(
            f.windows(2).all(|w| w[0] <= w[1]),
            "{name}: fraction_done goes backwards: {f:?}"
        );
        assert_eq!(f.last(), Some(&1.0), "{name}: the last progress");
        let expected_events = (took.as_secs_f64() / 0.05 / 4.0) as usize;
        assert!(
            f.len() >= expected_events.min(3),
            "{name}: {} progress events in {took:?}",
            f.len()
        );
        let sols: Vec<u64> = ev.progress.iter().map(|p| p.solutions).collect();
        assert!(sols.windows(2).all(|w| w[0] <= w[1]), "{name}: solutions");
        let last = ev.progress.last().unwrap();
        assert_eq!(last.solutions, known(name), "{name}: last progress count");
        for p in &ev.progress {
            assert_eq!(p.workers_total, 2);
            assert!(p.workers_busy <= 2);
            assert!(p.eta_seconds >= 0.0 || p.eta_seconds == -1.0, "{p:?}");
            assert!(p.solutions <= known(name));
        }
        if !count_only {
            assert_eq!(ev.solutions.len() as u64, known(name));
        }
    }
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 9. Health and reflection
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_reflection() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;

    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let channel = within(
        "connect",
        STEP,
        Channel::from_shared(format!("http://{}", server.addr))
            .unwrap()
            .connect(),
    )
    .await
    .unwrap();

    let mut health = HealthClient::new(channel.clone());
    for service in ["", "xccd.v1.SolverService"] {
        let r = within(
            "Health.Check",
            STEP,
            health.check(HealthCheckRequest {
                service: service.into(),
                ..Default::default()
            }),
        )
        .await
        .unwrap_or_else(|e| panic!("health of {service:?}: {e:?}"))
        .into_inner();
        assert_eq!(r.status, ServingStatus::Serving as i32, "{service:?}");
    }
    let r = health
        .check(HealthCheckRequest {
            service: "no.such.Service".into(),
            ..Default::default()
        })
        .await;
    assert_status("health of an unknown service", r, Code::NotFound, &[]);

    let mut reflection = ServerReflectionClient::new(channel.clone());
    let requests = tokio_stream::iter(vec![ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
        ..Default::default()
    }]);
    let mut responses = within(
        "ServerReflectionInfo",
        STEP,
        reflection.server_reflection_info(requests),
    )
    .await
    .unwrap()
    .into_inner();
    let response = next(&mut responses, STEP)
        .await
        .unwrap()
        .expect("a reflection response");
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("not a service list: {response:?}");
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    eprintln!("reflection lists {names:?}");
    assert!(names.contains(&"xccd.v1.SolverService"), "{names:?}");
    assert!(names.contains(&"xccd.v1.PuzzleService"), "{names:?}");
    // The workers' protocol is served on its own listener, not listed here.
    assert!(
        !names.iter().any(|n| n.starts_with("xccd.cluster")),
        "{names:?}"
    );
    assert!(names.contains(&"grpc.health.v1.Health"), "{names:?}");

    // The solver's descriptors are served too.
    let requests = tokio_stream::iter(vec![ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::FileContainingSymbol(
            "xccd.v1.SolverService".into(),
        )),
        ..Default::default()
    }]);
    let mut responses = reflection
        .server_reflection_info(requests)
        .await
        .unwrap()
        .into_inner();
    let response = next(&mut responses, STEP)
        .await
        .unwrap()
        .expect("a response");
    let Some(MessageResponse::FileDescriptorResponse(files)) = response.message_response else {
        panic!("no descriptor for xccd.v1.SolverService: {response:?}");
    };
    assert!(!files.file_descriptor_proto.is_empty());
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 10. Graceful shutdown
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_ends_open_streams() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let pool = server.pool.clone();
    let addr = server.addr;
    let mut client = connect(addr).await;
    let mut streams = Vec::new();
    for (name, count_only) in [("queens15", false), ("pent6x10", true)] {
        let mut stream = client
            .enumerate(pb::EnumerateRequest {
                problem: dlx(instance(name)),
                count_only,
                progress_interval_seconds: 0.05,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut ev = Events::default();
        for _ in 0..3 {
            let m = next(&mut stream, STEP).await.unwrap().expect("a message");
            ev.push(enum_event(m));
        }
        streams.push((name, stream, ev));
    }
    assert_eq!(pool.active_jobs(), 2);

    let started = Instant::now();
    let shutdown = tokio::spawn(server.shutdown());
    for (name, stream, ev) in &mut streams {
        let end = drain(stream, STEP, ev, enum_event).await;
        eprintln!(
            "shutdown: {name} stream ended after {:.3} s with {:?}, summary {:?}",
            started.elapsed().as_secs_f64(),
            end.as_ref().map_err(|s| s.code()),
            ev.summary
        );
        // The summary first, then a status that says the answer is partial
        // and when to try again.
        let status = end.expect_err("a stream the shutdown cut short does not end OK");
        assert_eq!(status.code(), Code::Unavailable, "{name}: {status:?}");
        let details = tonic_types::StatusExt::get_error_details(&status);
        assert_eq!(details.error_info().unwrap().reason, "SHUTTING_DOWN");
        assert!(details.retry_info().is_some(), "{name}: {status:?}");
        let summary = ev.summary();
        assert_eq!(
            summary.reason,
            pb::EndReason::Shutdown as i32,
            "{name}: reason SHUTDOWN"
        );
        assert!(!summary.exhausted);
    }
    let result = within("shutdown", Duration::from_secs(10), shutdown)
        .await
        .expect("the shutdown task");
    let took = started.elapsed();
    eprintln!("shutdown returned after {:.3} s", took.as_secs_f64());
    result.expect("a clean shutdown");
    assert!(took < Duration::from_secs(10));
    assert_eq!(pool.active_jobs(), 0);
    // (`busy_workers` after shutdown: see `no_busy_workers_after_shutdown`.)

    // Nobody listens any more.
    let r = within(
        "connect after shutdown",
        STEP,
        Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_timeout(Duration::from_secs(2))
            .connect(),
    )
    .await;
    assert!(r.is_err(), "the listener is closed");
}

// ---------------------------------------------------------------------------
// Contract details found wanting
// ---------------------------------------------------------------------------

/// The packed form carries the same solutions as one message each, in
/// batches within `batch_size` (also after a pause that lets several
/// batches wait, which the server then sends together), and refuses option
/// text, which it cannot carry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_solutions_are_the_same_solutions() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;
    // Indices of one byte (up to 256 options), two and four.
    let cases = [
        ("latin4", instance("latin4"), 1),
        ("queens10", instance("queens10"), 1),
        ("color_torus4x4w2x2", instance("color_torus4x4w2x2"), 1),
        ("300 options", pairs(299), 2),
        ("66,000 options", pairs(65_999), 4),
    ];
    for (name, text, width) in cases {
        let expected = all_solutions(&parse(&text)).await;
        let batch_size = 64;
        let mut stream = client
            .enumerate(pb::EnumerateRequest {
                problem: dlx(&text),
                packed_solutions: true,
                batch_size,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut ev = Events::default();
        let m = next(&mut stream, STEP).await.unwrap().expect("a message");
        ev.push(enum_event(m));
        tokio::time::sleep(Duration::from_millis(200)).await;
        drain(&mut stream, STREAM, &mut ev, enum_event)
            .await
            .unwrap();
        let got: Vec<Vec<u32>> = ev.solutions.iter().map(indices).collect();
        let set: BTreeSet<Vec<u32>> = got.iter().cloned().collect();
        assert_eq!(got.len(), set.len(), "{name}: duplicate solutions");
        assert_eq!(set, expected, "{name}: packed solutions differ");
        assert_eq!(ev.index_bytes, [width].into(), "{name}: bytes per index");
        assert_eq!(ev.summary().solutions, expected.len() as u64, "{name}");
        assert!(
            ev.batches
                .iter()
                .all(|&b| (1..=batch_size as usize).contains(&b)),
            "{name}: batch sizes {:?}",
            ev.batches
        );
    }
    let refused = enumerate_all(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(instance("latin4")),
            packed_solutions: true,
            include_option_text: true,
            ..Default::default()
        },
    )
    .await;
    assert_status(
        "packed with option text",
        refused,
        Code::InvalidArgument,
        &["packed_solutions"],
    );
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// A packed stream's default batch is 4096 solutions (latin5's are short),
/// and runs fill their batches rather than sending one at every poll: a
/// stream of latin5's 161,280 solutions takes a few dozen messages, where
/// the form with one message per solution keeps the default of 256.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_streams_default_to_full_batches_of_4096() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(4)).await;
    let mut client = connect(server.addr).await;
    let ev = enumerate_all(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(instance("latin5")),
            packed_solutions: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(ev.solutions.len() as u64, known("latin5"));
    let largest = ev.batches.iter().copied().max().unwrap_or(0);
    assert!(
        largest > 256 && largest <= 4096,
        "largest packed batch {largest}"
    );
    // About 50 on an idle machine; a batch at every poll made 600 or more.
    assert!(
        ev.batches.len() < 300,
        "{} packed batches",
        ev.batches.len()
    );
    let ev = enumerate_all(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(instance("latin5")),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(ev.solutions.len() as u64, known("latin5"));
    assert!(ev.batches.iter().all(|&b| b <= 256), "{:?}", ev.batches);
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// With one worker the solutions come in the search's own order, in every
/// form and batch size: a run's batches, the job's buffer (kept small here,
/// so that runs are refused and checkpoint) and the coalescing of waiting
/// batches into messages keep each solution whole and in its place. On the
/// links engine: a checkpointed run's remaining work, run again from the
/// root, meets its alternatives in the order it would have (dancing links
/// restore their lists exactly), while the cells engine's sets may come
/// back permuted, which reorders the solutions of the rest (the same
/// solutions, the same on every run of a task).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_streams_the_search_order() {
    let _serial = SERIAL.lock().await;
    let mut one_thread = config(4);
    one_thread.pool.threads = 1;
    let server = serve(one_thread).await;
    let mut client = connect(server.addr).await;
    for name in ["latin4", "queens8", "color_torus4x4w2x2"] {
        let text = instance(name);
        let problem = Arc::new(parse(&text));
        let expected = {
            let problem = problem.clone();
            tokio::task::spawn_blocking(move || {
                let mut collect = Collect::default();
                Solver::with_engine(&problem, Engine::Links)
                    .expect("links solve everything")
                    .run(&Task::root(), &RunConfig::default(), &mut collect)
                    .expect("the root task is valid");
                collect
                    .solutions
                    .iter()
                    .map(|s| s.iter().map(|&o| o as u32).collect::<Vec<u32>>())
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap()
        };
        assert!(expected.len() > 20, "{name}: too few solutions to tell");
        let pool = Pool::new(PoolConfig {
            threads: 1,
            max_jobs: 1,
            ..PoolConfig::default()
        });
        let job = pool
            .submit(
                problem.clone(),
                JobSpec {
                    delivery: Delivery::Stream {
                        buffer_batches: 2,
                        batch_size: 7,
                    },
                    engine: Engine::Links,
                    ..JobSpec::default()
                },
            )
            .expect("the pool takes the job");
        // The buffer fills meanwhile: the run is refused and checkpoints.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut got: Vec<Vec<u32>> = Vec::new();
        loop {
            match within("the pool's next event", STEP, job.next_event()).await {
                JobEvent::Solutions(batch) => {
                    let n = batch.len();
                    assert!((1..=7).contains(&n), "{name}: a batch of {n}");
                    got.extend(batch.iter().map(<[u32]>::to_vec));
                }
                JobEvent::Snapshot(_) => {}
                JobEvent::Done(_) => break,
            }
        }
        assert!(
            got == expected,
            "{name}: the pool's order is not the search's"
        );
        for packed_solutions in [false, true] {
            for batch_size in [1, 7, 0] {
                let ev = enumerate_all(
                    &mut client,
                    pb::EnumerateRequest {
                        problem: dlx(&text),
                        packed_solutions,
                        batch_size,
                        engine: pb::Engine::Links as i32,
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
                let got: Vec<Vec<u32>> = ev.solutions.iter().map(indices).collect();
                assert!(
                    got == expected,
                    "{name}, packed {packed_solutions}, batch_size {batch_size}: not the \
                     search's order"
                );
            }
        }
    }
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// `EnumerateRequest.batch_size` is "most solutions per batch". A reader
/// that pauses lets the job's buffer fill; the solutions a worker finds
/// meanwhile must still come in batches of at most `batch_size`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enumerate_batches_respect_batch_size() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;
    for (name, batch_size) in [("queens12", 10u32), ("latin4", 100)] {
        let mut stream = client
            .enumerate(pb::EnumerateRequest {
                problem: dlx(instance(name)),
                batch_size,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut ev = Events::default();
        let m = next(&mut stream, STEP).await.unwrap().expect("a message");
        ev.push(enum_event(m));
        tokio::time::sleep(Duration::from_millis(300)).await;
        drain(&mut stream, STREAM, &mut ev, enum_event)
            .await
            .unwrap();
        assert_eq!(ev.summary().solutions, known(name));
        assert_eq!(ev.solutions.len() as u64, known(name));
        let over: Vec<usize> = ev
            .batches
            .iter()
            .copied()
            .filter(|&b| b > batch_size as usize)
            .collect();
        eprintln!(
            "{name}, batch_size {batch_size}: {} batches, largest {:?}, {} over the size",
            ev.batches.len(),
            ev.batches.iter().max(),
            over.len()
        );
        assert!(
            over.is_empty(),
            "{name}: batches larger than batch_size {batch_size}: {over:?}"
        );
    }
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// `Pool::busy_workers` ("workers currently running a task") once the
/// server has shut down and joined its workers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_busy_workers_after_shutdown() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let pool = server.pool.clone();
    let p = pool.clone();
    wait_for("workers idle at start", STEP, move || p.busy_workers() == 0).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
    assert_eq!(pool.active_jobs(), 0);
    assert_eq!(
        pool.busy_workers(),
        0,
        "the workers have exited, none runs a task"
    );
}

/// The API as gRPC users expect it (Google's API guidelines): jobs named
/// `jobs/{id}`, ListJobs in pages, times as Timestamp and Duration, and
/// error details a program can read (BadRequest, ErrorInfo).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_are_resources_listed_in_pages_with_machine_readable_errors() {
    use tonic_types::StatusExt;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(ServeConfig {
        data_dir: Some(dir.path().to_path_buf()),
        ..config(64)
    })
    .await;
    let mut client = connect(server.addr).await;
    let before = std::time::SystemTime::now();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let id = create_job(
            &mut client,
            pb::CreateJobRequest {
                source: dlx(instance("queens8")).map(pb::create_job_request::Source::Problem),
                ..Default::default()
            },
        )
        .await;
        assert!(
            id.strip_prefix("jobs/")
                .is_some_and(|n| n.parse::<u64>().is_ok()),
            "{id}"
        );
        ids.push(id);
    }
    // Pages of two: every job once, oldest first, then an empty token.
    let mut listed = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let page = client
            .list_jobs(pb::ListJobsRequest {
                page_size: 2,
                page_token: token,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        pages += 1;
        assert!(page.jobs.len() <= 2);
        listed.extend(page.jobs);
        token = page.next_page_token;
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(pages, 3);
    let names: Vec<&str> = listed.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ids.iter().map(String::as_str).collect::<Vec<_>>());
    for job in &listed {
        let created = std::time::SystemTime::try_from(job.create_time.expect("create_time"))
            .expect("a valid timestamp");
        let skew = created
            .duration_since(before)
            .or_else(|e| before.duration_since(created).map_err(|_| e))
            .unwrap_or_default();
        assert!(skew < Duration::from_secs(60), "{skew:?}");
        // end_time is there exactly when the job has ended.
        assert_eq!(job.end_time.is_some(), job.state().is_final(), "{job:?}");
    }
    let bad_token = client
        .list_jobs(pb::ListJobsRequest {
            page_size: 2,
            page_token: "jobs/1".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    let violation = bad_token.get_error_details();
    let violation = violation.bad_request().expect("a BadRequest");
    assert_eq!(violation.field_violations[0].field, "page_token");

    // A bad problem names its field in a BadRequest.
    let bad = client
        .solve(solve_request("A B\nA C\n", 1))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    let details = bad.get_error_details();
    let violations = &details
        .bad_request()
        .expect("a BadRequest")
        .field_violations;
    assert_eq!(violations[0].field, "problem.dlx", "{bad:?}");
    assert!(violations[0].description.contains("line 2"), "{bad:?}");

    // Durations beside seconds.
    let solved = client
        .solve(solve_request(&instance("queens8"), 1))
        .await
        .unwrap()
        .into_inner();
    let stats = solved.statistics.expect("statistics");
    let elapsed = Duration::try_from(stats.elapsed.expect("elapsed")).unwrap();
    assert!((elapsed.as_secs_f64() - stats.seconds).abs() < 1e-6);
    server.shutdown().await.unwrap();

    // Past the job limit, RESOURCE_EXHAUSTED says which limit in an ErrorInfo.
    let server = serve(config(1)).await;
    let mut client = connect(server.addr).await;
    let long = || pb::CreateJobRequest {
        source: dlx(instance("queens15")).map(pb::create_job_request::Source::Problem),
        count_only: true,
        ..Default::default()
    };
    let first = create_job(&mut client, long()).await;
    let refused = client.create_job(long()).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    let details = refused.get_error_details();
    let info = details.error_info().expect("an ErrorInfo");
    assert_eq!(info.reason, "TOO_MANY_JOBS");
    client
        .cancel_job(pb::CancelJobRequest { name: first })
        .await
        .unwrap();
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------
// 9. Small calls first (issue 14): unary calls are interactive work
// ---------------------------------------------------------------------------

const SUDOKU_PUZZLE: &str =
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";

type PuzzleClient = pb::puzzle_service_client::PuzzleServiceClient<Channel>;

async fn connect_puzzles(addr: SocketAddr) -> PuzzleClient {
    let channel = within(
        "connect",
        STEP,
        Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect(),
    )
    .await
    .expect("connect to the server");
    PuzzleClient::new(channel)
}

async fn start_count(client: &mut Client, text: &str) -> Streaming<pb::EnumerateResponse> {
    within(
        "Enumerate",
        STEP,
        client.enumerate(pb::EnumerateRequest {
            problem: dlx(text),
            count_only: true,
            engine: pb::Engine::Links as i32,
            ..Default::default()
        }),
    )
    .await
    .expect("the count starts")
    .into_inner()
}

/// A Solve and a CheckPuzzle are answered while long enumerations hold
/// both workers and both job slots (`--max-jobs 2`): they are admitted
/// under their own limit, and a running enumeration yields a worker to
/// them at its next poll (counted by the pool) instead of refusing them or
/// making them wait for a time slice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_calls_are_served_while_long_jobs_hold_every_worker_and_slot() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(2)).await;
    let pool = server.pool.clone();
    let mut client = connect(server.addr).await;
    let big = instance("queens15");
    let mut counts = Vec::new();
    for _ in 0..2 {
        counts.push(start_count(&mut client, &big).await);
    }
    {
        let pool = pool.clone();
        wait_for("both counts hold both workers", STEP, move || {
            pool.active_jobs() == 2 && pool.busy_workers() == 2
        })
        .await;
    }
    let r = client
        .enumerate(pb::EnumerateRequest {
            problem: dlx(instance("queens8")),
            count_only: true,
            ..Default::default()
        })
        .await
        .map(|_| ());
    assert_status(
        "a third long job",
        r,
        Code::ResourceExhausted,
        &["too many jobs"],
    );
    let yielded = pool.tasks_yielded();
    for (name, limit, found) in [("queens8", 2, 2), ("sudoku_hard17", 2, 1)] {
        let text = instance(name);
        let reply = within(
            "Solve while every slot is taken",
            STEP,
            client.solve(solve_request(&text, limit)),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: Solve refused while long jobs are full: {e:?}"))
        .into_inner();
        assert_eq!(reply.solutions.len(), found, "{name}");
        assert_eq!(reply.exhausted, found < limit as usize, "{name}");
        for s in &reply.solutions {
            check_solution(name, &parse(&text), s, true);
        }
    }
    let mut puzzles = connect_puzzles(server.addr).await;
    let check = within(
        "CheckPuzzle while every slot is taken",
        STEP,
        puzzles.check_puzzle(pb::CheckPuzzleRequest {
            puzzle: Some(pb::Puzzle {
                kind: pb::PuzzleKind::Sudoku as i32,
                grid: Some(pb::puzzle::Grid::Text(SUDOKU_PUZZLE.to_string())),
                ..Default::default()
            }),
        }),
    )
    .await
    .expect("CheckPuzzle is answered")
    .into_inner();
    assert!(check.valid && check.solutions_found == 1, "{check:?}");
    // The counts held their workers all along, and gave them up for the
    // small calls at a poll.
    assert_eq!(pool.active_jobs(), 2, "the counts go on");
    assert!(
        pool.tasks_yielded() > yielded,
        "no count yielded its worker to a small call"
    );
    drop(counts);
    wait_idle(&server, Duration::from_secs(10)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// Enumerations interrupted by many small calls (their runs yield and
/// resume from their checkpoints, every 64 nodes looking at the pool)
/// still give exactly the unsplit search's answer: latin5's solutions
/// streamed, each once, and queens13's count with the nodes and updates of
/// a single-threaded search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enumerations_interrupted_by_small_calls_lose_nothing() {
    let _serial = SERIAL.lock().await;
    let mut cfg = config(4);
    cfg.pool.poll_interval = 64;
    let server = serve(cfg).await;
    let pool = server.pool.clone();
    let latin = instance("latin5");
    let queens = instance("queens13");
    let alone = {
        let problem = parse(&queens);
        tokio::task::spawn_blocking(move || {
            Solver::new(&problem)
                .run(
                    &Task::root(),
                    &RunConfig::default(),
                    &mut xccd::xcc::CountOnly,
                )
                .unwrap()
                .stats
        })
        .await
        .unwrap()
    };
    let expected = all_solutions(&parse(&latin)).await;
    let yielded = pool.tasks_yielded();

    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut callers = Vec::new();
    for name in ["queens8", "sudoku_hard17"] {
        let mut client = connect(server.addr).await;
        let text = instance(name);
        let done = done.clone();
        callers.push(tokio::spawn(async move {
            let mut calls = 0u32;
            while !done.load(std::sync::atomic::Ordering::SeqCst) && calls < 100_000 {
                let reply = client.solve(solve_request(&text, 1)).await.unwrap();
                assert_eq!(reply.into_inner().solutions.len(), 1, "{name}");
                calls += 1;
            }
            calls
        }));
    }
    let mut client = connect(server.addr).await;
    let mut count = start_count(&mut client, &queens).await;
    let streamed = enumerate_all(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(&latin),
            batch_size: 64,
            ..Default::default()
        },
    )
    .await
    .expect("latin5 streams to its end");
    let mut counted = Events::default();
    drain(&mut count, STREAM, &mut counted, enum_event)
        .await
        .expect("queens13 counts to its end");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut calls = 0;
    for caller in callers {
        calls += within("the small calls end", STEP, caller).await.unwrap();
    }

    let summary = streamed.summary();
    assert_eq!(summary.solutions, expected.len() as u64);
    let got: BTreeSet<Vec<u32>> = streamed.solutions.iter().map(indices).collect();
    assert_eq!(
        got.len(),
        streamed.solutions.len(),
        "latin5: a solution came twice"
    );
    assert!(
        got == expected,
        "latin5: not the unsplit search's solutions"
    );
    let summary = counted.summary();
    let stats = summary.statistics.clone().unwrap();
    assert_eq!(summary.solutions, alone.solutions, "queens13");
    assert_eq!(
        (stats.nodes, stats.updates, stats.cleansings),
        (alone.nodes, alone.updates, alone.cleansings),
        "queens13: nodes, updates, cleansings"
    );
    let yields = pool.tasks_yielded() - yielded;
    eprintln!("{calls} small calls; the enumerations yielded {yields} times");
    assert!(yields > 0, "no enumeration yielded: the test tests nothing");
    wait_idle(&server, Duration::from_secs(10)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// A reader slower than the search, with progress every 0.2 s: the
/// solutions always wait in the job's buffer, and progress events still
/// come between them (once the few messages that the channel and the
/// transport already held are read), not only at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_gets_progress_while_solutions_wait() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(4)).await;
    // HTTP/2's own default windows (tonic's client asks for 2 MiB): what
    // the transport holds unread is bounded in bytes, and so is the number
    // of messages read before a progress event sent after them.
    let channel = Channel::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535);
    let channel = within("connect", STEP, channel.connect()).await.unwrap();
    let mut client = Client::new(channel);
    let mut stream = within(
        "Enumerate",
        STEP,
        client.enumerate(pb::EnumerateRequest {
            problem: dlx(instance("queens15")),
            batch_size: 4096,
            progress_interval_seconds: 0.2,
            ..Default::default()
        }),
    )
    .await
    .unwrap()
    .into_inner();
    let mut ev = Events::default();
    // Batches of queens15 hold the solutions found between two polls (tens
    // of them): the stream cannot end within the 300 messages read here.
    // After the few the transport holds, a progress event comes about
    // every tenth message (one a 0.2 s interval, a message read every
    // 20 ms, or more of them if reading is slower).
    for _ in 0..300 {
        let m = next(&mut stream, STEP).await.unwrap().expect("a message");
        ev.push(enum_event(m));
        if ev.progress.len() >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "slow reader: {} progress events in {} messages ({} solutions)",
        ev.progress.len(),
        ev.messages,
        ev.solutions.len()
    );
    assert!(ev.summary.is_none(), "the stream went on");
    assert!(
        ev.progress.len() >= 10,
        "{} progress events in {} messages ({} batches) read over {:?}",
        ev.progress.len(),
        ev.messages,
        ev.batches.len(),
        Duration::from_millis(20) * ev.messages as u32
    );
    let p = ev.progress.last().unwrap();
    assert!(p.solutions > 0 && p.fraction_done < 1.0, "{p:?}");
    drop(stream);
    wait_idle(&server, Duration::from_secs(10)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}
