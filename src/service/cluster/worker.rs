//! A remote worker (`xccd worker`): connects out to a coordinator, runs the
//! tasks it leases on the engine, and reports what they find.
//!
//! The connection is one bidirectional stream. The async side reads the
//! coordinator's messages and sends heartbeats; each leased task runs on a
//! blocking thread that reports its solutions straight into the outgoing
//! stream, in order, so the coordinator can count them exactly. When the
//! connection is lost every run is stopped (its lease is gone: the
//! coordinator has queued the task again) and the worker reconnects with
//! exponential backoff. On shutdown it *drains*: its runs checkpoint and
//! hand their remaining work back before it exits.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Endpoint;

use crate::service::convert;
use crate::service::credentials::{endpoint, ClientTls, EndpointError, WorkerToken};
use crate::service::error_chain;
use crate::service::metrics as metric;
use crate::service::telemetry;

use super::coordinator::{MAX_MESSAGE_BYTES, PROBLEM_CACHE};
use super::proto::{
    self as pb, coordinator_client::CoordinatorClient, coordinator_message::Kind as In,
    worker_message::Kind as Out, AskKind, Instance, RunStatus,
};
use crate::run::{run_task, Batch, Control, Port, RunEnd, RunReport, RunSpec, Taken};
use crate::service::sync::Locked;
use crate::xcc::{self, Engine, Problem, ProgressView, Solver, UnsupportedEngine};
use crate::xcc::{MAX_POLL_INTERVAL, POLL_INTERVAL};

mod control;
use control::RunControl;
pub(crate) use control::{control_for, overrides};

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The coordinator's URL, e.g. `http://127.0.0.1:50051`; or several,
    /// separated by commas: coordinators sharing a PostgreSQL store, of
    /// which one leads and the others answer NOT_LEADER (the worker tries
    /// them in turn until one takes it, and again after a failover).
    pub coordinator: String,
    /// Tasks run at once.
    pub threads: usize,
    /// Shown in the coordinator's logs.
    pub name: String,
    /// First delay before reconnecting; it doubles up to `max_backoff`.
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// The token the coordinator asks of its workers, if it does.
    pub token: Option<WorkerToken>,
    /// TLS towards an `https://` coordinator: its CA, and this worker's
    /// certificate when the coordinator requires one.
    pub tls: ClientTls,
    /// The memory one run and all of this worker's runs may take: a lease
    /// whose engine passes it is handed back as out of memory (the job
    /// fails with RESOURCE_EXHAUSTED), and the worker goes on.
    pub memory: crate::service::memory::MemoryLimits,
}

impl WorkerConfig {
    /// Most bytes one run may take: the per-run limit, and a thread's share
    /// of the total.
    fn run_memory_limit(&self) -> u64 {
        let threads = self.threads.max(1) as u64;
        self.memory.per_run.min(self.memory.total / threads)
    }

    /// The coordinators' URLs, in the order they are tried.
    pub fn coordinators(&self) -> Vec<String> {
        self.coordinator
            .split(',')
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .map(str::to_string)
            .collect()
    }

    pub fn new(coordinator: impl Into<String>) -> WorkerConfig {
        WorkerConfig {
            coordinator: coordinator.into(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            name: String::new(),
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            token: None,
            tls: ClientTls::default(),
            memory: crate::service::memory::MemoryLimits::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("the coordinator's address: {0}")]
    BadUrl(#[from] EndpointError),
    #[error("the coordinator refused this worker: {0}")]
    Refused(String),
    /// The address answered as a coordinator's public API (no worker
    /// service there): retrying cannot help, so the worker stops and says
    /// where workers belong.
    #[error(
        "{0} is the API port; workers connect to the worker listener (API port + 1 on a pure \
         coordinator, or --worker-listen){hint}",
        hint = next_port_hint(.0)
    )]
    WrongPort(String),
}

/// ", e.g. http://host:50052" for a URL whose port is 50051; nothing when
/// the URL has no port to add one to.
fn next_port_hint(url: &str) -> String {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return String::new();
    };
    match (uri.scheme_str(), uri.host(), uri.port_u16()) {
        (Some(scheme), Some(host), Some(port)) if port < u16::MAX => {
            let host = if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]")
            } else {
                host.to_string()
            };
            format!(", e.g. {scheme}://{host}:{}", port + 1)
        }
        _ => String::new(),
    }
}

