//! Reading the SQLite store's rows: a job row into a [`StoredJob`], and the
//! chunks of solutions from a given index on. It must not write: the
//! parent module's calls do, in their transactions.

use rusqlite::{params, Connection, OptionalExtension};

use crate::service::job::JobId;
use crate::service::store::parse;
use crate::service::store::{Snapshot, StoreResult, StoredJob, StoredRequest};

pub(super) fn row_to_job(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawJob> {
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

pub(super) const JOB_COLUMNS: &str = "id, request, problem, committed, snapshot, ended, bytes";

pub(super) struct RawJob {
    id: i64,
    request: String,
    problem: Vec<u8>,
    committed: i64,
    snapshot: Option<String>,
    ended: Option<Vec<u8>>,
    bytes: i64,
}

impl RawJob {
    pub(super) fn parse(self) -> StoreResult<StoredJob> {
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
pub(super) fn chunks(
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
