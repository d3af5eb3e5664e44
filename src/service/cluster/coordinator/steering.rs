//! What a session asks of its running leases, at each look: the pool's
//! [`policy`] decides, as it does for the local threads, and this
//! translates the decision into the protocol (a revoke, a checkpoint or a
//! give-away ask, nothing).
//!
//! It must not order the reasons itself (the policy does), and asks a
//! give-away of one lease per session at a time, the oldest (again once a
//! give-away came back, else a tick later: [`give_ask_due`]), so that one
//! idle slot does not split every run of the cluster over and over. The facts
//! ([`LeaseAtPoll`]) and the translation ([`steer`], [`give_ask_due`]) are
//! pure, so that the simulated cluster (`cluster::simulate`) steers its
//! leases by the same rules in virtual time.

use std::time::Duration;

use tokio::time::Instant;

use super::session::{End, Session};
use super::{HOLDING_LOOK, REMOTE_SLICE, TICK};
use crate::run::Settlement;
use crate::service::cluster::proto::AskKind;
use crate::service::job::{EndReason, Job};
use crate::service::metrics as metric;
use crate::service::pool::policy::{self, CheckpointFor, Decision, RunAtPoll};
use crate::service::pool::{stalled, Pool};
use crate::xcc;

/// A lease's facts at a look, for [`policy::decide`]: the session's, and
/// the simulated cluster's ([`crate::service::cluster::simulate`]), which
/// reads its clock in virtual time.
pub(crate) struct LeaseAtPoll<'a> {
    pub(crate) pool: &'a Pool,
    pub(crate) id: u64,
    pub(crate) job: &'a Job,
    /// What was last asked of the run.
    pub(crate) asked: AskKind,
    /// The run has reported no new node for the stall timeout.
    pub(crate) stuck: bool,
    /// How long the lease has run.
    pub(crate) ran: Duration,
}

impl RunAtPoll for LeaseAtPoll<'_> {
    fn job_stopping(&self) -> bool {
        self.job.is_stopping()
    }
    fn max_nodes(&self) -> Option<u64> {
        self.job.spec.max_nodes
    }
    fn spent_nodes(&self) -> u64 {
        // This lease's nodes as its last heartbeat reported them.
        self.pool.spent_nodes(self.job)
    }
    fn stuck(&self) -> bool {
        self.stuck
    }
    fn checkpoint_pending(&self) -> bool {
        self.asked == AskKind::Checkpoint
    }
    fn job_stalled(&self) -> bool {
        stalled(self.job)
    }
    fn pool_hungry(&self) -> bool {
        self.pool.is_hungry()
    }
    fn must_yield(&mut self) -> bool {
        // Booked as yielding, so that no more leases are asked than there
        // are interactive tasks waiting.
        self.pool.remote_should_yield(self.id, self.job)
    }
    fn slice_over(&self) -> bool {
        self.ran >= REMOTE_SLICE && self.pool.others_waiting(self.job)
    }
}

/// What a session does about one lease's [`Decision`]: the protocol's side
/// of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Steer {
    /// Revoke the lease (its job stops; with `budget_spent`, at NODE_LIMIT).
    Revoke { budget_spent: bool },
    /// Revoke it as lost (no progress): its task runs elsewhere.
    Lost,
    /// Ask the run this.
    Ask(AskKind),
    /// A candidate for the session's one give-away ask of the tick.
    GiveAway,
    /// Nothing to send.
    Nothing,
}

/// The protocol's translation of a lease's decision.
pub(crate) fn steer(decision: Decision) -> Steer {
    match decision {
        Decision::Stop => Steer::Revoke {
            budget_spent: false,
        },
        Decision::NodeBudgetSpent => Steer::Revoke { budget_spent: true },
        Decision::Stuck => Steer::Lost,
        // Asked already: the worker keeps one ask pending.
        Decision::Checkpoint(CheckpointFor::Pending) | Decision::Continue => Steer::Nothing,
        Decision::Checkpoint(_) => Steer::Ask(AskKind::Checkpoint),
        Decision::GiveAway => Steer::GiveAway,
    }
}

