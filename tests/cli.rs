//! The `xccd` binary as a user runs it.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn xccd(args: &[&str], stdin: impl AsRef<[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the xccd binary runs");
    // The program may exit (bad arguments) before reading its input: a
    // broken pipe here is not the test's failure.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_ref());
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn solve_prints_knuths_format_and_statistics() {
    let out = xccd(&["solve", "examples/colors.dlx"], "");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "1:\n A C X:1 Y:1\n B X:1\n");
    let err = text(&out.stderr);
    assert!(
        err.contains("Option ignored (no primary items): X:0 Y:1"),
        "{err}"
    );
    // The default engine (cells, Knuth's SSXCC) and the links engine
    // (DLX2) each report their program's counts.
    let last = |err: &str| err.trim_end().lines().last().unwrap().to_string();
    assert!(
        last(&err).starts_with("Altogether 1 solution, 16 updates, 3 nodes, "),
        "{err}"
    );
    let out = xccd(&["solve", "examples/colors.dlx", "--engine", "links"], "");
    assert_eq!(text(&out.stdout), "1:\n A C X:1 Y:1\n B X:1\n");
    let err = text(&out.stderr);
    assert!(
        last(&err).starts_with("Altogether 1 solution, 14 updates, 5 cleansings, 4 nodes, "),
        "{err}"
    );
    // Multiplicities on cells (Algorithm M on sparse sets, SSMCC's
    // branching) and on links (DLX3): the same solutions, each engine with
    // its own tree.
    let mut printed = Vec::new();
    for engine in ["cells", "links"] {
        let out = xccd(
            &[
                "solve",
                "examples/multiplicities.dlx",
                "--engine",
                engine,
                "--all",
                "--format",
                "indices",
            ],
            "",
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let mut lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
        lines.sort();
        assert!(!lines.is_empty());
        printed.push(lines);
    }
    assert_eq!(printed[0], printed[1]);
}

#[test]
fn count_all_and_limit() {
    let out = xccd(&["solve", "examples/queens8.dlx", "--count"], "");
    assert_eq!(text(&out.stdout), "92\n");
    assert!(text(&out.stderr).contains("Altogether 92 solutions, 15559 updates, 856 nodes"));
    let out = xccd(
        &[
            "solve",
            "examples/queens8.dlx",
            "--count",
            "--engine",
            "links",
        ],
        "",
    );
    assert_eq!(text(&out.stdout), "92\n");
    assert!(text(&out.stderr).contains("Altogether 92 solutions, 16680 updates, 1049 nodes"));

    let out = xccd(
        &[
            "solve",
            "examples/queens8.dlx",
            "--all",
            "--format",
            "indices",
            "-q",
        ],
        "",
    );
    let lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 92);
    assert!(lines.iter().all(|l| l.split(' ').count() == 8));
    assert!(out.stderr.is_empty(), "--quiet prints nothing on stderr");

    let out = xccd(
        &[
            "solve",
            "examples/queens8.dlx",
            "--limit",
            "3",
            "--format",
            "json",
        ],
        "",
    );
    let objects: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 3);
    assert_eq!(objects[2]["solution"], 3);
    assert_eq!(objects[0]["options"].as_array().unwrap().len(), 8);
    // The first JSON solution is the first --all solution.
    let first: Vec<String> = objects[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    assert_eq!(first.join(" "), lines[0]);
}

#[test]
fn reads_standard_input_and_reports_zero_solutions() {
    let out = xccd(&["solve", "-", "--all"], "A B\nA\n");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "");
    assert!(text(&out.stderr).contains("Altogether 0 solutions"));
}

