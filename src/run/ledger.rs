//! The books of one run of a task, kept by whoever hands tasks out: the
//! pool for its threads, the coordinator for each lease of a remote worker.
//!
//! A ledger knows the task as it was handed out and what its run has
//! reported so far: how many of the task's solutions were delivered (the
//! index of the next one), what it gave away (each a *cut* on the task), and
//! how often the task was lost before. From that it decides what a report
//! means, refuses reports that cannot be right, and settles the run's end
//! into what the scheduler must do. It trusts nothing it can check: a
//! give-away or a checkpoint must lie inside the task and outside what was
//! given away before, and the tasks it queues carry the cuts it recorded,
//! not the ones a run claims.

use std::time::{Duration, Instant};

use super::{RunEnd, SideCondition, Stop};
use crate::xcc::verifier::Verifier;
use crate::xcc::{Cut, Task, ALL};

/// A task as the scheduler queues it: the subtree, how many of its
/// solutions earlier runs delivered (a rerun skips them), and what its
/// losses with workers tell (see [`Ledger::lose`]).
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedTask {
    pub task: Task,
    pub skip: u64,
    /// Losses in a row at the same point of the run (see [`Ledger::lose`]).
    pub attempts: u32,
    /// Every loss of the task with a worker, wherever it happened.
    pub losses: u32,
    /// Where its last run was lost, if one was.
    pub lost_at: Option<RunPoint>,
    /// After a loss: not to be handed out before then (backoff).
    pub not_before: Option<Instant>,
}

impl QueuedTask {
    /// A task no run has delivered from.
    pub fn new(task: Task) -> QueuedTask {
        QueuedTask {
            task,
            skip: 0,
            attempts: 0,
            losses: 0,
            lost_at: None,
            not_before: None,
        }
    }

    /// Whether it may be handed out at `now` (no backoff, or it is over).
    pub fn ready(&self, now: Instant) -> bool {
        self.not_before.is_none_or(|at| at <= now)
    }
}

/// Where a lost run was, as far as its reports tell: the range of node
/// counts it was lost within (the coordinator's estimate from the nodes its
/// heartbeats reported, their rate and when the connection broke). A run
/// that never reported is at 0..=0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunPoint {
    pub low: u64,
    pub high: u64,
}

impl RunPoint {
    /// Whether two runs of a task may have been lost at the same node: a
    /// task's tree is the same on every run (the engines are deterministic),
    /// so a task that crashes its worker does it at one node, which each
    /// run's range holds.
    pub fn same(&self, other: &RunPoint) -> bool {
        self.low <= other.high && other.low <= self.high
    }
}

/// The first pause before a lost task runs again; it doubles with each
/// loss at the same point, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(200);
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// A task lost this many times `max_attempts`, wherever, fails its job too:
/// a fault that moves (a crash at a node whose position shifts as the
/// task's cuts grow) must not loop forever.
pub const LOSSES_PER_ATTEMPT: u32 = 4;

/// A report that cannot be right.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    #[error("solution {first} reported before solution {expected}")]
    Gap { first: u64, expected: u64 },
    #[error("{count} solutions from index {first} overflow the solution index")]
    Overflow { first: u64, count: u64 },
    #[error("work handed back after {found} solutions, before the run caught up with the {skip} delivered earlier")]
    TooEarly { found: u64, skip: u64 },
    #[error("task {task} is not part of the task {own}")]
    Outside { task: String, own: String },
    #[error("task {task} overlaps work given away before")]
    Overlaps { task: String },
    #[error("a task weighing {weight} is more than the {left} left of its task")]
    Weight { weight: f64, left: f64 },
    #[error("solution {index}: {reason}")]
    NotASolution { index: u64, reason: String },
}

