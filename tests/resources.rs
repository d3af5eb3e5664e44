//! Requests that used to exhaust the server now get a clear status, and the
//! server's memory stays bounded.

use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::Code;
use xccd::service::proto as pb;

mod common;
use common::service::{create_job, dlx, Log, Server};

/// An `xccd serve` process of one thread whose jobs stay in memory (what
/// these tests measure).
fn serve(args: &[&str]) -> Server {
    let mut all = vec!["--threads", "1", "--data-dir", "none"];
    all.extend_from_slice(args);
    Server::start(&all, Log::Null)
}

/// The resident memory of the server process, in MiB.
fn rss_mib(server: &Server) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", server.process.child.id())).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024
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
    let mut server = serve(&["--max-retained-jobs", "20"]);
    let mut client = server.client().await;
    let problem = big_problem(8);
    let mut ids = Vec::new();
    let mut peak = 0;
    for _ in 0..60 {
        let id = create_job(
            &mut client,
            pb::CreateJobRequest {
                source: dlx(problem.clone()).map(pb::create_job_request::Source::Problem),
                max_nodes: 1,
                ..Default::default()
            },
        )
        .await;
        ids.push(id);
        peak = peak.max(rss_mib(&server));
        if ids.len() % 10 == 0 {
            eprintln!("after {} jobs: {} MiB", ids.len(), rss_mib(&server));
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
    let rss = rss_mib(&server);
    eprintln!("server memory after 60 jobs of 8 MiB: {rss} MiB (peak {peak} MiB)");
    assert!(peak < 600, "the server grew to {peak} MiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_tokens_and_requests_get_short_clear_errors() {
    let mut server = serve(&["--max-problem-bytes", "4194304"]);
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
            problem: dlx("A B\nA\nB\n"),
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
    let mut server = serve(&[]);
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
            problem: dlx(include_str!("../examples/queens8.dlx")),
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
    let rss = rss_mib(&server);
    assert!(rss < 200, "the server grew to {rss} MiB");
}
