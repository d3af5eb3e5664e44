//! A network partition, on this machine's own hosts: network namespaces
//! joined by a veth pair (`ip netns`, `ip link`). PostgreSQL (a server of
//! the test's own) listens on the root namespace's end of the pair as well
//! as on loopback; coordinator A runs inside the namespace
//! (`ip netns exec NS xccd serve`) and reaches the database through the
//! pair; coordinator B and two workers run in the root namespace, the
//! workers given both coordinators' addresses.
//!
//! A leads and runs a durable enumeration of n queens. Mid-run the pair's
//! root end is set down: A keeps running but reaches neither the database
//! nor the workers (nor the test). B takes over once A's lease lapses (the
//! time is measured and printed) and resumes the job from its last
//! snapshot; the workers follow it. The pair is set up again: A, back, is
//! fenced (a write refused, counted in `xccd_store_fenced_writes_total`, or
//! its lease found lapsed: its log says it stepped down), answers
//! NOT_LEADER naming B, and its health is NOT_SERVING. The job ends on B
//! with every solution, each once, as ListJobSolutions reads them back.
//!
//! Namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN): elsewhere, or
//! where `ip netns add` is refused (a container without the capability),
//! the test prints why it skips and passes. Each run's names carry its pid
//! (`xccd-part-PID`, veths `xccdpPID`/`xccdqPID`, addresses in 198.18.0.0/15
//! from the pid), so parallel runs do not collide; the namespace is deleted
//! when the test ends, and namespaces left by runs whose process is gone
//! (aborted) are deleted at the start of the next.
//!
//! The instance is queens14 (365,596 solutions); `XCCD_PARTITION_QUEENS=N`
//! runs another (it must still run when the link goes down).

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

use common::coordinators::{finished_exact, get, submit_queens, workers, Coordinator, QUEENS};
use common::service::{free_port, reason_of};
use tonic_health::pb::health_check_response::ServingStatus;
use xccd::service::proto as pb;

/// The prefix of the test's namespaces' names.
const PREFIX: &str = "xccd-part-";

/// `ip ARGS`: Err with what it printed when it fails.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip` (iproute2): {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "`ip {}` failed ({}): {}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    ))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A network namespace of this run and the veth pair that joins it to the
/// root namespace (a point-to-point /30); deleted when dropped.
struct Namespace {
    name: String,
    /// The pair's end in the root namespace, and its address.
    outside: String,
    outside_ip: IpAddr,
    /// The address of the pair's end in the namespace.
    inside_ip: IpAddr,
}

impl Namespace {
    /// Makes the namespace and the pair, both ends up; Err says why not.
    fn create() -> Result<Namespace, String> {
        if !is_root() {
            return Err("not root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN".into());
        }
        remove_stale();
        let pid = std::process::id();
        // A /30 of 198.18.0.0/15 (RFC 2544's, for tests) from the pid.
        let base = 198u32 << 24 | 18 << 16 | (pid % (1 << 15)) << 2;
        let net = Namespace {
            name: format!("{PREFIX}{pid}"),
            outside: format!("xccdp{pid}"),
            outside_ip: IpAddr::V4(Ipv4Addr::from(base + 1)),
            inside_ip: IpAddr::V4(Ipv4Addr::from(base + 2)),
        };
        ip(&["netns", "add", &net.name])?;
        // From here on, a failure deletes what was made (the guard's drop).
        let inside = format!("xccdq{pid}");
        let outside_cidr = format!("{}/30", net.outside_ip);
        let inside_cidr = format!("{}/30", net.inside_ip);
        ip(&[
            "link",
            "add",
            &net.outside,
            "type",
            "veth",
            "peer",
            "name",
            &inside,
        ])?;
        ip(&["link", "set", &inside, "netns", &net.name])?;
        ip(&["addr", "add", &outside_cidr, "dev", &net.outside])?;
        ip(&["link", "set", &net.outside, "up"])?;
        net.inside(&["addr", "add", &inside_cidr, "dev", &inside])?;
        net.inside(&["link", "set", &inside, "up"])?;
        net.inside(&["link", "set", "lo", "up"])?;
        Ok(net)
    }

