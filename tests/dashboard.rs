//! The web dashboard in a real browser: a pure coordinator with
//! `--http-listen` (here, `ServeConfig::http_listen`) and two `xccd worker`
//! processes running an enumeration; `node tests/browser/dashboard.mjs`
//! drives Debian's chromium with playwright-core through the jobs list
//! (progress advancing), the workers page (two, then one after a kill, which
//! this test does when the script asks), the job page (cancel) and the
//! puzzle page (a picture; hostile text shown as text). Screenshots go to
//! target/dashboard-screenshots/.
//!
//! Needs node, chromium (`XCCD_CHROMIUM`, else /usr/bin/chromium) and
//! `npm ci --prefix .ci/browser`; skips with a note without them, unless
//! `XCCD_REQUIRE_BROWSER=1` (.ci/run) makes that a failure. Without
//! `--http-listen` no HTTP port opens (the last test).

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::cluster::Worker;
use common::service::connect;
use xccd::service::proto as pb;
use xccd::service::server::{start, ServeConfig};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Why the browser test cannot run here, if it cannot.
fn missing() -> Option<String> {
    let chromium = std::env::var("XCCD_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if Command::new("node").arg("--version").output().is_err() {
        return Some("node is not installed".into());
    }
    if !Path::new(&chromium).exists() {
        return Some(format!(
            "no chromium at {chromium} (apt-get install chromium)"
        ));
    }
    if !root()
        .join(".ci/browser/node_modules/playwright-core")
        .exists()
    {
        return Some("playwright-core is not installed: npm ci --prefix .ci/browser".into());
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_a_browser() {
    if let Some(why) = missing() {
        assert!(
            std::env::var("XCCD_REQUIRE_BROWSER").is_err(),
            "XCCD_REQUIRE_BROWSER is set but {why}"
        );
        eprintln!("note: skipping the dashboard's browser test: {why}");
        return;
    }
    let server = start(ServeConfig {
        http_listen: Some("127.0.0.1:0".parse().unwrap()),
        ..common::cluster::config(0, 4096)
    })
    .await
    .expect("the server starts");
    let http = server.http_addr.expect("the dashboard listens");
    let xccd = env!("CARGO_BIN_EXE_xccd");
    let worker_addr = server.worker_addr.unwrap();
    let _first = Worker::start(xccd, worker_addr, "dashboard", "alpha", 1);
    let mut second = Some(Worker::start(xccd, worker_addr, "dashboard", "beta", 1));

    // An enumeration far longer than the test: 17 queens, counted.
    let mut client = connect(server.addr).await;
    let job = client
        .create_job(pb::CreateJobRequest {
            source: Some(pb::create_job_request::Source::Puzzle(pb::Puzzle {
                kind: pb::PuzzleKind::Queens as i32,
                grid: Some(pb::puzzle::Grid::Text("17".into())),
                ..Default::default()
            })),
            count_only: true,
            ..Default::default()
        })
        .await
        .expect("the job is created")
        .into_inner()
        .job
        .expect("a job");
    let id = job.name.strip_prefix("jobs/").unwrap().to_string();

    let shots = root().join("target/dashboard-screenshots");
    let mut script = Command::new("node")
        .arg(root().join("tests/browser/dashboard.mjs"))
        .args([&format!("http://{http}"), &id, shots.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    let stdout = script.stdout.take().unwrap();
    let lines = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("a line");
            eprintln!("browser: {line}");
            if line == "kill-worker" {
                drop(second.take());
            }
            seen.push(line);
        }
        seen
    })
    .await
    .unwrap();
    let status = script.wait().expect("node ends");
    assert!(status.success(), "the browser test failed: {lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some("done"));
    for shot in [
        "jobs",
        "workers-two",
        "workers-one",
        "job-cancelled",
        "puzzle-queens",
        "puzzle-hostile",
    ] {
        assert!(shots.join(format!("{shot}.png")).exists(), "{shot}.png");
    }
}

#[tokio::test]
async fn no_http_port_without_the_flag() {
    let server = start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..ServeConfig::default()
    })
    .await
    .expect("the server starts");
    assert!(server.http_addr.is_none());
}

/// `GET path` on the dashboard with `key` (or none): the status and body.
fn get(addr: std::net::SocketAddr, path: &str, key: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let auth = key.map_or(String::new(), |k| format!("authorization: Bearer {k}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: x\r\n{auth}connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().expect("a status");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_apply_to_the_json_api() {
    use std::sync::Arc;
    use xccd::service::callers::ApiKeys;
    const KEYS: &str = "alice alice-key-0123456789\nbob bob-key-0123456789ab\n";
    let server = start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        http_listen: Some("127.0.0.1:0".parse().unwrap()),
        api_keys: Some(Arc::new(ApiKeys::parse(KEYS).unwrap())),
        ..ServeConfig::default()
    })
    .await
    .expect("the server starts");
    let http = server.http_addr.unwrap();
    // The page itself needs no key; it asks for one when the API refuses.
    assert_eq!(get(http, "/", None).0, 200);
    let (status, body) = get(http, "/api/jobs", None);
    assert_eq!(status, 401, "{body}");
    assert_eq!(get(http, "/api/jobs", Some("wrong-key-0123456789")).0, 401);
    assert_eq!(get(http, "/api/workers", None).0, 401);
    let (status, body) = get(http, "/api/jobs", Some("alice-key-0123456789"));
    assert_eq!((status, body.as_str()), (200, r#"{"jobs":[]}"#));
    let (status, body) = get(http, "/api/workers", Some("bob-key-0123456789ab"));
    assert_eq!((status, body.as_str()), (200, r#"{"workers":[]}"#));
}