/// Whether a session may ask a give-away, `since` its last one: once its
/// last ask was `answered` (a give-away came back: the run took the ask
/// and may split again), else one a tick (a run that could not give yet
/// keeps the ask pending, and asking again would add nothing).
pub(crate) fn give_ask_due(since: Duration, answered: bool) -> bool {
    answered || since >= TICK
}

impl Session {
    /// Steers the running leases by the pool's [`policy`], as the local
    /// threads are: revokes those of stopping jobs (and of jobs whose node
    /// budget is spent) and stuck ones, asks for checkpoints, and asks the
    /// oldest lease that may give work away to do so when a slot somewhere
    /// is idle and nothing is queued (one ask at a time per session).
    /// True if it asked a give-away.
    pub(super) async fn steer_leases(&mut self) -> Result<bool, End> {
        // Decided over all the leases first, then sent: nothing is
        // allocated when there is nothing to ask (most looks).
        let mut asks: Vec<(u64, AskKind)> = Vec::new();
        let mut give_to = None;
        let stall_timeout = self.config.stall_timeout;
        let now = Instant::now();
        for (&id, lease) in self.leases.iter_mut() {
            if lease.revoked {
                continue;
            }
            let mut facts = LeaseAtPoll {
                pool: &self.pool,
                id,
                job: &lease.job,
                asked: lease.asked,
                stuck: lease.progressed.elapsed() > stall_timeout,
                ran: lease.started.elapsed(),
            };
            let decision = policy::decide(&mut facts);
            let job = &lease.job;
            // Looked at again at its next deadline (or when woken); one
            // asked something is looked at again when it answers, or at
            // the latest after the safety net's interval.
            lease.look_at = match decision {
                Decision::Continue => Session::next_look(
                    &self.pool,
                    job,
                    lease.started,
                    lease.progressed,
                    stall_timeout,
                ),
                _ => (now + HOLDING_LOOK)
                    .min(lease.progressed + stall_timeout + Duration::from_millis(1)),
            };
            match steer(decision) {
                Steer::Revoke { budget_spent } => {
                    if budget_spent {
                        job.request_stop(EndReason::NodeLimit);
                    }
                    lease.revoked = true;
                    self.pool.end_remote_run(
                        id,
                        job,
                        &xcc::Stats::default(),
                        Settlement::default(),
                    );
                    asks.push((id, AskKind::Revoke));
                }
                Steer::Lost => {
                    // Heartbeats without work: the task goes to another worker.
                    metrics::counter!(metric::STALLED_LEASES).increment(1);
                    tracing::warn!(worker = %self.id, name = %self.name, lease = id, job = job.id, nodes = lease.nodes, "a lease made no progress: revoked, its task runs elsewhere");
                    let lost = lease.ledger.lose(
                        self.pool.max_attempts(),
                        lease.point(self.pool.poll_interval(), false),
                    );
                    lease.revoked = true;
                    self.pool
                        .end_remote_run(id, job, &xcc::Stats::default(), lost);
                    asks.push((id, AskKind::Revoke));
                }
                Steer::Nothing => {}
                Steer::Ask(kind) => asks.push((id, kind)),
                Steer::GiveAway => {
                    let older = give_to.is_none_or(|(_, started)| lease.started < started);
                    if older {
                        give_to = Some((id, lease.started));
                    }
                }
            }
        }
        for (id, kind) in asks {
            self.ask(id, kind).await?;
        }
        // While a give-away is wanted, the session looks again at the
        // ask's cadence; otherwise that cadence has no deadline.
        self.give_look_at = None;
        let mut asked = false;
        if let Some((id, _)) = give_to {
            if give_ask_due(self.last_give_ask.elapsed(), self.give_answered) {
                self.last_give_ask = now;
                self.give_answered = false;
                self.ask(id, AskKind::GiveAway).await?;
                asked = true;
            }
            self.give_look_at = Some(self.last_give_ask + TICK);
        }
        Ok(asked)
    }
}
