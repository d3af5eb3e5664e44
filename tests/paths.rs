//! Every way of running a puzzle gives the same solutions, and they are the
//! solutions a brute-force solver that knows nothing of XCC finds
//! (`tests/common`).
//!
//! Random puzzles of every kind (hitori and slitherlink full and weak,
//! futoshiki in both encodings) go through every path:
//! - the library (`puzzles::solve`),
//! - the CLI on one thread (`xccd puzzle solve --all`: the library's
//!   solutions in the library's order) and on a pool (`--threads 2`),
//! - the pool in this process with 1 and 2 threads,
//! - a server (2 threads): SolvePuzzle, EnumeratePuzzle (solutions and
//!   counts), CheckPuzzle, and the CLI's `--server`,
//! - a cluster: a pure coordinator (`--threads 0`) with two `xccd worker`
//!   processes, one of them killed with SIGKILL half-way, in the middle of a
//!   long enumeration, and replaced.
//!
//! Pools, servers and the coordinator poll every 8 nodes, so even small
//! searches are cut into many tasks that move between threads and
//! processes. `XCCD_PATHS_CASES` sets the random puzzles per kind
//! (default 16, each in both settings where the kind has two).

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{server, Worker};
use common::service::wait_for;
use common::{brute_solutions, random_case, Case, Rng};
use tonic::transport::Channel;
use xccd::puzzles::{self, Encoded, FutoshikiEncoding, Kind, Puzzle};
use xccd::run::SideCondition;
use xccd::service::job::Event;
use xccd::service::proto as pb;
use xccd::service::proto::puzzle_service_client::PuzzleServiceClient;
use xccd::service::puzzle_input::puzzle_message;
use xccd::service::server::RunningServer;
use xccd::service::{Delivery, JobSpec, Pool, PoolConfig};

const XCCD: &str = env!("CARGO_BIN_EXE_xccd");
/// The token the cluster's workers present.
/// Polls this often: small searches still split into many tasks.
const POLL_NODES: u64 = 8;

type Client = PuzzleServiceClient<Channel>;

