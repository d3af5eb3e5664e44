//! Two coordinators on one PostgreSQL store (a real server of the test's
//! own), one leading, one standing by; two `xccd worker` processes given
//! both addresses. A durable enumeration of n queens runs while the leader
//! is killed (`kill -9`) three times at random moments, each time started
//! again as the new standby: the other takes over, resumes the job from its
//! last snapshot, and the workers and a watching client follow it. Every
//! solution read back through ListJobSolutions is a valid placement, each
//! once, as many as there are; the watcher saw each once. The time each
//! takeover took is printed. A leader frozen (SIGSTOP) past its lease is
//! taken over too, and once thawed steps down with its writes refused.
//!
//! The instance is queens15 (2,279,184 solutions); `XCCD_FAILOVER_QUEENS=14`
//! runs queens14 (365,596), shorter than the three kills. Kill moments
//! are random (the seed is printed; `XCCD_DURABLE_SEED` replays one).

mod common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::queens::queens_dlx;
use common::rng::{seed, Rng};
use common::service::{
    create_job, dlx, free_port, reason_of, xccd_with_token, Client, Log, Process,
};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;
use xccd::service::proto as pb;

const TOKEN: &str = "failover-test-worker-token";

/// Solutions of n queens, n = 0..=15.
const QUEENS: [u64; 16] = [
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184,
];

/// One coordinator: its addresses and, while it runs, its process.
struct Coordinator {
    name: &'static str,
    api: SocketAddr,
    workers: SocketAddr,
    metrics: SocketAddr,
    url: String,
    process: Option<Process>,
}

impl Coordinator {
    fn new(name: &'static str, url: &str) -> Coordinator {
        Coordinator {
            name,
            api: free_port(),
            workers: free_port(),
            metrics: free_port(),
            url: url.to_string(),
            process: None,
        }
    }

    /// Starts it (again), its log appended to `failover-NAME.log`.
    fn start(&mut self) {
        let mut command = xccd_with_token(TOKEN);
        command.args([
            "serve",
            "--listen",
            &self.api.to_string(),
            "--worker-listen",
            &self.workers.to_string(),
            "--metrics-listen",
            &self.metrics.to_string(),
            "--threads",
            "0",
            "--store",
            &self.url,
            "--snapshot-interval",
            "0.2",
            "--advertise",
            &self.api.to_string(),
        ]);
        self.process = Some(Process::start(
            command,
            Log::Append(format!("failover-{}.log", self.name)),
        ));
    }

    fn process(&mut self) -> &mut Process {
        self.process.as_mut().expect("it runs")
    }

    /// Its gRPC health ("" service), or None when it does not answer.
    async fn health(&self) -> Option<ServingStatus> {
        let channel = tonic::transport::Channel::from_shared(format!("http://{}", self.api))
            .unwrap()
            .connect_timeout(Duration::from_millis(500))
            .timeout(Duration::from_secs(2))
            .connect()
            .await
            .ok()?;
        let answer = HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .ok()?;
        Some(answer.into_inner().status())
    }

