//! The web dashboard in a real browser: a pure coordinator with
//! `--http-listen` (here, `ServeConfig::http_listen`) and two `xccd worker`
//! processes running an enumeration; `node tests/browser/dashboard.mjs`
//! drives Debian's chromium with playwright-core through the jobs list
//! (progress advancing), the workers page (two, then one after a kill, which
//! this test does when the script asks), the job page (its trace chart,
//! cancel) and the puzzle page (a puzzle of each of the seven kinds solved
//! and its picture checked, an enumeration drawn solution by solution,
//! hostile text shown as text). A second server, with API keys and TLS,
//! serves the page over HTTPS: it asks for a key, refuses a wrong one, and
//! shows each key only its own job. Screenshots go to
//! target/dashboard-screenshots/.
//!
//! Needs node, chromium (`XCCD_CHROMIUM`, else /usr/bin/chromium) and
//! `npm ci --prefix .ci/browser`; skips with a note without them, unless
//! `XCCD_REQUIRE_BROWSER=1` (.ci/run) makes that a failure. Without
//! `--http-listen` no HTTP port opens (`no_http_port_without_the_flag`).

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::cluster::Worker;
use common::service::connect;
use xccd::service::callers::ApiKeys;
use xccd::service::credentials::{endpoint, ClientTls, ServerTls};
use xccd::service::proto as pb;
use xccd::service::server::{start, RunningServer, ServeConfig};

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
    if skip_browser() {
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

    browse(
        &["tour", &format!("http://{http}"), &id],
        move |line| {
            if line == "kill-worker" {
                drop(second.take());
            }
        },
        &[
            "jobs",
            "workers-two",
            "workers-one",
            "job-running",
            "job-cancelled",
            "puzzle-sudoku",
            "puzzle-queens",
            "puzzle-latin",
            "puzzle-futoshiki",
            "puzzle-hidato",
            "puzzle-hitori",
            "puzzle-slitherlink",
            "puzzle-enumerated",
            "puzzle-hostile",
        ],
    )
    .await;
}

/// Runs tests/browser/dashboard.mjs with `args` (its mode and URL first;
/// the screenshots' folder is put after them), calling `on_line` with
/// each line it prints; asserts that it passes and saved `shots`.
async fn browse(args: &[&str], mut on_line: impl FnMut(&str) + Send + 'static, shots: &[&str]) {
    let folder = root().join("target/dashboard-screenshots");
    let mut script = Command::new("node")
        .arg(root().join("tests/browser/dashboard.mjs"))
        .args(&args[..2])
        .arg(&folder)
        .args(&args[2..])
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    let stdout = script.stdout.take().unwrap();
    let lines = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("a line");
            eprintln!("browser: {line}");
            on_line(&line);
            seen.push(line);
        }
        seen
    })
    .await
    .unwrap();
    let status = script.wait().expect("node ends");
    assert!(status.success(), "the browser test failed: {lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some("done"));
    for shot in shots {
        assert!(folder.join(format!("{shot}.png")).exists(), "{shot}.png");
    }
}

/// Skips the browser test that calls it (true) where it cannot run.
fn skip_browser() -> bool {
    let Some(why) = missing() else {
        return false;
    };
    assert!(
        std::env::var("XCCD_REQUIRE_BROWSER").is_err(),
        "XCCD_REQUIRE_BROWSER is set but {why}"
    );
    eprintln!("note: skipping the dashboard's browser test: {why}");
    true
}

const KEYS: &str = "alice alice-key-0123456789\nbob bob-key-0123456789ab\n";
const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789ab";

/// A server with [`KEYS`] and the dashboard, with TLS on both ports if `tls`.
async fn keyed_server(tls: Option<ServerTls>) -> RunningServer {
    start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        http_listen: Some("127.0.0.1:0".parse().unwrap()),
        api_keys: Some(std::sync::Arc::new(ApiKeys::parse(KEYS).unwrap())),
        tls,
        ..ServeConfig::default()
    })
    .await
    .expect("the server starts")
}

