//! TLS and who may connect: the public API over TLS and mutual TLS, remote
//! workers authenticated by client certificates or by the token, with
//! certificates made here by a test CA (rcgen).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use tonic::transport::Channel;
use xccd::service::cluster::ClusterConfig;
use xccd::service::credentials::{endpoint, ClientTls, ServerTls, WorkerToken};
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;
use xccd::service::server::{start, RunningServer, ServeConfig};
use xccd::service::PoolConfig;

const XCCD: &str = env!("CARGO_BIN_EXE_xccd");
const QUEENS8: &str = include_str!("../examples/queens8.dlx");

/// A CA, a server certificate for localhost and 127.0.0.1 signed by it, and
/// client certificates: one signed by the CA, one by a stranger's CA.
struct Pki {
    ca: String,
    server: (String, String),
    client: (String, String),
    stranger: (String, String),
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn leaf(
    issuer: &CertifiedIssuer<'static, KeyPair>,
    name: &str,
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    params.distinguished_name.push(DnType::CommonName, name);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn pki() -> Pki {
    let authority = ca("xccd test CA");
    let stranger = ca("someone else's CA");
    Pki {
        ca: authority.pem(),
        server: leaf(&authority, "localhost", ExtendedKeyUsagePurpose::ServerAuth),
        client: leaf(&authority, "client", ExtendedKeyUsagePurpose::ClientAuth),
        stranger: leaf(&stranger, "client", ExtendedKeyUsagePurpose::ClientAuth),
    }
}

impl Pki {
    fn server_tls(&self, client_ca: bool) -> ServerTls {
        ServerTls {
            cert: self.server.0.clone().into_bytes(),
            key: self.server.1.clone().into_bytes(),
            client_ca: client_ca.then(|| self.ca.clone().into_bytes()),
        }
    }

    fn client_tls(&self, identity: Option<&(String, String)>) -> ClientTls {
        ClientTls {
            ca: Some(self.ca.clone().into_bytes()),
            identity: identity.map(|(c, k)| (c.clone().into_bytes(), k.clone().into_bytes())),
        }
    }

    /// The PEM files, for processes.
    fn files(&self, dir: &Path) -> PkiFiles {
        std::fs::create_dir_all(dir).unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        PkiFiles {
            ca: write("ca.pem", &self.ca),
            client_cert: write("client.pem", &self.client.0),
            client_key: write("client.key", &self.client.1),
        }
    }
}

struct PkiFiles {
    ca: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

async fn client(url: &str, tls: &ClientTls) -> Result<SolverServiceClient<Channel>, String> {
    let channel = endpoint(url, tls)
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .map_err(|e| format!("{e:?}"))?;
    Ok(SolverServiceClient::new(channel))
}

/// Solves queens8 (limit 2); the error if the call fails.
async fn solve(url: &str, tls: &ClientTls) -> Result<usize, String> {
    let mut client = client(url, tls).await?;
    let reply = client
        .solve(pb::SolveRequest {
            problem: Some(pb::Problem {
                source: Some(pb::problem::Source::Dlx(QUEENS8.into())),
            }),
            limit: 2,
            ..Default::default()
        })
        .await
        .map_err(|s| format!("{s:?}"))?;
    Ok(reply.into_inner().solutions.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_over_tls_and_mutual_tls() {
    let pki = pki();
    // TLS: a client that trusts the CA works, a plaintext one does not.
    let server = start(ServeConfig {
        listen: any_port(),
        tls: Some(pki.server_tls(false)),
        pool: PoolConfig {
            threads: 1,
            ..PoolConfig::default()
        },
        ..ServeConfig::default()
    })
    .await
    .unwrap();
    let https = format!("https://127.0.0.1:{}", server.addr.port());
    let http = format!("http://127.0.0.1:{}", server.addr.port());
    assert_eq!(solve(&https, &pki.client_tls(None)).await, Ok(2));
    assert!(solve(&http, &ClientTls::default()).await.is_err());
    // Not trusting the CA: refused.
    let untrusting = ClientTls {
        ca: Some(ca("another CA").pem().into_bytes()),
        identity: None,
    };
    assert!(solve(&https, &untrusting).await.is_err());
    // Health works over TLS.
    let channel = endpoint(&https, &pki.client_tls(None))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let health = tonic_health::pb::health_client::HealthClient::new(channel)
        .check(tonic_health::pb::HealthCheckRequest {
            service: "xccd.v1.SolverService".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        health.status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    // The command line, with --ca-cert.
    let files = pki.files(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tls-api"));
    let url = https.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(XCCD)
            .args(["solve", "examples/queens8.dlx", "--count", "--quiet"])
            .args(["--server", &url, "--ca-cert"])
            .arg(&files.ca)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "92\n");
    server.shutdown().await.unwrap();

    // Mutual TLS: only clients with a certificate from the CA.
    let server = start(ServeConfig {
        listen: any_port(),
        tls: Some(pki.server_tls(true)),
        pool: PoolConfig {
            threads: 1,
            ..PoolConfig::default()
        },
        ..ServeConfig::default()
    })
    .await
    .unwrap();
    let https = format!("https://127.0.0.1:{}", server.addr.port());
    assert_eq!(
        solve(&https, &pki.client_tls(Some(&pki.client))).await,
        Ok(2)
    );
    let refused = solve(&https, &pki.client_tls(None)).await;
    assert!(refused.is_err(), "no client certificate: {refused:?}");
    let refused = solve(&https, &pki.client_tls(Some(&pki.stranger))).await;
    assert!(refused.is_err(), "a stranger's certificate: {refused:?}");
    server.shutdown().await.unwrap();
}

/// An `xccd worker` process, killed when dropped.
struct Worker(Child);

impl Worker {
    fn start(url: &str, args: &[&Path], flags: &[&str], token: Option<&str>) -> Worker {
        let mut command = Command::new(XCCD);
        command
            .args(["worker", "--coordinator", url, "--threads", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env_remove("XCCD_WORKER_TOKEN");
        for (flag, path) in flags.iter().zip(args) {
            command.arg(flag).arg(path);
        }
        if let Some(token) = token {
            command.env("XCCD_WORKER_TOKEN", token);
        }
        Worker(command.spawn().unwrap())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn slots_within(server: &RunningServer, slots: usize, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if server.pool.remote_slots() == slots {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_authenticate_by_certificate_or_token() {
    let pki = pki();
    let files = pki.files(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tls-workers"));
    // Mutual TLS on the workers' listener, no token.
    let server = start(ServeConfig {
        listen: any_port(),
        tls: Some(pki.server_tls(false)),
        worker_listen: Some(any_port()),
        worker_client_ca: Some(pki.ca.clone().into_bytes()),
        pool: PoolConfig {
            threads: 0,
            ..PoolConfig::default()
        },
        ..ServeConfig::default()
    })
    .await
    .unwrap();
    let workers = format!("https://127.0.0.1:{}", server.worker_addr.unwrap().port());
    {
        // Without a certificate: never joins.
        let _anonymous = Worker::start(&workers, &[&files.ca], &["--ca-cert"], None);
        assert!(!slots_within(&server, 1, Duration::from_secs(2)).await);
    }
    let _worker = Worker::start(
        &workers,
        &[&files.ca, &files.client_cert, &files.client_key],
        &["--ca-cert", "--client-cert", "--client-key"],
        None,
    );
    assert!(slots_within(&server, 1, Duration::from_secs(30)).await);
    let https = format!("https://127.0.0.1:{}", server.addr.port());
    assert_eq!(solve(&https, &pki.client_tls(None)).await, Ok(2));
    server.shutdown().await.unwrap();

    // TLS with the token instead of client certificates.
    let token = "tls-test-worker-token-0123";
    let server = start(ServeConfig {
        listen: any_port(),
        tls: Some(pki.server_tls(false)),
        cluster: ClusterConfig {
            token: Some(WorkerToken::new(token).unwrap()),
            ..ClusterConfig::default()
        },
        pool: PoolConfig {
            threads: 0,
            ..PoolConfig::default()
        },
        worker_listen: Some(any_port()),
        ..ServeConfig::default()
    })
    .await
    .unwrap();
    let workers = format!("https://127.0.0.1:{}", server.worker_addr.unwrap().port());
    let _worker = Worker::start(&workers, &[&files.ca], &["--ca-cert"], Some(token));
    assert!(slots_within(&server, 1, Duration::from_secs(30)).await);
    let https = format!("https://127.0.0.1:{}", server.addr.port());
    assert_eq!(solve(&https, &pki.client_tls(None)).await, Ok(2));
    server.shutdown().await.unwrap();
}

/// Runs openssl with `args` in `dir` (the quick set-ups people reach for).
fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs (the test makes its certificates with it)");
    assert!(output.status.success(), "openssl {args:?}: {output:?}");
}

/// `xccd solve queens8 --count` against `url`, trusting `ca`: its exit
/// code, stdout and stderr.
async fn cli_solve(url: &str, ca: Option<PathBuf>) -> (Option<i32>, String, String) {
    let url = url.to_string();
    let output = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(XCCD);
        command
            .args(["solve", "examples/queens8.dlx", "--count", "--quiet"])
            .args(["--server", &url])
            .env_remove("XCCD_CA_CERT")
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if let Some(ca) = ca {
            command.arg("--ca-cert").arg(ca);
        }
        command.output().unwrap()
    })
    .await
    .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

async fn tls_server(cert: &[u8], key: &[u8]) -> RunningServer {
    start(ServeConfig {
        listen: any_port(),
        tls: Some(ServerTls {
            cert: cert.to_vec(),
            key: key.to_vec(),
            client_ca: None,
        }),
        pool: PoolConfig {
            threads: 1,
            ..PoolConfig::default()
        },
        ..ServeConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_handshakes_say_the_cause_and_the_fix() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tls-advice");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let quick = ["-nodes", "-days", "30", "-subj", "/CN=localhost"];

    // The certificate people make first: `openssl req -x509` is a CA's.
    openssl(
        &dir,
        &[
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
            ][..],
            &quick,
            &["-keyout", "ca.key", "-out", "ca.pem"],
        ]
        .concat(),
    );
    let server = tls_server(&read("ca.pem"), &read("ca.key")).await;
    let url = format!("https://localhost:{}", server.addr.port());
    let (code, _, err) = cli_solve(&url, Some(dir.join("ca.pem"))).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("CaUsedAsEndEntity"), "{err}");
    assert!(
        err.contains("the server presents a CA certificate"),
        "{err}"
    );
    assert!(err.contains("basicConstraints=CA:FALSE"), "{err}");
    server.shutdown().await.unwrap();

    // The recipe the advice gives works as written.
    let recipe: Vec<&str> = xccd::service::tls_advice::LEAF_RECIPE
        .split_whitespace()
        .collect();
    assert_eq!(recipe[0], "openssl");
    openssl(&dir, &recipe[1..]);
    let server = tls_server(&read("server.pem"), &read("server.key")).await;
    for host in ["localhost", "127.0.0.1"] {
        let url = format!("https://{host}:{}", server.addr.port());
        let (code, out, err) = cli_solve(&url, Some(dir.join("server.pem"))).await;
        assert_eq!((code, out.as_str()), (Some(0), "92\n"), "{err}");
    }
    // Not trusting it (no --ca-cert: the system's roots): an unknown
    // issuer, and the flag that fixes it.
    let url = format!("https://127.0.0.1:{}", server.addr.port());
    let (code, _, err) = cli_solve(&url, None).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("not signed by a CA this client trusts"),
        "{err}"
    );
    assert!(err.contains("--ca-cert FILE"), "{err}");
    server.shutdown().await.unwrap();

    // A leaf for another name than the one in the URL.
    openssl(
        &dir,
        &[
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
            ][..],
            &quick,
            &[
                "-addext",
                "basicConstraints=critical,CA:FALSE",
                "-addext",
                "subjectAltName=DNS:elsewhere.example",
                "-keyout",
                "other.key",
                "-out",
                "other.pem",
            ],
        ]
        .concat(),
    );
    let server = tls_server(&read("other.pem"), &read("other.key")).await;
    let url = format!("https://127.0.0.1:{}", server.addr.port());
    let (code, _, err) = cli_solve(&url, Some(dir.join("other.pem"))).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("does not name the host in the URL"), "{err}");
    assert!(err.contains("subjectAltName"), "{err}");
    server.shutdown().await.unwrap();

    // An expired one (openssl cannot back-date: rcgen can).
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let expired = params.self_signed(&key).unwrap();
    std::fs::write(dir.join("expired.pem"), expired.pem()).unwrap();
    let server = tls_server(expired.pem().as_bytes(), key.serialize_pem().as_bytes()).await;
    let url = format!("https://localhost:{}", server.addr.port());
    let (code, _, err) = cli_solve(&url, Some(dir.join("expired.pem"))).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("has expired"), "{err}");
    server.shutdown().await.unwrap();
}
