//! Many workers on one coordinator: a hundred simulated workers
//! (`xccd::service::cluster::sim`, the real protocol over loopback gRPC),
//! each lease a few nodes of work, so that a small search becomes hundreds
//! of leases spread over all of them. What the coordinator delivers must be
//! exactly what the engine finds in this process. Nothing here is timed.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::fixtures::{all_solutions, instance};
use tokio::sync::watch;
use tonic::transport::Channel;
use xccd::service::cluster::sim::{SimReport, SimWorker};
use xccd::service::cluster::{AuditConfig, ClusterConfig};
use xccd::service::credentials::WorkerToken;
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;
use xccd::service::server::{start, ServeConfig};
use xccd::service::PoolConfig;
use xccd::xcc::dlx_format;

const TOKEN: &str = "scale-test-worker-token";
const WORKERS: usize = 100;
/// Nodes a simulated worker explores per lease before it checkpoints.
const LEASE_NODES: u64 = 4;

/// Enumerates `text` through the API: the solutions streamed (none when
/// counting) and the summary.
async fn enumerate(
    client: &mut SolverServiceClient<Channel>,
    text: &str,
    count_only: bool,
) -> (Vec<Vec<u32>>, pb::Summary) {
    let request = pb::EnumerateRequest {
        problem: Some(pb::Problem {
            source: Some(pb::problem::Source::Dlx(text.to_string())),
        }),
        count_only,
        batch_size: 16,
        ..Default::default()
    };
    let mut stream = client
        .enumerate(request)
        .await
        .expect("Enumerate starts")
        .into_inner();
    let mut solutions = Vec::new();
    let read = async {
        loop {
            let message = stream.message().await.expect("the stream goes on");
            match message.and_then(|m| m.event).expect("an event") {
                pb::enumerate_response::Event::Solutions(batch) => {
                    solutions.extend(batch.solutions.into_iter().map(|s| s.option_indices))
                }
                pb::enumerate_response::Event::Progress(_) => {}
                pb::enumerate_response::Event::Summary(summary) => return summary,
            }
        }
    };
    let summary = tokio::time::timeout(Duration::from_secs(120), read)
        .await
        .expect("the enumeration ends");
    (solutions, summary)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_simulated_workers_deliver_the_exact_counts_and_solutions() {
    a_hundred_workers(AuditConfig::default()).await;
}

/// Every lease audited: a simulated worker checkpoints at a poll of its own
/// (every LEASE_NODES nodes, not the coordinator's interval), and the
/// audit's replay must stop at that same node. An honest worker judged a
/// liar is barred (its stream ends with an error, which fails the test)
/// and its streamed leases redone, which once delivered latin4's solutions
/// again: 2,331 of 576.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lease_audited_and_no_honest_worker_judged_a_liar() {
    let audited = a_hundred_workers(AuditConfig {
        rate: 1.0,
        ..AuditConfig::default()
    })
    .await;
    assert!(audited > 100, "{audited} leases audited");
}

/// Runs latin4 (streamed) and queens8 (counted) on a hundred simulated
/// workers; the leases audited.
async fn a_hundred_workers(audit: AuditConfig) -> u64 {
    let token = WorkerToken::new(TOKEN).unwrap();
    let server = start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        worker_listen: Some("127.0.0.1:0".parse().unwrap()),
        pool: PoolConfig {
            threads: 0,
            ..PoolConfig::default()
        },
        cluster: ClusterConfig {
            token: Some(token.clone()),
            audit,
            ..ClusterConfig::default()
        },
        ..ServeConfig::default()
    })
    .await
    .expect("the coordinator starts on loopback");
    let url = format!("http://{}", server.worker_addr.expect("a worker listener"));
    let (stop, stopped) = watch::channel(false);
    let mut running = Vec::new();
    for i in 0..WORKERS {
        let worker = SimWorker::connect(&url, Some(&token), &format!("sim-{i}"))
            .await
            .expect("the coordinator takes the worker");
        running.push(tokio::spawn(worker.run(LEASE_NODES, stopped.clone())));
    }
    let start_wait = Instant::now();
    while server.pool.remote_slots() != WORKERS {
        assert!(
            start_wait.elapsed() < Duration::from_secs(30),
            "workers join"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let channel = Channel::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = SolverServiceClient::new(channel);

    // latin4, every solution streamed: the set of the engine, once each.
    let latin4 = instance("latin4");
    let expected = all_solutions(&dlx_format::parse(&latin4).expect("benchmark instances parse"));
    assert_eq!(expected.len(), 576);
    let (streamed, summary) = enumerate(&mut client, &latin4, false).await;
    assert_eq!(
        summary.reason,
        pb::EndReason::Complete as i32,
        "{summary:?}"
    );
    assert_eq!(summary.solutions, 576);
    assert_eq!(streamed.len(), 576, "streamed");
    let set: BTreeSet<Vec<u32>> = streamed.into_iter().collect();
    assert!(set == expected, "not the in-process solution set");
    let mut nodes = summary.statistics.as_ref().map_or(0, |s| s.nodes);
    let mut audited = summary.statistics.map_or(0, |s| s.leases_audited);

    // queens8, counted.
    let (_, summary) = enumerate(&mut client, &instance("queens8"), true).await;
    assert_eq!(
        summary.reason,
        pb::EndReason::Complete as i32,
        "{summary:?}"
    );
    assert_eq!(summary.solutions, 92);
    nodes += summary.statistics.as_ref().map_or(0, |s| s.nodes);
    audited += summary.statistics.map_or(0, |s| s.leases_audited);

    let _ = stop.send(true);
    let mut reports: Vec<SimReport> = Vec::new();
    for handle in running {
        reports.push(handle.await.unwrap());
    }
    for report in &reports {
        assert!(report.error.is_none(), "{:?}", report.error);
    }
    // The workers' own books agree, and the searches were cut into many
    // leases: a lease explores at most LEASE_NODES nodes (a poll's worth).
    let reported: u64 = reports.iter().map(|r| r.solutions).sum();
    assert_eq!(reported, 576 + 92);
    let leases: u64 = reports.iter().map(|r| r.leases).sum();
    let busy = reports.iter().filter(|r| r.leases > 0).count();
    eprintln!("{leases} leases on {busy} of {WORKERS} workers for {nodes} nodes");
    assert!(
        leases >= nodes / LEASE_NODES,
        "{leases} leases for {nodes} nodes"
    );
    assert!(leases > WORKERS as u64, "{leases} leases");
    server.shutdown().await.expect("clean shutdown");
    audited
}
