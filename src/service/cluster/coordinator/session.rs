//! One connected worker's session: its loop (messages, heartbeats and
//! silence, wake-ups), the leases it holds and their books ([`Ledger`]),
//! the problems the worker holds, and the end of a session (its leases
//! lost).
//!
//! It must not decide what a lease is asked (see [`super::steering`]) nor
//! trust a report it can check (see [`super::reports`]).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tonic::Status;

use super::super::roster::{RosterRow, WorkerRow};
use super::{reports, ClusterConfig, HOLDING_LOOK, IDLE_LOOK, PROBLEM_CACHE, REMOTE_SLICE, TICK};
use crate::run::{check_task, Batch, Ledger, Region, RunPoint, Settlement};
use crate::service::cluster::audit::{Auditor, Ended, Finished};
use crate::service::cluster::fingerprint::Fingerprint;
use crate::service::cluster::proto::{
    self as pb, coordinator_message::Kind as Out, worker_message::Kind as In, AskKind,
};
use crate::service::job::Job;
use crate::service::metrics as metric;
use crate::service::pool::Pool;
use crate::xcc;

/// A lease as its session keeps it.
pub(super) struct Lease {
    pub(super) job: Arc<Job>,
    pub(super) epoch: u32,
    /// The books of the run: what it delivered and gave away.
    pub(super) ledger: Ledger,
    /// Whether the run reports each solution's options (else counts).
    pub(super) want_solutions: bool,
    /// What was last asked of the run, so as not to ask twice.
    pub(super) asked: AskKind,
    pub(super) started: Instant,
    /// Ended by the coordinator (job stopping, no progress); the slot
    /// stays busy until the worker reports the run's end.
    pub(super) revoked: bool,
    /// The most nodes the run reported, and when that number last grew.
    pub(super) nodes: u64,
    pub(super) progressed: Instant,
    /// The most nodes the run reported between two heartbeats: how far
    /// past its last report it may be (see [`Lease::point`]).
    pub(super) step: u64,
    /// The part of the tree the run may report solutions from, built at its
    /// first solutions.
    pub(super) region: Option<Region>,
    /// The fingerprint of the solutions it delivered, for its audit (see
    /// [`crate::service::cluster::fingerprint`]).
    pub(super) fingerprint: Fingerprint,
    /// When the session is next to look at it, unless woken before: the
    /// earliest moment a look could decide something nothing signals (see
    /// [`Session::run`]).
    pub(super) look_at: Instant,
}

impl Lease {
    /// Where the run was lost, as far as its heartbeats tell, for the poison
    /// rule ([`Ledger::lose`]): `broke_now` when the connection just broke
    /// (a worker killed or crashed), so that the nodes it ran since its last
    /// report can be estimated from its rate (within 30%, as rates vary);
    /// else (silent, stalled) anywhere up to a heartbeat's step past it.
    /// Nodes are published at polls: a poll's worth more.
    pub(super) fn point(&self, poll_interval: u64, broke_now: bool) -> RunPoint {
        let last = self.nodes;
        if last == 0 {
            return RunPoint::default();
        }
        let ran = self.progressed.duration_since(self.started).as_secs_f64();
        let step = self.step.saturating_add(poll_interval);
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
                .saturating_add(poll_interval),
        }
    }
}

/// Why a session ended.
pub(super) enum End {
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
    /// An audit caught the worker lying (see [`crate::service::cluster::audit`]).
    Barred,
}

