//! The embedded job store: one SQLite file (`jobs.sqlite`) in the data
//! directory, through `rusqlite` with SQLite built in, so that nothing else
//! needs installing.
//!
//! Why SQLite: a committed transaction survives a killed process (write-ahead
//! log), a damaged file is detected (`quick_check` at open, and page checks
//! on every read), it is the most widely deployed store there is, and anyone
//! can inspect or back up a data directory with the `sqlite3` shell. The
//! file is opened in exclusive locking mode: a second coordinator on the
//! same directory is refused at start instead of corrupting the first's
//! jobs.
//!
//! Solutions are stored in chunks (one row per batch written), in the
//! compact form of [`super::codec`].

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use super::{
    codec, Cause, JobStore, NewJob, Snapshot, StoreError, StoreResult, StoredJob, StoredRequest,
    Write,
};
use crate::run::SolutionIndices;
use crate::service::job::JobId;
use crate::service::sync::Locked;

/// The schema this build reads and writes.
const SCHEMA: &str = "xccd-jobs-1";
/// Bytes a chunk row costs beside its solutions, roughly.
const CHUNK_OVERHEAD: u64 = 24;

/// Bytes of `jobs.reserve`, a file kept beside the store while there is
/// room, and deleted to let a DeleteJob through when the volume is full:
/// deleting rows and giving their pages back writes to the log first. A
/// deletion goes in steps that each log less than half of it (see
/// [`DELETE_ROWS`] and [`VACUUM_PAGES`]), with the log emptied between
/// steps, so this is enough whatever the size of the job.
const RESERVE_BYTES: u64 = 2 << 20;
/// Free bytes the volume must have beside the reserve for the store to
/// take new durable jobs: below it the store is full (degraded), before
/// SQLite's own writes fail.
const MIN_FREE_BYTES: u64 = 2 << 20;
/// Solution chunks deleted per transaction (a chunk holds up to 1,024
/// solutions; its row and index entries log a few pages).
const DELETE_ROWS: i64 = 64;
/// Pages given back to the volume per transaction of `incremental_vacuum`:
/// each page moved into a freed one is logged once.
const VACUUM_PAGES: i64 = 64;
/// The log is checkpointed at about this many pages (SQLite's default is
/// 1,000), and cut back to `JOURNAL_LIMIT_BYTES` after: a log that keeps
/// megabytes is room a full volume lacks.
const AUTOCHECKPOINT_PAGES: i64 = 256;
const JOURNAL_LIMIT_BYTES: i64 = 1 << 20;

/// Bytes free for this process on the volume of `dir` (None if unknown).
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `stat` a valid buffer.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

pub struct SqliteStore {
    connection: Mutex<Connection>,
    path: PathBuf,
    dir: PathBuf,
    reserve: PathBuf,
    /// Opened read-only (its directory cannot be written): writes wait for
    /// a restart.
    read_only: bool,
    /// Why the store could not be written when last tried.
    degraded: Mutex<Option<Cause>>,
}

/// The cause of `error`, when SQLite reports only an I/O failure or a file
/// it cannot open: found by trying to create a file in `dir`.
fn classify(dir: &Path, error: StoreError) -> StoreError {
    if matches!(error, StoreError::Corrupt(_)) || error.cause().is_some() {
        return error;
    }
    let probe = dir.join(".xccd-write-probe");
    match std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
        .and_then(|mut file| std::io::Write::write_all(&mut file, &[0u8; 4096]))
    {
        Ok(()) => {
            let _ = std::fs::remove_file(&probe);
            error
        }
        Err(io) => {
            let _ = std::fs::remove_file(&probe);
            match Cause::of_io(&io) {
                Some(cause) => StoreError::Unwritable {
                    cause,
                    detail: format!("{error} ({}: {io})", dir.display()),
                },
                None => error,
            }
        }
    }
}