/// Why a job must fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A task was lost with its worker too often: the cluster's trouble,
    /// worth trying again later.
    Lost(String),
    /// A run failed: it panicked, or its task names no node of the tree.
    /// A bug, in xccd or in a puzzle's side condition.
    Broken(String),
    /// The job outgrew a limit of the server (the bytes its stored
    /// solutions may take).
    Exhausted(String),
    /// A run could not get the memory its search needs (see
    /// [`RunEnd::OutOfMemory`]).
    Memory(String),
    /// No worker was there to run it (a coordinator whose remote workers
    /// are all gone): worth trying again later.
    NoWorkers(String),
    /// The job store failed under a durable job; the cause, when the store
    /// cannot be written, says what an operator must do (its own reason).
    Store(String, Option<StoreCause>),
    /// A remote worker caught lying had delivered what cannot be taken
    /// back (solutions that reached the client, tasks handed on): the
    /// answer cannot be corrected.
    Corrupted(String),
}

/// Why the job store cannot be written: each has its own remedy, its own
/// `ErrorInfo` reason, and its own value of `xccd_store_degraded{cause}`.
///
/// The store is the service's (`service::store`, which names this type
/// `Cause` and says what each means to an operator); it is defined here so
/// that [`Failure::Store`] can carry it without this layer naming the one
/// above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreCause {
    /// The volume is full (SQLITE_FULL, ENOSPC).
    Full,
    /// The file system or the file is read-only (SQLITE_READONLY, EROFS).
    ReadOnly,
    /// This process may not write there (EACCES, EPERM).
    PermissionDenied,
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::Lost(message)
            | Failure::Broken(message)
            | Failure::Exhausted(message)
            | Failure::Memory(message)
            | Failure::NoWorkers(message)
            | Failure::Store(message, _)
            | Failure::Corrupted(message) => message,
        }
    }
}

/// What the scheduler must do after a run ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settlement {
    /// The share of the job's tree the run explored (for progress).
    pub finished_weight: f64,
    /// Tasks to queue again, before the job's other tasks.
    pub requeue: Vec<QueuedTask>,
    /// The job fails.
    pub failure: Option<Failure>,
    /// The run was lost with its worker.
    pub lost: bool,
    /// The run stopped at a limit of its own (the job should stop too).
    pub stop: Option<Stop>,
    /// A lost run's task is to wait this long before it runs again.
    pub backoff: Option<Duration>,
}

/// The books of one run of a task (see the module's documentation).
#[derive(Debug, Clone)]
pub struct Ledger {
    /// The task as it would run again: its cuts grow with every give-away.
    work: QueuedTask,
    /// Solutions of the task delivered so far: the index of the next one.
    delivered: u64,
    /// Weight given away by this run.
    given: f64,
}

/// Room for rounding in sums of weights.
const SLACK: f64 = 1e-9;

fn describe(task: &Task) -> String {
    let to = if task.to == ALL {
        "end".to_string()
    } else {
        task.to.to_string()
    };
    format!("{:?} [{}..{to})", task.path, task.from)
}

impl Ledger {
    pub fn new(work: QueuedTask) -> Ledger {
        Ledger {
            delivered: work.skip,
            given: 0.0,
            work,
        }
    }

    /// The task and its skip as handed out, with the cuts recorded since.
    pub fn work(&self) -> &QueuedTask {
        &self.work
    }

    /// The index of the next solution to deliver.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Records a report of `count` solutions from index `first` of the
    /// task's order. Returns how many of them, from the front, were
    /// delivered before and must be dropped.
    pub fn found(&mut self, first: u64, count: u64) -> Result<u64, LedgerError> {
        let end = first
            .checked_add(count)
            .ok_or(LedgerError::Overflow { first, count })?;
        if first > self.delivered {
            return Err(LedgerError::Gap {
                first,
                expected: self.delivered,
            });
        }
        let known = self.delivered - first;
        self.delivered = self.delivered.max(end);
        Ok(known.min(count))
    }

