//! Durable jobs: what a submitted job must leave on disk to survive its
//! coordinator, behind a small trait: an embedded SQLite file by default
//! ([`sqlite`]), or a PostgreSQL database ([`postgres`]).
//!
//! A stored job is its request and problem, its solutions in the order they
//! were found, and its latest *snapshot*: a consistent cut of the job (the
//! solutions delivered, the statistics, and the remaining work as tasks with
//! their skip counts) taken while none of its runs is going (see
//! [`crate::service::pool::Pool::request_snapshot`]). Solutions are written
//! as they come, ahead of the snapshot that commits them; only the first
//! `committed` of a job are ever read, and a restart drops the rest, which
//! the snapshot's tasks find again. So a job killed at any moment resumes
//! with exactly what it had committed: nothing lost, nothing twice.

pub mod codec;
pub mod fence;
pub mod local_postgres;
pub mod postgres;
pub mod sqlite;

use serde::{Deserialize, Serialize};

use super::job_id::{JobId, RequestKey};
use crate::run::{QueuedTask, SolutionIndices, Solutions};
use crate::xcc::{Engine, Stats, Task};

pub use self::postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// Why a store cannot be written: each has its own remedy, its own
/// `ErrorInfo` reason, and its own value of `xccd_store_degraded{cause}`.
/// Defined in the run layer, whose job failure carries it
/// ([`crate::run::Failure::Store`]); what each means is said here.
pub use crate::run::StoreCause as Cause;

impl Cause {
    pub const ALL: [Cause; 3] = [Cause::Full, Cause::ReadOnly, Cause::PermissionDenied];

    /// The `ErrorInfo` reason of a refusal for this cause.
    pub fn reason(self) -> &'static str {
        match self {
            Cause::Full => "STORE_DISK_FULL",
            Cause::ReadOnly => "STORE_READ_ONLY",
            Cause::PermissionDenied => "STORE_PERMISSION_DENIED",
        }
    }

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Cause::Full => "full",
            Cause::ReadOnly => "read_only",
            Cause::PermissionDenied => "permission_denied",
        }
    }

    /// What it is and what to do about it.
    pub fn advice(self) -> &'static str {
        match self {
            Cause::Full => {
                "the disk of the data directory is full; delete jobs (DeleteJob) or free room \
                 on the volume"
            }
            Cause::ReadOnly => {
                "the data directory is on a read-only file system (or the store file is \
                 read-only); remount it read-write (or give --data-dir a writable directory) \
                 and restart"
            }
            Cause::PermissionDenied => {
                "this process may not write the data directory or its store file; give its \
                 user write permission (or another --data-dir) and restart"
            }
        }
    }

    /// The cause of an I/O error, if it is one of these.
    pub fn of_io(error: &std::io::Error) -> Option<Cause> {
        use std::io::ErrorKind;
        match error.kind() {
            ErrorKind::StorageFull | ErrorKind::QuotaExceeded => Some(Cause::Full),
            ErrorKind::ReadOnlyFilesystem => Some(Cause::ReadOnly),
            ErrorKind::PermissionDenied => Some(Cause::PermissionDenied),
            _ => None,
        }
    }
}

/// Errors of a job store, each saying what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the job store {path}: {message}")]
    Open { path: String, message: String },
    #[error(
        "the job store is damaged ({0}); restore it from a backup, or move it away to start empty"
    )]
    Corrupt(String),
    /// The store cannot be written, for `cause`.
    #[error("the job store cannot be written: {}", .cause.advice())]
    Unwritable { cause: Cause, detail: String },
    #[error("the job store: {0}")]
    Io(String),
    /// A write of a coordinator that no longer leads (on PostgreSQL, with
    /// several coordinators): the database refused it, as another took over
    /// (the lease's token is `now`, this writer's `token`).
    #[error(
        "the job store refused a write: this coordinator no longer leads (its fencing token \
         {token}, the lease's {}); it steps down", .now.map_or("none".to_string(), |t| t.to_string())
    )]
    Fenced { token: i64, now: Option<i64> },
}

