//! The web dashboard (`xccd serve --http-listen ADDR`): a page of jobs,
//! workers and puzzles, and the small JSON API under `/api/` it reads.
//!
//! **Why a JSON layer and not gRPC-Web (`tonic-web`).** A browser speaking
//! gRPC-Web needs generated protobuf code and a gRPC-Web client library,
//! that is a JavaScript build step and vendored packages, where the page
//! here is three hand-written files compiled into the binary
//! (`include_str!`), nothing to build or fetch. The JSON layer is also
//! small: each route builds the RPC's request, puts the browser's
//! `authorization` header in its metadata, runs the same interceptor as the
//! gRPC port ([`authenticate`]) and calls the same `SolverService` and
//! `PuzzleService` implementations in process. Authorization, validation,
//! limits and errors are the RPCs' own; only the encoding differs.
//! Progress is polled (a GET a second per open page) rather than streamed
//! with Server-Sent Events: the pages show snapshots, and a poll needs no
//! long-lived connection to clean up. The puzzle page's enumeration is a
//! job like any other (`POST /api/jobs`, CreateJob): it is listed, can be
//! cancelled from its page, belongs to the caller's key, and outlives the
//! tab; the page polls it for the solutions it keeps, each with its
//! picture, and draws them as they arrive.
//!
//! Nothing a user or a job supplies is markup: the page writes text with
//! `textContent` only, and a puzzle's picture (our own renderer's SVG,
//! which escapes its text) is shown as an `<img>` of a `data:` URL, where
//! no script runs. Responses carry a Content-Security-Policy that allows
//! only the page's own script and style.
//!
//! With a certificate (`--tls-cert`) the dashboard serves HTTPS only, with
//! the gRPC port's certificate, key and client CAs (rustls, as tonic).
//! While a coordinator does not lead (several on one PostgreSQL store),
//! every API call is refused NOT_LEADER, as on its gRPC port.

use std::net::SocketAddr;
use std::sync::Arc;

use http::{header, Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

use super::callers::{authenticate, ApiKeys};
use super::credentials::ServerTls;
use super::grpc::SolverApi;
use super::proto as pb;
use super::proto::puzzle_service_server::PuzzleService;
use super::proto::solver_service_server::SolverService;
use super::puzzles_grpc::PuzzleApi;
use super::store::fence::Fence;

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");
/// The largest request body read (a puzzle's text).
const MAX_BODY: usize = 1 << 20;
/// The most jobs the list answers (the newest), saying when there are more.
const MAX_LISTED: usize = 5000;

/// What the routes call.
pub struct Dashboard {
    pub solver: Arc<SolverApi>,
    pub puzzles: Arc<PuzzleApi>,
    pub api_keys: Option<Arc<ApiKeys>>,
    /// HTTPS with the gRPC port's certificate, if it has one.
    pub tls: Option<ServerTls>,
    /// The lease a coordinator leads under (several on one store): the API
    /// answers NOT_LEADER once it is lost.
    pub fence: Option<Arc<Fence>>,
}

/// Listens on `addr` and serves the dashboard until the handle aborts it
/// (the server's shutdown: a coordinator's next term as leader listens
/// again).
pub async fn listen(
    addr: SocketAddr,
    dashboard: Dashboard,
) -> std::io::Result<(SocketAddr, tokio::task::AbortHandle)> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("dashboard on {addr}: {e}")))?;
    let bound = listener.local_addr()?;
    let tls = match &dashboard.tls {
        Some(tls) => Some(tokio_rustls::TlsAcceptor::from(Arc::new(
            tls.http1_config().map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("dashboard TLS: {e}"),
                )
            })?,
        ))),
        None => None,
    };
    let https = tls.is_some();
    let dashboard = Arc::new(dashboard);
    let answer = move |request| {
        let dashboard = dashboard.clone();
        async move { dashboard.answer(request).await }
    };
    let task = tokio::spawn(super::http_listener::serve(
        listener,
        "dashboard",
        Arc::new(answer),
        tls,
    ));
    tracing::info!(http_addr = %bound, https, "dashboard at /");
    Ok((bound, task.abort_handle()))
}

type Reply = http::Response<String>;

