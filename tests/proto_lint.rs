//! The public API's protos (proto/xccd/v1) pass `buf lint` with buf.yaml's configuration (buf's
//! STANDARD rules; the vendored google/rpc files and the workers' protocol are in the module but
//! not linted), and that configuration really lints each of the three files: a copy of proto/ with
//! one rule broken in each fails, naming the file and the rule.
//!
//! buf is the repository's own, pinned by .ci/buf/package-lock.json and installed by .ci/run
//! (`npm ci --prefix .ci/buf --ignore-scripts`), or the executable `XCCD_BUF` names. Without it
//! the tests say SKIPPED and how to install it (the README's `cargo test` needs no node), unless
//! `XCCD_DOCS_REQUIRE_TOOLS` is set, as .ci/run sets it: then they fail.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The buf to run: `XCCD_BUF`, else the repository's .ci/buf install; None (after a note on
/// stderr) when there is none, a panic instead when `XCCD_DOCS_REQUIRE_TOOLS` is set.
fn buf() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("XCCD_BUF").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "XCCD_BUF={} names no file", path.display());
        return Some(path);
    }
    let local = root().join(".ci/buf/node_modules/.bin/buf");
    if local.is_file() {
        return Some(local);
    }
    let note = "buf is not installed: run `npm ci --prefix .ci/buf --ignore-scripts` in the \
                repository (as .ci/run does; it needs node and npm), or set XCCD_BUF to a buf \
                executable";
    assert!(
        std::env::var_os("XCCD_DOCS_REQUIRE_TOOLS").is_none(),
        "{note} (XCCD_DOCS_REQUIRE_TOOLS is set)"
    );
    eprintln!("SKIPPED: {note}");
    None
}

/// `buf lint` in `dir` (a folder holding buf.yaml and proto/), one JSON finding a line: Ok when
/// buf exits 0 with no finding, Err(its output) otherwise.
fn lint(buf: &Path, dir: &Path) -> Result<(), String> {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("buf-cache");
    let out = Command::new(buf)
        .args(["lint", "--error-format", "json"])
        .current_dir(dir)
        // Its cache out of the user's home; the module has no remote dependency to fetch.
        .env("BUF_CACHE_DIR", &cache)
        .output()
        .expect("buf runs (the npm package's bin/buf is a node script: is node on PATH?)");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && report.trim().is_empty() {
        Ok(())
    } else {
        Err(format!("buf lint: {}\n{report}", out.status))
    }
}

#[test]
fn buf_lint_passes_on_the_public_protos() {
    let Some(buf) = buf() else { return };
    if let Err(report) = lint(&buf, root()) {
        panic!(
            "{report}\nFix the protos (or, for a deliberate departure, add an `except` to \
             buf.yaml and argue it there and in the proto)"
        );
    }
}

/// Copies `from` into `to`, folders and all.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Replaces the one occurrence of `from` in the file `path` by `to`.
fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        text.matches(from).count(),
        1,
        "{}: {from:?}",
        path.display()
    );
    std::fs::write(path, text.replace(from, to)).unwrap();
}

#[test]
fn buf_lint_fails_on_a_broken_copy_of_each_public_proto() {
    let Some(buf) = buf() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(root().join("buf.yaml"), dir.path().join("buf.yaml")).unwrap();
    copy_tree(&root().join("proto"), &dir.path().join("proto"));
    let v1 = dir.path().join("proto/xccd/v1");
    // One STANDARD rule broken in each file, each edit still a valid proto.
    let broken = [
        (
            "solver.proto",
            "ENGINE_UNSPECIFIED = 0;",
            "ENGINE_AUTO = 0;",
            "ENUM_ZERO_VALUE_SUFFIX",
        ),
        (
            "puzzles.proto",
            "service PuzzleService {",
            "service Puzzles {",
            "SERVICE_SUFFIX",
        ),
        (
            "puzzle.proto",
            "PUZZLE_KIND_LATIN = 1;",
            "LATIN = 1;",
            "ENUM_VALUE_PREFIX",
        ),
    ];
    for (file, from, to, _) in broken {
        edit(&v1.join(file), from, to);
    }
    let report = lint(&buf, dir.path()).expect_err("buf lint accepted the broken protos");
    for (file, _, _, rule) in broken {
        let path = format!("\"path\":\"proto/xccd/v1/{file}\"");
        let rule_type = format!("\"type\":\"{rule}\"");
        assert!(
            report
                .lines()
                .any(|line| line.contains(&path) && line.contains(&rule_type)),
            "no {rule} finding in {file}:\n{report}"
        );
    }
    // And nothing else: the rest of the copy is as clean as the original.
    let findings = report.lines().filter(|l| l.starts_with('{')).count();
    assert_eq!(findings, broken.len(), "{report}");
}
