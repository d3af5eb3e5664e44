//! The statuses of the public API (SolverService, PuzzleService and the
//! header and API-key layers in front of them), by Google's AIP-193: every
//! error carries a `google.rpc.ErrorInfo` whose `reason` is one of
//! [`Reason`] (domain [`DOMAIN`]), with the metadata a program needs; a bad
//! field adds a `BadRequest`, NOT_FOUND a `ResourceInfo`, a refusal that is
//! for now only (and every UNAVAILABLE) a `RetryInfo`, a per-key limit a
//! `QuotaFailure`. docs/errors.md lists the reasons for clients.
//!
//! Structural: a status is built only from a [`Reason`] (through
//! [`ApiError`] or the helpers below), and a test checks that the public
//! service makes no bare `Status::code(..)`.
//!
//! Messages keep their form "field: what is wrong", so people read the same
//! thing that programs parse.

use std::collections::HashMap;
use std::time::Duration;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, QuotaViolation, StatusExt};

/// Where the API's error reasons live (`ErrorInfo.domain`).
pub const DOMAIN: &str = "xccd";

/// `ResourceInfo.resource_type` of a job.
pub const JOB_RESOURCE: &str = "xccd.v1.Job";

/// How long a client should wait before trying a call again that the
/// server's shutdown cut short (`RetryInfo.retry_delay`): a restart, or
/// another replica behind the same address, takes about that.
pub const SHUTDOWN_RETRY_DELAY: Duration = Duration::from_secs(1);

/// How long a client is told to wait before it tries again a call that
/// found no worker.
pub const NO_WORKERS_RETRY: Duration = Duration::from_secs(5);

/// How long a client is told to wait after a refusal that is for now only
/// (queues full, memory held by running searches, a job still stopping).
pub const BUSY_RETRY: Duration = Duration::from_secs(1);