fn reply(status: StatusCode, content_type: &str, body: String) -> Reply {
    http::Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-store")
        .header("x-content-type-options", "nosniff")
        .header(
            "content-security-policy",
            "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'",
        )
        .body(body)
        .expect("a valid response")
}

fn json_reply(status: StatusCode, value: Value) -> Reply {
    reply(status, "application/json", value.to_string())
}

/// An RPC's error as JSON, with the HTTP status closest to its code.
fn error_reply(status: Status) -> Reply {
    use tonic::Code;
    let http_status = match status.code() {
        Code::InvalidArgument | Code::OutOfRange | Code::FailedPrecondition => {
            StatusCode::BAD_REQUEST
        }
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    json_reply(
        http_status,
        json!({"code": format!("{:?}", status.code()), "message": status.message()}),
    )
}

/// The query parameter `name`, percent-decoded.
fn query(uri: &http::Uri, name: &str) -> String {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| decode(value))
        .unwrap_or_default()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'+' => out.push(b' '),
            b'%' if at + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[at + 1..at + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(byte) => {
                        out.push(byte);
                        at += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn enum_name(name: Option<&str>, prefix: &str) -> String {
    name.map(|n| n.strip_prefix(prefix).unwrap_or(n).to_string())
        .unwrap_or_default()
}

fn job_json(job: &pb::Job) -> Value {
    let state = enum_name(
        pb::JobState::try_from(job.state)
            .ok()
            .map(|s| s.as_str_name()),
        "JOB_STATE_",
    );
    let kind = match pb::PuzzleKind::try_from(job.puzzle_kind) {
        Ok(pb::PuzzleKind::Unspecified) | Err(_) => "problem".to_string(),
        Ok(kind) => enum_name(Some(kind.as_str_name()), "PUZZLE_KIND_").to_lowercase(),
    };
    let progress = job.progress.clone().unwrap_or_default();
    let summary = job.summary.as_ref().map(|s| {
        json!({
            "solutions": s.solutions,
            "reason": enum_name(pb::EndReason::try_from(s.reason).ok().map(|r| r.as_str_name()), "END_REASON_"),
            "exhausted": s.exhausted,
            "error": s.error.as_ref().map(|e| e.message.clone()).unwrap_or_default(),
            "nodes": s.statistics.as_ref().map_or(0, |st| st.nodes),
        })
    });
    let nodes_per_second = if progress.elapsed_seconds > 0.0 {
        progress.nodes as f64 / progress.elapsed_seconds
    } else {
        0.0
    };
    json!({
        "name": job.name,
        "id": job.name.strip_prefix("jobs/").unwrap_or(&job.name),
        "state": state,
        "kind": kind,
        "durable": job.durable,
        "stored_solutions": job.stored_solutions,
        "create_time": job.create_time.as_ref().map(|t| t.seconds),
        "end_time": job.end_time.as_ref().map(|t| t.seconds),
        "progress": {
            "solutions": progress.solutions,
            "nodes": progress.nodes,
            "fraction_done": progress.fraction_done,
            "elapsed_seconds": progress.elapsed_seconds,
            "eta_seconds": progress.eta_seconds,
            "nodes_per_second": nodes_per_second,
            "tasks_queued": progress.tasks_queued,
            "tasks_running": progress.tasks_running,
            "tasks_done": progress.tasks_done,
            "workers_busy": progress.workers_busy,
            "workers_total": progress.workers_total,
        },
        "summary": summary,
    })
}

fn solution_json(solution: &pb::Solution) -> Value {
    json!({
        "options": solution.option_texts,
        "indices": solution.option_indices,
        "grid": solution.grid.as_ref().map(|g| g.text.clone()),
    })
}

fn puzzle_kind(name: &str) -> i32 {
    pb::PuzzleKind::from_str_name(&format!("PUZZLE_KIND_{}", name.to_uppercase()))
        .map_or(0, |k| k as i32)
}

impl Dashboard {
    /// A request to an RPC with the browser's `authorization` header, after
    /// the gRPC port's interceptor: the same caller, or its refusal.
    fn rpc<T>(
        &self,
        authorization: Option<&http::HeaderValue>,
        message: T,
    ) -> Result<Request<T>, Status> {
        if let Some(fence) = self.fence.as_ref().filter(|fence| !fence.leads()) {
            return Err(super::status::not_leader(fence.leader().as_deref()));
        }
        let mut request = Request::new(());
        if let Some(value) = authorization.and_then(|v| MetadataValue::try_from(v.as_bytes()).ok())
        {
            request.metadata_mut().insert("authorization", value);
        }
        let request = authenticate(self.api_keys.clone())(request)?;
        let (metadata, extensions, ()) = request.into_parts();
        Ok(Request::from_parts(metadata, extensions, message))
    }

    async fn answer(&self, request: http::Request<hyper::body::Incoming>) -> Reply {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path().to_string();
        let page = match (&parts.method, path.as_str()) {
            (&Method::GET, "/" | "/jobs" | "/workers" | "/puzzle" | "/job") => Some(reply(
                StatusCode::OK,
                "text/html; charset=utf-8",
                INDEX.to_string(),
            )),
            (&Method::GET, "/app.js") => Some(reply(
                StatusCode::OK,
                "text/javascript; charset=utf-8",
                SCRIPT.to_string(),
            )),
            (&Method::GET, "/app.css") => Some(reply(
                StatusCode::OK,
                "text/css; charset=utf-8",
                STYLE.to_string(),
            )),
            _ => None,
        };
        if let Some(page) = page {
            return page;
        }
        if !path.starts_with("/api/") {
            return reply(
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                "not found\n".into(),
            );
        }
        let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return error_reply(Status::invalid_argument(format!(
                    "the request body is over {MAX_BODY} bytes or broken"
                )))
            }
        };
        let body: Value = if body.is_empty() {
            Value::Null
        } else {
            match serde_json::from_slice(&body) {
                Ok(value) => value,
                Err(e) => return error_reply(Status::invalid_argument(format!("body: {e}"))),
            }
        };
        let auth = parts.headers.get(header::AUTHORIZATION);
        match self
            .route(&parts.method, &path, &parts.uri, auth, &body)
            .await
        {
            Ok(value) => json_reply(StatusCode::OK, value),
            Err(status) => error_reply(status),
        }
    }

    async fn route(
        &self,
        method: &Method,
        path: &str,
        uri: &http::Uri,
        auth: Option<&http::HeaderValue>,
        body: &Value,
    ) -> Result<Value, Status> {
        let text = |key: &str| {
            body.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        // The puzzle of the body: its kind's name and its text.
        let puzzle = || pb::Puzzle {
            kind: puzzle_kind(&text("kind")),
            grid: Some(pb::puzzle::Grid::Text(text("text"))),
            ..Default::default()
        };
        let segments: Vec<&str> = path.trim_start_matches("/api/").split('/').collect();
        match (method, segments.as_slice()) {
            (&Method::GET, ["jobs"]) => {
                let state = query(uri, "state");
                let filter = if state.is_empty() {
                    String::new()
                } else {
                    format!("state = {state}")
                };
                let mut jobs = std::collections::VecDeque::new();
                let mut page_token = String::new();
                let mut more = false;
                loop {
                    let request = pb::ListJobsRequest {
                        page_size: 1000,
                        page_token,
                        filter: filter.clone(),
                    };
                    let page = self
                        .solver
                        .list_jobs(self.rpc(auth, request)?)
                        .await?
                        .into_inner();
                    jobs.extend(page.jobs.iter().map(job_json));
                    // The list runs oldest first: the newest are kept.
                    while jobs.len() > MAX_LISTED {
                        jobs.pop_front();
                        more = true;
                    }
                    if page.next_page_token.is_empty() {
                        break;
                    }
                    page_token = page.next_page_token;
                }
                Ok(json!({"jobs": jobs, "more": more}))
            }
            (&Method::GET, ["jobs", id]) => {
                let offset: usize = query(uri, "offset").parse().unwrap_or(0);
                let size: usize = query(uri, "size").parse().unwrap_or(20).clamp(1, 1000);
                let request = pb::GetJobRequest {
                    name: format!("jobs/{id}"),
                    max_solutions: u32::try_from(offset.saturating_add(size)).unwrap_or(u32::MAX),
                };
                let got = self
                    .solver
                    .get_job(self.rpc(auth, request)?)
                    .await?
                    .into_inner();
                let job = got.job.unwrap_or_default();
                let mut solutions = Vec::new();
                for solution in got.solutions.iter().skip(offset) {
                    let mut value = solution_json(solution);
                    // A puzzle's solution comes with its picture.
                    if let (Some(grid), true) = (&solution.grid, job.puzzle_kind != 0) {
                        let draw = pb::DrawPuzzleRequest {
                            kind: job.puzzle_kind,
                            solution: Some(grid.clone()),
                        };
                        let drawn = self.puzzles.draw_puzzle(self.rpc(auth, draw)?).await;
                        value["svg"] = drawn.map_or(Value::Null, |d| d.into_inner().svg.into());
                    }
                    solutions.push(value);
                }
                Ok(json!({"job": job_json(&job), "offset": offset, "solutions": solutions}))
            }
            (&Method::POST, ["jobs"]) => {
                // An enumeration of a puzzle: the first `limit` solutions
                // (0: all), the first 1,000 kept for the page.
                let limit = body.get("limit").and_then(Value::as_u64).unwrap_or(0);
                let request = pb::CreateJobRequest {
                    source: Some(pb::create_job_request::Source::Puzzle(puzzle())),
                    limit,
                    keep_solutions: 1000,
                    ..Default::default()
                };
                let created = self.solver.create_job(self.rpc(auth, request)?).await?;
                Ok(json!({"job": created.get_ref().job.as_ref().map(job_json)}))
            }
            (&Method::POST, ["jobs", id, "cancel"]) => {
                let request = pb::CancelJobRequest {
                    name: format!("jobs/{id}"),
                };
                let job = self
                    .solver
                    .cancel_job(self.rpc(auth, request)?)
                    .await?
                    .into_inner();
                Ok(json!({"job": job.job.as_ref().map(job_json)}))
            }
            (&Method::DELETE, ["jobs", id]) => {
                let request = pb::DeleteJobRequest {
                    name: format!("jobs/{id}"),
                };
                self.solver.delete_job(self.rpc(auth, request)?).await?;
                Ok(json!({}))
            }
            (&Method::GET, ["workers"]) => {
                let answer = self
                    .solver
                    .list_workers(self.rpc(auth, pb::ListWorkersRequest {})?)
                    .await?
                    .into_inner();
                let workers: Vec<Value> = answer
                    .workers
                    .iter()
                    .map(|w| {
                        json!({
                            "id": w.id, "name": w.name, "address": w.address,
                            "slots": w.slots, "leases": w.leases, "nodes": w.nodes,
                            "nodes_per_second": w.nodes_per_second,
                            "connect_time": w.connect_time.as_ref().map(|t| t.seconds),
                            "last_heartbeat_time": w.last_heartbeat_time.as_ref()
                                .map(|t| t.seconds as f64 + f64::from(t.nanos) / 1e9),
                            "rejected_reports": w.rejected_reports,
                        })
                    })
                    .collect();
                Ok(json!({"workers": workers}))
            }
            (&Method::POST, ["puzzles", "solve"]) => {
                let kind = puzzle_kind(&text("kind"));
                let request = pb::SolvePuzzleRequest {
                    puzzle: Some(puzzle()),
                    limit: 1,
                    ..Default::default()
                };
                let solved = self
                    .puzzles
                    .solve_puzzle(self.rpc(auth, request)?)
                    .await?
                    .into_inner();
                let Some(solution) = solved.solutions.into_iter().next() else {
                    return Ok(json!({"solution": null, "svg": null}));
                };
                let draw = pb::DrawPuzzleRequest {
                    kind,
                    solution: Some(solution.clone()),
                };
                let svg = self
                    .puzzles
                    .draw_puzzle(self.rpc(auth, draw)?)
                    .await?
                    .into_inner()
                    .svg;
                Ok(json!({"solution": solution.text, "svg": svg}))
            }
            _ => Err(Status::not_found(format!("no route {method} {path}"))),
        }
    }
}
