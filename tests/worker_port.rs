//! What a person sees when starting the processes: a worker pointed at the
//! coordinator's API port says where workers belong and stops (exit 2)
//! instead of retrying forever; a server's logs written to a pipe carry no
//! colour codes and print paths as paths.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xccd::service::cluster::ClusterConfig;
use xccd::service::credentials::WorkerToken;
use xccd::service::server::{start, ServeConfig};
use xccd::service::PoolConfig;

const XCCD: &str = env!("CARGO_BIN_EXE_xccd");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_at_the_api_port_names_the_worker_port_and_exits_2() {
    // A pure coordinator: the API on one port, workers on the next. The
    // worker has the right token: only its port is wrong.
    let token = "worker-port-test-token-0123";
    let server = start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        cluster: ClusterConfig {
            token: Some(WorkerToken::new(token).unwrap()),
            ..ClusterConfig::default()
        },
        pool: PoolConfig {
            threads: 0,
            ..PoolConfig::default()
        },
        ..ServeConfig::default()
    })
    .await
    .unwrap();
    let api = server.addr.port();
    let url = format!("http://127.0.0.1:{api}");
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(XCCD)
            .args(["worker", "--coordinator", &url, "--threads", "1"])
            .env("XCCD_WORKER_TOKEN", token)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is the API port; workers connect to the worker listener"),
        "{err}"
    );
    assert!(err.contains("--worker-listen"), "{err}");
    // The port it suggests is the API port + 1.
    assert!(
        err.contains(&format!("http://127.0.0.1:{}", api + 1)),
        "{err}"
    );
    // It stopped at the first answer, not after a series of retries (the
    // bound is loose: it only tells "stopped" from "retries forever").
    assert!(started.elapsed() < Duration::from_secs(60));
    server.shutdown().await.unwrap();
}

#[test]
fn the_help_example_is_the_worker_port() {
    let output = Command::new(XCCD)
        .args(["worker", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("http://xccd-coordinator:50052"), "{help}");
    assert!(!help.contains(":50051,"), "{help}");
}

#[test]
fn logs_to_a_pipe_are_plain_text() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plain-logs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(XCCD)
        .args(["serve", "--listen", "127.0.0.1:0", "--threads", "1"])
        .arg("--data-dir")
        .arg(&dir)
        .env("RUST_LOG", "info")
        .env_remove("XCCD_LOG_FORMAT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    // Up to the line that says it serves (or the end of the output, if it
    // failed to start).
    while stderr.read_line(&mut line).unwrap() > 0 {
        lines.push(std::mem::take(&mut line));
        if lines.last().unwrap().contains("serving gRPC") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = lines.concat();
    assert!(text.contains("serving gRPC"), "{text}");
    assert!(!text.contains('\u{1b}'), "colour codes in a pipe: {text:?}");
    let store = text
        .lines()
        .find(|l| l.contains("job store open"))
        .unwrap_or_else(|| panic!("no store line: {text}"));
    assert!(
        store.contains(&format!("data_dir={}", dir.display())),
        "{store}"
    );
    assert!(!text.contains("Some("), "{text}");
}
