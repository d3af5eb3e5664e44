//! A cluster on loopback for tests: a pure coordinator (`serve --threads
//! 0`, in this process) that polls every few nodes, and `xccd worker`
//! processes, each killed when dropped.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use xccd::service::cluster::ClusterConfig;
use xccd::service::credentials::WorkerToken;
use xccd::service::server::{start, RunningServer, ServeConfig};
use xccd::service::PoolConfig;

/// The worker token of the clusters the tests start.
pub const TOKEN: &str = "tests-worker-token";

/// A server with `threads` pool threads polling every `poll_interval` nodes,
/// and with `threads == 0` a worker listener (a pure coordinator).
pub async fn server(threads: usize, poll_interval: u64) -> RunningServer {
    start(config(threads, poll_interval))
        .await
        .expect("the server starts on loopback")
}

/// The configuration of [`server`].
pub fn config(threads: usize, poll_interval: u64) -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        pool: PoolConfig {
            threads,
            max_jobs: 16,
            poll_interval,
            ..PoolConfig::default()
        },
        cluster: ClusterConfig {
            heartbeat_interval: Duration::from_millis(100),
            lease_timeout: Duration::from_secs(2),
            token: Some(WorkerToken::new(TOKEN).unwrap()),
            ..ClusterConfig::default()
        },
        worker_listen: (threads == 0).then(|| "127.0.0.1:0".parse().unwrap()),
        ..ServeConfig::default()
    }
}

/// An `xccd worker` process of `threads` threads, killed when dropped; its
/// log goes to `CARGO_TARGET_TMPDIR/<prefix>-<name>.log`.
pub struct Worker(pub Child);

impl Worker {
    pub fn start(xccd: &str, addr: SocketAddr, prefix: &str, name: &str, threads: usize) -> Worker {
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{prefix}-{name}.log"));
        Worker(
            Command::new(xccd)
                .args(["worker", "--coordinator", &format!("http://{addr}")])
                .args(["--threads", &threads.to_string(), "--name", name])
                .env("XCCD_WORKER_TOKEN", TOKEN)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(log).expect("a log file"))
                .spawn()
                .expect("start xccd worker"),
        )
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
