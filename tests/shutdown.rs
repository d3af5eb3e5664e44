//! A server's shutdown never makes a cut-off answer look complete: SIGTERM
//! to a real `xccd serve` process during each kind of stream (Enumerate with
//! solutions and count-only, EnumeratePuzzle, WatchJob, Enumerate on a
//! coordinator with a remote worker) delivers the summary with reason
//! SHUTDOWN, then ends the call with UNAVAILABLE carrying a RetryInfo and
//! the ErrorInfo reason SHUTTING_DOWN; a Solve cut short answers the same;
//! `xccd solve --count --server` cut off this way exits 3 and says the count
//! is partial.

mod common;

use common::queens::queens_dlx;
use common::service::{create_job, free_port, xccd_with_token, Log, Process, XCCD};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::Code;
use tonic_types::StatusExt;
use xccd::service::proto as pb;

type Solver = pb::solver_service_client::SolverServiceClient<Channel>;
type Puzzles = pb::puzzle_service_client::PuzzleServiceClient<Channel>;

const TOKEN: &str = "shutdown-test-worker-token";

fn problem(n: usize) -> Option<pb::Problem> {
    Some(pb::Problem {
        source: Some(pb::problem::Source::Dlx(queens_dlx(n))),
    })
}

/// `xccd ARGS` at the tests' log level, with their worker token.
fn spawn(name: &str, args: &[&str]) -> Process {
    let mut command = xccd_with_token(TOKEN);
    command.args(args);
    Process::start(command, Log::Create(format!("shutdown-{name}.log")))
}

fn serve(name: &str, listen: SocketAddr, extra: &[&str]) -> Process {
    let listen = listen.to_string();
    let mut args = vec!["serve", "--listen", &listen, "--data-dir", "none"];
    args.extend_from_slice(extra);
    spawn(name, &args)
}

/// One message of a stream, whatever the RPC.
enum Seen {
    Progress(pb::Progress),
    Summary(pb::Summary),
    Other,
}

/// Reads a stream until it has shown `started` (progress with some nodes),
/// SIGTERMs `server`, and reads on to the end: the summary must come with
/// reason SHUTDOWN, then the status UNAVAILABLE with a RetryInfo and the
/// ErrorInfo reason SHUTTING_DOWN.
async fn cut_off<M: std::fmt::Debug>(
    what: &str,
    mut stream: tonic::Streaming<M>,
    server: &mut Process,
    event: impl Fn(M) -> Seen,
) {
    let bound = Instant::now() + Duration::from_secs(60);
    loop {
        match next(what, &mut stream, bound).await {
            Ok(Some(m)) => match event(m) {
                Seen::Progress(p) if p.nodes > 0 => break,
                Seen::Summary(s) => panic!("{what}: the search ended before SIGTERM: {s:?}"),
                _ => {}
            },
            other => panic!("{what}: the stream ended before SIGTERM: {other:?}"),
        }
    }
    server.sigterm();
    let summary = loop {
        match next(what, &mut stream, bound).await {
            Ok(Some(m)) => {
                if let Seen::Summary(s) = event(m) {
                    break s;
                }
            }
            other => panic!("{what}: the stream ended without a summary: {other:?}"),
        }
    };
    assert_eq!(
        summary.reason,
        pb::EndReason::Shutdown as i32,
        "{what}: {summary:?}"
    );
    assert!(!summary.exhausted, "{what}: {summary:?}");
    let status = match next(what, &mut stream, bound).await {
        Err(status) => status,
        other => panic!("{what}: after a SHUTDOWN summary the stream ended with {other:?}"),
    };
    assert_eq!(status.code(), Code::Unavailable, "{what}: {status:?}");
    let details = status.get_error_details();
    let info = details
        .error_info()
        .unwrap_or_else(|| panic!("{what}: no ErrorInfo: {status:?}"));
    assert_eq!(info.reason, "SHUTTING_DOWN", "{what}");
    assert_eq!(info.domain, "xccd", "{what}");
    let retry = details
        .retry_info()
        .unwrap_or_else(|| panic!("{what}: no RetryInfo: {status:?}"));
    assert!(
        retry.retry_delay.is_some_and(|d| d > Duration::ZERO),
        "{what}: {retry:?}"
    );
    assert_eq!(server.exited(), Some(0), "{what}: the server's exit");
}

/// The next message of a stream, within `bound`.
async fn next<M>(
    what: &str,
    stream: &mut tonic::Streaming<M>,
    bound: Instant,
) -> Result<Option<M>, tonic::Status> {
    tokio::time::timeout_at(bound.into(), stream.message())
        .await
        .unwrap_or_else(|_| panic!("{what}: the stream does not end"))
}

fn enumerate_event(m: pb::EnumerateResponse) -> Seen {
    use pb::enumerate_response::Event as E;
    match m.event {
        Some(E::Progress(p)) => Seen::Progress(p),
        Some(E::Summary(s)) => Seen::Summary(s),
        _ => Seen::Other,
    }
}

async fn enumerate_is_cut_off(what: &str, server_args: &[&str], worker: bool, count_only: bool) {
    let addr = free_port();
    let mut server = serve(what, addr, server_args);
    let _worker = worker.then(|| {
        // A pure coordinator listens for workers on the next port.
        let workers = SocketAddr::new(addr.ip(), addr.port() + 1);
        let coordinator = format!("http://{workers}");
        spawn(
            &format!("{what}-worker"),
            &["worker", "--coordinator", &coordinator, "--threads", "1"],
        )
    });
    let mut client = Solver::new(server.channel(addr).await);
    let stream = client
        .enumerate(pb::EnumerateRequest {
            problem: problem(18),
            count_only,
            progress_interval_seconds: 0.05,
            ..Default::default()
        })
        .await
        .expect("Enumerate starts")
        .into_inner();
    cut_off(what, stream, &mut server, enumerate_event).await;
}

