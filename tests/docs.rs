//! Every command the docs show with its output is run here, and its output compared with the
//! docs: a figure that changes (a node count, a solution, a message) fails this test instead of
//! going stale. `docs/writing-docs.md` says the same for writers.
//!
//! # The convention
//!
//! - **Checked blocks.** Every fenced block whose info string is `console`, in every Markdown
//!   file of the repository (README.md, docs/, and the others; not target/ or hidden folders).
//!   A block of any other kind may hold commands but no `$ ` prompt: a block that shows output
//!   is a `console` block (the test fails on a `$ ` line elsewhere).
//! - **Commands.** A line starting with `$ ` is a command; a command line ending in `\` goes on
//!   at the next line. The lines after a command, up to the next `$ ` line or the block's end,
//!   are its expected standard output. A line holding only `...` matches any number of lines
//!   (none too); `...` inside a line matches any text within that line (seconds, for example).
//!   Trailing blanks of a line and blank lines at the end of an output are ignored.
//! - **The shell.** The commands of a block run one after another in one `bash` (as if typed
//!   in a terminal: `export`, `cd` and background jobs carry over to the next command), from the
//!   repository's root, with the built `xccd` first on PATH, then the repository's `.venv/bin`
//!   when it exists (the Python tools that `.ci/run` installs there: grpcio, grpcurl). No
//!   `XCCD_*` variable of the caller's environment reaches them. Standard input is empty.
//! - **What is compared**: standard output only. Standard error (timing lines, logs) is not
//!   compared, and is shown when a command fails; to document an error message, redirect it
//!   (`2>&1`). A command must exit with status 0; to show one that fails, show its status too
//!   (`... || echo "exit status $?"`).
//! - **Background commands.** A command ending in `&` runs in the background until its
//!   session ends; its output goes to a log (shown on failure) and is not compared. After
//!   `xccd serve ... &` the test waits until the server answers the gRPC health service, after
//!   `xccd worker ... &` until the worker is connected to its coordinator (the worker's health
//!   service, on a port the test gives it in `XCCD_HEALTH_LISTEN`). When the session ends,
//!   every process it started gets SIGTERM (SIGKILL after 15 s).
//! - **Ports and folders.** The docs show the defaults a user gets: the API on port 50051 and a
//!   pure coordinator's worker listener on 50052 (the API port + 1). Each session gets free
//!   ports instead: the test sets `XCCD_LISTEN=127.0.0.1:PORT`, replaces `:50051` and `:50052`
//!   in the commands with `:PORT` and `:PORT+1` (and back in their output), and sets
//!   `XCCD_DATA_DIR` to a fresh folder, so that `xccd serve` keeps its jobs out of the
//!   repository.
//! - **Links**: every relative link of a page names a file of the repository, and one of its
//!   headings when it has an anchor.
//! - **Annotations**, an HTML comment on the last non-blank line before a block:
//!   `<!-- doc-test: continued -->` runs the block in the session of the block before it in
//!   the same file (its shell, variables and background servers), as a reader who follows
//!   along has them; `<!-- doc-test: requires TOOL -->` names a tool the block needs
//!   (`grpcurl`: the program on PATH; `grpcio`: a `python3` that imports `grpc` and
//!   `grpc_tools`). Without the tool the block is skipped with a note on stderr, unless
//!   `XCCD_DOCS_REQUIRE_TOOLS` is set (`.ci/run` sets it): then it fails.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

const XCCD: &str = env!("CARGO_BIN_EXE_xccd");

/// The ports the docs show: the API's default, and a pure coordinator's worker listener.
const DOC_API_PORT: u16 = 50051;
const DOC_WORKER_PORT: u16 = 50052;

/// How long one command may take before the test gives up on it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a background server or worker may take to be ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// A block that takes longer is named on stderr: CI has 2 cores for the whole suite.
const SLOW_BLOCK_SECONDS: f64 = 3.0;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ----- Reading the docs -----

