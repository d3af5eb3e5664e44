//! The monitoring files of `deploy/monitoring`, validated offline and
//! against live processes: the alert rules (`alerts.yaml`) pass `promtool
//! check rules` and their unit tests (`promtool test rules alerts_test.yaml`,
//! which say when each alert fires), and every metric that an alert's
//! expression or a panel's query of the Grafana dashboard
//! (`grafana-dashboard.json`) reads is on the `/metrics` page of a live
//! coordinator (with a job store, after an Enumerate and a CreateJob) or of
//! a live worker, a histogram's only through its `_bucket`, `_sum` or
//! `_count` series. The dashboard has the panels an operator needs.
//! Without promtool the promtool checks say `skipped`, unless
//! XCCD_REQUIRE_PROMTOOL=1 (CI), where they fail.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::live::{families, promtool, scrape_until, value, Cluster};
use common::promql::metric_names;
use common::service::{connect, create_job, dlx};
use xccd::service::proto as pb;

const ALERTS: &str = "deploy/monitoring/alerts.yaml";
const ALERTS_TEST: &str = "deploy/monitoring/alerts_test.yaml";
const DASHBOARD: &str = "deploy/monitoring/grafana-dashboard.json";

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect(path)
}

/// The alerts of the rule file, as (name, expression): every rule is an
/// alert whose `expr:` is on its line.
fn alerts() -> Vec<(String, String)> {
    let text = read(ALERTS);
    let mut alerts = Vec::new();
    let mut name = None;
    for line in text.lines().map(str::trim) {
        if let Some(alert) = line.strip_prefix("- alert: ") {
            name = Some(alert.to_string());
        } else if line.starts_with("- record:") {
            panic!("{ALERTS}: recording rules are not checked here: {line}");
        } else if let Some(expr) = line.strip_prefix("expr: ") {
            assert!(
                !expr.starts_with(['|', '>']),
                "{ALERTS}: keep each expr on its line: {line}"
            );
            let alert = name.take().expect("an expr after its alert's name");
            alerts.push((alert, expr.trim_matches(['"', '\'']).to_string()));
        }
    }
    alerts
}

/// The dashboard's queries, as (panel title, expression), from every panel,
/// rows' nested panels included, and the variables' queries.
fn dashboard_queries() -> Vec<(String, String)> {
    let dashboard: serde_json::Value = serde_json::from_str(&read(DASHBOARD)).expect(DASHBOARD);
    let mut queries = Vec::new();
    fn walk(panels: &serde_json::Value, queries: &mut Vec<(String, String)>) {
        for panel in panels.as_array().into_iter().flatten() {
            let title = panel["title"].as_str().unwrap_or("").to_string();
            for target in panel["targets"].as_array().into_iter().flatten() {
                let expr = target["expr"].as_str().expect("a target with an expr");
                queries.push((title.clone(), expr.to_string()));
            }
            walk(&panel["panels"], queries);
        }
    }
    walk(&dashboard["panels"], &mut queries);
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if variable["type"] == "query" {
            let query = &variable["query"];
            let expr = query["query"].as_str().or(query.as_str()).unwrap_or("");
            queries.push((format!("variable {}", variable["name"]), expr.to_string()));
        }
    }
    queries
}

/// Why `name` is no series of the pages' `families`, if it is not: a
/// histogram is read through its `_bucket`, `_sum` and `_count` series only.
fn missing(name: &str, families: &BTreeMap<String, String>) -> Option<String> {
    let histogram = |base: &str| families.get(base).is_some_and(|t| t == "histogram");
    let suffixed = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .filter(|base| histogram(base));
    match families.get(name) {
        _ if suffixed.is_some() => None,
        Some(kind) if kind == "histogram" => Some(format!(
            "{name} is a histogram: read {name}_bucket, _sum or _count"
        )),
        Some(_) => None,
        None => Some(format!("{name} is on neither page")),
    }
}

#[test]
fn promql_names_are_found_without_functions_labels_ranges_or_variables() {
    assert_eq!(
        metric_names(
            r#"histogram_quantile(0.99, sum by (le, method) (rate(a_seconds_bucket{code!="ok", x=~"(b|c)"}[$__rate_interval])))"#
        ),
        ["a_seconds_bucket"]
    );
    assert_eq!(
        metric_names("(x == 0) and on(pod) (y offset 5m == 0) or absent(z{role=\"c\"} == 1) / 1e3"),
        ["x", "y", "z"]
    );
    assert_eq!(
        metric_names(
            "sum(rate(n_total[5m:1m])) without (instance) > bool 2 unless ${v} group_left (a) m"
        ),
        ["n_total", "m"]
    );
}

