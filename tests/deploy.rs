//! The deployment files in `deploy/`: the kustomize base (`deploy/k8s`) renders, holds the
//! objects the cluster needs with the probes, ports and selectors that fit together, and
//! validates against Kubernetes' own schemas, offline and strictly; the Dockerfile is
//! multi-stage and runs as a non-root user.
//!
//! Tools: `kubectl` on PATH (for `kubectl kustomize`), and the PyPI package
//! `kubernetes-validate` (pinned in tests/python/requirements.txt), found through
//! `XCCD_KUBERNETES_VALIDATE` (the path of its executable, as .ci/run sets it) or on PATH. A test
//! whose tool is missing says so on stderr and passes; one whose `XCCD_KUBERNETES_VALIDATE`
//! names no file fails.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Kubernetes versions the manifests are validated against: the oldest and the newest whose
/// schemas the pinned kubernetes-validate ships (it reads no network).
const KUBERNETES_VERSIONS: [&str; 2] = ["1.33", "1.37"];

/// The objects of the kustomize base, as (kind, name).
const OBJECTS: [(&str, &str); 5] = [
    ("Deployment", "xccd-coordinator"),
    ("Service", "xccd-coordinator"),
    ("Deployment", "xccd-worker"),
    ("HorizontalPodAutoscaler", "xccd-worker"),
    ("PodDisruptionBudget", "xccd-worker"),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// An executable file named `name` in one of PATH's folders.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// `kubectl kustomize deploy/k8s`, or None (and a note on stderr) without kubectl.
fn render() -> Option<String> {
    let Some(kubectl) = on_path("kubectl") else {
        eprintln!("skipped: kubectl not found");
        return None;
    };
    let out = Command::new(&kubectl)
        .args(["kustomize", "deploy/k8s"])
        .current_dir(root())
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "`kubectl kustomize deploy/k8s` failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("kustomize prints UTF-8"))
}

/// The kubernetes-validate executable: `XCCD_KUBERNETES_VALIDATE`, else on PATH, else None
/// (and a note on stderr).
fn kubernetes_validate() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("XCCD_KUBERNETES_VALIDATE").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "XCCD_KUBERNETES_VALIDATE={} names no file",
            path.display()
        );
        return Some(path);
    }
    let found = on_path("kubernetes-validate");
    if found.is_none() {
        eprintln!("skipped: kubernetes-validate not installed (pip install kubernetes-validate)");
    }
    found
}

/// Validates the YAML file at `path` strictly (unknown fields are errors) against each of
/// `KUBERNETES_VERSIONS`. Ok: how many resource validations passed. Err: the tool's report, when
/// it exits non-zero or reports a WARN, ERROR or FATAL line: it only warns, and exits 0, on a
/// kind or apiVersion it has no schema for, which here is a failure.
fn validate(tool: &Path, path: &Path) -> Result<usize, String> {
    let mut command = Command::new(tool);
    command.arg("--strict");
    for version in KUBERNETES_VERSIONS {
        command.args(["--kubernetes-version", version]);
    }
    let out = command
        .arg(path)
        .output()
        .expect("kubernetes-validate runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let passed = report
        .lines()
        .filter(|l| l.starts_with("INFO ") && l.contains(" passed for resource "))
        .count();
    let complaints = report
        .lines()
        .any(|l| ["WARN", "ERROR", "FATAL"].iter().any(|w| l.starts_with(w)));
    if out.status.success() && !complaints {
        Ok(passed)
    } else {
        Err(format!("kubernetes-validate: {}\n{report}", out.status))
    }
}

// A few helpers that read the YAML that kustomize prints (two-space indentation, sequences not
// indented under their key): enough to check the fields that matter here.

/// The documents of a multi-document YAML text.
fn documents(yaml: &str) -> Vec<&str> {
    yaml.split("\n---\n")
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect()
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// A line without its indentation and its list dash: "  - name: x" gives "name: x".
fn content(line: &str) -> &str {
    let t = line.trim_start();
    t.strip_prefix("- ").unwrap_or(t)
}

/// The lines under each line that reads `key:` (at any depth), up to the end of its value.
fn blocks<'a>(text: &'a str, key: &str) -> Vec<Vec<&'a str>> {
    let lines: Vec<&str> = text.lines().collect();
    let head = format!("{key}:");
    (0..lines.len())
        .filter(|&at| content(lines[at]) == head)
        .map(|at| {
            let column = lines[at].len() - content(lines[at]).len();
            lines[at + 1..]
                .iter()
                .take_while(|l| {
                    let i = indentation(l);
                    i > column || (i == column && l.trim_start().starts_with("- "))
                })
                .copied()
                .collect()
        })
        .collect()
}

