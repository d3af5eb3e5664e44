//! Every Prometheus metric xccd exports, in one place: its name (a
//! constant the call sites use), its HELP text and unit (described once, by
//! [`listen`]), the buckets of the histograms, and the `/metrics` listener
//! of `xccd serve --metrics-listen` and `xccd worker --metrics-listen`.
//!
//! Conventions (Prometheus's naming guide, checked by `promtool check
//! metrics` in tests/metrics.rs): `_total` on counters only, the unit in the
//! name (`_seconds`, `_bytes`), label values in lower snake case. The table
//! of the metrics is docs/metrics.md.
//!
//! Without a listener no recorder is installed and every metric call is a
//! no-op (the `metrics` facade's default).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics::Unit;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

// The coordinator (`xccd serve`): the API.
pub const API_AUTH_FAILURES: &str = "xccd_api_auth_failures_total";
pub const PUZZLES_TOO_LARGE: &str = "xccd_puzzles_too_large_total";
pub const HANDLER_PANICS: &str = "xccd_handler_panics_total";
pub const SOLUTIONS_STREAMED: &str = "xccd_solutions_streamed_total";
pub const GRPC_SERVER_HANDLING: &str = "xccd_grpc_server_handling_seconds";
// The pool: jobs and tasks.
pub const JOBS_STARTED: &str = "xccd_jobs_started_total";
pub const JOBS_FINISHED: &str = "xccd_jobs_finished_total";
pub const JOB_DURATION: &str = "xccd_job_duration_seconds";
pub const JOBS_ACTIVE: &str = "xccd_jobs_active";
pub const JOBS_WAITING: &str = "xccd_jobs_waiting";
pub const NODES: &str = "xccd_nodes_total";
pub const TASKS: &str = "xccd_tasks_total";
pub const TASKS_LOST: &str = "xccd_tasks_lost_total";
pub const TASKS_YIELDED: &str = "xccd_tasks_yielded_total";
pub const TASKS_QUEUED: &str = "xccd_tasks_queued";
pub const TASK_QUEUE_WAIT: &str = "xccd_task_queue_wait_seconds";
pub const LOCAL_THREADS: &str = "xccd_local_threads";
pub const WORKERS_BUSY: &str = "xccd_workers_busy";
pub const REMOTE_SLOTS: &str = "xccd_remote_slots";
// The coordinator's side of remote workers.
pub const REMOTE_WORKERS: &str = "xccd_remote_workers";
pub const WORKER_AUTH_FAILURES: &str = "xccd_worker_auth_failures_total";
pub const WORKER_REPORTS_REJECTED: &str = "xccd_worker_reports_rejected_total";
pub const FENCED_REPORTS: &str = "xccd_fenced_reports_total";
pub const STALLED_LEASES: &str = "xccd_stalled_leases_total";
pub const SESSION_LOOKS: &str = "xccd_session_looks_total";
pub const LEASE_ROUND_TRIP: &str = "xccd_lease_round_trip_seconds";
pub const AUDITS: &str = "xccd_audits_total";
pub const AUDIT_MISMATCHES: &str = "xccd_audit_mismatches_total";
// The job store.
pub const STORE_DEGRADED: &str = "xccd_store_degraded";
pub const STORE_WRITE: &str = "xccd_store_write_duration_seconds";
pub const STORE_FENCED_WRITES: &str = "xccd_store_fenced_writes_total";
// Leadership among coordinators on one PostgreSQL database.
pub const LEADER: &str = "xccd_leader";
pub const LEADER_TAKEOVERS: &str = "xccd_leader_takeovers_total";
// A worker process (`xccd worker`).
pub const WORKER_NODES: &str = "xccd_worker_nodes_total";
pub const WORKER_SOLUTIONS: &str = "xccd_worker_solutions_total";
pub const WORKER_LEASES: &str = "xccd_worker_leases";
pub const WORKER_THREADS: &str = "xccd_worker_threads";
pub const WORKER_CONNECTED: &str = "xccd_worker_connected";
pub const WORKER_RECONNECTS: &str = "xccd_worker_reconnects_total";
pub const WORKER_REPORTS_REFUSED: &str = "xccd_worker_reports_refused_total";
// Both.
pub const BUILD_INFO: &str = "xccd_build_info";
pub const PROCESS_CPU: &str = "process_cpu_seconds_total";
pub const PROCESS_RESIDENT_MEMORY: &str = "process_resident_memory_bytes";
pub const PROCESS_VIRTUAL_MEMORY: &str = "process_virtual_memory_bytes";
pub const PROCESS_OPEN_FDS: &str = "process_open_fds";
pub const PROCESS_MAX_FDS: &str = "process_max_fds";
pub const PROCESS_THREADS: &str = "process_threads";
pub const PROCESS_START_TIME: &str = "process_start_time_seconds";