/// Connection state, for a health service or a test.
pub trait ConnectionObserver: Send + Sync {
    fn connected(&self, connected: bool);
}

impl ConnectionObserver for () {
    fn connected(&self, _: bool) {}
}

/// Runs a worker until `shutdown` resolves; a connected worker then drains
/// (its runs checkpoint back to the coordinator) before this returns.
pub async fn run(
    config: WorkerConfig,
    observer: Arc<dyn ConnectionObserver>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), WorkerError> {
    let urls = config.coordinators();
    let endpoints = urls
        .iter()
        .map(|url| {
            Ok(endpoint(url, &config.tls)?
                .connect_timeout(Duration::from_secs(5))
                .tcp_nodelay(true)
                .http2_keep_alive_interval(Duration::from_secs(10))
                .keep_alive_timeout(Duration::from_secs(20)))
        })
        .collect::<Result<Vec<_>, WorkerError>>()?;
    if endpoints.is_empty() {
        return Err(WorkerError::Refused("no coordinator address given".into()));
    }
    // The coordinator tried now (the next one after a loss).
    let mut at = 0;
    let cache = Arc::new(Cache {
        memory_limit: config.run_memory_limit(),
        ..Cache::default()
    });
    let (drain_tx, drain_rx) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut draining = false;
    let mut backoff = config.min_backoff;
    metrics::gauge!(metric::WORKER_THREADS).set(config.threads as f64);
    metrics::gauge!(metric::WORKER_CONNECTED).set(0.0);
    loop {
        let outcome = {
            let mut current = std::pin::pin!(session(
                &endpoints[at],
                &urls[at],
                &config,
                &cache,
                &*observer,
                drain_rx.clone()
            ));
            loop {
                tokio::select! {
                    outcome = &mut current => break outcome,
                    () = &mut shutdown, if !draining => {
                        draining = true;
                        let _ = drain_tx.send(true);
                    }
                }
            }
        };
        observer.connected(false);
        metrics::gauge!(metric::WORKER_CONNECTED).set(0.0);
        metrics::gauge!(metric::WORKER_LEASES).set(0.0);
        match outcome {
            SessionEnd::Drained => return Ok(()),
            SessionEnd::Refused(reason) => return Err(WorkerError::Refused(reason)),
            SessionEnd::WrongPort => return Err(WorkerError::WrongPort(urls[at].clone())),
            // A standby answered at once: the next address may lead.
            SessionEnd::Standby(reason) => {
                if draining {
                    return Ok(());
                }
                tracing::info!(coordinator = %urls[at], %reason, "not the leader; trying the next coordinator");
                at = (at + 1) % urls.len();
                backoff = config.min_backoff;
            }
            SessionEnd::Lost { reason, was_up } => {
                if draining {
                    return Ok(());
                }
                if was_up {
                    backoff = config.min_backoff;
                }
                tracing::warn!(%reason, retry_in_ms = backoff.as_millis() as u64, "no connection to the coordinator");
                metrics::counter!(metric::WORKER_RECONNECTS).increment(1);
                at = (at + 1) % urls.len();
            }
        }
        // Jitter keeps a fleet of workers from reconnecting in lockstep.
        let jitter = 0.75 + 0.5 * rand_unit();
        tokio::select! {
            () = tokio::time::sleep(backoff.mul_f64(jitter)) => {}
            () = &mut shutdown => return Ok(()),
        }
        backoff = (backoff * 2).min(config.max_backoff);
    }
}

