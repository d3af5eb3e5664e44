//! Durable jobs: a job submitted to a server with a data directory ends with
//! exactly the solutions of an uninterrupted run, however often its server
//! is killed (`kill -9`, a real process) and started again on the same
//! directory (or database: the PostgreSQL store), with local threads or
//! remote workers; its solutions read back
//! in pages and from an index; a damaged store stops the start with a clear
//! error. Kill moments are random (the seed is printed; set
//! `XCCD_DURABLE_SEED` to replay one).

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::fixtures::instance;
use common::rng::{seed, Rng};
use tonic::Code;
use xccd::service::proto as pb;
use xccd::xcc::dlx_format;

use common::service::{create_job, dlx, free_port, xccd_with_token, Client, Log, Process, XCCD};

const TOKEN: &str = "durable-test-worker-token";

/// Every solution, from the engine in this process (options ascending).
fn all_solutions(text: &str) -> BTreeSet<Vec<u32>> {
    let problem = dlx_format::parse(text).expect("instances parse");
    common::fixtures::all_solutions(&problem)
        .into_iter()
        .map(|mut s| {
            s.sort_unstable();
            s
        })
        .collect()
}

/// `xccd ARGS` at the tests' log level, with their worker token; its log,
/// `durable-NAME.log`, is appended to across restarts.
fn spawn(name: &str, args: &[String]) -> Process {
    let mut command = xccd_with_token(TOKEN);
    command.args(args);
    Process::start(command, Log::Append(format!("durable-{name}.log")))
}

