//! What a running task is to do at a poll: the one decision both transports
//! take, a local thread's [`super::local`] port and the coordinator's
//! session for a remote lease.
//!
//! Owns the *order* of the reasons and nothing else: it reads the facts of
//! one run through [`RunAtPoll`], asks for each only when the reasons before
//! it have not decided (a yield is booked when it is asked, see
//! [`RunAtPoll::must_yield`]), and returns a [`Decision`]. It must not take
//! the pool's lock itself, send anything or change a job: each transport
//! translates the decision (a [`crate::run::Control`] for a local run, an
//! ask on the stream for a lease) and does what it implies.
//!
//! The order, and why:
//!
//! 1. **The job stops** (cancelled, a limit reached, failed, shutdown): the
//!    remaining work is not wanted; nothing else matters.
//! 2. **Its node budget is spent**, counting every run's nodes: the job
//!    stops (NODE_LIMIT).
//! 3. **The run is stuck** (a remote lease whose heartbeats report no new
//!    node for the stall timeout): it is lost, and its task runs elsewhere.
//! 4. **A checkpoint is on its way** (asked at an earlier poll and not yet
//!    made): asked again, never replaced by a give-away, which would be
//!    lost work on a worker that keeps one ask pending.
//! 5. **The job is stalled** (a snapshot is due, or its consumer's buffer is
//!    full): the run checkpoints. A snapshot waits for every run of the job
//!    to be quiet, and a full buffer must not grow: both concern the job's
//!    own correctness and bounds, so they go before any scheduling reason.
//! 6. **The pool is hungry** (a worker idle and no task queued anywhere):
//!    the run gives part of its work away, and goes on. Before a yield or a
//!    slice checkpoint: those exist to hand this worker to work that waits,
//!    and a hungry pool has none ready (the flags are read at different
//!    moments, so both may seem true at once); a give-away feeds the idle
//!    worker and keeps this one busy, where a checkpoint would stop it.
//! 7. **An interactive task waits for a worker** and this batch run is one
//!    of those chosen to yield: it checkpoints now, not at its slice's end.
//! 8. **Its slice is over** while another job has a task ready: it
//!    checkpoints (round-robin fairness).
//! 9. Otherwise it goes on.

/// The facts of one run at a poll, read lazily in the policy's order.
pub(crate) trait RunAtPoll {
    /// The run's job is stopping.
    fn job_stopping(&self) -> bool;
    /// The job's node budget, if it has one.
    fn max_nodes(&self) -> Option<u64>;
    /// Nodes the job has explored, this run's and its other running runs'
    /// included (asked only when the job has a budget).
    fn spent_nodes(&self) -> u64;
    /// The run reports no progress (a remote lease past its stall timeout).
    fn stuck(&self) -> bool {
        false
    }
    /// A checkpoint was asked of this run before and it has not made it yet.
    fn checkpoint_pending(&self) -> bool;
    /// The job's runs must pause: a snapshot is due, or its buffer is full.
    fn job_stalled(&self) -> bool;
    /// A worker is idle and no task is queued.
    fn pool_hungry(&self) -> bool;
    /// Whether this run is to yield its worker to a waiting interactive
    /// task; a yes is booked (the run counts as yielding), so it is asked
    /// only when nothing before it decided.
    fn must_yield(&mut self) -> bool;
    /// The run has had its time slice and another job has a task ready.
    fn slice_over(&self) -> bool;
}

/// Why a run checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckpointFor {
    /// Asked at an earlier poll; still on its way.
    Pending,
    /// A snapshot of its job is due, or its job's buffer is full.
    Stalled,
    /// Its worker goes to a waiting interactive task.
    Yield,
    /// Its time slice is over and another job waits.
    Slice,
}

/// What a run is to do at a poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The job is stopping: stop, the remaining work is not wanted.
    Stop,
    /// The job's node budget is spent: stop the job (NODE_LIMIT) and the run.
    NodeBudgetSpent,
    /// The run makes no progress: it is lost, its task runs elsewhere.
    Stuck,
    /// Hand all the remaining work back.
    Checkpoint(CheckpointFor),
    /// Give part of the remaining work away, and go on.
    GiveAway,
    Continue,
}