/// Whether `status` is a standby's refusal (NOT_LEADER).
fn is_standby(status: &tonic::Status) -> bool {
    use tonic_types::StatusExt;
    status.code() == tonic::Code::Unavailable
        && status
            .get_details_error_info()
            .is_some_and(|info| info.reason == crate::service::status::Reason::NotLeader.as_str())
}

/// A number in [0, 1) that differs between processes and calls.
fn rand_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

enum SessionEnd {
    /// Drained after a shutdown request: exit.
    Drained,
    /// The coordinator will not take this worker: exit with an error.
    Refused(String),
    /// UNIMPLEMENTED: the address serves the public API, not the workers'
    /// service.
    WrongPort,
    /// Reconnect; `was_up` if the session got as far as a Welcome.
    Lost { reason: String, was_up: bool },
    /// The coordinator stands by (NOT_LEADER): try the next one soon.
    Standby(String),
}

/// A problem rebuilt from its data, or why it could not be.
type Built = Result<Arc<Instance>, String>;

/// Problems by digest, most recently used last, and idle solvers for them.
/// Its order mirrors the coordinator's record of what this worker holds,
/// so a problem that could not be built is kept too, with the reason.
#[derive(Default)]
struct Cache {
    problems: Mutex<VecDeque<(Vec<u8>, Built)>>,
    solvers: Mutex<HashMap<Vec<u8>, Vec<Solver>>>,
    /// Most bytes a run's solver may take ([`WorkerConfig::run_memory_limit`]).
    memory_limit: u64,
}

impl Cache {
    fn insert(&self, digest: Vec<u8>, instance: Built) {
        let mut problems = self.problems.locked();
        problems.retain(|(d, _)| *d != digest);
        problems.push_back((digest, instance));
        while problems.len() > PROBLEM_CACHE {
            if let Some((gone, _)) = problems.pop_front() {
                self.solvers.locked().remove(&gone);
            }
        }
    }

    /// The problem, marked as the most recently used.
    fn touch(&self, digest: &[u8]) -> Option<Built> {
        let mut problems = self.problems.locked();
        let at = problems.iter().position(|(d, _)| d == digest)?;
        let entry = problems.remove(at).expect("present");
        let instance = entry.1.clone();
        problems.push_back(entry);
        Some(instance)
    }

    fn take_solver(
        &self,
        digest: &[u8],
        engine: Engine,
        problem: &Problem,
    ) -> Result<Solver, UnsupportedEngine> {
        let reused = self.solvers.locked().get_mut(digest).and_then(|idle| {
            let at = idle.iter().position(|s| s.engine() == engine)?;
            Some(idle.swap_remove(at))
        });
        match reused {
            Some(solver) => Ok(solver),
            None => Solver::with_engine(problem, engine),
        }
    }

    fn give_back(&self, digest: Vec<u8>, solver: Solver) {
        let held = self.problems.locked().iter().any(|(d, _)| *d == digest);
        if held {
            self.solvers
                .locked()
                .entry(digest)
                .or_default()
                .push(solver);
        }
    }
}

fn message(kind: Out) -> pb::WorkerMessage {
    pb::WorkerMessage { kind: Some(kind) }
}

