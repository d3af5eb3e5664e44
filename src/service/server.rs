//! Listening: the gRPC server with the solver, health and reflection
//! services, Prometheus metrics on their own port, and graceful shutdown.
//!
//! Shutdown order matters: first the pool stops every job (streams get a
//! summary with reason SHUTDOWN, so clients learn why), then the transport
//! stops accepting and waits for the calls in flight, then the workers are
//! joined.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use tonic::codec::CompressionEncoding;
use tonic::service::interceptor::InterceptedService;

use super::callers::{authenticate, ApiKeys};
use super::cluster::{ClusterConfig, CoordinatorApi};
use super::credentials::ServerTls;
use super::durable::{self, Durability, StoreLimits};
use super::grpc::{ApiConfig, SolverApi};
use super::grpc_headers::GrpcHeadersLayer;
use super::grpc_metrics::GrpcMetricsLayer;
use super::grpc_trace::GrpcTraceLayer;
use super::jobs::{Entry, JobRegistry, Retention};
use super::leader_gate::LeaderGateLayer;
use super::metrics as metric;
use super::pool::{Pool, PoolConfig};
use super::proto::puzzle_service_server::PuzzleServiceServer;
use super::proto::solver_service_server::SolverServiceServer;
use super::proto::FILE_DESCRIPTOR_SET;
use super::puzzle_input::PuzzleEncoder;
use super::puzzles_grpc::PuzzleApi;
use super::status;
use super::store::fence::Fence;
use super::store::{JobStore, PostgresStore, SqliteStore};

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub pool: PoolConfig,
    pub api: ApiConfig,
    /// How long and how much of ended submitted jobs stays readable.
    pub retention: Retention,
    /// Where to serve Prometheus metrics (`/metrics`), if anywhere.
    pub metrics_listen: Option<SocketAddr>,
    /// Where to serve the web dashboard and its JSON API, if anywhere.
    pub http_listen: Option<SocketAddr>,
    /// Remote workers' heartbeats, leases and token.
    pub cluster: ClusterConfig,
    /// TLS on the public API and on the workers' listener.
    pub tls: Option<ServerTls>,
    /// Where remote workers connect: never the public port. `None` serves
    /// no worker, except on a pure coordinator (no local threads), which
    /// listens for them next to the public port (see [`ServeConfig::workers_at`]).
    pub worker_listen: Option<SocketAddr>,
    /// Workers must present a certificate signed by this CA (with `tls`).
    pub worker_client_ca: Option<Vec<u8>>,
    /// Callers must present one of these keys; jobs belong to their caller.
    pub api_keys: Option<Arc<ApiKeys>>,
    /// Where submitted jobs are stored to survive a restart; `None` keeps
    /// them in memory only.
    pub data_dir: Option<std::path::PathBuf>,
    /// A PostgreSQL database for the job store (a `postgres://` URL), in
    /// place of the SQLite file of `data_dir`.
    pub store_url: Option<String>,
    /// Limits of the job store.
    pub store_limits: StoreLimits,
    /// The lease this server leads under, with several coordinators on a
    /// PostgreSQL store (see [`super::leader`]): the store's writes carry
    /// its token, and the listeners answer NOT_LEADER once it is lost.
    pub fence: Option<Arc<Fence>>,
    /// The address clients and workers are told to reach this server at
    /// when it leads (`--advertise`; the listen address by default).
    pub advertise: Option<String>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: ([127, 0, 0, 1], 50051).into(),
            pool: PoolConfig::default(),
            api: ApiConfig::default(),
            retention: Retention::default(),
            metrics_listen: None,
            http_listen: None,
            cluster: ClusterConfig::default(),
            tls: None,
            worker_listen: None,
            worker_client_ca: None,
            api_keys: None,
            data_dir: None,
            store_url: None,
            store_limits: StoreLimits::default(),
            fence: None,
            advertise: None,
        }
    }
}

