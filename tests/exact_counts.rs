//! A search cut into pieces counts exactly what it counts in one piece, on
//! both engines: the same solutions, nodes, updates and cleansings on one
//! thread, on a pool of two threads that polls every few nodes (so that
//! tasks are given away and rebuilt from their paths all the time), and on
//! a coordinator whose worker process runs two threads.
//!
//! Every bench instance that runs in well under a second takes part (the
//! cluster the smaller ones: each give-away there is a round trip).
//! `tests/split.rs` checks the same on random small problems, with every
//! order of running the pieces, checkpoints and give-aways at random.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{server, Worker};
use tonic::transport::Channel;
use xccd::service::job::Event;
use xccd::service::proto as pb;
use xccd::service::proto::solver_service_client::SolverServiceClient;
use xccd::service::{Delivery, EndReason, JobSpec, Pool, PoolConfig};
use xccd::xcc::{dlx_format, Collect, Engine, Problem, RunConfig, Solver, Stats, Task};

const XCCD: &str = env!("CARGO_BIN_EXE_xccd");

/// Nodes between polls of the pool and of the cluster's runs.
const POLL_INTERVAL: u64 = 4;

/// The instances on the pool: those whose DLX2 tree has at most this many
/// nodes (bench/knuth-reference.tsv; the cells trees are smaller).
const POOL_NODES: u64 = 2_000_000;

/// And on the cluster.
const CLUSTER_NODES: u64 = 250_000;

/// What must agree: solutions (sorted), solution count, nodes, updates,
/// cleansings.
#[derive(Debug, PartialEq)]
struct Counts {
    solutions: Vec<Vec<u32>>,
    stats: (u64, u64, u64, u64),
}

fn counts(mut solutions: Vec<Vec<u32>>, stats: &Stats) -> Counts {
    for s in &mut solutions {
        s.sort_unstable();
    }
    solutions.sort_unstable();
    Counts {
        solutions,
        stats: (
            stats.solutions,
            stats.nodes,
            stats.updates,
            stats.cleansings,
        ),
    }
}

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench")
}

/// The bench instances with at most `max_nodes` DLX2 nodes.
fn instances(max_nodes: u64) -> Vec<(String, Problem)> {
    let table = std::fs::read_to_string(bench_dir().join("knuth-reference.tsv")).unwrap();
    let rows: Vec<(String, Problem)> = table
        .lines()
        .filter(|line| !(line.starts_with('#') || line.starts_with("case")))
        .filter_map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let nodes: u64 = f[3].parse().unwrap();
            (nodes <= max_nodes).then(|| {
                let path = bench_dir().join("instances").join(format!("{}.dlx", f[0]));
                let text = std::fs::read_to_string(path).unwrap();
                (f[0].to_string(), dlx_format::parse(&text).unwrap())
            })
        })
        .collect();
    assert!(rows.len() >= 10, "the bench table has small instances");
    rows
}

fn engines(problem: &Problem) -> Vec<Engine> {
    [Engine::Links, Engine::Cells]
        .into_iter()
        .filter(|e| e.supports(problem))
        .collect()
}

fn one_thread(problem: &Problem, engine: Engine) -> Counts {
    let mut collect = Collect::default();
    let outcome = Solver::with_engine(problem, engine)
        .unwrap()
        .run(&Task::root(), &RunConfig::default(), &mut collect)
        .unwrap();
    let solutions = collect
        .solutions
        .into_iter()
        .map(|s| s.into_iter().map(|o| o as u32).collect())
        .collect();
    counts(solutions, &outcome.stats)
}

async fn on_pool(pool: &Pool, problem: &Problem, engine: Engine) -> Counts {
    let job = pool
        .submit(
            Arc::new(problem.clone()),
            JobSpec {
                delivery: Delivery::Stream {
                    buffer_batches: 4,
                    batch_size: 64,
                },
                engine,
                ..JobSpec::default()
            },
        )
        .expect("the pool takes the job");
    let mut solutions = Vec::new();
    loop {
        match job.next_event().await {
            Event::Solutions(batch) => solutions.extend(batch.iter().map(<[u32]>::to_vec)),
            Event::Snapshot(_) => panic!("a job that is not durable took a snapshot"),
            Event::Done(summary) => {
                assert_eq!(summary.reason, EndReason::Complete);
                return counts(solutions, &summary.stats);
            }
        }
    }
}