/// One connection: from Hello to its end.
async fn session(
    endpoint: &Endpoint,
    url: &str,
    config: &WorkerConfig,
    cache: &Arc<Cache>,
    observer: &dyn ConnectionObserver,
    mut drain: tokio::sync::watch::Receiver<bool>,
) -> SessionEnd {
    let lost = |reason: String, was_up: bool| SessionEnd::Lost { reason, was_up };
    let channel = match endpoint.connect().await {
        Ok(channel) => channel,
        Err(e) => {
            return lost(
                crate::service::tls_advice::with_advice(format!(
                    "cannot connect to {}: {}",
                    url,
                    error_chain(&e)
                )),
                false,
            )
        }
    };
    let mut client = CoordinatorClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let (tx, rx) = mpsc::channel::<pb::WorkerMessage>(256);
    let hello = message(Out::Hello(pb::Hello {
        name: config.name.clone(),
        threads: config.threads.max(1) as u32,
        protocol: pb::PROTOCOL_VERSION,
    }));
    if tx.send(hello).await.is_err() {
        return lost("the outgoing stream closed".into(), false);
    }
    let mut request = tonic::Request::new(ReceiverStream::new(rx));
    if let Some(token) = &config.token {
        match token.header().parse() {
            Ok(value) => {
                request.metadata_mut().insert("authorization", value);
            }
            Err(_) => return SessionEnd::Refused("the worker token is not a header value".into()),
        }
    }
    let mut inbound = match client.work(request).await {
        Ok(response) => response.into_inner(),
        Err(status)
            if matches!(
                status.code(),
                tonic::Code::FailedPrecondition | tonic::Code::Unauthenticated
            ) =>
        {
            return SessionEnd::Refused(status.message().to_string())
        }
        Err(status) if status.code() == tonic::Code::Unimplemented => return SessionEnd::WrongPort,
        Err(status) if is_standby(&status) => return SessionEnd::Standby(status.message().into()),
        Err(status) => return lost(format!("the coordinator answered {status}"), false),
    };
    let welcome = match inbound.message().await {
        Ok(Some(pb::CoordinatorMessage {
            kind: Some(In::Welcome(welcome)),
        })) => welcome,
        Ok(_) => return lost("the coordinator sent no Welcome".into(), false),
        Err(status) => return lost(format!("the coordinator answered {status}"), false),
    };
    observer.connected(true);
    metrics::gauge!(metric::WORKER_CONNECTED).set(1.0);
    tracing::info!(coordinator = %url, id = %welcome.worker_id, threads = config.threads, "connected");
    let heartbeat_every = Duration::from_millis(u64::from(welcome.heartbeat_interval_ms.max(10)));
    let mut heartbeat = tokio::time::interval(heartbeat_every);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut runs: HashMap<u64, (u32, Arc<RunControl>)> = HashMap::new();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<u64>();
    let mut draining = false;
    let stop_all = |runs: &HashMap<u64, (u32, Arc<RunControl>)>| {
        for (_, control) in runs.values() {
            control.ask(AskKind::Revoke);
        }
    };
    loop {
        if draining && runs.is_empty() {
            // Everything is handed back: close our side and let the
            // coordinator see the end of the stream after our last report.
            drop(tx);
            let _ = tokio::time::timeout(Duration::from_secs(5), async {
                while let Ok(Some(_)) = inbound.message().await {}
            })
            .await;
            tracing::info!("drained");
            return SessionEnd::Drained;
        }
        tokio::select! {
            incoming = inbound.message() => match incoming {
                Ok(Some(pb::CoordinatorMessage { kind: Some(kind) })) => match kind {
                    In::Problem(data) => {
                        let instance = pb::instance(&data).map(Arc::new);
                        if let Err(error) = &instance {
                            tracing::error!(%error, "cannot run this problem: its leases will fail");
                        }
                        cache.insert(data.digest, instance);
                    }
                    In::Lease(lease) => {
                        let Some(lease_ref) = lease.lease else { continue };
                        let problem = cache.touch(&lease.problem_digest);
                        let control = Arc::new(RunControl::default());
                        control.draining.store(draining, Ordering::SeqCst);
                        if draining {
                            control.ask(AskKind::Checkpoint);
                        }
                        runs.insert(lease_ref.id, (lease_ref.epoch, control.clone()));
                        metrics::gauge!(metric::WORKER_LEASES).set(runs.len() as f64);
                        let (tx, done_tx, cache) = (tx.clone(), done_tx.clone(), cache.clone());
                        let span = task_span(&lease);
                        tokio::task::spawn_blocking(move || {
                            let _entered = span.enter();
                            let id = lease_ref.id;
                            let ended = match problem {
                                Some(Ok(instance)) => run_lease(&lease, &instance, &cache, &control, &tx),
                                Some(Err(error)) => pb::TaskEnded {
                                    lease: Some(lease_ref),
                                    status: RunStatus::Failed as i32,
                                    error: format!("this worker cannot run the problem: {error}"),
                                    ..pb::TaskEnded::default()
                                },
                                None => pb::TaskEnded {
                                    lease: Some(lease_ref),
                                    status: RunStatus::Released as i32,
                                    error: "the problem of this lease is not in the worker's cache".into(),
                                    ..pb::TaskEnded::default()
                                },
                            };
                            let _ = tx.blocking_send(message(Out::Ended(ended)));
                            let _ = done_tx.send(id);
                        });
                    }
                    In::Ask(ask) => {
                        let Some(lease_ref) = ask.lease else { continue };
                        if let Some((_, control)) = runs.get(&lease_ref.id) {
                            control.ask(AskKind::try_from(ask.kind).unwrap_or(AskKind::Unspecified));
                        }
                    }
                    In::Welcome(_) => {}
                },
                Ok(Some(_)) => {}
                Ok(None) => {
                    stop_all(&runs);
                    return lost("the coordinator closed the stream".into(), true);
                }
                Err(status) => {
                    stop_all(&runs);
                    if status.code() == tonic::Code::InvalidArgument {
                        // The coordinator found a report of ours wrong.
                        metrics::counter!(metric::WORKER_REPORTS_REFUSED).increment(1);
                    }
                    return lost(format!("the stream broke: {}", status.message()), true);
                }
            },
            _ = heartbeat.tick() => {
                let leases = runs
                    .iter()
                    .map(|(&id, (epoch, control))| {
                        let (done_weight, nodes) = control.progress.read();
                        control.count_nodes(nodes);
                        pb::LeaseProgress {
                            lease: Some(pb::LeaseRef { id, epoch: *epoch }),
                            done_weight,
                            nodes,
                        }
                    })
                    .collect();
                if tx.send(message(Out::Heartbeat(pb::Heartbeat { leases }))).await.is_err() {
                    stop_all(&runs);
                    return lost("the outgoing stream closed".into(), true);
                }
            }
            Some(id) = done_rx.recv() => {
                runs.remove(&id);
                metrics::gauge!(metric::WORKER_LEASES).set(runs.len() as f64);
            }
            changed = drain.changed(), if !draining => {
                if changed.is_err() || *drain.borrow() {
                    draining = true;
                    tracing::info!(running = runs.len(), "draining: checkpointing the running tasks");
                    let _ = tx.send(message(Out::Draining(pb::Draining {}))).await;
                    for (_, control) in runs.values() {
                        control.draining.store(true, Ordering::SeqCst);
                        control.ask(AskKind::Checkpoint);
                    }
                }
            }
        }
    }
}

