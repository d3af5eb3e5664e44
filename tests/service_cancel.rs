//! The gRPC service end to end, over loopback: calls that end before their
//! search does, by CancelJob, a dropped Enumerate stream, or a deadline.
//!
//! Two tests came from bugs they found (a deadline status lost in a full
//! channel, tonic's own timeout answering CANCELLED first):
//! `deadline_passing_while_the_client_does_not_read` and
//! `solve_past_its_deadline`.
//!
//! The fixtures, and why the tests run one at a time, are in
//! `tests/common/in_process.rs`.

// Requests name the fields they set and default the rest, also when they
// set them all, so that they keep compiling as the contract grows.
#![allow(clippy::needless_update)]

mod common;

use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use xccd::service::proto as pb;

use common::fixtures::instance;
use common::in_process::*;
use common::service::{connect, create_job, dlx, wait_for, Client};

// ---------------------------------------------------------------------------
// 2. Cancellation: CancelJob, and a dropped Enumerate stream
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_enumeration() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let pool = server.pool.clone();
    let mut client = connect(server.addr).await;

    // A submitted job, cancelled with CancelJob once both workers run it.
    let id = create_job(
        &mut client,
        pb::CreateJobRequest {
            source: dlx(instance("queens15")).map(pb::create_job_request::Source::Problem),
            ..Default::default()
        },
    )
    .await;
    let p = pool.clone();
    wait_for("both workers busy with queens15", STEP, move || {
        p.busy_workers() == 2
    })
    .await;
    let running = client
        .get_job(pb::GetJobRequest {
            name: id.clone(),
            max_solutions: 1,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(running.state, pb::JobState::Running as i32);
    assert!(running.summary.is_none());

    let cancelled_at = Instant::now();
    let c = client
        .cancel_job(pb::CancelJobRequest {
            name: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(c.name, id);
    let mut done = None;
    for _ in 0..1000 {
        let job = client
            .get_job(pb::GetJobRequest {
                name: id.clone(),
                max_solutions: 0,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .job
            .unwrap();
        if job.state().is_final() {
            done = Some(job);
            break;
        }
        assert!(cancelled_at.elapsed() < Duration::from_secs(5), "job ends");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let done = done.expect("the cancelled job ends");
    let job_ended = cancelled_at.elapsed();
    let summary = done.summary.expect("summary");
    assert_eq!(summary.reason, pb::EndReason::Cancelled as i32);
    assert!(!summary.exhausted);
    assert!(summary.solutions < known("queens15"));
    let idle = wait_idle(&server, Duration::from_secs(5)).await;
    eprintln!(
        "CancelJob: job DONE/CANCELLED after {:.3} s, pool idle after {:.3} s, {} solutions counted",
        job_ended.as_secs_f64(),
        (cancelled_at.elapsed()).as_secs_f64().max(idle.as_secs_f64()),
        summary.solutions
    );
    // Watching a cancelled job ends at once with its summary.
    let mut w = client
        .watch_job(pb::WatchJobRequest {
            name: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut ev = Events::default();
    drain(&mut w, STEP, &mut ev, watch_event).await.unwrap();
    assert_eq!(ev.summary().reason, pb::EndReason::Cancelled as i32);
    // Cancelling again is harmless.
    let again = client
        .cancel_job(pb::CancelJobRequest {
            name: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(again.state(), pb::JobState::Cancelled);
    assert!(again.end_time.is_some(), "a cancelled job has an end_time");
    assert_eq!(
        again.summary.unwrap().reason,
        pb::EndReason::Cancelled as i32
    );

    // Disconnect: drop streams mid-way, with solutions and counting only.
    for (name, count_only) in [("queens15", false), ("pent6x10", true), ("queens15", true)] {
        let mut stream = client
            .enumerate(pb::EnumerateRequest {
                problem: dlx(instance(name)),
                count_only,
                batch_size: 64,
                progress_interval_seconds: 0.05,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut ev = Events::default();
        for _ in 0..5 {
            let m = next(&mut stream, STEP).await.unwrap().expect("more");
            ev.push(enum_event(m));
        }
        assert!(ev.summary.is_none(), "{name} still running");
        if count_only {
            // (A stream of solutions may already be held back by its
            // unread buffers, its workers idle.)
            let p = pool.clone();
            wait_for("both workers busy", STEP, move || p.busy_workers() == 2).await;
        }
        assert_eq!(pool.active_jobs(), 1);
        let dropped_at = Instant::now();
        drop(stream);
        let idle = wait_idle(&server, Duration::from_secs(5)).await;
        eprintln!(
            "dropped Enumerate {name} (count_only {count_only}) after {} solutions: pool idle after {:.3} s",
            ev.solutions.len(),
            idle.as_secs_f64().min(dropped_at.elapsed().as_secs_f64())
        );
    }
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 3. Deadlines
// ---------------------------------------------------------------------------

/// Enumerates `name` with a 300 ms deadline, reading with `pause` between
/// messages; returns the status the stream ended with and what it read.
async fn enumerate_past_deadline(
    client: &mut Client,
    name: &str,
    count_only: bool,
    batch_size: u32,
    pause: Duration,
) -> (Result<(), Status>, Events, Duration) {
    let mut request = Request::new(pb::EnumerateRequest {
        problem: dlx(instance(name)),
        count_only,
        batch_size,
        progress_interval_seconds: 0.05,
        ..Default::default()
    });
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let mut stream = client.enumerate(request).await.unwrap().into_inner();
    let mut ev = Events::default();
    let limit = Duration::from_secs(60);
    let mut end = Ok(());
    for _ in 0..MAX_MESSAGES {
        match next(&mut stream, limit).await {
            Ok(Some(m)) => ev.push(enum_event(m)),
            Ok(None) => break,
            Err(status) => {
                end = Err(status);
                break;
            }
        }
        assert!(
            started.elapsed() < limit,
            "the stream outlives its deadline"
        );
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    (end, ev, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_expires_mid_stream() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;

    // Enumerate, with a client that reads as fast as it can.
    for (name, count_only, batch, what) in [
        ("queens15", false, 256, "fast reader"),
        ("pent6x10", true, 0, "count only"),
    ] {
        let (end, ev, took) =
            enumerate_past_deadline(&mut client, name, count_only, batch, Duration::ZERO).await;
        eprintln!(
            "deadline, {what} ({name}): ended after {:.3} s with {:?}, {} messages, {} solutions",
            took.as_secs_f64(),
            end.as_ref()
                .map_err(|s| (s.code(), s.message().to_string())),
            ev.messages,
            ev.solutions.len(),
        );
        assert!(ev.summary.is_none(), "{what}: {:?}", ev.summary);
        assert_status(
            &format!("Enumerate past its deadline, {what}"),
            end,
            Code::DeadlineExceeded,
            &[],
        );
        assert!(took < Duration::from_secs(10), "{what}: took {took:?}");
        let idle = wait_idle(&server, Duration::from_secs(5)).await;
        eprintln!(
            "deadline, {what}: pool idle {:.3} s later",
            idle.as_secs_f64()
        );
    }

    // WatchJob: the watch ends with DEADLINE_EXCEEDED, the job goes on.
    let id = create_job(
        &mut client,
        pb::CreateJobRequest {
            source: dlx(instance("queens15")).map(pb::create_job_request::Source::Problem),
            ..Default::default()
        },
    )
    .await;
    let mut request = Request::new(pb::WatchJobRequest {
        name: id.clone(),
        include_solutions: true,
        progress_interval_seconds: 0.05,
        ..Default::default()
    });
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let mut watch = client.watch_job(request).await.unwrap().into_inner();
    let mut ev = Events::default();
    let end = drain(&mut watch, STEP, &mut ev, watch_event).await;
    eprintln!(
        "deadline, WatchJob: ended after {:.3} s with {:?}, {} messages",
        started.elapsed().as_secs_f64(),
        end.as_ref().map_err(|s| s.code()),
        ev.messages
    );
    assert!(ev.summary.is_none());
    assert_status(
        "WatchJob past its deadline",
        end,
        Code::DeadlineExceeded,
        &[],
    );
    let job = client
        .get_job(pb::GetJobRequest {
            name: id.clone(),
            max_solutions: 1,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(
        job.state,
        pb::JobState::Running as i32,
        "watching never stops the job"
    );
    client
        .cancel_job(pb::CancelJobRequest {
            name: id,
            ..Default::default()
        })
        .await
        .unwrap();
    wait_idle(&server, Duration::from_secs(5)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// A client that stops reading for a while across its deadline: when the
/// deadline passes, the server's pump is waiting for room in the call's
/// channel. The stream must still end with DEADLINE_EXCEEDED once the client
/// reads again, not with an OK status and no summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_passing_while_the_client_does_not_read() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    // Small HTTP/2 windows, so that the transport's buffers fill at once.
    let channel = within(
        "connect",
        STEP,
        Channel::from_shared(format!("http://{}", server.addr))
            .unwrap()
            .initial_stream_window_size(Some(64 << 10))
            .initial_connection_window_size(Some(64 << 10))
            .connect(),
    )
    .await
    .unwrap();
    let mut client = Client::new(channel);
    let mut request = Request::new(pb::EnumerateRequest {
        problem: dlx(instance("queens15")),
        batch_size: 256,
        ..Default::default()
    });
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let mut stream = client.enumerate(request).await.unwrap().into_inner();
    let mut ev = Events::default();
    for _ in 0..2 {
        let m = next(&mut stream, STEP).await.unwrap().expect("a message");
        ev.push(enum_event(m));
    }
    // Not reading across the deadline.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let idle = wait_idle(&server, Duration::from_secs(5)).await;
    let end = drain(&mut stream, STEP, &mut ev, enum_event).await;
    eprintln!(
        "deadline while not reading (queens15): pool idle {:.3} s after the pause; stream ended after {:.3} s with {:?}, \
         {} messages, {} solutions, summary {:?}",
        idle.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        end.as_ref().map_err(|s| (s.code(), s.message().to_string())),
        ev.messages,
        ev.solutions.len(),
        ev.summary
    );
    assert!(ev.summary.is_none(), "{:?}", ev.summary);
    assert!((ev.solutions.len() as u64) < known("queens15"));
    assert_status(
        "Enumerate past its deadline, client not reading",
        end,
        Code::DeadlineExceeded,
        &[],
    );
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// A Solve whose deadline passes: DEADLINE_EXCEEDED (what `solve` in
/// grpc.rs answers), and the search stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solve_past_its_deadline() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let mut client = connect(server.addr).await;
    let mut request = Request::new(solve_request(&instance("pent6x10"), 100_000));
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let r = within("Solve with a deadline", STEP, client.solve(request)).await;
    let took = started.elapsed();
    let idle = wait_idle(&server, Duration::from_secs(5)).await;
    eprintln!(
        "deadline, Solve: answered after {:.3} s with {:?}, pool idle {:.3} s later",
        took.as_secs_f64(),
        r.as_ref()
            .map(|_| ())
            .map_err(|s| (s.code(), s.message().to_string())),
        idle.as_secs_f64()
    );
    assert!(took < Duration::from_secs(10), "Solve took {took:?}");
    assert_status("Solve past its deadline", r, Code::DeadlineExceeded, &[]);
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}