/// The lines under the first line that reads `key:`.
fn block<'a>(text: &'a str, key: &str) -> Option<Vec<&'a str>> {
    blocks(text, key).into_iter().next()
}

/// The text of the block under `key`, which must be there.
fn section(text: &str, key: &str) -> String {
    block(text, key)
        .unwrap_or_else(|| panic!("no `{key}:` in\n{text}"))
        .join("\n")
}

/// The scalar of the first `key: value` line (at any depth), without quotes.
fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let prefix = format!("{key}: ");
    text.lines()
        .find_map(|l| content(l).strip_prefix(prefix.as_str()))
        .map(|v| v.trim().trim_matches('"'))
}

/// The items of a sequence of scalars (the block under its key), without quotes.
fn items(block: &str) -> Vec<&str> {
    block
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("- "))
        .map(|v| v.trim().trim_matches('"'))
        .collect()
}

/// The lines of a block without their indentation and list dashes: its `key: value` lines.
fn entries(block: &str) -> Vec<&str> {
    block.lines().map(content).map(str::trim_end).collect()
}

/// The document of the object of that kind and name.
fn object<'a>(docs: &[&'a str], kind: &str, name: &str) -> &'a str {
    docs.iter()
        .copied()
        .find(|d| {
            d.lines().any(|l| l == format!("kind: {kind}"))
                && block(d, "metadata").is_some_and(|m| {
                    m.iter()
                        .any(|l| indentation(l) == 2 && content(l) == format!("name: {name}"))
                })
        })
        .unwrap_or_else(|| panic!("no {kind} named {name} in the rendered manifests"))
}

/// Every `key: value` line of `selector` is among the pod template's labels.
fn assert_selects(selector: &str, template_labels: &str, what: &str) {
    let labels = entries(template_labels);
    let wanted = entries(selector);
    assert!(!wanted.is_empty(), "{what}: an empty selector");
    for label in wanted {
        assert!(
            labels.contains(&label),
            "{what}: the selector's {label} is not among the pods' labels {labels:?}"
        );
    }
}

/// The container's securityContext: non-root, read-only, no privilege escalation, no
/// capabilities.
fn assert_locked_down(deployment: &str, what: &str) {
    let contexts: Vec<String> = blocks(deployment, "securityContext")
        .into_iter()
        .map(|b| b.join("\n"))
        .collect();
    let container = contexts
        .iter()
        .find(|c| c.contains("readOnlyRootFilesystem:"))
        .unwrap_or_else(|| panic!("{what}: no container securityContext"));
    for line in [
        "runAsNonRoot: true",
        "runAsUser: 10001",
        "readOnlyRootFilesystem: true",
        "allowPrivilegeEscalation: false",
    ] {
        assert!(
            entries(container).contains(&line),
            "{what}: the container's securityContext lacks {line}:\n{container}"
        );
    }
    assert_eq!(
        items(&section(container, "drop")),
        ["ALL"],
        "{what}: capabilities"
    );
}

