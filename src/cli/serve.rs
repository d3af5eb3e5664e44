//! `xccd serve`: the gRPC service with its worker pool, in one process.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, ValueEnum};
use xccd::service::grpc::ApiConfig;
use xccd::service::server::{serve_until_signal, ServeConfig};
use xccd::service::PoolConfig;

use super::CliError;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on for gRPC.
    #[arg(long, env = "XCCD_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Worker threads (default: one per core).
    #[arg(long, env = "XCCD_THREADS")]
    pub threads: Option<usize>,
    /// Address to serve Prometheus metrics on (`/metrics`).
    #[arg(long, env = "XCCD_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Most jobs queued or running at once; more get RESOURCE_EXHAUSTED.
    #[arg(long, env = "XCCD_MAX_JOBS", default_value_t = 64)]
    pub max_jobs: usize,
    /// Seconds a finished submitted job stays readable.
    #[arg(long, env = "XCCD_JOB_RETENTION", default_value_t = 600)]
    pub job_retention: u64,
    /// Largest DLX text accepted, in bytes.
    #[arg(long, env = "XCCD_MAX_PROBLEM_BYTES", default_value_t = 32 << 20)]
    pub max_problem_bytes: usize,
    /// Log format on stderr (filter with RUST_LOG, default info).
    #[arg(long, env = "XCCD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

pub fn run(args: ServeArgs) -> Result<(), CliError> {
    init_logging(args.log_format);
    let mut pool = PoolConfig {
        max_jobs: args.max_jobs,
        ..PoolConfig::default()
    };
    if let Some(threads) = args.threads {
        if threads == 0 {
            return Err(CliError::BadInput(
                "--threads must be at least 1 (remote workers are not available yet)".into(),
            ));
        }
        pool.threads = threads;
    }
    let mut api = ApiConfig::default();
    api.limits.max_text_bytes = args.max_problem_bytes;
    let config = ServeConfig {
        listen: args.listen,
        pool,
        api,
        job_retention: Duration::from_secs(args.job_retention),
        metrics_listen: args.metrics_listen,
    };
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))?;
    runtime
        .block_on(serve_until_signal(config))
        .map_err(|e| CliError::Failed(format!("server: {e}")))
}
