//! Opening the SQLite store: the data directory and its file, the locking
//! and journal modes, the schema (made in a new store, checked in an old
//! one), and the degraded ways to open (read-only, or after freeing the
//! reserve on a full volume). It must not read or write jobs: once open,
//! the store's calls are the parent module's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension};

use super::room::{AUTOCHECKPOINT_PAGES, JOURNAL_LIMIT_BYTES};
use super::SqliteStore;
use crate::service::store::{Cause, JobStore, StoreError, StoreResult};
use crate::service::sync::Locked;

/// The schema this build reads and writes.
const SCHEMA: &str = "xccd-jobs-1";

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
}