#[tokio::test]
async fn enumerate_with_solutions_ends_unavailable_after_its_summary() {
    enumerate_is_cut_off("enumerate", &["--threads", "2"], false, false).await;
}

#[tokio::test]
async fn count_only_enumerate_ends_unavailable_after_its_summary() {
    enumerate_is_cut_off("count", &["--threads", "2"], false, true).await;
}

#[tokio::test]
async fn enumerate_on_a_coordinator_ends_unavailable_after_its_summary() {
    enumerate_is_cut_off("coordinator", &["--threads", "0"], true, true).await;
}

#[tokio::test]
async fn enumerate_puzzle_ends_unavailable_after_its_summary() {
    let addr = free_port();
    let mut server = serve("puzzle", addr, &["--threads", "2"]);
    let mut client = Puzzles::new(server.channel(addr).await);
    // Latin squares of order 9: far more than any test could count.
    let blank = ". . . . . . . . .\n".repeat(9);
    let stream = client
        .enumerate_puzzle(pb::EnumeratePuzzleRequest {
            puzzle: Some(pb::Puzzle {
                kind: pb::PuzzleKind::Latin as i32,
                grid: Some(pb::puzzle::Grid::Text(blank)),
                ..Default::default()
            }),
            count_only: true,
            progress_interval_seconds: 0.05,
            ..Default::default()
        })
        .await
        .expect("EnumeratePuzzle starts")
        .into_inner();
    cut_off("EnumeratePuzzle", stream, &mut server, |m| {
        use pb::enumerate_puzzle_response::Event as E;
        match m.event {
            Some(E::Progress(p)) => Seen::Progress(p),
            Some(E::Summary(s)) => Seen::Summary(s),
            _ => Seen::Other,
        }
    })
    .await;
}

#[tokio::test]
async fn watch_job_ends_unavailable_after_its_summary() {
    let addr = free_port();
    let mut server = serve("watch", addr, &["--threads", "2"]);
    let mut client = Solver::new(server.channel(addr).await);
    let job = create_job(
        &mut client,
        pb::CreateJobRequest {
            source: problem(18).map(pb::create_job_request::Source::Problem),
            count_only: true,
            ..Default::default()
        },
    )
    .await;
    let stream = client
        .watch_job(pb::WatchJobRequest {
            name: job,
            progress_interval_seconds: 0.05,
            ..Default::default()
        })
        .await
        .expect("WatchJob starts")
        .into_inner();
    cut_off("WatchJob", stream, &mut server, |m| {
        use pb::watch_job_response::Event as E;
        match m.event {
            Some(E::Progress(p)) => Seen::Progress(p),
            Some(E::Summary(s)) => Seen::Summary(s),
            _ => Seen::Other,
        }
    })
    .await;
}

/// n queens where row 0 is covered by an option with no column: no
/// solution, found only by exploring a tree of minutes for n = 18.
fn fruitless_queens(n: usize) -> String {
    let mut text = queens_dlx(n);
    text.insert_str(0, "Z ");
    text.push_str("Z r0\n");
    text
}

#[tokio::test]
async fn solve_answers_unavailable_when_cut_short() {
    let addr = free_port();
    let mut server = serve("solve", addr, &["--threads", "2"]);
    let mut client = Solver::new(server.channel(addr).await);
    let call = tokio::spawn(async move {
        client
            .solve(pb::SolveRequest {
                problem: Some(pb::Problem {
                    source: Some(pb::problem::Source::Dlx(fruitless_queens(18))),
                }),
                ..Default::default()
            })
            .await
    });
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!call.is_finished(), "Solve ended before SIGTERM");
    server.sigterm();
    let status = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("Solve answers")
        .unwrap()
        .expect_err("a Solve the shutdown cut short is not OK");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    let details = status.get_error_details();
    assert_eq!(details.error_info().unwrap().reason, "SHUTTING_DOWN");
    assert!(details.retry_info().is_some(), "{status:?}");
    assert_eq!(server.exited(), Some(0));
}

#[tokio::test]
async fn a_cut_off_count_on_a_server_exits_3_and_says_it_is_partial() {
    let addr = free_port();
    let mut server = serve("cli", addr, &["--threads", "2"]);
    // Serving before the client starts.
    server.channel(addr).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("queens18.dlx");
    std::fs::write(&file, queens_dlx(18)).unwrap();
    let client = Command::new(XCCD)
        .args(["solve", "--count", "--server", &format!("http://{addr}")])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start xccd solve");
    // SIGTERM once the server is searching for it (queens18 takes minutes).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.sigterm();
    let out = client.wait_with_output().expect("xccd solve ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "stdout {stdout}, stderr {stderr}"
    );
    assert!(
        stderr.contains("cut short") && stderr.contains("shutting down"),
        "{stderr}"
    );
    assert!(stderr.contains("the count printed is partial"), "{stderr}");
    // The partial count is printed, and it is not queens18's 666,090,624.
    let count: u64 = stdout.trim().parse().expect("a count on stdout");
    assert!(count < 666_090_624, "{count}");
    assert_eq!(server.exited(), Some(0));
}