pub(super) struct Session {
    pub(super) pool: Arc<Pool>,
    pub(super) config: ClusterConfig,
    pub(super) next_lease: Arc<AtomicU64>,
    pub(super) id: String,
    pub(super) name: String,
    pub(super) slots: usize,
    /// Slots holding a lease, revoked ones included until their end.
    pub(super) busy: usize,
    pub(super) leases: HashMap<u64, Lease>,
    /// Digests of the problems the worker holds, least recently used first.
    pub(super) problems: VecDeque<Vec<u8>>,
    pub(super) draining: bool,
    /// A report changed something a look decides on (a job's budget
    /// spent, its buffer full): look before the next message.
    pub(super) look_now: bool,
    /// When to look again for the session's one give-away ask (see
    /// [`super::steering::give_ask_due`]), while one is wanted.
    pub(super) give_look_at: Option<Instant>,
    pub(super) last_seen: Instant,
    pub(super) last_give_ask: Instant,
    /// A give-away came back since the last give-away ask.
    pub(super) give_answered: bool,
    /// Leases named in reports that this session does not hold.
    pub(super) fenced: Vec<pb::LeaseRef>,
    /// The session's key in the pool's roster, and the worker's address.
    pub(super) roster_key: u64,
    /// Its row there, once written.
    pub(super) roster_row: Option<RosterRow>,
    pub(super) address: String,
    /// Nodes of the runs that ended, and reports fenced off, for the roster.
    pub(super) ended_nodes: u64,
    pub(super) fenced_count: u64,
    pub(super) tx: mpsc::Sender<Result<pb::CoordinatorMessage, Status>>,
    pub(super) auditor: Arc<Auditor>,
    /// Ends the session when an audit catches its worker.
    pub(super) kick: Arc<tokio::sync::Notify>,
}

