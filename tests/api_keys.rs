//! API keys: callers authenticate, and jobs belong to the caller that made
//! them.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::{Code, Request};
use xccd::service::callers::ApiKeys;
use xccd::service::proto as pb;
use xccd::service::proto::puzzle_service_client::PuzzleServiceClient;
use xccd::service::proto::solver_service_client::SolverServiceClient;
use xccd::service::server::{start, ServeConfig};
use xccd::service::PoolConfig;

mod common;
use common::service::{create_job, dlx, free_port, XCCD};

const QUEENS8: &str = include_str!("../examples/queens8.dlx");
const KEYS: &str = "# name key\nalice alice-key-0123456789\nbob bob-key-0123456789ab\n";
const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789ab";

/// `message` with `key` (or none) in its metadata.
fn with_key<T>(message: T, key: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(key) = key {
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {key}").parse().unwrap());
    }
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_belong_to_their_callers() {
    jobs_belong_to_their_callers_on(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_jobs_belong_to_their_callers() {
    let dir = tempfile::tempdir().unwrap();
    jobs_belong_to_their_callers_on(Some(dir.path().to_path_buf())).await;
}

/// With a job store (`data_dir`) or without.
async fn jobs_belong_to_their_callers_on(data_dir: Option<PathBuf>) {
    let durable = data_dir.is_some();
    let server = start(ServeConfig {
        data_dir,
        listen: "127.0.0.1:0".parse().unwrap(),
        pool: PoolConfig {
            threads: 1,
            max_jobs_per_caller: 2,
            ..PoolConfig::default()
        },
        api_keys: Some(Arc::new(ApiKeys::parse(KEYS).unwrap())),
        ..ServeConfig::default()
    })
    .await
    .unwrap();
    let channel = Channel::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut solver = SolverServiceClient::new(channel.clone());
    let mut puzzles = PuzzleServiceClient::new(channel.clone());
    let solve = || pb::SolveRequest {
        problem: dlx(QUEENS8),
        limit: 2,
        ..Default::default()
    };

    // No key, or a wrong one: UNAUTHENTICATED, on every public service.
    for key in [None, Some("nobody-key-0123456789"), Some("alice")] {
        let status = solver.solve(with_key(solve(), key)).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{key:?}");
        let status = solver
            .list_jobs(with_key(pb::ListJobsRequest::default(), key))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
        let status = puzzles
            .encode_puzzle(with_key(
                pb::EncodePuzzleRequest {
                    puzzle: Some(pb::Puzzle {
                        kind: pb::PuzzleKind::Queens as i32,
                        grid: Some(pb::puzzle::Grid::Text("4".into())),
                        ..Default::default()
                    }),
                },
                key,
            ))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
    }
    // Health needs no key (probes have none).
    let health = tonic_health::pb::health_client::HealthClient::new(channel.clone())
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await;
    assert!(health.is_ok(), "{health:?}");
    // With a key, it works.
    let reply = solver.solve(with_key(solve(), Some(ALICE))).await.unwrap();
    assert_eq!(reply.into_inner().solutions.len(), 2);

    // Alice's job is hers alone.
    let job_id = create_job(
        &mut solver,
        with_key(
            pb::CreateJobRequest {
                source: dlx(QUEENS8).map(pb::create_job_request::Source::Problem),
                keep_solutions: 5,
                ..Default::default()
            },
            Some(ALICE),
        ),
    )
    .await;
    let get = |key| {
        with_key(
            pb::GetJobRequest {
                name: job_id.clone(),
                max_solutions: 0,
            },
            Some(key),
        )
    };
    let status = solver.get_job(get(BOB)).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    let status = solver
        .cancel_job(with_key(
            pb::CancelJobRequest {
                name: job_id.clone(),
            },
            Some(BOB),
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    let status = solver
        .watch_job(with_key(
            pb::WatchJobRequest {
                name: job_id.clone(),
                ..Default::default()
            },
            Some(BOB),
        ))
        .await
        .expect_err("another's job cannot be watched");
    assert_eq!(status.code(), Code::NotFound);
    let listed = |key| with_key(pb::ListJobsRequest::default(), Some(key));
    let bobs = solver
        .list_jobs(listed(BOB))
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert!(bobs.is_empty(), "{bobs:?}");
    let alices = solver
        .list_jobs(listed(ALICE))
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert_eq!(alices.len(), 1);
    assert_eq!(alices[0].name, job_id);
    // Alice reads it (its solutions too), whatever Bob tried.
    let start = Instant::now();
    loop {
        let job = solver.get_job(get(ALICE)).await.unwrap().into_inner();
        if let Some(summary) = job.job.unwrap().summary {
            assert_eq!(summary.solutions, 92);
            // A stored job keeps every solution; GetJob gives the first 100.
            assert_eq!(job.solutions.len(), if durable { 92 } else { 5 });
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    if durable {
        // Nor can Bob read its stored solutions, or delete it.
        let status = solver
            .list_job_solutions(with_key(
                pb::ListJobSolutionsRequest {
                    name: job_id.clone(),
                    ..Default::default()
                },
                Some(BOB),
            ))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::NotFound);
        let status = solver
            .delete_job(with_key(
                pb::DeleteJobRequest {
                    name: job_id.clone(),
                },
                Some(BOB),
            ))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::NotFound);
        let page = solver
            .list_job_solutions(with_key(
                pb::ListJobSolutionsRequest {
                    name: job_id.clone(),
                    ..Default::default()
                },
                Some(ALICE),
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(page.solutions.len(), 92);
    }

    // Two jobs at once per key: Alice's third waits its turn, Bob's first
    // does not.
    let long = || pb::CreateJobRequest {
        source: dlx(std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/instances/queens15.dlx"),
        )
        .unwrap())
        .map(pb::create_job_request::Source::Problem),
        ..Default::default()
    };
    let mut ids = Vec::new();
    for _ in 0..2 {
        let id = solver
            .create_job(with_key(long(), Some(ALICE)))
            .await
            .unwrap();
        ids.push(id.into_inner().job.expect("CreateJob returns the job").name);
    }
    let status = solver
        .create_job(with_key(long(), Some(ALICE)))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("per API key"), "{status:?}");
    let reply = solver.solve(with_key(solve(), Some(BOB))).await;
    assert!(reply.is_ok(), "{reply:?}");
    for job_id in ids {
        solver
            .cancel_job(with_key(pb::CancelJobRequest { name: job_id }, Some(ALICE)))
            .await
            .unwrap();
    }
    server.shutdown().await.unwrap();
}

/// The command line sends its key from XCCD_API_KEY, and the server never
/// writes a key to its log, even at the most verbose level.
#[test]
fn the_cli_sends_its_key_and_the_log_never_shows_one() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("api-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("keys");
    std::fs::write(&keys, KEYS).unwrap();
    let log = dir.join("serve.log");
    let addr = free_port();
    let mut server = Command::new(XCCD)
        .args(["serve", "--threads", "1", "--listen", &addr.to_string()])
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--api-keys")
        .arg(&keys)
        .env("RUST_LOG", "trace")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let url = format!("http://{addr}");
    let solve = |key: Option<&str>| {
        let mut command = Command::new(XCCD);
        command
            .args([
                "solve",
                "examples/queens8.dlx",
                "--count",
                "--quiet",
                "--server",
                &url,
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("XCCD_API_KEY");
        if let Some(key) = key {
            command.env("XCCD_API_KEY", key);
        }
        command.output().unwrap()
    };
    let start = Instant::now();
    let mut answered = solve(Some(ALICE));
    while !answered.status.success() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
        answered = solve(Some(ALICE));
    }
    assert!(answered.status.success(), "{answered:?}");
    assert_eq!(String::from_utf8_lossy(&answered.stdout), "92\n");
    let refused = solve(None);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("Unauthenticated") && err.contains("API key"),
        "{err}"
    );
    let _ = solve(Some(BOB));
    let _ = solve(Some("wrong-key-0123456789"));
    let _ = server.kill();
    let _ = server.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("serving gRPC"), "{text}");
    for secret in [ALICE, BOB, "wrong-key-0123456789", "0123456789"] {
        assert!(!text.contains(secret), "the log shows {secret:?}");
    }
}