macro_rules! reasons {
    ($( $(#[doc = $doc:expr])+ $name:ident = $text:literal, $code:ident, $retry:expr; )+) => {
        /// Every `ErrorInfo.reason` the public API gives: stable names that
        /// clients branch on (documented in docs/errors.md).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Reason {
            $( $(#[doc = $doc])+ $name, )+
        }

        impl Reason {
            /// All reasons, in the order docs/errors.md lists them.
            pub const ALL: &'static [Reason] = &[$(Reason::$name,)+];

            /// The stable UPPER_SNAKE name (`ErrorInfo.reason`).
            pub fn as_str(self) -> &'static str {
                match self { $(Reason::$name => $text,)+ }
            }

            /// The gRPC code a status of this reason has.
            pub fn code(self) -> Code {
                match self { $(Reason::$name => Code::$code,)+ }
            }

            /// The `RetryInfo.retry_delay` it carries: set for every
            /// UNAVAILABLE and every refusal that is for now only.
            pub fn retry_delay(self) -> Option<Duration> {
                match self { $(Reason::$name => $retry,)+ }
            }
        }
    };
}

reasons! {
    /// A field of the request is wrong (the generic field error; `BadRequest` names it).
    InvalidArgument = "INVALID_ARGUMENT", InvalidArgument, None;
    /// The problem (`problem.*`) cannot be read: a parse error, an unknown item, an empty option.
    InvalidProblem = "INVALID_PROBLEM", InvalidArgument, None;
    /// The puzzle (`puzzle.*`) cannot be read or encoded.
    InvalidPuzzle = "INVALID_PUZZLE", InvalidArgument, None;
    /// A job name is not of the form `jobs/N`.
    InvalidJobName = "INVALID_JOB_NAME", InvalidArgument, None;
    /// A page token was not made by this server for this call.
    InvalidPageToken = "INVALID_PAGE_TOKEN", InvalidArgument, None;
    /// The ListJobs `filter` cannot be read (its message names the column).
    InvalidFilter = "INVALID_FILTER", InvalidArgument, None;
    /// A CreateJob's `request_id` belongs to one of the caller's jobs made by a different request.
    RequestIdReused = "REQUEST_ID_REUSED", AlreadyExists, None;
    /// A number asked for is over the server's limit (`field`, `value`, `limit` in metadata).
    LimitExceeded = "LIMIT_EXCEEDED", InvalidArgument, None;
    /// The problem is larger than the server's limits (`field`, `value`, `limit`).
    ProblemTooLarge = "PROBLEM_TOO_LARGE", InvalidArgument, None;
    /// The puzzle is larger than the server's limits.
    PuzzleTooLarge = "PUZZLE_TOO_LARGE", InvalidArgument, None;
    /// The request message is larger than the server takes (`limit` bytes).
    RequestTooLarge = "REQUEST_TOO_LARGE", InvalidArgument, None;
    /// The `grpc-timeout` header is malformed.
    MalformedGrpcTimeout = "MALFORMED_GRPC_TIMEOUT", InvalidArgument, None;
    /// The content type is not protobuf (only `application/grpc[+proto]` is served).
    UnsupportedContentType = "UNSUPPORTED_CONTENT_TYPE", Unimplemented, None;
    /// The server takes calls with an API key and none, or an unknown one, was sent.
    ApiKeyInvalid = "API_KEY_INVALID", Unauthenticated, None;
    /// No job has this name for this caller (it never was, expired, or was deleted).
    JobNotFound = "JOB_NOT_FOUND", NotFound, None;
    /// The job was not stored (submitted to a server without `--data-dir`): its solutions cannot be paged.
    JobNotStored = "JOB_NOT_STORED", FailedPrecondition, None;
    /// The server has no job store (`--data-dir`) for what was asked.
    NoJobStore = "NO_JOB_STORE", FailedPrecondition, None;
    /// The search runs only on the server's own threads (a memoized count, the cheapest solutions, a side condition given as code), and the server has none.
    NeedsLocalThreads = "NEEDS_LOCAL_THREADS", FailedPrecondition, None;
    /// The server's queue of jobs is full; try again later.
    TooManyJobs = "TOO_MANY_JOBS", ResourceExhausted, Some(BUSY_RETRY);
    /// Too many small calls (Solve, SolvePuzzle, CheckPuzzle) are running; try again later.
    TooManyInteractiveJobs = "TOO_MANY_INTERACTIVE_JOBS", ResourceExhausted, Some(BUSY_RETRY);
    /// The API key's limit of running jobs is reached (`QuotaFailure`); try again once one ends.
    TooManyJobsForKey = "TOO_MANY_JOBS_FOR_KEY", ResourceExhausted, Some(BUSY_RETRY);
    /// Running searches hold the memory this one needs now; try again later.
    ServerMemoryBusy = "SERVER_MEMORY_BUSY", ResourceExhausted, Some(BUSY_RETRY);
    /// The search can never fit the server's memory limit (`needed_bytes`, `limit_bytes`).
    SearchMemoryLimit = "SEARCH_MEMORY_LIMIT", ResourceExhausted, None;
    /// The job outgrew what the store keeps of one job.
    JobStoreLimit = "JOB_STORE_LIMIT", ResourceExhausted, None;
    /// The job store holds its limit of bytes: delete jobs first.
    StoreFull = "STORE_FULL", ResourceExhausted, None;
    /// The job store's disk is full: an operator must act.
    StoreDiskFull = "STORE_DISK_FULL", ResourceExhausted, None;
    /// The job store is on a read-only file system: an operator must act.
    StoreReadOnly = "STORE_READ_ONLY", Unavailable, Some(NO_WORKERS_RETRY);
    /// The server may not write the job store: an operator must act.
    StorePermissionDenied = "STORE_PERMISSION_DENIED", Unavailable, Some(NO_WORKERS_RETRY);
    /// The job store failed otherwise (I/O); try again.
    StoreUnavailable = "STORE_UNAVAILABLE", Unavailable, Some(BUSY_RETRY);
    /// A stored job cannot run again (its stored problem no longer reads): it ended as failed.
    JobNotResumable = "JOB_NOT_RESUMABLE", DataLoss, None;
    /// The server is shutting down; try again (a restart or another replica).
    ShuttingDown = "SHUTTING_DOWN", Unavailable, Some(SHUTDOWN_RETRY_DELAY);
    /// This coordinator stands by (another leads the PostgreSQL store): call the leader (`leader` in metadata, when known).
    NotLeader = "NOT_LEADER", Unavailable, Some(SHUTDOWN_RETRY_DELAY);
    /// No worker came to run the search; try again.
    NoWorkers = "NO_WORKERS", Unavailable, Some(NO_WORKERS_RETRY);
    /// The job is still stopping; DeleteJob again.
    JobStopping = "JOB_STOPPING", Unavailable, Some(BUSY_RETRY);
    /// The call's deadline passed: any answer is partial.
    DeadlineExceeded = "DEADLINE_EXCEEDED", DeadlineExceeded, None;
    /// The search was cancelled (CancelJob, or the call was dropped).
    Cancelled = "CANCELLED", Cancelled, None;
    /// A remote worker running the search was lost; the job may be run again.
    WorkLost = "WORK_LOST", Aborted, None;
    /// An audit caught a remote worker lying after what it delivered had reached the client: the answer cannot be corrected.
    AuditUncorrectable = "AUDIT_UNCORRECTABLE", DataLoss, None;
    /// The server failed (a bug; it has been logged).
    Internal = "INTERNAL", Internal, None;
}

impl Reason {
    /// The reason for a bad field `field` (its first path segment).
    fn for_field(field: &str) -> Reason {
        let head = field.split(['.', '[']).next().unwrap_or(field);
        match head {
            "problem" => Reason::InvalidProblem,
            "puzzle" => Reason::InvalidPuzzle,
            "job_id" | "name" | "parent" => Reason::InvalidJobName,
            "page_token" => Reason::InvalidPageToken,
            "request" => Reason::RequestTooLarge,
            _ => Reason::InvalidArgument,
        }
    }
}

/// An error of the public API: a [`Reason`] and a message, with what
/// details it needs; `Status::from` builds the status and its details.
#[derive(Debug, Clone)]
pub struct ApiError {
    reason: Reason,
    message: String,
    metadata: HashMap<String, String>,
    field: Option<(String, String)>,
    resource: Option<(String, String)>,
    quota: Option<(String, String)>,
    retry: Option<Duration>,
}

impl ApiError {
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        ApiError {
            reason,
            message: message.into(),
            metadata: HashMap::new(),
            field: None,
            resource: None,
            quota: None,
            retry: reason.retry_delay(),
        }
    }

    /// Adds `ErrorInfo.metadata[key] = value`.
    pub fn meta(mut self, key: &str, value: impl ToString) -> Self {
        self.metadata.insert(key.to_string(), value.to_string());
        self
    }

    /// Names the bad field in a `BadRequest` (and `metadata.field`).
    pub fn field(mut self, field: &str, description: impl Into<String>) -> Self {
        self.metadata.insert("field".into(), field.to_string());
        self.field = Some((field.to_string(), description.into()));
        self
    }

    /// Names the resource in a `ResourceInfo`.
    pub fn resource(mut self, resource_type: &str, name: &str) -> Self {
        self.resource = Some((resource_type.to_string(), name.to_string()));
        self
    }

    /// Names the quota hit in a `QuotaFailure`.
    pub fn quota(mut self, subject: &str, description: impl Into<String>) -> Self {
        self.quota = Some((subject.to_string(), description.into()));
        self
    }

    /// Overrides the reason's `RetryInfo` delay.
    pub fn retry(mut self, delay: Duration) -> Self {
        self.retry = Some(delay);
        self
    }

    pub fn reason(&self) -> Reason {
        self.reason
    }
}

impl From<ApiError> for Status {
    fn from(e: ApiError) -> Status {
        let mut details = ErrorDetails::new();
        details.set_error_info(e.reason.as_str(), DOMAIN, e.metadata);
        if let Some((field, description)) = e.field {
            details.add_bad_request_violation(field, description);
        }
        if let Some((resource_type, name)) = e.resource {
            details.set_resource_info(resource_type, name, "", "");
        }
        if let Some((subject, description)) = e.quota {
            details.set_quota_failure(vec![QuotaViolation::new(subject, description)]);
        }
        if e.retry.is_some() {
            details.set_retry_info(e.retry);
        }
        Status::with_error_details(e.reason.code(), e.message, details)
    }
}

/// The status of `reason` with `message` and no further details than the
/// reason's own.
pub fn error(reason: Reason, message: impl Into<String>) -> Status {
    ApiError::new(reason, message).into()
}

/// The field a message "field: description" names, if it names one: a path
/// of lower-case names, indices and dots.
fn field_of(message: &str) -> Option<(&str, &str)> {
    let (field, description) = message.split_once(": ")?;
    let plausible = !field.is_empty()
        && field.len() <= 128
        && field.starts_with(|c: char| c.is_ascii_lowercase())
        && field
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.[]".contains(c));
    plausible.then_some((field, description))
}

/// INVALID_ARGUMENT for `message` ("field: what is wrong"), with a
/// `BadRequest` field violation naming the field and the reason the field
/// implies (`problem.*` is INVALID_PROBLEM, `puzzle.*` INVALID_PUZZLE, ...).
pub fn invalid(message: impl Into<String>) -> Status {
    let message = message.into();
    let reason = field_of(&message).map_or(Reason::InvalidArgument, |(f, _)| Reason::for_field(f));
    invalid_because(reason, message)
}

/// INVALID_ARGUMENT of `reason` for `message` ("field: what is wrong"),
/// with the `BadRequest` field violation.
pub fn invalid_because(reason: Reason, message: impl Into<String>) -> Status {
    invalid_error(reason, message).into()
}

/// The [`ApiError`] of [`invalid_because`], for adding metadata.
pub fn invalid_error(reason: Reason, message: impl Into<String>) -> ApiError {
    let message = message.into();
    let field = field_of(&message).map(|(f, d)| (f.to_string(), d.to_string()));
    let error = ApiError::new(reason, message);
    match field {
        Some((field, description)) => error.field(&field, description),
        None => error,
    }
}

/// A count a request asks for: `default` for 0, INVALID_ARGUMENT naming
/// `field` past `max` (LIMIT_EXCEEDED, with `value` and `limit`).
pub fn count(field: &str, value: u32, default: usize, max: usize) -> Result<usize, Status> {
    match value as usize {
        0 => Ok(default),
        n if n > max => Err(invalid_error(
            Reason::LimitExceeded,
            format!("{field}: {n} exceeds the limit of {max}"),
        )
        .meta("value", n)
        .meta("limit", max)
        .into()),
        n => Ok(n),
    }
}

/// NOT_FOUND for job `name` (`jobs/5`), with a `ResourceInfo`.
pub fn job_not_found(name: &str, message: impl Into<String>) -> Status {
    ApiError::new(Reason::JobNotFound, message)
        .meta("name", name)
        .resource(JOB_RESOURCE, name)
        .into()
}

/// A status of `reason` (RESOURCE_EXHAUSTED and the like) for `message`.
pub fn exhausted(reason: Reason, message: impl Into<String>) -> Status {
    error(reason, message)
}

/// A status of `reason` for `message`, with `metadata` (the numbers a
/// program needs, such as bytes and limits) and a `RetryInfo` of `retry`
/// (or the reason's own).
pub fn exhausted_with(
    reason: Reason,
    message: impl Into<String>,
    metadata: &[(&str, String)],
    retry: Option<Duration>,
) -> Status {
    let mut error = ApiError::new(reason, message);
    for (key, value) in metadata {
        error = error.meta(key, value);
    }
    if let Some(delay) = retry {
        error = error.retry(delay);
    }
    error.into()
}

/// UNAVAILABLE for a call the server's shutdown refused or cut short, with
/// a `RetryInfo` (try again in [`SHUTDOWN_RETRY_DELAY`]).
pub fn shutting_down(message: impl Into<String>) -> Status {
    error(Reason::ShuttingDown, message)
}

/// UNAVAILABLE for a call that found no worker to run it, with a
/// `RetryInfo`.
pub fn no_workers(message: impl Into<String>) -> Status {
    error(Reason::NoWorkers, message)
}

/// DEADLINE_EXCEEDED for `message`.
pub fn deadline(message: impl Into<String>) -> Status {
    error(Reason::DeadlineExceeded, message)
}

/// INTERNAL for `message` (a bug, logged where it happened).
pub fn internal(message: impl Into<String>) -> Status {
    error(Reason::Internal, message)
}

/// The status of a call the job store failed: one that cannot be written
/// says why (`STORE_DISK_FULL` is RESOURCE_EXHAUSTED, `STORE_READ_ONLY` and
/// `STORE_PERMISSION_DENIED` are UNAVAILABLE: an operator must act); any
/// other failure is UNAVAILABLE (`STORE_UNAVAILABLE`).
pub fn store(error: &crate::service::store::StoreError) -> Status {
    if let crate::service::store::StoreError::Fenced { .. } = error {
        return not_leader(None);
    }
    self::error(store_reason(error.cause()), error.to_string())
}

/// UNAVAILABLE from a coordinator that does not lead: `leader` is the
/// leader's advertised address (`ErrorInfo` metadata `leader`), if known.
pub fn not_leader(leader: Option<&str>) -> Status {
    let message = match leader {
        Some(at) => format!("this coordinator stands by; the leader is at {at}"),
        None => "this coordinator stands by; no leader is known yet, try again".to_string(),
    };
    let error = ApiError::new(Reason::NotLeader, message);
    match leader {
        Some(at) => error.meta("leader", at),
        None => error,
    }
    .into()
}

/// The reason of a job store failure of `cause` (none: an I/O error or
/// the like), for [`store`] and for a job the store failed.
pub fn store_reason(cause: Option<crate::service::store::Cause>) -> Reason {
    use crate::service::store::Cause;
    match cause {
        Some(Cause::Full) => Reason::StoreDiskFull,
        Some(Cause::ReadOnly) => Reason::StoreReadOnly,
        Some(Cause::PermissionDenied) => Reason::StorePermissionDenied,
        None => Reason::StoreUnavailable,
    }
}

/// `status` as a `google.rpc.Status` message, for a field that carries an
/// error (`Summary.error`): its code, message and the very details its
/// call's status carries, so that a summary and a status say the same
/// thing, built from the same [`Reason`].
pub fn message_of(status: &Status) -> tonic_types::Status {
    use prost::Message;
    // Every status made here holds its encoded google.rpc.Status in its
    // details (StatusExt::with_error_details); one made elsewhere (by tonic
    // itself) has none, and then keeps its code and message only.
    tonic_types::Status::decode(status.details())
        .ok()
        .filter(|message| message.code == status.code() as i32)
        .unwrap_or_else(|| tonic_types::Status {
            code: status.code() as i32,
            message: status.message().to_string(),
            details: Vec::new(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(status: &Status) -> tonic_types::ErrorInfo {
        status
            .get_error_details()
            .error_info()
            .expect("an ErrorInfo")
            .clone()
    }

    #[test]
    fn a_named_field_becomes_a_field_violation_and_a_reason() {
        let status = invalid("problem.dlx: line 3: unknown item \"C\"");
        let details = status.get_error_details();
        let bad = details.bad_request().expect("a BadRequest");
        assert_eq!(bad.field_violations[0].field, "problem.dlx");
        assert_eq!(
            bad.field_violations[0].description,
            "line 3: unknown item \"C\""
        );
        assert_eq!(status.code(), Code::InvalidArgument);
        let info = info(&status);
        assert_eq!(info.reason, "INVALID_PROBLEM");
        assert_eq!(info.domain, "xccd");
        assert_eq!(info.metadata["field"], "problem.dlx");
        let plain = invalid("Nothing names a field here");
        assert!(plain.get_error_details().bad_request().is_none());
        assert_eq!(self::info(&plain).reason, "INVALID_ARGUMENT");
        for (message, reason) in [
            ("puzzle.cells.rows: empty grid", "INVALID_PUZZLE"),
            ("job_id: \"x\" is not a job id", "INVALID_JOB_NAME"),
            ("page_token: not from this call", "INVALID_PAGE_TOKEN"),
            ("request: larger than 5 bytes", "REQUEST_TOO_LARGE"),
            ("engine: unknown value 9", "INVALID_ARGUMENT"),
        ] {
            assert_eq!(self::info(&invalid(message)).reason, reason, "{message}");
        }
    }

    #[test]
    fn a_count_over_its_limit_says_the_value_and_the_limit() {
        assert_eq!(count("page_size", 0, 10, 100).unwrap(), 10);
        assert_eq!(count("page_size", 7, 10, 100).unwrap(), 7);
        let status = count("page_size", 101, 10, 100).unwrap_err();
        let info = info(&status);
        assert_eq!(info.reason, "LIMIT_EXCEEDED");
        assert_eq!(info.metadata["field"], "page_size");
        assert_eq!(info.metadata["value"], "101");
        assert_eq!(info.metadata["limit"], "100");
    }

    #[test]
    fn a_missing_job_names_its_resource() {
        let status = job_not_found("jobs/999", "job_id: no job jobs/999");
        assert_eq!(status.code(), Code::NotFound);
        let details = status.get_error_details();
        let resource = details.resource_info().expect("a ResourceInfo");
        assert_eq!(resource.resource_type, JOB_RESOURCE);
        assert_eq!(resource.resource_name, "jobs/999");
        assert_eq!(details.error_info().unwrap().reason, "JOB_NOT_FOUND");
    }

    #[test]
    fn a_key_over_its_limit_gets_a_quota_failure() {
        let status: Status = ApiError::new(Reason::TooManyJobsForKey, "too many")
            .quota("api_key:alice", "2 jobs at a time")
            .into();
        let details = status.get_error_details();
        let quota = details.quota_failure().expect("a QuotaFailure");
        assert_eq!(quota.violations[0].subject, "api_key:alice");
        assert!(details.retry_info().is_some());
    }

    #[test]
    fn every_reason_keeps_its_promises() {
        let mut seen = std::collections::HashSet::new();
        for &reason in Reason::ALL {
            let name = reason.as_str();
            assert!(seen.insert(name), "{name} twice");
            assert!(name.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
            assert_ne!(reason.code(), Code::Ok, "{name}");
            let status = error(reason, "x");
            assert_eq!(status.code(), reason.code());
            let details = status.get_error_details();
            assert_eq!(details.error_info().unwrap().reason, name);
            assert_eq!(details.error_info().unwrap().domain, DOMAIN);
            if reason.code() == Code::Unavailable {
                assert!(details.retry_info().is_some(), "{name} without RetryInfo");
            }
        }
        use crate::service::store::Cause;
        for cause in [Cause::Full, Cause::ReadOnly, Cause::PermissionDenied] {
            assert!(seen.contains(cause.reason()), "{}", cause.reason());
        }
    }

    #[test]
    fn a_status_as_a_message_keeps_its_code_message_and_details() {
        use tonic_types::RpcStatusExt;
        let status: Status = ApiError::new(Reason::JobStoreLimit, "too big")
            .meta("limit", 7)
            .into();
        let message = message_of(&status);
        assert_eq!(message.code, Code::ResourceExhausted as i32);
        assert_eq!(message.message, "too big");
        let details = message.get_error_details();
        let info = details.error_info().expect("an ErrorInfo");
        assert_eq!(info.reason, "JOB_STORE_LIMIT");
        assert_eq!(info.domain, DOMAIN);
        assert_eq!(info.metadata["limit"], "7");
        let retried = message_of(&shutting_down("bye")).get_error_details();
        assert_eq!(
            retried.retry_info().unwrap().retry_delay,
            Some(SHUTDOWN_RETRY_DELAY)
        );
        // A status without details (tonic's own) keeps its code and message.
        let bare = message_of(&Status::from_error("plain".into()));
        assert_eq!(bare.code, Code::Unknown as i32);
        assert_eq!(bare.message, "plain");
        assert!(bare.details.is_empty());
    }

    #[test]
    fn shutdown_says_when_to_retry() {
        let status = shutting_down("the server is shutting down");
        assert_eq!(status.code(), Code::Unavailable);
        let details = status.get_error_details();
        assert_eq!(details.error_info().unwrap().reason, "SHUTTING_DOWN");
        assert_eq!(
            details.retry_info().unwrap().retry_delay,
            Some(SHUTDOWN_RETRY_DELAY)
        );
    }

    #[test]
    fn docs_list_every_reason_with_its_code() {
        let docs = include_str!("../../docs/errors.md");
        for &reason in Reason::ALL {
            let code = format!("{:?}", reason.code());
            let row = docs
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", reason.as_str())))
                .unwrap_or_else(|| panic!("docs/errors.md has no row for {}", reason.as_str()));
            let upper: String = code
                .chars()
                .flat_map(|c| {
                    let sep = c.is_ascii_uppercase().then_some('_');
                    sep.into_iter()
                        .chain(std::iter::once(c.to_ascii_uppercase()))
                })
                .collect();
            assert!(
                row.contains(upper.trim_start_matches('_')),
                "{row} does not say {code}"
            );
        }
    }

    /// No file of the public service makes a status but through a
    /// [`Reason`]: a new error cannot forget its reason.
    #[test]
    fn the_public_service_makes_no_bare_status() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/service");
        let constructors = [
            "ok",
            "cancelled",
            "unknown",
            "invalid_argument",
            "deadline_exceeded",
            "not_found",
            "already_exists",
            "permission_denied",
            "resource_exhausted",
            "failed_precondition",
            "aborted",
            "out_of_range",
            "unimplemented",
            "internal",
            "unavailable",
            "data_loss",
            "unauthenticated",
            "new",
            "with_error_details",
            "with_details",
        ];
        let mut offenders = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.ends_with(".rs") || name == "status.rs" {
                continue; // cluster/ is the workers' protocol, not the public API
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                for c in constructors {
                    if line.contains(&format!("Status::{c}(")) {
                        offenders.push(format!("{name}:{}: {}", n + 1, line.trim()));
                    }
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "bare statuses:\n{}",
            offenders.join("\n")
        );
    }
}