/// With API keys on, the page asks for one (kept in the tab's session),
/// refuses a wrong one with a message saying so, and shows each key's
/// jobs only; over HTTPS, with the gRPC port's certificate (the browser
/// is told to accept it: it is self-signed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_in_a_browser() {
    if skip_browser() {
        return;
    }
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert = certified.cert.pem();
    let server = keyed_server(Some(ServerTls {
        cert: cert.clone().into_bytes(),
        key: certified.signing_key.serialize_pem().into_bytes(),
        client_ca: None,
    }))
    .await;
    let http = server.http_addr.unwrap();
    // Plain HTTP gets no page from the HTTPS port.
    let mut plain = std::net::TcpStream::connect(http).unwrap();
    std::io::Write::write_all(&mut plain, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut plain, &mut answer);
    assert!(!answer.starts_with(b"HTTP/1.1 200"), "plain HTTP answered");
    let tls = ClientTls {
        ca: Some(cert.into_bytes()),
        identity: None,
    };
    let url = format!("https://localhost:{}", server.addr.port());
    let channel = endpoint(&url, &tls).unwrap().connect().await.expect("TLS");
    let mut client = pb::solver_service_client::SolverServiceClient::new(channel);
    let mut jobs = Vec::new();
    for key in [ALICE, BOB] {
        let mut request = tonic::Request::new(pb::CreateJobRequest {
            source: Some(pb::create_job_request::Source::Puzzle(pb::Puzzle {
                kind: pb::PuzzleKind::Queens as i32,
                grid: Some(pb::puzzle::Grid::Text("6".into())),
                ..Default::default()
            })),
            ..Default::default()
        });
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {key}").parse().unwrap());
        let job = client.create_job(request).await.expect("created");
        let name = job.into_inner().job.expect("a job").name;
        jobs.push(name.strip_prefix("jobs/").unwrap().to_string());
    }
    let url = format!("https://localhost:{}", http.port());
    browse(
        &["keys", &url, ALICE, &jobs[0], BOB, &jobs[1]],
        |_| {},
        &["keys-asked", "keys-refused", "keys-own-jobs"],
    )
    .await;
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

/// The TCP ports process `pid` listens on (Linux: its sockets' inodes in
/// /proc/PID/fd, their ports in /proc/net/tcp and tcp6).
fn listening_ports(pid: u32) -> std::collections::BTreeSet<u16> {
    let inodes: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("its file descriptors")
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(
                link.strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    let mut ports = std::collections::BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // local_address is fields[1] (ADDR:PORT in hex), st fields[3]
            // (0A: LISTEN), inode fields[9].
            if fields.len() > 9 && fields[3] == "0A" && inodes.contains(fields[9]) {
                let port = fields[1].rsplit(':').next().unwrap();
                ports.insert(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports
}

/// `xccd serve` itself: without --http-listen (nor XCCD_HTTP_LISTEN) the
/// process listens on its gRPC port alone; with it, on the dashboard's too.
#[test]
fn the_process_listens_on_no_http_port_without_the_flag() {
    use common::service::{free_port, Log, Server};
    if !std::path::Path::new("/proc/net/tcp").exists() {
        eprintln!("note: no /proc/net/tcp here: skipped");
        return;
    }
    let dashboard = free_port();
    for http in [None, Some(dashboard)] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_xccd"));
        command
            .env_remove("XCCD_HTTP_LISTEN")
            .env_remove("XCCD_METRICS_LISTEN");
        let flag = http.map(|at| format!("--http-listen={at}"));
        let args: Vec<&str> = ["--threads", "1"]
            .into_iter()
            .chain(flag.as_deref())
            .collect();
        let mut server = Server::start_with(command, &args, Log::Null);
        server.wait_listening();
        let pid = server.process.child.id();
        let expected: std::collections::BTreeSet<u16> = [Some(server.addr), http]
            .into_iter()
            .flatten()
            .map(|a| a.port())
            .collect();
        // The gRPC port is bound first: the others follow within moments.
        for _ in 0..100 {
            if listening_ports(pid) == expected {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(
            listening_ports(pid),
            expected,
            "with --http-listen {http:?}"
        );
    }
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
    let server = keyed_server(None).await;
    let http = server.http_addr.unwrap();
    // The page itself needs no key; it asks for one when the API refuses.
    assert_eq!(get(http, "/", None).0, 200);
    let (status, body) = get(http, "/api/jobs", None);
    assert_eq!(status, 401, "{body}");
    assert_eq!(get(http, "/api/jobs", Some("wrong-key-0123456789")).0, 401);
    assert_eq!(get(http, "/api/workers", None).0, 401);
    let (status, body) = get(http, "/api/jobs", Some(ALICE));
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"jobs":[],"more":false}"#)
    );
    let (status, body) = get(http, "/api/workers", Some(BOB));
    assert_eq!((status, body.as_str()), (200, r#"{"workers":[]}"#));
}

/// A coordinator that lost the lead (several on one store) answers the
/// dashboard's API NOT_LEADER, naming the leader, as its gRPC port does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_that_lost_the_lead_refuses_the_json_api() {
    use xccd::service::store::fence::Fence;
    let fence = std::sync::Arc::new(Fence::new());
    fence.lead(7, "127.0.0.1:1");
    let server = start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        http_listen: Some("127.0.0.1:0".parse().unwrap()),
        fence: Some(fence.clone()),
        ..ServeConfig::default()
    })
    .await
    .expect("the server starts");
    let http = server.http_addr.unwrap();
    assert_eq!(get(http, "/api/jobs", None).0, 200);
    fence.lose(7, Some("10.0.0.2:50051".into()));
    let (status, body) = get(http, "/api/jobs", None);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("the leader is at 10.0.0.2:50051"), "{body}");
    assert_eq!(get(http, "/api/workers", None).0, 503);
}

