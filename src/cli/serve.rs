//! `xccd serve`: the gRPC service with its worker pool, in one process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use xccd::service::cluster::{AuditConfig, ClusterConfig};
use xccd::service::durable::StoreLimits;
use xccd::service::grpc::ApiConfig;
use xccd::service::jobs::Retention;
use xccd::service::leader::serve_until_signal;
use xccd::service::server::ServeConfig;
use xccd::service::PoolConfig;

use super::credentials::{api_keys, read_pem, server_tls, worker_token};
use super::logging::LogArgs;
use super::CliError;

/// How long a worker caught by an audit is barred.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditBar {
    /// From the job it lied on.
    Job,
    /// From this coordinator, until it restarts.
    Server,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on for gRPC.
    #[arg(long, env = "XCCD_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Local worker threads (default: one per core); 0 makes a pure
    /// coordinator whose work all goes to remote `xccd worker` processes.
    #[arg(long, env = "XCCD_THREADS")]
    pub threads: Option<usize>,
    /// Seconds a remote worker may stay silent before it loses its leases
    /// (and its tasks run elsewhere).
    #[arg(long, env = "XCCD_LEASE_TIMEOUT", default_value_t = 5.0)]
    pub lease_timeout: f64,
    /// Seconds between a remote worker's heartbeats.
    #[arg(long, env = "XCCD_HEARTBEAT_INTERVAL", default_value_t = 1.0)]
    pub heartbeat_interval: f64,
    /// Seconds a remote worker's run may go without exploring a node before
    /// its task is taken back and run elsewhere.
    #[arg(long, env = "XCCD_STALL_TIMEOUT", default_value_t = 30.0)]
    pub stall_timeout: f64,
    /// The share of remote workers' finished leases run again on the
    /// coordinator (one thread) and compared: a worker whose count, nodes or
    /// updates differ is disconnected and barred, and its leases of the job
    /// are redone. 0 audits none, 1 every lease (full redundancy).
    #[arg(long, env = "XCCD_AUDIT_RATE", default_value_t = xccd::service::cluster::audit::DEFAULT_RATE)]
    pub audit_rate: f64,
    /// Seeds the draws that choose the audited leases.
    #[arg(long, env = "XCCD_AUDIT_SEED", default_value_t = 0)]
    pub audit_seed: u64,
    /// How long a worker caught by an audit is barred: from the job it lied
    /// on, or from this coordinator for the server's life.
    #[arg(long, env = "XCCD_AUDIT_BAR", value_enum, default_value_t = AuditBar::Job)]
    pub audit_bar: AuditBar,
    /// A task lost with its worker this many times in a row, at the same
    /// point of its run, fails its job.
    #[arg(long, env = "XCCD_MAX_ATTEMPTS", default_value_t = 3)]
    pub max_attempts: u32,
    /// Seconds a Solve or Enumerate waits while no worker is connected (a
    /// coordinator with --threads 0) before it ends UNAVAILABLE
    /// (NO_WORKERS); submitted jobs wait as long as it takes.
    #[arg(long, env = "XCCD_NO_WORKER_GRACE", default_value_t = 10.0)]
    pub no_worker_grace: f64,
    /// Nodes a running task explores between two looks at its job (stop,
    /// give-away, time slice), on local threads and remote workers.
    #[arg(long, env = "XCCD_POLL_NODES", default_value_t = xccd::xcc::POLL_INTERVAL,
          value_parser = clap::value_parser!(u64).range(1..=xccd::xcc::MAX_POLL_INTERVAL))]
    pub poll_nodes: u64,
    /// Address to serve Prometheus metrics on (`/metrics`).
    #[arg(long, env = "XCCD_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Address to serve the web dashboard on (jobs, workers, puzzles) and
    /// its JSON API (`/api/`); off unless given. HTTPS with the gRPC
    /// port's certificate when --tls-cert is given.
    #[arg(long, env = "XCCD_HTTP_LISTEN")]
    pub http_listen: Option<SocketAddr>,
    /// Most long jobs (Enumerate, CreateJob, EnumeratePuzzle) queued or
    /// running at once; more get RESOURCE_EXHAUSTED. Small calls do not
    /// count against it (see --max-interactive-jobs).
    #[arg(long, env = "XCCD_MAX_JOBS", default_value_t = 64)]
    pub max_jobs: usize,
    /// Most small calls (Solve, SolvePuzzle, CheckPuzzle) queued or running
    /// at once, apart from --max-jobs; more get RESOURCE_EXHAUSTED. They
    /// run before long jobs, which yield a worker to them within
    /// --poll-nodes nodes.
    #[arg(long, env = "XCCD_MAX_INTERACTIVE_JOBS", default_value_t = xccd::service::pool::MAX_INTERACTIVE_JOBS)]
    pub max_interactive_jobs: usize,
    /// Seconds a finished submitted job stays readable.
    #[arg(long, env = "XCCD_JOB_RETENTION", default_value_t = 600)]
    pub job_retention: u64,
    /// Most finished submitted jobs kept readable (the oldest go first).
    #[arg(long, env = "XCCD_MAX_RETAINED_JOBS", default_value_t = 10_000)]
    pub max_retained_jobs: usize,
    /// Most bytes of kept solutions over all finished submitted jobs (the
    /// oldest jobs go first).
    #[arg(long, env = "XCCD_MAX_RETAINED_BYTES", default_value_t = 256 << 20)]
    pub max_retained_bytes: usize,
    /// Largest request accepted, in bytes: a problem's DLX text, or its
    /// structured form (with the request's other fields).
    #[arg(long, env = "XCCD_MAX_PROBLEM_BYTES", default_value_t = 32 << 20)]
    pub max_problem_bytes: usize,
    /// The server's certificate chain (PEM): serve the API over TLS (with
    /// --tls-key). The workers' listener uses it too.
    #[arg(long, value_name = "FILE", env = "XCCD_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// The key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", env = "XCCD_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Require API clients to present a certificate signed by this CA (PEM).
    #[arg(long, value_name = "FILE", env = "XCCD_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,
    /// Where remote workers connect (never the API's port). Default: off,
    /// except with --threads 0, where it is the API's address with the next
    /// port.
    #[arg(long, value_name = "ADDR", env = "XCCD_WORKER_LISTEN")]
    pub worker_listen: Option<SocketAddr>,
    /// Require workers to present a certificate signed by this CA (PEM;
    /// needs --tls-cert).
    #[arg(long, value_name = "FILE", env = "XCCD_WORKER_CLIENT_CA")]
    pub worker_client_ca: Option<PathBuf>,
    /// A file holding the token workers must present (or set the token
    /// itself in XCCD_WORKER_TOKEN).
    #[arg(long, value_name = "FILE", env = "XCCD_WORKER_TOKEN_FILE")]
    pub worker_token_file: Option<PathBuf>,
    /// Require API keys: a file with one `NAME KEY` per line. Callers send
    /// `authorization: Bearer KEY`; a job belongs to the key that made it.
    #[arg(long, value_name = "FILE", env = "XCCD_API_KEYS")]
    pub api_keys: Option<PathBuf>,
    /// Most jobs queued or running at once for one API key, counted apart
    /// for long jobs and for small calls.
    #[arg(long, env = "XCCD_MAX_JOBS_PER_KEY", default_value_t = 16)]
    pub max_jobs_per_key: usize,
    /// Where submitted jobs are stored (an SQLite file, jobs.sqlite): they
    /// survive a restart, and all their solutions can be read back. `none`
    /// keeps jobs in memory only.
    #[arg(
        long,
        value_name = "DIR",
        env = "XCCD_DATA_DIR",
        default_value = "xccd-data"
    )]
    pub data_dir: PathBuf,
    /// Store jobs in a PostgreSQL database instead (a `postgres://` URL,
    /// e.g. postgres://xccd:PASSWORD@db:5432/xccd); --data-dir is then not
    /// used. Several coordinators may share it: one leads (a lease in the
    /// database), the others stand by and take over when it is gone.
    #[arg(long, value_name = "URL", env = "XCCD_STORE_URL")]
    pub store: Option<String>,
    /// With --store: the address the other coordinators tell clients to
    /// reach this one at while it leads (HOST:PORT; default: --listen).
    #[arg(long, value_name = "ADDR", env = "XCCD_ADVERTISE")]
    pub advertise: Option<String>,
    /// Most bytes one job's stored solutions may take (the job fails with
    /// RESOURCE_EXHAUSTED past it).
    #[arg(long, env = "XCCD_MAX_JOB_STORE_BYTES", default_value_t = 1 << 30)]
    pub max_job_store_bytes: u64,
    /// Most bytes all stored solutions may take: past it CreateJob answers
    /// RESOURCE_EXHAUSTED until jobs are deleted.
    #[arg(long, env = "XCCD_MAX_STORE_BYTES", default_value_t = 8 << 30)]
    pub max_store_bytes: u64,
    /// Seconds between two commits of a durable job's progress: what a
    /// crash can cost it.
    #[arg(long, env = "XCCD_SNAPSHOT_INTERVAL", default_value_t = 2.0)]
    pub snapshot_interval: f64,
    /// Most memory one search run (a solver on one thread) may take: bytes,
    /// or with K, M, G. A request whose search could pass it runs on an
    /// engine that fits (with engine auto) or gets RESOURCE_EXHAUSTED
    /// (reason SEARCH_MEMORY_LIMIT). Default: --max-total-search-memory.
    #[arg(long, env = "XCCD_MAX_SEARCH_MEMORY", value_parser = xccd::service::memory::parse_size)]
    pub max_search_memory: Option<u64>,
    /// Most memory all running searches may take together; a job that does
    /// not fit while others run gets RESOURCE_EXHAUSTED (reason
    /// SERVER_MEMORY_BUSY, with a RetryInfo). Default: half the least of
    /// the machine's memory, the cgroup's limit and the address-space
    /// limit, less 64 MiB a thread.
    #[arg(long, env = "XCCD_MAX_TOTAL_SEARCH_MEMORY", value_parser = xccd::service::memory::parse_size)]
    pub max_total_search_memory: Option<u64>,
    #[command(flatten)]
    pub logs: LogArgs,
}