/// The decision for `run` at a poll (see the module's documentation for the
/// order).
pub(crate) fn decide(run: &mut impl RunAtPoll) -> Decision {
    if run.job_stopping() {
        return Decision::Stop;
    }
    if run.max_nodes().is_some_and(|max| run.spent_nodes() >= max) {
        return Decision::NodeBudgetSpent;
    }
    if run.stuck() {
        return Decision::Stuck;
    }
    if run.checkpoint_pending() {
        return Decision::Checkpoint(CheckpointFor::Pending);
    }
    if run.job_stalled() {
        return Decision::Checkpoint(CheckpointFor::Stalled);
    }
    if run.pool_hungry() {
        return Decision::GiveAway;
    }
    if run.must_yield() {
        return Decision::Checkpoint(CheckpointFor::Yield);
    }
    if run.slice_over() {
        return Decision::Checkpoint(CheckpointFor::Slice);
    }
    Decision::Continue
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A run's facts as plain values, recording which were asked.
    #[derive(Default)]
    struct Facts {
        stopping: bool,
        max_nodes: Option<u64>,
        spent: u64,
        stuck: bool,
        pending: bool,
        stalled: bool,
        hungry: bool,
        yield_wanted: bool,
        slice_over: bool,
        /// Yields booked (answered yes).
        booked: u32,
        asked: RefCell<Vec<&'static str>>,
    }

    impl Facts {
        fn ask<T>(&self, name: &'static str, value: T) -> T {
            self.asked.borrow_mut().push(name);
            value
        }
    }

    impl RunAtPoll for Facts {
        fn job_stopping(&self) -> bool {
            self.ask("stopping", self.stopping)
        }
        fn max_nodes(&self) -> Option<u64> {
            self.max_nodes
        }
        fn spent_nodes(&self) -> u64 {
            self.ask("spent", self.spent)
        }
        fn stuck(&self) -> bool {
            self.ask("stuck", self.stuck)
        }
        fn checkpoint_pending(&self) -> bool {
            self.ask("pending", self.pending)
        }
        fn job_stalled(&self) -> bool {
            self.ask("stalled", self.stalled)
        }
        fn pool_hungry(&self) -> bool {
            self.ask("hungry", self.hungry)
        }
        fn must_yield(&mut self) -> bool {
            self.asked.borrow_mut().push("yield");
            self.booked += u32::from(self.yield_wanted);
            self.yield_wanted
        }
        fn slice_over(&self) -> bool {
            self.ask("slice", self.slice_over)
        }
    }

    /// Every reason at once.
    fn all() -> Facts {
        Facts {
            stopping: true,
            max_nodes: Some(10),
            spent: 10,
            stuck: true,
            pending: true,
            stalled: true,
            hungry: true,
            yield_wanted: true,
            slice_over: true,
            ..Facts::default()
        }
    }

    #[test]
    fn each_reason_decides_over_all_those_after_it() {
        // Clear the reasons one by one from the top: each decides in turn.
        let mut facts = all();
        let mut seen = Vec::new();
        loop {
            let decision = decide(&mut facts);
            seen.push(decision);
            match decision {
                Decision::Stop => facts.stopping = false,
                Decision::NodeBudgetSpent => facts.spent = 9,
                Decision::Stuck => facts.stuck = false,
                Decision::Checkpoint(CheckpointFor::Pending) => facts.pending = false,
                Decision::Checkpoint(CheckpointFor::Stalled) => facts.stalled = false,
                Decision::GiveAway => facts.hungry = false,
                Decision::Checkpoint(CheckpointFor::Yield) => facts.yield_wanted = false,
                Decision::Checkpoint(CheckpointFor::Slice) => facts.slice_over = false,
                Decision::Continue => break,
            }
        }
        assert_eq!(
            seen,
            [
                Decision::Stop,
                Decision::NodeBudgetSpent,
                Decision::Stuck,
                Decision::Checkpoint(CheckpointFor::Pending),
                Decision::Checkpoint(CheckpointFor::Stalled),
                Decision::GiveAway,
                Decision::Checkpoint(CheckpointFor::Yield),
                Decision::Checkpoint(CheckpointFor::Slice),
                Decision::Continue,
            ]
        );
    }

    #[test]
    fn a_hungry_pool_gets_a_give_away_before_a_yield_or_a_slice_checkpoint() {
        let mut facts = Facts {
            hungry: true,
            yield_wanted: true,
            slice_over: true,
            ..Facts::default()
        };
        assert_eq!(decide(&mut facts), Decision::GiveAway);
        // The yield was not asked, so not booked: another run may take it.
        assert_eq!(facts.booked, 0);
        assert!(!facts.asked.borrow().contains(&"yield"));
    }

    #[test]
    fn a_pending_or_stalled_checkpoint_goes_before_a_give_away() {
        for (pending, stalled) in [(true, false), (false, true)] {
            let mut facts = Facts {
                pending,
                stalled,
                hungry: true,
                ..Facts::default()
            };
            assert!(matches!(decide(&mut facts), Decision::Checkpoint(_)));
        }
    }

    #[test]
    fn facts_are_asked_in_order_and_no_further_than_needed() {
        let mut facts = Facts::default();
        assert_eq!(decide(&mut facts), Decision::Continue);
        assert_eq!(
            *facts.asked.borrow(),
            ["stopping", "stuck", "pending", "stalled", "hungry", "yield", "slice"],
            "no budget: the spent nodes are not asked"
        );
        let mut facts = Facts {
            max_nodes: Some(100),
            spent: 99,
            ..Facts::default()
        };
        assert_eq!(decide(&mut facts), Decision::Continue);
        assert_eq!(facts.asked.borrow()[1], "spent");
        // A yield is booked only when it decides.
        let mut facts = Facts {
            yield_wanted: true,
            slice_over: true,
            ..Facts::default()
        };
        assert_eq!(
            decide(&mut facts),
            Decision::Checkpoint(CheckpointFor::Yield)
        );
        assert_eq!(facts.booked, 1);
        assert_eq!(facts.asked.borrow().last(), Some(&"yield"));
        let mut facts = Facts {
            stalled: true,
            yield_wanted: true,
            ..Facts::default()
        };
        assert_eq!(
            decide(&mut facts),
            Decision::Checkpoint(CheckpointFor::Stalled)
        );
        assert_eq!(facts.booked, 0);
    }

    #[test]
    fn the_node_budget_counts_the_nodes_reaching_it() {
        for (spent, spent_out) in [(0, false), (99, false), (100, true), (u64::MAX, true)] {
            let mut facts = Facts {
                max_nodes: Some(100),
                spent,
                ..Facts::default()
            };
            assert_eq!(
                decide(&mut facts) == Decision::NodeBudgetSpent,
                spent_out,
                "{spent}"
            );
        }
        // A stopping job stops for its own reason, not the budget's.
        let mut facts = Facts {
            stopping: true,
            max_nodes: Some(1),
            spent: 5,
            ..Facts::default()
        };
        assert_eq!(decide(&mut facts), Decision::Stop);
    }
}