/// Which process serves the metrics: each describes only its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Coordinator,
    Worker,
}

impl Role {
    fn label(self) -> &'static str {
        match self {
            Role::Coordinator => "coordinator",
            Role::Worker => "worker",
        }
    }
}

/// Describes the coordinator's metrics (HELP and unit), once.
fn describe_coordinator() {
    use metrics::describe_histogram as histogram;
    use metrics::{describe_counter as counter, describe_gauge as gauge};
    counter!(
        API_AUTH_FAILURES,
        Unit::Count,
        "API calls refused for a missing or unknown API key."
    );
    counter!(
        PUZZLES_TOO_LARGE,
        Unit::Count,
        "Puzzle requests refused because their encoding passes the limits."
    );
    counter!(
        HANDLER_PANICS,
        Unit::Count,
        "gRPC handlers that panicked (answered INTERNAL)."
    );
    counter!(
        SOLUTIONS_STREAMED,
        Unit::Count,
        "Solutions sent to clients on streams."
    );
    histogram!(GRPC_SERVER_HANDLING, Unit::Seconds, "Time from a gRPC call's arrival to its status (a stream's end), by service, method and status code.");
    counter!(
        JOBS_STARTED,
        Unit::Count,
        "Jobs started (resumed ones included)."
    );
    counter!(JOBS_FINISHED, Unit::Count, "Jobs ended, by end reason.");
    histogram!(
        JOB_DURATION,
        Unit::Seconds,
        "Time from a job's start to its end, by end reason."
    );
    gauge!(JOBS_ACTIVE, Unit::Count, "Jobs queued or running.");
    gauge!(
        JOBS_WAITING,
        Unit::Count,
        "Jobs that cannot run, by reason (no_workers: no worker is connected)."
    );
    counter!(
        NODES,
        Unit::Count,
        "Search tree nodes explored by all runs (local and remote)."
    );
    counter!(
        TASKS,
        Unit::Count,
        "Runs of tasks that ended (local and remote)."
    );
    counter!(
        TASKS_LOST,
        Unit::Count,
        "Runs of tasks lost with their worker (queued again)."
    );
    counter!(
        TASKS_YIELDED,
        Unit::Count,
        "Batch runs asked to yield their worker to an interactive task."
    );
    gauge!(
        TASKS_QUEUED,
        Unit::Count,
        "Tasks waiting in the queue for a worker."
    );
    histogram!(TASK_QUEUE_WAIT, Unit::Seconds, "Time a task waited in the queue before a worker took it (from its queueing, or the end of its backoff).");
    gauge!(LOCAL_THREADS, Unit::Count, "The server's own threads that run tasks (0 on a pure coordinator; remote workers' slots: xccd_remote_slots).");
    gauge!(
        WORKERS_BUSY,
        Unit::Count,
        "Task slots (local threads and remote slots) running a task."
    );
    gauge!(
        REMOTE_SLOTS,
        Unit::Count,
        "Task slots of the connected remote workers."
    );
    gauge!(REMOTE_WORKERS, Unit::Count, "Remote workers connected.");
    counter!(
        WORKER_AUTH_FAILURES,
        Unit::Count,
        "Worker connections refused for a missing or wrong token."
    );
    counter!(WORKER_REPORTS_REJECTED, Unit::Count, "Worker reports that cannot be right (the worker was disconnected and its leases queued again).");
    counter!(
        AUDITS,
        Unit::Count,
        "Finished remote leases run again on the coordinator and compared (serve --audit-rate)."
    );
    counter!(AUDIT_MISMATCHES, Unit::Count, "Audited leases whose count, nodes or updates differed from the run again, by worker name (the worker was barred and its leases of the job redone).");
    counter!(
        FENCED_REPORTS,
        Unit::Count,
        "Worker reports on leases the worker no longer holds (ignored)."
    );
    counter!(
        STALLED_LEASES,
        Unit::Count,
        "Leases revoked because their run made no progress."
    );
    counter!(
        SESSION_LOOKS,
        Unit::Count,
        "Looks of worker sessions at their leases, by what caused them: steering (a job stopped, another job's task became ready, a snapshot is due, an interactive task waits), hunger (a slot went hungry and the session is the one to ask a give-away), deadline (a lease's deadline or the safety net), report (a report of the session's own called for one)."
    );
    histogram!(
        LEASE_ROUND_TRIP,
        Unit::Seconds,
        "Time from a lease sent to a worker to the worker's report of its end."
    );
    gauge!(
        STORE_DEGRADED,
        Unit::Count,
        "1 while the job store cannot be written, by cause; else 0."
    );
    histogram!(STORE_WRITE, Unit::Seconds, "Time of one write to the job store, by operation (create: a new job; apply: a job's solutions, snapshot or end).");
    counter!(
        STORE_FENCED_WRITES,
        Unit::Count,
        "Writes of this coordinator the PostgreSQL store refused because another coordinator had taken the lead (each makes this one step down)."
    );
    gauge!(
        LEADER,
        Unit::Count,
        "1 while this coordinator leads (runs jobs, hands out leases), 0 while it stands by; always 1 on the SQLite store."
    );
    counter!(
        LEADER_TAKEOVERS,
        Unit::Count,
        "Times this coordinator took the lead on the PostgreSQL store's lease."
    );
}