/// The memory limits of searches: the flags, else the machine's default
/// for a process running `threads` search threads beside the runtime's.
pub fn search_memory(
    threads: usize,
    per_run: Option<u64>,
    total: Option<u64>,
) -> xccd::service::memory::MemoryLimits {
    let runtime = std::thread::available_parallelism().map_or(1, |n| n.get());
    let machine = xccd::service::memory::MemoryLimits::for_machine(threads + runtime + 2);
    let total = total.unwrap_or(machine.total);
    xccd::service::memory::MemoryLimits {
        per_run: per_run.unwrap_or(total).min(total),
        total,
    }
}

/// `--store`'s URL, checked: a PostgreSQL one (the SQLite store lives in
/// --data-dir). An empty value (`XCCD_STORE_URL=`) is none.
fn store_url(url: Option<String>) -> Result<Option<String>, CliError> {
    match url {
        Some(url) if url.is_empty() => Ok(None),
        Some(url) if xccd::service::store::postgres::is_postgres_url(&url) => Ok(Some(url)),
        Some(url) => Err(CliError::BadInput(format!(
            "--store {}: give a postgres:// URL (the default SQLite store is chosen with \
             --data-dir)",
            xccd::service::store::postgres::redacted(&url)
        ))),
        None => Ok(None),
    }
}

