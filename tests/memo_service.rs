//! Memoized counting (`memo`) through the gRPC service, against a real
//! server on loopback: the counts and DLX6's node counts that `xccd solve
//! --memo` gives (bench/dlx6-reference.tsv) from Enumerate, Solve and a
//! durable-less CreateJob; a count past 2^64-1 carried exactly in
//! `solutions_decimal`; multiplicities; a limit; and each refusal with its
//! field, reason and code.

#![allow(clippy::needless_update)]

mod common;

use std::time::Duration;

use common::dominoes::dominoes;
use tonic::Code;
use xccd::service::proto as pb;

use common::fixtures::{bench, instance};
use common::service::{connect, dlx, reason_of, Client};

/// The summary of a count-only Enumerate (its last event).
async fn enumerate(client: &mut Client, request: pb::EnumerateRequest) -> pb::Summary {
    let mut stream = client
        .enumerate(request)
        .await
        .expect("accepted")
        .into_inner();
    let mut summary = None;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(60), stream.message())
        .await
        .expect("an event within a minute")
        .expect("the stream ends OK")
    {
        match event.event {
            Some(pb::enumerate_response::Event::Summary(s)) => summary = Some(s),
            Some(pb::enumerate_response::Event::Solutions(_)) => {
                panic!("a count-only stream sent solutions")
            }
            _ => {}
        }
    }
    summary.expect("a summary")
}

fn refused<T>(answer: Result<T, tonic::Status>) -> tonic::Status {
    answer.err().expect("refused")
}