    /// Waits until its health is `status`; how long that took.
    async fn wait_health(&mut self, status: ServingStatus, limit: Duration) -> Duration {
        let start = Instant::now();
        loop {
            self.process().assert_running();
            if self.health().await == Some(status) {
                return start.elapsed();
            }
            let name = self.name;
            assert!(
                start.elapsed() < limit,
                "{name} is not {status:?} within {limit:?}; {}",
                self.process().log_name()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn client(&self) -> Option<Client> {
        let channel = tonic::transport::Channel::from_shared(format!("http://{}", self.api))
            .unwrap()
            .connect_timeout(Duration::from_millis(500))
            .connect()
            .await
            .ok()?;
        Some(Client::new(channel).max_decoding_message_size(64 << 20))
    }

    /// A counter of its metrics page (0 when absent).
    async fn counter(&self, name: &str) -> f64 {
        let Ok(mut tcp) = tokio::net::TcpStream::connect(self.metrics).await else {
            return 0.0;
        };
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let request = format!("GET /metrics HTTP/1.0\r\nHost: {}\r\n\r\n", self.metrics);
        if tcp.write_all(request.as_bytes()).await.is_err() {
            return 0.0;
        }
        let mut page = String::new();
        let _ = tcp.read_to_string(&mut page).await;
        page.lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0.0)
    }
}

/// A client of whichever coordinator leads (tried in turn, for `limit`).
async fn leader_client(coordinators: &[Coordinator], limit: Duration) -> (usize, Client) {
    let start = Instant::now();
    loop {
        for (i, c) in coordinators.iter().enumerate() {
            if c.health().await == Some(ServingStatus::Serving) {
                if let Some(client) = c.client().await {
                    return (i, client);
                }
            }
        }
        assert!(
            start.elapsed() < limit,
            "no coordinator leads within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// GetJob on whichever leads.
async fn get(coordinators: &[Coordinator], job: &str) -> pb::Job {
    loop {
        let (_, mut client) = leader_client(coordinators, Duration::from_secs(60)).await;
        let request = pb::GetJobRequest {
            name: job.to_string(),
            max_solutions: 1,
        };
        match client.get_job(request).await {
            Ok(answer) => return answer.into_inner().job.expect("a job"),
            Err(status) if status.code() == tonic::Code::Unavailable => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(status) => panic!("GetJob: {status:?}"),
        }
    }
}

/// Every stored solution of `job`, in pages, from whichever leads.
async fn read_all(coordinators: &[Coordinator], job: &str, n: usize) -> Vec<u64> {
    let (_, mut client) = leader_client(coordinators, Duration::from_secs(60)).await;
    let mut out = Vec::new();
    let mut token = String::new();
    loop {
        let page = client
            .list_job_solutions(pb::ListJobSolutionsRequest {
                name: job.to_string(),
                page_size: 50_000,
                page_token: token.clone(),
                include_option_text: false,
                packed_solutions: true,
            })
            .await
            .expect("ListJobSolutions")
            .into_inner();
        assert_eq!(page.first_index, out.len() as u64);
        let page_solutions = common::packed::unpack(&page.packed.expect("a packed page"));
        out.extend(page_solutions.iter().map(|s| placement(n, s)));
        if page.next_page_token.is_empty() {
            return out;
        }
        token = page.next_page_token;
    }
}

/// Watches `job` with WatchJob from the solutions seen so far on, through
/// every failover, until its summary says it is complete: the solutions in
/// the order they came.
async fn watch(apis: Vec<SocketAddr>, job: String, n: usize) -> Vec<u64> {
    let mut seen: Vec<u64> = Vec::new();
    let mut at = 0;
    loop {
        let addr = apis[at % apis.len()];
        at += 1;
        let channel = match tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_timeout(Duration::from_millis(500))
            .connect()
            .await
        {
            Ok(channel) => channel,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let mut client = Client::new(channel).max_decoding_message_size(64 << 20);
        let call = client
            .watch_job(pb::WatchJobRequest {
                name: job.clone(),
                include_solutions: true,
                from_solution: seen.len() as u64,
                packed_solutions: true,
                ..Default::default()
            })
            .await;
        let mut stream = match call {
            Ok(answer) => answer.into_inner(),
            Err(status) => {
                assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Stay with this coordinator while it answers.
        at -= 1;
        loop {
            match stream.message().await {
                Ok(Some(message)) => match message.event {
                    Some(pb::watch_job_response::Event::Solutions(batch)) => {
                        let batch = common::packed::unpack(&batch);
                        seen.extend(batch.iter().map(|s| placement(n, s)));
                    }
                    Some(pb::watch_job_response::Event::Summary(summary)) => {
                        if summary.reason == pb::EndReason::Complete as i32 {
                            return seen;
                        }
                        // A coordinator stepping down (SHUTDOWN): go on
                        // elsewhere.
                        at += 1;
                        break;
                    }
                    _ => {}
                },
                // Its coordinator was killed.
                Ok(None) | Err(_) => {
                    at += 1;
                    break;
                }
            }
        }
    }
}

/// A solution of n queens as its columns row by row, 4 bits each; fails
/// the test unless it is a valid placement.
fn placement(n: usize, solution: &[u32]) -> u64 {
    // Option k places a queen on row k / n, column k % n.
    let mut cols: Vec<Option<usize>> = vec![None; n];
    for &option in solution {
        let (row, col) = (option as usize / n, option as usize % n);
        assert!(cols[row].is_none(), "two queens on row {row}");
        cols[row] = Some(col);
    }
    let cols: Vec<usize> = cols
        .into_iter()
        .map(|c| c.expect("a queen on every row"))
        .collect();
    for i in 0..n {
        for j in i + 1..n {
            assert!(
                cols[i] != cols[j] && cols[i].abs_diff(cols[j]) != j - i,
                "queens attack each other in {cols:?}"
            );
        }
    }
    cols.iter().fold(0, |key, &c| key << 4 | c as u64)
}

/// Requires `solutions` (placements) to be every one of `n` queens, each once.
fn check_queens(n: usize, solutions: &[u64], what: &str) {
    assert_eq!(
        solutions.len() as u64,
        QUEENS[n],
        "{what}: the count, repeats included"
    );
    let distinct: HashSet<u64> = solutions.iter().copied().collect();
    assert_eq!(distinct.len(), solutions.len(), "{what}: a solution twice");
}

fn queens_n() -> usize {
    std::env::var("XCCD_FAILOVER_QUEENS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n: &usize| (4..=15).contains(n))
        .unwrap_or(15)
}

/// Starts both coordinators (the first leads) and two workers given both
/// workers' addresses.
async fn cluster(url: &str) -> (Vec<Coordinator>, Vec<Process>) {
    let mut coordinators = vec![Coordinator::new("a", url), Coordinator::new("b", url)];
    coordinators[0].start();
    coordinators[0]
        .wait_health(ServingStatus::Serving, Duration::from_secs(30))
        .await;
    coordinators[1].start();
    coordinators[1]
        .wait_health(ServingStatus::NotServing, Duration::from_secs(30))
        .await;
    // A standby refuses with the leader's address.
    let mut standby = coordinators[1].client().await.expect("the standby listens");
    let status = standby
        .get_job(pb::GetJobRequest {
            name: "jobs/1".into(),
            max_solutions: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert_eq!(reason_of(&status), "NOT_LEADER");
    use tonic_types::StatusExt;
    let leader = status.get_details_error_info().expect("ErrorInfo").metadata["leader"].clone();
    assert_eq!(leader, coordinators[0].api.to_string());
    let both = coordinators
        .iter()
        .map(|c| format!("http://{}", c.workers))
        .collect::<Vec<_>>()
        .join(",");
    let workers = (0..2)
        .map(|i| {
            let mut command = xccd_with_token(TOKEN);
            command.args(["worker", "--coordinator", &both, "--threads", "1"]);
            Process::start(command, Log::Append(format!("failover-worker-{i}.log")))
        })
        .collect();
    (coordinators, workers)
}

async fn submit(coordinators: &[Coordinator], n: usize) -> String {
    let (_, mut client) = leader_client(coordinators, Duration::from_secs(30)).await;
    let request = pb::CreateJobRequest {
        source: dlx(queens_dlx(n)).map(pb::create_job_request::Source::Problem),
        ..Default::default()
    };
    create_job(&mut client, request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_killed_three_times_the_job_ends_exact() {
    let Some(database) = common::postgres::server() else {
        return;
    };
    let url = database.url();
    let n = queens_n();
    let mut rng = Rng::new(seed());
    let (mut coordinators, workers) = cluster(&url).await;
    let job = submit(&coordinators, n).await;
    let watcher = tokio::spawn(watch(
        coordinators.iter().map(|c| c.api).collect(),
        job.clone(),
        n,
    ));
    let started = Instant::now();
    let mut takeovers = Vec::new();
    for round in 1..=3 {
        let delay = 500 + rng.below(2500) as u64;
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let (leader, _) = leader_client(&coordinators, Duration::from_secs(30)).await;
        let before = get(&coordinators, &job).await;
        let standby = 1 - leader;
        coordinators[leader].process().kill9();
        let killed = Instant::now();
        let took = coordinators[standby]
            .wait_health(ServingStatus::Serving, Duration::from_secs(30))
            .await;
        let took = took.max(killed.elapsed());
        let after = get(&coordinators, &job).await;
        eprintln!(
            "round {round}: killed {} after {delay} ms with {} solutions stored (job {}); {} led \
             {:.2} s later with {} stored",
            coordinators[leader].name,
            before.stored_solutions,
            if before.state().is_final() {
                "already done"
            } else {
                "running"
            },
            coordinators[standby].name,
            took.as_secs_f64(),
            after.stored_solutions
        );
        assert!(
            after.stored_solutions >= before.stored_solutions,
            "a takeover lost committed solutions"
        );
        takeovers.push(took);
        coordinators[leader].start();
        coordinators[leader]
            .wait_health(ServingStatus::NotServing, Duration::from_secs(30))
            .await;
    }
    let done = loop {
        let job = get(&coordinators, &job).await;
        if job.state().is_final() {
            break job;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the job does not end"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let summary = done.summary.expect("a summary");
    assert_eq!(
        summary.reason,
        pb::EndReason::Complete as i32,
        "{summary:?}"
    );
    assert_eq!(summary.solutions, QUEENS[n]);
    let stored = read_all(&coordinators, &job, n).await;
    check_queens(n, &stored, "ListJobSolutions");
    let watched = tokio::time::timeout(Duration::from_secs(120), watcher)
        .await
        .expect("the watcher ends")
        .expect("the watcher");
    check_queens(n, &watched, "WatchJob through the failovers");
    assert_eq!(watched, stored, "the watcher saw the stored order");
    let worst = takeovers.iter().max().unwrap();
    eprintln!(
        "queens{n}: {} solutions exact through 3 kill -9 of the leader; takeover (kill to the \
         standby SERVING) {}; worst {:.2} s; the run took {:.1} s",
        QUEENS[n],
        takeovers
            .iter()
            .map(|t| format!("{:.2} s", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", "),
        worst.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        *worst < Duration::from_secs(10),
        "a takeover took {worst:?}, more than the stated bound"
    );
    drop(workers);
}

/// A leader frozen (SIGSTOP: its connections stay open, so only the
/// lease's expiry frees the lead) is taken over within the lease's bound;
/// thawed, it finds its writes refused or its lease gone, and stands by.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_leader_is_taken_over_and_fenced_when_it_wakes() {
    let Some(database) = common::postgres::server() else {
        return;
    };
    let url = database.url();
    let n = queens_n().min(13);
    let (mut coordinators, workers) = cluster(&url).await;
    let job = submit(&coordinators, n).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    coordinators[0].process().signal("-STOP");
    let frozen = Instant::now();
    coordinators[1]
        .wait_health(ServingStatus::Serving, Duration::from_secs(30))
        .await;
    let took = frozen.elapsed();
    eprintln!("a frozen leader taken over in {:.2} s", took.as_secs_f64());
    assert!(took < Duration::from_secs(10), "took {took:?}");
    coordinators[0].process().signal("-CONT");
    coordinators[0]
        .wait_health(ServingStatus::NotServing, Duration::from_secs(30))
        .await;
    eprintln!(
        "the thawed one stands by; its fenced writes: {}",
        coordinators[0]
            .counter("xccd_store_fenced_writes_total")
            .await
    );
    let done = loop {
        let job = get(&coordinators, &job).await;
        if job.state().is_final() {
            break job;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        done.summary.expect("a summary").reason,
        pb::EndReason::Complete as i32
    );
    check_queens(
        n,
        &read_all(&coordinators, &job, n).await,
        "after the freeze",
    );
    drop(workers);
}
