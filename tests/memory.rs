//! Requests whose search would take more memory than the process has get a
//! clear status (or an answer), never an abort (issue 24, point 1): a
//! server under an address-space limit of 1.5 GiB is sent a chain of
//! 20,000 items (its cells save stack would take 1.6 GB), a weak blank
//! slitherlink 140x140 (5 GB) and a blank 25x25 hidato, then answers
//! `Solve(queens8)`. The CLI likewise.

mod common;

use common::queens::queens_dlx;
use common::service::{free_port, Log, Process, Server, XCCD};
use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_types::StatusExt;
use xccd::service::proto as pb;
use xccd::service::proto::puzzle_service_client::PuzzleServiceClient;
use xccd::service::proto::solver_service_client::SolverServiceClient;

/// The address-space limit the processes run under.
const ADDRESS_SPACE: &str = "--as=1610612736";

/// Items `x0 .. x19999`, each in two one-item options: 20,000 levels deep,
/// each level taking one item out of the active list (387 KB of DLX).
fn chain(n: usize) -> String {
    let mut text: String = (0..n).map(|i| format!("x{i} ")).collect();
    text.push('\n');
    for i in 0..n {
        text += &format!("x{i}\nx{i}\n");
    }
    text
}

fn blank_slitherlink(n: usize) -> String {
    (0..n).map(|_| ".".repeat(n) + "\n").collect()
}

fn blank_hidato(n: usize) -> String {
    (0..n)
        .map(|_| vec!["."; n].join(" ") + "\n")
        .collect::<String>()
}

/// An `xccd serve` process under the address-space limit (of two threads
/// unless `args` say), killed when dropped.
fn serve(args: &[&str]) -> Server {
    let mut command = Command::new("prlimit");
    command.arg(ADDRESS_SPACE).arg(XCCD);
    let mut all = vec!["--data-dir", "none"];
    if !args.contains(&"--threads") {
        all.extend(["--threads", "2"]);
    }
    all.extend_from_slice(args);
    Server::start_with(command, &all, Log::Null)
}

fn with_deadline<T>(message: T, seconds: u64) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(Duration::from_secs(seconds));
    request
}

/// A status that says why: an answer, a deadline, or RESOURCE_EXHAUSTED
/// naming the memory limit with the bytes needed and the limit.
fn clear<T: std::fmt::Debug>(what: &str, result: &Result<T, Status>) {
    eprintln!(
        "{what}: {:?}",
        result
            .as_ref()
            .map(|_| "answered")
            .map_err(|s| (s.code(), s.message()))
    );
    let Err(status) = result else {
        return;
    };
    match status.code() {
        Code::DeadlineExceeded => {}
        Code::ResourceExhausted => {
            let info = status
                .get_error_details()
                .error_info()
                .cloned()
                .unwrap_or_else(|| panic!("{what}: no ErrorInfo in {status:?}"));
            assert!(
                ["SEARCH_MEMORY_LIMIT", "SERVER_MEMORY_BUSY"].contains(&info.reason.as_str()),
                "{what}: {info:?}"
            );
            let needed: u64 = info.metadata["needed_bytes"].parse().unwrap();
            let limit: u64 = info.metadata["limit_bytes"].parse().unwrap();
            assert!(
                needed > limit || info.reason == "SERVER_MEMORY_BUSY",
                "{info:?}"
            );
            assert!(status.message().contains("bytes"), "{what}: {status:?}");
        }
        _ => panic!("{what}: {status:?}"),
    }
}

async fn queens8_answers(channel: &Channel) {
    let mut solver = SolverServiceClient::new(channel.clone());
    let response = solver
        .solve(with_deadline(
            pb::SolveRequest {
                problem: Some(pb::Problem {
                    source: Some(pb::problem::Source::Dlx(queens_dlx(8))),
                }),
                ..Default::default()
            },
            30,
        ))
        .await
        .expect("Solve(queens8) is answered");
    assert_eq!(response.into_inner().solutions.len(), 1);
}

