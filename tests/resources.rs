//! Requests that used to exhaust the server now get a clear status, and the
//! server's memory stays bounded.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::Code;
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;

const XCCD: &str = env!("CARGO_BIN_EXE_xccd");

type Client = SolverServiceClient<Channel>;

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// An `xccd serve` process, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let addr = free_port();
        let child = Command::new(XCCD)
            .args(["serve", "--threads", "1", "--listen", &addr.to_string()])
            // Memory is what these tests measure: jobs stay in it.
            .args(["--data-dir", "none"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Server { child, addr }
    }

    async fn client(&self) -> Client {
        let start = Instant::now();
        loop {
            let endpoint = Channel::from_shared(format!("http://{}", self.addr)).unwrap();
            if let Ok(channel) = endpoint.connect().await {
                return Client::new(channel)
                    .max_encoding_message_size(usize::MAX)
                    .max_decoding_message_size(64 << 20);
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the server never answered"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The resident memory of the server process, in MiB.
    fn rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kib / 1024
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dlx(text: String) -> Option<pb::Problem> {
    Some(pb::Problem {
        source: Some(pb::problem::Source::Dlx(text)),
    })
}

/// A problem of about `mib` MiB of DLX text: 1,000 primary items, options
/// of two of them.
fn big_problem(mib: usize) -> String {
    let mut text: String = (0..1000).map(|i| format!("P{i} ")).collect();
    text.push('\n');
    let mut k = 0usize;
    while text.len() < mib << 20 {
        text.push_str(&format!("P{} P{}\n", k % 1000, (k * 7 + 1) % 1000));
        k += 1;
    }
    text
}

/// 60 submitted jobs of an 8 MiB problem, stopped at once by a node limit:
/// an ended job keeps only its summary and kept solutions, so the server
/// stays under 600 MiB (it kept every problem for the retention period
/// before: about 35 MB per job, 5.3 GB after 190 of them). Past
/// --max-retained-jobs the oldest ended jobs are forgotten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_jobs_keep_no_problem_and_are_capped() {
    let server = Server::start(&["--max-retained-jobs", "20"]);
    let mut client = server.client().await;
    let problem = big_problem(8);
    let mut ids = Vec::new();
    let mut peak = 0;
    for _ in 0..60 {
        let id = client
            .create_job(pb::CreateJobRequest {
                source: dlx(problem.clone()).map(pb::create_job_request::Source::Problem),
                max_nodes: 1,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .job
            .expect("CreateJob returns the job")
            .name;
        ids.push(id);
        peak = peak.max(server.rss_mib());
        if ids.len() % 10 == 0 {
            eprintln!("after {} jobs: {} MiB", ids.len(), server.rss_mib());
        }
    }
    // Wait for the last jobs to end, then list.
    let start = Instant::now();
    let listed = loop {
        let jobs = client
            .list_jobs(pb::ListJobsRequest::default())
            .await
            .unwrap()
            .into_inner()
            .jobs;
        if jobs.iter().all(|j| j.summary.is_some()) && jobs.len() <= 20 {
            break jobs;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} jobs listed",
            jobs.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(listed.len(), 20);
    assert!(listed
        .iter()
        .all(|j| j.summary.as_ref().unwrap().reason == pb::EndReason::NodeLimit as i32));
    // The oldest went first: the last 20 are the ones left.
    let kept: Vec<&str> = listed.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        kept,
        ids[40..].iter().map(String::as_str).collect::<Vec<_>>()
    );
    let status = client
        .get_job(pb::GetJobRequest {
            name: ids[0].clone(),
            max_solutions: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    let rss = server.rss_mib();
    eprintln!("server memory after 60 jobs of 8 MiB: {rss} MiB (peak {peak} MiB)");
    assert!(peak < 600, "the server grew to {peak} MiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_tokens_and_requests_get_short_clear_errors() {
    let server = Server::start(&["--max-problem-bytes", "4194304"]);
    let mut client = server.client().await;
    // A 1 MB unknown item name: the error names it in a few dozen
    // characters, not twice a megabyte.
    let name = "X".repeat(1 << 20);
    let status = client
        .solve(pb::SolveRequest {
            problem: dlx(format!("A B\nA {name}\n")),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().len() < 400,
        "{} bytes",
        status.message().len()
    );
    assert!(
        status.message().contains("line 2") && status.message().contains("1048576 bytes"),
        "{}",
        status.message()
    );
    // Just over the limit and far over it: the same status, naming the
    // limit.
    for size in [(4 << 20) + 100, 12 << 20] {
        let text = format!("A\nA\n|{}\n", "x".repeat(size));
        let status = client
            .solve(pb::SolveRequest {
                problem: dlx(text),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{size}: {status:?}");
        assert!(status.message().contains("4194304"), "{size}: {status:?}");
    }
    // And the server serves on.
    let reply = client
        .solve(pb::SolveRequest {
            problem: dlx("A B\nA\nB\n".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(reply.into_inner().solutions.len(), 1);
}

/// Puzzles whose encoding would be huge (a blank 1x5000 hidato: 50 million
/// options, 15-30 s and gigabytes to build; a 40x40 hidato with one clue)
/// are refused from their size, in milliseconds, naming the limit; while
/// they arrive, a small Solve is answered at once and the memory stays low.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puzzles_too_large_to_encode_are_refused_before_encoding() {
    use xccd::service::proto::puzzle_service_client::PuzzleServiceClient;
    let server = Server::start(&[]);
    let mut solver = server.client().await;
    let channel = Channel::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let blank = |rows: usize, cols: usize| format!("{}\n", vec!["."; cols].join(" ")).repeat(rows);
    let mut one_clue = blank(40, 40);
    one_clue.replace_range(0..1, "1");
    let mut calls = Vec::new();
    for text in [blank(1, 5000), one_clue].into_iter().cycle().take(8) {
        let mut puzzles = PuzzleServiceClient::new(channel.clone());
        calls.push(tokio::spawn(async move {
            let start = Instant::now();
            let status = puzzles
                .solve_puzzle(pb::SolvePuzzleRequest {
                    puzzle: Some(pb::Puzzle {
                        kind: pb::PuzzleKind::Hidato as i32,
                        grid: Some(pb::puzzle::Grid::Text(text)),
                        ..Default::default()
                    }),
                    limit: 1,
                    ..Default::default()
                })
                .await
                .unwrap_err();
            (status, start.elapsed())
        }));
    }
    let start = Instant::now();
    let reply = solver
        .solve(pb::SolveRequest {
            problem: dlx(include_str!("../examples/queens8.dlx").into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let small = start.elapsed();
    assert_eq!(reply.into_inner().solutions.len(), 1);
    for call in calls {
        let (status, took) = call.await.unwrap();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(
            status.message().contains("above the limit of"),
            "{}",
            status.message()
        );
        assert!(took < Duration::from_secs(2), "refused after {took:?}");
    }
    assert!(
        small < Duration::from_secs(2),
        "a small Solve waited {small:?}"
    );
    let rss = server.rss_mib();
    assert!(rss < 200, "the server grew to {rss} MiB");
}
