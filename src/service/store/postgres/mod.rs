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
//! (`schema::check_fence`), so that the database refuses the writes of a
//! coordinator that another has taken over from.
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
//!
//! This file owns the store's type, its thread and its [`JobStore`] calls,
//! each run on the connection as one retryable operation. Its parts own the
//! rest, and none names another's back: [`session`] (the connection, the
//! coordinator's lock, reconnecting), [`schema`] (the numbered migrations),
//! [`rows`] (the SQL of job rows and solution chunks: writing a batch of
//! changes, resuming, reading), and [`messages`] (the client's errors as
//! the store's, URLs without their passwords). It must not decide when to
//! snapshot or what a job holds (that is the durable layer's,
//! [`crate::service::durable`]): it writes what it is given, in order.

mod messages;
mod rows;
mod schema;
mod session;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use postgres::{Client, Config};

pub use self::messages::{describe, is_postgres_url, redacted};
use self::rows::{apply_changes, changes, raw_job, read_chunks, resume_jobs, JOB_COLUMNS};
use self::schema::check_fence;
pub use self::schema::{LOCK_CLASS, SCHEMA_VERSION};
use self::session::Session;
use super::fence::Fence;
use super::{
    codec, json, Cause, JobStore, NewJob, Snapshot, StoreError, StoreResult, StoredJob, Write,
};
use crate::run::SolutionIndices;
use crate::service::job::JobId;
use crate::service::metrics as metric;
use crate::service::sync::Locked;

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

/// How long the server lets a fenced store's session wait in the middle of
/// a transaction before it ends the session: well under the lease's 5 s
/// (see [`crate::service::leader`]), and far above the gap between two
/// statements of a write.
const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(2);

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
        if fence.is_some() {
            // A leader cut off or frozen in the middle of a write holds the
            // lease's row FOR SHARE (schema::check_fence) until the server
            // drops its session: without this, only when the kernel gives
            // up on the connection (hours), and a takeover (an UPDATE of
            // that row) would wait as long. The server ends such a session
            // after IDLE_IN_TRANSACTION instead; its write never committed.
            let idle = format!(
                "-c idle_in_transaction_session_timeout={}",
                IDLE_IN_TRANSACTION.as_millis()
            );
            let options = match config.get_options() {
                Some(given) => format!("{given} {idle}"),
                None => idle,
            };
            config.options(&options);
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