/// One fenced block of a Markdown file.
#[derive(Debug)]
struct Block {
    /// The file, relative to the repository's root.
    file: String,
    /// The 1-based line of the opening fence.
    line: usize,
    info: String,
    annotation: Annotation,
    /// The block's lines (indentation of the fence removed), with their 1-based line numbers.
    lines: Vec<(usize, String)>,
}

#[derive(Debug, Default, PartialEq)]
struct Annotation {
    continued: bool,
    requires: Vec<Tool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Tool {
    Grpcurl,
    Grpcio,
}

impl Tool {
    fn parse(name: &str) -> Option<Tool> {
        match name {
            "grpcurl" => Some(Tool::Grpcurl),
            "grpcio" => Some(Tool::Grpcio),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Tool::Grpcurl => "grpcurl",
            Tool::Grpcio => "grpcio",
        }
    }

    /// A shell test that succeeds when the tool is there.
    fn probe(self) -> &'static str {
        match self {
            Tool::Grpcurl => "command -v grpcurl",
            Tool::Grpcio => "python3 -c 'import grpc, grpc_tools'",
        }
    }
}

/// Parses `<!-- doc-test: WORDS -->`, or says what is wrong with it.
fn parse_annotation(comment: &str) -> Result<Annotation, String> {
    let words = comment
        .strip_prefix("<!-- doc-test:")
        .and_then(|rest| rest.strip_suffix("-->"))
        .ok_or_else(|| format!("not a doc-test annotation: {comment}"))?;
    let mut annotation = Annotation::default();
    let mut words = words.split([' ', ',']).filter(|w| !w.is_empty());
    while let Some(word) = words.next() {
        match word {
            "continued" => annotation.continued = true,
            "requires" => {
                let name = words
                    .next()
                    .ok_or("`requires` names no tool (grpcurl or grpcio)")?;
                let tool = Tool::parse(name)
                    .ok_or_else(|| format!("unknown tool {name:?} (known: grpcurl, grpcio)"))?;
                annotation.requires.push(tool);
            }
            _ => {
                return Err(format!(
                    "unknown doc-test word {word:?} (known: continued, requires TOOL)"
                ))
            }
        }
    }
    Ok(annotation)
}

/// The fenced blocks of one Markdown text.
fn blocks(file: &str, text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut last_text_line: Option<&str> = None;
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let trimmed = line.trim_start();
        let Some(mark) = ['`', '~']
            .into_iter()
            .find(|c| trimmed.starts_with(&c.to_string().repeat(3)))
        else {
            if !line.trim().is_empty() {
                last_text_line = Some(line.trim());
            }
            continue;
        };
        // A fence of n marks closes at a line of at least n of them and nothing else.
        let length = trimmed.len() - trimmed.trim_start_matches(mark).len();
        let indent = line.len() - trimmed.len();
        let info = trimmed[length..].trim().to_string();
        let annotation = match last_text_line {
            Some(comment) if comment.starts_with("<!-- doc-test") => {
                parse_annotation(comment).map_err(|e| format!("{file}:{}: {e}", index + 1))?
            }
            _ => Annotation::default(),
        };
        let mut body = Vec::new();
        let mut closed = false;
        for (body_index, body_line) in lines.by_ref() {
            let close = body_line.trim();
            if close.len() >= length && close.chars().all(|c| c == mark) {
                closed = true;
                break;
            }
            let cut = body_line.len() - body_line.trim_start().len();
            body.push((body_index + 1, body_line[cut.min(indent)..].to_string()));
        }
        if !closed {
            return Err(format!(
                "{file}:{}: a fenced block that never ends",
                index + 1
            ));
        }
        out.push(Block {
            file: file.to_string(),
            line: index + 1,
            info,
            annotation,
            lines: body,
        });
        last_text_line = None;
    }
    Ok(out)
}

