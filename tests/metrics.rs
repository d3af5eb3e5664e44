//! The metrics an operator scrapes, from real processes: a pure coordinator
//! (`xccd serve --metrics-listen`) and a worker (`xccd worker
//! --metrics-listen`) run a job; both `/metrics` pages then name the job's
//! figures, describe every metric (HELP), answer 404 on any other path and
//! pass `promtool check metrics` (Prometheus's own linter of the naming
//! conventions). Without promtool the lint says `skipped`, unless
//! XCCD_REQUIRE_PROMTOOL=1 (CI), where it fails.

mod common;

use common::live::{get, promtool, scrape_until, value, Cluster};
use std::net::SocketAddr;

/// Every metric of the page has a TYPE and a HELP line with some text.
fn all_described(page: &str, what: &str) {
    let mut typed = 0;
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            typed += 1;
            let name = rest.split_whitespace().next().unwrap();
            let help = format!("# HELP {name} ");
            assert!(
                page.lines()
                    .any(|l| l.starts_with(&help) && l.len() > help.len() + 10),
                "{what}: {name} has no HELP text"
            );
        }
    }
    assert!(typed > 5, "{what}: only {typed} metrics:\n{page}");
    for line in page
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|base| page.contains(&format!("# TYPE {base} histogram")))
            .unwrap_or(name);
        assert!(
            page.contains(&format!("# TYPE {family} ")),
            "{what}: {name} has no TYPE line"
        );
    }
}

/// `promtool check metrics` on a page: Prometheus's lint of the naming
/// conventions (units, `_total` on counters only, HELP).
fn lint(page: &str, what: &str) {
    promtool(&["check", "metrics"], Some(page), what);
}

fn not_found_elsewhere(addr: SocketAddr, what: &str) {
    for path in ["/healthz", "/", "/metrics/extra", "/metricsx"] {
        let (code, _) = get(addr, path).unwrap();
        assert_eq!(code, 404, "{what}: GET {path}");
    }
}

#[test]
fn a_coordinator_and_a_worker_serve_described_metrics_that_promtool_accepts() {
    let mut cluster = Cluster::coordinator("metrics", &[], &[]);
    cluster.worker("metrics-test", 2, &[], &[]);
    let (coordinator_metrics, worker_metrics) = (cluster.metrics, cluster.worker_metrics[0]);
    assert_eq!(cluster.count("examples/queens8.dlx"), "92");

    // The coordinator: the job, its call, its task's wait and lease.
    let page = scrape_until(coordinator_metrics, "the coordinator", |page| {
        value(page, "xccd_jobs_finished_total{reason=\"complete\"}") == Some(1.0)
            && value(page, "xccd_remote_workers") == Some(1.0)
            // The pool's gauges are published every second.
            && value(page, "xccd_remote_slots") == Some(2.0)
    });
    for series in [
        "xccd_job_duration_seconds_count{reason=\"complete\"}",
        "xccd_task_queue_wait_seconds_count",
        "xccd_lease_round_trip_seconds_count",
        "xccd_grpc_server_handling_seconds_count{service=\"xccd.v1.SolverService\",method=\"Enumerate\",code=\"ok\"}",
        "xccd_build_info{version=\"0.1.0\",role=\"coordinator\"}",
    ] {
        let found = value(&page, series.replace("0.1.0", env!("CARGO_PKG_VERSION")).as_str());
        assert!(found.is_some_and(|v| v >= 1.0), "{series}: {found:?}\n{page}");
    }
    assert_eq!(value(&page, "xccd_local_threads"), Some(0.0), "{page}");
    assert!(
        value(&page, "xccd_nodes_total").is_some_and(|n| n > 0.0),
        "{page}"
    );
    // A young process may not have used a clock tick of CPU yet.
    assert!(
        value(&page, "process_cpu_seconds_total").is_some(),
        "{page}"
    );
    for process in [
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        assert!(
            value(&page, process).is_some_and(|v| v > 0.0),
            "{process}\n{page}"
        );
    }
    assert!(!page.contains("reason=\"Complete\""), "{page}");
    all_described(&page, "the coordinator");
    lint(&page, "the coordinator");
    not_found_elsewhere(coordinator_metrics, "the coordinator");

    // The worker: what it ran.
    let page = scrape_until(worker_metrics, "the worker", |page| {
        value(page, "xccd_worker_solutions_total") == Some(92.0)
    });
    assert!(
        value(&page, "xccd_worker_nodes_total").is_some_and(|n| n > 0.0),
        "{page}"
    );
    assert_eq!(value(&page, "xccd_worker_threads"), Some(2.0), "{page}");
    assert_eq!(value(&page, "xccd_worker_leases"), Some(0.0), "{page}");
    assert_eq!(
        value(&page, "xccd_worker_reconnects_total"),
        Some(0.0),
        "{page}"
    );
    assert!(page.contains("role=\"worker\""), "{page}");
    assert!(
        !page.contains("xccd_jobs_"),
        "the worker describes only its own metrics:\n{page}"
    );
    all_described(&page, "the worker");
    lint(&page, "the worker");
    not_found_elsewhere(worker_metrics, "the worker");
}
