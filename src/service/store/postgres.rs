//! The job store on a PostgreSQL server (`serve --store postgres://...`):
//! the jobs live in a database that operators already run, back up and
//! replicate, instead of a file on the coordinator's volume.
//!
//! It keeps what the SQLite store keeps, in the same form and with the same
//! guarantees (see the parent module): a job's request (with its API key's
//! owner and its CreateJob request id and digest, the idempotency key) and
//! problem, its solutions in chunks of [`super::codec`] in the order they
//! were found, its latest snapshot, and its `committed` count, all changed
//! by one transaction per [`JobStore::apply`]; a restart drops the solutions
//! past the last snapshot. Solutions go in as one multi-row INSERT per
//! transaction (arrays unnested on the server), so a fast enumeration costs
//! a round trip per batch of chunks, not one per solution.
//!
//! **The client.** The store's trait is synchronous, and it is called from
//! the writer of each durable job (in `spawn_blocking`) and, for small
//! reads, from the runtime's threads. The store therefore owns one
//! connection on a thread of its own, which runs the calls one after
//! another, as the SQLite store's mutex does; the sync client (`postgres`,
//! tokio-postgres underneath) is the simple correct choice there, as its
//! blocking calls never run on the runtime. A pool would buy nothing: one
//! coordinator owns the database (below), and its writes are ordered
//! anyway. Connections are not encrypted (`NoTls`): keep the server on a
//! trusted network or a local socket until TLS is added.
//!
//! **One writer.** Opened alone ([`PostgresStore::open`]) the store takes a
//! session advisory lock; a second on the same database is refused with a
//! clear error, like the SQLite store's exclusive lock. The lock goes with
//! the connection: a killed coordinator's lock is released when the server
//! sees its connection close. `xccd serve` opens it fenced instead
//! ([`PostgresStore::open_fenced`]): several coordinators share the
//! database, one leads (see `crate::service::leader`), and every write
//! transaction first checks the leader's token against the lease row
//! (`postgres_schema::check_fence`), so that the database refuses the
//! writes of a coordinator that another has taken over from.
//!
//! **Schema.** Migrations are numbered, recorded in `schema_version`, and
//! applied at start in one transaction under a transaction-level advisory
//! lock; a database of a newer schema than this build knows is refused.
//!
//! **A dropped connection** (the server restarted, a network blip, an
//! administrator's `pg_terminate_backend`) is connected again, with the
//! lock taken again, and the call that met it is retried once. A retried
//! `apply` whose first commit did get through is recognized by the token
//! it wrote with its changes, so nothing is written twice.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::{Client, Config, NoTls};

use super::fence::Fence;
use super::postgres_schema::{check_fence, migrate};
pub use super::postgres_schema::{LOCK_CLASS, SCHEMA_VERSION};
use super::{
    codec, Cause, JobStore, NewJob, Snapshot, StoreError, StoreResult, StoredJob, StoredRequest,
    Write,
};
use crate::run::SolutionIndices;
use crate::service::job::JobId;
use crate::service::metrics as metric;
use crate::service::sync::Locked;

/// Bytes a chunk row costs beside its solutions, roughly (as SQLite's).
const CHUNK_OVERHEAD: u64 = 24;
/// The second key of the coordinator's session lock.
const COORDINATOR_LOCK: i32 = 1;
/// How long a start waits for the coordinator's lock: a killed
/// predecessor's connection may take a moment to be seen closed.
const LOCK_WAIT: Duration = Duration::from_secs(3);
/// How long a dropped connection is tried again before a call fails.
const RECONNECT_FOR: Duration = Duration::from_secs(10);

/// A client error with its causes: the client's own words are only its
/// kind ("db error"), the server's message is its source.
pub fn describe(error: &postgres::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string().replace('\n', " "));
        source = cause.source();
    }
    text
}

impl From<postgres::Error> for StoreError {
    fn from(error: postgres::Error) -> StoreError {
        let code = error.code();
        let cause = if code == Some(&SqlState::DISK_FULL) {
            Some(Cause::Full)
        } else if code == Some(&SqlState::READ_ONLY_SQL_TRANSACTION) {
            Some(Cause::ReadOnly)
        } else if code == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
            Some(Cause::PermissionDenied)
        } else if code == Some(&SqlState::DATA_CORRUPTED)
            || code == Some(&SqlState::INDEX_CORRUPTED)
        {
            return StoreError::Corrupt(describe(&error));
        } else {
            None
        };
        match cause {
            Some(cause) => StoreError::Unwritable {
                cause,
                detail: describe(&error),
            },
            None => StoreError::Io(describe(&error)),
        }
    }
}