impl ServeConfig {
    /// Where the workers' listener listens, if there is one: `worker_listen`,
    /// or on a pure coordinator the public address with the next port (an
    /// ephemeral one when the public port is).
    pub fn workers_at(&self) -> Option<SocketAddr> {
        self.worker_listen.or_else(|| {
            (self.pool.threads == 0).then(|| {
                let mut addr = self.listen;
                addr.set_port(match addr.port() {
                    0 => 0,
                    port => port.wrapping_add(1),
                });
                addr
            })
        })
    }
}

/// A server started in the background.
pub struct RunningServer {
    /// The address it listens on (useful with port 0).
    pub addr: SocketAddr,
    /// Where remote workers connect, if they may.
    pub worker_addr: Option<SocketAddr>,
    /// Where the dashboard listens, if it does.
    pub http_addr: Option<SocketAddr>,
    pub pool: Arc<Pool>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
    worker_task: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
    /// The dashboard's listener, stopped first at shutdown.
    http_task: Option<tokio::task::AbortHandle>,
}

impl RunningServer {
    /// Stops gracefully (see the module's documentation) and waits.
    pub async fn shutdown(mut self) -> Result<(), tonic::transport::Error> {
        if let Some(http) = self.http_task.take() {
            http.abort();
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // The jobs have stopped once the listeners drain, so a connection
        // that keeps a listener waiting longer (a worker's session that did
        // not notice the shutdown) holds nothing worth waiting for: after
        // [`DRAIN_TIMEOUT`] the listener is dropped and the process exits.
        let result = match drained(&mut self.task, "the API").await {
            Some(result) => result,
            None => Ok(()),
        };
        if let Some(mut workers) = self.worker_task.take() {
            if let Some(result) = drained(&mut workers, "the workers'").await {
                result?;
            }
        }
        let pool = self.pool.clone();
        let _ = tokio::task::spawn_blocking(move || pool.shutdown()).await;
        result
    }
}

/// How long a stopping server waits for a listener's connections to close.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Waits for a listener's task to end, at most [`DRAIN_TIMEOUT`]; then
/// aborts it (`None`).
async fn drained(
    task: &mut JoinHandle<Result<(), tonic::transport::Error>>,
    which: &str,
) -> Option<Result<(), tonic::transport::Error>> {
    match tokio::time::timeout(DRAIN_TIMEOUT, &mut *task).await {
        Ok(result) => Some(result.expect("listener task panicked")),
        Err(_) => {
            tracing::warn!(
                listener = which,
                seconds = DRAIN_TIMEOUT.as_secs(),
                "connections still open after the jobs stopped: closing them"
            );
            task.abort();
            // Once the aborted task has ended its listener is closed, so that
            // the address can be bound again at once (a coordinator stepping
            // down listens on it as a standby next).
            let _ = (&mut *task).await;
            None
        }
    }
}

/// HTTP/2 pings on every connection: one after 30 s without a frame (gRPC's
/// clients accept pings this often; a client's own keepalive should be no
/// more frequent than every 10 s), and a connection whose ping is not
/// answered within 20 s is closed.
pub const HTTP2_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
pub const HTTP2_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

fn setup_error(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, message)
}