/// What a lease asks of its run (skip, limits, delivery), bounded where
/// the coordinator's number could be anything (the batch size); the caller
/// adds how the run polls and flushes.
pub(super) fn lease_spec(lease: &pb::Lease) -> RunSpec {
    RunSpec {
        skip: lease.skip,
        limit: lease.limit,
        max_nodes: lease.max_nodes,
        want_solutions: lease.want_solutions,
        batch_size: if lease.want_solutions {
            (lease.batch_size as usize).clamp(1, 4096)
        } else {
            usize::MAX
        },
        ..RunSpec::default()
    }
}

/// With traces on, the span of a leased task's run, in its job's trace
/// (the lease's `traceparent`); else no span at all.
fn task_span(lease: &pb::Lease) -> tracing::Span {
    if !telemetry::on() {
        return tracing::Span::none();
    }
    let lease_ref = lease.lease.unwrap_or_default();
    let span = tracing::info_span!(
        "task",
        job = lease.job,
        lease = lease_ref.id,
        epoch = lease_ref.epoch,
        level = lease.task.as_ref().map_or(0, |t| t.path.len()),
    );
    telemetry::set_parent(&span, &lease.traceparent);
    span
}

/// Runs one leased task to its end and says how it ended. Solutions and
/// give-aways go out as they happen.
fn run_lease(
    lease: &pb::Lease,
    instance: &Instance,
    cache: &Cache,
    control: &RunControl,
    tx: &mpsc::Sender<pb::WorkerMessage>,
) -> pb::TaskEnded {
    let task: xcc::Task = lease.task.clone().unwrap_or_default().into();
    // A lease whose engine cannot fit this worker goes back, the worker
    // stays: the coordinator fails its job with the reason.
    if let Ok(engine) = lease.engine.parse::<Engine>() {
        if let Err(need) = xcc::memory::check(&instance.problem, engine, cache.memory_limit) {
            tracing::warn!(lease = ?lease.lease, "{need}");
            let report = RunReport {
                end: RunEnd::OutOfMemory(format!("on worker: {need}")),
                stats: Default::default(),
                found: 0,
                delivered: 0,
                exact_count: None,
            };
            return pb::task_ended(lease.lease, &report);
        }
    }
    let solver = lease
        .engine
        .parse::<Engine>()
        .map_err(|e| e.to_string())
        .and_then(|engine| {
            cache
                .take_solver(&lease.problem_digest, engine, &instance.problem)
                .map_err(|e| e.to_string())
        });
    let mut solver = match solver {
        Ok(solver) => solver,
        Err(error) => {
            let report = RunReport {
                end: RunEnd::Failed(error),
                stats: Default::default(),
                found: 0,
                delivered: 0,
                exact_count: None,
            };
            return pb::task_ended(lease.lease, &report);
        }
    };
    let spec = RunSpec {
        max_delay: FLUSH_EVERY,
        poll_interval: match lease.poll_nodes {
            0 => POLL_INTERVAL,
            n => n.min(MAX_POLL_INTERVAL),
        },
        ..lease_spec(lease)
    };
    let lie = test_lie();
    let mut port = RemotePort {
        lease: lease.lease,
        index_bytes: convert::packed_index_bytes(&instance.problem),
        tx,
        control,
        disconnected: false,
        omit: lie == Some(TestLie::Omit) && lease.want_solutions,
        duplicate: lie == Some(TestLie::Duplicate) && lease.want_solutions,
        vanish: lie == Some(TestLie::Vanish) && !lease.want_solutions,
    };
    let mut report = run_task(
        &mut solver,
        &instance.problem,
        &task,
        &spec,
        instance.condition.as_deref(),
        &mut port,
    );
    cache.give_back(lease.problem_digest.clone(), solver);
    if lie == Some(TestLie::AddOne) && !lease.want_solutions && report.end == RunEnd::Exhausted {
        // The audits' test: one solution more than the task has.
        port.send(Out::Found(pb::Found {
            lease: lease.lease,
            first: report.found,
            count: 1,
            ..pb::Found::default()
        }));
        report.found += 1;
    }
    control.count_nodes(report.stats.nodes);
    pb::task_ended(lease.lease, &report)
}