async fn on_cluster(
    client: &mut SolverServiceClient<Channel>,
    name: &str,
    engine: Engine,
) -> Counts {
    let text = std::fs::read_to_string(bench_dir().join("instances").join(format!("{name}.dlx")));
    let mut stream = client
        .enumerate(pb::EnumerateRequest {
            problem: Some(pb::Problem {
                source: Some(pb::problem::Source::Dlx(text.unwrap())),
            }),
            engine: match engine {
                Engine::Links => pb::Engine::Links,
                Engine::Cells => pb::Engine::Cells,
            } as i32,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|s| panic!("{name}: {s:?}"))
        .into_inner();
    let (mut solutions, mut summary) = (Vec::new(), None);
    while let Some(message) = stream.message().await.expect("the stream") {
        match message.event {
            Some(pb::enumerate_response::Event::Solutions(batch)) => solutions.extend(
                batch
                    .solutions
                    .into_iter()
                    .map(|s| s.option_indices.clone()),
            ),
            Some(pb::enumerate_response::Event::Summary(s)) => summary = Some(s),
            _ => {}
        }
    }
    let summary = summary.expect("a summary");
    assert!(summary.exhausted, "{name} on {engine}");
    let s = summary.statistics.expect("statistics");
    let stats = Stats {
        solutions: s.solutions,
        nodes: s.nodes,
        updates: s.updates,
        cleansings: s.cleansings,
        ..Stats::default()
    };
    counts(solutions, &stats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_runs_count_exactly_what_one_thread_counts() {
    let started = Instant::now();
    let pool = Pool::new(PoolConfig {
        threads: 2,
        poll_interval: POLL_INTERVAL,
        ..PoolConfig::default()
    });
    let mut runs = 0;
    for (name, problem) in instances(POOL_NODES) {
        for engine in engines(&problem) {
            let alone = one_thread(&problem, engine);
            assert!(alone.stats.1 > 0, "{name}: a search counts nodes");
            let pooled = on_pool(&pool, &problem, engine).await;
            assert_eq!(
                pooled.stats, alone.stats,
                "{name} on {engine}: (solutions, nodes, updates, cleansings) on 2 threads polling every {POLL_INTERVAL} nodes vs 1"
            );
            assert!(
                pooled.solutions == alone.solutions,
                "{name} on {engine}: solutions"
            );
            runs += 1;
        }
    }
    let pooled = started.elapsed();

    let coordinator = server(0, POLL_INTERVAL).await;
    let _worker = Worker::start(
        XCCD,
        coordinator.worker_addr.unwrap(),
        "exact-counts",
        "a",
        2,
    );
    let wait = Instant::now();
    while coordinator.pool.remote_slots() < 2 {
        assert!(
            wait.elapsed() < Duration::from_secs(30),
            "no worker in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let channel = Channel::from_shared(format!("http://{}", coordinator.addr))
        .unwrap()
        .connect()
        .await
        .expect("connect");
    let mut client = SolverServiceClient::new(channel).max_decoding_message_size(64 << 20);
    for (name, problem) in instances(CLUSTER_NODES) {
        for engine in engines(&problem) {
            let alone = one_thread(&problem, engine);
            let remote = on_cluster(&mut client, &name, engine).await;
            assert_eq!(
                remote.stats, alone.stats,
                "{name} on {engine}: (solutions, nodes, updates, cleansings) on a worker of 2 threads vs 1"
            );
            assert!(
                remote.solutions == alone.solutions,
                "{name} on {engine}: solutions"
            );
            runs += 1;
        }
    }
    coordinator.shutdown().await.expect("clean shutdown");
    eprintln!(
        "{runs} searches split: pool {:.1} s, cluster {:.1} s",
        pooled.as_secs_f64(),
        (started.elapsed() - pooled).as_secs_f64()
    );
}
