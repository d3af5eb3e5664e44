//! Audits of remote workers (`serve --audit-rate`): real `xccd worker`
//! processes, one of them lying on the real protocol (the test-only
//! `XCCD_TEST_LIE`: `add-one` reports one solution more on every count-only
//! lease it finishes, `omit` sends none of the solutions of its streamed
//! leases, `vanish` reports a count a billion too high and exits, `duplicate`
//! sends a solution twice in place of another), beside honest ones, on queens14 (count-only: about 50 leases;
//! streamed: 250 to 450, the stream's backpressure checkpoints them). Not
//! yet the 1,000 leases issue 32 asks: a session asks at most one give-away
//! per 20 ms tick, and only while a slot is idle.
//!
//! At audit rates 1.0 and 0.1 the job's answer must be exact (for
//! `duplicate`, at 1.0, the job must fail with DATA_LOSS: the duplicate
//! reached the client), the liar
//! caught (`xccd_audit_mismatches_total{worker}` counts it once: barred, it
//! gets no lease of the job again) and the honest worker never.
//!
//! One test runs every case in turn: the metrics recorder is the
//! process's, installed once, and each case's workers have names of their
//! own.

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use common::fixtures::{all_solutions, instance};
use common::live::{get, value};
use common::service::{connect, xccd_with_token, Log, Process};
use xccd::service::cluster::{AuditConfig, ClusterConfig};
use xccd::service::credentials::WorkerToken;
use xccd::service::proto as pb;
use xccd::service::server::{start, RunningServer, ServeConfig};
use xccd::service::PoolConfig;

const TOKEN: &str = "audit-test-worker-token";
/// Nodes between polls: small, so that the job is cut into many leases.
const POLL: u64 = 16;
/// The job: big enough for more than 1,000 leases on two workers.
const INSTANCE: &str = "queens14";
/// Leases the job must be cut into at least.
const MIN_LEASES: f64 = 20.0;
const SOLUTIONS: u64 = 365_596;
/// Task slots of each worker.
const THREADS: usize = 2;
/// Honest workers beside the liar: a session asks at most one give-away
/// (a new lease) per 20 ms tick, so leases come faster with more of them.
const HONEST: usize = 2;

async fn coordinator(rate: f64) -> RunningServer {
    start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        worker_listen: Some("127.0.0.1:0".parse().unwrap()),
        pool: PoolConfig {
            threads: 0,
            max_jobs: 4,
            poll_interval: POLL,
            max_attempts: 50,
            ..PoolConfig::default()
        },
        cluster: ClusterConfig {
            heartbeat_interval: Duration::from_millis(100),
            lease_timeout: Duration::from_secs(5),
            token: Some(WorkerToken::new(TOKEN).unwrap()),
            audit: AuditConfig {
                rate,
                seed: 7,
                bar_for_life: false,
            },
            ..ClusterConfig::default()
        },
        ..ServeConfig::default()
    })
    .await
    .expect("the coordinator starts on loopback")
}

fn worker(addr: SocketAddr, name: &str, lie: Option<&str>) -> Process {
    let threads = THREADS.to_string();
    let mut command = xccd_with_token(TOKEN);
    command
        .args(["worker", "--coordinator", &format!("http://{addr}")])
        .args(["--threads", &threads, "--name", name]);
    if let Some(lie) = lie {
        command.env("XCCD_TEST_LIE", lie);
    }
    Process::start(command, Log::Create(format!("audit-{name}.log")))
}

fn scrape(addr: SocketAddr) -> String {
    let (code, page) = get(addr, "/metrics").expect("the metrics page");
    assert_eq!(code, 200);
    page
}

fn counter(page: &str, series: &str) -> f64 {
    value(page, series).unwrap_or(0.0)
}

struct Outcome {
    summary: pb::Summary,
    solutions: Vec<Vec<u32>>,
}

/// The job's summary and solutions, or the status its stream ended with.
async fn enumerate(
    server: &RunningServer,
    text: &str,
    count_only: bool,
) -> Result<Outcome, tonic::Status> {
    let mut client = connect(server.addr).await;
    let mut stream = client
        .enumerate(pb::EnumerateRequest {
            problem: Some(pb::Problem {
                source: Some(pb::problem::Source::Dlx(text.to_string())),
            }),
            count_only,
            batch_size: 512,
            ..Default::default()
        })
        .await
        .expect("Enumerate starts")
        .into_inner();
    let mut solutions = Vec::new();
    let read = async {
        while let Some(message) = stream.message().await? {
            match message.event.expect("an event") {
                pb::enumerate_response::Event::Solutions(batch) => {
                    solutions.extend(batch.solutions.into_iter().map(|s| s.option_indices))
                }
                pb::enumerate_response::Event::Progress(_) => {}
                pb::enumerate_response::Event::Summary(summary) => {
                    // The stream ends after its summary: OK, or with the
                    // status the summary carries.
                    if let Some(after) = stream.message().await? {
                        panic!("a message after the summary: {after:?}");
                    }
                    return Ok::<_, tonic::Status>(summary);
                }
            }
        }
        panic!("no summary")
    };
    let summary = tokio::time::timeout(Duration::from_secs(40), read)
        .await
        .expect("the job ends in time")?;
    Ok(Outcome { summary, solutions })
}

