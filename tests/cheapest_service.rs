//! The cheapest solutions (`cheapest`, Knuth's DLX5) through the gRPC
//! service, against a real server on loopback: on every instance of
//! bench/costs/, Solve gives DLX5's K best costs, nodes, updates and
//! cleansings (bench/dlx5-reference.tsv) and the solutions `xccd solve
//! --cheapest K` keeps, as option sets in DLX5's order of discovery
//! (bench/dlx5-solutions.tsv), each with its cost; a structured problem's
//! option costs count as DLX text's `|n`; a node budget and a deadline
//! stop the search; Enumerate and CreateJob give what Solve gives; and
//! each refusal with its field, reason and code.

#![allow(clippy::needless_update)]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tonic::Code;
use xccd::service::proto as pb;
use xccd::xcc::{dlx_format, Problem};

use common::fixtures::bench;
use common::service::{connect, dlx, fields_of, reason_of, Client};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Data lines of a DLX5 reference table (after its `#` lines and header).
fn table(name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(root().join("bench").join(name)).unwrap();
    assert!(
        text.starts_with("# Knuth's DLX5"),
        "{name} says how it was made"
    );
    // The rows of DLX5's defaults (its parameters h, z, Z, in the last
    // column, are the CLI's only).
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split('\t').map(str::to_string).collect::<Vec<_>>())
        .filter(|r| r.last().is_some_and(String::is_empty))
        .collect()
}

/// A solution as bench/dlx5-solutions.tsv writes it: each option's items
/// sorted, the options sorted, joined by "; ".
fn option_set(problem: &Problem, options: &[u32]) -> String {
    let mut keys: Vec<String> = options
        .iter()
        .map(|&o| {
            let text = problem.format_option(o as usize);
            let mut items: Vec<&str> = text.split(' ').collect();
            items.sort_unstable();
            items.join(" ")
        })
        .collect();
    keys.sort();
    keys.join("; ")
}

/// DLX5's numbers for the solutions it found, by option set and cost.
type Finds = BTreeMap<(String, u64), Vec<u64>>;

