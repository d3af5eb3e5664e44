//! Preprocessing on the service (`preprocess` on Solve, Enumerate and
//! CreateJob: Knuth's DLX-PRE before the search), against real servers on
//! loopback:
//!
//! - On bench instances DLX-PRE reduces (sudoku, pentominoes, colored
//!   problems), Solve, Enumerate and CreateJob find exactly the solutions
//!   of the unpreprocessed search, named by the caller's option indices
//!   (and their text), `Statistics.preprocessing` has the library's
//!   DLX-PRE figures, and the nodes are the library's on the reduced
//!   problem (a reduced search is not always smaller: pent3x20 on cells).
//! - With `memo` the count, with `cheapest` the K cheapest costs, are the
//!   unpreprocessed ones; on a pure coordinator the reduced problem is
//!   split over a remote worker, with the same solutions.
//! - A problem with multiplicities and a puzzle job are refused naming
//!   `preprocess`; a problem whose preprocessing cannot fit one search's
//!   memory gets SEARCH_MEMORY_LIMIT.
//! - A durable preprocessed job stopped mid-search by a restart reduces its
//!   problem again and ends with every solution, each once.

#![allow(clippy::needless_update)]

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use tonic::Code;
use xccd::service::proto as pb;
use xccd::xcc::preprocess::{preprocess, Config};
use xccd::xcc::{dlx_format, Problem};

use common::fixtures::bench;
use common::service::{connect, dlx, fields_of, reason_of, Client};

/// Every solution of an Enumerate, each sorted, as a set (none twice), and
/// the summary.
async fn enumerate(
    client: &mut Client,
    request: pb::EnumerateRequest,
) -> (BTreeSet<Vec<u32>>, pb::Summary, Vec<pb::Solution>) {
    let mut stream = client
        .enumerate(request)
        .await
        .expect("streams")
        .into_inner();
    let mut all = Vec::new();
    let mut set = BTreeSet::new();
    let mut messages = Vec::new();
    loop {
        let message = stream
            .message()
            .await
            .expect("no error")
            .expect("a summary");
        match message.event {
            Some(pb::enumerate_response::Event::Solutions(batch)) => {
                let solutions: Vec<Vec<u32>> = if batch.solutions.is_empty() {
                    xccd::service::convert::unpack(batch)
                        .unwrap()
                        .iter()
                        .map(<[u32]>::to_vec)
                        .collect()
                } else {
                    messages.extend(batch.solutions.iter().cloned());
                    batch
                        .solutions
                        .into_iter()
                        .map(|s| s.option_indices)
                        .collect()
                };
                for s in solutions {
                    let mut sorted = s.clone();
                    sorted.sort_unstable();
                    assert_eq!(sorted, s, "option indices ascending");
                    all.push(s.clone());
                    set.insert(s);
                }
            }
            Some(pb::enumerate_response::Event::Summary(summary)) => {
                assert_eq!(set.len(), all.len(), "no solution twice");
                return (set, summary, messages);
            }
            _ => {}
        }
    }
}

/// DLX-PRE's figures for `text`, from the library.
fn figures(text: &str) -> pb::Preprocessing {
    let problem = dlx_format::parse(text).unwrap();
    let reduced = preprocess(
        &problem,
        &Config {
            verbose: 0,
            ..Config::default()
        },
    )
    .unwrap();
    let f = reduced.figures;
    pb::Preprocessing {
        removed_options: f.options_out as u64,
        removed_items: f.items_out as u64,
        rounds: f.rounds,
        mems: f.mems,
    }
}

/// The nodes of a search of `text` reduced by DLX-PRE, on `engine`.
fn reduced_nodes(text: &str, engine: &str) -> u64 {
    use xccd::xcc::{CountOnly, Engine, RunConfig, Solver, Task};
    let problem = dlx_format::parse(text).unwrap();
    let reduced = preprocess(
        &problem,
        &Config {
            verbose: 0,
            ..Config::default()
        },
    )
    .unwrap();
    let engine = match engine {
        "cells" => Engine::Cells,
        _ => Engine::Links,
    };
    Solver::with_engine(&reduced.problem, engine)
        .unwrap()
        .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
        .unwrap()
        .stats
        .nodes
}

