//! The pool's own tests: a panicking run, node limits, small calls
//! admitted apart and yielded to.

use super::local::PoolPort;
use super::*;
use crate::run::SideCondition;
use crate::run::{Control, Failure, Ledger, Port, Settlement};
use crate::xcc::{ProgressView, Stats};

/// Six queens: 4 solutions.
fn queens6() -> Arc<Problem> {
    Arc::new(crate::xcc::testing::queens(6))
}

struct Panics;
impl SideCondition for Panics {
    fn accept(&self, _options: &[usize]) -> bool {
        panic!("a bug in a side condition")
    }
    fn restricts(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn a_panicking_run_fails_its_job_and_the_thread_lives_on() {
    let pool = Pool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::default()
    });
    for _ in 0..3 {
        let job = pool
            .submit(
                queens6(),
                JobSpec {
                    condition: Some(Arc::new(Panics)),
                    ..JobSpec::default()
                },
            )
            .unwrap();
        let summary = job.wait().await;
        assert_eq!(summary.reason, EndReason::Failed);
        assert!(
            matches!(&summary.failure, Some(Failure::Broken(m)) if m.contains("a bug in a side condition")),
            "{:?}",
            summary.failure
        );
        // The one thread is still there for the next job.
        let job = pool.submit(queens6(), JobSpec::default()).unwrap();
        let summary = job.wait().await;
        assert_eq!(
            (summary.reason, summary.solutions),
            (EndReason::Complete, 4)
        );
    }
}

#[tokio::test]
async fn a_node_limit_stops_within_a_poll_of_it_and_says_so() {
    for threads in [1, 2] {
        let pool = Pool::new(PoolConfig {
            threads,
            poll_interval: 16,
            ..PoolConfig::default()
        });
        let whole = pool
            .submit(queens6(), JobSpec::default())
            .unwrap()
            .wait()
            .await;
        assert_eq!(whole.reason, EndReason::Complete);
        let nodes = whole.stats.nodes;
        for max in [1, 2, 20, nodes / 2, nodes - 1] {
            let job = pool
                .submit(
                    queens6(),
                    JobSpec {
                        max_nodes: Some(max),
                        ..JobSpec::default()
                    },
                )
                .unwrap();
            let summary = job.wait().await;
            if summary.reason == EndReason::Complete {
                // Runs check the job's total at their polls: near the
                // tree's size, the whole tree may be explored, and the
                // answer is then complete (and true).
                assert!(max + 16 * threads as u64 >= nodes, "max {max} of {nodes}");
                assert_eq!(summary.stats.nodes, nodes);
                continue;
            }
            assert_eq!(summary.reason, EndReason::NodeLimit, "max {max} of {nodes}");
            assert!(
                summary.stats.nodes >= max.min(nodes)
                    && summary.stats.nodes <= max + 16 * threads as u64,
                "max {max}: {} nodes with {threads} threads",
                summary.stats.nodes
            );
        }
        let job = pool
            .submit(
                queens6(),
                JobSpec {
                    max_nodes: Some(nodes + 100),
                    ..JobSpec::default()
                },
            )
            .unwrap();
        assert_eq!(job.wait().await.reason, EndReason::Complete);
    }
}

fn interactive(owner: Option<&str>) -> JobSpec {
    JobSpec {
        class: Class::Interactive,
        limit: Some(1),
        delivery: Delivery::Keep { keep: 1 },
        owner: crate::service::callers::Caller(owner.map(Arc::from)),
        ..JobSpec::default()
    }
}

/// A count that keeps a thread busy for seconds.
fn long(class: Class, owner: Option<&str>) -> JobSpec {
    JobSpec {
        class,
        owner: crate::service::callers::Caller(owner.map(Arc::from)),
        ..JobSpec::default()
    }
}