/// Describes a worker process's metrics, once.
fn describe_worker() {
    use metrics::{describe_counter as counter, describe_gauge as gauge};
    counter!(
        WORKER_NODES,
        Unit::Count,
        "Search tree nodes explored by this worker's runs."
    );
    counter!(
        WORKER_SOLUTIONS,
        Unit::Count,
        "Solutions this worker's runs found and reported."
    );
    gauge!(
        WORKER_LEASES,
        Unit::Count,
        "Leases this worker holds (tasks running)."
    );
    gauge!(
        WORKER_THREADS,
        Unit::Count,
        "Tasks this worker runs at once (its slots)."
    );
    gauge!(
        WORKER_CONNECTED,
        Unit::Count,
        "1 while this worker is connected to its coordinator; else 0."
    );
    counter!(
        WORKER_RECONNECTS,
        Unit::Count,
        "Times this worker connected again after losing (or failing to get) its coordinator."
    );
    counter!(
        WORKER_REPORTS_REFUSED,
        Unit::Count,
        "Times the coordinator refused this worker's reports (and disconnected it)."
    );
}

fn describe_common() {
    metrics::describe_gauge!(
        BUILD_INFO,
        Unit::Count,
        "Always 1; its labels say the version and the process's role."
    );
}

/// The buckets of each histogram (seconds): fine where a call or a write
/// is quick, up to hours where a job or a lease may last that long.
fn buckets() -> [(&'static str, &'static [f64]); 5] {
    [
        (
            GRPC_SERVER_HANDLING,
            &[
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0, 30.0, 60.0, 300.0, 3600.0,
            ],
        ),
        (
            JOB_DURATION,
            &[
                0.001, 0.01, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0,
                86400.0,
            ],
        ),
        (
            TASK_QUEUE_WAIT,
            &[
                0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0, 300.0,
                3600.0,
            ],
        ),
        (
            LEASE_ROUND_TRIP,
            &[
                0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0,
                3600.0, 14400.0,
            ],
        ),
        (
            STORE_WRITE,
            &[
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                1.0, 5.0,
            ],
        ),
    ]
}