#[test]
fn kustomize_renders_the_coordinator_and_the_workers() {
    let Some(yaml) = render() else { return };
    let docs = documents(&yaml);

    // Exactly the expected objects.
    let kinds: Vec<&str> = docs
        .iter()
        .filter_map(|d| d.lines().find_map(|l| l.strip_prefix("kind: ")))
        .collect();
    assert_eq!(kinds.len(), docs.len(), "a document without a kind");
    assert_eq!(yaml.matches("\nkind: Deployment\n").count(), 2, "{yaml}");
    for kind in ["Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"] {
        assert_eq!(kinds.iter().filter(|k| **k == kind).count(), 1, "{kinds:?}");
    }
    assert_eq!(docs.len(), OBJECTS.len(), "{kinds:?}");
    for (kind, name) in OBJECTS {
        let doc = object(&docs, kind, name);
        let labels = section(doc, "labels");
        assert!(
            entries(&labels).contains(&"app.kubernetes.io/name: xccd"),
            "{kind} {name}: labels {labels}"
        );
    }

    // The coordinator: one pod, never two, serving gRPC and metrics, probed over gRPC.
    let coordinator = object(&docs, "Deployment", "xccd-coordinator");
    assert_eq!(value(coordinator, "apiVersion"), Some("apps/v1"));
    assert_eq!(value(coordinator, "replicas"), Some("1"));
    assert_eq!(
        value(&section(coordinator, "strategy"), "type"),
        Some("Recreate")
    );
    assert_eq!(
        value(coordinator, "terminationGracePeriodSeconds"),
        Some("30")
    );
    let args = section(coordinator, "args");
    let args = items(&args);
    assert_eq!(args[0], "serve", "{args:?}");
    for pair in [
        ["--listen", "0.0.0.0:50051"],
        ["--metrics-listen", "0.0.0.0:9090"],
        ["--threads", "0"],
    ] {
        assert!(args.windows(2).any(|w| w == pair), "{pair:?} in {args:?}");
    }
    let ports = section(coordinator, "ports");
    for port in [
        "containerPort: 50051",
        "name: grpc",
        "containerPort: 9090",
        "name: metrics",
    ] {
        assert!(entries(&ports).contains(&port), "{port} in\n{ports}");
    }
    for probe in ["readinessProbe", "livenessProbe"] {
        let probe_block = section(coordinator, probe);
        let grpc = block(&probe_block, "grpc")
            .unwrap_or_else(|| panic!("coordinator {probe} is not a grpc probe:\n{probe_block}"));
        assert_eq!(
            value(&grpc.join("\n"), "port"),
            Some("50051"),
            "coordinator {probe}"
        );
        // The overall service "", which is the default: no other service name.
        assert!(
            value(&probe_block, "service").unwrap_or("").is_empty(),
            "coordinator {probe}:\n{probe_block}"
        );
    }
    let resources = section(coordinator, "resources");
    assert!(block(&resources, "requests").is_some() && block(&resources, "limits").is_some());
    assert_locked_down(coordinator, "coordinator");
    let template = section(coordinator, "template");
    let coordinator_labels = section(&template, "labels");
    assert!(entries(&coordinator_labels).contains(&"app.kubernetes.io/component: coordinator"));
    assert_selects(
        &section(&section(coordinator, "selector"), "matchLabels"),
        &coordinator_labels,
        "coordinator Deployment",
    );

    // Its Service.
    let service = object(&docs, "Service", "xccd-coordinator");
    assert_eq!(value(service, "type"), Some("ClusterIP"));
    assert_selects(
        &section(service, "selector"),
        &coordinator_labels,
        "coordinator Service",
    );
    let ports = section(service, "ports");
    let ports: Vec<&str> = entries(&ports);
    for port in [
        "name: grpc",
        "port: 50051",
        "appProtocol: grpc",
        "name: metrics",
        "port: 9090",
        "appProtocol: http",
    ] {
        assert!(ports.contains(&port), "{port} in {ports:?}");
    }

    // The workers: connect to that Service, ready over gRPC, alive over TCP.
    let worker = object(&docs, "Deployment", "xccd-worker");
    assert_eq!(value(worker, "replicas"), Some("2"));
    assert_eq!(value(worker, "terminationGracePeriodSeconds"), Some("30"));
    let args = section(worker, "args");
    assert_eq!(
        items(&args),
        [
            "worker",
            "--coordinator",
            "http://xccd-coordinator:50051",
            "--threads",
            "1",
            "--health-listen",
            "0.0.0.0:50052",
        ]
    );
    let readiness = section(worker, "readinessProbe");
    let grpc = block(&readiness, "grpc")
        .unwrap_or_else(|| panic!("worker readinessProbe is not a grpc probe:\n{readiness}"));
    assert_eq!(value(&grpc.join("\n"), "port"), Some("50052"));
    let liveness = section(worker, "livenessProbe");
    assert!(
        block(&liveness, "grpc").is_none(),
        "a grpc liveness probe fails on NOT_SERVING (a worker waiting for its coordinator):\n{liveness}"
    );
    let tcp = block(&liveness, "tcpSocket")
        .unwrap_or_else(|| panic!("worker livenessProbe is not a tcpSocket probe:\n{liveness}"));
    assert_eq!(value(&tcp.join("\n"), "port"), Some("50052"));
    let requests = section(&section(worker, "resources"), "requests");
    assert_eq!(value(&requests, "cpu"), Some("1"));
    assert_eq!(value(&requests, "memory"), Some("256Mi"));
    assert_locked_down(worker, "worker");
    let template = section(worker, "template");
    let worker_labels = section(&template, "labels");
    assert!(entries(&worker_labels).contains(&"app.kubernetes.io/component: worker"));
    assert_selects(
        &section(&section(worker, "selector"), "matchLabels"),
        &worker_labels,
        "worker Deployment",
    );
    // Neither selects the other's pods.
    assert!(!entries(&worker_labels).contains(&"app.kubernetes.io/component: coordinator"));

    // Both run the image that kustomization.yaml's `images` names, with a tag.
    let images: Vec<&str> = [coordinator, worker]
        .iter()
        .map(|d| value(d, "image").expect("an image"))
        .collect();
    assert_eq!(images[0], images[1]);
    assert!(
        images[0].contains(':') && !images[0].ends_with(":latest"),
        "image {}: kustomization.yaml's images entry sets a tag",
        images[0]
    );

    // The autoscaler and the disruption budget of the workers.
    let hpa = object(&docs, "HorizontalPodAutoscaler", "xccd-worker");
    assert_eq!(value(hpa, "apiVersion"), Some("autoscaling/v2"));
    let target = section(hpa, "scaleTargetRef");
    assert_eq!(value(&target, "kind"), Some("Deployment"));
    assert_eq!(value(&target, "name"), Some("xccd-worker"));
    assert_eq!(value(hpa, "minReplicas"), Some("2"));
    assert_eq!(value(hpa, "maxReplicas"), Some("20"));
    let metrics = section(hpa, "metrics");
    assert_eq!(value(&metrics, "name"), Some("cpu"));
    assert_eq!(value(&metrics, "averageUtilization"), Some("80"));

    let pdb = object(&docs, "PodDisruptionBudget", "xccd-worker");
    assert_eq!(value(pdb, "apiVersion"), Some("policy/v1"));
    assert!(
        value(pdb, "maxUnavailable") == Some("1") || value(pdb, "minAvailable") == Some("1"),
        "{pdb}"
    );
    assert_selects(
        &section(&section(pdb, "selector"), "matchLabels"),
        &worker_labels,
        "worker PodDisruptionBudget",
    );
}

