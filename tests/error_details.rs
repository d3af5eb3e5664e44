//! grpcurl, through the server's reflection alone (no `.proto` file),
//! prints the error details of a status decoded: ErrorInfo, ResourceInfo,
//! BadRequest (docs/errors.md). grpcurl is the repository's
//! `.venv/bin/grpcurl` (where `.ci/run` installs it), else the one on PATH;
//! without it the test says SKIPPED, unless XCCD_DOCS_REQUIRE_TOOLS is set,
//! when it fails.

use std::process::Command;

use xccd::service::server::{start, ServeConfig};
use xccd::service::PoolConfig;

/// The grpcurl to run: the repository's venv's, else the one on PATH.
fn grpcurl_program() -> std::path::PathBuf {
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/grpcurl");
    if venv.is_file() {
        venv
    } else {
        "grpcurl".into()
    }
}

fn grpcurl_found() -> bool {
    let found = Command::new(grpcurl_program())
        .arg("-version")
        .output()
        .is_ok();
    if !found {
        assert!(
            std::env::var_os("XCCD_DOCS_REQUIRE_TOOLS").is_none(),
            "grpcurl is not on PATH (XCCD_DOCS_REQUIRE_TOOLS is set)"
        );
        eprintln!("SKIPPED: grpcurl is not on PATH");
    }
    found
}

/// grpcurl's output (stdout and stderr) for `method` with `data`, and
/// whether it succeeded.
fn grpcurl(addr: &str, method: &str, data: &str) -> (bool, String) {
    let out = Command::new(grpcurl_program())
        .args(["-plaintext", "-format-error", "-d", data, addr, method])
        .output()
        .expect("grpcurl runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_decodes_error_details_through_reflection() {
    if !grpcurl_found() {
        return;
    }
    let server = start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        pool: PoolConfig {
            threads: 1,
            ..PoolConfig::default()
        },
        ..ServeConfig::default()
    })
    .await
    .unwrap();
    let addr = server.addr.to_string();
    let cases = [
        (
            "xccd.v1.SolverService/GetJob",
            r#"{"name": "jobs/987654321"}"#,
            &[
                "\"code\": 5",
                "type.googleapis.com/google.rpc.ErrorInfo",
                "\"reason\":\"JOB_NOT_FOUND\"",
                "\"domain\":\"xccd\"",
                "type.googleapis.com/google.rpc.ResourceInfo",
                "\"resourceName\":\"jobs/987654321\"",
            ][..],
        ),
        (
            "xccd.v1.SolverService/Solve",
            r#"{"problem": {"dlx": "a b\nc\n"}}"#,
            &[
                "\"code\": 3",
                "\"reason\":\"INVALID_PROBLEM\"",
                "type.googleapis.com/google.rpc.BadRequest",
                "\"field\":\"problem.dlx\"",
            ][..],
        ),
    ];
    for (method, data, expected) in cases {
        let (ok, text) = grpcurl(&addr, method, data);
        assert!(!ok, "{method} succeeded: {text}");
        assert!(!text.contains("not recognized"), "{method}: {text}");
        for want in expected {
            assert!(text.contains(want), "{method}: no {want} in\n{text}");
        }
    }
    server.shutdown().await.unwrap();
}