    /// Records a give-away made by a run that had found `found` solutions
    /// (the skipped ones included); returns the task to queue, with the cuts
    /// of this task that lie inside it.
    pub fn gave_away(&mut self, task: Task, found: u64) -> Result<Task, LedgerError> {
        self.check_caught_up(found)?;
        let task = self.inside(task)?;
        let left = self.work.task.weight - self.given;
        if !(task.weight.is_finite() && task.weight >= 0.0 && task.weight <= left + SLACK) {
            return Err(LedgerError::Weight {
                weight: task.weight,
                left,
            });
        }
        self.given += task.weight;
        self.work.task.cuts.push(Cut::of_given(&task));
        Ok(task)
    }

    /// Settles the end of the run, which found `found` solutions (the
    /// skipped ones included). A task lost `max_attempts` times fails its
    /// job.
    pub fn settle(&self, end: RunEnd, found: u64) -> Result<Settlement, LedgerError> {
        let weight = self.work.task.weight;
        let mut settlement = Settlement::default();
        match end {
            RunEnd::Exhausted => settlement.finished_weight = (weight - self.given).max(0.0),
            RunEnd::Checkpointed(remaining) => {
                self.check_caught_up(found)?;
                let mut left = 0.0;
                for task in remaining {
                    let task = self.inside(task)?;
                    if !(task.weight.is_finite() && task.weight >= 0.0) {
                        return Err(LedgerError::Weight {
                            weight: task.weight,
                            left: weight - self.given,
                        });
                    }
                    left += task.weight;
                    settlement.requeue.push(QueuedTask::new(task));
                }
                if left > weight - self.given + SLACK {
                    return Err(LedgerError::Weight {
                        weight: left,
                        left: weight - self.given,
                    });
                }
                settlement.finished_weight = (weight - self.given - left).max(0.0);
            }
            RunEnd::Stopped(stop) => {
                if stop != Stop::Asked {
                    settlement.stop = Some(stop);
                }
            }
            RunEnd::Released => settlement.requeue.push(self.rerun()),
            RunEnd::Failed(message) => settlement.failure = Some(Failure::Broken(message)),
            RunEnd::OutOfMemory(message) => settlement.failure = Some(Failure::Memory(message)),
        }
        Ok(settlement)
    }

    /// The run was lost with its worker, at `at`: its task runs again (with
    /// its cuts and what it delivered) after a backoff, unless the loss
    /// shows the task itself is what kills its workers.
    ///
    /// The rule: a job fails only for a task that keeps failing where it
    /// runs. A worker is lost to a crash, an OOM kill or a stop from
    /// outside alike (a broken stream or silence: nothing tells them
    /// apart), but a task's run is deterministic, so a task that crashes
    /// its worker does it at the same node on every run, while kills and
    /// partitions from outside strike where the run happens to be. So a loss
    /// counts as an attempt only if it came at the same point of the run as
    /// the loss before it ([`RunPoint::same`]); a loss elsewhere starts the
    /// count again at 1. `max_attempts` losses in a row at one point fail
    /// the job, and so do `LOSSES_PER_ATTEMPT` times as many wherever they
    /// are (a point that moves). A run lost before it reported anything is
    /// at point 0: a task that kills its workers at once looks like that,
    /// so such losses count, which kills from outside only match by
    /// hitting the same task before its first heartbeat, again and again.
    /// Between attempts the task waits (0.2 s, doubling with each attempt
    /// at one point, at most 10 s), so that a burst of losses (a rolling
    /// restart, a flapping network) does not spend every attempt at once,
    /// and a poison task does not take down one worker after another at
    /// full speed. A lease handed back (refused, drained) is no loss.
    pub fn lose(&self, max_attempts: u32, at: RunPoint) -> Settlement {
        let mut work = self.rerun();
        work.losses += 1;
        work.attempts = match work.lost_at {
            Some(before) if !before.same(&at) => 1,
            _ => work.attempts + 1,
        };
        work.lost_at = Some(at);
        let mut settlement = Settlement {
            lost: true,
            ..Settlement::default()
        };
        if work.attempts >= max_attempts {
            settlement.failure = Some(Failure::Lost(format!(
                "the task {} was lost with its worker {} times, each time at the same point of its \
                 run (near node {}); the job is stopped rather than crash more workers",
                describe(&work.task),
                work.attempts,
                at.low
            )));
        } else if work.losses >= max_attempts.saturating_mul(LOSSES_PER_ATTEMPT) {
            settlement.failure = Some(Failure::Lost(format!(
                "the task {} was lost with its worker {} times; the job is stopped rather than \
                 crash more workers",
                describe(&work.task),
                work.losses
            )));
        } else {
            let doublings = (work.attempts - 1).min(16);
            settlement.backoff = Some((FIRST_BACKOFF * (1 << doublings)).min(MAX_BACKOFF));
            settlement.requeue.push(work);
        }
        settlement
    }