/// Binds and starts serving in the background.
pub async fn start(config: ServeConfig) -> std::io::Result<RunningServer> {
    let workers_at = config.workers_at();
    if workers_at.is_some() {
        if config.worker_client_ca.is_some() && config.tls.is_none() {
            return Err(setup_error(
                "worker client certificates need TLS: give the server's certificate and key too"
                    .into(),
            ));
        }
        if config.cluster.token.is_none() && config.worker_client_ca.is_none() {
            return Err(setup_error(
                "remote workers must authenticate: set a worker token (XCCD_WORKER_TOKEN or \
                 --worker-token-file) or a CA for their certificates (--worker-client-ca)"
                    .into(),
            ));
        }
    }
    let tls = |client_ca: Option<Vec<u8>>| -> std::io::Result<tonic::transport::Server> {
        // A stream may be silent for up to a progress interval (a day at
        // most): pings keep its connection open through proxies and NATs
        // that drop idle ones, and find a peer that is gone.
        let builder = tonic::transport::Server::builder()
            .http2_keepalive_interval(Some(HTTP2_KEEPALIVE_INTERVAL))
            .http2_keepalive_timeout(Some(HTTP2_KEEPALIVE_TIMEOUT));
        match &config.tls {
            Some(tls) => builder
                .tls_config(
                    ServerTls {
                        client_ca,
                        ..tls.clone()
                    }
                    .config(),
                )
                .map_err(|e| setup_error(format!("TLS: {e}"))),
            None => Ok(builder),
        }
    };
    // A damaged store stops the start before anything listens.
    let opened: Option<(Arc<dyn JobStore>, String)> = match (&config.store_url, &config.data_dir) {
        (Some(url), _) => {
            let store = match &config.fence {
                Some(fence) => PostgresStore::open_fenced(url, fence.clone(), fence.token()),
                None => PostgresStore::open(url),
            }
            .map_err(|e| setup_error(e.to_string()))?;
            let place = store.place().to_string();
            Some((Arc::new(store), place))
        }
        (None, Some(dir)) => Some((
            Arc::new(SqliteStore::open(dir).map_err(|e| setup_error(e.to_string()))?),
            dir.display().to_string(),
        )),
        (None, None) => None,
    };
    let (durability, store_place) = match opened {
        Some((store, place)) => (
            Some(Arc::new(Durability {
                store,
                limits: config.store_limits.clone(),
            })),
            place,
        ),
        None => (None, String::new()),
    };
    let public = tls(config.tls.as_ref().and_then(|t| t.client_ca.clone()))?;
    let listener = TcpListener::bind(config.listen).await?;
    let addr = listener.local_addr()?;
    let worker_listener = match workers_at {
        Some(at) => Some((
            tls(config.worker_client_ca.clone())?,
            TcpListener::bind(at).await?,
        )),
        None => None,
    };
    let pool = Arc::new(Pool::new(config.pool.clone()));
    let jobs = Arc::new(JobRegistry::new(
        pool.clone(),
        config.retention.clone(),
        durability.as_ref().map(|d| d.store.clone()),
    ));
    if let Some(durability) = &durability {
        let resumed = durable::resume_all(&pool, &jobs, durability)
            .map_err(|e| setup_error(e.to_string()))?;
        match &config.store_url {
            Some(_) => {
                tracing::info!(jobs = resumed, database = %store_place, "job store open; unfinished jobs resumed")
            }
            None => {
                tracing::info!(jobs = resumed, data_dir = %store_place, "job store open; unfinished jobs resumed")
            }
        }
    }
    if let Some(metrics_addr) = config.metrics_listen {
        // Among several coordinators the metrics outlive each term as
        // leader: the leadership's loop listens, once.
        if config.fence.is_none() {
            metric::listen(metrics_addr, metric::Role::Coordinator).await?;
        }
        metrics::gauge!(metric::LEADER).set(1.0);
        tokio::spawn(report_gauges(Arc::downgrade(&pool)));
    }
    // One limit for a request, whatever its form: the DLX text's, plus room
    // for the request's other fields.
    let max_problem = config.api.limits.max_text_bytes;
    let max_message = max_problem.saturating_add(4096);
    let encoder = Arc::new(PuzzleEncoder::new(config.api.puzzle_limits()));
    let solver = Arc::new(SolverApi::new(
        pool.clone(),
        jobs.clone(),
        config.api.clone(),
        durability.clone(),
        encoder.clone(),
    ));
    let puzzle_api = Arc::new(PuzzleApi::new(
        pool.clone(),
        encoder,
        config.api.buffer_batches,
    ));
    let http = match config.http_listen {
        Some(at) => Some(
            super::dashboard::listen(
                at,
                super::dashboard::Dashboard {
                    solver: solver.clone(),
                    puzzles: puzzle_api.clone(),
                    api_keys: config.api_keys.clone(),
                    tls: config.tls.clone(),
                    fence: config.fence.clone(),
                },
            )
            .await?,
        ),
        None => None,
    };
    let (http_addr, http_task) = http.unzip();
    let api = InterceptedService::new(
        SolverServiceServer::from_arc(solver)
            .max_decoding_message_size(max_message)
            .accept_compressed(CompressionEncoding::Gzip)
            .send_compressed(CompressionEncoding::Gzip),
        authenticate(config.api_keys.clone()),
    );
    let puzzles = InterceptedService::new(
        PuzzleServiceServer::from_arc(puzzle_api)
            .max_decoding_message_size(max_message)
            .accept_compressed(CompressionEncoding::Gzip)
            .send_compressed(CompressionEncoding::Gzip),
        authenticate(config.api_keys.clone()),
    );
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<PuzzleServiceServer<PuzzleApi>>().await;
    health.set_serving::<SolverServiceServer<SolverApi>>().await;
    if let Some(durability) = &durability {
        // Said before anything listens: a store that cannot be written is
        // degraded from the first moment.
        let now = durability.store.degraded();
        report_store(&health, now, None).await;
        tokio::spawn(watch_store(durability.store.clone(), health.clone(), now));
    }
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(std::io::Error::other)?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(std::io::Error::other)?;

    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    // The workers' listener closes once the jobs have stopped.
    let (stopped_tx, mut stopped_rx) = tokio::sync::watch::channel(false);
    let draining_pool = pool.clone();
    let draining_jobs = jobs.clone();
    let draining_fence = config.fence.clone();
    let shutdown = async move {
        let _ = stop_rx.await;
        tracing::info!("shutting down: stopping jobs, then the listener");
        not_serving(&health).await;
        // Durable jobs commit their progress first: they go on after the
        // restart from there. (A coordinator that lost the lead cannot:
        // the new leader goes on from their last snapshots.)
        let leads = draining_fence.as_ref().is_none_or(|fence| fence.leads());
        let live = draining_jobs
            .list()
            .into_iter()
            .filter_map(|entry| match entry {
                Entry::Live(job) => Some(job),
                Entry::Ended(_) => None,
            })
            .collect();
        if leads {
            durable::snapshot_all(&draining_pool, live, Duration::from_secs(10)).await;
        }
        let pool = draining_pool.clone();
        let _ = tokio::task::spawn_blocking(move || pool.stop_all_jobs()).await;
        let _ = stopped_tx.send(true);
    };
    let mut worker_addr = None;
    let worker_task = match worker_listener {
        Some((server, listener)) => {
            let at = listener.local_addr()?;
            worker_addr = Some(at);
            let coordinator =
                CoordinatorApi::new(pool.clone(), config.cluster.clone()).into_server();
            tracing::info!(%at, mutual_tls = config.worker_client_ca.is_some(), token = config.cluster.token.is_some(), "listening for remote workers");
            Some(tokio::spawn(
                server
                    .layer(catch_panics())
                    .layer(LeaderGateLayer::leading(config.fence.clone()))
                    .add_service(coordinator)
                    .serve_with_incoming_shutdown(incoming(listener), async move {
                        let _ = stopped_rx.wait_for(|stopped| *stopped).await;
                    }),
            ))
        }
        None => None,
    };
    let task = tokio::spawn(
        public
            // With traces on, every call's span (a client's traceparent its
            // parent); without, no layer at all.
            .layer(tower::util::option_layer(
                super::telemetry::on().then_some(GrpcTraceLayer),
            ))
            // Every call timed, by method and status, whoever answers it.
            .layer(GrpcMetricsLayer)
            // Calls that are not protobuf gRPC, or whose grpc-timeout does
            // not parse or is already over, are answered before any service.
            .layer(GrpcHeadersLayer)
            // A handler that panics answers INTERNAL, and the server serves on.
            .layer(catch_panics())
            .layer(too_large_is_invalid(max_problem))
            // A coordinator that lost the lead answers NOT_LEADER at once.
            .layer(LeaderGateLayer::leading(config.fence.clone()))
            .add_service(health_service)
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha)
            .add_service(api)
            .add_service(puzzles)
            .serve_with_incoming_shutdown(incoming(listener), shutdown),
    );
    tracing::info!(%addr, tls = config.tls.is_some(), api_keys = config.api_keys.is_some(), workers = pool.workers(), "serving gRPC");
    Ok(RunningServer {
        addr,
        worker_addr,
        http_addr,
        http_task,
        pool,
        stop: Some(stop_tx),
        task,
        worker_task,
    })
}

