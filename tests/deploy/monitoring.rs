//! The scrape targets of `deploy/monitoring/podmonitors.yaml` fit the rendered base: one
//! PodMonitor for the coordinator and one for the workers, each selecting exactly its own pods
//! (the labels kustomize puts on the pod templates), on a container port that is there, named
//! `metrics`, whose number the process's `--metrics-listen` flag listens on, at `/metrics`. The
//! pods' `prometheus.io/*` annotations (the scrape without the operator) name the same port.

use super::{
    arg, args, assert_scraped, assert_selects, assert_selects_not, container_port, documents,
    field, object, render, root, section, sequence, value, without_comments, BASE, COORDINATOR,
};

const PODMONITORS: &str = "deploy/monitoring/podmonitors.yaml";

/// The PodMonitors of the file, as (name, its text without comments).
fn podmonitors() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join(PODMONITORS)).expect(PODMONITORS);
    let text = without_comments(&text);
    documents(&format!("\n{text}\n"))
        .into_iter()
        .map(|doc| {
            assert_eq!(
                value(doc, "apiVersion"),
                Some("monitoring.coreos.com/v1"),
                "{PODMONITORS}: {doc}"
            );
            assert_eq!(value(doc, "kind"), Some("PodMonitor"), "{PODMONITORS}");
            let name = value(&section(doc, "metadata"), "name")
                .unwrap_or_else(|| panic!("{PODMONITORS}: a PodMonitor without a name"))
                .to_string();
            (name, doc.to_string())
        })
        .collect()
}

/// The one endpoint of a PodMonitor: its port's name (which must be `metrics`).
fn endpoint(monitor: &str, what: &str) -> String {
    let endpoints = sequence(&section(monitor, "podMetricsEndpoints"));
    assert_eq!(endpoints.len(), 1, "{what}: one endpoint: {endpoints:?}");
    let endpoint = &endpoints[0];
    assert_eq!(value(endpoint, "path"), Some("/metrics"), "{what}");
    assert!(
        value(endpoint, "interval").is_some_and(|i| i.ends_with('s')),
        "{what}: an interval in seconds"
    );
    value(endpoint, "port")
        .unwrap_or_else(|| panic!("{what}: an endpoint without a port name"))
        .to_string()
}

#[test]
fn podmonitors_scrape_the_coordinator_and_the_workers_metrics_ports() {
    let monitors = podmonitors();
    let names: Vec<&str> = monitors.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["xccd-coordinator", "xccd-worker"], "{PODMONITORS}");

    // The pod templates as written: each workload listens for metrics on its port `metrics`
    // and asks for the annotation scrape of that port.
    let read =
        |path: &str| without_comments(&std::fs::read_to_string(root().join(path)).expect(path));
    for (file, what) in [
        (
            "deploy/k8s/base/coordinator-statefulset.yaml",
            "coordinator",
        ),
        ("deploy/k8s/base/worker-deployment.yaml", "worker"),
    ] {
        let workload = read(file);
        let port = container_port(&workload, "metrics", what);
        assert_eq!(
            arg(&args(&workload, what), "--metrics-listen", what),
            format!("0.0.0.0:{port}"),
            "{file}: --metrics-listen is not the port `metrics`"
        );
        assert_scraped(&workload, &port, file);
    }

    // Against the rendered base: each monitor selects its own pods, not the others'.
    let Some(yaml) = render(BASE) else { return };
    let docs = documents(&yaml);
    let coordinator = object(&docs, COORDINATOR.0, COORDINATOR.1);
    let worker = object(&docs, "Deployment", "xccd-worker");
    let labels = |workload: &str| section(&section(workload, "template"), "labels");
    for ((name, monitor), (own, other)) in monitors
        .iter()
        .zip([(coordinator, worker), (worker, coordinator)])
    {
        let what = format!("{PODMONITORS}: {name}");
        let selector = section(monitor, "selector");
        let matched = field(&selector, "matchLabels")
            .unwrap_or_else(|| panic!("{what}: a selector by matchLabels"));
        assert_selects(&matched, &labels(own), &what);
        assert_selects_not(&matched, &labels(other), &what);
        let port = endpoint(monitor, &what);
        assert_eq!(port, "metrics", "{what}");
        container_port(own, &port, &what);
    }
}