    /// The task to run again if this run does not finish.
    fn rerun(&self) -> QueuedTask {
        let mut work = self.work.clone();
        work.task.weight = (work.task.weight - self.given).max(0.0);
        work.skip = self.delivered;
        work
    }

    fn check_caught_up(&self, found: u64) -> Result<(), LedgerError> {
        if found < self.work.skip {
            return Err(LedgerError::TooEarly {
                found,
                skip: self.work.skip,
            });
        }
        Ok(())
    }

    /// Checks that `task` lies inside this one and outside its cuts, and
    /// gives it this task's cuts that lie inside it (whatever it carried).
    fn inside(&self, mut task: Task) -> Result<Task, LedgerError> {
        let own = &self.work.task;
        let outside = || LedgerError::Outside {
            task: describe(&task),
            own: describe(own),
        };
        let level = own.path.len();
        if task.from >= task.to || !task.path.starts_with(&own.path) {
            return Err(outside());
        }
        let within = if task.path.len() == level {
            own.from <= task.from && task.to <= own.to
        } else {
            (own.from..own.to).contains(&task.path[level])
        };
        if !within {
            return Err(outside());
        }
        if self.work.task.cuts.iter().any(|cut| overlaps(cut, &task)) {
            return Err(LedgerError::Overlaps {
                task: describe(&task),
            });
        }
        task.cuts = own
            .cuts
            .iter()
            .filter(|cut| cut.within(&task.path, task.from, task.to))
            .cloned()
            .collect();
        Ok(task)
    }
}

/// Whether `task` reaches into the part of the tree `cut` took away.
fn overlaps(cut: &Cut, task: &Task) -> bool {
    if !task.path.starts_with(&cut.path) {
        return false;
    }
    match task.path.get(cut.path.len()) {
        Some(&position) => position >= cut.end,
        None => task.to > cut.end,
    }
}