async fn solve(client: &mut Client, request: pb::SolveRequest) -> pb::SolveResponse {
    client.solve(request).await.expect("solved").into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solve_gives_dlx5s_cheapest_solutions_costs_and_figures() {
    let server = common::cluster::server(2, 1024).await;
    let mut client = connect(server.addr).await;
    // Every solution DLX5 found, by (case, k): its numbers by option set
    // and cost (options with the same items may differ in cost only).
    let mut found: BTreeMap<(String, String), Finds> = BTreeMap::new();
    for row in table("dlx5-solutions.tsv") {
        found
            .entry((row[0].clone(), row[1].clone()))
            .or_default()
            .entry((row[4].clone(), row[3].parse().unwrap()))
            .or_default()
            .push(row[2].parse().unwrap());
    }
    let rows: Vec<Vec<String>> = table("dlx5-reference.tsv")
        .into_iter()
        .filter(|r| r[0].starts_with("costs/"))
        .collect();
    assert_eq!(rows.len(), 16, "8 instances with costs, k = 1 and 10");
    for row in &rows {
        let (case, k) = (&row[0], row[1].parse::<u32>().unwrap());
        let text = bench(case);
        let problem = dlx_format::parse(&text).unwrap();
        let reply = solve(
            &mut client,
            pb::SolveRequest {
                problem: dlx(text),
                cheapest: k,
                include_option_text: true,
                ..Default::default()
            },
        )
        .await;
        assert!(reply.exhausted, "{case} k={k}");
        assert_eq!(reply.reason, pb::EndReason::Complete as i32);
        let stats = reply.statistics.unwrap();
        assert_eq!(
            [stats.nodes, stats.updates, stats.cleansings].map(|n| n.to_string()),
            [&row[3], &row[4], &row[5]].map(|s| s.to_string()),
            "{case} k={k}: DLX5's nodes, updates, cleansings"
        );
        assert_eq!(stats.solutions, reply.solutions.len() as u64);
        let mut costs: Vec<u64> = reply.solutions.iter().map(|s| s.cost).collect();
        costs.sort_unstable();
        let expected: Vec<u64> = row[6].split(',').map(|c| c.parse().unwrap()).collect();
        assert_eq!(costs, expected, "{case} k={k}: the K best costs");
        // Each is a solution DLX5 found, with its cost, in DLX5's order.
        let dlx5 = &found[&(case.clone(), row[1].clone())];
        let mut numbers: Vec<u64> = Vec::new();
        for s in &reply.solutions {
            let set = option_set(&problem, &s.option_indices);
            let candidates = dlx5
                .get(&(set.clone(), s.cost))
                .unwrap_or_else(|| panic!("{case} k={k}: DLX5 never found {set} at {}", s.cost));
            // The first of DLX5's finds of it after the one before.
            let after = numbers.last().copied().unwrap_or(0);
            let number = candidates
                .iter()
                .copied()
                .find(|&n| n > after)
                .unwrap_or_else(|| panic!("{case} k={k}: {set} out of DLX5's order"));
            let sum: u64 = s
                .option_indices
                .iter()
                .map(|&o| problem.cost(o as usize))
                .sum();
            assert_eq!(s.cost, sum);
            assert!(s.option_indices.windows(2).all(|w| w[0] < w[1]));
            let texts: Vec<String> = s
                .option_indices
                .iter()
                .map(|&o| problem.format_option(o as usize))
                .collect();
            assert_eq!(s.option_texts, texts);
            numbers.push(number);
        }
        assert!(
            numbers.windows(2).all(|w| w[0] < w[1]),
            "{case} k={k}: in the order found, {numbers:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_and_structured_costs_agree_and_other_searches_carry_costs() {
    let server = common::cluster::server(1, 1024).await;
    let mut client = connect(server.addr).await;
    // `xccd solve --cheapest 3 --format json` on examples/costs.dlx.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(["solve", "examples/costs.dlx", "--cheapest", "3"])
        .args(["--format", "json", "--quiet"])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let cli: Vec<(u64, Vec<u32>)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let mut options: Vec<u32> = v["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_u64().unwrap() as u32)
                .collect();
            options.sort_unstable();
            (v["cost"].as_u64().unwrap(), options)
        })
        .collect();
    assert_eq!(cli.len(), 3);
    let text = std::fs::read_to_string(root().join("examples/costs.dlx")).unwrap();
    let problem = dlx_format::parse(&text).unwrap();
    // The same problem as messages, each option's cost in its field.
    let structured = pb::StructuredProblem {
        items: problem
            .items()
            .iter()
            .map(|item| pb::Item {
                name: item.name.clone(),
                kind: if item.is_primary() {
                    pb::ItemKind::Primary as i32
                } else {
                    pb::ItemKind::Secondary as i32
                },
                ..Default::default()
            })
            .collect(),
        options: (0..problem.options().len())
            .map(|o| pb::ProblemOption {
                entries: problem
                    .format_option(o)
                    .split(' ')
                    .map(|item| pb::OptionEntry {
                        item: item.to_string(),
                        ..Default::default()
                    })
                    .collect(),
                cost: problem.cost(o) as u32,
            })
            .collect(),
    };
    for source in [
        pb::problem::Source::Dlx(text.clone()),
        pb::problem::Source::Structured(structured),
    ] {
        let reply = solve(
            &mut client,
            pb::SolveRequest {
                problem: Some(pb::Problem {
                    source: Some(source),
                }),
                cheapest: 3,
                ..Default::default()
            },
        )
        .await;
        let got: Vec<(u64, Vec<u32>)> = reply
            .solutions
            .iter()
            .map(|s| (s.cost, s.option_indices.clone()))
            .collect();
        assert_eq!(got, cli);
    }
    // A plain search's solutions carry their cost too; without costs, 0.
    let reply = solve(
        &mut client,
        pb::SolveRequest {
            problem: dlx(text),
            limit: 100,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reply.solutions.len(), 14);
    let mut costs: Vec<u64> = reply.solutions.iter().map(|s| s.cost).collect();
    costs.sort_unstable();
    assert_eq!(costs, [3, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11]);
    let reply = solve(
        &mut client,
        pb::SolveRequest {
            problem: dlx(bench("instances/queens8")),
            cheapest: 10,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reply.solutions.len(), 10);
    assert!(reply.solutions.iter().all(|s| s.cost == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_budget_or_a_deadline_stops_the_search() {
    // One thread: a search left running would hold it.
    let server = common::cluster::server(1, 1024).await;
    let mut client = connect(server.addr).await;
    let long = || dlx(bench("costs/domino12x12"));
    // A node budget reached first: no solutions (the cheapest so far need
    // not be the cheapest), and the search stopped near the budget.
    let reply = solve(
        &mut client,
        pb::SolveRequest {
            problem: long(),
            cheapest: 10,
            max_nodes: 5000,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reply.reason, pb::EndReason::NodeLimit as i32);
    assert!(!reply.exhausted);
    assert!(reply.solutions.is_empty());
    let nodes = reply.statistics.unwrap().nodes;
    assert!((5000..=5000 + 1024).contains(&nodes), "{nodes}");
    // The whole search, timed; then one cut short by a deadline, after
    // which the thread is free at once.
    let started = Instant::now();
    let reply = solve(
        &mut client,
        pb::SolveRequest {
            problem: long(),
            cheapest: 10,
            ..Default::default()
        },
    )
    .await;
    let whole = started.elapsed();
    assert_eq!(reply.solutions.len(), 10);
    let mut request = tonic::Request::new(pb::SolveRequest {
        problem: long(),
        cheapest: 10,
        ..Default::default()
    });
    request.set_timeout(whole / 10);
    let status = client.solve(request).await.expect_err("cut short");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    let started = Instant::now();
    let reply = solve(
        &mut client,
        pb::SolveRequest {
            problem: dlx(bench("costs/assign8")),
            cheapest: 1,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reply.solutions[0].cost, 61);
    assert!(
        started.elapsed() < whole / 2,
        "the stopped search let the thread go: {:?} against {whole:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_name_the_field() {
    let server = common::cluster::server(1, 1024).await;
    let mut client = connect(server.addr).await;
    let costs = || dlx(bench("costs/assign8"));
    let cases: Vec<(pb::SolveRequest, &str, &str)> = vec![
        (
            pb::SolveRequest {
                problem: costs(),
                cheapest: 15_001,
                ..Default::default()
            },
            "LIMIT_EXCEEDED",
            "15000",
        ),
        (
            pb::SolveRequest {
                problem: dlx("a 2:2|b\na b\nb\n"),
                cheapest: 1,
                ..Default::default()
            },
            "INVALID_ARGUMENT",
            "multiplicities",
        ),
        (
            pb::SolveRequest {
                problem: costs(),
                cheapest: 1,
                memo: true,
                ..Default::default()
            },
            "INVALID_ARGUMENT",
            "memo",
        ),
        (
            pb::SolveRequest {
                problem: costs(),
                cheapest: 2,
                limit: 2,
                ..Default::default()
            },
            "INVALID_ARGUMENT",
            "limit",
        ),
        (
            pb::SolveRequest {
                problem: costs(),
                cheapest: 2,
                engine: pb::Engine::Cells as i32,
                ..Default::default()
            },
            "INVALID_ARGUMENT",
            "engine",
        ),
    ];
    for (request, reason, words) in cases {
        let status = client.solve(request).await.expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert_eq!(reason_of(&status), reason, "{status:?}");
        assert!(status.message().starts_with("cheapest: "), "{status:?}");
        assert!(status.message().contains(words), "{status:?}");
        assert_eq!(fields_of(&status), ["cheapest"], "{status:?}");
    }
    // Links first in the engine's place is no conflict.
    let reply = solve(
        &mut client,
        pb::SolveRequest {
            problem: costs(),
            cheapest: 1,
            engine: pb::Engine::Links as i32,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reply.solutions[0].cost, 61);

    // A pure coordinator runs no searches itself, and this one cannot be
    // leased: it needs the server's own threads.
    let coordinator = common::cluster::server(0, 1024).await;
    let mut client = connect(coordinator.addr).await;
    let status = client
        .solve(pb::SolveRequest {
            problem: costs(),
            cheapest: 1,
            ..Default::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason_of(&status), "NEEDS_LOCAL_THREADS");
    assert!(status.message().contains("cheapest"), "{status:?}");
}

/// Solutions as (cost, option indices).
fn costed(solutions: &[pb::Solution]) -> Vec<(u64, Vec<u32>)> {
    solutions
        .iter()
        .map(|s| (s.cost, s.option_indices.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enumerate_and_create_job_give_what_solve_gives() {
    let server = common::cluster::server(2, 1024).await;
    let mut client = connect(server.addr).await;
    let rooms = || dlx(bench("costs/rooms12"));
    let solved = solve(
        &mut client,
        pb::SolveRequest {
            problem: rooms(),
            cheapest: 10,
            ..Default::default()
        },
    )
    .await;
    let expected = costed(&solved.solutions);
    assert_eq!(expected.len(), 10);
    let stats = solved.statistics.unwrap();

    // A stream, in batches of 3.
    let mut stream = client
        .enumerate(pb::EnumerateRequest {
            problem: rooms(),
            cheapest: 10,
            batch_size: 3,
            ..Default::default()
        })
        .await
        .expect("accepted")
        .into_inner();
    let (mut streamed, mut batches, mut summary) = (Vec::new(), Vec::new(), None);
    while let Some(event) = tokio::time::timeout(Duration::from_secs(60), stream.message())
        .await
        .expect("an event within a minute")
        .expect("the stream ends OK")
    {
        match event.event {
            Some(pb::enumerate_response::Event::Solutions(batch)) => {
                batches.push(batch.solutions.len());
                streamed.extend(costed(&batch.solutions));
            }
            Some(pb::enumerate_response::Event::Summary(s)) => summary = Some(s),
            _ => {}
        }
    }
    assert_eq!(streamed, expected);
    assert!(batches.iter().all(|&n| n <= 3), "{batches:?}");
    let summary = summary.expect("a summary");
    assert_eq!(summary.reason, pb::EndReason::Complete as i32);
    assert_eq!(summary.solutions, 10);
    let figures = summary.statistics.unwrap();
    assert_eq!(
        (figures.nodes, figures.updates, figures.cleansings),
        (stats.nodes, stats.updates, stats.cleansings)
    );

    // A job keeps its K, and GetJob returns them.
    let job = client
        .create_job(pb::CreateJobRequest {
            source: Some(pb::create_job_request::Source::Problem(rooms().unwrap())),
            cheapest: 10,
            ..Default::default()
        })
        .await
        .expect("CreateJob OK")
        .into_inner()
        .job
        .unwrap();
    let mut watch = client
        .watch_job(pb::WatchJobRequest {
            name: job.name.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    while tokio::time::timeout(Duration::from_secs(60), watch.message())
        .await
        .expect("an event within a minute")
        .expect("the watch ends OK")
        .is_some()
    {}
    let reply = client
        .get_job(pb::GetJobRequest {
            name: job.name.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let summary = reply.job.unwrap().summary.unwrap();
    assert_eq!(summary.reason, pb::EndReason::Complete as i32);
    assert_eq!(costed(&reply.solutions), expected);

    // Their own refusals, by field.
    let status = client
        .enumerate(pb::EnumerateRequest {
            problem: rooms(),
            cheapest: 10,
            count_only: true,
            ..Default::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("count_only"), "{status:?}");
    assert_eq!(fields_of(&status), ["cheapest"]);
    let status = client
        .create_job(pb::CreateJobRequest {
            source: Some(pb::create_job_request::Source::Problem(rooms().unwrap())),
            cheapest: 10,
            limit: 5,
            ..Default::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("limit"), "{status:?}");
    assert_eq!(fields_of(&status), ["cheapest"]);
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
async fn a_durable_job_stores_its_k_and_searches_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let long = || dlx(bench("costs/domino12x12"));
    let server = durable_server(dir.path()).await;
    let mut client = connect(server.addr).await;
    let expected = costed(
        &solve(
            &mut client,
            pb::SolveRequest {
                problem: long(),
                cheapest: 10,
                ..Default::default()
            },
        )
        .await
        .solutions,
    );
    assert_eq!(expected.len(), 10);
    let job = client
        .create_job(pb::CreateJobRequest {
            source: Some(pb::create_job_request::Source::Problem(long().unwrap())),
            cheapest: 10,
            ..Default::default()
        })
        .await
        .expect("CreateJob OK")
        .into_inner()
        .job
        .unwrap();
    // Stopped mid-search by a shutdown: nothing delivered yet.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let running = client
        .get_job(pb::GetJobRequest {
            name: job.name.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(running.job.unwrap().summary.is_none(), "still searching");
    drop(client);
    server.shutdown().await.expect("clean shutdown");
    let server = durable_server(dir.path()).await;
    let mut client = connect(server.addr).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let summary = loop {
        let got = client
            .get_job(pb::GetJobRequest {
                name: job.name.clone(),
                ..Default::default()
            })
            .await
            .expect("the job is still known")
            .into_inner();
        if let Some(summary) = got.job.unwrap().summary {
            break summary;
        }
        assert!(Instant::now() < deadline, "the resumed job ends");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        summary.reason,
        pb::EndReason::Complete as i32,
        "{summary:?}"
    );
    let page = client
        .list_job_solutions(pb::ListJobSolutionsRequest {
            name: job.name.clone(),
            page_size: 100,
            ..Default::default()
        })
        .await
        .expect("stored solutions")
        .into_inner();
    assert_eq!(costed(&page.solutions), expected);
    server.shutdown().await.expect("clean shutdown");
}