pub fn run(args: ServeArgs) -> Result<(), CliError> {
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))?;
    let _in_runtime = runtime.enter();
    let _traces = super::logging::init(&args.logs, "xccd-coordinator")?;
    let mut pool = PoolConfig {
        max_jobs: args.max_jobs,
        max_interactive_jobs: args.max_interactive_jobs,
        max_jobs_per_caller: args.max_jobs_per_key,
        ..PoolConfig::default()
    };
    if let Some(threads) = args.threads {
        pool.threads = threads;
    }
    pool.memory = search_memory(
        pool.threads,
        args.max_search_memory,
        args.max_total_search_memory,
    );
    if args.max_attempts == 0 {
        return Err(CliError::BadInput(
            "--max-attempts must be at least 1".into(),
        ));
    }
    pool.max_attempts = args.max_attempts;
    pool.poll_interval = args.poll_nodes;
    let seconds = |name: &str, value: f64| {
        if value.is_finite() && (0.01..=3600.0).contains(&value) {
            Ok(Duration::from_secs_f64(value))
        } else {
            Err(CliError::BadInput(format!(
                "--{name} must be between 0.01 and 3600 seconds, not {value}"
            )))
        }
    };
    pool.no_worker_grace = seconds("no-worker-grace", args.no_worker_grace)?;
    let cluster = ClusterConfig {
        heartbeat_interval: seconds("heartbeat-interval", args.heartbeat_interval)?,
        lease_timeout: seconds("lease-timeout", args.lease_timeout)?,
        // The token is read and checked only where workers can connect: a
        // token left in the environment does not stop a server that has no
        // workers' listener (see ServeConfig::workers_at).
        token: if args.worker_listen.is_some() || pool.threads == 0 {
            worker_token(args.worker_token_file.as_deref())?
        } else {
            None
        },
        stall_timeout: seconds("stall-timeout", args.stall_timeout)?,
        audit: AuditConfig {
            rate: args.audit_rate,
            seed: args.audit_seed,
            bar_for_life: args.audit_bar == AuditBar::Server,
        },
    };
    if !(0.0..=1.0).contains(&args.audit_rate) {
        return Err(CliError::BadInput(format!(
            "--audit-rate {} is not a fraction in [0, 1]",
            args.audit_rate
        )));
    }
    if cluster.lease_timeout < cluster.heartbeat_interval * 2 {
        return Err(CliError::BadInput(
            "--lease-timeout must be at least twice --heartbeat-interval".into(),
        ));
    }
    let mut api = ApiConfig::default();
    api.limits.max_text_bytes = args.max_problem_bytes;
    let config = ServeConfig {
        listen: args.listen,
        pool,
        api,
        retention: Retention {
            period: Duration::from_secs(args.job_retention),
            max_records: args.max_retained_jobs,
            max_bytes: args.max_retained_bytes,
        },
        metrics_listen: args.metrics_listen,
        http_listen: args.http_listen,
        cluster,
        tls: server_tls(
            args.tls_cert.as_deref(),
            args.tls_key.as_deref(),
            args.tls_client_ca.as_deref(),
        )?,
        worker_listen: args.worker_listen,
        worker_client_ca: args
            .worker_client_ca
            .as_deref()
            .map(|p| read_pem(p, "--worker-client-ca"))
            .transpose()?,
        api_keys: args.api_keys.as_deref().map(api_keys).transpose()?,
        data_dir: (args.data_dir.as_os_str() != "none").then_some(args.data_dir),
        store_url: store_url(args.store)?,
        store_limits: StoreLimits {
            max_job_bytes: args.max_job_store_bytes,
            max_total_bytes: args.max_store_bytes,
            snapshot_interval: seconds("snapshot-interval", args.snapshot_interval)?,
            ..StoreLimits::default()
        },
        fence: None,
        advertise: args.advertise,
    };
    runtime
        .block_on(serve_until_signal(config))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidInput => CliError::BadInput(e.to_string()),
            _ => CliError::Failed(format!("server: {e}")),
        })
}