/// Checks that `options` (ascending) is a solution of the verifier's
/// problem that satisfies `condition`: for solutions that come from where
/// they cannot be trusted. `index` names it in the error.
pub fn verify_solution(
    verifier: &mut Verifier<'_>,
    condition: Option<&dyn SideCondition>,
    index: u64,
    options: &[u32],
) -> Result<(), LedgerError> {
    let not = |reason: String| LedgerError::NotASolution { index, reason };
    verifier.verify(options).map_err(not)?;
    if let Some(condition) = condition.filter(|c| c.restricts()) {
        let options: Vec<usize> = options.iter().map(|&o| o as usize).collect();
        if !condition.accept(&options) {
            return Err(not("it fails the puzzle's side condition".into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::Decision;

    fn task(path: &[Decision], from: Decision, to: Decision, weight: f64) -> Task {
        Task {
            path: path.to_vec(),
            from,
            to,
            weight,
            cuts: Vec::new(),
        }
    }

    #[test]
    fn reports_are_delivered_once_and_in_order() {
        let mut ledger = Ledger::new(QueuedTask {
            skip: 3,
            ..QueuedTask::new(Task::root())
        });
        assert_eq!(ledger.found(0, 2), Ok(2));
        assert_eq!(ledger.found(2, 3), Ok(1));
        assert_eq!(ledger.delivered(), 5);
        assert_eq!(ledger.found(5, 0), Ok(0));
        assert!(matches!(ledger.found(7, 1), Err(LedgerError::Gap { .. })));
        assert!(matches!(
            ledger.found(u64::MAX, 2),
            Err(LedgerError::Overflow { .. })
        ));
    }

    #[test]
    fn give_aways_must_be_inside_and_disjoint_and_leave_cuts() {
        let mut ledger = Ledger::new(QueuedTask::new(task(&[1], 2, 6, 0.5)));
        // Outside: another branch, the range's edges, a path above.
        for bad in [
            task(&[0], 3, 4, 0.1),
            task(&[1], 1, 3, 0.1),
            task(&[1], 4, 7, 0.1),
            task(&[1, 6], 0, 2, 0.1),
            task(&[], 0, 1, 0.1),
            task(&[1], 4, 4, 0.0),
        ] {
            assert!(
                matches!(
                    ledger.gave_away(bad.clone(), 0),
                    Err(LedgerError::Outside { .. })
                ),
                "{bad:?}"
            );
        }
        let given = ledger.gave_away(task(&[1], 4, 6, 0.25), 0).unwrap();
        assert!(given.cuts.is_empty());
        assert_eq!(ledger.work().task.cuts, vec![Cut::of_given(&given)]);
        // Into what was given: refused, at the node and below it.
        for bad in [task(&[1], 3, 5, 0.1), task(&[1, 4], 0, 2, 0.01)] {
            assert!(matches!(
                ledger.gave_away(bad, 0),
                Err(LedgerError::Overlaps { .. })
            ));
        }
        // More weight than is left.
        assert!(matches!(
            ledger.gave_away(task(&[1, 2], 1, 3, 0.3), 0),
            Err(LedgerError::Weight { .. })
        ));
        assert!(matches!(
            ledger.gave_away(task(&[1, 2], 1, 3, f64::NAN), 0),
            Err(LedgerError::Weight { .. })
        ));
        // A task below the node inherits no cut it does not contain; the
        // whole task would.
        let deeper = ledger.gave_away(task(&[1, 3], 1, 2, 0.01), 0).unwrap();
        assert!(deeper.cuts.is_empty());
        let lost = ledger.lose(3, RunPoint::default());
        assert_eq!(lost.requeue.len(), 1);
        assert_eq!(lost.requeue[0].task.cuts.len(), 2);
        assert!((lost.requeue[0].task.weight - (0.5 - 0.26)).abs() < 1e-12);
    }

    #[test]
    fn nothing_leaves_a_run_before_it_caught_up() {
        let mut ledger = Ledger::new(QueuedTask {
            skip: 4,
            ..QueuedTask::new(Task::root())
        });
        assert!(matches!(
            ledger.gave_away(task(&[0], 1, 2, 0.1), 3),
            Err(LedgerError::TooEarly { .. })
        ));
        assert!(matches!(
            ledger.settle(RunEnd::Checkpointed(vec![task(&[0], 0, ALL, 0.1)]), 3),
            Err(LedgerError::TooEarly { .. })
        ));
        assert!(ledger.gave_away(task(&[0], 1, 2, 0.1), 4).is_ok());
        // A release needs no catching up: the task runs again as it was.
        let released = ledger.settle(RunEnd::Released, 0).unwrap();
        assert_eq!(released.requeue[0].skip, 4);
    }

    #[test]
    fn settlements() {
        let ledger = Ledger::new(QueuedTask::new(task(&[2], 0, ALL, 0.5)));
        let done = ledger.settle(RunEnd::Exhausted, 0).unwrap();
        assert_eq!(done.finished_weight, 0.5);
        let checkpoint = ledger
            .settle(
                RunEnd::Checkpointed(vec![task(&[2, 0, 1], 0, ALL, 0.1), task(&[2], 3, 5, 0.2)]),
                0,
            )
            .unwrap();
        assert_eq!(checkpoint.requeue.len(), 2);
        assert!((checkpoint.finished_weight - 0.2).abs() < 1e-12);
        assert!(matches!(
            ledger.settle(RunEnd::Checkpointed(vec![task(&[2], 1, 2, 0.6)]), 0),
            Err(LedgerError::Weight { .. })
        ));
        let stopped = ledger.settle(RunEnd::Stopped(Stop::NodeLimit), 0).unwrap();
        assert_eq!(stopped.stop, Some(Stop::NodeLimit));
        let failed = ledger.settle(RunEnd::Failed("boom".into()), 0).unwrap();
        assert_eq!(failed.failure, Some(Failure::Broken("boom".into())));
        let lost = ledger.lose(1, RunPoint::default());
        assert!(lost.requeue.is_empty() && lost.lost);
        assert!(
            matches!(lost.failure, Some(Failure::Lost(m)) if m.contains("lost with its worker 1 times"))
        );
    }

    /// Runs the lost runs at `points` one after another, each from the
    /// task the loss before it queued; the settlement of the last.
    fn lose_at(max_attempts: u32, points: &[(u64, u64)]) -> Vec<Settlement> {
        let mut work = QueuedTask::new(task(&[], 0, ALL, 1.0));
        let mut settlements = Vec::new();
        for &(low, high) in points {
            let lost = Ledger::new(work.clone()).lose(max_attempts, RunPoint { low, high });
            if let Some(next) = lost.requeue.first() {
                work = next.clone();
            }
            settlements.push(lost);
        }
        settlements
    }

    #[test]
    fn only_losses_at_the_same_point_fail_a_job() {
        // Killed from outside, wherever the run was: never fails.
        let scattered: Vec<(u64, u64)> = (0..11)
            .map(|i| ((i % 2) * 50_000 + i * 1000, 2000))
            .collect();
        let lost = lose_at(3, &scattered);
        assert!(lost
            .iter()
            .all(|s| s.failure.is_none() && s.requeue.len() == 1));
        assert!(lost.iter().all(|s| s.backoff == Some(FIRST_BACKOFF)));
        // Crashing near one node (reported within a step): the third fails.
        let lost = lose_at(3, &[(9_000, 10_500), (10_000, 11_500), (8_700, 10_200)]);
        assert_eq!(lost[0].backoff, Some(FIRST_BACKOFF));
        assert_eq!(lost[1].backoff, Some(FIRST_BACKOFF * 2));
        assert_eq!(lost[1].requeue[0].attempts, 2);
        assert!(
            matches!(&lost[2].failure, Some(Failure::Lost(m)) if m.contains("lost with its worker 3 times")),
            "{:?}",
            lost[2].failure
        );
        // Before any report, every time: counted (point 0).
        let lost = lose_at(3, &[(0, 0); 3]);
        assert!(lost[2].failure.is_some());
        // A run that got elsewhere starts the count again.
        let lost = lose_at(3, &[(0, 0), (0, 0), (40_000, 41_000), (40_500, 41_500)]);
        assert!(lost.iter().all(|s| s.failure.is_none()));
        assert_eq!(lost[3].requeue[0].attempts, 2);
        // A point that moves still ends: 4 x max_attempts losses.
        let moving: Vec<(u64, u64)> = (0..12).map(|i| (i * 10_000, i * 10_000 + 100)).collect();
        let lost = lose_at(3, &moving);
        assert!(lost[..11].iter().all(|s| s.failure.is_none()));
        assert!(lost[11].failure.is_some() && lost[11].requeue.is_empty());
        // The backoff doubles and is bounded.
        let lost = lose_at(100, &[(5, 5); 30]);
        assert_eq!(lost[29].backoff, Some(MAX_BACKOFF));
    }
}
