//! `xccd worker`: a remote worker process for a coordinator.

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Args;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;
use xccd::service::cluster::worker::{self, ConnectionObserver};
use xccd::service::cluster::{WorkerConfig, WorkerError};
use xccd::service::metrics;
use xccd::service::server::shutdown_signal;

use super::credentials::{worker_token, ClientTlsArgs};
use super::logging::LogArgs;
use super::CliError;

#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The coordinator's worker listener (not its API port), e.g.
    /// http://xccd-coordinator:50052 for a pure coordinator (`xccd serve
    /// --threads 0`) whose API is at 50051, or its --worker-listen address.
    /// Several (repeated, or separated by commas): coordinators sharing a
    /// PostgreSQL store; the worker finds the one that leads, and follows
    /// it after a failover.
    #[arg(long, env = "XCCD_COORDINATOR", value_delimiter = ',', required = true)]
    pub coordinator: Vec<String>,
    /// Tasks to run at once (default: one per core).
    #[arg(long, env = "XCCD_THREADS")]
    pub threads: Option<usize>,
    /// This worker's name in the coordinator's logs (default: the host name).
    #[arg(long, env = "XCCD_WORKER_NAME")]
    pub name: Option<String>,
    /// Serve the gRPC health service here: SERVING while connected to the
    /// coordinator (a readiness probe), NOT_SERVING otherwise.
    #[arg(long, env = "XCCD_HEALTH_LISTEN")]
    pub health_listen: Option<SocketAddr>,
    /// Address to serve Prometheus metrics on (`/metrics`): this worker's
    /// nodes, solutions, leases and reconnects (docs/metrics.md).
    #[arg(long, env = "XCCD_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// A file holding the coordinator's worker token (or set the token
    /// itself in XCCD_WORKER_TOKEN).
    #[arg(long, value_name = "FILE", env = "XCCD_WORKER_TOKEN_FILE")]
    pub worker_token_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub tls: ClientTlsArgs,
    /// Most memory one leased run may take (bytes, or with K, M, G): a
    /// lease whose engine could pass it goes back to the coordinator, whose
    /// job then fails with RESOURCE_EXHAUSTED. Default: as `xccd serve`.
    #[arg(long, env = "XCCD_MAX_SEARCH_MEMORY", value_parser = xccd::service::memory::parse_size)]
    pub max_search_memory: Option<u64>,
    /// Most memory all of this worker's runs may take together.
    #[arg(long, env = "XCCD_MAX_TOTAL_SEARCH_MEMORY", value_parser = xccd::service::memory::parse_size)]
    pub max_total_search_memory: Option<u64>,
    #[command(flatten)]
    pub logs: LogArgs,
}

/// Reports the connection on the health service.
struct Health {
    reporter: HealthReporter,
    runtime: tokio::runtime::Handle,
}

impl ConnectionObserver for Health {
    fn connected(&self, connected: bool) {
        let status = if connected {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        let reporter = self.reporter.clone();
        self.runtime.spawn(async move {
            reporter.set_service_status("", status).await;
        });
    }
}

pub fn run(args: WorkerArgs) -> Result<(), CliError> {
    let mut config = WorkerConfig::new(args.coordinator.join(","));
    match args.threads {
        Some(0) => return Err(CliError::BadInput("--threads must be at least 1".into())),
        Some(n) => config.threads = n,
        None => {} // one per core, the config's default
    }
    config.memory = super::serve::search_memory(
        config.threads,
        args.max_search_memory,
        args.max_total_search_memory,
    );
    config.name = args.name.unwrap_or_else(host_name);
    config.token = worker_token(args.worker_token_file.as_deref())?;
    config.tls = args.tls.load()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(config.threads + 4)
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))?;
    let _in_runtime = runtime.enter();
    let _traces = super::logging::init(&args.logs, "xccd-worker")?;
    runtime.block_on(async move {
        if let Some(addr) = args.metrics_listen {
            metrics::listen(addr, metrics::Role::Worker)
                .await
                .map_err(|e| CliError::Failed(format!("cannot serve metrics: {e}")))?;
        }
        let observer: Arc<dyn ConnectionObserver> = match args.health_listen {
            Some(addr) => {
                let (reporter, service) = tonic_health::server::health_reporter();
                reporter
                    .set_service_status("", ServingStatus::NotServing)
                    .await;
                let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
                    CliError::Failed(format!("cannot listen for health checks on {addr}: {e}"))
                })?;
                tokio::spawn(
                    tonic::transport::Server::builder()
                        .add_service(service)
                        .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(
                            listener,
                        )),
                );
                Arc::new(Health {
                    reporter,
                    runtime: tokio::runtime::Handle::current(),
                })
            }
            None => Arc::new(()),
        };
        worker::run(config, observer, shutdown_signal())
            .await
            .map_err(|e| match e {
                WorkerError::BadUrl(_) => CliError::BadInput(e.to_string()),
                WorkerError::Refused(_) => CliError::Failed(e.to_string()),
                WorkerError::WrongPort(_) => CliError::BadInput(e.to_string()),
            })
    })
}

fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| format!("pid-{}", std::process::id()))
}