async fn send_the_three(channel: &Channel, engine: pb::Engine) {
    let mut solver = SolverServiceClient::new(channel.clone())
        .max_encoding_message_size(usize::MAX)
        .max_decoding_message_size(64 << 20);
    let chain = solver
        .solve(with_deadline(
            pb::SolveRequest {
                problem: Some(pb::Problem {
                    source: Some(pb::problem::Source::Dlx(chain(20_000))),
                }),
                engine: engine as i32,
                ..Default::default()
            },
            20,
        ))
        .await;
    clear("the chain", &chain);
    if let Ok(answer) = &chain {
        assert_eq!(answer.get_ref().solutions[0].option_indices.len(), 20_000);
    }
    queens8_answers(channel).await;
    let mut puzzles = PuzzleServiceClient::new(channel.clone());
    for (what, kind, text, weak) in [
        (
            "the slitherlink",
            pb::PuzzleKind::Slitherlink,
            blank_slitherlink(140),
            true,
        ),
        (
            "the hidato",
            pb::PuzzleKind::Hidato,
            blank_hidato(25),
            false,
        ),
    ] {
        let result = puzzles
            .solve_puzzle(with_deadline(
                pb::SolvePuzzleRequest {
                    puzzle: Some(pb::Puzzle {
                        kind: kind as i32,
                        grid: Some(pb::puzzle::Grid::Text(text)),
                        weak,
                        ..Default::default()
                    }),
                    engine: engine as i32,
                    ..Default::default()
                },
                20,
            ))
            .await;
        clear(what, &result);
        queens8_answers(channel).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_under_an_address_space_limit_refuses_or_answers_and_lives() {
    let mut server = serve(&[]);
    let channel = server.channel().await;
    send_the_three(&channel, pb::Engine::Unspecified).await;
    assert!(server.process.alive(), "the server died");
    // An explicit engine that cannot fit is refused, naming the limit.
    send_the_three(&channel, pb::Engine::Cells).await;
    assert!(server.process.alive(), "the server died");
    let mut solver = SolverServiceClient::new(channel.clone());
    let status = solver
        .solve(pb::SolveRequest {
            problem: Some(pb::Problem {
                source: Some(pb::problem::Source::Dlx(chain(20_000))),
            }),
            engine: pb::Engine::Cells as i32,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let info = status.get_error_details().error_info().cloned().unwrap();
    assert_eq!(info.reason, "SEARCH_MEMORY_LIMIT");
    assert!(info.metadata["needed_bytes"].parse::<u64>().unwrap() > 1_500_000_000);
    queens8_answers(&channel).await;
    assert!(server.process.alive());
}

/// With the limits raised past what the process may map, the engines' own
/// allocations fail: the run ends with a failure, not the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allocation_that_fails_ends_the_run_not_the_server() {
    let mut server = serve(&[
        "--max-search-memory",
        "8G",
        "--max-total-search-memory",
        "16G",
    ]);
    let channel = server.channel().await;
    let mut solver = SolverServiceClient::new(channel.clone());
    let result = solver
        .solve(with_deadline(
            pb::SolveRequest {
                problem: Some(pb::Problem {
                    source: Some(pb::problem::Source::Dlx(chain(20_000))),
                }),
                engine: pb::Engine::Cells as i32,
                ..Default::default()
            },
            60,
        ))
        .await;
    let status = result.expect_err("1.6 GB of save stack cannot fit 1.5 GiB of address space");
    assert!(
        status.message().contains("out of memory"),
        "the status says why: {status:?}"
    );
    assert!(server.process.alive(), "the server died");
    queens8_answers(&channel).await;
    assert!(server.process.alive());
}

#[test]
fn the_cli_under_an_address_space_limit_answers_or_says_why() {
    let dir = std::env::temp_dir().join(format!("xccd-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("chain.dlx");
    std::fs::write(&file, chain(20_000)).unwrap();
    let run = |engine: &str| {
        Command::new("prlimit")
            .arg(ADDRESS_SPACE)
            .arg(XCCD)
            .args(["solve", "-q", "--format", "indices", "--engine", engine])
            .arg(&file)
            .env_remove("XCCD_MAX_SEARCH_MEMORY")
            .output()
            .unwrap()
    };
    // auto: the links engine fits and answers.
    let auto = run("auto");
    assert!(auto.status.success(), "{auto:?}");
    let indices = String::from_utf8(auto.stdout).unwrap();
    assert_eq!(indices.split_whitespace().count(), 20_000);
    // cells cannot fit: a clear error, exit 1, no abort.
    let cells = run("cells");
    assert_eq!(cells.status.code(), Some(1), "{cells:?}");
    let stderr = String::from_utf8(cells.stderr).unwrap();
    assert!(
        stderr.contains("bytes on the cells engine, over the limit"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

const TOKEN: &str = "memory-test-worker-token-0123456789";

/// An `xccd worker` under the address-space limit, killed when dropped.
fn worker(workers: SocketAddr) -> Process {
    let mut command = Command::new("prlimit");
    command
        .arg(ADDRESS_SPACE)
        .arg(XCCD)
        .args(["worker", "--threads", "1"])
        .args(["--coordinator", &format!("http://{workers}")])
        .env("XCCD_WORKER_TOKEN", TOKEN)
        .env_remove("XCCD_MAX_SEARCH_MEMORY");
    Process::start(command, Log::Null)
}

/// A coordinator whose own limit lets `auto` pick the cells engine for the
/// chain, and two workers under the address-space limit whose defaults do
/// not fit it: each worker hands the lease back and lives, the job fails
/// with SEARCH_MEMORY_LIMIT, and queens8 is answered right after. The
/// slitherlink and the hidato likewise get a clear status or an answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_hand_back_leases_they_cannot_fit_and_live() {
    let workers = free_port();
    let mut command = Command::new(XCCD);
    command.env("XCCD_WORKER_TOKEN", TOKEN);
    let mut coordinator = Server::start_with(
        command,
        &[
            "--threads",
            "0",
            "--worker-listen",
            &workers.to_string(),
            "--data-dir",
            "none",
            "--max-search-memory",
            "8G",
            "--max-total-search-memory",
            "8G",
        ],
        Log::Null,
    );
    let channel = coordinator.channel().await;
    let mut pool = [worker(workers), worker(workers)];
    // The workers are connected once a small search is answered.
    queens8_answers(&channel).await;
    let mut solver = SolverServiceClient::new(channel.clone());
    let status = solver
        .solve(with_deadline(
            pb::SolveRequest {
                problem: Some(pb::Problem {
                    source: Some(pb::problem::Source::Dlx(chain(20_000))),
                }),
                ..Default::default()
            },
            60,
        ))
        .await
        .expect_err("no worker can fit the cells engine's save stack");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let info = status.get_error_details().error_info().cloned().unwrap();
    assert_eq!(info.reason, "SEARCH_MEMORY_LIMIT", "{status:?}");
    assert!(status.message().contains("on worker"), "{status:?}");
    for worker in &mut pool {
        assert!(worker.alive(), "a worker died");
    }
    queens8_answers(&channel).await;
    let mut puzzles = PuzzleServiceClient::new(channel.clone());
    let slitherlink = puzzles
        .solve_puzzle(with_deadline(
            pb::SolvePuzzleRequest {
                puzzle: Some(pb::Puzzle {
                    kind: pb::PuzzleKind::Slitherlink as i32,
                    grid: Some(pb::puzzle::Grid::Text(blank_slitherlink(140))),
                    weak: true,
                    ..Default::default()
                }),
                engine: pb::Engine::Links as i32,
                ..Default::default()
            },
            30,
        ))
        .await;
    clear("the slitherlink on links", &slitherlink);
    queens8_answers(&channel).await;
    for worker in &mut pool {
        assert!(worker.alive(), "a worker died");
    }
    assert!(coordinator.process.alive());
}

/// Under a server budget that holds one chain's search and not two, a
/// second chain waits for the first: SERVER_MEMORY_BUSY with a RetryInfo
/// while the first runs, an answer once it is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_does_not_fit_beside_the_running_ones_is_told_to_retry() {
    let mut server = serve(&["--threads", "1", "--max-total-search-memory", "12M"]);
    let channel = server.channel().await;
    let mut solver = SolverServiceClient::new(channel.clone());
    let chain_problem = || {
        Some(pb::Problem {
            source: Some(pb::problem::Source::Dlx(chain(20_000))),
        })
    };
    // Counting the chain's 2^20000 solutions holds its charge until cancelled.
    let mut first = solver
        .enumerate(pb::EnumerateRequest {
            problem: chain_problem(),
            count_only: true,
            ..Default::default()
        })
        .await
        .expect("the first chain fits")
        .into_inner();
    let _ = tokio::time::timeout(Duration::from_millis(500), first.message()).await;
    let status = solver
        .solve(pb::SolveRequest {
            problem: chain_problem(),
            ..Default::default()
        })
        .await
        .expect_err("two chains do not fit");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let details = status.get_error_details();
    assert_eq!(details.error_info().unwrap().reason, "SERVER_MEMORY_BUSY");
    assert!(details.retry_info().is_some(), "{status:?}");
    drop(first);
    let start = Instant::now();
    loop {
        let result = solver
            .solve(pb::SolveRequest {
                problem: chain_problem(),
                ..Default::default()
            })
            .await;
        match result {
            Ok(answer) => {
                assert_eq!(
                    answer.into_inner().solutions[0].option_indices.len(),
                    20_000
                );
                break;
            }
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                assert!(start.elapsed() < Duration::from_secs(20), "{status:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    assert!(server.process.alive());
}
