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
//!
//! This file owns the store's type and its [`JobStore`] calls: the job rows
//! and solution chunks each call writes, in one transaction. Its parts own
//! the rest, and none names another's back: [`open`] (opening a data
//! directory, the schema, read-only and refused stores), [`room`] (the
//! volume's free room, the reserve, deletion in small steps, the write
//! probe) and [`rows`] (reading job rows and solution chunks). It must not
//! decide when to snapshot or what a job holds (that is the durable layer's,
//! [`crate::service::durable`]): it writes what it is given, in order.

mod open;
mod room;
mod rows;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use self::room::{free_bytes, MIN_FREE_BYTES};
use self::rows::{chunks, row_to_job, RawJob, JOB_COLUMNS};
use super::{
    as_sql, codec, json, Cause, JobStore, NewJob, Snapshot, StoreError, StoreResult, StoredJob,
    Write,
};
use crate::run::SolutionIndices;
use crate::service::job::JobId;
use crate::service::sync::Locked;

/// Bytes a chunk row costs beside its solutions, roughly.
const CHUNK_OVERHEAD: u64 = 24;

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

impl SqliteStore {
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

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
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
            job.check_resumable()?;
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
                let (kept, count) =
                    codec::keep_first(&data, count as usize, (committed - first) as usize)?;
                tx.execute(
                    "UPDATE solutions SET count = ?3, data = ?4 WHERE job = ?1 AND first = ?2",
                    params![id, first, count as i64, kept],
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
