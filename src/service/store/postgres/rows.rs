//! The SQL of the PostgreSQL store's job rows and solution chunks: a batch
//! of writes encoded on the caller's thread and applied in one transaction
//! (its chunks in one multi-row INSERT, its token recognizing a retry that
//! already committed), resuming the unfinished jobs, and reading the
//! committed chunks of a range. It must not connect or retry: its functions
//! run on a client the session gives them.

use postgres::Client;

use super::schema::check_fence;

use crate::service::job::JobId;
use crate::service::store::{
    as_sql, codec, json, parse, Snapshot, StoreError, StoreResult, StoredJob, StoredRequest, Write,
};

/// Bytes a chunk row costs beside its solutions, roughly (as SQLite's).
pub(super) const CHUNK_OVERHEAD: u64 = 24;

/// A change of [`Write`], its solutions already encoded (by the caller's
/// thread, not the store's).
pub(super) enum Change {
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

pub(super) fn changes(writes: &[Write]) -> Vec<Change> {
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

pub(super) const JOB_COLUMNS: &str = "id, request, problem, committed, snapshot, ended, bytes";

pub(super) fn raw_job(row: &postgres::Row) -> StoreResult<StoredJob> {
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

/// A stored chunk: its first solution's index, how many, their bytes.
pub(super) type Chunk = (u64, u64, Vec<u8>);

/// Reads the chunks of job `id` that hold solutions `from..end`, in order
/// (and `end`: the committed ones' end, or `from + max` before it).
pub(super) fn read_chunks(
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

pub(super) fn apply_changes(
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
pub(super) fn resume_jobs(client: &mut Client, fence: Option<i64>) -> StoreResult<Vec<StoredJob>> {
    let mut tx = client.transaction()?;
    check_fence(&mut tx, fence)?;
    let rows = tx.query(
        &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE ended IS NULL ORDER BY id FOR UPDATE"),
        &[],
    )?;
    let mut jobs = Vec::new();
    for row in &rows {
        let mut job = raw_job(row)?;
        job.check_resumable()?;
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
            let (kept, count) =
                codec::keep_first(&data, count as usize, (committed - first) as usize)?;
            tx.execute(
                "UPDATE solutions SET count = $3, data = $4 WHERE job = $1 AND first = $2",
                &[&id, &first, &(count as i64), &kept],
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
