//! Room on the SQLite store's volume: its free bytes, the reserve kept to
//! let a deletion through on a full disk, deleting a job's solutions and
//! giving their pages back in small steps, the one VACUUM an old store
//! needs, and the probe that says whether the store can take new durable
//! jobs. It must not decide which jobs go: it deletes what it is asked to.

use std::path::Path;

use rusqlite::{params, Connection};

use super::SqliteStore;
use crate::service::store::{Cause, StoreError, StoreResult};
use crate::service::sync::Locked;

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
pub(super) const MIN_FREE_BYTES: u64 = 2 << 20;
/// Solution chunks deleted per transaction (a chunk holds up to 1,024
/// solutions; its row and index entries log a few pages).
const DELETE_ROWS: i64 = 64;
/// Pages given back to the volume per transaction of `incremental_vacuum`:
/// each page moved into a freed one is logged once.
const VACUUM_PAGES: i64 = 64;
/// The log is checkpointed at about this many pages (SQLite's default is
/// 1,000), and cut back to `JOURNAL_LIMIT_BYTES` after: a log that keeps
/// megabytes is room a full volume lacks.
pub(super) const AUTOCHECKPOINT_PAGES: i64 = 256;
pub(super) const JOURNAL_LIMIT_BYTES: i64 = 1 << 20;

/// Bytes free for this process on the volume of `dir` (None if unknown).
pub(super) fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `stat` a valid buffer.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

impl SqliteStore {
    /// Commits the log into the file, and shrinks the log.
    pub(super) fn checkpoint(connection: &Connection) {
        let _ = connection.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }

    /// A store made before auto_vacuum was INCREMENTAL (auto_vacuum only
    /// changes when a VACUUM rewrites the file) gets it now, when the
    /// volume has room for the copy a VACUUM makes; otherwise deleted jobs
    /// leave their pages free inside the file, for new jobs, and the next
    /// start tries again.
    pub(super) fn vacuum_once(connection: &Connection, dir: &Path) {
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
    pub(super) fn give_back(connection: &Connection) -> StoreResult<()> {
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
    pub(super) fn delete_solutions(connection: &Connection, id: i64) -> StoreResult<bool> {
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
    pub(super) fn sweep(&self) {
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
    pub(super) fn probe(&self, connection: &Connection) -> Option<Cause> {
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
}