/// A count as SQLite's integer: past `i64::MAX` (a memoized count's
/// solutions), `i64::MAX`, never a negative number.
fn as_sql(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("store records serialize")
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

impl SqliteStore {
    /// Opens (or creates) the store in `dir`. A store that opens but cannot
    /// be written (a full volume, a read-only file system, no permission)
    /// opens degraded: it reads and, on a full volume, deletes; see
    /// [`JobStore::degraded`].
    pub fn open(dir: &Path) -> StoreResult<SqliteStore> {
        let reserve = dir.join("jobs.reserve");
        let first = match Self::open_with(dir, false) {
            Ok(store) => {
                if store.writable().is_none() {
                    store.sweep();
                }
                return Ok(store);
            }
            Err(error) => classify(dir, error),
        };
        match first.cause() {
            // The reserve makes room for what opening writes.
            Some(Cause::Full) if std::fs::remove_file(&reserve).is_ok() => {
                let store = Self::open_with(dir, false).map_err(|e| classify(dir, e))?;
                store.writable();
                Ok(store)
            }
            Some(cause @ (Cause::ReadOnly | Cause::PermissionDenied))
                if dir.join("jobs.sqlite").exists() =>
            {
                let store = Self::open_with(dir, true).map_err(|_| first)?;
                tracing::warn!(
                    cause = cause.label(),
                    "the job store opened read-only: {}",
                    cause.advice()
                );
                *store.degraded.locked() = Some(cause);
                Ok(store)
            }
            _ => Err(first),
        }
    }

    fn open_with(dir: &Path, read_only: bool) -> StoreResult<SqliteStore> {
        let path = dir.join("jobs.sqlite");
        let open_error = |message: String| StoreError::Open {
            path: path.display().to_string(),
            message,
        };
        std::fs::create_dir_all(dir).map_err(|e| match Cause::of_io(&e) {
            Some(cause) => StoreError::Unwritable {
                cause,
                detail: format!("cannot create the data directory {}: {e}", dir.display()),
            },
            None => open_error(format!(
                "cannot create the data directory {}: {e}",
                dir.display()
            )),
        })?;
        // SQLite takes an empty file for a new store: one that had jobs and
        // was truncated to nothing must not start empty and silent.
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
            return Err(StoreError::Corrupt(format!(
                "{} is empty (truncated?)",
                path.display()
            )));
        }
        let connection = if read_only {
            // Immutable: nothing can change the file under a read-only
            // mount, and a write-ahead log's index could not be created.
            let uri = format!(
                "file:{}?immutable=1",
                path.display()
                    .to_string()
                    .replace('%', "%25")
                    .replace('?', "%3f")
                    .replace('#', "%23")
            );
            Connection::open_with_flags(
                uri,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )
        } else {
            Connection::open(&path)
        }
        .map_err(|e| match StoreError::from(e) {
            error @ StoreError::Unwritable { .. } => error,
            other => open_error(other.to_string()),
        })?;
        let busy = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                open_error(
                    "another xccd process uses this data directory (only one coordinator may); \
                     stop it or give this one its own --data-dir"
                        .into(),
                )
            }
            _ => StoreError::from(e),
        };
        if read_only {
            return Self::read_only(connection, path, dir);
        }
        connection
            .execute_batch("PRAGMA locking_mode = EXCLUSIVE;")
            .map_err(busy)?;
        let mode: String = connection
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(busy)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(open_error(format!(
                "cannot use a write-ahead log (journal mode {mode})"
            )));
        }
        connection
            .execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(busy)?;
        let check: String = connection
            .query_row("PRAGMA quick_check", [], |row| row.get(0))
            .map_err(busy)?;
        if check != "ok" {
            return Err(StoreError::Corrupt(format!("{}: {check}", path.display())));
        }
        // Deleted jobs give their pages back to the volume (see `delete`):
        // on a full disk that is what makes room. A new store takes the
        // setting here; one made without it takes it at its next VACUUM
        // (below).
        connection.execute_batch(&format!(
            "PRAGMA auto_vacuum = INCREMENTAL;
             PRAGMA wal_autocheckpoint = {AUTOCHECKPOINT_PAGES};
             PRAGMA journal_size_limit = {JOURNAL_LIMIT_BYTES};"
        ))?;
        connection.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS jobs (
                 id INTEGER PRIMARY KEY,
                 request TEXT NOT NULL,
                 problem BLOB NOT NULL,
                 committed INTEGER NOT NULL,
                 written INTEGER NOT NULL,
                 snapshot TEXT,
                 ended BLOB,
                 bytes INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS solutions (
                 job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
                 first INTEGER NOT NULL,
                 count INTEGER NOT NULL,
                 data BLOB NOT NULL);
             CREATE UNIQUE INDEX IF NOT EXISTS solutions_by_job ON solutions(job, first);",
        )?;
        let schema: Option<String> = connection
            .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |row| {
                row.get(0)
            })
            .optional()?;
        match schema {
            None => {
                connection.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema', ?1)",
                    [SCHEMA],
                )?;
            }
            Some(found) if found == SCHEMA => {}
            Some(found) => {
                return Err(open_error(format!(
                    "it holds jobs of schema {found}, and this xccd reads {SCHEMA}"
                )))
            }
        }
        Self::vacuum_once(&connection, dir);
        Ok(SqliteStore {
            connection: Mutex::new(connection),
            path,
            dir: dir.to_path_buf(),
            reserve: dir.join("jobs.reserve"),
            read_only: false,
            degraded: Mutex::new(None),
        })
    }

    /// The store of a directory that cannot be written, for reading.
    fn read_only(connection: Connection, path: PathBuf, dir: &Path) -> StoreResult<SqliteStore> {
        let check: String = connection.query_row("PRAGMA quick_check", [], |row| row.get(0))?;
        if check != "ok" {
            return Err(StoreError::Corrupt(format!("{}: {check}", path.display())));
        }
        let schema: Option<String> = connection
            .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |row| {
                row.get(0)
            })
            .optional()?;
        if schema.as_deref() != Some(SCHEMA) {
            return Err(StoreError::Open {
                path: path.display().to_string(),
                message: format!("it does not hold jobs of schema {SCHEMA}"),
            });
        }
        Ok(SqliteStore {
            connection: Mutex::new(connection),
            path,
            dir: dir.to_path_buf(),
            reserve: dir.join("jobs.reserve"),
            read_only: true,
            degraded: Mutex::new(None),
        })
    }

    /// Records the outcome of a write: a failure for want of room or of
    /// permission degrades the store, until [`JobStore::writable`] finds it
    /// writable again.
    fn note<T>(&self, result: StoreResult<T>) -> StoreResult<T> {
        if let Err(error) = &result {
            if let Some(cause) = error.cause() {
                *self.degraded.locked() = Some(cause);
            }
        }
        result
    }

    /// Commits the log into the file, and shrinks the log.
    fn checkpoint(connection: &Connection) {
        let _ = connection.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }

    /// A store made before auto_vacuum was INCREMENTAL (auto_vacuum only
    /// changes when a VACUUM rewrites the file) gets it now, when the
    /// volume has room for the copy a VACUUM makes; otherwise deleted jobs
    /// leave their pages free inside the file, for new jobs, and the next
    /// start tries again.
    fn vacuum_once(connection: &Connection, dir: &Path) {
        let mode: i64 = connection
            .query_row("PRAGMA auto_vacuum", [], |row| row.get(0))
            .unwrap_or(2);
        if mode == 2 {
            return;
        }
        let size: u64 = connection
            .query_row(
                "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
                [],
                |row| row.get::<_, i64>(0),
            )
            .map(|bytes| bytes as u64)
            .unwrap_or(u64::MAX);
        let room = free_bytes(dir).unwrap_or(0);
        if room
            < size
                .saturating_mul(2)
                .saturating_add(RESERVE_BYTES + MIN_FREE_BYTES)
        {
            tracing::warn!(
                bytes = size,
                free = room,
                "the job store keeps deleted jobs' pages until a start with room to VACUUM it"
            );
            return;
        }
        match connection.execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;") {
            Ok(()) => tracing::info!(
                bytes = size,
                "the job store now gives deleted jobs' room back"
            ),
            Err(error) => tracing::warn!(%error, "could not VACUUM the job store"),
        }
        Self::checkpoint(connection);
    }

    /// Gives the free pages of the file back to the volume, a few at a
    /// time with the log emptied between, so that it never needs much room.
    fn give_back(connection: &Connection) -> StoreResult<()> {
        Self::checkpoint(connection);
        loop {
            let free: i64 = connection.query_row("PRAGMA freelist_count", [], |row| row.get(0))?;
            if free == 0 {
                return Ok(());
            }
            // One page per row stepped: the statement must run to its end.
            let mut statement =
                connection.prepare(&format!("PRAGMA incremental_vacuum({VACUUM_PAGES})"))?;
            let mut rows = statement.query([])?;
            while rows.next()?.is_some() {}
            drop(rows);
            Self::checkpoint(connection);
            let after: i64 = connection.query_row("PRAGMA freelist_count", [], |row| row.get(0))?;
            if after >= free {
                // Not an INCREMENTAL store (see `vacuum_once`): the pages
                // stay free inside the file.
                return Ok(());
            }
        }
    }

    /// Deletes the solutions of job `id`, a few chunks per transaction,
    /// giving their room back as it goes. True if there were any.
    fn delete_solutions(connection: &Connection, id: i64) -> StoreResult<bool> {
        let mut any = false;
        loop {
            let deleted = connection.execute(
                "DELETE FROM solutions WHERE rowid IN
                 (SELECT rowid FROM solutions WHERE job = ?1 LIMIT ?2)",
                params![id, DELETE_ROWS],
            )?;
            if deleted == 0 {
                return Ok(any);
            }
            any = true;
            Self::give_back(connection)?;
        }
    }

    /// Deletes the solutions left by a deletion that stopped half-way (a
    /// crash, or a volume still too full): their job is gone.
    fn sweep(&self) {
        let connection = self.connection.locked();
        let orphans = || -> StoreResult<Vec<i64>> {
            let mut statement = connection.prepare(
                "SELECT DISTINCT job FROM solutions WHERE job NOT IN (SELECT id FROM jobs)",
            )?;
            let rows = statement.query_map([], |row| row.get(0))?;
            Ok(rows.collect::<Result<_, _>>()?)
        };
        let result = orphans().and_then(|jobs| {
            for job in &jobs {
                Self::delete_solutions(&connection, *job)?;
            }
            Ok(jobs.len())
        });
        match result {
            Ok(0) => {}
            Ok(jobs) => tracing::info!(jobs, "deleted the solutions of jobs deleted half-way"),
            Err(error) => tracing::warn!(%error, "could not delete the solutions of deleted jobs"),
        }
    }

    /// Why the store cannot take new durable jobs now, if it cannot: the
    /// reserve must be in place (made again if there is room for it), the
    /// volume must have room beside it, and SQLite must be able to write.
    fn probe(&self, connection: &Connection) -> Option<Cause> {
        let full = |free: Option<u64>, need: u64| free.is_some_and(|free| free < need);
        if !std::fs::metadata(&self.reserve).is_ok_and(|m| m.len() == RESERVE_BYTES) {
            if full(free_bytes(&self.dir), RESERVE_BYTES + MIN_FREE_BYTES) {
                return Some(Cause::Full);
            }
            let reserve = || -> std::io::Result<()> {
                let mut file = std::fs::File::create(&self.reserve)?;
                std::io::Write::write_all(&mut file, &vec![0u8; RESERVE_BYTES as usize])?;
                file.sync_all()
            };
            if let Err(io) = reserve() {
                let _ = std::fs::remove_file(&self.reserve);
                return Some(Cause::of_io(&io).unwrap_or(Cause::Full));
            }
        }
        if full(free_bytes(&self.dir), MIN_FREE_BYTES) {
            return Some(Cause::Full);
        }
        // A write that SQLite must put in its log, to see that it can
        // (a value that changes: SQLite skips writing an unchanged row).
        connection
            .execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('write-probe', ?1)",
                [format!("{:?}", std::time::SystemTime::now())],
            )
            .map_err(StoreError::from)
            .err()
            .and_then(|e| e.cause())
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn row_to_job(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawJob> {
    Ok(RawJob {
        id: row.get(0)?,
        request: row.get(1)?,
        problem: row.get(2)?,
        committed: row.get(3)?,
        snapshot: row.get(4)?,
        ended: row.get(5)?,
        bytes: row.get(6)?,
    })
}

const JOB_COLUMNS: &str = "id, request, problem, committed, snapshot, ended, bytes";

struct RawJob {
    id: i64,
    request: String,
    problem: Vec<u8>,
    committed: i64,
    snapshot: Option<String>,
    ended: Option<Vec<u8>>,
    bytes: i64,
}

impl RawJob {
    fn parse(self) -> StoreResult<StoredJob> {
        let what = format!("job {}", self.id);
        Ok(StoredJob {
            id: self.id as JobId,
            request: parse::<StoredRequest>(&self.request, &what)?,
            problem: self.problem,
            committed: self.committed as u64,
            snapshot: self
                .snapshot
                .as_deref()
                .map(|s| parse::<Snapshot>(s, &what))
                .transpose()?,
            ended: self.ended,
            bytes: self.bytes as u64,
        })
    }
}

/// Reads `(first, count, data)` chunks of a job from the one holding
/// solution `from` on.
fn chunks(
    connection: &Connection,
    id: JobId,
    from: u64,
    limit: usize,
) -> StoreResult<Vec<(u64, u64, Vec<u8>)>> {
    let mut out = Vec::new();
    let start: Option<(i64, i64, Vec<u8>)> = connection
        .query_row(
            "SELECT first, count, data FROM solutions WHERE job = ?1 AND first <= ?2
             ORDER BY first DESC LIMIT 1",
            params![id as i64, from as i64],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    let mut after = from as i64;
    if let Some((first, count, data)) = start {
        if (first + count) as u64 > from {
            out.push((first as u64, count as u64, data));
        }
    } else {
        after = -1;
    }
    let mut statement = connection.prepare_cached(
        "SELECT first, count, data FROM solutions WHERE job = ?1 AND first > ?2
         ORDER BY first LIMIT ?3",
    )?;
    let rows = statement.query_map(params![id as i64, after, limit as i64], |row| {
        Ok((
            row.get::<_, i64>(0)? as u64,
            row.get::<_, i64>(1)? as u64,
            row.get::<_, Vec<u8>>(2)?,
        ))
    })?;
    for row in rows {
        out.push(row?);
    }
    Ok(out)
}

impl JobStore for SqliteStore {
    fn max_job_id(&self) -> StoreResult<JobId> {
        let connection = self.connection.locked();
        // Solutions of a job deleted half-way keep their id taken.
        let max: Option<i64> = connection.query_row(
            "SELECT MAX(m) FROM (SELECT MAX(id) AS m FROM jobs
                                 UNION ALL SELECT MAX(job) FROM solutions)",
            [],
            |row| row.get(0),
        )?;
        Ok(max.unwrap_or(0) as JobId)
    }

    fn create(&self, job: &NewJob) -> StoreResult<()> {
        let result = (|| -> StoreResult<()> {
            let connection = self.connection.locked();
            connection.execute(
                "INSERT INTO jobs (id, request, problem, committed, written, snapshot, ended, bytes)
                 VALUES (?1, ?2, ?3, 0, 0, ?4, NULL, 0)",
                params![
                    job.id as i64,
                    json(&job.request),
                    job.problem,
                    json(&Snapshot::fresh())
                ],
            )?;
            Ok(())
        })();
        self.note(result)
    }

    fn apply(&self, id: JobId, writes: &[Write]) -> StoreResult<u64> {
        let result = (|| -> StoreResult<u64> {
            let mut connection = self.connection.locked();
            let tx = connection.transaction()?;
            let (mut committed, mut written, mut bytes): (i64, i64, i64) = tx
                .query_row(
                    "SELECT committed, written, bytes FROM jobs WHERE id = ?1",
                    [id as i64],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .optional()?
                .ok_or_else(|| StoreError::Io(format!("job {id} is not in the store")))?;
            let mut snapshot = None;
            let mut ended = None;
            for write in writes {
                match write {
                    Write::Solutions { first, solutions } => {
                        if *first != written as u64 {
                            return Err(StoreError::Io(format!(
                                "job {id}: solutions from {first} written after {written}"
                            )));
                        }
                        if solutions.is_empty() {
                            continue;
                        }
                        let mut data = Vec::with_capacity(solutions.len() * 16);
                        let mut scratch = Vec::new();
                        for solution in solutions {
                            codec::encode_with(&mut data, solution, &mut scratch);
                        }
                        tx.execute(
                            "INSERT INTO solutions (job, first, count, data) VALUES (?1, ?2, ?3, ?4)",
                            params![id as i64, written, solutions.len() as i64, data],
                        )?;
                        written += solutions.len() as i64;
                        bytes += (data.len() as u64 + CHUNK_OVERHEAD) as i64;
                    }
                    Write::Snapshot(s) => {
                        committed = committed.max(as_sql(s.solutions).min(written));
                        snapshot = Some(json(s));
                    }
                    Write::Ended { solutions, message } => {
                        // Counted solutions past i64::MAX (a memoized count)
                        // must not wrap: they are not stored anyway.
                        committed = as_sql(*solutions).min(written);
                        ended = Some(message.clone());
                    }
                }
            }
            if let Some(message) = ended {
                tx.execute(
                    "UPDATE jobs SET committed = ?2, written = ?3, bytes = ?4, snapshot = NULL,
                     ended = ?5 WHERE id = ?1",
                    params![id as i64, committed, written, bytes, message],
                )?;
            } else if let Some(snapshot) = snapshot {
                tx.execute(
                    "UPDATE jobs SET committed = ?2, written = ?3, bytes = ?4, snapshot = ?5
                     WHERE id = ?1",
                    params![id as i64, committed, written, bytes, snapshot],
                )?;
            } else {
                tx.execute(
                    "UPDATE jobs SET written = ?2, bytes = ?3 WHERE id = ?1",
                    params![id as i64, written, bytes],
                )?;
            }
            tx.commit()?;
            Ok(bytes as u64)
        })();
        self.note(result)
    }

    fn resume(&self) -> StoreResult<Vec<StoredJob>> {
        let mut connection = self.connection.locked();
        let tx = connection.transaction()?;
        let raw: Vec<RawJob> = {
            let mut statement = tx.prepare(&format!(
                "SELECT {JOB_COLUMNS} FROM jobs WHERE ended IS NULL ORDER BY id"
            ))?;
            let rows = statement.query_map([], row_to_job)?;
            rows.collect::<Result<_, _>>()?
        };
        let mut jobs = Vec::new();
        for raw in raw {
            let mut job = raw.parse()?;
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
            let straddling: Option<(i64, i64, Vec<u8>)> = tx
                .query_row(
                    "SELECT first, count, data FROM solutions
                     WHERE job = ?1 AND first < ?2 AND first + count > ?2",
                    params![id, committed],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .optional()?;
            if let Some((first, count, data)) = straddling {
                let mut solutions = codec::decode(&data, count as usize)?;
                solutions.truncate((committed - first) as usize);
                let mut kept = Vec::new();
                for solution in &solutions {
                    codec::encode(&mut kept, solution);
                }
                tx.execute(
                    "UPDATE solutions SET count = ?3, data = ?4 WHERE job = ?1 AND first = ?2",
                    params![id, first, solutions.len() as i64, kept],
                )?;
            }
            tx.execute(
                "DELETE FROM solutions WHERE job = ?1 AND first >= ?2",
                params![id, committed],
            )?;
            let bytes: i64 = tx.query_row(
                "SELECT COALESCE(SUM(LENGTH(data)), 0) + COUNT(*) * ?2 FROM solutions WHERE job = ?1",
                params![id, CHUNK_OVERHEAD as i64],
                |row| row.get(0),
            )?;
            tx.execute(
                "UPDATE jobs SET written = committed, bytes = ?2 WHERE id = ?1",
                params![id, bytes],
            )?;
            job.bytes = bytes as u64;
            jobs.push(job);
        }
        tx.commit()?;
        Ok(jobs)
    }

    fn get(&self, id: JobId) -> StoreResult<Option<StoredJob>> {
        let connection = self.connection.locked();
        connection
            .query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"),
                [id as i64],
                row_to_job,
            )
            .optional()?
            .map(RawJob::parse)
            .transpose()
    }

    fn list(&self) -> StoreResult<Vec<StoredJob>> {
        let connection = self.connection.locked();
        // Listing needs neither the problems nor the snapshots, which can
        // be large.
        let mut statement = connection.prepare(
            "SELECT id, request, X'', committed, NULL, ended, bytes FROM jobs ORDER BY id",
        )?;
        let raw: Vec<RawJob> = statement
            .query_map([], row_to_job)?
            .collect::<Result<_, _>>()?;
        raw.into_iter().map(RawJob::parse).collect()
    }

    fn solutions(&self, id: JobId, from: u64, max: usize) -> StoreResult<Vec<SolutionIndices>> {
        let connection = self.connection.locked();
        let committed: Option<i64> = connection
            .query_row(
                "SELECT committed FROM jobs WHERE id = ?1",
                [id as i64],
                |row| row.get(0),
            )
            .optional()?;
        let Some(committed) = committed else {
            return Ok(Vec::new());
        };
        let end = (committed as u64).min(from.saturating_add(max as u64));
        let mut out = Vec::new();
        let mut next = from;
        while next < end {
            let got = chunks(&connection, id, next, 64)?;
            if got.is_empty() {
                return Err(StoreError::Corrupt(format!(
                    "job {id}: solution {next} is missing"
                )));
            }
            for (first, count, data) in got {
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
                if next >= end {
                    break;
                }
            }
        }
        Ok(out)
    }

    fn delete(&self, id: JobId) -> StoreResult<bool> {
        let result = (|| -> StoreResult<bool> {
            let connection = self.connection.locked();
            if self.read_only {
                return Err(StoreError::Unwritable {
                    cause: self.degraded().unwrap_or(Cause::ReadOnly),
                    detail: "opened read-only".into(),
                });
            }
            // On a full volume the reserve gives the log room for the
            // deletion's steps; it comes back when there is room again.
            let full = self.degraded() == Some(Cause::Full)
                || free_bytes(&self.dir).is_some_and(|free| free < MIN_FREE_BYTES);
            if full {
                let _ = std::fs::remove_file(&self.reserve);
            }
            Self::checkpoint(&connection);
            // The job first, in one small transaction: it is gone at once,
            // and its solutions (which only it can read) follow in steps
            // that each need little room. Solutions a crash leaves behind
            // are swept at the next start, and their job's id is not
            // given again (see `max_job_id`).
            connection.execute_batch("PRAGMA foreign_keys = OFF;")?;
            let job = connection.execute("DELETE FROM jobs WHERE id = ?1", [id as i64]);
            connection.execute_batch("PRAGMA foreign_keys = ON;")?;
            let job = job? > 0;
            let solutions = Self::delete_solutions(&connection, id as i64)?;
            Self::give_back(&connection)?;
            Ok(job || solutions)
        })();
        let deleted = self.note(result)?;
        // Room may have come back.
        self.writable();
        Ok(deleted)
    }

    fn degraded(&self) -> Option<Cause> {
        *self.degraded.locked()
    }

    fn writable(&self) -> Option<Cause> {
        if self.read_only {
            return self.degraded();
        }
        let cause = {
            let connection = self.connection.locked();
            self.probe(&connection)
        };
        *self.degraded.locked() = cause;
        cause
    }

    fn total_bytes(&self) -> StoreResult<u64> {
        let connection = self.connection.locked();
        let bytes: i64 =
            connection.query_row("SELECT COALESCE(SUM(bytes), 0) FROM jobs", [], |row| {
                row.get(0)
            })?;
        Ok(bytes as u64)
    }
}
