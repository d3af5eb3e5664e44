//! The gRPC service end to end, over loopback, under load: many clients
//! while an enumeration fills the pool, a slow reader's backpressure
//! (workers stop, memory stays bounded), and small calls served first
//! while long jobs hold every worker and slot.
//!
//! The fixtures, and why the tests run one at a time, are in
//! `tests/common/in_process.rs`.

// Requests name the fields they set and default the rest, also when they
// set them all, so that they keep compiling as the contract grows.
#![allow(clippy::needless_update)]

mod common;

use std::collections::{BTreeSet, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::{Code, Streaming};
use xccd::service::proto as pb;
use xccd::xcc::{RunConfig, Solver, Task};

use common::fixtures::instance;
use common::in_process::*;
use common::service::{connect, dlx, wait_for, Client};
use pb::enumerate_response::Event;

// ---------------------------------------------------------------------------
// 4. Many concurrent clients while an enumeration fills the pool
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_clients() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(128)).await;
    let pool = server.pool.clone();
    let mut client = connect(server.addr).await;

    let sudokus = ["sudoku_hard17", "sudoku_royle17a", "sudoku_royle17b"];
    let mut answers = Vec::new();
    for name in sudokus {
        let text = instance(name);
        let all = all_solutions(&parse(&text)).await;
        assert_eq!(all.len(), 1);
        answers.push((name, text, all.into_iter().next().unwrap()));
    }
    let answers = Arc::new(answers);

    let mut big = client
        .enumerate(pb::EnumerateRequest {
            problem: dlx(instance("pent6x10")),
            count_only: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let p = pool.clone();
    wait_for("both workers busy with pent6x10", STEP, move || {
        p.busy_workers() == 2
    })
    .await;

    let addr = server.addr;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..50 {
        let answers = answers.clone();
        tasks.spawn(async move {
            let mut client = connect(addr).await;
            let (name, text, solution) = &answers[i % answers.len()];
            let t = Instant::now();
            let r = client
                .solve(solve_request(text, 2))
                .await
                .unwrap_or_else(|e| panic!("client {i}: Solve {name}: {e:?}"))
                .into_inner();
            assert!(r.exhausted, "client {i}: {name} exhausted");
            assert_eq!(r.solutions.len(), 1, "client {i}: {name}");
            assert_eq!(&r.solutions[0].option_indices, solution, "client {i}");
            t.elapsed()
        });
    }
    let queens = [("queens8", 92), ("queens9", 352), ("queens10", 724)];
    for i in 0..12 {
        let (name, count) = queens[i % queens.len()];
        assert_eq!(count, known(name));
        tasks.spawn(async move {
            let mut client = connect(addr).await;
            let t = Instant::now();
            let ev = enumerate_all(
                &mut client,
                pb::EnumerateRequest {
                    problem: dlx(instance(name)),
                    count_only: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap_or_else(|e| panic!("client {i}: Enumerate {name}: {e:?}"));
            assert_eq!(ev.summary().solutions, count, "client {i}: {name}");
            assert!(ev.summary().exhausted);
            t.elapsed()
        });
    }
    let mut latencies = Vec::new();
    for _ in 0..62 {
        let joined = within(
            "the concurrent clients",
            Duration::from_secs(120),
            tasks.join_next(),
        )
        .await
        .expect("62 tasks");
        latencies.push(joined.expect("a client task failed"));
    }
    let all_done = started.elapsed();
    latencies.sort();
    eprintln!(
        "62 concurrent clients (50 Solve, 12 Enumerate) during pent6x10: all answered in {:.3} s; latency median {:.3} s, max {:.3} s",
        all_done.as_secs_f64(),
        latencies[latencies.len() / 2].as_secs_f64(),
        latencies.last().unwrap().as_secs_f64()
    );
    // The big enumeration kept running throughout.
    assert_eq!(
        pool.active_jobs(),
        1,
        "only pent6x10 is left, still running"
    );
    let m = next(&mut big, STEP)
        .await
        .unwrap()
        .expect("pent6x10 still streams");
    assert!(
        matches!(enum_event(m), Event::Progress(_)),
        "pent6x10 has not ended"
    );
    drop(big);
    wait_idle(&server, Duration::from_secs(5)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 5. Slow reader: backpressure stops the workers, memory stays bounded
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_reader_backpressure() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(16)).await;
    let pool = server.pool.clone();
    let mut client = connect(server.addr).await;
    let text = instance("latin5");
    let problem = parse(&text);
    let expected = known("latin5");
    assert_eq!(expected, 161_280);
    assert!(problem.options().len() <= 128, "solutions fit a u128 mask");

    let rss_before = rss_kib();
    let mut stream = client
        .enumerate(pb::EnumerateRequest {
            problem: dlx(&text),
            batch_size: 16,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut ev = Events::default();
    for _ in 0..4 {
        let m = next(&mut stream, STEP).await.unwrap().expect("a message");
        ev.push(enum_event(m));
    }
    let read_before_pause = ev.solutions.len();
    let pause_started = Instant::now();

    // The client stops reading. The transport's buffers (HTTP/2 windows)
    // absorb some messages, then the job's buffer fills and the workers must
    // go idle for good while the job stays. Stop reading for at least 2 s,
    // until no worker has been busy for the last second (at most 15 s).
    let mut samples = 0usize;
    let mut busy_samples = 0usize;
    let mut last_busy: Option<Duration> = None;
    let mut quiet_since = Duration::ZERO;
    loop {
        let now = pause_started.elapsed();
        samples += 1;
        if pool.busy_workers() > 0 {
            busy_samples += 1;
            last_busy = Some(now);
            quiet_since = now;
        }
        assert_eq!(pool.active_jobs(), 1, "the job waits for its reader");
        if now >= Duration::from_secs(2) && now - quiet_since >= Duration::from_secs(1) {
            break;
        }
        assert!(
            now < Duration::from_secs(15) && samples < 100_000,
            "workers still busy {now:?} after the client stopped reading (last busy at {last_busy:?})"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let rss_paused = rss_kib();
    let paused = pause_started.elapsed();
    let growth = rss_paused.saturating_sub(rss_before);
    eprintln!(
        "slow reader: read {read_before_pause} solutions, then paused {:.2} s; workers last seen busy at {:?} \
         into the pause ({busy_samples} busy of {samples} samples), idle since; \
         RSS before {} KiB, paused {} KiB, growth {} KiB",
        paused.as_secs_f64(),
        last_busy,
        rss_before,
        rss_paused,
        growth
    );
    assert_eq!(pool.busy_workers(), 0);
    assert!(
        growth < 50 * 1024,
        "RSS grew by {growth} KiB while the client did not read"
    );

    // Read the rest: every solution exactly once.
    drain(&mut stream, STREAM, &mut ev, enum_event)
        .await
        .expect("the stream ends well");
    let rss_end = rss_kib();
    let summary = ev.summary().clone();
    assert_eq!(summary.solutions, expected);
    assert!(summary.exhausted);
    assert_eq!(ev.solutions.len() as u64, expected, "solutions received");
    let mut seen: HashSet<u128> = HashSet::with_capacity(ev.solutions.len());
    for s in &ev.solutions {
        let mask = s
            .option_indices
            .iter()
            .fold(0u128, |m, &o| m | (1u128 << o));
        assert!(
            seen.insert(mask),
            "duplicate solution {:?}",
            s.option_indices
        );
    }
    for s in ev.solutions.iter().step_by(97) {
        check_solution("latin5", &problem, s, false);
    }
    // (Batches over `batch_size`: see `enumerate_batches_respect_batch_size`.)
    eprintln!(
        "slow reader: {} solutions in {} batches (largest {:?}), all distinct; RSS at the end {} KiB",
        ev.solutions.len(),
        ev.batches.len(),
        ev.batches.iter().max(),
        rss_end
    );
    wait_idle(&server, Duration::from_secs(5)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------
// 9. Small calls first (issue 14): unary calls are interactive work
// ---------------------------------------------------------------------------

const SUDOKU_PUZZLE: &str =
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";

type PuzzleClient = pb::puzzle_service_client::PuzzleServiceClient<Channel>;

async fn connect_puzzles(addr: SocketAddr) -> PuzzleClient {
    let channel = within(
        "connect",
        STEP,
        Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect(),
    )
    .await
    .expect("connect to the server");
    PuzzleClient::new(channel)
}

async fn start_count(client: &mut Client, text: &str) -> Streaming<pb::EnumerateResponse> {
    within(
        "Enumerate",
        STEP,
        client.enumerate(pb::EnumerateRequest {
            problem: dlx(text),
            count_only: true,
            engine: pb::Engine::Links as i32,
            ..Default::default()
        }),
    )
    .await
    .expect("the count starts")
    .into_inner()
}

/// A Solve and a CheckPuzzle are answered while long enumerations hold
/// both workers and both job slots (`--max-jobs 2`): they are admitted
/// under their own limit, and a running enumeration yields a worker to
/// them at its next poll (counted by the pool) instead of refusing them or
/// making them wait for a time slice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_calls_are_served_while_long_jobs_hold_every_worker_and_slot() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(2)).await;
    let pool = server.pool.clone();
    let mut client = connect(server.addr).await;
    let big = instance("queens15");
    let mut counts = Vec::new();
    for _ in 0..2 {
        counts.push(start_count(&mut client, &big).await);
    }
    {
        let pool = pool.clone();
        wait_for("both counts hold both workers", STEP, move || {
            pool.active_jobs() == 2 && pool.busy_workers() == 2
        })
        .await;
    }
    let r = client
        .enumerate(pb::EnumerateRequest {
            problem: dlx(instance("queens8")),
            count_only: true,
            ..Default::default()
        })
        .await
        .map(|_| ());
    assert_status(
        "a third long job",
        r,
        Code::ResourceExhausted,
        &["too many jobs"],
    );
    let yielded = pool.tasks_yielded();
    for (name, limit, found) in [("queens8", 2, 2), ("sudoku_hard17", 2, 1)] {
        let text = instance(name);
        let reply = within(
            "Solve while every slot is taken",
            STEP,
            client.solve(solve_request(&text, limit)),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: Solve refused while long jobs are full: {e:?}"))
        .into_inner();
        assert_eq!(reply.solutions.len(), found, "{name}");
        assert_eq!(reply.exhausted, found < limit as usize, "{name}");
        for s in &reply.solutions {
            check_solution(name, &parse(&text), s, true);
        }
    }
    let mut puzzles = connect_puzzles(server.addr).await;
    let check = within(
        "CheckPuzzle while every slot is taken",
        STEP,
        puzzles.check_puzzle(pb::CheckPuzzleRequest {
            puzzle: Some(pb::Puzzle {
                kind: pb::PuzzleKind::Sudoku as i32,
                grid: Some(pb::puzzle::Grid::Text(SUDOKU_PUZZLE.to_string())),
                ..Default::default()
            }),
        }),
    )
    .await
    .expect("CheckPuzzle is answered")
    .into_inner();
    assert!(check.valid && check.solutions_found == 1, "{check:?}");
    // The counts held their workers all along, and gave them up for the
    // small calls at a poll.
    assert_eq!(pool.active_jobs(), 2, "the counts go on");
    assert!(
        pool.tasks_yielded() > yielded,
        "no count yielded its worker to a small call"
    );
    drop(counts);
    wait_idle(&server, Duration::from_secs(10)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// Enumerations interrupted by many small calls (their runs yield and
/// resume from their checkpoints, every 64 nodes looking at the pool)
/// still give exactly the unsplit search's answer: latin5's solutions
/// streamed, each once, and queens13's count with the nodes and updates of
/// a single-threaded search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enumerations_interrupted_by_small_calls_lose_nothing() {
    let _serial = SERIAL.lock().await;
    let mut cfg = config(4);
    cfg.pool.poll_interval = 64;
    let server = serve(cfg).await;
    let pool = server.pool.clone();
    let latin = instance("latin5");
    let queens = instance("queens13");
    let alone = {
        let problem = parse(&queens);
        tokio::task::spawn_blocking(move || {
            Solver::new(&problem)
                .run(
                    &Task::root(),
                    &RunConfig::default(),
                    &mut xccd::xcc::CountOnly,
                )
                .unwrap()
                .stats
        })
        .await
        .unwrap()
    };
    let expected = all_solutions(&parse(&latin)).await;
    let yielded = pool.tasks_yielded();

    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut callers = Vec::new();
    for name in ["queens8", "sudoku_hard17"] {
        let mut client = connect(server.addr).await;
        let text = instance(name);
        let done = done.clone();
        callers.push(tokio::spawn(async move {
            let mut calls = 0u32;
            while !done.load(std::sync::atomic::Ordering::SeqCst) && calls < 100_000 {
                let reply = client.solve(solve_request(&text, 1)).await.unwrap();
                assert_eq!(reply.into_inner().solutions.len(), 1, "{name}");
                calls += 1;
            }
            calls
        }));
    }
    let mut client = connect(server.addr).await;
    let mut count = start_count(&mut client, &queens).await;
    let streamed = enumerate_all(
        &mut client,
        pb::EnumerateRequest {
            problem: dlx(&latin),
            batch_size: 64,
            ..Default::default()
        },
    )
    .await
    .expect("latin5 streams to its end");
    let mut counted = Events::default();
    drain(&mut count, STREAM, &mut counted, enum_event)
        .await
        .expect("queens13 counts to its end");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut calls = 0;
    for caller in callers {
        calls += within("the small calls end", STEP, caller).await.unwrap();
    }

    let summary = streamed.summary();
    assert_eq!(summary.solutions, expected.len() as u64);
    let got: BTreeSet<Vec<u32>> = streamed.solutions.iter().map(indices).collect();
    assert_eq!(
        got.len(),
        streamed.solutions.len(),
        "latin5: a solution came twice"
    );
    assert!(
        got == expected,
        "latin5: not the unsplit search's solutions"
    );
    let summary = counted.summary();
    let stats = summary.statistics.clone().unwrap();
    assert_eq!(summary.solutions, alone.solutions, "queens13");
    assert_eq!(
        (stats.nodes, stats.updates, stats.cleansings),
        (alone.nodes, alone.updates, alone.cleansings),
        "queens13: nodes, updates, cleansings"
    );
    let yields = pool.tasks_yielded() - yielded;
    eprintln!("{calls} small calls; the enumerations yielded {yields} times");
    assert!(yields > 0, "no enumeration yielded: the test tests nothing");
    wait_idle(&server, Duration::from_secs(10)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}

/// A reader slower than the search, with progress every 0.2 s: the
/// solutions always wait in the job's buffer, and progress events still
/// come between them (once the few messages that the channel and the
/// transport already held are read), not only at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_gets_progress_while_solutions_wait() {
    let _serial = SERIAL.lock().await;
    let server = serve(config(4)).await;
    // HTTP/2's own default windows (tonic's client asks for 2 MiB): what
    // the transport holds unread is bounded in bytes, and so is the number
    // of messages read before a progress event sent after them.
    let channel = Channel::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535);
    let channel = within("connect", STEP, channel.connect()).await.unwrap();
    let mut client = Client::new(channel);
    let mut stream = within(
        "Enumerate",
        STEP,
        client.enumerate(pb::EnumerateRequest {
            problem: dlx(instance("queens15")),
            batch_size: 4096,
            progress_interval_seconds: 0.2,
            ..Default::default()
        }),
    )
    .await
    .unwrap()
    .into_inner();
    let mut ev = Events::default();
    // Batches of queens15 hold the solutions found between two polls (tens
    // of them): the stream cannot end within the 300 messages read here.
    // After the few the transport holds, a progress event comes about
    // every tenth message (one a 0.2 s interval, a message read every
    // 20 ms, or more of them if reading is slower).
    for _ in 0..300 {
        let m = next(&mut stream, STEP).await.unwrap().expect("a message");
        ev.push(enum_event(m));
        if ev.progress.len() >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "slow reader: {} progress events in {} messages ({} solutions)",
        ev.progress.len(),
        ev.messages,
        ev.solutions.len()
    );
    assert!(ev.summary.is_none(), "the stream went on");
    assert!(
        ev.progress.len() >= 10,
        "{} progress events in {} messages ({} batches) read over {:?}",
        ev.progress.len(),
        ev.messages,
        ev.batches.len(),
        Duration::from_millis(20) * ev.messages as u32
    );
    let p = ev.progress.last().unwrap();
    assert!(p.solutions > 0 && p.fraction_done < 1.0, "{p:?}");
    drop(stream);
    wait_idle(&server, Duration::from_secs(10)).await;
    within("shutdown", STEP, server.shutdown()).await.unwrap();
}