/// Installs the process's recorder, describes `role`'s metrics and serves
/// them at `http://ADDR/metrics` (any other path: 404) in the background;
/// returns the address bound (useful with port 0). Once per process.
pub async fn listen(addr: SocketAddr, role: Role) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("metrics on {addr}: {e}")))?;
    let bound = listener.local_addr()?;
    let mut builder = PrometheusBuilder::new();
    for (name, buckets) in buckets() {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(name.to_string()), buckets)
            .map_err(std::io::Error::other)?;
    }
    let handle = builder
        .install_recorder()
        .map_err(|e| std::io::Error::other(format!("metrics on {addr}: {e}")))?;
    describe_common();
    match role {
        Role::Coordinator => describe_coordinator(),
        Role::Worker => describe_worker(),
    }
    // Counters without labels are there from the start, at 0: a rate over
    // them needs no first event.
    let counters: &[&str] = match role {
        Role::Coordinator => &[
            API_AUTH_FAILURES,
            PUZZLES_TOO_LARGE,
            HANDLER_PANICS,
            SOLUTIONS_STREAMED,
            JOBS_STARTED,
            NODES,
            TASKS,
            TASKS_LOST,
            TASKS_YIELDED,
            WORKER_AUTH_FAILURES,
            WORKER_REPORTS_REJECTED,
            AUDITS,
            FENCED_REPORTS,
            STALLED_LEASES,
            STORE_FENCED_WRITES,
            LEADER_TAKEOVERS,
        ],
        Role::Worker => &[
            WORKER_NODES,
            WORKER_SOLUTIONS,
            WORKER_RECONNECTS,
            WORKER_REPORTS_REFUSED,
        ],
    };
    for &name in counters {
        metrics::counter!(name).increment(0);
    }
    metrics::gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION"), "role" => role.label())
        .set(1.0);
    process::start();
    let handle = Arc::new(handle);
    // Histograms' samples are folded in at upkeep: now and then, and at
    // every scrape.
    let upkeep = Arc::downgrade(&handle);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        loop {
            tick.tick().await;
            let Some(handle) = upkeep.upgrade() else {
                return;
            };
            handle.run_upkeep();
        }
    });
    tokio::spawn(serve(listener, handle));
    tracing::info!(metrics_addr = %bound, role = role.label(), "metrics at /metrics");
    Ok(bound)
}

/// Answers `GET /metrics` (and HEAD) with the text format; 404 elsewhere.
async fn serve(listener: TcpListener, handle: Arc<PrometheusHandle>) {
    let answer = move |request: http::Request<hyper::body::Incoming>| {
        std::future::ready(answer(&handle, request.method(), request.uri().path()))
    };
    super::http_listener::serve(listener, "metrics", Arc::new(answer), None).await
}

fn answer(handle: &PrometheusHandle, method: &http::Method, path: &str) -> http::Response<String> {
    use http::{header, Method, StatusCode};
    let (status, content_type, body) = if path != "/metrics" {
        (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: the metrics are at /metrics\n".to_string(),
        )
    } else if method != Method::GET && method != Method::HEAD {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "GET /metrics\n".to_string(),
        )
    } else {
        handle.run_upkeep();
        let mut text = handle.render();
        process::render(&mut text);
        (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            text,
        )
    };
    let mut response = http::Response::new(if method == Method::HEAD {
        String::new()
    } else {
        body
    });
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    if status == StatusCode::METHOD_NOT_ALLOWED {
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
    }
    response
}

/// A gRPC status code as a label value.
pub fn grpc_code(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::Ok => "ok",
        Code::Cancelled => "cancelled",
        Code::Unknown => "unknown",
        Code::InvalidArgument => "invalid_argument",
        Code::DeadlineExceeded => "deadline_exceeded",
        Code::NotFound => "not_found",
        Code::AlreadyExists => "already_exists",
        Code::PermissionDenied => "permission_denied",
        Code::ResourceExhausted => "resource_exhausted",
        Code::FailedPrecondition => "failed_precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out_of_range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data_loss",
        Code::Unauthenticated => "unauthenticated",
    }
}

/// Times one write to the job store (`op`: create or apply).
pub fn time_store_write<T>(op: &'static str, write: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let result = write();
    metrics::histogram!(STORE_WRITE, "op" => op).record(start.elapsed());
    result
}

/// The process metrics Prometheus's client libraries export, read from
/// /proc at each scrape (Linux; elsewhere only the start time) and written
/// in the text format directly: the CPU time needs fractions of a second,
/// which the facade's counters (integers) cannot hold.
mod process {
    use std::fmt::Write;
    use std::sync::OnceLock;

    static START: OnceLock<f64> = OnceLock::new();

