//! The service tests' fixtures: a problem's message, a free port, a client
//! of a server, the reason of a refusal, waiting for a condition, draining
//! a stream, and `xccd` processes (servers, workers) killed when dropped.
//!
//! What a test file checks stays in it: these only start, connect and wait,
//! and panic with what went wrong when they cannot.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;

/// The `xccd` binary the test crate was built with.
pub const XCCD: &str = env!("CARGO_BIN_EXE_xccd");

pub type Client = SolverServiceClient<Channel>;

/// A problem in DLX text, as a request carries it.
pub fn dlx(text: impl Into<String>) -> Option<pb::Problem> {
    Some(pb::Problem {
        source: Some(pb::problem::Source::Dlx(text.into())),
    })
}

/// A loopback address no one listens on (just now).
pub fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A channel to the server at `addr` (which serves already).
pub async fn channel(addr: SocketAddr) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect to the server")
}

/// A client of the server at `addr` that takes replies of up to 64 MiB.
pub async fn connect(addr: SocketAddr) -> Client {
    Client::new(channel(addr).await).max_decoding_message_size(64 << 20)
}

/// `xccd` at log level info, with the worker token `token`.
pub fn xccd_with_token(token: &str) -> Command {
    let mut command = Command::new(XCCD);
    command
        .env("RUST_LOG", "info")
        .env("XCCD_WORKER_TOKEN", token);
    command
}

/// The `reason` of a status's `ErrorInfo` ("" without one).
pub fn reason_of(status: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    status
        .get_details_error_info()
        .map(|info| info.reason)
        .unwrap_or_default()
}