/// One command of a `console` block and the output the docs show for it.
#[derive(Debug, PartialEq)]
struct Step {
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// The commands of a `console` block.
fn steps(block: &Block) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut lines = block.lines.iter();
    while let Some((number, line)) = lines.next() {
        if let Some(command) = line.strip_prefix("$ ") {
            let mut command = command.to_string();
            // bash joins a line ending in `\` with the next one itself.
            while command.ends_with('\\') {
                command.push('\n');
                match lines.next() {
                    Some((_, more)) => command.push_str(more),
                    None => {
                        return Err(format!(
                            "{}:{number}: the command's last line ends in `\\`",
                            block.file
                        ))
                    }
                }
            }
            steps.push(Step {
                line: *number,
                command,
                expected: Vec::new(),
            });
        } else if let Some(step) = steps.last_mut() {
            step.expected.push(line.clone());
        } else {
            return Err(format!(
                "{}:{number}: a console block must start with a `$ ` command, not {line:?}",
                block.file
            ));
        }
    }
    if steps.is_empty() {
        return Err(format!(
            "{}:{}: a console block without a command",
            block.file, block.line
        ));
    }
    Ok(steps)
}

/// The repository's Markdown files, relative to its root, sorted.
fn markdown_files() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read a folder of the repository") {
            let path = entry.expect("a folder entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || (dir == root && name == "target") {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            } else if name.ends_with(".md") {
                let relative = path.strip_prefix(root).unwrap();
                out.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let root = root();
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}

