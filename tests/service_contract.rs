//! The gRPC service end to end, over loopback: details of the contract
//! found wanting: packed solutions, batch sizes, the search order of one
//! worker, busy workers after shutdown, and jobs as resources listed in
//! pages with machine-readable errors.
//!
//! Two tests came from bugs they found (oversized batches, exited workers
//! counted busy): `enumerate_batches_respect_batch_size` and
//! `no_busy_workers_after_shutdown`.
//!
//! The fixtures, and why the tests run one at a time, are in
//! `tests/common/in_process.rs`.

// Requests name the fields they set and default the rest, also when they
// set them all, so that they keep compiling as the contract grows.
#![allow(clippy::needless_update)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tonic::Code;
use xccd::service::job::Event as JobEvent;
use xccd::service::proto as pb;
use xccd::service::server::ServeConfig;
use xccd::service::{Delivery, JobSpec, Pool, PoolConfig};
use xccd::xcc::{Collect, Engine, RunConfig, Solver, Task};

use common::fixtures::instance;
use common::in_process::*;
use common::service::{connect, create_job, dlx, wait_for};

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