type PanicResponse = fn(Box<dyn std::any::Any + Send + 'static>) -> http::Response<String>;

/// The layer that turns a handler's panic into the answer INTERNAL (a gRPC
/// status in the headers) instead of a reset stream, which clients would
/// see as CANCELLED or UNKNOWN. The panic itself is logged by the panic
/// hook; the server serves on.
pub(crate) fn catch_panics() -> tower_http::catch_panic::CatchPanicLayer<PanicResponse> {
    fn internal_error(_panic: Box<dyn std::any::Any + Send + 'static>) -> http::Response<String> {
        metrics::counter!(metric::HANDLER_PANICS).increment(1);
        status::internal("the server failed on this call; it has been logged").into_http()
    }
    tower_http::catch_panic::CatchPanicLayer::custom(internal_error as PanicResponse)
}

/// The layer that gives a request larger than the server takes (tonic
/// refuses it from its length prefix, before reading it, with
/// OUT_OF_RANGE) the status every other too-large problem gets:
/// INVALID_ARGUMENT, naming the limit. One limit, one answer.
fn too_large_is_invalid<B>(
    limit: usize,
) -> tower::util::MapResponseLayer<impl Fn(http::Response<B>) -> http::Response<B> + Clone> {
    tower::util::MapResponseLayer::new(move |mut response: http::Response<B>| {
        let headers = response.headers();
        let too_large = headers.get("grpc-status").map(|v| v.as_bytes()) == Some(b"11")
            && headers.get("grpc-message").is_some_and(|m| {
                m.as_bytes()
                    .starts_with(b"Error,%20decoded%20message%20length%20too%20large")
            });
        if too_large {
            let status: tonic::Status = status::invalid_error(
                status::Reason::RequestTooLarge,
                format!(
                    "request: larger than the server's limit of {limit} bytes (serve --max-problem-bytes)"
                ),
            )
            .meta("limit", limit)
            .into();
            let _ = status.add_header(response.headers_mut());
        }
        response
    })
}

/// The connections a listener accepts, with Nagle's algorithm off: a
/// stream's last small frames (the summary, the trailers) must not wait for
/// the client's delayed acknowledgement (40 ms on Linux).
pub fn incoming(listener: TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))
}

