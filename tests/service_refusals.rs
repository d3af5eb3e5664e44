//! The gRPC service end to end, over loopback: what it refuses, and how:
//! invalid problems and ids, too many jobs, problems too big.
//!
//! The fixtures, and why the tests run one at a time, are in
//! `tests/common/in_process.rs`.

// Requests name the fields they set and default the rest, also when they
// set them all, so that they keep compiling as the contract grows.
#![allow(clippy::needless_update)]

mod common;

use std::time::Duration;

use tonic::Code;
use xccd::service::grpc::ApiConfig;
use xccd::service::proto as pb;

use common::fixtures::instance;
use common::in_process::*;
use common::service::{connect, create_job, dlx};

// ---------------------------------------------------------------------------
// 6. Invalid problems and ids
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_are_rejected() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;

    let bad_dlx: [(&str, &str, &[&str]); 5] = [
        (
            "unknown item",
            "A B\nA B\n| comment\nA C\n",
            &["problem.dlx", "line 4", "\"C\""],
        ),
        (
            "duplicate item",
            "A B A\nA B\n",
            &["problem.dlx", "line 1", "duplicate", "\"A\""],
        ),
        (
            "bound above",
            "3:2|A B\nA B\n",
            &["problem.dlx", "line 1", "bound", "\"A\""],
        ),
        (
            "bad bound digit",
            "A 1:x|B\nA B\n",
            &["problem.dlx", "line 1", "bound"],
        ),
        ("no item line", "| only a comment\n", &["problem.dlx"]),
    ];
    for (what, text, words) in bad_dlx {
        let r = client.solve(solve_request(text, 1)).await;
        assert_status(&format!("Solve, {what}"), r, Code::InvalidArgument, words);
        let r = client
            .enumerate(pb::EnumerateRequest {
                problem: dlx(text),
                ..Default::default()
            })
            .await
            .map(|_| ());
        assert_status(
            &format!("Enumerate, {what}"),
            r,
            Code::InvalidArgument,
            words,
        );
        let r = client
            .create_job(pb::CreateJobRequest {
                source: dlx(text).map(pb::create_job_request::Source::Problem),
                ..Default::default()
            })
            .await;
        assert_status(
            &format!("CreateJob, {what}"),
            r,
            Code::InvalidArgument,
            words,
        );
    }

    let item = |name: &str, kind: pb::ItemKind| pb::Item {
        name: name.into(),
        kind: kind as i32,
        ..Default::default()
    };
    let entry = |item: &str, color: &str| pb::OptionEntry {
        item: item.into(),
        color: color.into(),
        ..Default::default()
    };
    let color_on_primary = pb::StructuredProblem {
        items: vec![
            item("A", pb::ItemKind::Primary),
            item("X", pb::ItemKind::Secondary),
        ],
        options: vec![
            pb::ProblemOption {
                entries: vec![entry("X", "red"), entry("A", "")],
                ..Default::default()
            },
            pb::ProblemOption {
                entries: vec![entry("X", ""), entry("A", "blue")],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let r = client
        .solve(pb::SolveRequest {
            problem: structured(color_on_primary),
            ..Default::default()
        })
        .await;
    assert_status(
        "structured, color on a primary item",
        r,
        Code::InvalidArgument,
        &["problem.structured.options[1].entries[1]", "\"A\""],
    );
    let unknown = pb::StructuredProblem {
        items: vec![item("A", pb::ItemKind::Unspecified)],
        options: vec![pb::ProblemOption {
            entries: vec![entry("A", ""), entry("Z", "")],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = client
        .solve(pb::SolveRequest {
            problem: structured(unknown),
            ..Default::default()
        })
        .await;
    assert_status(
        "structured, unknown item",
        r,
        Code::InvalidArgument,
        &["problem.structured.options[0].entries[1]", "\"Z\""],
    );
    let bad_bounds = pb::StructuredProblem {
        items: vec![pb::Item {
            name: "A".into(),
            kind: pb::ItemKind::Primary as i32,
            min: 2,
            max: 0,
            ..Default::default()
        }],
        options: vec![pb::ProblemOption {
            entries: vec![entry("A", "")],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = client
        .solve(pb::SolveRequest {
            problem: structured(bad_bounds),
            ..Default::default()
        })
        .await;
    assert_status(
        "structured, max 0 with min set",
        r,
        Code::InvalidArgument,
        &["problem.structured.items[0]"],
    );

    let r = client.solve(pb::SolveRequest::default()).await;
    assert_status(
        "Solve without a problem",
        r,
        Code::InvalidArgument,
        &["problem"],
    );
    let r = client
        .enumerate(pb::EnumerateRequest {
            problem: Some(pb::Problem { source: None }),
            ..Default::default()
        })
        .await
        .map(|_| ());
    assert_status(
        "Enumerate with an empty problem",
        r,
        Code::InvalidArgument,
        &["problem"],
    );
    let r = client.create_job(pb::CreateJobRequest::default()).await;
    assert_status(
        "CreateJob without a problem",
        r,
        Code::InvalidArgument,
        &["problem"],
    );

    for (id, code) in [
        ("", Code::InvalidArgument),
        ("banana", Code::InvalidArgument),
        ("job-987654321", Code::NotFound),
    ] {
        let r = client
            .get_job(pb::GetJobRequest {
                name: id.into(),
                max_solutions: 0,
                ..Default::default()
            })
            .await;
        assert_status(&format!("GetJob {id:?}"), r, code, &["name"]);
        let r = client
            .cancel_job(pb::CancelJobRequest {
                name: id.into(),
                ..Default::default()
            })
            .await;
        assert_status(&format!("CancelJob {id:?}"), r, code, &["name"]);
        let r = client
            .watch_job(pb::WatchJobRequest {
                name: id.into(),
                ..Default::default()
            })
            .await
            .map(|_| ());
        assert_status(&format!("WatchJob {id:?}"), r, code, &["name"]);
    }

    // Nothing leaked, and the server still answers.
    assert_eq!(server.pool.active_jobs(), 0);
    let r = client
        .solve(solve_request(&instance("sudoku_hard17"), 2))
        .await
        .unwrap()
        .into_inner();
    assert!(r.exhausted);
    assert_eq!(r.solutions.len(), 1);
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 7. Limits: too many jobs, problems too big
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_enforced() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(1)).await;
    let mut client = connect(server.addr).await;
    let id = create_job(
        &mut client,
        pb::CreateJobRequest {
            source: dlx(instance("pent6x10")).map(pb::create_job_request::Source::Problem),
            ..Default::default()
        },
    )
    .await;
    let small = instance("queens8");
    let r = client
        .create_job(pb::CreateJobRequest {
            source: dlx(&small).map(pb::create_job_request::Source::Problem),
            ..Default::default()
        })
        .await;
    assert_status(
        "a second job",
        r,
        Code::ResourceExhausted,
        &["too many jobs"],
    );
    // Small calls have their own limit: long jobs filling theirs do not
    // refuse them.
    let r = client.solve(solve_request(&small, 1)).await.unwrap();
    assert_eq!(
        r.into_inner().solutions.len(),
        1,
        "Solve while long jobs are full"
    );
    let r = client
        .enumerate(pb::EnumerateRequest {
            problem: dlx(&small),
            ..Default::default()
        })
        .await
        .map(|_| ());
    assert_status("Enumerate while full", r, Code::ResourceExhausted, &[]);
    client
        .cancel_job(pb::CancelJobRequest {
            name: id,
            ..Default::default()
        })
        .await
        .unwrap();
    wait_idle(&server, Duration::from_secs(5)).await;
    let r = client.solve(solve_request(&small, 1)).await.unwrap();
    assert_eq!(r.into_inner().solutions.len(), 1, "a slot is free again");
    within("shutdown", STEP, server.shutdown()).await.unwrap();

    // Size limits.
    let mut cfg = config(16);
    cfg.api = ApiConfig::default();
    cfg.api.limits.max_text_bytes = 1000;
    cfg.api.limits.max_options = 100;
    let server = serve(cfg).await;
    let mut client = connect(server.addr).await;
    let big = instance("queens10");
    assert!(big.len() > 1000 && small.len() <= 1000);
    let r = client.solve(solve_request(&big, 1)).await;
    assert_status(
        "DLX text over the limit",
        r,
        Code::InvalidArgument,
        &["problem.dlx", "limit", "1000", &big.len().to_string()],
    );
    let r = client
        .enumerate(pb::EnumerateRequest {
            problem: structured(to_structured(&instance("queens11"))),
            count_only: true,
            ..Default::default()
        })
        .await
        .map(|_| ());
    assert_status(
        "structured, too many options",
        r,
        Code::InvalidArgument,
        &["options", "limit", "100", "121"],
    );
    let ev = enumerate_all(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(&small),
            count_only: true,
            ..Default::default()
        },
    )
    .await
    .expect("a problem within the limits");
    assert_eq!(ev.summary().solutions, known("queens8"));
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}
