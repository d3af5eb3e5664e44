//! The gRPC service end to end, over loopback: the known counts of the
//! shared benchmark through every RPC of `proto/xccd/v1/solver.proto`
//! (Solve, Enumerate, the jobs' calls), checked against the in-process
//! engine, and split searches counting like one thread.
//!
//! The fixtures, and why the tests run one at a time, are in
//! `tests/common/in_process.rs`.

// Requests name the fields they set and default the rest, also when they
// set them all, so that they keep compiling as the contract grows.
#![allow(clippy::needless_update)]

mod common;

use std::collections::{BTreeSet, HashSet};
use std::time::{Duration, Instant};

use xccd::service::proto as pb;
use xccd::xcc::{Problem, RunConfig, Solver, Task};

use common::fixtures::instance;
use common::in_process::*;
use common::service::{connect, dlx, Client};

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
