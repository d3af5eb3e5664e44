//! ListWorkers against a live coordinator: two real `xccd worker`
//! processes are listed with their names, addresses and slots, and one
//! after the other is killed.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{server, Worker};
use common::service::{connect, Client};
use xccd::service::proto as pb;

/// The listed workers once `done` holds of them (within 20 s).
async fn workers_when(
    client: &mut Client,
    done: impl Fn(&[pb::RemoteWorker]) -> bool,
) -> Vec<pb::RemoteWorker> {
    let start = Instant::now();
    loop {
        let workers = client
            .list_workers(pb::ListWorkersRequest {})
            .await
            .expect("ListWorkers answers")
            .into_inner()
            .workers;
        if done(&workers) {
            return workers;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "never reached: {workers:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_connected_workers_and_drops_a_killed_one() {
    let server = server(0, 256).await;
    let mut client = connect(server.addr).await;
    assert!(workers_when(&mut client, |_| true).await.is_empty());

    let xccd = env!("CARGO_BIN_EXE_xccd");
    let worker_addr = server.worker_addr.expect("a worker listener");
    let first = Worker::start(xccd, worker_addr, "list-workers", "alpha", 1);
    let mut second = Worker::start(xccd, worker_addr, "list-workers", "beta", 2);
    let two = workers_when(&mut client, |w| w.len() == 2).await;
    let mut names: Vec<&str> = two.iter().map(|w| w.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["alpha", "beta"]);
    for worker in &two {
        assert!(worker.id.starts_with("worker-"), "{worker:?}");
        assert!(worker.address.starts_with("127.0.0.1:"), "{worker:?}");
        assert_eq!(worker.slots, if worker.name == "alpha" { 1 } else { 2 });
        assert_eq!(worker.leases, 0, "no job runs: {worker:?}");
        assert_eq!(worker.rejected_reports, 0);
        let connected = worker.connect_time.expect("a connect time");
        let heard = worker.last_heartbeat_time.expect("a heartbeat time");
        assert!(
            (heard.seconds, heard.nanos) >= (connected.seconds, connected.nanos),
            "{worker:?}"
        );
    }
    // Heartbeats come every 100 ms: the last one moves.
    let before = two[0].last_heartbeat_time.unwrap();
    workers_when(&mut client, |w| {
        w.iter().any(|w| {
            w.id == two[0].id
                && w.last_heartbeat_time
                    .is_some_and(|t| (t.seconds, t.nanos) > (before.seconds, before.nanos))
        })
    })
    .await;

    second.0.kill().expect("kill the second worker");
    let _ = second.0.wait();
    let one = workers_when(&mut client, |w| w.len() == 1).await;
    assert_eq!(one[0].name, "alpha");
    drop(first);
    workers_when(&mut client, |w| w.is_empty()).await;
}
