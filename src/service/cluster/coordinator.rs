//! The coordinator's side of the cluster protocol: one [`Session`] per
//! connected worker, holding that worker's leases.
//!
//! A session is the only place a lease lives, so fencing is a map lookup:
//! a report on a lease this session does not hold, under the same epoch, is
//! ignored. A session ends when its stream does or when the worker has been
//! silent for the lease timeout; every lease it still holds is then *lost*
//! and its task goes back to the pool's queue with the cuts of what it gave
//! away and the number of solutions it delivered (see [`super`]).

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::proto::{
    self as pb, coordinator_message::Kind as Out, coordinator_server, worker_message::Kind as In,
    AskKind,
};
use crate::run::{check_task, Batch, Ledger, Region, RunPoint, Settlement, Solutions};
use crate::service::credentials::WorkerToken;
use crate::service::job::{EndReason, Job};
use crate::service::pool::Pool;
use crate::xcc;

/// Timing of the protocol, chosen by the coordinator and told to workers.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// How often workers send a heartbeat.
    pub heartbeat_interval: Duration,
    /// A worker silent for this long loses its leases.
    pub lease_timeout: Duration,
    /// Workers must present this token (unless client certificates
    /// authenticate them; with both, both are required).
    pub token: Option<WorkerToken>,
    /// A lease whose run reports no new node for this long (a stuck or
    /// hostile worker that still heartbeats) is revoked, and its task runs
    /// elsewhere.
    pub stall_timeout: Duration,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            heartbeat_interval: Duration::from_secs(1),
            lease_timeout: Duration::from_secs(5),
            token: None,
            stall_timeout: Duration::from_secs(30),
        }
    }
}

/// How often a session looks at its leases' jobs (stopping, stalled,
/// others waiting, idle workers elsewhere).
const TICK: Duration = Duration::from_millis(20);
/// How often a session with an idle slot looks for a task unasked: a
/// safety net, since it is woken when one is queued.
const IDLE_LOOK: Duration = Duration::from_millis(500);
/// How long a remote run keeps its slot while another job waits. Longer
/// than the local time slice: asking costs a round trip.
const REMOTE_SLICE: Duration = Duration::from_millis(50);
/// Problems a worker keeps; the session mirrors the worker's cache (both
/// see the same leases in the same order) to know what to send.
pub const PROBLEM_CACHE: usize = 16;
/// The largest message either side accepts (a problem's text).
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The gRPC service remote workers connect to.
pub struct CoordinatorApi {
    pool: Arc<Pool>,
    config: ClusterConfig,
    next_lease: Arc<AtomicU64>,
    next_worker: AtomicU64,
}

/// Where this process's lease ids start: from the clock, in steps of 2^32.
fn first_lease_id() -> u64 {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (seconds & 0x7fff_ffff) << 32 | 1
}

impl CoordinatorApi {
    pub fn new(pool: Arc<Pool>, config: ClusterConfig) -> CoordinatorApi {
        CoordinatorApi {
            pool,
            config,
            // Lease ids of a restarted coordinator never meet its previous
            // life's: a worker still holding an old lease cannot report on
            // a new one (leases are also bound to their session).
            next_lease: Arc::new(AtomicU64::new(first_lease_id())),
            next_worker: AtomicU64::new(1),
        }
    }

    pub fn into_server(self) -> coordinator_server::CoordinatorServer<CoordinatorApi> {
        coordinator_server::CoordinatorServer::new(self)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }
}

type OutStream =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::CoordinatorMessage, Status>> + Send>>;

#[tonic::async_trait]
impl coordinator_server::Coordinator for CoordinatorApi {
    type WorkStream = OutStream;