/// `GET /` over HTTPS at `addr` trusting `ca`, with a client certificate
/// if given: the answer's first line, or why there is none.
fn https_get(
    addr: std::net::SocketAddr,
    ca: &str,
    identity: Option<(&str, &str)>,
) -> Result<String, String> {
    use std::io::{Read, Write};
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio_rustls::rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
        .unwrap();
    let builder = ClientConfig::builder().with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
    };
    let name = ServerName::try_from("localhost").unwrap();
    let connection = ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let tcp = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let mut tls = StreamOwned::new(connection, tcp);
    tls.write_all(b"GET / HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    tls.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    Ok(answer.lines().next().unwrap_or("").to_string())
}

/// The dashboard's HTTPS takes the gRPC port's TLS as it is, mutual TLS
/// too: a client without a certificate signed by the client CA gets no
/// page, one with it does. (No browser needed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_the_grpc_ports_certificate_and_client_ca() {
    let server_cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let client_cert = rcgen::generate_simple_self_signed(vec!["client".into()]).unwrap();
    let ca = server_cert.cert.pem();
    let client = (
        client_cert.cert.pem(),
        client_cert.signing_key.serialize_pem(),
    );
    for client_ca in [None, Some(client.0.clone())] {
        let server = start(ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            http_listen: Some("127.0.0.1:0".parse().unwrap()),
            tls: Some(ServerTls {
                cert: ca.clone().into_bytes(),
                key: server_cert.signing_key.serialize_pem().into_bytes(),
                client_ca: client_ca.clone().map(String::into_bytes),
            }),
            ..ServeConfig::default()
        })
        .await
        .expect("the server starts");
        let http = server.http_addr.unwrap();
        let with_certificate = https_get(http, &ca, Some((&client.0, &client.1)));
        assert_eq!(with_certificate.as_deref(), Ok("HTTP/1.1 200 OK"));
        let without = https_get(http, &ca, None);
        if client_ca.is_some() {
            assert!(without.is_err(), "no client certificate: {without:?}");
        } else {
            assert_eq!(without.as_deref(), Ok("HTTP/1.1 200 OK"));
        }
        server.shutdown().await.unwrap();
    }
}