/// Serves until SIGINT or SIGTERM, then shuts down gracefully.
pub async fn serve_until_signal(config: ServeConfig) -> std::io::Result<()> {
    let server = start(config).await?;
    shutdown_signal().await;
    server.shutdown().await.map_err(std::io::Error::other)
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// Publishes the pool's gauges every second while it lives.
async fn report_gauges(pool: std::sync::Weak<Pool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let Some(pool) = pool.upgrade() else { return };
        metrics::gauge!(metric::LOCAL_THREADS).set(pool.workers() as f64);
        metrics::gauge!(metric::REMOTE_SLOTS).set(pool.remote_slots() as f64);
        metrics::gauge!(metric::WORKERS_BUSY).set(pool.busy_workers() as f64);
        metrics::gauge!(metric::JOBS_ACTIVE).set(pool.active_jobs() as f64);
        metrics::gauge!(metric::TASKS_QUEUED).set(pool.queued_tasks() as f64);
    }
}

/// Says the API's services are not served (a shutdown, a standby).
pub async fn not_serving(health: &tonic_health::server::HealthReporter) {
    health
        .set_not_serving::<SolverServiceServer<SolverApi>>()
        .await;
    health
        .set_not_serving::<PuzzleServiceServer<PuzzleApi>>()
        .await;
    health
        .set_service_status("", tonic_health::ServingStatus::NotServing)
        .await;
}

