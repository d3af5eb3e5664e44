//! Coordinators on one PostgreSQL store, as processes (tests/failover.rs,
//! tests/partition.rs): one `xccd serve` with its addresses, its health and
//! its metrics; the client of whichever leads; a job of n queens submitted,
//! awaited and read back; its solutions checked as placements, each once.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;
use xccd::service::proto as pb;

use super::queens::queens_dlx;
use super::service::{create_job, dlx, free_port, Client, Log, Process, XCCD};

/// The workers' token of these coordinators.
pub const TOKEN: &str = "failover-test-worker-token";

/// Solutions of n queens, n = 0..=15.
pub const QUEENS: [u64; 16] = [
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184,
];

/// One coordinator: its addresses and, while it runs, its process.
pub struct Coordinator {
    pub name: &'static str,
    pub api: SocketAddr,
    pub workers: SocketAddr,
    pub metrics: SocketAddr,
    pub url: String,
    /// Its log's name, `PREFIX-NAME.log`.
    log: String,
    /// A command it runs under (`ip netns exec NS`), if any.
    wrapper: Vec<String>,
    pub process: Option<Process>,
}

impl Coordinator {
    /// One on loopback, logging to `failover-NAME.log`.
    pub fn new(name: &'static str, url: &str) -> Coordinator {
        let port = |addr: SocketAddr| addr.port();
        Coordinator::at(
            name,
            url,
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            [port(free_port()), port(free_port()), port(free_port())],
            "failover",
        )
    }

    /// One listening on `ip` at `ports` (API, workers, metrics), logging to
    /// `LOG-NAME.log`.
    pub fn at(
        name: &'static str,
        url: &str,
        ip: IpAddr,
        ports: [u16; 3],
        log: &str,
    ) -> Coordinator {
        Coordinator {
            name,
            api: SocketAddr::new(ip, ports[0]),
            workers: SocketAddr::new(ip, ports[1]),
            metrics: SocketAddr::new(ip, ports[2]),
            url: url.to_string(),
            log: format!("{log}-{name}.log"),
            wrapper: Vec::new(),
            process: None,
        }
    }

    /// Runs it under `wrapper` (a program and its arguments, given `xccd`
    /// and its arguments after them).
    pub fn under(mut self, wrapper: &[&str]) -> Coordinator {
        self.wrapper = wrapper.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Starts it (again), its log appended to its file.
    pub fn start(&mut self) {
        let mut command = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(XCCD);
                command
            }
            None => Command::new(XCCD),
        };
        command
            .env("RUST_LOG", "info")
            .env("XCCD_WORKER_TOKEN", TOKEN)
            .args([
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
        self.process = Some(Process::start(command, Log::Append(self.log.clone())));
    }

    pub fn process(&mut self) -> &mut Process {
        self.process.as_mut().expect("it runs")
    }

    /// Its gRPC health ("" service), or None when it does not answer.
    pub async fn health(&self) -> Option<ServingStatus> {
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
    pub async fn wait_health(&mut self, status: ServingStatus, limit: Duration) -> Duration {
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

    pub async fn client(&self) -> Option<Client> {
        let channel = tonic::transport::Channel::from_shared(format!("http://{}", self.api))
            .unwrap()
            .connect_timeout(Duration::from_millis(500))
            .connect()
            .await
            .ok()?;
        Some(Client::new(channel).max_decoding_message_size(64 << 20))
    }

    /// A counter of its metrics page (0 when absent or unreachable).
    pub async fn counter(&self, name: &str) -> f64 {
        let page = async {
            let mut tcp = tokio::net::TcpStream::connect(self.metrics).await.ok()?;
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let request = format!("GET /metrics HTTP/1.0\r\nHost: {}\r\n\r\n", self.metrics);
            tcp.write_all(request.as_bytes()).await.ok()?;
            let mut page = String::new();
            let _ = tcp.read_to_string(&mut page).await;
            Some(page)
        };
        let page = tokio::time::timeout(Duration::from_secs(5), page)
            .await
            .ok()
            .flatten()
            .unwrap_or_default();
        page.lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0.0)
    }
}

/// A client of whichever coordinator leads (tried in turn, for `limit`).
pub async fn leader_client(coordinators: &[Coordinator], limit: Duration) -> (usize, Client) {
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
pub async fn get(coordinators: &[Coordinator], job: &str) -> pb::Job {
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

/// The job once it has ended (on whichever leads), failing past `limit`.
pub async fn wait_final(coordinators: &[Coordinator], job: &str, limit: Duration) -> pb::Job {
    let start = Instant::now();
    loop {
        let job = get(coordinators, job).await;
        if job.state().is_final() {
            return job;
        }
        assert!(start.elapsed() < limit, "the job does not end");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits for the job of n queens to end complete, with every solution:
/// its solutions read back through ListJobSolutions, checked (`what` says
/// when) as every placement, each once.
pub async fn finished_exact(
    coordinators: &[Coordinator],
    job: &str,
    n: usize,
    what: &str,
) -> Vec<u64> {
    let done = wait_final(coordinators, job, Duration::from_secs(600)).await;
    let summary = done.summary.expect("a summary");
    assert_eq!(
        summary.reason,
        pb::EndReason::Complete as i32,
        "{summary:?}"
    );
    assert_eq!(summary.solutions, QUEENS[n], "{what}: the summary's count");
    let stored = read_all(coordinators, job, n).await;
    check_queens(n, &stored, &format!("ListJobSolutions {what}"));
    stored
}

/// Submits n queens to whichever leads: the job's name.
pub async fn submit_queens(coordinators: &[Coordinator], n: usize) -> String {
    let (_, mut client) = leader_client(coordinators, Duration::from_secs(30)).await;
    let request = pb::CreateJobRequest {
        source: dlx(queens_dlx(n)).map(pb::create_job_request::Source::Problem),
        ..Default::default()
    };
    create_job(&mut client, request).await
}

/// Every stored solution of `job`, in pages, from whichever leads.
pub async fn read_all(coordinators: &[Coordinator], job: &str, n: usize) -> Vec<u64> {
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
        let page_solutions = super::packed::unpack(&page.packed.expect("a packed page"));
        out.extend(page_solutions.iter().map(|s| placement(n, s)));
        if page.next_page_token.is_empty() {
            return out;
        }
        token = page.next_page_token;
    }
}

/// A solution of n queens as its columns row by row, 4 bits each; fails
/// the test unless it is a valid placement.
pub fn placement(n: usize, solution: &[u32]) -> u64 {
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
pub fn check_queens(n: usize, solutions: &[u64], what: &str) {
    assert_eq!(
        solutions.len() as u64,
        QUEENS[n],
        "{what}: the count, repeats included"
    );
    let distinct: HashSet<u64> = solutions.iter().copied().collect();
    assert_eq!(distinct.len(), solutions.len(), "{what}: a solution twice");
}

/// `xccd worker` processes following every one of `coordinators`, each
/// with one thread, logging to `LOG-worker-I.log`.
pub fn workers(coordinators: &[Coordinator], count: usize, log: &str) -> Vec<Process> {
    let all = coordinators
        .iter()
        .map(|c| format!("http://{}", c.workers))
        .collect::<Vec<_>>()
        .join(",");
    (0..count)
        .map(|i| {
            let mut command = Command::new(XCCD);
            command
                .env("RUST_LOG", "info")
                .env("XCCD_WORKER_TOKEN", TOKEN)
                .args(["worker", "--coordinator", &all, "--threads", "1"]);
            Process::start(command, Log::Append(format!("{log}-worker-{i}.log")))
        })
        .collect()
}
