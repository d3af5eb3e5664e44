//! The metrics an operator scrapes, from real processes: a pure coordinator
//! (`xccd serve --metrics-listen`) and a worker (`xccd worker
//! --metrics-listen`) run a job; both `/metrics` pages then name the job's
//! figures, describe every metric (HELP), answer 404 on any other path and
//! pass `promtool check metrics` (Prometheus's own linter of the naming
//! conventions). Without promtool the lint says `skipped`, unless
//! XCCD_REQUIRE_PROMTOOL=1 (CI), where it fails.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const XCCD: &str = env!("CARGO_BIN_EXE_xccd");
const TOKEN: &str = "metrics-test-worker-token";

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// A process killed when dropped; its stderr goes to a log file.
struct Process(Child);

impl Process {
    fn start(name: &str, args: &[&str]) -> Process {
        let log = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("metrics-{name}.log"));
        Process(
            Command::new(XCCD)
                .args(args)
                .env("XCCD_WORKER_TOKEN", TOKEN)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(log).expect("a log file"))
                .spawn()
                .expect("start xccd"),
        )
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` over HTTP/1.1: the status code and the body.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((code, body.to_string()))
}

/// Scrapes `/metrics` until `ready` holds of the page (at most 20 s).
fn scrape_until(addr: SocketAddr, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        match get(addr, "/metrics") {
            Ok((200, page)) if ready(&page) => return page,
            last if Instant::now() > until => panic!("{what} at {addr}: not ready: {last:?}"),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// The value of the sample written exactly `series` (name and labels).
fn value(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// Every metric of the page has a TYPE and a HELP line with some text.
fn all_described(page: &str, what: &str) {
    let mut typed = 0;
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            typed += 1;
            let name = rest.split_whitespace().next().unwrap();
            let help = format!("# HELP {name} ");
            assert!(
                page.lines()
                    .any(|l| l.starts_with(&help) && l.len() > help.len() + 10),
                "{what}: {name} has no HELP text"
            );
        }
    }
    assert!(typed > 5, "{what}: only {typed} metrics:\n{page}");
    for line in page
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|base| page.contains(&format!("# TYPE {base} histogram")))
            .unwrap_or(name);
        assert!(
            page.contains(&format!("# TYPE {family} ")),
            "{what}: {name} has no TYPE line"
        );
    }
}

/// `promtool check metrics` on a page: Prometheus's lint of the naming
/// conventions (units, `_total` on counters only, HELP).
fn promtool(page: &str, what: &str) {
    let required = std::env::var("XCCD_REQUIRE_PROMTOOL").as_deref() == Ok("1");
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if !required => {
            eprintln!(
                "skipped: promtool check metrics on {what} ({e}; apt-get install prometheus)"
            );
            return;
        }
        Err(e) => panic!("promtool: {e} (XCCD_REQUIRE_PROMTOOL=1: install Debian's prometheus)"),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics on {what}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn not_found_elsewhere(addr: SocketAddr, what: &str) {
    for path in ["/healthz", "/", "/metrics/extra", "/metricsx"] {
        let (code, _) = get(addr, path).unwrap();
        assert_eq!(code, 404, "{what}: GET {path}");
    }
}

#[test]
fn a_coordinator_and_a_worker_serve_described_metrics_that_promtool_accepts() {
    let (api, workers, coordinator_metrics, worker_metrics) =
        (free_port(), free_port(), free_port(), free_port());
    let _serve = Process::start(
        "serve",
        &[
            "serve",
            "--listen",
            &api.to_string(),
            "--threads",
            "0",
            "--worker-listen",
            &workers.to_string(),
            "--metrics-listen",
            &coordinator_metrics.to_string(),
        ],
    );
    scrape_until(coordinator_metrics, "the coordinator", |_| true);
    let _worker = Process::start(
        "worker",
        &[
            "worker",
            "--coordinator",
            &format!("http://{workers}"),
            "--threads",
            "2",
            "--name",
            "metrics-test",
            "--metrics-listen",
            &worker_metrics.to_string(),
        ],
    );
    scrape_until(worker_metrics, "the worker", |page| {
        value(page, "xccd_worker_connected") == Some(1.0)
    });
    let solved = Command::new(XCCD)
        .args(["solve", "examples/queens8.dlx", "--count"])
        .args(["--server", &format!("http://{api}")])
        .output()
        .unwrap();
    assert!(solved.status.success(), "{solved:?}");
    assert_eq!(String::from_utf8_lossy(&solved.stdout).trim(), "92");

    // The coordinator: the job, its call, its task's wait and lease.
    let page = scrape_until(coordinator_metrics, "the coordinator", |page| {
        value(page, "xccd_jobs_finished_total{reason=\"complete\"}") == Some(1.0)
            && value(page, "xccd_remote_workers") == Some(1.0)
            // The pool's gauges are published every second.
            && value(page, "xccd_remote_slots") == Some(2.0)
    });
    for series in [
        "xccd_job_duration_seconds_count{reason=\"complete\"}",
        "xccd_task_queue_wait_seconds_count",
        "xccd_lease_round_trip_seconds_count",
        "xccd_grpc_server_handling_seconds_count{service=\"xccd.v1.SolverService\",method=\"Enumerate\",code=\"ok\"}",
        "xccd_build_info{version=\"0.1.0\",role=\"coordinator\"}",
    ] {
        let found = value(&page, series.replace("0.1.0", env!("CARGO_PKG_VERSION")).as_str());
        assert!(found.is_some_and(|v| v >= 1.0), "{series}: {found:?}\n{page}");
    }
    assert_eq!(value(&page, "xccd_local_threads"), Some(0.0), "{page}");
    assert!(
        value(&page, "xccd_nodes_total").is_some_and(|n| n > 0.0),
        "{page}"
    );
    // A young process may not have used a clock tick of CPU yet.
    assert!(
        value(&page, "process_cpu_seconds_total").is_some(),
        "{page}"
    );
    for process in [
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        assert!(
            value(&page, process).is_some_and(|v| v > 0.0),
            "{process}\n{page}"
        );
    }
    assert!(!page.contains("reason=\"Complete\""), "{page}");
    all_described(&page, "the coordinator");
    promtool(&page, "the coordinator");
    not_found_elsewhere(coordinator_metrics, "the coordinator");

    // The worker: what it ran.
    let page = scrape_until(worker_metrics, "the worker", |page| {
        value(page, "xccd_worker_solutions_total") == Some(92.0)
    });
    assert!(
        value(&page, "xccd_worker_nodes_total").is_some_and(|n| n > 0.0),
        "{page}"
    );
    assert_eq!(value(&page, "xccd_worker_threads"), Some(2.0), "{page}");
    assert_eq!(value(&page, "xccd_worker_leases"), Some(0.0), "{page}");
    assert_eq!(
        value(&page, "xccd_worker_reconnects_total"),
        Some(0.0),
        "{page}"
    );
    assert!(page.contains("role=\"worker\""), "{page}");
    assert!(
        !page.contains("xccd_jobs_"),
        "the worker describes only its own metrics:\n{page}"
    );
    all_described(&page, "the worker");
    promtool(&page, "the worker");
    not_found_elsewhere(worker_metrics, "the worker");
}