/// How long found solutions may wait before they are reported.
const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// Connects a run to the coordinator's stream.
struct RemotePort<'a> {
    lease: Option<pb::LeaseRef>,
    /// Bytes an option index takes in the packed solutions.
    index_bytes: u32,
    tx: &'a mpsc::Sender<pb::WorkerMessage>,
    control: &'a RunControl,
    /// The stream is gone: the lease is lost, stop.
    disconnected: bool,
    /// Lies for the audits' tests (see [`TestLie`]): found solutions are
    /// not sent; a batch's first solution is sent in place of its second;
    /// a count is sent too high, and the worker exits.
    omit: bool,
    duplicate: bool,
    vanish: bool,
}

impl RemotePort<'_> {
    fn send(&mut self, kind: Out) {
        if !self.disconnected && self.tx.blocking_send(message(kind)).is_err() {
            self.disconnected = true;
        }
    }
}

/// For tests of the poison rule only: `XCCD_TEST_CRASH_AT_NODES=n` makes
/// the worker abort when a run of its passes `n` nodes, as a worker would
/// that a task crashes (tests/cluster.rs). Read once.
fn test_crash_at() -> Option<u64> {
    static AT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *AT.get_or_init(|| {
        std::env::var("XCCD_TEST_CRASH_AT_NODES")
            .ok()
            .and_then(|n| n.parse().ok())
    })
}