fn cases_per_kind() -> usize {
    std::env::var("XCCD_PATHS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

/// The random cases: for each kind, puzzles in both settings.
fn cases() -> Vec<Case> {
    let mut rng = Rng::new(20_261_130);
    let mut cases = Vec::new();
    for kind in Kind::ALL {
        for _ in 0..cases_per_kind() {
            let case = random_case(kind, &mut rng);
            cases.extend(case.variant());
            cases.push(case);
        }
    }
    cases
}

fn puzzle(case: &Case) -> Puzzle {
    Puzzle {
        kind: case.kind,
        text: case.text.clone(),
        options: case.options(),
    }
}

fn pb_puzzle(case: &Case) -> Option<pb::Puzzle> {
    Some(puzzle_message(&puzzle(case)))
}

/// A set of solutions, after checking that none came twice.
fn set_of(what: &str, case: &Case, grids: Vec<String>) -> BTreeSet<String> {
    let n = grids.len();
    let set: BTreeSet<String> = grids.into_iter().collect();
    assert_eq!(set.len(), n, "{what}: a solution came twice\n{case}");
    set
}

/// Asserts that a path found exactly the expected solutions.
fn same(what: &str, case: &Case, expected: &BTreeSet<String>, grids: Vec<String>) {
    let got = set_of(what, case, grids);
    if &got != expected {
        let missing: Vec<&String> = expected.difference(&got).take(3).collect();
        let extra: Vec<&String> = got.difference(expected).take(3).collect();
        panic!(
            "{what}: {} solutions instead of {}\n{case}\nmissing (first 3): {missing:#?}\nextra (first 3): {extra:#?}",
            got.len(),
            expected.len()
        );
    }
}

// ----- The paths -----

fn library(case: &Case) -> (Vec<String>, Arc<dyn Encoded>) {
    let encoded: Arc<dyn Encoded> = Arc::from(puzzle(case).encode().expect("the case encodes"));
    let found = puzzles::solve(&*encoded, None, usize::MAX);
    assert!(found.complete && found.error.is_none(), "library\n{case}");
    assert_eq!(found.count as usize, found.grids.len());
    (found.grids, encoded)
}

/// The grids `xccd puzzle solve` printed: each ends with a newline, and a
/// blank line separates two.
fn printed_grids(output: &str) -> Vec<String> {
    if output.is_empty() {
        return Vec::new();
    }
    output
        .split("\n\n")
        .map(|grid| {
            let mut grid = grid.to_string();
            if !grid.ends_with('\n') {
                grid.push('\n');
            }
            grid
        })
        .collect()
}

fn cli(case: &Case, extra: &[&str]) -> Vec<String> {
    printed_grids(&cli_output(case, &[&["--all"], extra].concat()))
}

/// What `xccd puzzle solve --count` prints.
fn cli_count(case: &Case, extra: &[&str]) -> usize {
    let output = cli_output(case, &[&["--count"], extra].concat());
    output
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a count: {output:?}\n{case}"))
}

fn cli_output(case: &Case, extra: &[&str]) -> String {
    let mut args = vec!["puzzle", "solve", case.kind.name(), "-", "--quiet"];
    if case.weak {
        args.push("--weak");
    }
    let encoding = match case.encoding {
        FutoshikiEncoding::Pairs => "pairs",
        FutoshikiEncoding::Colors => "colors",
    };
    args.extend(["--encoding", encoding]);
    args.extend(extra);
    let mut child = Command::new(XCCD)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run xccd");
    // The program may exit before reading all of its input.
    let _ = child.stdin.take().unwrap().write_all(case.text.as_bytes());
    let output = child.wait_with_output().expect("xccd ran");
    assert!(
        output.status.success(),
        "xccd {args:?}: {}\n{case}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// The pool in this process, the way the server submits a puzzle.
async fn pool(case: &Case, encoded: &Arc<dyn Encoded>, threads: usize) -> Vec<String> {
    let pool = Pool::new(PoolConfig {
        threads,
        poll_interval: POLL_NODES,
        ..PoolConfig::default()
    });
    let condition: Arc<dyn SideCondition> = encoded.clone();
    let job = pool
        .submit(
            Arc::new(encoded.problem().clone()),
            JobSpec {
                delivery: Delivery::Stream {
                    buffer_batches: 2,
                    batch_size: 3,
                },
                condition: condition.restricts().then_some(condition),
                puzzle: Some(puzzle(case)),
                ..JobSpec::default()
            },
        )
        .expect("the pool takes the job");
    let mut grids = Vec::new();
    {
        loop {
            match job.next_event().await {
                Event::Solutions(batch) => {
                    for solution in &batch {
                        let options: Vec<usize> = solution.iter().map(|&o| o as usize).collect();
                        grids.push(encoded.decode(&options));
                    }
                }
                Event::Snapshot(_) => panic!("a job that is not durable took a snapshot"),
                Event::Done(summary) => {
                    assert_eq!(
                        summary.reason,
                        xccd::service::EndReason::Complete,
                        "pool of {threads}\n{case}"
                    );
                    assert_eq!(summary.solutions as usize, grids.len());
                    break;
                }
            }
        }
    }
    grids
}

/// SolvePuzzle, EnumeratePuzzle (solutions, then counts) and CheckPuzzle on
/// a server or a cluster.
async fn grpc(what: &str, client: &mut Client, case: &Case, expected: &BTreeSet<String>) {
    let solved = client
        .solve_puzzle(pb::SolvePuzzleRequest {
            puzzle: pb_puzzle(case),
            limit: 10_000,
            // The links engine here; EnumeratePuzzle below runs on the
            // server's choice (cells): both must find the oracle's grids.
            engine: pb::Engine::Links as i32,
        })
        .await
        .unwrap_or_else(|s| panic!("{what} SolvePuzzle: {s:?}\n{case}"))
        .into_inner();
    assert!(solved.exhausted, "{what} SolvePuzzle\n{case}");
    let grids = solved.solutions.into_iter().map(|s| s.text).collect();
    same(&format!("{what} SolvePuzzle"), case, expected, grids);

    for count_only in [false, true] {
        let mut stream = client
            .enumerate_puzzle(pb::EnumeratePuzzleRequest {
                puzzle: pb_puzzle(case),
                count_only,
                batch_size: 2,
                ..Default::default()
            })
            .await
            .unwrap_or_else(|s| panic!("{what} EnumeratePuzzle: {s:?}\n{case}"))
            .into_inner();
        let (mut grids, mut summary) = (Vec::new(), None);
        while let Some(message) = stream
            .message()
            .await
            .unwrap_or_else(|s| panic!("{what} EnumeratePuzzle: {s:?}\n{case}"))
        {
            match message.event {
                Some(pb::enumerate_puzzle_response::Event::Solutions(batch)) => {
                    assert!(!count_only && batch.solutions.len() <= 2);
                    grids.extend(batch.solutions.into_iter().map(|s| s.text));
                }
                Some(pb::enumerate_puzzle_response::Event::Summary(s)) => summary = Some(s),
                _ => {}
            }
        }
        let summary = summary.expect("a summary");
        assert!(summary.exhausted, "{what} EnumeratePuzzle\n{case}");
        assert_eq!(
            summary.solutions as usize,
            expected.len(),
            "{what} count\n{case}"
        );
        if !count_only {
            same(&format!("{what} EnumeratePuzzle"), case, expected, grids);
        }
    }

    let check = client
        .check_puzzle(pb::CheckPuzzleRequest {
            puzzle: pb_puzzle(case),
        })
        .await
        .unwrap_or_else(|s| panic!("{what} CheckPuzzle: {s:?}\n{case}"))
        .into_inner();
    assert_eq!(
        check.valid,
        expected.len() == 1,
        "{what} CheckPuzzle\n{case}"
    );
    assert_eq!(check.solutions_found as usize, expected.len().min(2));
    if check.valid {
        assert_eq!(
            check.solution.map(|s| s.text).as_ref(),
            expected.first(),
            "{what} CheckPuzzle's solution\n{case}"
        );
    }
}

// ----- Servers and workers -----

async fn connect(addr: SocketAddr) -> Client {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .expect("connect");
    PuzzleServiceClient::new(channel).max_decoding_message_size(64 << 20)
}

// ----- The test -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_path_gives_the_brute_force_solutions() {
    let started = Instant::now();
    let cases = cases();
    let expected: Vec<BTreeSet<String>> = cases.iter().map(brute_solutions).collect();

    // In this process and through the binary.
    let mut library_grids = Vec::new();
    for (case, expected) in cases.iter().zip(&expected) {
        let (grids, encoded) = library(case);
        same("library", case, expected, grids.clone());
        assert_eq!(
            cli(case, &[]),
            grids,
            "CLI: the library's solutions in its order\n{case}"
        );
        same(
            "CLI --threads 2",
            case,
            expected,
            cli(case, &["--threads", "2"]),
        );
        for threads in [1, 2] {
            let grids = pool(case, &encoded, threads).await;
            same(&format!("pool of {threads}"), case, expected, grids);
        }
        library_grids.push(grids);
    }
    let local = started.elapsed();

    // A server with two threads.
    let served = server(2, POLL_NODES).await;
    let mut client = connect(served.addr).await;
    let url = format!("http://{}", served.addr);
    for (case, expected) in cases.iter().zip(&expected) {
        grpc("server", &mut client, case, expected).await;
        let (owned, url) = (case.clone(), url.clone());
        let (printed, counted) = tokio::task::spawn_blocking(move || {
            let server = ["--server", url.as_str()];
            (cli(&owned, &server), cli_count(&owned, &server))
        })
        .await
        .unwrap();
        same("CLI --server", case, expected, printed);
        assert_eq!(counted, expected.len(), "CLI --count --server\n{case}");
    }
    served.shutdown().await.expect("clean shutdown");
    let server_time = started.elapsed() - local;

    // A cluster: a pure coordinator and two worker processes.
    let coordinator = server(0, POLL_NODES).await;
    let mut client = connect(coordinator.addr).await;
    let mut workers = vec![
        Worker::start(XCCD, coordinator.worker_addr.unwrap(), "paths", "a", 1),
        Worker::start(XCCD, coordinator.worker_addr.unwrap(), "paths", "b", 1),
    ];
    wait_for("two workers", Duration::from_secs(30), || {
        coordinator.pool.remote_slots() == 2
    })
    .await;
    let half = cases.len() / 2;
    for (k, (case, expected)) in cases.iter().zip(&expected).enumerate() {
        if k == half {
            kill_mid_enumeration(&coordinator, &mut client, &mut workers).await;
        }
        grpc("cluster", &mut client, case, expected).await;
    }
    assert!(
        coordinator.pool.tasks_lost() >= 1,
        "the killed worker lost no run: the kill tested nothing"
    );
    coordinator.shutdown().await.expect("clean shutdown");
    drop(workers);
    eprintln!(
        "{} puzzles ({} random ones per kind, in both settings where the kind has two) through 11 paths: {} solutions; in-process and CLI {:.1} s, server {:.1} s, cluster {:.1} s",
        cases.len(),
        cases_per_kind(),
        expected.iter().map(BTreeSet::len).sum::<usize>(),
        local.as_secs_f64(),
        server_time.as_secs_f64(),
        (started.elapsed() - local - server_time).as_secs_f64(),
    );
}

/// Enumerates every loop of a blank 4x5 slitherlink (80,626) on the
/// cluster while one worker is killed with SIGKILL and replaced: the stream
/// still delivers each solution exactly once.
async fn kill_mid_enumeration(
    coordinator: &RunningServer,
    client: &mut Client,
    workers: &mut Vec<Worker>,
) {
    let case = Case::new(Kind::Slitherlink, ".....\n.....\n.....\n.....\n");
    let (grids, _) = library(&case);
    assert_eq!(grids.len(), 80_626);
    let expected: BTreeSet<String> = grids.into_iter().collect();
    let mut stream = client
        .enumerate_puzzle(pb::EnumeratePuzzleRequest {
            puzzle: pb_puzzle(&case),
            batch_size: 64,
            ..Default::default()
        })
        .await
        .expect("EnumeratePuzzle")
        .into_inner();
    let (mut got, mut summary) = (Vec::new(), None);
    let mut killed = false;
    while let Some(message) = stream.message().await.expect("the stream goes on") {
        match message.event {
            Some(pb::enumerate_puzzle_response::Event::Solutions(batch)) => {
                got.extend(batch.solutions.into_iter().map(|s| s.text));
                if !killed && got.len() >= 10_000 {
                    killed = true;
                    let mut victim = workers.remove(0);
                    victim.0.kill().expect("SIGKILL");
                    victim.0.wait().expect("reaped");
                    workers.push(Worker::start(
                        XCCD,
                        coordinator.worker_addr.unwrap(),
                        "paths",
                        "c",
                        1,
                    ));
                }
            }
            Some(pb::enumerate_puzzle_response::Event::Summary(s)) => summary = Some(s),
            _ => {}
        }
    }
    assert!(killed, "the enumeration ended before the kill");
    let summary = summary.expect("a summary");
    assert!(summary.exhausted);
    assert_eq!(summary.solutions, 80_626);
    same("cluster, a worker killed", &case, &expected, got);
    wait_for("the replacement worker", Duration::from_secs(30), || {
        coordinator.pool.remote_slots() == 2
    })
    .await;
}