#[test]
fn the_alert_rules_pass_promtool_and_their_unit_tests() {
    let names: Vec<String> = alerts().into_iter().map(|(name, _)| name).collect();
    for wanted in [
        "XccdCoordinatorDown",
        "XccdNoWorkers",
        "XccdQueueGrowing",
        "XccdLeasesLost",
        "XccdWorkerReportsRejected",
    ] {
        assert!(names.iter().any(|n| n == wanted), "{ALERTS}: no {wanted}");
    }
    // Every alert is tested, firing and not.
    let tests = read(ALERTS_TEST);
    for name in &names {
        assert!(
            tests.contains(&format!("alertname: {name}\n"))
                && tests.contains(&format!("alertname: {name}, exp_alerts: []")),
            "{ALERTS_TEST}: {name} is not tested both firing and quiet"
        );
    }
    if promtool(&["check", "rules", ALERTS], None, ALERTS) {
        promtool(&["test", "rules", ALERTS_TEST], None, ALERTS_TEST);
    }
}

#[test]
fn the_dashboard_has_the_panels_an_operator_needs() {
    let queries = dashboard_queries();
    let reads = |what: &str, pattern: &str| {
        assert!(
            queries.iter().any(|(_, e)| e.contains(pattern)),
            "{DASHBOARD}: no panel of {what} ({pattern})"
        );
    };
    reads("jobs by state", "xccd_jobs_active");
    reads("jobs by state", "xccd_jobs_waiting");
    reads("jobs by end reason", "xccd_jobs_finished_total");
    reads("queue depth", "xccd_tasks_queued");
    reads(
        "nodes per second per worker",
        "sum by (instance) (rate(xccd_worker_nodes_total",
    );
    reads(
        "RPC latency percentiles",
        "histogram_quantile(0.99, sum by (le, method) (rate(xccd_grpc_server_handling_seconds_bucket",
    );
    reads("lease losses", "xccd_tasks_lost_total");
    reads(
        "store write latency",
        "rate(xccd_store_write_duration_seconds_bucket",
    );
    // Every histogram_quantile groups by `le` (else it has no buckets to read).
    for (title, expr) in &queries {
        if expr.contains("histogram_quantile(") {
            assert!(expr.contains("by (le"), "{title}: {expr}");
        }
    }
    // Every panel reads the dashboard's data source variable, so it imports anywhere.
    let dashboard: serde_json::Value = serde_json::from_str(&read(DASHBOARD)).unwrap();
    for panel in dashboard["panels"].as_array().unwrap() {
        if panel["type"] != "row" {
            assert_eq!(
                panel["datasource"]["uid"], "${datasource}",
                "{}: its data source",
                panel["title"]
            );
        }
    }
}

#[test]
fn the_alerts_and_the_dashboard_read_only_metrics_a_live_cluster_exports() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_str().unwrap();
    let mut cluster = Cluster::coordinator("monitoring", &["--data-dir", data_dir], &[]);
    cluster.worker("monitoring-worker", 2, &[], &[]);
    // An Enumerate, and a durable job (a store write).
    assert_eq!(cluster.count("examples/queens8.dlx"), "92");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut client = connect(cluster.api).await;
        let name = create_job(
            &mut client,
            pb::CreateJobRequest {
                source: dlx(read("examples/queens8.dlx"))
                    .map(pb::create_job_request::Source::Problem),
                ..Default::default()
            },
        )
        .await;
        for _ in 0..1000 {
            let job = client
                .get_job(pb::GetJobRequest {
                    name: name.clone(),
                    max_solutions: 1,
                })
                .await
                .unwrap()
                .into_inner()
                .job
                .unwrap();
            if job.state().is_final() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the job {name} did not end");
    });
    let coordinator = scrape_until(cluster.metrics, "the coordinator", |page| {
        value(page, "xccd_jobs_finished_total{reason=\"complete\"}") == Some(2.0)
            && value(page, "xccd_remote_slots") == Some(2.0)
            && page.contains("xccd_store_write_duration_seconds_count")
    });
    let worker = scrape_until(cluster.worker_metrics[0], "the worker", |page| {
        value(page, "xccd_worker_solutions_total") == Some(184.0)
    });
    let mut exported = families(&coordinator);
    exported.extend(families(&worker));

    let mut read_names = 0;
    let mut wrong = Vec::new();
    let alerts = alerts()
        .into_iter()
        .map(|(n, e)| (format!("{ALERTS}: {n}"), e));
    let panels = dashboard_queries()
        .into_iter()
        .map(|(t, e)| (format!("{DASHBOARD}: {t}"), e));
    for (what, expr) in alerts.chain(panels) {
        let names = metric_names(&expr);
        assert!(!names.is_empty(), "{what}: {expr} reads no metric");
        for name in names {
            read_names += 1;
            if let Some(why) = missing(&name, &exported) {
                wrong.push(format!("{what}: {expr}: {why}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "metrics that no live page has:\n{}\n\nthe coordinator's:\n{coordinator}\nthe worker's:\n{worker}",
        wrong.join("\n")
    );
    assert!(read_names > 40, "only {read_names} names read");
}
