//! The session's clock, in paused time: heartbeats keep leases however
//! long a task runs, and silence loses them after exactly the timeout.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use super::session::Session;
use super::{ClusterConfig, REMOTE_SLICE, TICK};
use crate::service::cluster::audit::{AuditConfig, Auditor};
use crate::service::cluster::proto::{
    self as pb, coordinator_message::Kind as Out, worker_message::Kind as In, AskKind,
};
use crate::service::job::JobSpec;
use crate::service::pool::Pool;
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
        Auditor::new(pool.clone(), AuditConfig::default()),
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
        audit: AuditConfig::default(),
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

/// The policy's order on a remote lease, as on a local thread (see
/// `pool::tests`): a lease whose slice is over while another job waits
/// is asked to give work away first when the pool is hungry, and to
/// checkpoint for its slice once it is not.
#[tokio::test(start_paused = true)]
async fn a_hungry_cluster_gets_a_give_away_before_a_slice_checkpoint() {
    let pool = Arc::new(Pool::new(PoolConfig {
        threads: 0,
        ..PoolConfig::default()
    }));
    let (tx, mut from_session) = mpsc::channel(64);
    let mut session = Session::new(
        pool.clone(),
        config(),
        Arc::new(AtomicU64::new(1)),
        ("worker-1".into(), "test".into()),
        1,
        tx,
        Auditor::new(pool.clone(), AuditConfig::default()),
    );
    pool.remote_joined(1);
    for _ in 0..2 {
        let problem = dlx_format::parse(QUEENS4).unwrap();
        pool.submit(Arc::new(problem), JobSpec::default()).unwrap();
    }
    // The one slot takes the first job's task; the second job waits.
    session.fill().await.ok().unwrap();
    assert_eq!(session.leases.len(), 1);
    tokio::time::advance(2 * REMOTE_SLICE).await;
    let mut asked = || loop {
        match from_session.try_recv() {
            Ok(Ok(pb::CoordinatorMessage {
                kind: Some(Out::Ask(ask)),
            })) => return ask.kind(),
            Ok(_) => continue,
            Err(e) => panic!("nothing asked: {e:?}"),
        }
    };
    pool.pretend_hungry(true);
    session.steer_leases().await.ok().unwrap();
    assert_eq!(asked(), AskKind::GiveAway);
    pool.pretend_hungry(false);
    session.steer_leases().await.ok().unwrap();
    assert_eq!(asked(), AskKind::Checkpoint);
}