const REDUCED: [&str; 5] = [
    "instances/sudoku_hard17",
    "instances/sudoku_royle17a",
    "instances/color_simple",
    "instances/color_debruijn4",
    "instances/pent3x20",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solve_enumerate_and_jobs_give_the_unpreprocessed_solutions() {
    let server = common::cluster::server(2, 1024).await;
    let mut client = connect(server.addr)
        .await
        .max_encoding_message_size(64 << 20);
    for case in REDUCED {
        let text = bench(case);
        let problem: Problem = dlx_format::parse(&text).unwrap();
        let request = |preprocess: bool, packed: bool| pb::EnumerateRequest {
            problem: dlx(text.clone()),
            preprocess,
            packed_solutions: packed,
            include_option_text: !packed,
            ..Default::default()
        };
        let (plain, plain_summary, _) = enumerate(&mut client, request(false, true)).await;
        assert!(!plain.is_empty(), "{case}");
        let plain_nodes = plain_summary.statistics.as_ref().unwrap().nodes;
        assert!(plain_summary.statistics.unwrap().preprocessing.is_none());
        for packed in [true, false] {
            let (got, summary, messages) = enumerate(&mut client, request(true, packed)).await;
            assert_eq!(got, plain, "{case} packed={packed}");
            let statistics = summary.statistics.unwrap();
            let pre = statistics.preprocessing.expect("preprocessing figures");
            assert_eq!(pre, figures(&text), "{case}");
            assert!(pre.removed_options > 0, "{case}");
            // The server searched the reduced problem: its nodes are the
            // library's on it (a split search's nodes equal one thread's).
            assert_eq!(
                statistics.nodes,
                reduced_nodes(&text, &statistics.engine),
                "{case}"
            );
            eprintln!(
                "{case}: {plain_nodes} nodes, {} preprocessed",
                statistics.nodes
            );
            // Option text is the caller's options', removed items and all.
            for s in &messages {
                let texts: Vec<String> = s
                    .option_indices
                    .iter()
                    .map(|&o| problem.format_option(o as usize))
                    .collect();
                assert_eq!(s.option_texts, texts, "{case}");
            }
        }
        // Solve: the first solutions are among the input's, the count
        // (limit past it) the same.
        let solved = client
            .solve(pb::SolveRequest {
                problem: dlx(text.clone()),
                limit: 100_000,
                preprocess: true,
                ..Default::default()
            })
            .await
            .expect("Solve OK")
            .into_inner();
        assert!(solved.exhausted, "{case}");
        let set: BTreeSet<Vec<u32>> = solved
            .solutions
            .iter()
            .map(|s| s.option_indices.clone())
            .collect();
        assert_eq!(set, plain, "{case}: Solve");
        assert_eq!(
            solved.statistics.unwrap().preprocessing,
            Some(figures(&text))
        );
        // A job keeps the caller's solutions too.
        let job = client
            .create_job(pb::CreateJobRequest {
                source: Some(pb::create_job_request::Source::Problem(
                    dlx(text.clone()).unwrap(),
                )),
                preprocess: true,
                keep_solutions: 100_000,
                ..Default::default()
            })
            .await
            .expect("CreateJob OK")
            .into_inner()
            .job
            .unwrap();
        let done = wait_done(&mut client, &job.name, Duration::from_secs(60)).await;
        let got = client
            .get_job(pb::GetJobRequest {
                name: job.name.clone(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let kept: BTreeSet<Vec<u32>> = got
            .solutions
            .iter()
            .map(|s| s.option_indices.clone())
            .collect();
        assert_eq!(kept, plain, "{case}: the job's kept solutions");
        let summary = done.summary.unwrap();
        assert_eq!(
            summary.statistics.unwrap().preprocessing,
            Some(figures(&text))
        );
    }
    server.shutdown().await.expect("clean shutdown");
}

async fn wait_done(client: &mut Client, name: &str, limit: Duration) -> pb::Job {
    let deadline = Instant::now() + limit;
    loop {
        let job = client
            .get_job(pb::GetJobRequest {
                name: name.to_string(),
                max_solutions: 1,
            })
            .await
            .expect("the job is known")
            .into_inner()
            .job
            .unwrap();
        if job.summary.is_some() && job.state() != pb::JobState::Running {
            return job;
        }
        assert!(Instant::now() < deadline, "{name} ends in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memo_and_cheapest_answer_the_same_after_preprocessing() {
    let server = common::cluster::server(2, 1024).await;
    let mut client = connect(server.addr)
        .await
        .max_encoding_message_size(64 << 20);
    for case in REDUCED {
        let text = bench(case);
        let count = |preprocess: bool| pb::EnumerateRequest {
            problem: dlx(text.clone()),
            count_only: true,
            memo: true,
            preprocess,
            ..Default::default()
        };
        let (_, plain, _) = enumerate(&mut client, count(false)).await;
        let (_, reduced, _) = enumerate(&mut client, count(true)).await;
        assert_eq!(reduced.solutions, plain.solutions, "{case}: memo");
        assert!(plain.solutions > 0, "{case}");
    }
    for case in [
        "costs/assign8",
        "costs/domino6x8",
        "costs/rooms12",
        "instances/queens8",
    ] {
        let text = bench(case);
        let problem: Problem = dlx_format::parse(&text).unwrap();
        let costs = |solutions: &[pb::Solution]| {
            let mut c: Vec<u64> = solutions.iter().map(|s| s.cost).collect();
            c.sort_unstable();
            c
        };
        let solve = |preprocess: bool| pb::SolveRequest {
            problem: dlx(text.clone()),
            cheapest: 10,
            preprocess,
            ..Default::default()
        };
        let plain = client.solve(solve(false)).await.unwrap().into_inner();
        let reduced = client.solve(solve(true)).await.unwrap().into_inner();
        assert_eq!(plain.solutions.len(), 10, "{case}");
        assert_eq!(costs(&reduced.solutions), costs(&plain.solutions), "{case}");
        for s in &reduced.solutions {
            let options: Vec<usize> = s.option_indices.iter().map(|&o| o as usize).collect();
            assert!(problem.verify(&options).is_ok(), "{case}: {options:?}");
            let sum: u64 = options.iter().map(|&o| problem.cost(o)).sum();
            assert_eq!(sum, s.cost, "{case}: the caller's options' costs");
        }
    }
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_worker_searches_the_reduced_problem() {
    let server = common::cluster::server(0, 64).await;
    let _worker = common::cluster::Worker::start(
        env!("CARGO_BIN_EXE_xccd"),
        server.worker_addr.unwrap(),
        "preprocess",
        "w1",
        2,
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.pool.remote_slots() < 2 {
        assert!(Instant::now() < deadline, "the worker joins");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut client = connect(server.addr)
        .await
        .max_encoding_message_size(64 << 20);
    // The in-process library's answer, then the cluster's with and without
    // preprocessing.
    for case in [
        "instances/pent3x20",
        "instances/color_debruijn4",
        "instances/sudoku_hard17",
    ] {
        let text = bench(case);
        let request = |preprocess: bool| pb::EnumerateRequest {
            problem: dlx(text.clone()),
            preprocess,
            packed_solutions: true,
            ..Default::default()
        };
        let (plain, _, _) = enumerate(&mut client, request(false)).await;
        let (reduced, summary, _) = enumerate(&mut client, request(true)).await;
        assert_eq!(summary.reason, pb::EndReason::Complete as i32, "{case}");
        assert_eq!(reduced, plain, "{case}");
        let problem = dlx_format::parse(&text).unwrap();
        for s in &reduced {
            let options: Vec<usize> = s.iter().map(|&o| o as usize).collect();
            assert!(problem.verify(&options).is_ok(), "{case}");
        }
    }
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_name_preprocess() {
    let server = common::cluster::server(1, 1024).await;
    let mut client = connect(server.addr)
        .await
        .max_encoding_message_size(64 << 20);
    let refused = |status: tonic::Status| {
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert_eq!(reason_of(&status), "INVALID_ARGUMENT", "{status:?}");
        assert_eq!(fields_of(&status), ["preprocess"], "{status:?}");
        status.message().to_string()
    };
    let multiplicity = || dlx("A 2:3|B\nA B\nB\n".to_string());
    let status = client
        .solve(pb::SolveRequest {
            problem: multiplicity(),
            preprocess: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(refused(status).contains("multiplicity"));
    let status = client
        .enumerate(pb::EnumerateRequest {
            problem: multiplicity(),
            preprocess: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(refused(status).contains("multiplicity"));
    let status = client
        .create_job(pb::CreateJobRequest {
            source: Some(pb::create_job_request::Source::Puzzle(pb::Puzzle {
                kind: pb::PuzzleKind::Queens as i32,
                grid: Some(pb::puzzle::Grid::Text("6".into())),
                ..Default::default()
            })),
            preprocess: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(refused(status).contains("puzzle"));
    server.shutdown().await.expect("clean shutdown");

    // A server whose searches may take less than DLX-PRE's node array.
    let small = xccd::service::server::start(xccd::service::server::ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        pool: xccd::service::PoolConfig {
            threads: 1,
            memory: xccd::service::memory::MemoryLimits {
                per_run: 20_000,
                total: 1 << 30,
            },
            ..xccd::service::PoolConfig::default()
        },
        ..xccd::service::server::ServeConfig::default()
    })
    .await
    .unwrap();
    let mut client = connect(small.addr)
        .await
        .max_encoding_message_size(64 << 20);
    let status = client
        .solve(pb::SolveRequest {
            problem: dlx(bench("instances/sudoku_hard17")),
            preprocess: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(reason_of(&status), "SEARCH_MEMORY_LIMIT");
    assert!(status.message().contains("preprocess"), "{status:?}");
    small.shutdown().await.expect("clean shutdown");
}

/// A server of one thread keeping durable jobs in `dir`.
async fn durable_server(dir: &std::path::Path) -> xccd::service::server::RunningServer {
    xccd::service::server::start(xccd::service::server::ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        pool: xccd::service::PoolConfig {
            threads: 1,
            poll_interval: 1024,
            ..xccd::service::PoolConfig::default()
        },
        data_dir: Some(dir.to_path_buf()),
        ..xccd::service::server::ServeConfig::default()
    })
    .await
    .expect("the server starts on loopback")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_preprocessed_job_resumes_after_a_restart() {
    // pent6x10: DLX-PRE removes 144 options; its 9356 solutions (Knuth's
    // DLX2, bench/knuth-reference.tsv) take seconds on one thread.
    let text = bench("instances/pent6x10");
    let problem = dlx_format::parse(&text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = durable_server(dir.path()).await;
    let mut client = connect(server.addr)
        .await
        .max_encoding_message_size(64 << 20);
    let job = client
        .create_job(pb::CreateJobRequest {
            source: Some(pb::create_job_request::Source::Problem(
                dlx(text.clone()).unwrap(),
            )),
            preprocess: true,
            ..Default::default()
        })
        .await
        .expect("CreateJob OK")
        .into_inner()
        .job
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let running = wait_state(&mut client, &job.name).await;
    assert!(running.summary.is_none(), "still searching at the restart");
    drop(client);
    server.shutdown().await.expect("clean shutdown");
    let server = durable_server(dir.path()).await;
    let mut client = connect(server.addr)
        .await
        .max_encoding_message_size(64 << 20);
    let done = wait_done(&mut client, &job.name, Duration::from_secs(120)).await;
    let summary = done.summary.unwrap();
    assert_eq!(
        summary.reason,
        pb::EndReason::Complete as i32,
        "{summary:?}"
    );
    assert_eq!(summary.solutions, 9356);
    let mut stored = Vec::new();
    let mut token = String::new();
    loop {
        let page = client
            .list_job_solutions(pb::ListJobSolutionsRequest {
                name: job.name.clone(),
                page_size: 5000,
                page_token: token.clone(),
                ..Default::default()
            })
            .await
            .expect("stored solutions")
            .into_inner();
        stored.extend(page.solutions.into_iter().map(|s| s.option_indices));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let set: BTreeSet<Vec<u32>> = stored.iter().cloned().collect();
    assert_eq!(stored.len(), 9356, "stored, duplicates included");
    assert_eq!(set.len(), 9356, "each solution once");
    for s in &set {
        let options: Vec<usize> = s.iter().map(|&o| o as usize).collect();
        assert!(problem.verify(&options).is_ok(), "a solution of the input");
    }
    assert_eq!(
        summary.statistics.unwrap().preprocessing,
        Some(figures(&text))
    );
    server.shutdown().await.expect("clean shutdown");
}

async fn wait_state(client: &mut Client, name: &str) -> pb::Job {
    client
        .get_job(pb::GetJobRequest {
            name: name.to_string(),
            max_solutions: 1,
        })
        .await
        .expect("the job is known")
        .into_inner()
        .job
        .unwrap()
}
