//! The PostgreSQL store's schema: numbered migrations, applied at start,
//! and the fencing check every write transaction of a leader makes.

use postgres::{Client, GenericClient};

use super::{StoreError, StoreResult};

/// The advisory locks' first key: "xccd".
pub const LOCK_CLASS: i32 = 0x7863_6364;
/// The second key of the migrations' transaction lock.
const MIGRATION_LOCK: i32 = 2;

/// The migrations, in order: `(version, statements)`. A migration once
/// released is never changed; a change of schema is a new one.
pub(super) const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE jobs (
         id BIGINT PRIMARY KEY,
         request TEXT NOT NULL,
         problem BYTEA NOT NULL,
         committed BIGINT NOT NULL,
         written BIGINT NOT NULL,
         snapshot TEXT,
         ended BYTEA,
         bytes BIGINT NOT NULL,
         last_write BIGINT);
     CREATE TABLE solutions (
         job BIGINT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
         first BIGINT NOT NULL,
         count BIGINT NOT NULL,
         data BYTEA NOT NULL,
         PRIMARY KEY (job, first));",
    ),
    // Several coordinators, one leader (see crate::service::leader): the
    // lease, one row, and its fencing token.
    (
        2,
        "CREATE TABLE leader (
             id INTEGER PRIMARY KEY CHECK (id = 1),
             holder TEXT NOT NULL,
             token BIGINT NOT NULL,
             expires_at TIMESTAMPTZ NOT NULL,
             locked BOOLEAN NOT NULL DEFAULT false);",
    ),
];

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// The schema version of the database (0 for a new one), read without
/// writing: a database that is read-only and up to date opens, degraded.
fn schema_version(client: &mut impl postgres::GenericClient) -> StoreResult<i32> {
    let exists: bool = client
        .query_one("SELECT to_regclass('schema_version') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])?
        .get(0))
}

/// Applies the migrations this database lacks, in one transaction under
/// the migrations' lock (two coordinators starting at once migrate once).
pub(super) fn migrate(client: &mut Client) -> StoreResult<()> {
    let newer = |current: i32| {
        StoreError::Io(format!(
            "it holds jobs of schema version {current}, and this xccd knows versions up to \
             {SCHEMA_VERSION}: run a newer xccd"
        ))
    };
    match schema_version(client)? {
        SCHEMA_VERSION => return Ok(()),
        current if current > SCHEMA_VERSION => return Err(newer(current)),
        _ => {}
    }
    let mut tx = client.transaction()?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_CLASS, &MIGRATION_LOCK],
    )?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_version (
             version INTEGER PRIMARY KEY,
             applied TIMESTAMPTZ NOT NULL DEFAULT now())",
    )?;
    let current = schema_version(&mut tx)?;
    if current > SCHEMA_VERSION {
        return Err(newer(current));
    }
    for (version, statements) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.batch_execute(statements)?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[version],
        )?;
        tracing::info!(version, "job store schema migrated");
    }
    tx.commit()?;
    Ok(())
}

/// Refuses a write transaction unless `token` (a fenced store's, None for
/// an unfenced one) still holds the lease: the row is locked FOR SHARE, so
/// a takeover (an UPDATE of it) waits for the writes that checked it, and
/// every write after the takeover sees the new token.
pub(super) fn check_fence(tx: &mut impl GenericClient, token: Option<i64>) -> StoreResult<()> {
    let Some(mine) = token else {
        return Ok(());
    };
    let now: Option<i64> = tx
        .query_opt("SELECT token FROM leader WHERE id = 1 FOR SHARE", &[])?
        .map(|row| row.get(0));
    if now == Some(mine) {
        return Ok(());
    }
    Err(StoreError::Fenced { token: mine, now })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order() {
        let versions: Vec<i32> = MIGRATIONS.iter().map(|(v, _)| *v).collect();
        let expected: Vec<i32> = (1..=MIGRATIONS.len() as i32).collect();
        assert_eq!(versions, expected);
    }
}