impl StoreError {
    /// Why the store cannot be written, if that is the error.
    pub fn cause(&self) -> Option<Cause> {
        match self {
            StoreError::Unwritable { cause, .. } => Some(*cause),
            _ => None,
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> StoreError {
        let cause = match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
                return StoreError::Corrupt(error.to_string())
            }
            Some(rusqlite::ErrorCode::DiskFull) => Some(Cause::Full),
            Some(rusqlite::ErrorCode::ReadOnly) => Some(Cause::ReadOnly),
            Some(rusqlite::ErrorCode::PermissionDenied) => Some(Cause::PermissionDenied),
            _ => None,
        };
        match cause {
            Some(cause) => StoreError::Unwritable {
                cause,
                detail: error.to_string(),
            },
            None => StoreError::Io(error.to_string()),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A count as SQL's 64-bit integer: past `i64::MAX` (a memoized count's
/// solutions), `i64::MAX`, never a negative number.
fn as_sql(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// A record's JSON text, as both stores keep requests and snapshots.
fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("store records serialize")
}

/// A record read back from its JSON text (`what` names it if it is damaged).
fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// What a stored job was asked to do: enough to run it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRequest {
    pub limit: Option<u64>,
    pub max_nodes: Option<u64>,
    /// Solutions are counted, not stored.
    pub count_only: bool,
    /// The API key's name that made the job, if keys are on.
    pub owner: Option<String>,
    /// Seconds since the Unix epoch.
    pub created_unix_seconds: f64,
    /// The engine the job's tasks belong to (links for jobs stored before
    /// there was a choice).
    #[serde(default = "links")]
    pub engine: Engine,
    /// CreateJob's request_id and request digest (see `job::RequestKey`),
    /// so that a retried create finds the job after a restart too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<String>,
    /// A memoized count (CreateJob's `memo`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub memo: bool,
    /// The K cheapest solutions (CreateJob's `cheapest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cheapest: Option<u32>,
    /// Whether the problem's options have costs (its solutions' messages
    /// carry Solution.cost, so reading them needs the problem).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub costs: bool,
    /// Preprocessed by DLX-PRE (CreateJob's `preprocess`) under this bound
    /// of mems: a resumed job reduces its problem again under the same
    /// bound, to the same reduced problem its snapshot's tasks belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preprocess_mems: Option<u64>,
}

impl StoredRequest {
    /// The CreateJob request key the job was made with, if any.
    pub fn request_key(&self) -> Option<RequestKey> {
        Some(RequestKey {
            id: self.request_id.clone()?,
            digest: self.request_digest.clone()?,
        })
    }
}

fn links() -> Engine {
    Engine::Links
}

/// A task of a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredWork {
    pub task: Task,
    pub skip: u64,
    pub attempts: u32,
}

impl From<&QueuedTask> for StoredWork {
    fn from(work: &QueuedTask) -> StoredWork {
        StoredWork {
            task: work.task.clone(),
            skip: work.skip,
            attempts: work.attempts,
        }
    }
}

impl From<StoredWork> for QueuedTask {
    fn from(stored: StoredWork) -> QueuedTask {
        QueuedTask {
            skip: stored.skip,
            attempts: stored.attempts,
            ..QueuedTask::new(stored.task)
        }
    }
}

/// A consistent cut of a running job (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Solutions delivered: the first this many stored ones are the job's.
    pub solutions: u64,
    pub stats: Stats,
    /// The work left, in queue order.
    pub tasks: Vec<StoredWork>,
    /// The share of the tree explored (for progress).
    pub finished_weight: f64,
    pub tasks_done: u64,
}

impl Snapshot {
    /// A job that has not started.
    pub fn fresh() -> Snapshot {
        Snapshot {
            solutions: 0,
            stats: Stats::default(),
            tasks: vec![StoredWork::from(&QueuedTask::new(Task::root()))],
            finished_weight: 0.0,
            tasks_done: 0,
        }
    }
}

/// A new job for the store.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub id: JobId,
    pub request: StoredRequest,
    /// The problem, as `ProblemData` of the cluster protocol (encoded):
    /// the DLX text or the puzzle, with the digest that names it.
    pub problem: Vec<u8>,
}

/// One change to a stored job; a batch of them is written at once.
#[derive(Debug, Clone)]
pub enum Write {
    /// Solutions found, the first of them with index `first` in the job.
    Solutions { first: u64, solutions: Solutions },
    /// A snapshot, which commits the solutions before it.
    Snapshot(Snapshot),
    /// The job ended; `message` is its final `xccd.v1.Job` (encoded).
    Ended { solutions: u64, message: Vec<u8> },
}

/// A stored job as a restart or a reader finds it.
#[derive(Debug, Clone)]
pub struct StoredJob {
    pub id: JobId,
    pub request: StoredRequest,
    pub problem: Vec<u8>,
    /// Solutions of the job readable now.
    pub committed: u64,
    /// The latest snapshot (of an unfinished job).
    pub snapshot: Option<Snapshot>,
    /// The final job message (of an ended job).
    pub ended: Option<Vec<u8>>,
    /// Bytes its solutions take.
    pub bytes: u64,
}

impl StoredJob {
    /// Refuses an unfinished job without a snapshot: nothing says where
    /// it resumes.
    fn check_resumable(&self) -> StoreResult<()> {
        if self.snapshot.is_none() {
            return Err(StoreError::Corrupt(format!(
                "job {} has neither a snapshot nor an end",
                self.id
            )));
        }
        Ok(())
    }
}

/// Where durable jobs live.
pub trait JobStore: Send + Sync {
    /// The largest job id ever stored (0 if none): new ids go above it.
    fn max_job_id(&self) -> StoreResult<JobId>;
    /// Records a new job, with a fresh snapshot.
    fn create(&self, job: &NewJob) -> StoreResult<()>;
    /// Applies `writes` to job `id` at once (all or nothing). Returns the
    /// bytes the job's solutions take after them.
    fn apply(&self, id: JobId, writes: &[Write]) -> StoreResult<u64>;
    /// The jobs that had not ended, each with its latest snapshot; the
    /// solutions stored beyond a snapshot are dropped (its tasks find them
    /// again).
    fn resume(&self) -> StoreResult<Vec<StoredJob>>;
    /// A stored job, without its solutions.
    fn get(&self, id: JobId) -> StoreResult<Option<StoredJob>>;
    /// Every stored job, in the order of their ids, without its problem
    /// and snapshot.
    fn list(&self) -> StoreResult<Vec<StoredJob>>;
    /// Up to `max` committed solutions of job `id` from index `from` on.
    fn solutions(&self, id: JobId, from: u64, max: usize) -> StoreResult<Vec<SolutionIndices>>;
    /// Forgets a job and its solutions; false if there was none.
    fn delete(&self, id: JobId) -> StoreResult<bool>;
    /// Bytes that all stored solutions take.
    fn total_bytes(&self) -> StoreResult<u64>;
    /// Why the store could not be written when last tried, if it could not
    /// (cheap: for health and metrics).
    fn degraded(&self) -> Option<Cause>;
    /// Tries again whether the store can be written (room may have come
    /// back), and says why not if it cannot.
    fn writable(&self) -> Option<Cause>;
}