#[test]
fn manifests_validate_against_the_kubernetes_schemas() {
    let Some(yaml) = render() else { return };
    let Some(tool) = kubernetes_validate() else {
        return;
    };
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("deploy-k8s-rendered.yaml");
    std::fs::write(&path, &yaml).unwrap();
    let passed = validate(&tool, &path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        passed,
        OBJECTS.len() * KUBERNETES_VERSIONS.len(),
        "every object validated against every version"
    );
}

#[test]
fn the_validator_rejects_broken_manifests() {
    // So that the validation above cannot pass by validating nothing: the same check, on the
    // coordinator's Deployment as written, then broken three ways.
    let Some(tool) = kubernetes_validate() else {
        return;
    };
    let good =
        std::fs::read_to_string(root().join("deploy/k8s/coordinator-deployment.yaml")).unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let check = |name: &str, yaml: &str| {
        let path = dir.join(format!("deploy-k8s-{name}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        validate(&tool, &path)
    };
    assert_eq!(
        check("good", &good),
        Ok(KUBERNETES_VERSIONS.len()),
        "the coordinator's Deployment as written"
    );

    let broken = [
        // A misspelt field: only strict validation sees it.
        (
            "unknown-field",
            "terminationGracePeriodSeconds: 30",
            "terminationGracePeriod: 30",
            "terminationGracePeriod",
        ),
        // A field of the wrong type.
        ("wrong-type", "replicas: 1", "replicas: one", "replicas"),
        // An apiVersion with no schema: the tool only warns.
        (
            "unknown-api",
            "apiVersion: apps/v1",
            "apiVersion: apps/v2",
            "apps/v2",
        ),
    ];
    for (name, from, to, named) in broken {
        assert!(good.contains(from), "{from}");
        let report = check(name, &good.replacen(from, to, 1)).expect_err(&format!(
            "kubernetes-validate accepted a Deployment with {to}"
        ));
        assert!(report.contains(named), "{name}: {report}");
    }
}

#[test]
fn dockerfile_is_multi_stage_and_runs_as_non_root() {
    let text = std::fs::read_to_string(root().join("deploy/docker/Dockerfile"))
        .expect("deploy/docker/Dockerfile");
    // Instructions, without comments and with continuation lines joined.
    let joined = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\\n", " ");
    let instructions: Vec<(String, &str)> = joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (op, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            (op.to_ascii_uppercase(), rest.trim())
        })
        .collect();
    let of = |op: &str| -> Vec<&str> {
        instructions
            .iter()
            .filter(|(o, _)| o == op)
            .map(|(_, rest)| *rest)
            .collect()
    };

    // Multi-stage: a named builder stage, and a last stage that copies from it.
    let froms = of("FROM");
    assert!(froms.len() >= 2, "one stage: {froms:?}");
    let stages: Vec<&str> = froms
        .iter()
        .filter_map(|f| {
            let words: Vec<&str> = f.split_whitespace().collect();
            match words.as_slice() {
                [_, as_, name] if as_.eq_ignore_ascii_case("as") => Some(*name),
                _ => None,
            }
        })
        .collect();
    assert!(!stages.is_empty(), "no FROM ... AS stage: {froms:?}");
    let last = instructions.iter().rposition(|(o, _)| o == "FROM").unwrap();
    let runtime = &instructions[last..];
    assert!(
        runtime.iter().any(|(o, rest)| o == "COPY"
            && stages
                .iter()
                .any(|s| rest.starts_with(&format!("--from={s} ")))),
        "the last stage copies nothing from a build stage"
    );
    assert!(
        of("RUN")
            .iter()
            .any(|r| r.contains("cargo build --release --locked --bin xccd")),
        "no `cargo build --release --locked --bin xccd`"
    );

    // The runtime stage's user: numeric, and not root.
    let user = runtime
        .iter()
        .rev()
        .find(|(o, _)| o == "USER")
        .map(|(_, rest)| *rest)
        .expect("a USER in the last stage");
    let uid = user.split(':').next().unwrap();
    let uid: u32 = uid
        .parse()
        .unwrap_or_else(|_| panic!("USER {user}: not a numeric UID (runAsNonRoot needs one)"));
    assert_ne!(uid, 0, "USER {user} is root");
    assert_eq!(uid, 10001, "deploy/k8s runs as 10001");

    assert_eq!(of("ENTRYPOINT"), [r#"["/usr/local/bin/xccd"]"#]);
    let exposed: Vec<&str> = of("EXPOSE")
        .iter()
        .flat_map(|e| e.split_whitespace())
        .collect();
    for port in ["50051", "9090", "50052"] {
        assert!(exposed.contains(&port), "EXPOSE {port}: {exposed:?}");
    }

    // What it copies from the build context is there, and .dockerignore keeps none of it out.
    let ignored = std::fs::read_to_string(root().join(".dockerignore")).expect(".dockerignore");
    let ignored: Vec<&str> = ignored
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.trim_matches('/'))
        .collect();
    assert!(ignored.contains(&"target"), ".dockerignore: {ignored:?}");
    for copy in of("COPY") {
        if copy.starts_with("--from=") {
            continue;
        }
        let words: Vec<&str> = copy.split_whitespace().collect();
        for source in &words[..words.len() - 1] {
            let source = source.trim_end_matches('/');
            assert!(
                root().join(source).exists(),
                "COPY {source}: not in the repository"
            );
            assert!(
                !ignored.contains(&source),
                "COPY {source}: in .dockerignore"
            );
        }
    }
}