/// Polls `cond` every 10 ms until it holds, failing the test past `limit`;
/// returns how long that took.
pub async fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if cond() {
            return start.elapsed();
        }
        assert!(start.elapsed() <= limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How [`drain`] stopped reading a stream.
#[derive(Debug)]
pub enum Drained {
    /// The stream ended.
    Ended,
    /// The stream ended with this status.
    Failed(tonic::Status),
    /// No message came before the deadline: the stream may be alive.
    Late,
    /// `max` messages were read: the stream may go on.
    Capped,
}

/// Reads `stream`'s messages into `each` until it ends, fails, `max` of them
/// were read, or `deadline` passes before the next one comes.
pub async fn drain<T>(
    stream: &mut tonic::Streaming<T>,
    deadline: tokio::time::Instant,
    max: usize,
    mut each: impl FnMut(T),
) -> Drained {
    for _ in 0..max {
        match tokio::time::timeout_at(deadline, stream.message()).await {
            Err(_) => return Drained::Late,
            Ok(Err(status)) => return Drained::Failed(status),
            Ok(Ok(None)) => return Drained::Ended,
            Ok(Ok(Some(message))) => each(message),
        }
    }
    Drained::Capped
}

/// Where a process's stderr goes.
pub enum Log {
    Null,
    /// `CARGO_TARGET_TMPDIR/NAME`, made empty first.
    Create(String),
    /// `CARGO_TARGET_TMPDIR/NAME`, appended to (one log across restarts).
    Append(String),
}

/// An `xccd` process (or one started through a wrapper such as
/// `prlimit`), its stdin and stdout closed; killed when dropped.
pub struct Process {
    pub child: Child,
    /// Its stderr's file, if it has one.
    pub log: Option<PathBuf>,
}

impl Process {
    /// `xccd ARGS`.
    pub fn xccd(args: &[&str], log: Log) -> Process {
        let mut command = Command::new(XCCD);
        command.args(args);
        Process::start(command, log)
    }

    /// Starts `command` with its stderr to `log`.
    pub fn start(mut command: Command, log: Log) -> Process {
        let (stderr, log) = match log {
            Log::Null => (Stdio::null(), None),
            Log::Create(name) => {
                let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
                let file = std::fs::File::create(&path).expect("a log file");
                (Stdio::from(file), Some(path))
            }
            Log::Append(name) => {
                let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .expect("a log file");
                (Stdio::from(file), Some(path))
            }
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start xccd");
        Process { child, log }
    }

    /// Its log's text ("" without one).
    pub fn log_text(&self) -> String {
        self.log
            .as_ref()
            .and_then(|log| std::fs::read_to_string(log).ok())
            .unwrap_or_default()
    }

    /// Where its log is, for a failure's message.
    pub fn log_name(&self) -> String {
        match &self.log {
            Some(log) => format!("log: {}", log.display()),
            None => "no log".to_string(),
        }
    }

    /// Whether it still runs.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Fails the test if it has exited: it was to serve.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "the server exited ({status}) before serving; {}",
                self.log_name()
            );
        }
    }

    /// A channel to it at `addr`, once it serves (within 30 s).
    pub async fn channel(&mut self, addr: SocketAddr) -> Channel {
        let start = Instant::now();
        loop {
            self.assert_running();
            if let Ok(channel) = Channel::from_shared(format!("http://{addr}"))
                .unwrap()
                .connect()
                .await
            {
                return channel;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the server does not serve; {}",
                self.log_name()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends it `signal` (`-TERM`, `-STOP`...).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal}; {}", self.log_name());
    }

    /// Sends it SIGTERM.
    pub fn sigterm(&self) {
        self.signal("-TERM");
    }

    /// Waits for it to exit (within 30 s, after SIGTERM); its exit code.
    pub fn exited(&mut self) -> Option<i32> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no exit 30 s after SIGTERM; {}",
                self.log_name()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, and wait for the exit.
    pub fn terminate(mut self) {
        self.sigterm();
        self.exited();
    }

    /// SIGKILL: no snapshot, no goodbye.
    pub fn kill9(&mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reap");
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CreateJob: the name of the job it made.
pub async fn create_job(
    client: &mut Client,
    request: impl tonic::IntoRequest<pb::CreateJobRequest>,
) -> String {
    client
        .create_job(request)
        .await
        .unwrap()
        .into_inner()
        .job
        .expect("CreateJob returns the job")
        .name
}

/// The fields a status's `BadRequest` names.
pub fn fields_of(status: &tonic::Status) -> Vec<String> {
    use tonic_types::StatusExt;
    status
        .get_details_bad_request()
        .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
        .unwrap_or_default()
}

/// An `xccd serve` process on a free loopback port; killed when dropped.
pub struct Server {
    pub process: Process,
    pub addr: SocketAddr,
}

impl Server {
    /// `xccd serve --listen ADDR ARGS`.
    pub fn start(args: &[&str], log: Log) -> Server {
        Server::start_with(Command::new(XCCD), args, log)
    }

    /// `COMMAND serve --listen ADDR ARGS`: `command` is `xccd` with an
    /// environment, or a wrapper that runs it (`prlimit ... xccd`).
    pub fn start_with(mut command: Command, args: &[&str], log: Log) -> Server {
        let addr = free_port();
        command
            .args(["serve", "--listen", &addr.to_string()])
            .args(args);
        Server {
            process: Process::start(command, log),
            addr,
        }
    }

    /// A channel to it, once it serves.
    pub async fn channel(&mut self) -> Channel {
        self.process.channel(self.addr).await
    }

    /// A client of it, once it serves, that takes replies of up to 64 MiB.
    pub async fn client(&mut self) -> Client {
        Client::new(self.channel().await).max_decoding_message_size(64 << 20)
    }

    /// Its address as a client's `--server` names it.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits, blocking the thread, until it listens (within 30 s).
    pub fn wait_listening(&mut self) {
        let start = Instant::now();
        while std::net::TcpStream::connect(self.addr).is_err() {
            self.process.assert_running();
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "xccd serve did not listen within 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A raw HTTP/2 connection to it, once it listens, for requests no
    /// gRPC client sends.
    pub async fn h2(&mut self) -> h2::client::SendRequest<bytes::Bytes> {
        let (client, connection) = h2::client::handshake(self.tcp().await)
            .await
            .expect("HTTP/2");
        tokio::spawn(connection);
        client
    }

    /// A TCP connection to it, once it listens (within 30 s).
    pub async fn tcp(&mut self) -> tokio::net::TcpStream {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.process.child.try_wait() {
                panic!("the server exited ({status}); {}", self.process.log_name());
            }
            match tokio::net::TcpStream::connect(self.addr).await {
                Ok(tcp) => return tcp,
                Err(_) if start.elapsed() < Duration::from_secs(30) => {
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                Err(e) => panic!("the server does not serve: {e}"),
            }
        }
    }
}