async fn wait_busy(pool: &Pool, busy: usize) {
    for _ in 0..3000 {
        if pool.busy_workers() == busy {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{busy} workers never busy");
}

#[tokio::test]
async fn small_calls_are_admitted_apart_and_a_batch_run_yields_to_them() {
    let pool = Pool::new(PoolConfig {
        threads: 1,
        max_jobs: 1,
        max_interactive_jobs: 2,
        max_jobs_per_caller: 1,
        poll_interval: 64,
        ..PoolConfig::default()
    });
    let big = Arc::new(crate::xcc::testing::queens(16));
    // The one batch slot and the one thread are taken.
    let batch = pool
        .submit(big.clone(), long(Class::Batch, Some("a")))
        .unwrap();
    wait_busy(&pool, 1).await;
    assert_eq!(
        pool.submit(queens6(), long(Class::Batch, Some("b"))).err(),
        Some(SubmitError::TooManyJobs(1))
    );
    // A small call is admitted, also for the caller that holds its
    // one batch job, and the batch run yields the thread to it.
    for owner in [Some("a"), Some("b"), None] {
        let small = pool.submit(queens6(), interactive(owner)).unwrap();
        let summary = small.wait().await;
        assert_eq!((summary.reason, summary.solutions), (EndReason::Limit, 1));
        assert!(batch.summary().is_none(), "the count goes on");
    }
    assert!(pool.tasks_yielded() >= 1, "the batch run yielded");
    // Small calls have their own limits, overall and per caller.
    let held = pool
        .submit(big.clone(), long(Class::Interactive, Some("a")))
        .unwrap();
    assert_eq!(
        pool.submit(queens6(), interactive(Some("a"))).err(),
        Some(SubmitError::TooManyJobsForCaller(1))
    );
    let other = pool
        .submit(big.clone(), long(Class::Interactive, None))
        .unwrap();
    assert_eq!(
        pool.submit(queens6(), interactive(Some("b"))).err(),
        Some(SubmitError::TooManyInteractiveJobs(2))
    );
    for job in [&batch, &held, &other] {
        pool.cancel(job, EndReason::Cancelled);
        assert_eq!(job.wait().await.reason, EndReason::Cancelled);
    }
}

/// The policy's order on a local thread: a run whose slice is over while
/// another job waits gives work away first when it sees the pool hungry,
/// and checkpoints for its slice once the pool is not (see
/// `policy::decide`; the coordinator's sessions do the same, see
/// `cluster::coordinator`'s tests).
#[tokio::test]
async fn a_hungry_pool_gets_a_give_away_before_a_slice_checkpoint() {
    // No thread: the two jobs' tasks stay queued, the second one waits.
    let pool = Pool::new(PoolConfig {
        threads: 0,
        ..PoolConfig::default()
    });
    let job = pool.submit(queens6(), JobSpec::default()).unwrap();
    let _waiting = pool.submit(queens6(), JobSpec::default()).unwrap();
    let slot = WorkerSlot::default();
    let mut ledger = Ledger::new(QueuedTask::new(Task::root()));
    let mut port = PoolPort {
        shared: &pool.shared,
        job: &job,
        slot: &slot,
        ledger: &mut ledger,
        started: Instant::now() - 2 * TIME_SLICE,
        yielded: false,
    };
    let stats = Stats::default();
    let progress = ProgressView {
        stats: &stats,
        positions: &[],
        degrees: &[],
        done_weight: 0.0,
        task_weight: 1.0,
    };
    pool.pretend_hungry(true);
    assert_eq!(port.control(&progress), Control::GiveAway);
    pool.pretend_hungry(false);
    assert_eq!(port.control(&progress), Control::Checkpoint);
}

/// A slot going hungry wakes one session holding a lease per hungry slot
/// (the one waiting longest first), not every session: a give-away that
/// comes back answers one wake-up, a run that ends makes one void (it may
/// have been the one asked), and a session that cannot give passes its
/// wake-up on once each time the pool goes hungry.
#[test]
fn hunger_wakes_one_session_per_hungry_slot() {
    let pool = Pool::new(PoolConfig {
        threads: 0,
        ..PoolConfig::default()
    });
    pool.remote_joined(3);
    let job = pool.submit(queens6(), JobSpec::default()).unwrap();
    let mut sessions: Vec<_> = (0..4).map(|_| Box::pin(pool.remote_hunger())).collect();
    for session in &mut sessions {
        assert!(!session.as_mut().enable());
    }
    let woken = |sessions: &mut Vec<_>| -> Vec<bool> {
        sessions
            .iter_mut()
            .map(
                |s: &mut std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>>| {
                    s.as_mut().enable()
                },
            )
            .collect()
    };
    // The root task taken: two slots idle, one run to ask.
    assert!(pool.take_remote(1, &[]).is_some());
    assert!(pool.is_hungry());
    assert_eq!(pool.hunger_wakes(), 1);
    assert_eq!(woken(&mut sessions), [true, false, false, false]);
    // The run gives a task away and another slot takes it: one slot
    // idle, two runs, one wake-up more.
    pool.remote_gave_away(&job, Task::root());
    assert!(!pool.is_hungry());
    assert!(pool.take_remote(2, &[]).is_some());
    assert_eq!(pool.hunger_wakes(), 2);
    assert_eq!(woken(&mut sessions), [true, true, false, false]);
    // Nothing more for the same hungry slot while its ask is out (a
    // snapshot refreshes the flags).
    pool.request_snapshot(&job);
    assert_eq!(pool.hunger_wakes(), 2);
    // The woken session had nothing to give: passed on, once.
    let mut passed = u64::MAX;
    pool.pass_hunger(&mut passed);
    pool.pass_hunger(&mut passed);
    assert_eq!(pool.hunger_wakes(), 3);
    assert_eq!(woken(&mut sessions), [true, true, true, false]);
    // A run ends: its slot is hungry too, and the ask it may have had is
    // void: two idle slots, one run left, one wake-up.
    pool.finish_remote_run(1, &job, &Stats::default(), Settlement::default());
    assert_eq!(pool.hunger_wakes(), 4);
    assert_eq!(woken(&mut sessions), [true, true, true, true]);
}