impl Session {
    pub(super) fn new(
        pool: Arc<Pool>,
        config: ClusterConfig,
        next_lease: Arc<AtomicU64>,
        (id, name): (String, String),
        slots: usize,
        tx: mpsc::Sender<Result<pb::CoordinatorMessage, Status>>,
        auditor: Arc<Auditor>,
    ) -> Session {
        let kick = auditor.joined(&id, &name);
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
            look_now: false,
            give_look_at: None,
            last_seen: Instant::now(),
            give_answered: false,
            last_give_ask: Instant::now()
                .checked_sub(TICK)
                .unwrap_or_else(Instant::now),
            fenced: Vec::new(),
            roster_key: 0,
            roster_row: None,
            address: String::new(),
            ended_nodes: 0,
            fenced_count: 0,
            tx,
            auditor,
            kick,
        }
    }

    /// Serves the worker until its stream ends, it falls silent, it breaks
    /// the protocol or the pool shuts down. Generic over the stream so that
    /// tests can drive it by hand, in paused time.
    pub(super) async fn run<S>(mut self, mut inbound: S)
    where
        S: tokio_stream::Stream<Item = Result<pb::WorkerMessage, Status>> + Unpin,
    {
        use tokio_stream::StreamExt;
        tracing::info!(worker = %self.id, name = %self.name, slots = self.slots, "worker joined");
        metrics::gauge!(metric::REMOTE_WORKERS).increment(1.0);
        self.pool.remote_joined(self.slots);
        let now = std::time::SystemTime::now();
        self.roster_row = Some(self.pool.roster().write(
            self.roster_key,
            WorkerRow {
                id: self.id.clone(),
                name: self.name.clone(),
                address: self.address.clone(),
                slots: self.slots,
                leases: 0,
                nodes: 0,
                joined: now,
                joined_at: std::time::Instant::now(),
                last_heartbeat: now,
                rejected_reports: 0,
            },
        ));
        // A session looks at its leases when woken (a job stopped, another
        // job's task became ready, a snapshot is due: `remote_steering`;
        // a slot went hungry and this session is the one to ask a
        // give-away: `remote_hunger`), when a report of its own calls for it
        // (`look_now`), and at the earliest time-based deadline of its
        // leases (`look_at`: a slice's end while another job waits, the
        // stall timeout, the give-away cadence, and a slow safety net), not
        // at a fixed interval: leases live longer with more workers, and a
        // look per lease per tick made the coordinator's cost per lease
        // grow with them. An idle session sleeps until work comes (sessions
        // are woken one by one as tasks are queued, see `fill`) or its
        // worker's silence would pass the lease timeout.
        let look = tokio::time::sleep(HOLDING_LOOK);
        tokio::pin!(look);
        let mut armed: Option<Instant> = None;
        let mut idle_look = tokio::time::interval(IDLE_LOOK);
        idle_look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let silence = tokio::time::sleep(self.config.lease_timeout);
        tokio::pin!(silence);
        // Kept across turns of the loop: a session registers with the
        // pool's notifier (shared by every session) once per wake-up, not
        // once per message.
        let pool = self.pool.clone();
        let steering = pool.remote_steering();
        tokio::pin!(steering);
        steering.as_mut().enable();
        let hunger = pool.remote_hunger();
        tokio::pin!(hunger);
        let mut hunger_armed = false;
        // When this session last passed a hunger wake-up on (see
        // `Pool::pass_hunger`).
        let mut passed_hunger = u64::MAX;
        let kick = self.kick.clone();
        let end = loop {
            if self.pool.is_shutting_down() {
                break End::Shutdown;
            }
            if self.leases.is_empty() && !self.draining {
                // About to hold leases: wake-ups from here on count (one
                // that granting a lease causes above all); those of the
                // idle time before do not.
                steering.set(pool.remote_steering());
                steering.as_mut().enable();
            }
            if let Err(end) = self.fill().await {
                break end;
            }
            let holding = !self.leases.is_empty();
            if holding != hunger_armed {
                // Armed only while holding leases: the pool wakes one
                // session per hungry slot, and one that has nothing to
                // ask must not take the wake-up. One that came before the
                // arming (the grant just made may have caused it) is kept
                // for it by the `Notify`; one that came to the dropped
                // future is passed on by it.
                hunger.set(pool.remote_hunger());
                if holding {
                    hunger.as_mut().enable();
                }
                hunger_armed = holding;
            }
            if std::mem::take(&mut self.look_now) && holding {
                metrics::counter!(metric::SESSION_LOOKS, "cause" => "report").increment(1);
                if let Err(end) = self.steer_leases().await {
                    break end;
                }
            }
            let due = if holding { self.look_due() } else { None };
            if due != armed {
                if let Some(at) = due {
                    look.as_mut().reset(at);
                }
                armed = due;
            }
            let wants_work = self.busy < self.slots && !self.draining;
            let step = tokio::select! {
                message = inbound.next() => match message.transpose() {
                    Ok(Some(message)) => {
                        self.last_seen = Instant::now();
                        let step = match self.handle(message).await {
                            Ok(()) => self.revoke_fenced().await,
                            Err(end) => Err(end),
                        };
                        self.write_roster();
                        step
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
                () = &mut look, if armed.is_some() => {
                    armed = None;
                    metrics::counter!(metric::SESSION_LOOKS, "cause" => "deadline").increment(1);
                    self.steer_leases().await.map(drop)
                }
                () = self.pool.remote_work(), if wants_work => Ok(()),
                _ = idle_look.tick(), if wants_work => Ok(()),
                () = &mut steering, if holding || self.draining => {
                    steering.set(pool.remote_steering());
                    steering.as_mut().enable();
                    metrics::counter!(metric::SESSION_LOOKS, "cause" => "steering").increment(1);
                    self.steer_leases().await.map(drop)
                }
                () = &mut hunger, if holding => {
                    hunger.set(pool.remote_hunger());
                    hunger.as_mut().enable();
                    metrics::counter!(metric::SESSION_LOOKS, "cause" => "hunger").increment(1);
                    match self.steer_leases().await {
                        Ok(true) => Ok(()),
                        Ok(false) => {
                            pool.pass_hunger(&mut passed_hunger);
                            Ok(())
                        }
                        Err(end) => Err(end),
                    }
                }
                () = self.tx.closed() => Err(End::Broken(Status::cancelled("the worker stopped reading"))),
                () = kick.notified() => Err(End::Barred),
            };
            if let Err(end) = step {
                break end;
            }
        };
        self.close(end).await;
    }

    /// When the session is next to look at its leases: the earliest of
    /// their deadlines and of the give-away cadence's.
    fn look_due(&self) -> Option<Instant> {
        self.leases
            .values()
            .filter(|lease| !lease.revoked)
            .map(|lease| lease.look_at)
            .chain(self.give_look_at)
            .min()
    }

    /// When a lease that goes on is next to be looked at, unless a wake-up
    /// comes first: at the end of its slice if another job waits already
    /// (another that starts to wait wakes the session), when it would be
    /// stuck, and at the latest after [`HOLDING_LOOK`].
    pub(super) fn next_look(
        pool: &Pool,
        job: &Job,
        started: Instant,
        progressed: Instant,
        stall_timeout: Duration,
    ) -> Instant {
        let now = Instant::now();
        let mut at =
            (now + HOLDING_LOOK).min(progressed + stall_timeout + Duration::from_millis(1));
        let slice_end = started + REMOTE_SLICE;
        if slice_end > now && pool.others_waiting(job) {
            at = at.min(slice_end);
        }
        at
    }

    /// Writes this session's row of the roster after a message.
    fn write_roster(&self) {
        let nodes = self.ended_nodes + self.leases.values().map(|l| l.nodes).sum::<u64>();
        let leases = self.leases.len();
        let rejected = self.fenced_count;
        let Some(roster_row) = &self.roster_row else {
            return;
        };
        roster_row.update(|row| {
            row.leases = leases;
            row.nodes = nodes;
            row.rejected_reports = rejected;
            row.last_heartbeat = std::time::SystemTime::now();
        });
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
    pub(super) async fn fill(&mut self) -> Result<(), End> {
        let mut took = false;
        let barred = match self.busy < self.slots && !self.draining {
            true => self.auditor.barred_jobs(&self.name),
            false => Vec::new(),
        };
        while self.busy < self.slots && !self.draining {
            let id = self.next_lease.fetch_add(1, Ordering::SeqCst);
            let Some((job, work, spent_nodes)) = self.pool.take_remote(id, &barred) else {
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
            let spec = job.run_spec(&work, spent_nodes, self.pool.poll_interval());
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
                traceparent: job.spec.traceparent.clone().unwrap_or_default(),
            };
            tracing::debug!(worker = %self.id, lease = id, job = job.id, level = work.task.level(), skip = work.skip, "lease granted");
            let now = Instant::now();
            let look_at = Self::next_look(&self.pool, &job, now, now, self.config.stall_timeout);
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
                    fingerprint: Fingerprint::default(),
                    look_at,
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

    pub(super) async fn ask(&mut self, id: u64, kind: AskKind) -> Result<(), End> {
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
            metrics::counter!(metric::FENCED_REPORTS).increment(1);
            self.fenced_count += 1;
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
                    // The job's node budget is the policy's, at a look now
                    // (which stops the job, waking the other sessions).
                    self.look_now |= lease.job.spec.max_nodes.is_some();
                    self.pool
                        .remote_progress(id, progress.done_weight, progress.nodes);
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
                self.give_answered = true;
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
    /// after checking them (see [`reports::check_found`]).
    fn found(&mut self, mut found: pb::Found) -> Result<(), End> {
        let audited = self.auditor.is_on();
        let Some((_, lease)) = self.live(found.lease.as_ref()) else {
            return Ok(());
        };
        let job = lease.job.clone();
        let mut solutions = reports::check_found(
            &mut found,
            lease.want_solutions,
            &job,
            &lease.ledger.work().task,
            &mut lease.region,
        )
        .map_err(End::Protocol)?;
        let known = lease
            .ledger
            .found(found.first, found.count)
            .map_err(|e| End::Protocol(format!("found: {e}")))?;
        let fresh = found.count - known;
        if fresh == 0 {
            return Ok(());
        }
        let solutions = solutions.split_off(known as usize);
        if audited {
            lease.fingerprint.add_all(&solutions);
        }
        // Already found: taken over the stream buffer's capacity, which then
        // stalls the job until its consumer has made room (see `steer_leases`,
        // at a look now: each session delivering to a full buffer looks).
        job.deliver(
            Batch {
                first: found.first + known,
                count: fresh,
                solutions,
            },
            true,
        );
        self.look_now |= crate::service::pool::stalled(&job);
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
            metrics::counter!(metric::FENCED_REPORTS).increment(1);
            self.fenced_count += 1;
            return Ok(());
        }
        let lease = &self.leases[&lease_ref.id];
        let mut audited: Option<Ended> = None;
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
            // Runs that ended or checkpointed are audited (a checkpointed
            // one by replaying it to its checkpoint, see `audit`).
            audited = match &end {
                crate::run::RunEnd::Exhausted => Some(Ended::Exhausted),
                crate::run::RunEnd::Checkpointed(remaining) => Some(Ended::Checkpointed {
                    remaining: remaining.clone(),
                }),
                _ => None,
            };
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
        self.ended_nodes += lease.nodes;
        self.busy -= 1;
        metrics::histogram!(metric::LEASE_ROUND_TRIP).record(lease.started.elapsed());
        if lease.revoked {
            // Booked when it was revoked.
            self.pool.remote_slot_freed();
        } else {
            if let Some(failure) = &settlement.failure {
                tracing::warn!(worker = %self.id, name = %self.name, job = lease.job.id, error = failure.message(), "a remote run failed");
            }
            // Recorded for the audits (and held open, if audited) before
            // it is booked: the job cannot end in between.
            let next = audited.map(|end| {
                let mut work = lease.ledger.work().clone();
                work.task.weight = settlement.finished_weight;
                let finished = Finished {
                    work,
                    delivered: lease.ledger.delivered(),
                    stats: stats.clone(),
                    counted: !lease.want_solutions,
                    fingerprint: lease.fingerprint,
                    end,
                };
                self.auditor.finished(&self.name, &lease.job, finished)
            });
            self.pool
                .finish_remote_run(lease_ref.id, &lease.job, &stats, settlement);
            if let Some(next) = next {
                self.auditor.go(next);
            }
        }
        Ok(())
    }

    /// Ends the session: every lease still held is lost.
    async fn close(mut self, end: End) {
        self.pool.roster().remove(self.roster_key);
        let live: Vec<(u64, Lease)> = self.leases.drain().collect();
        let lost = live.iter().filter(|(_, l)| !l.revoked).count();
        let max_attempts = self.pool.max_attempts();
        let poll_interval = self.pool.poll_interval();
        // Silent: lost some time ago, at an unknown moment since the last
        // heartbeat; otherwise the stream broke (or closed) just now.
        let broke_now = !matches!(end, End::Silent);
        for (id, lease) in &live {
            if !lease.revoked {
                let mut settlement = lease
                    .ledger
                    .lose(max_attempts, lease.point(poll_interval, broke_now));
                let skip = lease.ledger.work().skip;
                let delivered = lease.ledger.delivered();
                let mut next = None;
                if !lease.want_solutions && self.auditor.barred_from(&self.name, lease.job.id) {
                    // What a caught worker counted is not kept: its task
                    // counts again from where it was leased.
                    lease.job.withdraw(delivered - skip, &xcc::Stats::default());
                    for work in &mut settlement.requeue {
                        work.skip = skip;
                    }
                } else if delivered > skip {
                    // Its task goes on past what it delivered, which is
                    // audited as the rest (recorded, and held open if
                    // audited, before it is booked).
                    let finished = Finished {
                        work: lease.ledger.work().clone(),
                        delivered,
                        stats: xcc::Stats::default(),
                        counted: !lease.want_solutions,
                        fingerprint: lease.fingerprint,
                        end: Ended::Lost,
                    };
                    next = Some(self.auditor.finished(&self.name, &lease.job, finished));
                }
                self.pool
                    .end_remote_run(*id, &lease.job, &xcc::Stats::default(), settlement);
                if let Some(next) = next {
                    self.auditor.go(next);
                }
            }
        }
        self.auditor.left(&self.id);
        self.pool.remote_left(self.slots, self.slots - self.busy);
        metrics::gauge!(metric::REMOTE_WORKERS).decrement(1.0);
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
            End::Barred => {
                tracing::warn!(worker = %self.id, name = %self.name, lost, "an audit caught the worker: disconnected and barred");
                let _ = self
                    .tx
                    .send(Err(Status::permission_denied(
                        "an audit ran a lease of this worker again and got other numbers: the \
                         worker is barred and its leases are redone",
                    )))
                    .await;
            }
            End::Protocol(error) => {
                // A report that cannot be right: nothing of it was delivered,
                // and the worker's leases run elsewhere.
                metrics::counter!(metric::WORKER_REPORTS_REJECTED).increment(1);
                tracing::warn!(worker = %self.id, name = %self.name, lost, %error, "worker report rejected: disconnected");
                let _ = self.tx.send(Err(Status::invalid_argument(error))).await;
            }
        }
    }
}