    async fn work(
        &self,
        request: Request<Streaming<pb::WorkerMessage>>,
    ) -> Result<Response<OutStream>, Status> {
        let peer = request
            .remote_addr()
            .map_or_else(|| "unknown".to_string(), |a| a.to_string());
        if let Some(token) = &self.config.token {
            let header = request
                .metadata()
                .get("authorization")
                .map(|v| v.as_bytes());
            if !token.admits(header) {
                metrics::counter!("xccd_worker_auth_failures_total").increment(1);
                tracing::warn!(%peer, "a worker without the right token was refused");
                return Err(Status::unauthenticated(
                    "this coordinator takes workers that present its worker token \
                     (authorization: Bearer TOKEN)",
                ));
            }
        }
        let mut inbound = request.into_inner();
        let first = tokio::time::timeout(self.config.lease_timeout, inbound.message()).await;
        let hello = match first {
            Ok(Ok(Some(pb::WorkerMessage {
                kind: Some(In::Hello(hello)),
            }))) => hello,
            Ok(Err(status)) => return Err(status),
            Err(_) => {
                return Err(Status::deadline_exceeded(
                    "no Hello from the worker in time",
                ))
            }
            _ => {
                return Err(Status::invalid_argument(
                    "the first message must be a Hello",
                ))
            }
        };
        if hello.protocol != pb::PROTOCOL_VERSION {
            return Err(Status::failed_precondition(format!(
                "hello.protocol: this coordinator speaks protocol {}, the worker {}; run the same xccd version on both",
                pb::PROTOCOL_VERSION,
                hello.protocol
            )));
        }
        if !(1..=4096).contains(&hello.threads) {
            return Err(Status::invalid_argument(format!(
                "hello.threads: {} is not in 1..=4096",
                hello.threads
            )));
        }
        let number = self.next_worker.fetch_add(1, Ordering::SeqCst);
        let name = if hello.name.is_empty() {
            peer
        } else {
            hello.name.chars().take(100).collect()
        };
        let id = format!("worker-{number}");
        let (tx, rx) = mpsc::channel(256);
        let welcome = pb::CoordinatorMessage {
            kind: Some(Out::Welcome(pb::Welcome {
                worker_id: id.clone(),
                heartbeat_interval_ms: self.config.heartbeat_interval.as_millis() as u32,
                lease_timeout_ms: self.config.lease_timeout.as_millis() as u32,
            })),
        };
        tx.send(Ok(welcome))
            .await
            .map_err(|_| Status::cancelled("worker gone"))?;
        let session = Session::new(
            self.pool.clone(),
            self.config.clone(),
            self.next_lease.clone(),
            (id, name),
            hello.threads as usize,
            tx,
        );
        tokio::spawn(session.run(inbound));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

/// A lease as its session keeps it.
struct Lease {
    job: Arc<Job>,
    epoch: u32,
    /// The books of the run: what it delivered and gave away.
    ledger: Ledger,
    /// Whether the run reports each solution's options (else counts).
    want_solutions: bool,
    /// What was last asked of the run, so as not to ask twice.
    asked: AskKind,
    started: Instant,
    /// Ended by the coordinator (job stopping, no progress); the slot
    /// stays busy until the worker reports the run's end.
    revoked: bool,
    /// The most nodes the run reported, and when that number last grew.
    nodes: u64,
    progressed: Instant,
    /// The most nodes the run reported between two heartbeats: how far
    /// past its last report it may be (see [`Lease::point`]).
    step: u64,
    /// The part of the tree the run may report solutions from, built at its
    /// first solutions (`Some(None)`: a problem of Algorithm M, unchecked).
    region: Option<Option<Region>>,
}

impl Lease {
    /// Where the run was lost, as far as its heartbeats tell, for the poison
    /// rule ([`Ledger::lose`]): `broke_now` when the connection just broke
    /// (a worker killed or crashed), so that the nodes it ran since its last
    /// report can be estimated from its rate (within 30%, as rates vary);
    /// else (silent, stalled) anywhere up to a heartbeat's step past it.
    /// Nodes are published at polls: a poll's worth more.
    fn point(&self, poll_nodes: u64, broke_now: bool) -> RunPoint {
        let last = self.nodes;
        if last == 0 {
            return RunPoint::default();
        }
        let ran = self.progressed.duration_since(self.started).as_secs_f64();
        let step = self.step.saturating_add(poll_nodes);
        if !broke_now || ran <= 0.0 {
            return RunPoint {
                low: last,
                high: last.saturating_add(step),
            };
        }
        let since = (last as f64 / ran) * self.progressed.elapsed().as_secs_f64();
        RunPoint {
            low: last.saturating_add((since * 0.7) as u64),
            high: last
                .saturating_add((since * 1.3) as u64)
                .saturating_add(poll_nodes),
        }
    }
}

/// Why a session ended.
enum End {
    /// The worker closed its stream (drained or stopping).
    Closed,
    /// The connection broke.
    Broken(Status),
    /// The worker was silent past the lease timeout.
    Silent,
    /// The worker broke the protocol.
    Protocol(String),
    /// The coordinator is shutting down.
    Shutdown,
}

struct Session {
    pool: Arc<Pool>,
    config: ClusterConfig,
    next_lease: Arc<AtomicU64>,
    id: String,
    name: String,
    slots: usize,
    /// Slots holding a lease, revoked ones included until their end.
    busy: usize,
    leases: HashMap<u64, Lease>,
    /// Digests of the problems the worker holds, least recently used first.
    problems: VecDeque<Vec<u8>>,
    draining: bool,
    /// A lease was granted while none was held: the looks start over.
    first_lease: bool,
    last_seen: Instant,
    last_give_ask: Instant,
    /// Leases named in reports that this session does not hold.
    fenced: Vec<pb::LeaseRef>,
    tx: mpsc::Sender<Result<pb::CoordinatorMessage, Status>>,
}

impl Session {
    fn new(
        pool: Arc<Pool>,
        config: ClusterConfig,
        next_lease: Arc<AtomicU64>,
        (id, name): (String, String),
        slots: usize,
        tx: mpsc::Sender<Result<pb::CoordinatorMessage, Status>>,
    ) -> Session {
        Session {
            pool,
            config,
            next_lease,
            id,
            name,
            slots,
            busy: 0,
            leases: HashMap::new(),
            problems: VecDeque::new(),
            draining: false,
            first_lease: false,
            last_seen: Instant::now(),
            last_give_ask: Instant::now()
                .checked_sub(TICK)
                .unwrap_or_else(Instant::now),
            fenced: Vec::new(),
            tx,
        }
    }

    /// Serves the worker until its stream ends, it falls silent, it breaks
    /// the protocol or the pool shuts down. Generic over the stream so that
    /// tests can drive it by hand, in paused time.
    async fn run<S>(mut self, mut inbound: S)
    where
        S: tokio_stream::Stream<Item = Result<pb::WorkerMessage, Status>> + Unpin,
    {
        use tokio_stream::StreamExt;
        tracing::info!(worker = %self.id, name = %self.name, slots = self.slots, "worker joined");
        metrics::gauge!("xccd_remote_workers").increment(1.0);
        self.pool.remote_joined(self.slots);
        // Only a session holding leases looks at them every tick; an idle
        // one sleeps until work comes (sessions are woken one by one as
        // tasks are queued, see `fill`) or its worker's silence would pass
        // the lease timeout: a thousand idle workers cost next to nothing.
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut idle_look = tokio::time::interval(IDLE_LOOK);
        idle_look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let silence = tokio::time::sleep(self.config.lease_timeout);
        tokio::pin!(silence);
        // Kept across turns of the loop: a session registers with the
        // pool's notifier (shared by every session) once per wake-up, not
        // once per message.
        let pool = self.pool.clone();
        let police = pool.remote_police();
        tokio::pin!(police);
        let end = loop {
            if self.pool.is_shutting_down() {
                break End::Shutdown;
            }
            if let Err(end) = self.fill().await {
                break end;
            }
            if std::mem::take(&mut self.first_lease) {
                // A lease that ends within a tick is never looked at: with
                // tiny leases, a thousand sessions would otherwise look 50
                // times a second each.
                tick.reset();
            }
            let holding = !self.leases.is_empty();
            let wants_work = self.busy < self.slots && !self.draining;
            let step = tokio::select! {
                message = inbound.next() => match message.transpose() {
                    Ok(Some(message)) => {
                        self.last_seen = Instant::now();
                        match self.handle(message).await {
                            Ok(()) => self.revoke_fenced().await,
                            Err(end) => Err(end),
                        }
                    }
                    Ok(None) => Err(End::Closed),
                    Err(status) => Err(End::Broken(status)),
                },
                () = &mut silence => {
                    if self.last_seen.elapsed() > self.config.lease_timeout {
                        Err(End::Silent)
                    } else {
                        let deadline = self.last_seen + self.config.lease_timeout;
                        silence.as_mut().reset(deadline + Duration::from_millis(1));
                        Ok(())
                    }
                }
                _ = tick.tick(), if holding => self.police().await,
                () = self.pool.remote_work(), if wants_work => Ok(()),
                _ = idle_look.tick(), if wants_work => Ok(()),
                () = &mut police, if holding || self.draining => {
                    police.set(pool.remote_police());
                    self.police().await
                }
                () = self.tx.closed() => Err(End::Broken(Status::cancelled("the worker stopped reading"))),
            };
            if let Err(end) = step {
                break end;
            }
        };
        self.close(end).await;
    }

    /// Tells the worker to stop runs on leases it does not hold (any more).
    async fn revoke_fenced(&mut self) -> Result<(), End> {
        for lease in std::mem::take(&mut self.fenced) {
            self.send(Out::Ask(pb::Ask {
                lease: Some(lease),
                kind: AskKind::Revoke as i32,
            }))
            .await?;
        }
        Ok(())
    }

    /// Gives idle slots a task each, while the pool has ready ones.
    async fn fill(&mut self) -> Result<(), End> {
        let mut took = false;
        while self.busy < self.slots && !self.draining {
            let id = self.next_lease.fetch_add(1, Ordering::SeqCst);
            let Some((job, work, spent_nodes)) = self.pool.take_remote(id) else {
                return Ok(());
            };
            took = true;
            self.busy += 1;
            let wire = job
                .wire
                .get_or_init(|| {
                    Arc::new(pb::wire_problem(job.searched(), job.spec.puzzle.as_ref()))
                })
                .clone();
            if !self.touch_problem(&wire.digest) {
                self.send(Out::Problem((&*wire).into())).await?;
            }
            let spec = job.run_spec(&work, spent_nodes, self.pool.poll_nodes());
            let message = pb::Lease {
                lease: Some(pb::LeaseRef {
                    id,
                    epoch: work.attempts,
                }),
                job: job.id,
                problem_digest: wire.digest.clone(),
                task: Some((&work.task).into()),
                skip: work.skip,
                want_solutions: spec.want_solutions,
                batch_size: u32::try_from(spec.batch_size).unwrap_or(u32::MAX),
                limit: spec.limit,
                max_nodes: spec.max_nodes,
                poll_nodes: spec.poll_interval,
                engine: job.spec.engine.name().to_string(),
            };
            tracing::debug!(worker = %self.id, lease = id, job = job.id, level = work.task.level(), skip = work.skip, "lease granted");
            self.first_lease |= self.leases.is_empty();
            self.leases.insert(
                id,
                Lease {
                    job,
                    epoch: work.attempts,
                    ledger: Ledger::new(work),
                    want_solutions: spec.want_solutions,
                    asked: AskKind::Unspecified,
                    started: Instant::now(),
                    revoked: false,
                    nodes: 0,
                    progressed: Instant::now(),
                    step: 0,
                    region: None,
                },
            );
            self.send(Out::Lease(message)).await?;
        }
        if took {
            // Full, and woken perhaps for more than it could take.
            self.pool.pass_remote_wake();
        }
        Ok(())
    }

    /// Marks a problem as the most recently used; false if the worker does
    /// not have it (it is then counted as sent).
    fn touch_problem(&mut self, digest: &[u8]) -> bool {
        if self.problems.back().is_some_and(|d| d == digest) {
            return true;
        }
        let held = match self.problems.iter().position(|d| d == digest) {
            Some(at) => {
                self.problems.remove(at);
                true
            }
            None => false,
        };
        self.problems.push_back(digest.to_vec());
        if self.problems.len() > PROBLEM_CACHE {
            self.problems.pop_front();
        }
        held
    }

    async fn send(&self, kind: Out) -> Result<(), End> {
        self.tx
            .send(Ok(pb::CoordinatorMessage { kind: Some(kind) }))
            .await
            .map_err(|_| End::Broken(Status::cancelled("the worker's stream is closed")))
    }

    async fn ask(&mut self, id: u64, kind: AskKind) -> Result<(), End> {
        let Some(lease) = self.leases.get_mut(&id) else {
            return Ok(());
        };
        lease.asked = kind;
        let epoch = lease.epoch;
        self.send(Out::Ask(pb::Ask {
            lease: Some(pb::LeaseRef { id, epoch }),
            kind: kind as i32,
        }))
        .await
    }

    /// The lease a report names, if this session holds it under that
    /// epoch and has not revoked it. Anything else is fenced off.
    fn live(&mut self, lease: Option<&pb::LeaseRef>) -> Option<(u64, &mut Lease)> {
        let lease_ref = lease?;
        let held = self
            .leases
            .get(&lease_ref.id)
            .map(|lease| lease.epoch == lease_ref.epoch && !lease.revoked);
        if held != Some(true) {
            metrics::counter!("xccd_fenced_reports_total").increment(1);
            tracing::debug!(worker = %self.id, lease = lease_ref.id, "report on a lease not held: ignored");
            if held.is_none() {
                self.fenced.push(*lease_ref);
            }
            return None;
        }
        let lease = self.leases.get_mut(&lease_ref.id).expect("held");
        Some((lease_ref.id, lease))
    }

    async fn handle(&mut self, message: pb::WorkerMessage) -> Result<(), End> {
        match message.kind {
            Some(In::Heartbeat(heartbeat)) => {
                for progress in heartbeat.leases {
                    let Some((id, lease)) = self.live(progress.lease.as_ref()) else {
                        continue;
                    };
                    if progress.nodes > lease.nodes {
                        lease.step = lease.step.max(progress.nodes - lease.nodes);
                        lease.nodes = progress.nodes;
                        lease.progressed = Instant::now();
                    }
                    let job = lease.job.clone();
                    self.pool
                        .remote_progress(id, progress.done_weight, progress.nodes);
                    if let Some(max) = job.spec.max_nodes {
                        if self.pool.spent_nodes(&job) >= max {
                            job.request_stop(EndReason::NodeLimit);
                        }
                    }
                }
                Ok(())
            }
            Some(In::Found(found)) => self.found(found),
            Some(In::GaveAway(gave)) => {
                let Some(task) = gave.task else {
                    return Err(End::Protocol("gave_away.task is missing".into()));
                };
                let Some((_, lease)) = self.live(gave.lease.as_ref()) else {
                    return Ok(());
                };
                // A node that exists, before the ledger records the cut.
                let task: xcc::Task = task.into();
                lease
                    .job
                    .with_checker(|solver| check_task(solver, &task))
                    .map_err(|e| End::Protocol(format!("gave_away: {e}")))?;
                let task = lease
                    .ledger
                    .gave_away(task, gave.found)
                    .map_err(|e| End::Protocol(format!("gave_away: {e}")))?;
                let job = lease.job.clone();
                self.pool.remote_gave_away(&job, task);
                Ok(())
            }
            Some(In::Ended(ended)) => self.ended(ended),
            Some(In::Draining(_)) => {
                tracing::info!(worker = %self.id, "worker draining");
                self.draining = true;
                Ok(())
            }
            Some(In::Hello(_)) => Err(End::Protocol("a second Hello".into())),
            None => Err(End::Protocol("a message with no content".into())),
        }
    }

    /// Delivers the solutions of a report that are new, exactly once,
    /// after checking that each is a solution.
    fn found(&mut self, found: pb::Found) -> Result<(), End> {
        let Some((_, lease)) = self.live(found.lease.as_ref()) else {
            return Ok(());
        };
        let listed = found.solutions.len() as u64;
        if (lease.want_solutions && listed != found.count) || (!lease.want_solutions && listed > 0)
        {
            return Err(End::Protocol(format!(
                "found: {listed} solutions listed for a count of {} on a lease that wants {}",
                found.count,
                if lease.want_solutions {
                    "solutions"
                } else {
                    "counts"
                }
            )));
        }
        let job = lease.job.clone();
        let mut solutions: Solutions = found.solutions.iter().map(|s| &s.indices).collect();
        if !solutions.is_empty() {
            let mut verifier = xcc::problem::Verifier::new(job.searched());
            for (k, options) in solutions.iter().enumerate() {
                crate::run::verify_solution(
                    &mut verifier,
                    job.spec.condition.as_deref(),
                    found.first.saturating_add(k as u64),
                    options,
                )
                .map_err(|e| End::Protocol(format!("found: {e}")))?;
            }
        }
        if !solutions.is_empty() {
            // Solutions of another task's part of the tree would be
            // delivered twice: each must lie in this lease's part.
            let task = &lease.ledger.work().task;
            let region = job.with_checker(|solver| match &mut lease.region {
                Some(region) => {
                    if let Some(region) = region {
                        region.cut(solver, &task.cuts)?;
                    }
                    Ok(())
                }
                None => {
                    lease.region = Some(Region::new(solver, task)?);
                    Ok(())
                }
            });
            region.map_err(|e: crate::xcc::TaskError| {
                End::Protocol(format!("found: the leased task: {e}"))
            })?;
            if let Some(Some(region)) = &lease.region {
                let mut options = Vec::new();
                for (k, solution) in solutions.iter().enumerate() {
                    options.clear();
                    options.extend(solution.iter().map(|&o| o as usize));
                    if !region.contains(&options) {
                        return Err(End::Protocol(format!(
                            "found: solution {} lies outside the leased task",
                            found.first.saturating_add(k as u64)
                        )));
                    }
                }
            }
        }
        let known = lease
            .ledger
            .found(found.first, found.count)
            .map_err(|e| End::Protocol(format!("found: {e}")))?;
        let fresh = found.count - known;
        if fresh == 0 {
            return Ok(());
        }
        let solutions = solutions.split_off(known as usize);
        // Already found: taken over the stream buffer's capacity, which then
        // stalls the job until its consumer has made room (see `police`).
        job.deliver(
            Batch {
                first: found.first + known,
                count: fresh,
                solutions,
            },
            true,
        );
        Ok(())
    }

    /// Books the end of a run the worker reports.
    fn ended(&mut self, mut ended: pb::TaskEnded) -> Result<(), End> {
        let Some(lease_ref) = ended.lease else {
            return Err(End::Protocol("ended.lease is missing".into()));
        };
        let held = self
            .leases
            .get(&lease_ref.id)
            .is_some_and(|lease| lease.epoch == lease_ref.epoch);
        if !held {
            metrics::counter!("xccd_fenced_reports_total").increment(1);
            return Ok(());
        }
        let lease = &self.leases[&lease_ref.id];
        let (settlement, stats) = if lease.revoked {
            (Settlement::default(), xcc::Stats::default())
        } else {
            let end = pb::run_end(&mut ended).ok_or_else(|| {
                End::Protocol(format!(
                    "ended.status: {} is not a run status",
                    ended.status
                ))
            })?;
            if end == crate::run::RunEnd::Released && !ended.error.is_empty() {
                // The worker lacked the problem: send it again.
                tracing::warn!(worker = %self.id, error = %ended.error, "lease released");
                if let Some(wire) = lease.job.wire.get() {
                    let digest = wire.digest.clone();
                    self.problems.retain(|d| *d != digest);
                }
            }
            if let crate::run::RunEnd::Checkpointed(remaining) = &end {
                for task in remaining {
                    lease
                        .job
                        .with_checker(|solver| check_task(solver, task))
                        .map_err(|e| End::Protocol(format!("ended.remaining: {e}")))?;
                }
            }
            let settlement = lease
                .ledger
                .settle(end, ended.found)
                .map_err(|e| End::Protocol(format!("ended: {e}")))?;
            let stats = ended
                .statistics
                .as_ref()
                .map(xcc::Stats::from)
                .unwrap_or_default();
            (settlement, stats)
        };
        let lease = self.leases.remove(&lease_ref.id).expect("held");
        self.busy -= 1;
        if lease.revoked {
            // Booked when it was revoked.
            self.pool.remote_slot_freed();
        } else {
            if let Some(failure) = &settlement.failure {
                tracing::warn!(worker = %self.id, name = %self.name, job = lease.job.id, error = failure.message(), "a remote run failed");
            }
            self.pool
                .finish_remote_run(lease_ref.id, &lease.job, &stats, settlement);
        }
        Ok(())
    }

    /// Looks after the running leases: revokes those of stopping jobs, asks
    /// for checkpoints when a job's buffer is full or another job waits,
    /// and for a give-away when a slot somewhere is idle.
    async fn police(&mut self) -> Result<(), End> {
        // Decided over all the leases first, then sent: nothing is
        // allocated when there is nothing to ask (most looks).
        let mut asks: Vec<(u64, AskKind)> = Vec::new();
        let mut give_to = None;
        for (&id, lease) in self.leases.iter_mut() {
            if lease.revoked {
                continue;
            }
            let job = &lease.job;
            if job.is_stopping() {
                lease.revoked = true;
                self.pool
                    .end_remote_run(id, job, &xcc::Stats::default(), Settlement::default());
                asks.push((id, AskKind::Revoke));
                continue;
            }
            if lease.progressed.elapsed() > self.config.stall_timeout {
                // Heartbeats without work: the task goes to another worker.
                metrics::counter!("xccd_stalled_leases_total").increment(1);
                tracing::warn!(worker = %self.id, name = %self.name, lease = id, job = job.id, nodes = lease.nodes, "a lease made no progress: revoked, its task runs elsewhere");
                let lost = lease.ledger.lose(
                    self.pool.max_attempts(),
                    lease.point(self.pool.poll_nodes(), false),
                );
                lease.revoked = true;
                self.pool
                    .end_remote_run(id, job, &xcc::Stats::default(), lost);
                asks.push((id, AskKind::Revoke));
                continue;
            }
            let stalled = job.snapshot_due() || job.output.as_ref().is_some_and(|o| o.is_stalled());
            let slice_over =
                lease.started.elapsed() >= REMOTE_SLICE && self.pool.others_waiting(job);
            // A batch lease also checkpoints at once, without waiting for
            // its slice, when an interactive task waits for a slot; the
            // check books it as yielding, so that no more leases are asked
            // than there are such tasks (whatever else it is asked for).
            if lease.asked != AskKind::Checkpoint
                && (self.pool.remote_should_yield(id, job) || stalled || slice_over)
            {
                asks.push((id, AskKind::Checkpoint));
                continue;
            }
            if lease.asked == AskKind::Unspecified || lease.asked == AskKind::GiveAway {
                let older = give_to.is_none_or(|(_, started)| lease.started < started);
                if older {
                    give_to = Some((id, lease.started));
                }
            }
        }
        for (id, kind) in asks {
            self.ask(id, kind).await?;
        }
        if let Some((id, _)) = give_to {
            if self.pool.is_hungry() && self.last_give_ask.elapsed() >= TICK {
                self.last_give_ask = Instant::now();
                self.ask(id, AskKind::GiveAway).await?;
            }
        }
        Ok(())
    }

    /// Ends the session: every lease still held is lost.
    async fn close(mut self, end: End) {
        let live: Vec<(u64, Lease)> = self.leases.drain().collect();
        let lost = live.iter().filter(|(_, l)| !l.revoked).count();
        let max_attempts = self.pool.max_attempts();
        let poll_nodes = self.pool.poll_nodes();
        // Silent: lost some time ago, at an unknown moment since the last
        // heartbeat; otherwise the stream broke (or closed) just now.
        let broke_now = !matches!(end, End::Silent);
        for (id, lease) in &live {
            if !lease.revoked {
                self.pool.end_remote_run(
                    *id,
                    &lease.job,
                    &xcc::Stats::default(),
                    lease
                        .ledger
                        .lose(max_attempts, lease.point(poll_nodes, broke_now)),
                );
            }
        }
        self.pool.remote_left(self.slots, self.slots - self.busy);
        metrics::gauge!("xccd_remote_workers").decrement(1.0);
        match end {
            End::Closed => {
                tracing::info!(worker = %self.id, name = %self.name, lost, "worker left");
            }
            End::Broken(status) => {
                tracing::warn!(worker = %self.id, name = %self.name, lost, error = %status.message(), "worker connection lost");
            }
            End::Silent => {
                tracing::warn!(worker = %self.id, name = %self.name, lost, "worker missed its heartbeats: leases revoked");
                let _ = self
                    .tx
                    .send(Err(Status::deadline_exceeded(
                        "no heartbeat within the lease timeout: leases revoked; reconnect",
                    )))
                    .await;
            }
            End::Shutdown => {
                let _ = self
                    .tx
                    .send(Err(Status::unavailable("the coordinator is shutting down")))
                    .await;
            }
            End::Protocol(error) => {
                // A report that cannot be right: nothing of it was delivered,
                // and the worker's leases run elsewhere.
                metrics::counter!("xccd_worker_reports_rejected_total").increment(1);
                tracing::warn!(worker = %self.id, name = %self.name, lost, %error, "worker report rejected: disconnected");
                let _ = self.tx.send(Err(Status::invalid_argument(error))).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The session's clock, in paused time: heartbeats keep leases however
    //! long a task runs, and silence loses them after exactly the timeout.

    use super::*;
    use crate::service::job::JobSpec;
    use crate::service::PoolConfig;
    use crate::xcc::dlx_format;

    const QUEENS4: &str = "R1 R2 R3 R4 C1 C2 C3 C4 | A2 A3 A4 A5 A6 B0 B1 B2 B3 B4 B5 B6
R1 C1 A2 B3
R1 C2 A3 B2
R1 C3 A4 B1
R1 C4 A5 B0
R2 C1 A3 B4
R2 C2 A4 B3
R2 C3 A5 B2
R2 C4 A6 B1
R3 C1 A4 B5
R3 C2 A5 B4
R3 C3 A6 B3
R3 C4 A2 B2
R4 C1 A5 B6
R4 C2 A6 B5
R4 C3 A2 B4
R4 C4 A3 B3
";

    struct Harness {
        pool: Arc<Pool>,
        to_session: mpsc::Sender<Result<pb::WorkerMessage, Status>>,
        from_session: mpsc::Receiver<Result<pb::CoordinatorMessage, Status>>,
        session: tokio::task::JoinHandle<()>,
    }

    fn harness(config: ClusterConfig) -> Harness {
        let pool = Arc::new(Pool::new(PoolConfig {
            threads: 0,
            ..PoolConfig::default()
        }));
        let (tx, from_session) = mpsc::channel(64);
        let (to_session, inbound) = mpsc::channel(64);
        let session = Session::new(
            pool.clone(),
            config,
            Arc::new(AtomicU64::new(1)),
            ("worker-1".into(), "test".into()),
            1,
            tx,
        );
        let session = tokio::spawn(session.run(ReceiverStream::new(inbound)));
        Harness {
            pool,
            to_session,
            from_session,
            session,
        }
    }

    impl Harness {
        fn submit(&self) {
            let problem = dlx_format::parse(QUEENS4).unwrap();
            self.pool
                .submit(Arc::new(problem), JobSpec::default())
                .unwrap();
        }

        async fn lease(&mut self) -> pb::LeaseRef {
            loop {
                match self.from_session.recv().await {
                    Some(Ok(pb::CoordinatorMessage {
                        kind: Some(Out::Lease(lease)),
                    })) => return lease.lease.unwrap(),
                    Some(Ok(_)) => continue,
                    other => panic!("expected a lease, got {other:?}"),
                }
            }
        }

        /// A heartbeat reporting `nodes` explored by the lease's run.
        async fn heartbeat(&self, lease: pb::LeaseRef, nodes: u64) {
            let beat = pb::WorkerMessage {
                kind: Some(In::Heartbeat(pb::Heartbeat {
                    leases: vec![pb::LeaseProgress {
                        lease: Some(lease),
                        done_weight: 0.5,
                        nodes,
                    }],
                })),
            };
            self.to_session.send(Ok(beat)).await.unwrap();
        }

        /// Waits for the session to end; the status it ended with.
        async fn end(&mut self) -> Status {
            loop {
                match self.from_session.recv().await {
                    Some(Err(status)) => return status,
                    Some(Ok(_)) => continue,
                    None => panic!("the session ended without a status"),
                }
            }
        }
    }

    fn config() -> ClusterConfig {
        ClusterConfig {
            heartbeat_interval: Duration::from_secs(1),
            lease_timeout: Duration::from_secs(5),
            token: None,
            stall_timeout: Duration::from_secs(30),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn heartbeats_keep_a_lease_and_silence_loses_it_after_the_timeout() {
        let mut h = harness(config());
        h.submit();
        let lease = h.lease().await;
        // An hour of heartbeats of a run that works: the lease holds.
        for second in 0..3600 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            h.heartbeat(lease, 1000 * (second + 1)).await;
        }
        assert_eq!(h.pool.tasks_lost(), 0);
        assert_eq!(h.pool.busy_workers(), 1);
        assert_eq!(h.pool.queued_tasks(), 0);
        // Then silence.
        let silent = Instant::now();
        let status = h.end().await;
        let waited = silent.elapsed();
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
        assert!(
            waited > Duration::from_secs(5) && waited <= Duration::from_secs(5) + 2 * TICK,
            "lost after {waited:?}"
        );
        assert_eq!(h.pool.tasks_lost(), 1);
        assert_eq!(h.pool.queued_tasks(), 1, "the task is queued again");
        assert_eq!(h.pool.remote_slots(), 0);
        h.session.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn heartbeats_just_inside_the_timeout_keep_a_lease_and_a_late_one_does_not() {
        let mut h = harness(config());
        h.submit();
        let lease = h.lease().await;
        // Heartbeats just inside the timeout keep the lease.
        for beat in 0..10 {
            tokio::time::sleep(Duration::from_millis(4900)).await;
            h.heartbeat(lease, 1000 * (beat + 1)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(h.pool.tasks_lost(), 0);
        // One just outside loses it, and the late heartbeat changes nothing.
        tokio::time::sleep(Duration::from_millis(5200)).await;
        let _ = h.to_session.try_send(Ok(pb::WorkerMessage {
            kind: Some(In::Heartbeat(pb::Heartbeat::default())),
        }));
        let status = h.end().await;
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
        assert_eq!(h.pool.tasks_lost(), 1);
        h.session.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn heartbeats_without_progress_lose_the_lease_after_the_stall_timeout() {
        let mut h = harness(config());
        h.submit();
        let lease = h.lease().await;
        // Heartbeats on time, but the run explores nothing.
        let start = Instant::now();
        while h.pool.tasks_lost() == 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            h.heartbeat(lease, 10).await;
            assert!(start.elapsed() < Duration::from_secs(40), "never revoked");
        }
        let waited = start.elapsed();
        assert!(
            waited > Duration::from_secs(30) && waited <= Duration::from_secs(32),
            "revoked after {waited:?}"
        );
        // The task is queued again, for another worker; the session lives.
        assert_eq!(h.pool.queued_tasks(), 1);
        assert_eq!(h.pool.remote_slots(), 1);
    }
}