    /// Records the start time (now, if /proc cannot tell).
    pub(super) fn start() {
        START.get_or_init(|| {
            linux::start_time().unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64()
            })
        });
    }

    fn metric(text: &mut String, name: &str, kind: &str, help: &str, value: f64) {
        let _ = write!(
            text,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n\n"
        );
    }

    /// Appends the process metrics to a scrape's text.
    pub(super) fn render(text: &mut String) {
        use super::*;
        if let Some(now) = linux::sample() {
            metric(
                text,
                PROCESS_CPU,
                "counter",
                "Total user and system CPU time spent in seconds.",
                now.cpu_seconds,
            );
            metric(
                text,
                PROCESS_RESIDENT_MEMORY,
                "gauge",
                "Resident memory size in bytes.",
                now.resident_bytes as f64,
            );
            metric(
                text,
                PROCESS_VIRTUAL_MEMORY,
                "gauge",
                "Virtual memory size in bytes.",
                now.virtual_bytes as f64,
            );
            metric(
                text,
                PROCESS_THREADS,
                "gauge",
                "Number of OS threads in the process.",
                now.threads as f64,
            );
            if let Some(open) = now.open_fds {
                metric(
                    text,
                    PROCESS_OPEN_FDS,
                    "gauge",
                    "Number of open file descriptors.",
                    open as f64,
                );
            }
            if let Some(max) = now.max_fds {
                metric(
                    text,
                    PROCESS_MAX_FDS,
                    "gauge",
                    "Maximum number of open file descriptors.",
                    max as f64,
                );
            }
        }
        if let Some(&start) = START.get() {
            metric(
                text,
                PROCESS_START_TIME,
                "gauge",
                "Start time of the process since unix epoch in seconds.",
                start,
            );
        }
    }

    pub(super) struct Sample {
        pub(super) cpu_seconds: f64,
        pub(super) resident_bytes: u64,
        pub(super) virtual_bytes: u64,
        pub(super) threads: u64,
        pub(super) open_fds: Option<u64>,
        pub(super) max_fds: Option<u64>,
    }

    #[cfg(target_os = "linux")]
    mod linux {
        use super::Sample;

        /// The fields of /proc/self/stat after the command's name: field
        /// 3 (state) is the first.
        fn stat() -> Option<Vec<u64>> {
            let text = std::fs::read_to_string("/proc/self/stat").ok()?;
            let rest = &text[text.rfind(')')? + 1..];
            Some(
                rest.split_whitespace()
                    .skip(1)
                    .map(|field| field.parse().unwrap_or(0))
                    .collect(),
            )
        }

        /// Field n of /proc/self/stat (1-based, as proc(5) numbers them).
        fn field(stat: &[u64], n: usize) -> Option<u64> {
            stat.get(n.checked_sub(4)?).copied()
        }

        fn sysconf(name: libc::c_int) -> Option<u64> {
            // SAFETY: sysconf has no preconditions.
            let value = unsafe { libc::sysconf(name) };
            (value > 0).then_some(value as u64)
        }

        pub(super) fn start_time() -> Option<f64> {
            let stat = stat()?;
            let ticks = sysconf(libc::_SC_CLK_TCK)?;
            let boot: u64 = std::fs::read_to_string("/proc/stat")
                .ok()?
                .lines()
                .find_map(|line| line.strip_prefix("btime "))?
                .trim()
                .parse()
                .ok()?;
            Some(boot as f64 + field(&stat, 22)? as f64 / ticks as f64)
        }

        pub(super) fn sample() -> Option<Sample> {
            let stat = stat()?;
            let ticks = sysconf(libc::_SC_CLK_TCK)?;
            let page = sysconf(libc::_SC_PAGESIZE)?;
            let open_fds = std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|dir| dir.count() as u64);
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit writes the struct it is given.
            let max_fds = (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0)
                .then_some(limit.rlim_cur);
            Some(Sample {
                cpu_seconds: (field(&stat, 14)? + field(&stat, 15)?) as f64 / ticks as f64,
                threads: field(&stat, 20)?,
                virtual_bytes: field(&stat, 23)?,
                resident_bytes: field(&stat, 24)? * page,
                open_fds,
                max_fds,
            })
        }
    }

    #[cfg(not(target_os = "linux"))]
    mod linux {
        pub(super) fn start_time() -> Option<f64> {
            None
        }
        pub(super) fn sample() -> Option<super::Sample> {
            None
        }
    }
}