/// A count as PostgreSQL's BIGINT: past `i64::MAX` (a memoized count's
/// solutions), `i64::MAX`.
fn as_sql(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("store records serialize")
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// `url` without its password, for messages and logs.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{scheme}://{name}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// Whether `url` names a PostgreSQL database (`postgres://` or
/// `postgresql://`).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// A call to the store's thread.
type Call = Box<dyn FnOnce(&mut Session) + Send>;

pub struct PostgresStore {
    calls: Mutex<Option<mpsc::Sender<Call>>>,
    thread: Option<JoinHandle<()>>,
    /// The database, without a password.
    place: String,
    /// Why the store could not be written when last tried.
    degraded: Mutex<Option<Cause>>,
    /// Tokens of `apply` calls (see [`Session::run`]).
    writes: AtomicI64,
    /// The lease this store writes under, and its token, on a coordinator
    /// among several (see [`super::fence`]); None writes unfenced, alone on
    /// the database by the coordinator's advisory lock.
    fence: Option<(Arc<Fence>, i64)>,
}

/// The connection, on the store's thread.
struct Session {
    config: Config,
    place: String,
    client: Option<Client>,
    /// Takes the coordinator's advisory lock (an unfenced store).
    lock: bool,
}

impl Session {
    fn open_error(&self, message: String) -> StoreError {
        StoreError::Open {
            path: self.place.clone(),
            message,
        }
    }

    /// Connects, takes the coordinator's lock and brings the schema up to
    /// date; tries again for `patience` while the server cannot be reached.
    fn connect(&mut self, patience: Duration) -> StoreResult<&mut Client> {
        if self.client.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(self.client.as_mut().expect("checked"));
        }
        self.client = None;
        let start = Instant::now();
        let mut pause = Duration::from_millis(50);
        let mut client = loop {
            match self.config.connect(NoTls) {
                Ok(client) => break client,
                // A refusal by the server itself (a wrong password, no such
                // database) does not pass by waiting.
                Err(error) if error.as_db_error().is_some() || start.elapsed() >= patience => {
                    return Err(self.open_error(format!("cannot connect: {}", describe(&error))))
                }
                Err(error) => {
                    tracing::debug!(%error, "the job store's database cannot be reached yet");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        };
        let start = Instant::now();
        // A fenced store writes under the lease's token instead.
        let mut locked = !self.lock;
        while !locked {
            locked = client
                .query_one(
                    "SELECT pg_try_advisory_lock($1, $2)",
                    &[&LOCK_CLASS, &COORDINATOR_LOCK],
                )?
                .get(0);
            if !locked && start.elapsed() >= LOCK_WAIT {
                return Err(self.open_error(
                    "another xccd coordinator uses this database (opened alone, without the \
                     leadership of `xccd serve`); stop it or give this one its own database"
                        .into(),
                ));
            }
            if !locked {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        migrate(&mut client).map_err(|e| match e {
            StoreError::Io(message) => self.open_error(message),
            other => other,
        })?;
        Ok(self.client.insert(client))
    }

    /// Runs `op` on the connection; if the connection turns out dropped, connects
    /// again and runs it once more (`op` must be safe to repeat).
    fn run<T>(&mut self, op: &dyn Fn(&mut Client) -> StoreResult<T>) -> StoreResult<T> {
        let client = self.connect(RECONNECT_FOR)?;
        let error = match op(client) {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        if !client.is_closed() && client.is_valid(Duration::from_secs(5)).is_ok() {
            return Err(error);
        }
        tracing::warn!(%error, "the job store's connection dropped; connecting again");
        self.client = None;
        let client = self.connect(RECONNECT_FOR)?;
        op(client)
    }
}

/// A change of [`Write`], its solutions already encoded (by the caller's
/// thread, not the store's).
enum Change {
    Chunk {
        first: u64,
        count: u64,
        data: Vec<u8>,
    },
    Snapshot {
        solutions: u64,
        json: String,
    },
    Ended {
        solutions: u64,
        message: Vec<u8>,
    },
}

fn changes(writes: &[Write]) -> Vec<Change> {
    let mut scratch = Vec::new();
    writes
        .iter()
        .map(|write| match write {
            Write::Solutions { first, solutions } => {
                let mut data = Vec::with_capacity(solutions.len() * 16);
                for solution in solutions {
                    codec::encode_with(&mut data, solution, &mut scratch);
                }
                Change::Chunk {
                    first: *first,
                    count: solutions.len() as u64,
                    data,
                }
            }
            Write::Snapshot(snapshot) => Change::Snapshot {
                solutions: snapshot.solutions,
                json: json(snapshot),
            },
            Write::Ended { solutions, message } => Change::Ended {
                solutions: *solutions,
                message: message.clone(),
            },
        })
        .collect()
}

const JOB_COLUMNS: &str = "id, request, problem, committed, snapshot, ended, bytes";

fn raw_job(row: &postgres::Row) -> StoreResult<StoredJob> {
    let id: i64 = row.try_get(0)?;
    let what = format!("job {id}");
    let request: String = row.try_get(1)?;
    let snapshot: Option<String> = row.try_get(4)?;
    Ok(StoredJob {
        id: id as JobId,
        request: parse::<StoredRequest>(&request, &what)?,
        problem: row.try_get(2)?,
        committed: row.try_get::<_, i64>(3)? as u64,
        snapshot: snapshot
            .as_deref()
            .map(|s| parse::<Snapshot>(s, &what))
            .transpose()?,
        ended: row.try_get(5)?,
        bytes: row.try_get::<_, i64>(6)? as u64,
    })
}

impl PostgresStore {
    /// Connects to the database of `url` (a `postgres://` URL), takes the
    /// coordinator's lock and brings the schema up to date.
    pub fn open(url: &str) -> StoreResult<PostgresStore> {
        PostgresStore::open_with(url, None)
    }

    /// A store whose every write carries `token` of `fence`'s lease and is
    /// refused once the lease has another (see [`super::fence`]). It takes
    /// no advisory lock: the lease decides who writes.
    pub fn open_fenced(url: &str, fence: Arc<Fence>, token: i64) -> StoreResult<PostgresStore> {
        PostgresStore::open_with(url, Some((fence, token)))
    }

    fn open_with(url: &str, fence: Option<(Arc<Fence>, i64)>) -> StoreResult<PostgresStore> {
        let place = redacted(url);
        let mut config: Config = url.parse().map_err(|e| StoreError::Open {
            path: place.clone(),
            message: format!("not a PostgreSQL URL: {e}"),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        if config.get_application_name().is_none() {
            config.application_name("xccd");
        }
        let (sender, receiver) = mpsc::channel::<Call>();
        let mut session = Session {
            config,
            place: place.clone(),
            client: None,
            lock: fence.is_none(),
        };
        let thread = std::thread::Builder::new()
            .name("xccd-store".into())
            .spawn(move || {
                for call in receiver {
                    call(&mut session);
                }
            })
            .map_err(|e| StoreError::Io(format!("cannot start the store's thread: {e}")))?;
        let store = PostgresStore {
            calls: Mutex::new(Some(sender)),
            thread: Some(thread),
            place,
            degraded: Mutex::new(None),
            fence,
            // Tokens of this process, above those of any before it.
            writes: AtomicI64::new(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |t| t.as_nanos() as i64),
            ),
        };
        store.on_thread(|session| session.connect(Duration::ZERO).map(|_| ()))?;
        tracing::info!(database = %store.place, "job store on PostgreSQL");
        store.writable();
        Ok(store)
    }

    /// The database, without its password.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Runs `f` on the store's thread, and waits for its answer.
    fn on_thread<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let (answer, answered) = mpsc::sync_channel(1);
        let gone = || StoreError::Io("the job store's thread has ended".into());
        self.calls
            .locked()
            .as_ref()
            .ok_or_else(gone)?
            .send(Box::new(move |session| {
                let _ = answer.send(f(session));
            }))
            .map_err(|_| gone())?;
        answered.recv().map_err(|_| gone())?
    }

    /// Runs `op` on the connection (see [`Session::run`]).
    fn run<T: Send + 'static>(
        &self,
        op: impl Fn(&mut Client) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        self.on_thread(move |session| session.run(&op))
    }

    /// Records the outcome of a write, as the SQLite store does; a write
    /// refused by the fence is counted, and this process leads no more.
    fn note<T>(&self, result: StoreResult<T>) -> StoreResult<T> {
        if let Err(error) = &result {
            if let Some(cause) = error.cause() {
                *self.degraded.locked() = Some(cause);
            }
            if let (StoreError::Fenced { token, .. }, Some((fence, _))) = (error, &self.fence) {
                metrics::counter!(metric::STORE_FENCED_WRITES).increment(1);
                tracing::error!(%error, "a write refused: another coordinator leads now");
                fence.lose(*token, None);
            }
        }
        result
    }

    /// The token writes carry (None: unfenced).
    fn token(&self) -> Option<i64> {
        self.fence.as_ref().map(|(_, token)| *token)
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        // The thread ends with its channel, and its connection (with the
        // coordinator's lock) closes with it.
        self.calls.locked().take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A stored chunk: its first solution's index, how many, their bytes.
type Chunk = (u64, u64, Vec<u8>);

/// Reads the chunks of job `id` that hold solutions `from..end`, in order
/// (and `end`: the committed ones' end, or `from + max` before it).
fn read_chunks(
    client: &mut Client,
    id: i64,
    from: u64,
    max: usize,
) -> StoreResult<(u64, Vec<Chunk>)> {
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let Some(row) = tx.query_opt("SELECT committed FROM jobs WHERE id = $1", &[&id])? else {
        return Ok((from, Vec::new()));
    };
    let committed: i64 = row.get(0);
    let end = (committed as u64).min(from.saturating_add(max as u64));
    if from >= end {
        return Ok((end, Vec::new()));
    }
    let rows = tx.query(
        "SELECT first, count, data FROM solutions
         WHERE job = $1 AND first < $3 AND first >= COALESCE(
             (SELECT MAX(first) FROM solutions WHERE job = $1 AND first <= $2), 0)
         ORDER BY first",
        &[&id, &as_sql(from), &as_sql(end)],
    )?;
    let chunks = rows
        .iter()
        .map(|row| {
            (
                row.get::<_, i64>(0) as u64,
                row.get::<_, i64>(1) as u64,
                row.get::<_, Vec<u8>>(2),
            )
        })
        .collect();
    tx.commit()?;
    Ok((end, chunks))
}

fn apply_changes(
    client: &mut Client,
    id: i64,
    token: i64,
    fence: Option<i64>,
    changes: &[Change],
) -> StoreResult<u64> {
    let mut tx = client.transaction()?;
    check_fence(&mut tx, fence)?;
    let row = tx
        .query_opt(
            "SELECT committed, written, bytes, last_write FROM jobs WHERE id = $1 FOR UPDATE",
            &[&id],
        )?
        .ok_or_else(|| StoreError::Io(format!("job {id} is not in the store")))?;
    let (mut committed, mut written, mut bytes): (i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2));
    // A retry of a call whose commit went through, though its answer did
    // not come back.
    if row.get::<_, Option<i64>>(3) == Some(token) {
        return Ok(bytes as u64);
    }
    let (mut firsts, mut counts, mut data) = (Vec::new(), Vec::new(), Vec::new());
    let mut snapshot = None;
    let mut ended = None;
    for change in changes {
        match change {
            Change::Chunk {
                first,
                count,
                data: chunk,
            } => {
                if *first != written as u64 {
                    return Err(StoreError::Io(format!(
                        "job {id}: solutions from {first} written after {written}"
                    )));
                }
                if *count == 0 {
                    continue;
                }
                firsts.push(written);
                counts.push(*count as i64);
                data.push(chunk.as_slice());
                written += *count as i64;
                bytes += (chunk.len() as u64 + CHUNK_OVERHEAD) as i64;
            }
            Change::Snapshot { solutions, json } => {
                committed = committed.max(as_sql(*solutions).min(written));
                snapshot = Some(json.as_str());
            }
            Change::Ended { solutions, message } => {
                committed = as_sql(*solutions).min(written);
                ended = Some(message.as_slice());
            }
        }
    }
    if !firsts.is_empty() {
        tx.execute(
            "INSERT INTO solutions (job, first, count, data)
             SELECT $1, f, c, d FROM unnest($2::BIGINT[], $3::BIGINT[], $4::BYTEA[]) AS t(f, c, d)",
            &[&id, &firsts, &counts, &data],
        )?;
    }
    if let Some(message) = ended {
        tx.execute(
            "UPDATE jobs SET committed = $2, written = $3, bytes = $4, snapshot = NULL,
             ended = $5, last_write = $6 WHERE id = $1",
            &[&id, &committed, &written, &bytes, &message, &token],
        )?;
    } else if let Some(snapshot) = snapshot {
        tx.execute(
            "UPDATE jobs SET committed = $2, written = $3, bytes = $4, snapshot = $5,
             last_write = $6 WHERE id = $1",
            &[&id, &committed, &written, &bytes, &snapshot, &token],
        )?;
    } else {
        tx.execute(
            "UPDATE jobs SET written = $2, bytes = $3, last_write = $4 WHERE id = $1",
            &[&id, &written, &bytes, &token],
        )?;
    }
    tx.commit()?;
    Ok(bytes as u64)
}

/// Drops the solutions of every unfinished job past its snapshot, and
/// returns the jobs.
fn resume_jobs(client: &mut Client, fence: Option<i64>) -> StoreResult<Vec<StoredJob>> {
    let mut tx = client.transaction()?;
    check_fence(&mut tx, fence)?;
    let rows = tx.query(
        &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE ended IS NULL ORDER BY id FOR UPDATE"),
        &[],
    )?;
    let mut jobs = Vec::new();
    for row in &rows {
        let mut job = raw_job(row)?;
        if job.snapshot.is_none() {
            return Err(StoreError::Corrupt(format!(
                "job {} has neither a snapshot nor an end",
                job.id
            )));
        }
        let id = job.id as i64;
        let committed = job.committed as i64;
        // Solutions written after the last snapshot: its tasks find them
        // again. A chunk that straddles it keeps its committed part.
        let straddling = tx.query_opt(
            "SELECT first, count, data FROM solutions
             WHERE job = $1 AND first < $2 AND first + count > $2",
            &[&id, &committed],
        )?;
        if let Some(row) = straddling {
            let (first, count, data): (i64, i64, Vec<u8>) = (row.get(0), row.get(1), row.get(2));
            let mut solutions = codec::decode(&data, count as usize)?;
            solutions.truncate((committed - first) as usize);
            let mut kept = Vec::new();
            for solution in &solutions {
                codec::encode(&mut kept, solution);
            }
            tx.execute(
                "UPDATE solutions SET count = $3, data = $4 WHERE job = $1 AND first = $2",
                &[&id, &first, &(solutions.len() as i64), &kept],
            )?;
        }
        tx.execute(
            "DELETE FROM solutions WHERE job = $1 AND first >= $2",
            &[&id, &committed],
        )?;
        let bytes: i64 = tx
            .query_one(
                "SELECT (COALESCE(SUM(octet_length(data)), 0) + COUNT(*) * $2)::BIGINT
                 FROM solutions WHERE job = $1",
                &[&id, &(CHUNK_OVERHEAD as i64)],
            )?
            .get(0);
        tx.execute(
            "UPDATE jobs SET written = committed, bytes = $2, last_write = NULL WHERE id = $1",
            &[&id, &bytes],
        )?;
        job.bytes = bytes as u64;
        jobs.push(job);
    }
    tx.commit()?;
    Ok(jobs)
}

impl JobStore for PostgresStore {
    fn max_job_id(&self) -> StoreResult<JobId> {
        self.run(|client| {
            let max: Option<i64> = client
                .query_one(
                    "SELECT GREATEST((SELECT MAX(id) FROM jobs), (SELECT MAX(job) FROM solutions))",
                    &[],
                )?
                .get(0);
            Ok(max.unwrap_or(0) as JobId)
        })
    }

    fn create(&self, job: &NewJob) -> StoreResult<()> {
        let id = job.id as i64;
        let request = json(&job.request);
        let problem = job.problem.clone();
        let snapshot = json(&Snapshot::fresh());
        let fence = self.token();
        let result = self.run(move |client| {
            let mut client = client.transaction()?;
            check_fence(&mut client, fence)?;
            let inserted = client.execute(
                "INSERT INTO jobs (id, request, problem, committed, written, snapshot, ended, bytes)
                 VALUES ($1, $2, $3, 0, 0, $4, NULL, 0) ON CONFLICT (id) DO NOTHING",
                &[&id, &request, &problem, &snapshot],
            )?;
            if inserted == 1 {
                return Ok(client.commit()?);
            }
            // Either a retry whose first insert went through, or an id
            // already taken.
            let same = client.query_opt(
                "SELECT 1 FROM jobs WHERE id = $1 AND request = $2 AND problem = $3",
                &[&id, &request, &problem],
            )?;
            match same {
                Some(_) => Ok(()),
                None => Err(StoreError::Io(format!("job {id} is already in the store"))),
            }
        });
        self.note(result)
    }

    fn apply(&self, id: JobId, writes: &[Write]) -> StoreResult<u64> {
        let changes = changes(writes);
        let token = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        let fence = self.token();
        let result =
            self.run(move |client| apply_changes(client, id as i64, token, fence, &changes));
        self.note(result)
    }

    fn resume(&self) -> StoreResult<Vec<StoredJob>> {
        let fence = self.token();
        let result = self.run(move |client| resume_jobs(client, fence));
        self.note(result)
    }

    fn get(&self, id: JobId) -> StoreResult<Option<StoredJob>> {
        self.run(move |client| {
            client
                .query_opt(
                    &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"),
                    &[&(id as i64)],
                )?
                .as_ref()
                .map(raw_job)
                .transpose()
        })
    }

    fn list(&self) -> StoreResult<Vec<StoredJob>> {
        self.run(|client| {
            // Listing needs neither the problems nor the snapshots.
            client
                .query(
                    "SELECT id, request, ''::BYTEA, committed, NULL::TEXT, ended, bytes
                     FROM jobs ORDER BY id",
                    &[],
                )?
                .iter()
                .map(raw_job)
                .collect()
        })
    }

    fn solutions(&self, id: JobId, from: u64, max: usize) -> StoreResult<Vec<SolutionIndices>> {
        let (end, chunks) = self.run(move |client| read_chunks(client, id as i64, from, max))?;
        // Decoded here, on the caller's thread.
        let mut out = Vec::new();
        let mut next = from;
        for (first, count, data) in chunks {
            if next >= end {
                break;
            }
            if first > next {
                return Err(StoreError::Corrupt(format!(
                    "job {id}: solutions {next}..{first} are missing"
                )));
            }
            let solutions = codec::decode(&data, count as usize)?;
            let skip = (next - first) as usize;
            let take = ((end - next) as usize).min(solutions.len().saturating_sub(skip));
            out.extend(solutions.into_iter().skip(skip).take(take));
            next += take as u64;
        }
        if next < end {
            return Err(StoreError::Corrupt(format!(
                "job {id}: solution {next} is missing"
            )));
        }
        Ok(out)
    }

    fn delete(&self, id: JobId) -> StoreResult<bool> {
        // Its solutions go with it (ON DELETE CASCADE), in one transaction.
        let fence = self.token();
        let result = self.run(move |client| {
            let mut tx = client.transaction()?;
            check_fence(&mut tx, fence)?;
            let deleted = tx.execute("DELETE FROM jobs WHERE id = $1", &[&(id as i64)])? > 0;
            tx.commit()?;
            Ok(deleted)
        });
        let deleted = self.note(result)?;
        self.writable();
        Ok(deleted)
    }

    fn total_bytes(&self) -> StoreResult<u64> {
        self.run(|client| {
            let bytes: i64 = client
                .query_one("SELECT COALESCE(SUM(bytes), 0)::BIGINT FROM jobs", &[])?
                .get(0);
            Ok(bytes as u64)
        })
    }

    fn degraded(&self) -> Option<Cause> {
        *self.degraded.locked()
    }

    fn writable(&self) -> Option<Cause> {
        // A write the server must log, to see that it can.
        let cause = self
            .run(|client| {
                client.execute(
                    "INSERT INTO meta (key, value) VALUES ('write-probe', now()::TEXT)
                     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    &[],
                )?;
                Ok(())
            })
            .err()
            .and_then(|e| e.cause());
        *self.degraded.locked() = cause;
        cause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password_in_messages() {
        assert_eq!(
            redacted("postgres://xccd:secret@db:5432/jobs"),
            "postgres://xccd:***@db:5432/jobs"
        );
        assert_eq!(
            redacted("postgres://xccd@db/jobs?sslmode=disable"),
            "postgres://xccd@db/jobs?sslmode=disable"
        );
        assert_eq!(
            redacted("postgresql://a:b@c@host/x"),
            "postgresql://a:***@host/x"
        );
        assert_eq!(redacted("host=db user=x"), "host=db user=x");
        assert!(is_postgres_url("postgresql://db/x"));
        assert!(!is_postgres_url("sqlite:jobs"));
    }
}