fn serve(name: &str, dir: &Path, listen: SocketAddr, extra: &[&str]) -> Process {
    let mut args: Vec<String> = [
        "serve",
        "--listen",
        &listen.to_string(),
        "--data-dir",
        &dir.display().to_string(),
        "--snapshot-interval",
        "0.1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    spawn(name, &args)
}

async fn connect(addr: SocketAddr, server: &mut Process) -> Client {
    Client::new(server.channel(addr).await).max_decoding_message_size(64 << 20)
}

async fn submit(client: &mut Client, text: &str) -> String {
    let request = pb::CreateJobRequest {
        source: dlx(text).map(pb::create_job_request::Source::Problem),
        ..Default::default()
    };
    create_job(client, request).await
}

async fn get(client: &mut Client, job: &str) -> pb::Job {
    client
        .get_job(pb::GetJobRequest {
            name: job.to_string(),
            max_solutions: 1,
        })
        .await
        .expect("GetJob")
        .into_inner()
        .job
        .expect("a job")
}

async fn wait_done(client: &mut Client, job: &str, limit: Duration) -> pb::Job {
    let start = Instant::now();
    loop {
        let message = get(client, job).await;
        if message.state().is_final() {
            return message;
        }
        assert!(start.elapsed() < limit, "{job} not done within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every stored solution of `job`, read in pages of `page` solutions.
async fn read_all(client: &mut Client, job: &str, page: u32) -> Vec<Vec<u32>> {
    read_pages(client, job, page, false).await
}

/// As [`read_all`], in SolutionBatch's packed form (`packed`) or not.
async fn read_pages(client: &mut Client, job: &str, page: u32, packed: bool) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    let mut token = String::new();
    loop {
        let response = client
            .list_job_solutions(pb::ListJobSolutionsRequest {
                name: job.to_string(),
                page_size: page,
                page_token: token.clone(),
                include_option_text: false,
                packed_solutions: packed,
            })
            .await
            .expect("ListJobSolutions")
            .into_inner();
        assert_eq!(response.first_index, out.len() as u64);
        match (packed, response.packed) {
            (true, Some(batch)) => {
                assert!(response.solutions.is_empty(), "a page is packed or not");
                out.extend(common::packed::unpack(&batch));
            }
            (false, None) => out.extend(response.solutions.into_iter().map(|s| s.option_indices)),
            (_, batch) => panic!("asked packed: {packed}, got a packed page: {batch:?}"),
        }
        if response.next_page_token.is_empty() {
            return out;
        }
        token = response.next_page_token;
    }
}

/// A job's stored solutions from index `from` on, watched with WatchJob
/// (packed or not), and its summary.
async fn watch_from(
    client: &mut Client,
    job: &str,
    from: u64,
    packed: bool,
) -> (Vec<Vec<u32>>, pb::Summary) {
    let mut stream = client
        .watch_job(pb::WatchJobRequest {
            name: job.to_string(),
            include_solutions: true,
            from_solution: from,
            packed_solutions: packed,
            ..Default::default()
        })
        .await
        .expect("WatchJob")
        .into_inner();
    let mut watched = Vec::new();
    let mut summary = None;
    while let Some(message) = stream.message().await.expect("a watch message") {
        match message.event {
            Some(pb::watch_job_response::Event::Solutions(batch)) => {
                if packed {
                    assert!(batch.solutions.is_empty(), "a batch is packed or not");
                    watched.extend(common::packed::unpack(&batch));
                } else {
                    assert!(batch.packed_lengths.is_empty(), "not asked packed");
                    watched.extend(batch.solutions.into_iter().map(|s| s.option_indices));
                }
            }
            Some(pb::watch_job_response::Event::Summary(s)) => summary = Some(s),
            _ => {}
        }
    }
    (watched, summary.expect("a summary"))
}

/// Requires the job's stored solutions to be exactly `expected`, once each.
async fn check_exact(client: &mut Client, job: &str, expected: &BTreeSet<Vec<u32>>) {
    let done = wait_done(client, job, Duration::from_secs(120)).await;
    let summary = done.summary.expect("a summary");
    assert_eq!(
        summary.reason,
        pb::EndReason::Complete as i32,
        "{summary:?}"
    );
    assert_eq!(summary.solutions, expected.len() as u64);
    assert_eq!(done.stored_solutions, expected.len() as u64);
    let stored = read_all(client, job, 50_000).await;
    assert_eq!(
        stored.len(),
        expected.len(),
        "stored solutions, duplicates included"
    );
    let set: BTreeSet<Vec<u32>> = stored.into_iter().collect();
    assert_eq!(&set, expected, "the stored solution set");
}

/// Kills the server (`kill -9`; SIGTERM on the last round if `gently`) at
/// random moments of the job, restarting it on the same directory each
/// time.
async fn kill_and_restart(
    rng: &mut Rng,
    rounds: usize,
    gently: bool,
    mut start: impl FnMut(usize) -> Process,
    addr: SocketAddr,
    text: &str,
) -> (Process, Client, String) {
    let mut server = start(0);
    let mut client = connect(addr, &mut server).await;
    let job = submit(&mut client, text).await;
    for round in 1..=rounds {
        let delay = 30 + rng.below(400) as u64;
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let before = get(&mut client, &job).await;
        eprintln!(
            "round {round}: stopping after {delay} ms with {} solutions stored",
            before.stored_solutions
        );
        if round == rounds && gently {
            server.terminate();
        } else {
            server.kill9();
        }
        server = start(round);
        client = connect(addr, &mut server).await;
        let after = get(&mut client, &job).await;
        assert!(
            after.stored_solutions >= before.stored_solutions,
            "a restart lost committed solutions: {} before, {} after",
            before.stored_solutions,
            after.stored_solutions
        );
    }
    (server, client, job)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_killed_at_random_moments_ends_exact_on_local_threads() {
    let mut rng = Rng::new(seed());
    let text = instance("queens14");
    let expected = all_solutions(&text);
    let dir = tempfile::tempdir().unwrap();
    let addr = free_port();
    let (server, mut client, job) = kill_and_restart(
        &mut rng,
        4,
        true,
        |round| {
            serve(
                &format!("local-{round}"),
                dir.path(),
                addr,
                &["--threads", "2"],
            )
        },
        addr,
        &text,
    )
    .await;
    check_exact(&mut client, &job, &expected).await;
    drop(server);
}

/// The same on the PostgreSQL store (`--store postgres://...`, a server
/// of the test's own): every stop a `kill -9`, and nothing in the data
/// directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_killed_at_random_moments_ends_exact_on_postgres() {
    let Some(database) = common::postgres::server() else {
        return;
    };
    let url = database.url();
    let mut rng = Rng::new(seed());
    let text = instance("queens14");
    let expected = all_solutions(&text);
    let dir = tempfile::tempdir().unwrap();
    let addr = free_port();
    let (server, mut client, job) = kill_and_restart(
        &mut rng,
        4,
        false,
        |round| {
            serve(
                &format!("postgres-{round}"),
                dir.path(),
                addr,
                &["--threads", "2", "--store", &url],
            )
        },
        addr,
        &text,
    )
    .await;
    check_exact(&mut client, &job, &expected).await;
    drop(server);
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "the data directory stays empty"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_killed_at_random_moments_ends_exact_on_remote_workers() {
    remote_workers_and_threads("0").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_killed_at_random_moments_ends_exact_on_remote_workers_and_a_thread() {
    remote_workers_and_threads("1").await;
}

/// Two `xccd worker` processes, and `threads` local threads beside them.
async fn remote_workers_and_threads(threads: &str) {
    let mut rng = Rng::new(seed());
    let text = instance("langford12");
    let expected = all_solutions(&text);
    let dir = tempfile::tempdir().unwrap();
    let addr = free_port();
    let workers_at = free_port();
    let workers: Vec<Process> = (0..2)
        .map(|i| {
            spawn(
                &format!("worker-{i}"),
                &[
                    "worker".to_string(),
                    "--coordinator".to_string(),
                    format!("http://{workers_at}"),
                    "--threads".to_string(),
                    "1".to_string(),
                ],
            )
        })
        .collect();
    let (server, mut client, job) = kill_and_restart(
        &mut rng,
        3,
        false,
        |round| {
            serve(
                &format!("coordinator-{round}"),
                dir.path(),
                addr,
                &[
                    "--threads",
                    threads,
                    "--worker-listen",
                    &workers_at.to_string(),
                ],
            )
        },
        addr,
        &text,
    )
    .await;
    check_exact(&mut client, &job, &expected).await;
    drop(server);
    drop(workers);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_solutions_page_watch_from_an_index_and_delete() {
    let text = instance("queens10");
    let expected = all_solutions(&text);
    let dir = tempfile::tempdir().unwrap();
    let addr = free_port();
    let mut server = serve("pages", dir.path(), addr, &["--threads", "2"]);
    let mut client = connect(addr, &mut server).await;
    let job = submit(&mut client, &text).await;
    check_exact(&mut client, &job, &expected).await;

    // Pages of 7 give the same sequence as one page, packed or not.
    let whole = read_all(&mut client, &job, 100_000).await;
    assert_eq!(read_all(&mut client, &job, 7).await, whole);
    assert_eq!(read_pages(&mut client, &job, 7, true).await, whole);
    assert_eq!(read_pages(&mut client, &job, 100_000, true).await, whole);

    // A watcher starting at solution 700 gets the rest, in the same order,
    // packed or not.
    for packed in [false, true] {
        let (watched, summary) = watch_from(&mut client, &job, 700, packed).await;
        assert_eq!(watched, whole[700..].to_vec(), "packed: {packed}");
        assert_eq!(summary.solutions, 724);
    }

    // The packed form has no option text.
    let refused = client
        .list_job_solutions(pb::ListJobSolutionsRequest {
            name: job.clone(),
            include_option_text: true,
            packed_solutions: true,
            ..Default::default()
        })
        .await
        .expect_err("packed with option text");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(
        refused.message().contains("packed_solutions"),
        "{}",
        refused.message()
    );

    // Bad tokens name the field.
    let bad = client
        .list_job_solutions(pb::ListJobSolutionsRequest {
            name: job.clone(),
            page_token: "999.5".into(),
            ..Default::default()
        })
        .await
        .expect_err("another job's token");
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad.message().contains("page_token"), "{}", bad.message());

    // The job survives a restart as an ended job, then DeleteJob forgets it.
    server.kill9();
    let mut server = serve("pages-2", dir.path(), addr, &["--threads", "2"]);
    let mut client = connect(addr, &mut server).await;
    let ended = get(&mut client, &job).await;
    assert_eq!(ended.state(), pb::JobState::Succeeded);
    let created = std::time::SystemTime::try_from(ended.create_time.expect("create_time")).unwrap();
    let end =
        std::time::SystemTime::try_from(ended.end_time.expect("the stored end_time")).unwrap();
    assert!(
        end >= created,
        "end_time {end:?} before create_time {created:?}"
    );
    assert_eq!(ended.stored_solutions, 724);
    let summary = ended.summary.expect("the stored summary");
    assert_eq!(
        (summary.solutions, summary.reason),
        (724, pb::EndReason::Complete as i32)
    );
    assert_eq!(read_all(&mut client, &job, 1000).await, whole);
    assert_eq!(read_pages(&mut client, &job, 1000, true).await, whole);
    assert_eq!(watch_from(&mut client, &job, 0, true).await.0, whole);
    let listed = client
        .list_jobs(pb::ListJobsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(listed.jobs.iter().any(|j| j.name == job && j.durable));
    client
        .delete_job(pb::DeleteJobRequest { name: job.clone() })
        .await
        .expect("DeleteJob");
    let gone = client
        .get_job(pb::GetJobRequest {
            name: job.clone(),
            max_solutions: 0,
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), Code::NotFound);
    // A new job's id is not the deleted one's.
    let next = submit(&mut client, &instance("queens8")).await;
    assert_ne!(next, job);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_byte_limit_fails_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_port();
    let mut server = serve(
        "limit",
        dir.path(),
        addr,
        &["--threads", "1", "--max-job-store-bytes", "200000"],
    );
    let mut client = connect(addr, &mut server).await;
    // 73,712 solutions of about 14 bytes: five times the limit.
    let job = submit(&mut client, &instance("queens13")).await;
    let done = wait_done(&mut client, &job, Duration::from_secs(60)).await;
    assert_eq!(done.state(), pb::JobState::Failed);
    let summary = done.summary.clone().expect("a summary");
    assert_eq!(summary.reason, pb::EndReason::Failed as i32);
    let error = failed_with(&summary, Code::ResourceExhausted, "JOB_STORE_LIMIT");
    assert!(
        error.message.contains("--max-job-store-bytes"),
        "{}",
        error.message
    );
    assert!(done.stored_solutions < 73_712);
    assert_eq!(
        read_all(&mut client, &job, 100_000).await.len() as u64,
        done.stored_solutions
    );
    // The error is stored with the job: after a restart, the job read back
    // from the store says the same.
    server.kill9();
    let mut server = serve("limit-2", dir.path(), addr, &["--threads", "1"]);
    let mut client = connect(addr, &mut server).await;
    let stored = get(&mut client, &job).await;
    assert_eq!(stored.state(), pb::JobState::Failed);
    let after = stored.summary.expect("the stored summary");
    assert_eq!(
        failed_with(&after, Code::ResourceExhausted, "JOB_STORE_LIMIT"),
        error
    );
}

/// A durable memoized count killed while it runs counts again from the
/// root after the restart, once: its count, nodes and updates are those of
/// one uninterrupted `xccd solve --memo` (not a sum with the lost run's),
/// its count past 2^64-1 exact in `solutions_decimal`, and the same read
/// back from the store after another restart.
#[tokio::test]
async fn a_memoized_job_killed_while_it_counts_counts_again_once() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::dominoes::dominoes(16, 16);
    let file = dir.path().join("dominoes16.dlx");
    std::fs::write(&file, &text).unwrap();
    let cli = Command::new(XCCD)
        .args(["solve", "--memo", "--count"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(cli.status.success());
    let count = String::from_utf8(cli.stdout).unwrap().trim().to_string();
    let stderr = String::from_utf8(cli.stderr).unwrap();
    let figure = |before: &str| -> u64 {
        let at = stderr.find(before).unwrap();
        stderr[..at]
            .split_whitespace()
            .last()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (nodes, updates) = (figure(" nodes,"), figure(" updates"));

    let addr = free_port();
    let data = dir.path().join("data");
    let mut server = serve("memo", &data, addr, &["--threads", "1"]);
    let mut client = connect(addr, &mut server).await;
    let job = client
        .create_job(pb::CreateJobRequest {
            source: Some(pb::create_job_request::Source::Problem(pb::Problem {
                source: Some(pb::problem::Source::Dlx(text.clone())),
            })),
            count_only: true,
            memo: true,
            ..Default::default()
        })
        .await
        .expect("CreateJob")
        .into_inner()
        .job
        .unwrap()
        .name;
    let start = Instant::now();
    while get(&mut client, &job).await.state() != pb::JobState::Running {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{job} never runs"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill9();
    let mut server = serve("memo-2", &data, addr, &["--threads", "1"]);
    let mut client = connect(addr, &mut server).await;
    let done = wait_done(&mut client, &job, Duration::from_secs(120)).await;
    assert_eq!(done.state(), pb::JobState::Succeeded, "{done:?}");
    let summary = done.summary.expect("a summary");
    let statistics = summary.statistics.expect("statistics");
    assert_eq!(statistics.solutions_decimal, count);
    assert_eq!(summary.solutions, u64::MAX);
    assert_eq!((statistics.nodes, statistics.updates), (nodes, updates));
    server.terminate();
    let mut server = serve("memo-3", &data, addr, &["--threads", "1"]);
    let mut client = connect(addr, &mut server).await;
    let stored = get(&mut client, &job).await;
    assert_eq!(stored.state(), pb::JobState::Succeeded);
    let statistics = stored.summary.unwrap().statistics.unwrap();
    assert_eq!(statistics.solutions_decimal, count);
}

/// The error of a failed job's `summary`: a google.rpc.Status of `code`
/// with an ErrorInfo of domain "xccd" and `reason`.
fn failed_with(summary: &pb::Summary, code: Code, reason: &str) -> tonic_types::Status {
    use tonic_types::RpcStatusExt;
    let error = summary.error.clone().expect("Summary.error");
    assert_eq!(Code::from(error.code), code, "{error:?}");
    let details = error.get_error_details();
    let info = details.error_info().expect("an ErrorInfo");
    assert_eq!(
        (info.domain.as_str(), info.reason.as_str()),
        ("xccd", reason)
    );
    error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_store_stops_the_start_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_port();
    let mut server = serve("damage", dir.path(), addr, &["--threads", "2"]);
    let mut client = connect(addr, &mut server).await;
    let job = submit(&mut client, &instance("queens12")).await;
    wait_done(&mut client, &job, Duration::from_secs(60)).await;
    server.terminate();
    let file = dir.path().join("jobs.sqlite");
    let good = std::fs::read(&file).expect("the store file");
    assert!(good.len() > 100_000, "{} bytes", good.len());
    let damages: Vec<(&str, Vec<u8>)> = vec![
        ("truncated to half", good[..good.len() / 2].to_vec()),
        ("truncated to nothing", Vec::new()),
        ("pages overwritten", {
            let mut bad = good.clone();
            for byte in &mut bad[8192..40_960] {
                *byte = 0x5a;
            }
            bad
        }),
        (
            "not a store at all",
            b"these are not the jobs you are looking for\n".repeat(200),
        ),
    ];
    for (what, bytes) in damages {
        std::fs::write(&file, &bytes).unwrap();
        let output = Command::new(XCCD)
            .args([
                "serve",
                "--listen",
                &free_port().to_string(),
                "--threads",
                "1",
            ])
            .args(["--data-dir", &dir.path().display().to_string()])
            .output()
            .expect("run xccd serve");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success(),
            "{what}: the server started; {err}"
        );
        assert!(
            err.contains("job store") && (err.contains("damaged") || err.contains("empty")),
            "{what}: {err}"
        );
    }
}