/// A lie a worker tells, for the audits' tests only (tests/cluster.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestLie {
    /// `XCCD_TEST_LIE=add-one`: each count-only lease that ends exhausted
    /// reports one solution more than it found.
    AddOne,
    /// `XCCD_TEST_LIE=omit`: streamed leases send none of their solutions
    /// (and still end exhausted).
    Omit,
    /// `XCCD_TEST_LIE=duplicate`: streamed leases send the first solution
    /// of each batch of two or more again in place of the second (the
    /// right number of solutions, each valid and in its lease's part of
    /// the tree).
    Duplicate,
    /// `XCCD_TEST_LIE=vanish`: the first count a count-only lease reports
    /// is a billion too high (more than its task has: a count no higher
    /// than that would come out right, the task going on past it), and the
    /// worker exits a moment later (its lease lost, its task queued again
    /// to go on past the count).
    Vanish,
}

/// The worker's [`TestLie`], if `XCCD_TEST_LIE` names one. Read once.
fn test_lie() -> Option<TestLie> {
    static LIE: std::sync::OnceLock<Option<TestLie>> = std::sync::OnceLock::new();
    *LIE.get_or_init(|| match std::env::var("XCCD_TEST_LIE").ok()?.as_str() {
        "add-one" => Some(TestLie::AddOne),
        "omit" => Some(TestLie::Omit),
        "duplicate" => Some(TestLie::Duplicate),
        "vanish" => Some(TestLie::Vanish),
        _ => None,
    })
}

impl Port for RemotePort<'_> {
    fn deliver(&mut self, batch: Batch, _force: bool) -> Taken {
        metrics::counter!(metric::WORKER_SOLUTIONS).increment(batch.count);
        if self.omit {
            return Taken::All;
        }
        let mut batch = batch;
        if self.duplicate && batch.solutions.len() >= 2 {
            let first: Vec<u32> = batch.solutions.iter().next().expect("two").to_vec();
            let mut lied = crate::run::Solutions::new();
            for (k, solution) in batch.solutions.iter().enumerate() {
                lied.push(if k == 1 { &first } else { solution });
            }
            batch.solutions = lied;
        }
        if self.vanish && batch.count > 0 {
            batch.count += 1_000_000_000;
            self.send(Out::Found(pb::found(self.lease, batch, self.index_bytes)));
            std::thread::sleep(Duration::from_millis(500));
            std::process::exit(3);
        }
        self.send(Out::Found(pb::found(self.lease, batch, self.index_bytes)));
        if self.disconnected {
            Taken::Stop
        } else {
            Taken::All
        }
    }

    fn control(&mut self, progress: &ProgressView<'_>) -> Control {
        if test_crash_at().is_some_and(|nodes| progress.stats.nodes >= nodes) {
            // The poison rule's test: a task that kills every worker
            // running it, at the same node of its run each time.
            std::process::abort();
        }
        self.control.progress.publish(progress);
        if self.disconnected {
            return Control::Stop;
        }
        let draining = self.control.draining.load(Ordering::SeqCst);
        let (control, taken) = control_for(self.control.pending(), draining);
        if taken {
            self.control.handled(AskKind::GiveAway);
        }
        control
    }

    fn given_away(&mut self, task: xcc::Task, found: u64) {
        self.send(Out::GaveAway(pb::GaveAway {
            lease: self.lease,
            task: Some((&task).into()),
            found,
        }));
    }
}