#[test]
fn bad_input_exits_2_naming_line_column_and_token() {
    let out = xccd(&["solve"], "| items\nA B | X\nA X:1\nB Q\n");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("line 4, column 3"), "{err}");
    assert!(err.contains("\"Q\""), "{err}");
    assert!(text(&out.stdout).is_empty());

    let out = xccd(&["solve", "no/such/file.dlx"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no/such/file.dlx"));

    let out = xccd(&["solve"], b"A\xff B\n");
    assert_eq!(out.status.code(), Some(2));

    let out = xccd(&["solve", "--limit", "0", "examples/toy.dlx"], "");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn node_limit_stops_the_search() {
    let out = xccd(
        &[
            "solve",
            "examples/queens8.dlx",
            "--count",
            "--max-nodes",
            "100",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0));
    let count: u64 = text(&out.stdout).trim().parse().unwrap();
    assert!(count < 92);
    assert!(text(&out.stderr).contains("Search stopped after 100 nodes"));
}

#[test]
fn profile_lists_nodes_per_level() {
    let out = xccd(&["solve", "examples/toy.dlx", "--profile", "--all"], "");
    let err = text(&out.stderr);
    assert!(err.contains("Profile:\n  0: 1\n"), "{err}");
}

#[test]
fn numbers_out_of_range_are_usage_errors_not_panics() {
    for (args, words) in [
        (
            vec!["solve", "examples/queens8.dlx", "--progress=-1"],
            "--progress",
        ),
        (
            vec!["solve", "examples/queens8.dlx", "--progress", "-1"],
            "-1",
        ),
        (
            vec!["solve", "examples/queens8.dlx", "--progress", "NaN"],
            "--progress",
        ),
        (
            vec!["solve", "examples/queens8.dlx", "--progress", "1e300"],
            "--progress",
        ),
        (
            vec!["solve", "examples/queens8.dlx", "--limit", "0"],
            "--limit",
        ),
        (
            vec!["solve", "examples/queens8.dlx", "--threads", "0"],
            "--threads",
        ),
    ] {
        let out = xccd(&args, "");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // Progress at a fraction of a second is fine.
    let out = xccd(
        &[
            "solve",
            "examples/queens8.dlx",
            "--count",
            "--progress",
            "0.001",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "92\n");
}

/// `solve --server` prints the same solutions as a solve in this process
/// (as sets: two server threads may find them in another order). It asks
/// for the packed form, here with indices of 1 byte (queens8's 92
/// solutions) and of 2 (sudoku_hard17's 729 options).
#[test]
fn solve_on_a_server_prints_the_solutions_of_a_local_solve() {
    use xccd::service::server::{start, ServeConfig};
    use xccd::service::PoolConfig;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(start(ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            pool: PoolConfig {
                threads: 2,
                ..PoolConfig::default()
            },
            ..ServeConfig::default()
        }))
        .expect("a server on loopback");
    let url = format!("http://{}", server.addr);
    for (file, count) in [
        ("examples/queens8.dlx", 92),
        ("bench/instances/sudoku_hard17.dlx", 1),
    ] {
        let args = ["solve", file, "--all", "--quiet", "--format", "indices"];
        let lines = |output: Output| {
            assert!(output.status.success(), "{file}: {output:?}");
            let mut lines: Vec<String> = text(&output.stdout).lines().map(String::from).collect();
            lines.sort();
            lines
        };
        let local = lines(xccd(&args, ""));
        let remote = lines(xccd(&[&args[..], &["--server", &url]].concat(), ""));
        assert_eq!(local.len(), count, "{file}");
        assert_eq!(remote, local, "{file}: the server's solutions");
    }
    runtime.block_on(server.shutdown()).expect("clean shutdown");
}

/// A short `XCCD_WORKER_TOKEN` left in the environment is no reason for a
/// server with no workers' listener to refuse to start; with one
/// (`--worker-listen`) the token is checked and refused.
#[test]
fn a_worker_token_is_checked_only_where_workers_can_connect() {
    let port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    };
    let listen = port();
    let mut plain = Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(["serve", "--threads", "2", "--data-dir", "none"])
        .args(["--listen", &listen.to_string()])
        .env("XCCD_WORKER_TOKEN", "short")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start xccd serve");
    let start = std::time::Instant::now();
    let serving = loop {
        if let Some(status) = plain.try_wait().unwrap() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut plain.stderr.take().unwrap(), &mut err);
            panic!("xccd serve exited ({status}): {err}");
        }
        if std::net::TcpStream::connect(listen).is_ok() {
            break true;
        }
        if start.elapsed() > std::time::Duration::from_secs(30) {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = plain.kill();
    let _ = plain.wait();
    assert!(serving, "xccd serve did not listen within 30 s");

    let workers = port();
    let refused = Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(["serve", "--threads", "2", "--data-dir", "none"])
        .args(["--listen", &port().to_string()])
        .args(["--worker-listen", &workers.to_string()])
        .env("XCCD_WORKER_TOKEN", "short")
        .stdin(Stdio::null())
        .output()
        .expect("run xccd serve");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let err = text(&refused.stderr);
    assert!(err.contains("worker token must be at least"), "{err}");
}

#[test]
fn each_puzzle_kind_shows_its_format_in_its_help() {
    // A phrase of each kind's format, and its example's first line.
    let kinds = [
        ("latin", "(all latin squares of order n)", "1 . ."),
        ("futoshiki", "`^` (upper < lower)", "3 .<. ."),
        ("hitori", "1..max(rows, cols)", "1 4 2 2"),
        ("hidato", "`#` (a hole", "1 . 3 #"),
        ("slitherlink", "(a clue) or `.` (no clue)", "..3"),
        ("sudoku", "N lines of N tokens", ".......1.4"),
        ("queens", "the integer n, 1 to 1000", "  8"),
    ];
    for sub in ["solve", "encode", "check"] {
        for (kind, phrase, example) in kinds {
            let out = xccd(&["puzzle", sub, kind, "--help"], "");
            assert_eq!(out.status.code(), Some(0));
            let help = text(&out.stdout);
            assert!(help.contains(phrase), "{sub} {kind}: {help}");
            assert!(help.contains(example), "{sub} {kind}: {help}");
            assert!(help.contains("[FILE]"), "{sub} {kind}: {help}");
        }
    }
    // The list of kinds, from the command's own help.
    let help = text(&xccd(&["puzzle", "solve", "--help"], "").stdout);
    for (kind, _, _) in kinds {
        assert!(help.contains(kind), "{help}");
    }
}
