//! Two coordinators on one PostgreSQL store (a real server of the test's
//! own), one leading, one standing by; two `xccd worker` processes given
//! both addresses. A durable enumeration of n queens runs while the leader
//! is killed (`kill -9`) three times at random moments, each time started
//! again as the new standby: the other takes over, resumes the job from its
//! last snapshot, and the workers and a watching client follow it. Every
//! solution read back through ListJobSolutions is a valid placement, each
//! once, as many as there are; the watcher saw each once. The time each
//! takeover took is printed. A leader frozen (SIGSTOP) past its lease is
//! taken over too, and once thawed steps down with its writes refused.
//!
//! The instance is queens15 (2,279,184 solutions); `XCCD_FAILOVER_QUEENS=14`
//! runs queens14 (365,596), shorter than the three kills. Kill moments
//! are random (the seed is printed; `XCCD_DURABLE_SEED` replays one).

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::coordinators::{
    check_queens, finished_exact, get, leader_client, placement, submit_queens, workers,
    Coordinator, QUEENS,
};
use common::rng::{seed, Rng};
use common::service::{reason_of, Client, Process};
use tonic_health::pb::health_check_response::ServingStatus;
use xccd::service::proto as pb;

/// Watches `job` with WatchJob from the solutions seen so far on, through
/// every failover, until its summary says it is complete: the solutions in
/// the order they came.
async fn watch(apis: Vec<SocketAddr>, job: String, n: usize) -> Vec<u64> {
    let mut seen: Vec<u64> = Vec::new();
    let mut at = 0;
    loop {
        let addr = apis[at % apis.len()];
        at += 1;
        let channel = match tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_timeout(Duration::from_millis(500))
            .connect()
            .await
        {
            Ok(channel) => channel,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let mut client = Client::new(channel).max_decoding_message_size(64 << 20);
        let call = client
            .watch_job(pb::WatchJobRequest {
                name: job.clone(),
                include_solutions: true,
                from_solution: seen.len() as u64,
                packed_solutions: true,
                ..Default::default()
            })
            .await;
        let mut stream = match call {
            Ok(answer) => answer.into_inner(),
            Err(status) => {
                assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Stay with this coordinator while it answers.
        at -= 1;
        loop {
            match stream.message().await {
                Ok(Some(message)) => match message.event {
                    Some(pb::watch_job_response::Event::Solutions(batch)) => {
                        let batch = common::packed::unpack(&batch);
                        seen.extend(batch.iter().map(|s| placement(n, s)));
                    }
                    Some(pb::watch_job_response::Event::Summary(summary)) => {
                        if summary.reason == pb::EndReason::Complete as i32 {
                            return seen;
                        }
                        // A coordinator stepping down (SHUTDOWN): go on
                        // elsewhere.
                        at += 1;
                        break;
                    }
                    _ => {}
                },
                // Its coordinator was killed.
                Ok(None) | Err(_) => {
                    at += 1;
                    break;
                }
            }
        }
    }
}

fn queens_n() -> usize {
    std::env::var("XCCD_FAILOVER_QUEENS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n: &usize| (4..=15).contains(n))
        .unwrap_or(15)
}

/// Starts both coordinators (the first leads) and two workers given both
/// workers' addresses.
async fn cluster(url: &str) -> (Vec<Coordinator>, Vec<Process>) {
    let mut coordinators = vec![Coordinator::new("a", url), Coordinator::new("b", url)];
    coordinators[0].start();
    coordinators[0]
        .wait_health(ServingStatus::Serving, Duration::from_secs(30))
        .await;
    coordinators[1].start();
    coordinators[1]
        .wait_health(ServingStatus::NotServing, Duration::from_secs(30))
        .await;
    // A standby refuses with the leader's address.
    let mut standby = coordinators[1].client().await.expect("the standby listens");
    let status = standby
        .get_job(pb::GetJobRequest {
            name: "jobs/1".into(),
            max_solutions: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert_eq!(reason_of(&status), "NOT_LEADER");
    use tonic_types::StatusExt;
    let leader = status.get_details_error_info().expect("ErrorInfo").metadata["leader"].clone();
    assert_eq!(leader, coordinators[0].api.to_string());
    let workers = workers(&coordinators, 2, "failover");
    (coordinators, workers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_killed_three_times_the_job_ends_exact() {
    let Some(database) = common::postgres::server() else {
        return;
    };
    let url = database.url();
    let n = queens_n();
    let mut rng = Rng::new(seed());
    let (mut coordinators, workers) = cluster(&url).await;
    let job = submit_queens(&coordinators, n).await;
    let watcher = tokio::spawn(watch(
        coordinators.iter().map(|c| c.api).collect(),
        job.clone(),
        n,
    ));
    let started = Instant::now();
    let mut takeovers = Vec::new();
    for round in 1..=3 {
        let delay = 500 + rng.below(2500) as u64;
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let (leader, _) = leader_client(&coordinators, Duration::from_secs(30)).await;
        let before = get(&coordinators, &job).await;
        let standby = 1 - leader;
        coordinators[leader].process().kill9();
        let killed = Instant::now();
        let took = coordinators[standby]
            .wait_health(ServingStatus::Serving, Duration::from_secs(30))
            .await;
        let took = took.max(killed.elapsed());
        let after = get(&coordinators, &job).await;
        eprintln!(
            "round {round}: killed {} after {delay} ms with {} solutions stored (job {}); {} led \
             {:.2} s later with {} stored",
            coordinators[leader].name,
            before.stored_solutions,
            if before.state().is_final() {
                "already done"
            } else {
                "running"
            },
            coordinators[standby].name,
            took.as_secs_f64(),
            after.stored_solutions
        );
        assert!(
            after.stored_solutions >= before.stored_solutions,
            "a takeover lost committed solutions"
        );
        takeovers.push(took);
        coordinators[leader].start();
        coordinators[leader]
            .wait_health(ServingStatus::NotServing, Duration::from_secs(30))
            .await;
    }
    let stored = finished_exact(&coordinators, &job, n, "after the kills").await;
    let watched = tokio::time::timeout(Duration::from_secs(120), watcher)
        .await
        .expect("the watcher ends")
        .expect("the watcher");
    check_queens(n, &watched, "WatchJob through the failovers");
    assert_eq!(watched, stored, "the watcher saw the stored order");
    let worst = takeovers.iter().max().unwrap();
    eprintln!(
        "queens{n}: {} solutions exact through 3 kill -9 of the leader; takeover (kill to the \
         standby SERVING) {}; worst {:.2} s; the run took {:.1} s",
        QUEENS[n],
        takeovers
            .iter()
            .map(|t| format!("{:.2} s", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", "),
        worst.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        *worst < Duration::from_secs(10),
        "a takeover took {worst:?}, more than the stated bound"
    );
    drop(workers);
}

/// A leader frozen (SIGSTOP: its connections stay open, so only the
/// lease's expiry frees the lead) is taken over within the lease's bound;
/// thawed, it finds its writes refused or its lease gone, and stands by.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_leader_is_taken_over_and_fenced_when_it_wakes() {
    let Some(database) = common::postgres::server() else {
        return;
    };
    let url = database.url();
    let n = queens_n().min(13);
    let (mut coordinators, workers) = cluster(&url).await;
    let job = submit_queens(&coordinators, n).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    coordinators[0].process().signal("-STOP");
    let frozen = Instant::now();
    coordinators[1]
        .wait_health(ServingStatus::Serving, Duration::from_secs(30))
        .await;
    let took = frozen.elapsed();
    eprintln!("a frozen leader taken over in {:.2} s", took.as_secs_f64());
    assert!(took < Duration::from_secs(10), "took {took:?}");
    coordinators[0].process().signal("-CONT");
    coordinators[0]
        .wait_health(ServingStatus::NotServing, Duration::from_secs(30))
        .await;
    eprintln!(
        "the thawed one stands by; its fenced writes: {}",
        coordinators[0]
            .counter("xccd_store_fenced_writes_total")
            .await
    );
    finished_exact(&coordinators, &job, n, "after the freeze").await;
    drop(workers);
}