fn memo_refused(status: tonic::Status, code: Code, reason: &str, words: &str) {
    assert_eq!(status.code(), code, "{status:?}");
    assert_eq!(reason_of(&status), reason, "{status:?}");
    assert!(status.message().contains(words), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memo_counts_through_enumerate_solve_and_jobs() {
    let server = common::cluster::server(2, 1024).await;
    let mut client = connect(server.addr).await;

    // DLX6's figures, as the CLI gives them (tests/memo.rs pins those).
    let summary = enumerate(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(bench("memo/domino8x8")),
            count_only: true,
            memo: true,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(summary.reason, pb::EndReason::Complete as i32);
    assert_eq!(summary.solutions, 12_988_816);
    let stats = summary.statistics.unwrap();
    assert_eq!((stats.nodes, stats.updates), (2317, 10602));
    assert_eq!(stats.solutions_decimal, "12988816");
    assert!(summary.error.is_none());

    // The same count without memo: the plain search agrees (4x7: 781).
    for memo in [false, true] {
        let summary = enumerate(
            &mut client,
            pb::EnumerateRequest {
                problem: dlx(bench("memo/domino4x7")),
                count_only: true,
                memo,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(summary.solutions, 781, "memo {memo}");
    }

    // A limit caps the count, and says so.
    let summary = enumerate(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(bench("memo/domino8x8")),
            count_only: true,
            memo: true,
            limit: 1000,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(summary.reason, pb::EndReason::Limit as i32);
    assert_eq!(summary.solutions, 1000);

    // Solve: no solutions, the count of all of them.
    let answer = client
        .solve(pb::SolveRequest {
            problem: dlx(bench("memo/domino10x10")),
            memo: true,
            ..Default::default()
        })
        .await
        .expect("Solve OK")
        .into_inner();
    assert!(answer.solutions.is_empty());
    assert!(answer.exhausted);
    let stats = answer.statistics.unwrap();
    assert_eq!(stats.solutions, 258_584_046_368);
    assert_eq!(stats.nodes, 13562);

    // Past 2^64-1: the 14x14 board's tilings (OEIS A004003), exact in
    // solutions_decimal, saturated in the numbers.
    let summary = enumerate(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(dominoes(14, 14)),
            count_only: true,
            memo: true,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(summary.reason, pb::EndReason::Complete as i32);
    assert_eq!(summary.solutions, u64::MAX);
    assert_eq!(
        summary.statistics.unwrap().solutions_decimal,
        "112202208776036178000000"
    );

    // A job: a weak hitori (no connectivity condition) counted by memo
    // and by search gives the same number.
    let hitori = pb::Puzzle {
        kind: pb::PuzzleKind::Hitori as i32,
        grid: Some(pb::puzzle::Grid::Text(
            "1 1 2 3\n2 3 1 1\n3 1 4 2\n4 2 3 1\n".into(),
        )),
        weak: true,
        ..Default::default()
    };
    let mut counts = Vec::new();
    for memo in [false, true] {
        let job = client
            .create_job(pb::CreateJobRequest {
                source: Some(pb::create_job_request::Source::Puzzle(hitori.clone())),
                count_only: true,
                memo,
                ..Default::default()
            })
            .await
            .expect("CreateJob OK")
            .into_inner()
            .job
            .unwrap();
        let mut watch = client
            .watch_job(pb::WatchJobRequest {
                name: job.name.clone(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut summary = None;
        while let Some(event) = tokio::time::timeout(Duration::from_secs(60), watch.message())
            .await
            .expect("an event within a minute")
            .expect("the watch ends OK")
        {
            if let Some(pb::watch_job_response::Event::Summary(s)) = event.event {
                summary = Some(s);
            }
        }
        let summary = summary.expect("the job's summary");
        assert_eq!(
            summary.reason,
            pb::EndReason::Complete as i32,
            "{summary:?}"
        );
        counts.push(summary.solutions);
    }
    assert_eq!(counts[0], counts[1], "weak hitori: search vs memo");
    assert!(counts[0] > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memo_refuses_what_it_cannot_count_by_field() {
    let server = common::cluster::server(1, 1024).await;
    let mut client = connect(server.addr).await;
    let domino = || dlx(bench("memo/domino4x7"));

    let status = refused(
        client
            .enumerate(pb::EnumerateRequest {
                problem: domino(),
                memo: true,
                ..Default::default()
            })
            .await,
    );
    memo_refused(status, Code::InvalidArgument, "INVALID_ARGUMENT", "memo: ");
    let status = refused(
        client
            .solve(pb::SolveRequest {
                problem: domino(),
                memo: true,
                limit: 5,
                ..Default::default()
            })
            .await,
    );
    memo_refused(
        status,
        Code::InvalidArgument,
        "INVALID_ARGUMENT",
        "leave limit at 0",
    );
    let status = refused(
        client
            .solve(pb::SolveRequest {
                problem: domino(),
                memo: true,
                engine: pb::Engine::Cells as i32,
                ..Default::default()
            })
            .await,
    );
    memo_refused(
        status,
        Code::InvalidArgument,
        "INVALID_ARGUMENT",
        "leave engine unset",
    );
    // Multiplicities are counted (Algorithm M memoized), as the plain
    // search counts them.
    for name in ["mcc_simple", "mcc_rowcol4k2"] {
        let mut counts = Vec::new();
        for memo in [false, true] {
            let summary = enumerate(
                &mut client,
                pb::EnumerateRequest {
                    problem: dlx(instance(name)),
                    count_only: true,
                    memo,
                    ..Default::default()
                },
            )
            .await;
            assert_eq!(summary.reason, pb::EndReason::Complete as i32, "{name}");
            counts.push(summary.solutions);
        }
        assert!(counts[0] > 0, "{name}");
        assert_eq!(counts[0], counts[1], "{name}: memo against plain");
    }
    // A strict hitori's connectivity looks at whole solutions.
    let status = refused(
        client
            .create_job(pb::CreateJobRequest {
                source: Some(pb::create_job_request::Source::Puzzle(pb::Puzzle {
                    kind: pb::PuzzleKind::Hitori as i32,
                    grid: Some(pb::puzzle::Grid::Text("1 1\n1 2\n".into())),
                    ..Default::default()
                })),
                count_only: true,
                memo: true,
                ..Default::default()
            })
            .await,
    );
    memo_refused(
        status,
        Code::InvalidArgument,
        "INVALID_ARGUMENT",
        "side condition",
    );
    // Every refusal names the field.
    let status = refused(
        client
            .solve(pb::SolveRequest {
                problem: domino(),
                memo: true,
                limit: 5,
                ..Default::default()
            })
            .await,
    );
    use tonic_types::StatusExt;
    let fields: Vec<String> = status
        .get_details_bad_request()
        .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
        .unwrap_or_default();
    assert_eq!(fields, ["memo"]);

    // A pure coordinator runs no searches itself: a memoized count would
    // have no thread to run on.
    let coordinator = common::cluster::server(0, 1024).await;
    let mut client = connect(coordinator.addr).await;
    let status = refused(
        client
            .solve(pb::SolveRequest {
                problem: domino(),
                memo: true,
                ..Default::default()
            })
            .await,
    );
    memo_refused(
        status,
        Code::FailedPrecondition,
        "NEEDS_LOCAL_THREADS",
        "memoized count",
    );
}