/// The health service that says whether new durable jobs are taken.
pub const STORE_HEALTH: &str = "xccd.v1.JobStore";

/// Keeps the store's health (`xccd.v1.JobStore`: NOT_SERVING while it
/// cannot be written) and `xccd_store_degraded{cause}` up to date, until the
/// store is gone; `last` is what was reported at the start.
async fn watch_store(
    store: Arc<dyn super::store::JobStore>,
    health: tonic_health::server::HealthReporter,
    mut last: Option<super::store::Cause>,
) {
    loop {
        if Arc::strong_count(&store) == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = store.degraded();
        if now != last {
            report_store(&health, now, Some(last)).await;
            last = now;
        }
    }
}

/// Sets the store's health and metric to `now`, and logs the change from
/// `before` (None at the start).
async fn report_store(
    health: &tonic_health::server::HealthReporter,
    now: Option<super::store::Cause>,
    before: Option<Option<super::store::Cause>>,
) {
    use super::store::Cause;
    let serving = if now.is_none() {
        tonic_health::ServingStatus::Serving
    } else {
        tonic_health::ServingStatus::NotServing
    };
    health.set_service_status(STORE_HEALTH, serving).await;
    for cause in Cause::ALL {
        metrics::gauge!(metric::STORE_DEGRADED, "cause" => cause.label())
            .set(if now == Some(cause) { 1.0 } else { 0.0 });
    }
    match now {
        Some(cause) => tracing::warn!(
            cause = cause.label(),
            "the job store cannot be written; no new durable jobs: {}",
            cause.advice()
        ),
        None if before.is_some() => tracing::info!("the job store can be written again"),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::proto as pb;
    use crate::service::proto::puzzle_service_client::PuzzleServiceClient;
    use crate::service::proto::puzzle_service_server::PuzzleService;
    use tonic::{Request, Response, Status};

    /// A service whose every handler panics.
    struct Panicky;

    #[tonic::async_trait]
    impl PuzzleService for Panicky {
        async fn solve_puzzle(
            &self,
            _: Request<pb::SolvePuzzleRequest>,
        ) -> Result<Response<pb::SolvePuzzleResponse>, Status> {
            panic!("a bug in a handler")
        }
        type EnumeratePuzzleStream = super::super::grpc::EventStream<pb::EnumeratePuzzleResponse>;
        async fn enumerate_puzzle(
            &self,
            _: Request<pb::EnumeratePuzzleRequest>,
        ) -> Result<Response<Self::EnumeratePuzzleStream>, Status> {
            panic!("a bug in a handler")
        }
        async fn check_puzzle(
            &self,
            _: Request<pb::CheckPuzzleRequest>,
        ) -> Result<Response<pb::CheckPuzzleResponse>, Status> {
            panic!("a bug in a handler")
        }
        async fn encode_puzzle(
            &self,
            _: Request<pb::EncodePuzzleRequest>,
        ) -> Result<Response<pb::EncodePuzzleResponse>, Status> {
            panic!("a bug in a handler")
        }
        async fn draw_puzzle(
            &self,
            _: Request<pb::DrawPuzzleRequest>,
        ) -> Result<Response<pb::DrawPuzzleResponse>, Status> {
            panic!("a bug in a handler")
        }
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_internal_and_the_server_serves_on() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(
            tonic::transport::Server::builder()
                .layer(catch_panics())
                .add_service(PuzzleServiceServer::new(Panicky))
                .serve_with_incoming(incoming(listener)),
        );
        let mut client = PuzzleServiceClient::connect(format!("http://{addr}"))
            .await
            .unwrap();
        for _ in 0..3 {
            let status = client
                .solve_puzzle(pb::SolvePuzzleRequest::default())
                .await
                .unwrap_err();
            assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
            let status = client
                .encode_puzzle(pb::EncodePuzzleRequest::default())
                .await
                .unwrap_err();
            assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
        }
    }
}
