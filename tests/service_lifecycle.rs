//! The gRPC service end to end, over loopback: what a server says of
//! itself and of its runs: progress, health and reflection, and graceful
//! shutdown ending the open streams.
//!
//! The fixtures, and why the tests run one at a time, are in
//! `tests/common/in_process.rs`.

// Requests name the fields they set and default the rest, also when they
// set them all, so that they keep compiling as the contract grows.
#![allow(clippy::needless_update)]

mod common;

use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::Code;
use xccd::service::proto as pb;

use common::fixtures::instance;
use common::in_process::*;
use common::service::{connect, dlx};

// ---------------------------------------------------------------------------
// 8. Progress
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_monotone_and_ends_at_one() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;
    for (name, count_only) in [
        ("queens13", true),
        ("langford11", false),
        ("queens14", true),
    ] {
        let started = Instant::now();
        let ev = enumerate_all(
            &mut client,
            pb::EnumerateRequest {
                problem: dlx(instance(name)),
                count_only,
                progress_interval_seconds: 0.05,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let took = started.elapsed();
        let summary = ev.summary();
        assert!(summary.exhausted, "{name}");
        assert_eq!(summary.solutions, known(name), "{name}");
        let f: Vec<f64> = ev.progress.iter().map(|p| p.fraction_done).collect();
        eprintln!(
            "progress {name}: {:.2} s, {} progress events, fractions {:?}",
            took.as_secs_f64(),
            f.len(),
            f.iter()
                .map(|x| (x * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        );
        assert!(
            f.iter().all(|x| (0.0..=1.0).contains(x)),
            "{name}: in [0, 1]"
        );
        assert!(
            f.windows(2).all(|w| w[0] <= w[1]),
            "{name}: fraction_done goes backwards: {f:?}"
        );
        assert_eq!(f.last(), Some(&1.0), "{name}: the last progress");
        let expected_events = (took.as_secs_f64() / 0.05 / 4.0) as usize;
        assert!(
            f.len() >= expected_events.min(3),
            "{name}: {} progress events in {took:?}",
            f.len()
        );
        let sols: Vec<u64> = ev.progress.iter().map(|p| p.solutions).collect();
        assert!(sols.windows(2).all(|w| w[0] <= w[1]), "{name}: solutions");
        let last = ev.progress.last().unwrap();
        assert_eq!(last.solutions, known(name), "{name}: last progress count");
        for p in &ev.progress {
            assert_eq!(p.workers_total, 2);
            assert!(p.workers_busy <= 2);
            assert!(p.eta_seconds >= 0.0 || p.eta_seconds == -1.0, "{p:?}");
            assert!(p.solutions <= known(name));
        }
        if !count_only {
            assert_eq!(ev.solutions.len() as u64, known(name));
        }
    }
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 9. Health and reflection
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_reflection() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;

    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let channel = within(
        "connect",
        STEP,
        Channel::from_shared(format!("http://{}", server.addr))
            .unwrap()
            .connect(),
    )
    .await
    .unwrap();

    let mut health = HealthClient::new(channel.clone());
    for service in ["", "xccd.v1.SolverService"] {
        let r = within(
            "Health.Check",
            STEP,
            health.check(HealthCheckRequest {
                service: service.into(),
                ..Default::default()
            }),
        )
        .await
        .unwrap_or_else(|e| panic!("health of {service:?}: {e:?}"))
        .into_inner();
        assert_eq!(r.status, ServingStatus::Serving as i32, "{service:?}");
    }
    let r = health
        .check(HealthCheckRequest {
            service: "no.such.Service".into(),
            ..Default::default()
        })
        .await;
    assert_status("health of an unknown service", r, Code::NotFound, &[]);

    let mut reflection = ServerReflectionClient::new(channel.clone());
    let requests = tokio_stream::iter(vec![ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
        ..Default::default()
    }]);
    let mut responses = within(
        "ServerReflectionInfo",
        STEP,
        reflection.server_reflection_info(requests),
    )
    .await
    .unwrap()
    .into_inner();
    let response = next(&mut responses, STEP)
        .await
        .unwrap()
        .expect("a reflection response");
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("not a service list: {response:?}");
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    eprintln!("reflection lists {names:?}");
    assert!(names.contains(&"xccd.v1.SolverService"), "{names:?}");
    assert!(names.contains(&"xccd.v1.PuzzleService"), "{names:?}");
    // The workers' protocol is served on its own listener, not listed here.
    assert!(
        !names.iter().any(|n| n.starts_with("xccd.cluster")),
        "{names:?}"
    );
    assert!(names.contains(&"grpc.health.v1.Health"), "{names:?}");

    // The solver's descriptors are served too.
    let requests = tokio_stream::iter(vec![ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::FileContainingSymbol(
            "xccd.v1.SolverService".into(),
        )),
        ..Default::default()
    }]);
    let mut responses = reflection
        .server_reflection_info(requests)
        .await
        .unwrap()
        .into_inner();
    let response = next(&mut responses, STEP)
        .await
        .unwrap()
        .expect("a response");
    let Some(MessageResponse::FileDescriptorResponse(files)) = response.message_response else {
        panic!("no descriptor for xccd.v1.SolverService: {response:?}");
    };
    assert!(!files.file_descriptor_proto.is_empty());
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 10. Graceful shutdown
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_ends_open_streams() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let pool = server.pool.clone();
    let addr = server.addr;
    let mut client = connect(addr).await;
    let mut streams = Vec::new();
    for (name, count_only) in [("queens15", false), ("pent6x10", true)] {
        let mut stream = client
            .enumerate(pb::EnumerateRequest {
                problem: dlx(instance(name)),
                count_only,
                progress_interval_seconds: 0.05,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut ev = Events::default();
        for _ in 0..3 {
            let m = next(&mut stream, STEP).await.unwrap().expect("a message");
            ev.push(enum_event(m));
        }
        streams.push((name, stream, ev));
    }
    assert_eq!(pool.active_jobs(), 2);

    let started = Instant::now();
    let shutdown = tokio::spawn(server.shutdown());
    for (name, stream, ev) in &mut streams {
        let end = drain(stream, STEP, ev, enum_event).await;
        eprintln!(
            "shutdown: {name} stream ended after {:.3} s with {:?}, summary {:?}",
            started.elapsed().as_secs_f64(),
            end.as_ref().map_err(|s| s.code()),
            ev.summary
        );
        // The summary first, then a status that says the answer is partial
        // and when to try again.
        let status = end.expect_err("a stream the shutdown cut short does not end OK");
        assert_eq!(status.code(), Code::Unavailable, "{name}: {status:?}");
        let details = tonic_types::StatusExt::get_error_details(&status);
        assert_eq!(details.error_info().unwrap().reason, "SHUTTING_DOWN");
        assert!(details.retry_info().is_some(), "{name}: {status:?}");
        let summary = ev.summary();
        assert_eq!(
            summary.reason,
            pb::EndReason::Shutdown as i32,
            "{name}: reason SHUTDOWN"
        );
        assert!(!summary.exhausted);
    }
    let result = within("shutdown", Duration::from_secs(10), shutdown)
        .await
        .expect("the shutdown task");
    let took = started.elapsed();
    eprintln!("shutdown returned after {:.3} s", took.as_secs_f64());
    result.expect("a clean shutdown");
    assert!(took < Duration::from_secs(10));
    assert_eq!(pool.active_jobs(), 0);
    // (`busy_workers` after shutdown: see `no_busy_workers_after_shutdown`.)

    // Nobody listens any more.
    let r = within(
        "connect after shutdown",
        STEP,
        Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_timeout(Duration::from_secs(2))
            .connect(),
    )
    .await;
    assert!(r.is_err(), "the listener is closed");
}