    /// `ip ARGS` in the namespace.
    fn inside(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["netns", "exec", &self.name, "ip"];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Cuts the namespace off: the pair's root end goes down (its routes
    /// with it); what runs inside goes on, unreachable.
    fn cut(&self) {
        ip(&["link", "set", &self.outside, "down"]).expect("set the veth down");
    }

    /// Joins it again.
    fn join(&self) {
        ip(&["link", "set", &self.outside, "up"]).expect("set the veth up");
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // The pair goes with the namespace; its root end is deleted first
        // in case the namespace never got its other end.
        let _ = ip(&["link", "del", &self.outside]);
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Deletes the namespaces (and so their pairs) of runs whose process has
/// gone: an aborted run's guard never ran. Called before this run makes
/// its own.
fn remove_stale() {
    let Ok(output) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(pid) = name.strip_prefix(PREFIX) else {
            continue;
        };
        // This run's own name too: left by an aborted run of the same pid.
        let gone = pid.parse::<u32>().is_ok_and(|pid| {
            pid == std::process::id() || !std::path::Path::new(&format!("/proc/{pid}")).exists()
        });
        if gone {
            eprintln!("deleting {name}, left by an aborted run");
            let _ = ip(&["link", "del", &format!("xccdp{pid}")]);
            let _ = ip(&["netns", "del", name]);
        }
    }
}

fn queens_n() -> usize {
    std::env::var("XCCD_PARTITION_QUEENS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n: &usize| (8..=15).contains(n))
        .unwrap_or(14)
}

/// The leader's address in a standby's NOT_LEADER answer to GetJob, or
/// None while it does not answer so.
async fn not_leader(coordinator: &Coordinator, job: &str) -> Option<String> {
    let mut client = coordinator.client().await?;
    let request = pb::GetJobRequest {
        name: job.to_string(),
        max_solutions: 0,
    };
    let status = tokio::time::timeout(Duration::from_secs(2), client.get_job(request))
        .await
        .ok()?
        .err()?;
    if status.code() != tonic::Code::Unavailable || reason_of(&status) != "NOT_LEADER" {
        return None;
    }
    use tonic_types::StatusExt;
    status
        .get_details_error_info()
        .and_then(|info| info.metadata.get("leader").cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_is_taken_over_and_fenced_once_back() {
    let net = match Namespace::create() {
        Ok(net) => net,
        Err(why) => {
            eprintln!(
                "SKIPPED: the partition test needs network namespaces (root, with \
                 CAP_SYS_ADMIN and CAP_NET_ADMIN), and here there are none: {why}"
            );
            return;
        }
    };
    let Some(database) = common::postgres::server_also_at(&[net.outside_ip]) else {
        return;
    };
    let n = queens_n();
    for name in ["a", "b"] {
        let log =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("partition-{name}.log"));
        let _ = std::fs::remove_file(log);
    }
    // A in the namespace, on the database's address at the pair's end;
    // B on loopback.
    let url_a = database.url_at(net.outside_ip);
    let mut a = Coordinator::at(
        "a",
        &url_a,
        net.inside_ip,
        [50051, 50052, 9464],
        "partition",
    )
    .under(&["ip", "netns", "exec", &net.name]);
    a.start();
    a.wait_health(ServingStatus::Serving, Duration::from_secs(30))
        .await;
    let ports = [free_port(), free_port(), free_port()].map(|p: SocketAddr| p.port());
    let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut b = Coordinator::at("b", &database.url(), localhost, ports, "partition");
    b.start();
    b.wait_health(ServingStatus::NotServing, Duration::from_secs(30))
        .await;
    let mut coordinators = vec![a, b];
    let workers = workers(&coordinators, 2, "partition");
    let job = submit_queens(&coordinators, n).await;

    // Mid-run: once A has stored solutions.
    let start = Instant::now();
    let before = loop {
        let now = get(&coordinators, &job).await;
        assert!(
            !now.state().is_final(),
            "queens{n} ended before the partition: run a larger one (XCCD_PARTITION_QUEENS)"
        );
        if now.stored_solutions > 0 {
            break now;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no solution stored"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    net.cut();
    let cut = Instant::now();
    let took = loop {
        if coordinators[1].health().await == Some(ServingStatus::Serving) {
            break cut.elapsed();
        }
        coordinators[1].process().assert_running();
        if cut.elapsed() > Duration::from_secs(30) {
            // What holds B up, as the database sees it.
            let sessions = common::postgres::query(
                &database.url(),
                "SELECT application_name, client_addr, state, wait_event_type, \
                 left(query, 70) FROM pg_stat_activity WHERE backend_type = 'client backend'",
            );
            panic!("B does not lead 30 s after A was cut off; the sessions: {sessions:#?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!(
        "cut A off with {} of {} solutions stored; B led {:.2} s later",
        before.stored_solutions,
        QUEENS[n],
        took.as_secs_f64()
    );
    // A still runs, cut off; B goes on with the job from its snapshot.
    coordinators[0].process().assert_running();
    let resumed = get(&coordinators, &job).await;
    assert!(
        resumed.stored_solutions >= before.stored_solutions,
        "the takeover lost committed solutions ({} stored before, {} after)",
        before.stored_solutions,
        resumed.stored_solutions
    );
    // Some progress on B before A comes back.
    let progress = Instant::now();
    while !get(&coordinators, &job).await.state().is_final()
        && get(&coordinators, &job).await.stored_solutions == resumed.stored_solutions
        && progress.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    coordinators[0].process().assert_running();

    net.join();
    let joined = Instant::now();
    let stood_by = coordinators[0]
        .wait_health(ServingStatus::NotServing, Duration::from_secs(60))
        .await;
    let b_api = coordinators[1].api.to_string();
    let named = loop {
        if let Some(leader) = not_leader(&coordinators[0], &job).await {
            break leader;
        }
        coordinators[0].process().assert_running();
        assert!(
            joined.elapsed() < Duration::from_secs(60),
            "A, back, does not answer NOT_LEADER; {}",
            coordinators[0].process().log_name()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(named, b_api, "A names B as the leader");
    let fenced = coordinators[0]
        .counter("xccd_store_fenced_writes_total")
        .await;
    let log = coordinators[0].process().log_text();
    let stepped_down = log.contains("stepping down");
    eprintln!(
        "A back: NOT_SERVING {:.2} s after the link came up, NOT_LEADER naming B; its fenced \
         writes: {fenced}; its log says it stepped down: {stepped_down}{}",
        stood_by.as_secs_f64(),
        if log.contains("the lease could not be renewed in time") {
            " (its lease unrenewed past 4 s, before B could take it)"
        } else {
            ""
        }
    );
    assert!(
        fenced > 0.0 || stepped_down,
        "A neither had a write refused nor stepped down; {}",
        coordinators[0].process().log_name()
    );
    // The database's lease is B's, with a larger token than A's.
    let rows = common::postgres::query(&database.url(), "SELECT holder, token FROM leader")
        .expect("read the lease");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][0], b_api, "the lease's holder");
    assert!(rows[0][1].parse::<i64>().unwrap() >= 2, "{rows:?}");
    assert_eq!(
        coordinators[1].health().await,
        Some(ServingStatus::Serving),
        "B still leads"
    );

    finished_exact(&coordinators, &job, n, "after the partition").await;
    eprintln!(
        "queens{n}: {} solutions exact through the partition; takeover (link down to B \
         SERVING) {:.2} s; the run took {:.1} s",
        QUEENS[n],
        took.as_secs_f64(),
        cut.elapsed().as_secs_f64()
    );
    drop(workers);
    // The processes end before their namespace.
    for c in &mut coordinators {
        c.process.take();
    }
}
