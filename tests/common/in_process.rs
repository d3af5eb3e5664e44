//! The fixtures of the in-process server's tests (`tests/service_*.rs`):
//! the benchmark's known counts, problems in the structured form, a server
//! on loopback with a pool of two workers, the events a stream delivered,
//! and bounded waits for answers, messages and idleness.
//!
//! Each test starts its own server on `127.0.0.1:0`. The tests of a file
//! take [`SERIAL`] so that they run one at a time: they measure the pool's
//! idleness and the process's memory, which other tests' servers in the
//! same process would disturb. Every wait is bounded in time (and every
//! loop in count). What a test checks stays in its file.

// Requests name the fields they set and default the rest (as the tests do).
#![allow(clippy::needless_update)]

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use tonic::{Code, Status, Streaming};
use xccd::service::proto as pb;
use xccd::service::server::{start, RunningServer, ServeConfig};
use xccd::service::PoolConfig;
use xccd::xcc::{dlx_format, Collect, Problem, RunConfig, Solver, Task};

use super::service::{dlx, wait_for, Client, Drained};
pub use pb::enumerate_response::Event;

/// Runs the tests one at a time (see the module's documentation).
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The bound of one step that should take well under a second.
pub const STEP: Duration = Duration::from_secs(30);
/// The bound of a whole stream.
pub const STREAM: Duration = Duration::from_secs(120);
/// Most messages a test reads from one stream.
pub const MAX_MESSAGES: usize = 2_000_000;

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

pub fn bench_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/bench"))
}

/// The solution counts of `knuth-reference.tsv` (independent of this crate).
pub fn known_counts() -> HashMap<String, u64> {
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

pub fn known(name: &str) -> u64 {
    *known_counts()
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not in knuth-reference.tsv"))
}

pub fn parse(text: &str) -> Problem {
    dlx_format::parse(text).expect("benchmark instances parse")
}

/// Every solution, from the engine in this process.
pub async fn all_solutions(problem: &Problem) -> BTreeSet<Vec<u32>> {
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

pub fn structured(s: pb::StructuredProblem) -> Option<pb::Problem> {
    Some(pb::Problem {
        source: Some(pb::problem::Source::Structured(s)),
    })
}

/// Translates DLX text into the structured form, independently of the
/// crate's reader (a minimal reading of the format, enough for the
/// benchmark instances: `|` comments, `u:v|name` and `v|name` bounds).
pub fn to_structured(text: &str) -> pb::StructuredProblem {
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

pub fn config(max_jobs: usize) -> ServeConfig {
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

pub async fn serve(config: ServeConfig) -> RunningServer {
    start(config).await.expect("the server starts on loopback")
}

/// Awaits `f`, failing the test if it takes longer than `limit`.
pub async fn within<F: Future>(what: &str, limit: Duration, f: F) -> F::Output {
    match tokio::time::timeout(limit, f).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: no answer within {limit:?}"),
    }
}

/// Waits until the pool has no job and no busy worker; returns the time.
pub async fn wait_idle(server: &RunningServer, limit: Duration) -> Duration {
    let pool = server.pool.clone();
    wait_for("the pool becomes idle", limit, move || {
        pool.active_jobs() == 0 && pool.busy_workers() == 0 && pool.queued_tasks() == 0
    })
    .await
}

pub fn indices(s: &pb::Solution) -> Vec<u32> {
    s.option_indices.clone()
}

/// Checks a solution from the server: ascending indices, an exact cover of
/// `problem` (its own check), and, when given, option texts that match.
pub fn check_solution(name: &str, problem: &Problem, s: &pb::Solution, with_text: bool) {
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
pub struct Events {
    pub solutions: Vec<pb::Solution>,
    pub batches: Vec<usize>,
    /// `packed_index_bytes` of the packed batches.
    pub index_bytes: BTreeSet<u32>,
    pub progress: Vec<pb::Progress>,
    pub summary: Option<pb::Summary>,
    /// Messages after the summary (there must be none).
    pub after_summary: usize,
    pub messages: usize,
}

impl Events {
    pub fn push(&mut self, event: Event) {
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

    pub fn summary(&self) -> &pb::Summary {
        assert_eq!(self.after_summary, 0, "messages after the summary");
        self.summary
            .as_ref()
            .expect("the stream ended with a summary")
    }
}

/// A problem of `n + 1` options and `n` solutions: option `i < n` covers A
/// (and a secondary item of its own), option `n` covers B, so a solution
/// holds index `n`.
pub fn pairs(n: usize) -> String {
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
pub fn unpack(batch: &pb::SolutionBatch) -> Vec<pb::Solution> {
    super::packed::unpack(batch)
        .into_iter()
        .map(|option_indices| pb::Solution {
            option_indices,
            ..Default::default()
        })
        .collect()
}

pub fn enum_event(r: pb::EnumerateResponse) -> Event {
    r.event.expect("every message has an event")
}

pub fn watch_event(r: pb::WatchJobResponse) -> Event {
    use pb::watch_job_response::Event as W;
    match r.event.expect("every message has an event") {
        W::Solutions(b) => Event::Solutions(b),
        W::Progress(p) => Event::Progress(p),
        W::Summary(s) => Event::Summary(s),
    }
}

/// Reads one message, failing the test if none comes within `limit`.
pub async fn next<T>(stream: &mut Streaming<T>, limit: Duration) -> Result<Option<T>, Status> {
    within("the next message of a stream", limit, stream.message()).await
}

/// Reads a stream to its end (or error) within `limit`.
pub async fn drain<T>(
    stream: &mut Streaming<T>,
    limit: Duration,
    events: &mut Events,
    event: fn(T) -> Event,
) -> Result<(), Status> {
    let deadline = tokio::time::Instant::now() + limit;
    let end =
        super::service::drain(stream, deadline, MAX_MESSAGES, |m| events.push(event(m))).await;
    match end {
        Drained::Ended => Ok(()),
        Drained::Failed(status) => Err(status),
        Drained::Late => panic!("the stream did not end within {limit:?} ({events:?})"),
        Drained::Capped => panic!("the stream sent more than {MAX_MESSAGES} messages"),
    }
}

pub async fn enumerate_all(
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
pub fn assert_status<T: std::fmt::Debug>(
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
pub fn rss_kib() -> u64 {
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

pub fn solve_request(text: &str, limit: u64) -> pb::SolveRequest {
    pb::SolveRequest {
        problem: dlx(text),
        limit,
        include_option_text: true,
        max_nodes: 0,
        ..Default::default()
    }
}
