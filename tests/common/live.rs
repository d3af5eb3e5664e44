//! Live `xccd` processes for the observability tests: a pure coordinator
//! (`xccd serve --threads 0 --worker-listen --metrics-listen`) and remote
//! workers (`xccd worker --metrics-listen`) on loopback, each killed when
//! dropped; readers of their `/metrics` pages (scrape, a sample's value, the
//! metric families); and `promtool`, which a test skips with a note when it
//! is missing unless `XCCD_REQUIRE_PROMTOOL=1` (CI), where it fails.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::service::{free_port, xccd_with_token, Log, Process, XCCD};

/// The workers' token of the processes started here.
pub const TOKEN: &str = "live-test-worker-token";

/// `xccd ARGS` with the token and `env`, its stderr to
/// `CARGO_TARGET_TMPDIR/<name>.log`.
fn start(name: &str, args: &[&str], env: &[(&str, &str)]) -> Process {
    let mut command = xccd_with_token(TOKEN);
    command.args(args).envs(env.iter().copied());
    Process::start(command, Log::Create(format!("{name}.log")))
}

/// A coordinator with its API, workers' listener and metrics on free
/// loopback ports, and the workers started with [`Cluster::worker`].
pub struct Cluster {
    pub api: SocketAddr,
    pub workers: SocketAddr,
    pub metrics: SocketAddr,
    /// The workers' metrics addresses, in the order they were started.
    pub worker_metrics: Vec<SocketAddr>,
    prefix: String,
    processes: Vec<Process>,
}

impl Cluster {
    /// Starts `xccd serve --threads 0` with `extra` flags (and `env`) and
    /// waits for its metrics page. Logs: `<prefix>-serve.log`.
    pub fn coordinator(prefix: &str, extra: &[&str], env: &[(&str, &str)]) -> Cluster {
        let (api, workers, metrics) = (free_port(), free_port(), free_port());
        let (api_s, workers_s, metrics_s) =
            (api.to_string(), workers.to_string(), metrics.to_string());
        let mut args = vec![
            "serve",
            "--listen",
            &api_s,
            "--threads",
            "0",
            "--worker-listen",
            &workers_s,
            "--metrics-listen",
            &metrics_s,
        ];
        args.extend_from_slice(extra);
        let serve = start(&format!("{prefix}-serve"), &args, env);
        scrape_until(metrics, "the coordinator", |_| true);
        Cluster {
            api,
            workers,
            metrics,
            worker_metrics: Vec::new(),
            prefix: prefix.to_string(),
            processes: vec![serve],
        }
    }

    /// Starts `xccd worker --name NAME --threads THREADS` with `extra`
    /// flags and its metrics listener, and waits until its page says it is
    /// connected. Logs: `<prefix>-<name>.log`.
    pub fn worker(&mut self, name: &str, threads: usize, extra: &[&str], env: &[(&str, &str)]) {
        let metrics = free_port();
        let (coordinator, threads, metrics_s) = (
            format!("http://{}", self.workers),
            threads.to_string(),
            metrics.to_string(),
        );
        let mut args = vec![
            "worker",
            "--coordinator",
            &coordinator,
            "--threads",
            &threads,
            "--name",
            name,
            "--metrics-listen",
            &metrics_s,
        ];
        args.extend_from_slice(extra);
        let log = format!("{}-{name}", self.prefix);
        self.processes.push(start(&log, &args, env));
        scrape_until(metrics, "the worker", |page| {
            value(page, "xccd_worker_connected") == Some(1.0)
        });
        self.worker_metrics.push(metrics);
    }

    /// `xccd solve FILE --count --server API` (an Enumerate call): its
    /// output, which must be a success.
    pub fn count(&self, file: &str) -> String {
        let solved = Command::new(XCCD)
            .args(["solve", file, "--count"])
            .args(["--server", &format!("http://{}", self.api)])
            .output()
            .unwrap();
        assert!(solved.status.success(), "{solved:?}");
        String::from_utf8_lossy(&solved.stdout).trim().to_string()
    }
}

/// GET `path` over HTTP/1.1: the status code and the body.
pub fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
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
pub fn scrape_until(addr: SocketAddr, what: &str, ready: impl Fn(&str) -> bool) -> String {
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
pub fn value(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// The metric families of a page, by name: their TYPE (`counter`, `gauge`,
/// `histogram`, ...).
pub fn families(page: &str) -> BTreeMap<String, String> {
    page.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| {
            let mut words = rest.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.to_string()))
        })
        .collect()
}

/// Runs `promtool ARGS` (with `stdin` written to it) and asserts that it
/// succeeds; false when promtool is missing (a note on stderr), unless
/// XCCD_REQUIRE_PROMTOOL=1, where that fails.
pub fn promtool(args: &[&str], stdin: Option<&str>, what: &str) -> bool {
    let required = std::env::var("XCCD_REQUIRE_PROMTOOL").as_deref() == Ok("1");
    let child = Command::new("promtool")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if !required => {
            eprintln!(
                "skipped: promtool {} on {what} ({e}; apt-get install prometheus)",
                args.join(" ")
            );
            return false;
        }
        Err(e) => panic!("promtool: {e} (XCCD_REQUIRE_PROMTOOL=1: install Debian's prometheus)"),
    };
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool {} on {what}:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    true
}