fn all_blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(root().join(&file)).unwrap();
        out.extend(blocks(&file, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    out
}

// ----- Matching output -----

/// Whether one output line matches one line of the docs (`...` inside it matches any text).
fn line_matches(pattern: &str, line: &str) -> bool {
    let (pattern, line) = (pattern.trim_end(), line.trim_end());
    let mut parts = pattern.split("...");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn is_ellipsis(pattern: &str) -> bool {
    pattern.trim() == "..."
}

/// Whether an output matches the docs' lines (a `...` line matches any number of lines).
fn output_matches(pattern: &[String], actual: &[String]) -> bool {
    // matches[i][j]: pattern[i..] matches actual[j..].
    let (p, a) = (pattern.len(), actual.len());
    let mut matches = vec![vec![false; a + 1]; p + 1];
    matches[p][a] = true;
    for i in (0..p).rev() {
        for j in (0..=a).rev() {
            matches[i][j] = if is_ellipsis(&pattern[i]) {
                matches[i + 1][j] || (j < a && matches[i][j + 1])
            } else {
                j < a && line_matches(&pattern[i], &actual[j]) && matches[i + 1][j + 1]
            };
        }
    }
    matches[0][0]
}

/// Drops blank lines at the end.
fn trimmed(mut lines: Vec<String>) -> Vec<String> {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines
}

/// A line diff of the docs' output against the actual one: `-` for a line of the docs that no
/// output line matches, `+` for an output line that matches no line of the docs.
fn diff(pattern: &[String], actual: &[String]) -> String {
    let pattern: Vec<&String> = pattern.iter().filter(|p| !is_ellipsis(p)).collect();
    let (p, a) = (pattern.len(), actual.len());
    // lcs[i][j]: the longest common matching of pattern[i..] and actual[j..].
    let mut lcs = vec![vec![0usize; a + 1]; p + 1];
    for i in (0..p).rev() {
        for j in (0..a).rev() {
            lcs[i][j] = if line_matches(pattern[i], &actual[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < p || j < a {
        if i < p && j < a && line_matches(pattern[i], &actual[j]) {
            let _ = writeln!(out, "    {}", actual[j]);
            i += 1;
            j += 1;
        } else if i < p && (j == a || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "  - {}", pattern[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "  + {}", actual[j]);
            j += 1;
        }
    }
    out
}

// ----- Running a block -----

/// The ports of a session: the API's and the one after it (a pure coordinator's worker
/// listener), both free.
fn free_port_pair() -> u16 {
    for _ in 0..100 {
        let first = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        if port < u16::MAX && TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
    panic!("no two free ports in a row");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// What a command printed.
struct Ran {
    status: i32,
    /// The pid of the last background job (`$!`), after a background command.
    background_pid: Option<u32>,
    stdout: Vec<String>,
    stderr: String,
}

/// One `bash`, in a process group of its own, that runs the commands of one or more blocks.
struct Session {
    shell: Child,
    stdin: ChildStdin,
    stdout: Receiver<String>,
    folder: tempfile::TempDir,
    api_port: u16,
    commands: usize,
    /// Background commands: their logs, pids and what they are.
    background: Vec<(PathBuf, u32, String)>,
    /// The health port given to the last background `xccd worker`.
    worker_health_port: Option<u16>,
}

/// The start of the line that ends each command's output, before its status and `$!`: it
/// begins with an ASCII record separator, which no documented output holds.
const MARKER: &str = "\u{1e}doc-test-done";

impl Session {
    fn start(path: &str) -> Session {
        let folder = tempfile::Builder::new()
            .prefix("doc-test-")
            .tempdir()
            .expect("a temporary folder");
        let api_port = free_port_pair();
        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc", "-s"])
            .current_dir(root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(folder.path().join("bash.stderr")).expect("a log file"));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("XCCD_") {
                command.env_remove(&name);
            }
        }
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let data_dir = folder.path().join("data");
        let mut shell = command
            .env("PATH", path)
            .env("XCCD_LISTEN", format!("127.0.0.1:{api_port}"))
            .env("XCCD_DATA_DIR", &data_dir)
            .spawn()
            .expect("start bash");
        let stdin = shell.stdin.take().unwrap();
        let reader = BufReader::new(shell.stdout.take().unwrap());
        let (lines, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            for line in reader.split(b'\n') {
                let Ok(line) = line else { break };
                if lines
                    .send(String::from_utf8_lossy(&line).into_owned())
                    .is_err()
                {
                    break;
                }
            }
        });
        Session {
            shell,
            stdin,
            stdout,
            folder,
            api_port,
            commands: 0,
            background: Vec::new(),
            worker_health_port: None,
        }
    }

    /// The command with the docs' ports replaced by this session's.
    fn localize(&self, text: &str) -> String {
        text.replace(&format!(":{DOC_API_PORT}"), &format!(":{}", self.api_port))
            .replace(
                &format!(":{DOC_WORKER_PORT}"),
                &format!(":{}", self.api_port + 1),
            )
    }

    /// An output line with this session's ports replaced by the docs'.
    fn delocalize(&self, text: &str) -> String {
        text.replace(
            &format!(":{}", self.api_port + 1),
            &format!(":{DOC_WORKER_PORT}"),
        )
        .replace(&format!(":{}", self.api_port), &format!(":{DOC_API_PORT}"))
    }

    /// Runs a shell text and returns what it printed and its status.
    fn run(&mut self, command: &str) -> Result<Ran, String> {
        self.commands += 1;
        let n = self.commands;
        let command = self.localize(command);
        let background = command.trim_end().ends_with('&');
        let stderr_path = self.folder.path().join(format!("stderr-{n}"));
        let script = if background {
            let log = self.folder.path().join(format!("background-{n}.log"));
            let mut script = String::new();
            if is_xccd(&command, "worker") {
                let health = free_port();
                let _ = writeln!(script, "export XCCD_HEALTH_LISTEN=127.0.0.1:{health}");
                self.worker_health_port = Some(health);
            }
            let _ = writeln!(script, "{{ {command}\n}} </dev/null >>{} 2>&1", quote(&log));
            self.background.push((log, 0, command.clone()));
            script
        } else {
            format!("{{ {command}\n}} </dev/null 2>{}\n", quote(&stderr_path))
        };
        let script = format!("{script}printf '\\n{MARKER} %s %s\\n' \"$?\" \"$!\"\n");
        self.stdin
            .write_all(script.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("cannot write to bash: {e}"))?;
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        let mut stdout = Vec::new();
        let (status, pid) = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(MARKER) {
                        let mut words = rest.split_whitespace();
                        let status = words.next().and_then(|s| s.parse().ok()).unwrap_or(-1);
                        let pid = words.next().and_then(|s| s.parse().ok());
                        break (status, pid);
                    }
                    stdout.push(self.delocalize(&line));
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "no end after {} s; output so far:\n{}",
                        COMMAND_TIMEOUT.as_secs(),
                        stdout.join("\n")
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "bash ended (did a command exit the shell?); output so far:\n{}",
                        stdout.join("\n")
                    ))
                }
            }
        };
        let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        if background {
            let pid = pid.ok_or("no pid for the background command")?;
            self.background.last_mut().unwrap().1 = pid;
        }
        Ok(Ran {
            status,
            background_pid: pid.filter(|_| background),
            stdout: trimmed(stdout),
            stderr,
        })
    }

    /// After a background `xccd serve` or `xccd worker`: waits until it serves.
    fn wait_ready(&mut self, command: &str, pid: u32) -> Result<(), String> {
        let (port, service) = if is_xccd(command, "serve") {
            (self.api_port, "xccd.v1.SolverService")
        } else if is_xccd(command, "worker") {
            (
                self.worker_health_port
                    .ok_or("no health port for the worker")?,
                "",
            )
        } else {
            return Ok(());
        };
        let start = Instant::now();
        let log = self
            .background
            .last()
            .map(|b| b.0.clone())
            .unwrap_or_default();
        // A runtime of its own, dropped on return with its connections: a connection left open
        // in a runtime nobody drives would hold up the server's graceful shutdown.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        loop {
            if runtime.block_on(serving(port, service)) {
                return Ok(());
            }
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return Err(format!(
                    "the background command ended before serving; its log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            if start.elapsed() > READY_TIMEOUT {
                return Err(format!(
                    "not serving after {} s; its log:\n{}",
                    READY_TIMEOUT.as_secs(),
                    std::fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The logs of the background commands and bash's own errors, for a failure's report.
    fn logs_for_report(&self) -> String {
        let mut out = String::new();
        let bash =
            std::fs::read_to_string(self.folder.path().join("bash.stderr")).unwrap_or_default();
        if !bash.trim().is_empty() {
            let _ = writeln!(out, "  bash's own standard error:");
            for line in bash.lines().take(20) {
                let _ = writeln!(out, "    {line}");
            }
        }
        for (log, pid, command) in &self.background {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(20).collect();
            let _ = writeln!(
                out,
                "  background `{}` (pid {pid}), its log's end:",
                command.trim()
            );
            for line in tail.iter().rev() {
                let _ = writeln!(out, "    {line}");
            }
        }
        out
    }
}

impl Drop for Session {
    /// Ends the session: bash sends SIGTERM to its background jobs, waits for them (so that it
    /// reaps them) and exits; whatever is left of its process group after 15 s gets SIGKILL.
    fn drop(&mut self) {
        let _ = self
            .stdin
            .write_all(b"kill -TERM $(jobs -p) 2>/dev/null; wait; exit 0\n")
            .and_then(|()| self.stdin.flush());
        let start = Instant::now();
        while matches!(self.shell.try_wait(), Ok(None)) && start.elapsed() < Duration::from_secs(15)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.shell.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.shell.wait();
    }
}

/// Whether a command runs `xccd SUBCOMMAND`.
fn is_xccd(command: &str, subcommand: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    words
        .windows(2)
        .any(|w| (w[0] == "xccd" || w[0].ends_with("/xccd")) && w[1] == subcommand)
}

fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// Whether the gRPC health service on a local port says SERVING for a service.
async fn serving(port: u16, service: &str) -> bool {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;
    let Ok(endpoint) = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
    else {
        return false;
    };
    let Ok(channel) = endpoint
        .connect_timeout(Duration::from_secs(1))
        .connect()
        .await
    else {
        return false;
    };
    let request = HealthCheckRequest {
        service: service.to_string(),
    };
    match HealthClient::new(channel).check(request).await {
        Ok(response) => response.into_inner().status == ServingStatus::Serving as i32,
        Err(_) => false,
    }
}

/// The PATH of the sessions: the built xccd, the repository's venv, the caller's PATH.
fn session_path() -> String {
    let xccd = Path::new(XCCD).parent().unwrap();
    let mut parts = vec![xccd.display().to_string()];
    let venv = root().join(".venv/bin");
    if venv.is_dir() {
        parts.push(venv.display().to_string());
    }
    parts.push(std::env::var("PATH").unwrap_or_default());
    parts.join(":")
}

/// Whether a tool is there, in the sessions' environment.
fn has_tool(tool: Tool, path: &str) -> bool {
    Command::new("bash")
        .args(["--noprofile", "--norc", "-c", tool.probe()])
        .env("PATH", path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a block's commands in a session; returns the failures' reports.
fn run_block(session: &mut Session, block: &Block) -> Vec<String> {
    let steps = match steps(block) {
        Ok(steps) => steps,
        Err(e) => return vec![e],
    };
    let mut failures = Vec::new();
    for step in steps {
        let place = format!("{}:{}: `{}`", block.file, step.line, step.command);
        let ran = match session.run(&step.command) {
            Ok(ran) => ran,
            Err(e) => {
                failures.push(format!("{place}\n  {e}\n{}", session.logs_for_report()));
                return failures; // the shell's state is unknown: the block's rest would mislead
            }
        };
        if let Some(pid) = ran.background_pid {
            if let Err(e) = session.wait_ready(&step.command, pid) {
                failures.push(format!("{place}\n  {e}"));
                return failures;
            }
            continue;
        }
        let expected = trimmed(step.expected.clone());
        let output_ok = output_matches(&expected, &ran.stdout);
        if ran.status != 0 || !output_ok {
            let mut report = format!("{place}\n");
            if ran.status != 0 {
                let _ = writeln!(
                    report,
                    "  exit status {} (a documented command must exit 0; show a failure's status with `|| echo \"exit status $?\"`)",
                    ran.status
                );
            }
            if !output_ok {
                let _ = writeln!(
                    report,
                    "  standard output differs from the docs (- docs, + actual):"
                );
                report.push_str(&diff(&expected, &ran.stdout));
            }
            if !ran.stderr.trim().is_empty() {
                let _ = writeln!(report, "  standard error:");
                for line in ran.stderr.lines().take(30) {
                    let _ = writeln!(report, "    {line}");
                }
            }
            report.push_str(&session.logs_for_report());
            failures.push(report);
        }
    }
    failures
}

// ----- The tests -----

/// Every `console` block of the docs prints what the docs show.
#[test]
fn documented_commands_print_what_the_docs_show() {
    let path = session_path();
    let require_tools = std::env::var_os("XCCD_DOCS_REQUIRE_TOOLS").is_some();
    let mut tools: HashMap<Tool, bool> = HashMap::new();
    let mut failures = Vec::new();
    let mut session: Option<(String, Session)> = None;
    let mut checked = 0;
    for block in all_blocks().into_iter().filter(|b| b.info == "console") {
        let missing: Vec<&str> = block
            .annotation
            .requires
            .iter()
            .filter(|tool| {
                !*tools
                    .entry(**tool)
                    .or_insert_with(|| has_tool(**tool, &path))
            })
            .map(|tool| tool.name())
            .collect();
        if !missing.is_empty() {
            let note = format!(
                "{}:{}: needs {}, which is not on the PATH {path}",
                block.file,
                block.line,
                missing.join(" and ")
            );
            // A skipped block leaves the session as it was, for the blocks that continue it.
            if require_tools {
                failures.push(format!("{note} (XCCD_DOCS_REQUIRE_TOOLS is set)"));
            } else {
                eprintln!("skipped {note}");
            }
            continue;
        }
        let continues = block.annotation.continued
            && session
                .as_ref()
                .is_some_and(|(file, _)| *file == block.file);
        if block.annotation.continued && !continues {
            failures.push(format!(
                "{}:{}: `continued`, but no block before it in this file ran",
                block.file, block.line
            ));
            session = None;
            continue;
        }
        if !continues {
            session = Some((block.file.clone(), Session::start(&path)));
        }
        let (_, running) = session.as_mut().unwrap();
        let started = Instant::now();
        failures.extend(run_block(running, &block));
        let seconds = started.elapsed().as_secs_f64();
        if seconds > SLOW_BLOCK_SECONDS {
            eprintln!(
                "slow: {}:{} took {seconds:.1} s (keep the docs' commands quick)",
                block.file, block.line
            );
        }
        checked += 1;
    }
    drop(session);
    assert!(checked > 0, "no console block found in the docs");
    eprintln!("{checked} console blocks checked");
    assert!(
        failures.is_empty(),
        "{} documented command(s) do not do what the docs show:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A block that shows a prompt is a checked `console` block, and every annotation parses.
#[test]
fn blocks_that_show_output_are_console_blocks() {
    let mut wrong = Vec::new();
    for block in all_blocks() {
        if block.info == "console" {
            if let Err(e) = steps(&block) {
                wrong.push(e);
            }
            continue;
        }
        if block.annotation != Annotation::default() {
            wrong.push(format!(
                "{}:{}: a doc-test annotation on a `{}` block, which is not run",
                block.file, block.line, block.info
            ));
        }
        // A `markdown` block quotes a page's source (docs/writing-docs.md shows a console block so).
        let quoted = block.info == "markdown" || block.info == "md";
        if let Some((line, _)) = block
            .lines
            .iter()
            .find(|(_, l)| !quoted && l.starts_with("$ "))
        {
            wrong.push(format!(
                "{}:{line}: a `$ ` prompt in a `{}` block: make it a `console` block (its \
                 output is then checked) or drop the prompt",
                block.file, block.info
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The README's first `sh` block is the two set-up commands: the main job, and the tests, which
/// are what `.ci/run` runs.
#[test]
fn the_readme_starts_with_the_two_setup_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let first = blocks("README.md", &readme)
        .unwrap()
        .into_iter()
        .find(|b| b.info == "sh")
        .expect("an sh block in the README");
    let commands: Vec<&str> = first
        .lines
        .iter()
        .map(|(_, l)| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands.len(), 2, "the README's first block: {commands:?}");
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == commands[1]),
        "`.ci/run` does not run the README's test command `{}`",
        commands[1]
    );
    // The main job, with the built binary in place of `cargo run --release --`.
    let args = commands[0]
        .strip_prefix("cargo run --release -- ")
        .expect("the main job runs `cargo run --release -- ...`");
    let out = Command::new(XCCD)
        .args(args.split_whitespace())
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "`{}`: {out:?}", commands[0]);
    assert!(!out.stdout.is_empty(), "`{}` printed nothing", commands[0]);
}

/// GitHub's anchor of a heading: lower case, spaces to hyphens, other punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings (outside fenced blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced && trimmed.starts_with('#') {
            out.push(slug(trimmed.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of a Markdown text's inline links `[text](target)`, outside fenced blocks and
/// code spans, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans, whose brackets are not links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((index + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// Every relative link of the docs names a file of the repository, and a heading of it when it
/// has an anchor: moving a section must not leave a link behind.
#[test]
fn links_between_the_docs_resolve() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(root().join(&file)).unwrap();
        let dir = Path::new(&file).parent().unwrap_or(Path::new(""));
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                root().join(&file)
            } else {
                root().join(dir).join(path)
            };
            if !resolved.exists() {
                broken.push(format!("{file}:{line}: {target}: no such file"));
                continue;
            }
            if let Some(anchor) = anchor {
                let page = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !anchors(&page).iter().any(|a| a == anchor) {
                    broken.push(format!("{file}:{line}: {target}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

// ----- The checker itself -----

#[test]
fn ellipses_match_lines_and_text() {
    let lines = |s: &str| s.lines().map(String::from).collect::<Vec<_>>();
    assert!(line_matches(
        "Altogether 92 solutions, ... s.",
        "Altogether 92 solutions, 0.004 s."
    ));
    assert!(!line_matches(
        "Altogether 92 solutions, ... s.",
        "Altogether 91 solutions, 0.004 s."
    ));
    assert!(line_matches("a...b...c", "aXXbYYc"));
    assert!(!line_matches("a...b...c", "aXXcYYb"));
    assert!(!line_matches("ab...ba", "aba"));
    assert!(line_matches("x  ", "x"));
    assert!(!line_matches(" x", "x"));
    assert!(output_matches(&lines("1\n...\n4"), &lines("1\n2\n3\n4")));
    assert!(output_matches(&lines("1\n...\n4"), &lines("1\n4")));
    assert!(!output_matches(&lines("1\n...\n4"), &lines("1\n2\n3")));
    assert!(!output_matches(&lines("1\n2"), &lines("1\n2\n3")));
    assert!(output_matches(&lines("...\n3\n..."), &lines("1\n2\n3\n4")));
    assert!(output_matches(&[], &[]));
    assert!(!output_matches(&[], &lines("x")));
    let shown = diff(
        &lines("92\nAltogether 1049 nodes"),
        &lines("92\nAltogether 857 nodes"),
    );
    assert_eq!(
        shown,
        "    92\n  - Altogether 1049 nodes\n  + Altogether 857 nodes\n"
    );
}

#[test]
fn slugs_and_links_are_read_as_github_does() {
    assert_eq!(
        slug(" Knuth's estimate, measured"),
        "knuths-estimate-measured"
    );
    assert_eq!(
        slug("Security: TLS, API keys, limits"),
        "security-tls-api-keys-limits"
    );
    assert_eq!(
        anchors("# A\n```\n# not a heading\n```\n## B c"),
        vec!["a", "b-c"]
    );
    let found = links("see [x](docs/a.md#b) and `[y](z)`\n```\n[w](v)\n```\n[u](t)");
    assert_eq!(
        found,
        vec![(1, "docs/a.md#b".to_string()), (5, "t".to_string())]
    );
}

#[test]
fn blocks_steps_and_annotations_parse() {
    let text = "text\n<!-- doc-test: continued, requires grpcurl -->\n\n```console\n$ echo a \\\n  b\na b\n$ true\n```\n\n  ```sh\n  $ x\n  ```\n";
    let found = blocks("t.md", text).unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(
        found[0].annotation,
        Annotation {
            continued: true,
            requires: vec![Tool::Grpcurl]
        }
    );
    assert_eq!(found[0].line, 4);
    let parsed = steps(&found[0]).unwrap();
    assert_eq!(parsed[0].command, "echo a \\\n  b");
    assert_eq!(parsed[0].expected, vec!["a b"]);
    assert_eq!(parsed[1].line, 8);
    assert_eq!(found[1].lines, vec![(12, "$ x".to_string())]);
    assert!(parse_annotation("<!-- doc-test: server -->").is_err());
    assert!(parse_annotation("<!-- doc-test: requires nothing -->").is_err());
    assert!(blocks("t.md", "```console\n$ x\n").is_err());
    let nested = blocks("t.md", "````markdown\n```console\n$ x\n```\n````\n").unwrap();
    assert_eq!(nested.len(), 1);
    assert_eq!(nested[0].info, "markdown");
    assert_eq!(nested[0].lines.len(), 3);
    let block = &blocks("t.md", "```console\noutput first\n```\n").unwrap()[0];
    assert!(steps(block).is_err());
}
