//! A store that cannot be written, on real mounts: a tmpfs that fills, and a
//! read-only bind mount. The server still starts (degraded), reads and
//! deletes jobs, refuses new durable ones naming the cause, and takes them
//! again once there is room. Mounting needs root (CAP_SYS_ADMIN): without
//! it each test says so and skips.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::fixtures::instance;
use tonic::transport::Channel;
use tonic::Code;
use xccd::service::proto as pb;

use common::service::{create_job, dlx, free_port, reason_of, Client, Log, Process, XCCD};

/// A mount, unmounted when dropped (even when the test fails).
struct Mount(PathBuf);

impl Mount {
    /// Runs `mount args... dir`; None (with a note) when mounting is not
    /// permitted here.
    fn new(args: &[&str], dir: &Path) -> Option<Mount> {
        let output = Command::new("mount").args(args).arg(dir).output();
        match output {
            Ok(output) if output.status.success() => Some(Mount(dir.to_path_buf())),
            Ok(output) => {
                eprintln!(
                    "SKIPPED: cannot mount here (needs root): {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("SKIPPED: no mount command: {e}");
                None
            }
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn request(text: &str) -> pb::CreateJobRequest {
    pb::CreateJobRequest {
        source: Some(pb::create_job_request::Source::Problem(dlx(text).unwrap())),
        ..Default::default()
    }
}

/// `xccd serve` of one thread on `listen`, its store in `dir`.
fn serve(name: &str, dir: &Path, listen: SocketAddr) -> Process {
    let mut command = Command::new(XCCD);
    command
        .args(["serve", "--listen", &listen.to_string(), "--threads", "1"])
        .args(["--snapshot-interval", "0.1", "--data-dir"])
        .arg(dir)
        .env("RUST_LOG", "info");
    Process::start(command, Log::Create(format!("store-{name}.log")))
}

async fn get(client: &mut Client, job: &str) -> pb::Job {
    client
        .get_job(pb::GetJobRequest {
            name: job.to_string(),
            max_solutions: 1,
        })
        .await
        .expect("GetJob")
        .into_inner()
        .job
        .expect("a job")
}

async fn wait_done(client: &mut Client, job: &str) -> pb::Job {
    let start = Instant::now();
    loop {
        let message = get(client, job).await;
        if message.state().is_final() {
            return message;
        }
        assert!(start.elapsed() < Duration::from_secs(180), "{job} not done");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn store_health(client_addr: SocketAddr) -> i32 {
    let channel = Channel::from_shared(format!("http://{client_addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    tonic_health::pb::health_client::HealthClient::new(channel)
        .check(tonic_health::pb::HealthCheckRequest {
            service: "xccd.v1.JobStore".into(),
        })
        .await
        .expect("health")
        .into_inner()
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_store_starts_degraded_and_says_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_port();
    let mut server = serve("ro-1", dir.path(), addr);
    let mut client = Client::new(server.channel(addr).await);
    let job = create_job(&mut client, request(&instance("queens8"))).await;
    assert_eq!(wait_done(&mut client, &job).await.stored_solutions, 92);
    server.terminate();
    let Some(_bind) = Mount::new(&["--bind", &dir.path().display().to_string()], dir.path()) else {
        return;
    };
    let Some(_ro) = Mount::new(&["-o", "remount,bind,ro"], dir.path()) else {
        return;
    };

    let mut server = serve("ro-2", dir.path(), addr);
    let mut client = Client::new(server.channel(addr).await);
    let read = get(&mut client, &job).await;
    assert_eq!(read.stored_solutions, 92);
    let refused = client
        .create_job(request(&instance("queens8")))
        .await
        .expect_err("a read-only store takes no job");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    assert_eq!(reason_of(&refused), "STORE_READ_ONLY");
    assert!(
        refused.message().contains("read-only"),
        "{}",
        refused.message()
    );
    assert_eq!(
        store_health(addr).await,
        tonic_health::pb::health_check_response::ServingStatus::NotServing as i32
    );
    assert!(
        server.log_text().contains("read-only"),
        "{}",
        server.log_text()
    );
}

/// A job's summary once it has ended.
async fn wait_ended(client: &mut Client, job: &str) -> pb::Job {
    let start = Instant::now();
    loop {
        let message = get(client, job).await;
        if pb::JobState::try_from(message.state).is_ok_and(|state| state.is_final()) {
            return message;
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "{job} not ended"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let output = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .expect("df");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .nth(1)
        .and_then(|line| line.trim().parse().ok())
        .expect("df's free bytes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_store_restarts_degraded_and_deleting_a_job_gives_room_for_new_ones() {
    use tonic_health::pb::health_check_response::ServingStatus;
    let dir = tempfile::tempdir().unwrap();
    let Some(_tmpfs) = Mount::new(&["-t", "tmpfs", "-o", "size=12m", "tmpfs"], dir.path()) else {
        return;
    };
    let addr = free_port();
    let mut server = serve("full-1", dir.path(), addr);
    let mut client = Client::new(server.channel(addr).await);
    // queens15's 2,279,184 solutions take far more than 12 MiB.
    let filler = create_job(&mut client, request(&instance("queens15"))).await;
    let failed = wait_ended(&mut client, &filler).await;
    let summary = failed.summary.expect("a summary");
    assert_eq!(summary.reason, pb::EndReason::Failed as i32, "{summary:?}");
    // The store's own reason, not a bug's INTERNAL: the disk is full.
    let error = summary.error.expect("Summary.error");
    assert!(error.message.contains("full"), "{}", error.message);
    assert_eq!(Code::from(error.code), Code::ResourceExhausted, "{error:?}");
    let info = tonic_types::RpcStatusExt::get_error_details(&error)
        .error_info()
        .cloned();
    assert_eq!(info.expect("an ErrorInfo").reason, "STORE_DISK_FULL");
    let kept = failed.stored_solutions;
    assert!(kept > 0 && kept < 2_279_184, "{kept}");
    // The server keeps serving, and says the store is full.
    let solved = client
        .solve(pb::SolveRequest {
            problem: dlx(instance("queens8")),
            ..Default::default()
        })
        .await
        .expect("Solve after the store filled")
        .into_inner();
    assert_eq!(solved.solutions.len(), 1);
    let refused = client
        .create_job(request(&instance("queens8")))
        .await
        .expect_err("a full store takes no job");
    assert_eq!(reason_of(&refused), "STORE_DISK_FULL", "{refused:?}");
    server.terminate();
    eprintln!("free on the full volume: {} bytes", free_bytes(dir.path()));

    // The restart on the full volume: degraded from the first moment.
    let started = Instant::now();
    let mut server = serve("full-2", dir.path(), addr);
    let mut client = Client::new(server.channel(addr).await);
    eprintln!("restart on the full volume: {:?}", started.elapsed());
    assert_eq!(
        store_health(addr).await,
        ServingStatus::NotServing as i32,
        "{}",
        server.log_text()
    );
    let read = get(&mut client, &filler).await;
    assert_eq!(read.stored_solutions, kept);
    let page = client
        .list_job_solutions(pb::ListJobSolutionsRequest {
            name: filler.clone(),
            page_size: 100,
            ..Default::default()
        })
        .await
        .expect("ListJobSolutions on a full store")
        .into_inner();
    assert_eq!(page.solutions.len(), 100);
    let refused = client
        .create_job(request(&instance("queens8")))
        .await
        .expect_err("a full store takes no job");
    assert_eq!(reason_of(&refused), "STORE_DISK_FULL", "{refused:?}");

    let deleting = Instant::now();
    client
        .delete_job(pb::DeleteJobRequest {
            name: filler.clone(),
        })
        .await
        .expect("DeleteJob on a full store");
    eprintln!(
        "delete of {kept} solutions on the full volume: {:?}; free after: {} bytes",
        deleting.elapsed(),
        free_bytes(dir.path())
    );
    let gone = client
        .get_job(pb::GetJobRequest {
            name: filler.clone(),
            max_solutions: 0,
        })
        .await
        .expect_err("a deleted job");
    assert_eq!(gone.code(), Code::NotFound);
    // The room is given back to the volume: more than half of it is free.
    assert!(
        free_bytes(dir.path()) > 6 << 20,
        "{}",
        free_bytes(dir.path())
    );
    let start = Instant::now();
    while store_health(addr).await != ServingStatus::Serving as i32 {
        assert!(start.elapsed() < Duration::from_secs(5), "still degraded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let job = client
        .create_job(request(&instance("queens10")))
        .await
        .expect("CreateJob after the delete")
        .into_inner()
        .job
        .expect("CreateJob returns the job")
        .name;
    let done = wait_ended(&mut client, &job).await;
    let summary = done.summary.expect("a summary");
    assert_eq!(
        summary.reason,
        pb::EndReason::Complete as i32,
        "{summary:?}"
    );
    assert_eq!(summary.solutions, 724);
    assert_eq!(done.stored_solutions, 724);
    server.terminate();
}