/// What a case's job must end with.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// COMPLETE, with the exact answer: the lie was corrected.
    Exact,
    /// DATA_LOSS, `AUDIT_UNCORRECTABLE`: solutions the liar streamed had
    /// reached the client.
    Uncorrectable,
}

async fn case(metrics: SocketAddr, lie: &str, rate: f64, count_only: bool, expect: Expect) {
    let name = format!("{lie}-{rate}");
    let liar_name = format!("liar-{name}");
    let honest_name = format!("honest-{name}");
    let server = coordinator(rate).await;
    let workers = server.worker_addr.unwrap();
    let _liar = worker(workers, &liar_name, Some(lie));
    let _honest: Vec<Process> = (1..=HONEST)
        .map(|i| worker(workers, &format!("{honest_name}-{i}"), None))
        .collect();
    let pool = server.pool.clone();
    common::service::wait_for("the workers join", Duration::from_secs(30), || {
        pool.remote_slots() == (1 + HONEST) * THREADS
    })
    .await;
    let before = scrape(metrics);
    let text = instance(INSTANCE);
    let watch_pool = server.pool.clone();
    let watch = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            for line in scrape(metrics)
                .lines()
                .filter(|l| l.starts_with("xccd_audit"))
            {
                eprintln!("{line}");
            }
            eprintln!(
                "jobs {} queued {} busy {} slots {}",
                watch_pool.active_jobs(),
                watch_pool.queued_tasks(),
                watch_pool.busy_workers(),
                watch_pool.remote_slots()
            );
        }
    });
    let ended = enumerate(&server, &text, count_only).await;
    watch.abort();
    let after = scrape(metrics);
    let caught = |who: &str| {
        counter(
            &after,
            &format!("xccd_audit_mismatches_total{{worker=\"{who}\"}}"),
        )
    };
    if expect == Expect::Uncorrectable {
        let status = match ended {
            Ok(outcome) => panic!("{name}: ended {:?}, not DATA_LOSS", outcome.summary),
            Err(status) => status,
        };
        assert_eq!(status.code(), tonic::Code::DataLoss, "{name}: {status:?}");
        assert_eq!(
            common::service::reason_of(&status),
            "AUDIT_UNCORRECTABLE",
            "{name}: {status:?}"
        );
        assert_eq!(caught(&liar_name), 1.0, "{name}: the liar is caught once");
        server.shutdown().await.expect("clean shutdown");
        return;
    }
    let outcome = ended.unwrap_or_else(|status| panic!("{name}: the stream failed: {status:?}"));
    let tasks = counter(&after, "xccd_tasks_total") - counter(&before, "xccd_tasks_total");
    let statistics = outcome.summary.statistics.clone().unwrap_or_default();
    for line in after.lines().filter(|l| l.starts_with("xccd_audit")) {
        eprintln!("{name}: {line}");
    }
    eprintln!(
        "{name}: {} solutions, {tasks} runs, {} leases audited",
        outcome.summary.solutions, statistics.leases_audited
    );
    assert_eq!(
        outcome.summary.reason,
        pb::EndReason::Complete as i32,
        "{name}: {:?}",
        outcome.summary
    );
    assert_eq!(outcome.summary.solutions, SOLUTIONS, "{name}: the count");
    if !count_only {
        let expected: BTreeSet<Vec<u32>> =
            all_solutions(&xccd::xcc::dlx_format::parse(&text).unwrap());
        let got: BTreeSet<Vec<u32>> = outcome.solutions.iter().cloned().collect();
        assert_eq!(got.len(), outcome.solutions.len(), "{name}: duplicates");
        assert!(got == expected, "{name}: not the in-process solution set");
    }
    // A count past its task's, lost: the task queued again cannot give
    // work away before it has caught up with that count, so it runs whole.
    assert!(
        lie == "vanish" || tasks >= MIN_LEASES,
        "{name}: {tasks} runs, not a job of {MIN_LEASES} leases"
    );
    assert!(statistics.leases_audited > 0, "{name}: nothing audited");
    assert_eq!(
        caught(&liar_name),
        1.0,
        "{name}: the liar is caught once, then barred"
    );
    for i in 1..=HONEST {
        let honest = format!("{honest_name}-{i}");
        assert_eq!(
            caught(&honest),
            0.0,
            "{name}: {honest} agrees with every audit"
        );
    }
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lying_workers_are_caught_barred_and_their_leases_redone() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("xccd::service::cluster::audit=warn")
        .with_writer(std::io::stderr)
        .try_init();
    let metrics = xccd::service::metrics::listen(
        "127.0.0.1:0".parse().unwrap(),
        xccd::service::metrics::Role::Coordinator,
    )
    .await
    .expect("a metrics listener");
    for rate in [1.0, 0.1] {
        case(metrics, "add-one", rate, true, Expect::Exact).await;
        case(metrics, "omit", rate, false, Expect::Exact).await;
    }
    // A count too high on a lease lost with its worker: taken back.
    case(metrics, "vanish", 1.0, true, Expect::Exact).await;
    // One solution sent twice, another left out: the numbers agree, the
    // fingerprints do not; the duplicate reached the client, so the job
    // says its answer is wrong instead of ending COMPLETE.
    case(metrics, "duplicate", 1.0, false, Expect::Uncorrectable).await;
}
