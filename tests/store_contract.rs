//! The job store's contract, run on every store alike: the embedded SQLite
//! file and a real PostgreSQL server (started by the test, see
//! `common::postgres`; skipped where PostgreSQL is not installed unless
//! `XCCD_REQUIRE_POSTGRES=1`).
//!
//! What a store promises (`xccd::service::store`): a job's request (its
//! owner and request key too) and problem come back as written; solutions
//! are read back in order, only the committed ones, a page at a time from
//! any index; a batch of writes is all or nothing; a restart (`resume`)
//! drops what no snapshot committed, and the job goes on from there; an
//! ended job keeps its message and is not resumed; deleting forgets a job
//! and its solutions' bytes; one coordinator at a time. Then what only the
//! PostgreSQL store does: it survives a dropped connection and a server
//! restart, records its schema version and refuses a newer one, and maps a
//! read-only database to the store's cause.

mod common;

use xccd::run::Solutions;
use xccd::service::store::{
    Cause, JobStore, NewJob, PostgresStore, Snapshot, SqliteStore, StoreError, StoreResult,
    StoredRequest, StoredWork, Write,
};
use xccd::xcc::{Engine, Stats, Task};

/// Where a store lives: opened again and again, as restarts do.
trait Place {
    fn open(&self) -> StoreResult<Box<dyn JobStore>>;
}

struct Sqlite(tempfile::TempDir);

impl Place for Sqlite {
    fn open(&self) -> StoreResult<Box<dyn JobStore>> {
        Ok(Box::new(SqliteStore::open(self.0.path())?))
    }
}

struct Postgres(common::postgres::LocalPostgres);

impl Place for Postgres {
    fn open(&self) -> StoreResult<Box<dyn JobStore>> {
        Ok(Box::new(PostgresStore::open(&self.0.url())?))
    }
}

fn request(owner: Option<&str>, key: Option<(&str, &str)>) -> StoredRequest {
    StoredRequest {
        limit: Some(7),
        max_nodes: None,
        count_only: false,
        owner: owner.map(str::to_string),
        created_unix_seconds: 1_765_000_000.123_456,
        engine: Engine::Links,
        request_id: key.map(|(id, _)| id.to_string()),
        request_digest: key.map(|(_, digest)| digest.to_string()),
        memo: false,
        cheapest: Some(3),
        costs: true,
        preprocess_mems: Some(1 << 40),
    }
}

fn new_job(id: u64) -> NewJob {
    NewJob {
        id,
        request: request(Some("alice"), Some(("retry-1", "digest-1"))),
        // Any bytes: the store does not read the problem.
        problem: vec![0, 1, 2, 255, 0, 42, id as u8],
    }
}

/// Solution `i` of the tests: distinct, of varying length, unsorted.
fn solution(i: u64) -> Vec<u32> {
    let i = i as u32;
    let mut s = vec![i * 7 + 1_000_000, i, i % 13 + 100_000];
    s.truncate(1 + (i % 3) as usize);
    s
}

fn sorted(mut s: Vec<u32>) -> Vec<u32> {
    s.sort_unstable();
    s
}

fn batch(range: std::ops::Range<u64>) -> Write {
    let mut solutions = Solutions::new();
    for i in range.clone() {
        solutions.push(&solution(i));
    }
    Write::Solutions {
        first: range.start,
        solutions,
    }
}

fn snapshot(solutions: u64) -> Write {
    Write::Snapshot(snapshot_of(solutions))
}

fn snapshot_of(solutions: u64) -> Snapshot {
    Snapshot {
        solutions,
        stats: Stats {
            nodes: 1234 + solutions,
            solutions,
            ..Stats::default()
        },
        tasks: vec![StoredWork {
            task: Task::root(),
            skip: solutions,
            attempts: 2,
        }],
        finished_weight: 0.1 + solutions as f64 / 1e7,
        tasks_done: solutions / 10,
    }
}

fn expected(range: std::ops::Range<u64>) -> Vec<Vec<u32>> {
    range.map(|i| sorted(solution(i))).collect()
}

fn fresh_store_is_empty(place: &dyn Place) {
    let store = place.open().unwrap();
    assert_eq!(store.max_job_id().unwrap(), 0);
    assert!(store.list().unwrap().is_empty());
    assert!(store.get(1).unwrap().is_none());
    assert!(store.resume().unwrap().is_empty());
    assert_eq!(store.total_bytes().unwrap(), 0);
    assert!(store.solutions(1, 0, 10).unwrap().is_empty());
    assert!(!store.delete(1).unwrap());
    assert_eq!(store.writable(), None);
    assert_eq!(store.degraded(), None);
}

fn a_job_comes_back_as_written_after_a_restart(place: &dyn Place) {
    {
        let store = place.open().unwrap();
        store.create(&new_job(5)).unwrap();
        let mut other = new_job(3);
        other.request = request(None, None);
        store.create(&other).unwrap();
    }
    let store = place.open().unwrap();
    assert_eq!(store.max_job_id().unwrap(), 5);
    let job = store.get(5).unwrap().expect("job 5");
    assert_eq!(job.id, 5);
    assert_eq!(job.request, new_job(5).request);
    assert_eq!(job.request.owner.as_deref(), Some("alice"));
    let key = job.request.request_key().expect("its request key");
    assert_eq!(
        (key.id.as_str(), key.digest.as_str()),
        ("retry-1", "digest-1")
    );
    assert_eq!(job.problem, new_job(5).problem);
    assert_eq!(job.committed, 0);
    assert_eq!(job.snapshot, Some(Snapshot::fresh()));
    assert_eq!(job.ended, None);
    assert_eq!(job.bytes, 0);
    // Listed in id order, without problems and snapshots.
    let listed = store.list().unwrap();
    assert_eq!(listed.iter().map(|j| j.id).collect::<Vec<_>>(), [3, 5]);
    assert!(listed
        .iter()
        .all(|j| j.problem.is_empty() && j.snapshot.is_none()));
    assert_eq!(listed[0].request, request(None, None));
    assert_eq!(listed[1].request, new_job(5).request);
    let resumed = store.resume().unwrap();
    assert_eq!(resumed.iter().map(|j| j.id).collect::<Vec<_>>(), [3, 5]);
    assert_eq!(resumed[1].problem, new_job(5).problem);
}

fn only_committed_solutions_are_read_in_order_from_any_index(place: &dyn Place) {
    let store = place.open().unwrap();
    store.create(&new_job(1)).unwrap();
    // Three chunks in one transaction, then one more; a snapshot commits
    // 2,500 of the 3,500 written.
    let bytes = store
        .apply(1, &[batch(0..1000), batch(1000..2000), batch(2000..3000)])
        .unwrap();
    assert!(bytes > 0);
    assert!(
        store.solutions(1, 0, 10).unwrap().is_empty(),
        "none committed"
    );
    let bytes = store
        .apply(1, &[batch(3000..3500), snapshot(2500)])
        .unwrap();
    let job = store.get(1).unwrap().unwrap();
    assert_eq!(job.committed, 2500);
    assert_eq!(job.bytes, bytes);
    assert_eq!(job.snapshot, Some(snapshot_of(2500)));
    assert_eq!(store.total_bytes().unwrap(), bytes);
    assert_eq!(
        store.solutions(1, 0, usize::MAX).unwrap(),
        expected(0..2500)
    );
    // Pages across chunk boundaries, and past the committed end.
    for (from, max) in [
        (0, 1),
        (999, 2),
        (1500, 1000),
        (2499, 10),
        (2500, 10),
        (9999, 5),
    ] {
        let end = (from + max as u64).min(2500);
        assert_eq!(
            store.solutions(1, from, max).unwrap(),
            expected(from.min(end)..end),
            "from {from}, at most {max}"
        );
    }
    let mut paged = Vec::new();
    while paged.len() < 2500 {
        let page = store.solutions(1, paged.len() as u64, 333).unwrap();
        assert!(!page.is_empty());
        paged.extend(page);
    }
    assert_eq!(paged, expected(0..2500));
    // A later snapshot never takes back what one committed.
    store.apply(1, &[snapshot(2000)]).unwrap();
    assert_eq!(store.get(1).unwrap().unwrap().committed, 2500);
    assert!(store.solutions(2, 0, 10).unwrap().is_empty(), "another job");
}

fn a_restart_resumes_with_exactly_what_was_committed(place: &dyn Place) {
    let written = {
        let store = place.open().unwrap();
        store.create(&new_job(1)).unwrap();
        store.create(&new_job(2)).unwrap();
        store
            .apply(1, &[batch(0..1024), batch(1024..2048), snapshot(1500)])
            .unwrap();
        // Written, never committed: a crash now loses these.
        store.apply(1, &[batch(2048..3000)]).unwrap();
        store.apply(2, &[batch(0..10)]).unwrap();
        store.get(1).unwrap().unwrap().bytes
    };
    let store = place.open().unwrap();
    let resumed = store.resume().unwrap();
    assert_eq!(resumed.len(), 2);
    let one = &resumed[0];
    assert_eq!((one.id, one.committed), (1, 1500));
    assert_eq!(one.snapshot, Some(snapshot_of(1500)));
    assert_eq!(resumed[1].committed, 0);
    assert_eq!(resumed[1].bytes, 0);
    assert_eq!(
        store.solutions(1, 0, usize::MAX).unwrap(),
        expected(0..1500)
    );
    // The job goes on from its snapshot: the next solutions are numbered
    // from 1500 (the chunk that straddled it kept its committed part).
    assert!(
        0 < one.bytes && one.bytes < written,
        "{} of {written}",
        one.bytes
    );
    let bytes = store
        .apply(1, &[batch(1500..2600), snapshot(2600)])
        .unwrap();
    assert_eq!(store.get(1).unwrap().unwrap().bytes, bytes);
    assert_eq!(
        store.solutions(1, 0, usize::MAX).unwrap(),
        expected(0..2600)
    );
    assert_eq!(
        store.total_bytes().unwrap(),
        store.get(1).unwrap().unwrap().bytes + store.get(2).unwrap().unwrap().bytes
    );
    // Resuming again changes nothing that was committed.
    drop(store);
    let store = place.open().unwrap();
    assert_eq!(store.resume().unwrap()[0].committed, 2600);
    assert_eq!(
        store.solutions(1, 0, usize::MAX).unwrap(),
        expected(0..2600)
    );
}

fn a_batch_of_writes_is_all_or_nothing(place: &dyn Place) {
    let store = place.open().unwrap();
    store.create(&new_job(1)).unwrap();
    store.apply(1, &[batch(0..100), snapshot(100)]).unwrap();
    let before = store.get(1).unwrap().unwrap();
    // The second batch does not follow the first: nothing of it is kept.
    let error = store
        .apply(1, &[batch(100..200), batch(300..400), snapshot(400)])
        .unwrap_err();
    assert!(error.to_string().contains("written after"), "{error}");
    let after = store.get(1).unwrap().unwrap();
    assert_eq!(
        (after.committed, after.bytes),
        (before.committed, before.bytes)
    );
    assert_eq!(after.snapshot, Some(snapshot_of(100)));
    // And the job goes on where it was.
    store.apply(1, &[batch(100..200), snapshot(200)]).unwrap();
    assert_eq!(store.solutions(1, 0, usize::MAX).unwrap(), expected(0..200));
    // A job that is not there cannot be written.
    assert!(store.apply(9, &[snapshot(0)]).is_err());
}

fn an_ended_job_keeps_its_message_and_is_not_resumed(place: &dyn Place) {
    {
        let store = place.open().unwrap();
        store.create(&new_job(1)).unwrap();
        store.create(&new_job(2)).unwrap();
        store
            .apply(
                1,
                &[
                    batch(0..50),
                    Write::Ended {
                        solutions: 50,
                        message: b"the final job".to_vec(),
                    },
                ],
            )
            .unwrap();
        // A memoized count's solutions go past i64::MAX: none is stored,
        // and nothing wraps.
        store
            .apply(
                2,
                &[Write::Ended {
                    solutions: u64::MAX,
                    message: vec![9; 3],
                }],
            )
            .unwrap();
    }
    let store = place.open().unwrap();
    assert!(store.resume().unwrap().is_empty());
    let one = store.get(1).unwrap().unwrap();
    assert_eq!(one.ended.as_deref(), Some(&b"the final job"[..]));
    assert_eq!((one.committed, one.snapshot), (50, None));
    assert_eq!(store.solutions(1, 0, 100).unwrap(), expected(0..50));
    let two = store.get(2).unwrap().unwrap();
    assert_eq!((two.committed, two.ended), (0, Some(vec![9; 3])));
    let listed = store.list().unwrap();
    assert_eq!(listed[0].ended.as_deref(), Some(&b"the final job"[..]));
}

fn deleting_forgets_a_job_and_its_solutions(place: &dyn Place) {
    let store = place.open().unwrap();
    for id in 1..=3 {
        store.create(&new_job(id)).unwrap();
        store
            .apply(id, &[batch(0..2000), batch(2000..2100), snapshot(2100)])
            .unwrap();
    }
    let total = store.total_bytes().unwrap();
    let two = store.get(2).unwrap().unwrap().bytes;
    assert!(store.delete(2).unwrap());
    assert!(!store.delete(2).unwrap());
    assert!(store.get(2).unwrap().is_none());
    assert!(store.solutions(2, 0, 10).unwrap().is_empty());
    assert_eq!(store.total_bytes().unwrap(), total - two);
    assert_eq!(store.max_job_id().unwrap(), 3);
    assert_eq!(
        store.solutions(3, 0, usize::MAX).unwrap(),
        expected(0..2100)
    );
    drop(store);
    let store = place.open().unwrap();
    assert_eq!(
        store
            .list()
            .unwrap()
            .iter()
            .map(|j| j.id)
            .collect::<Vec<_>>(),
        [1, 3]
    );
}

fn one_coordinator_at_a_time(place: &dyn Place) {
    let first = place.open().unwrap();
    first.create(&new_job(1)).unwrap();
    let error = match place.open() {
        Ok(_) => panic!("a second store opened beside the first"),
        Err(error) => error,
    };
    assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
    assert!(
        error.to_string().contains("another xccd"),
        "the refusal says why: {error}"
    );
    // The first goes on, and once it is gone the next opens.
    first.apply(1, &[batch(0..10), snapshot(10)]).unwrap();
    drop(first);
    let second = place.open().unwrap();
    assert_eq!(second.get(1).unwrap().unwrap().committed, 10);
}

/// Each case, on each store.
macro_rules! contract {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $case() {
                    super::$case(&super::Sqlite(tempfile::tempdir().unwrap()));
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $case() {
                    if let Some(server) = super::common::postgres::server() {
                        super::$case(&super::Postgres(server));
                    }
                }
            )*
        }
    };
}

contract!(
    fresh_store_is_empty,
    a_job_comes_back_as_written_after_a_restart,
    only_committed_solutions_are_read_in_order_from_any_index,
    a_restart_resumes_with_exactly_what_was_committed,
    a_batch_of_writes_is_all_or_nothing,
    an_ended_job_keeps_its_message_and_is_not_resumed,
    deleting_forgets_a_job_and_its_solutions,
    one_coordinator_at_a_time,
);

/// The PostgreSQL store's own: a dropped connection and a restarted server
/// are connected again, and the call that met them succeeds; the
/// coordinator's lock is taken again with the connection.
#[test]
fn postgres_survives_a_dropped_connection_and_a_server_restart() {
    let Some(server) = common::postgres::server() else {
        return;
    };
    let url = server.url();
    let store = PostgresStore::open(&url).unwrap();
    store.create(&new_job(1)).unwrap();
    store.apply(1, &[batch(0..100), snapshot(100)]).unwrap();
    // An administrator ends the store's session.
    common::postgres::execute(
        &url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'xccd' AND pid <> pg_backend_pid()",
    )
    .unwrap();
    store.apply(1, &[batch(100..200), snapshot(200)]).unwrap();
    assert_eq!(store.solutions(1, 0, usize::MAX).unwrap(), expected(0..200));
    assert!(
        PostgresStore::open(&url).is_err(),
        "the lock came back with the connection"
    );
    // The server stops at once (as a crash would) and starts again.
    server.restart().unwrap();
    store.apply(1, &[batch(200..300), snapshot(300)]).unwrap();
    assert_eq!(store.solutions(1, 0, usize::MAX).unwrap(), expected(0..300));
    assert_eq!(store.writable(), None);
    assert!(PostgresStore::open(&url).is_err());
}

/// Migrations are recorded; a database of a newer schema is refused with
/// a clear error; an older one is brought up to date, once.
#[test]
fn postgres_records_its_schema_and_refuses_a_newer_one() {
    let Some(server) = common::postgres::server() else {
        return;
    };
    let url = server.url();
    drop(PostgresStore::open(&url).unwrap());
    drop(PostgresStore::open(&url).unwrap());
    let versions =
        common::postgres::query(&url, "SELECT version FROM schema_version ORDER BY version")
            .unwrap();
    let each: Vec<Vec<String>> = (1..=xccd::service::store::postgres::SCHEMA_VERSION)
        .map(|v| vec![v.to_string()])
        .collect();
    assert_eq!(versions, each, "every migration, once");
    common::postgres::execute(&url, "INSERT INTO schema_version (version) VALUES (999)").unwrap();
    let error = match PostgresStore::open(&url) {
        Ok(_) => panic!("a newer schema opened"),
        Err(error) => error.to_string(),
    };
    assert!(error.contains("schema version 999"), "{error}");
}

/// A database that cannot be written (here: read-only by its settings, as
/// a standby is) opens degraded, reads, and says why it cannot write.
#[test]
fn postgres_read_only_database_is_the_read_only_cause() {
    let Some(server) = common::postgres::server() else {
        return;
    };
    let url = server.url();
    {
        let store = PostgresStore::open(&url).unwrap();
        store.create(&new_job(1)).unwrap();
        store.apply(1, &[batch(0..10), snapshot(10)]).unwrap();
    }
    common::postgres::execute(
        &url,
        "ALTER DATABASE postgres SET default_transaction_read_only = on",
    )
    .unwrap();
    let store = PostgresStore::open(&url).unwrap();
    assert_eq!(store.degraded(), Some(Cause::ReadOnly));
    assert_eq!(store.solutions(1, 0, 100).unwrap(), expected(0..10));
    let error = store.create(&new_job(2)).unwrap_err();
    assert_eq!(error.cause(), Some(Cause::ReadOnly), "{error}");
    drop(store);
    common::postgres::execute(
        &url,
        "BEGIN READ WRITE;
         ALTER DATABASE postgres SET default_transaction_read_only = off;
         COMMIT",
    )
    .unwrap();
    let store = PostgresStore::open(&url).unwrap();
    assert_eq!(store.writable(), None);
    store.create(&new_job(2)).unwrap();
}

/// A wrong URL or an unreachable server fails the start at once, and the
/// message never shows the password.
#[test]
fn postgres_unreachable_fails_clearly_without_the_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://xccd:secret@127.0.0.1:{port}/jobs?connect_timeout=2");
    let error = match PostgresStore::open(&url) {
        Ok(_) => panic!("nothing listens there"),
        Err(error) => error.to_string(),
    };
    assert!(error.contains("cannot connect"), "{error}");
    assert!(!error.contains("secret"), "{error}");
    assert!(error.contains("xccd:***@127.0.0.1"), "{error}");
}

/// A store opened under a lease's fencing token (`open_fenced`, as a
/// coordinator among several writes): once the lease row has another token
/// (another coordinator took over), the database refuses every write, the
/// refusal says so, nothing of it is kept, and the fence leads no more.
#[test]
fn postgres_refuses_the_writes_of_a_fenced_off_leader() {
    use std::sync::Arc;
    use xccd::service::store::fence::Fence;
    let Some(server) = common::postgres::server() else {
        return;
    };
    let url = server.url();
    drop(PostgresStore::open(&url).unwrap());
    common::postgres::execute(
        &url,
        "INSERT INTO leader (id, holder, token, expires_at)
         VALUES (1, 'a:1', 7, now() + interval '1 hour')",
    )
    .unwrap();
    let fence = Arc::new(Fence::new());
    fence.lead(7, "a:1");
    let store = PostgresStore::open_fenced(&url, fence.clone(), 7).unwrap();
    store.create(&new_job(1)).unwrap();
    store.apply(1, &[batch(0..10), snapshot(10)]).unwrap();
    // Another coordinator takes over.
    common::postgres::execute(&url, "UPDATE leader SET token = 8, holder = 'b:1'").unwrap();
    let error = store.apply(1, &[batch(10..20), snapshot(20)]).unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Fenced {
                token: 7,
                now: Some(8)
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("no longer leads"), "{error}");
    assert!(!fence.leads(), "a fenced write makes it step down");
    assert!(matches!(
        store.create(&new_job(2)).unwrap_err(),
        StoreError::Fenced { .. }
    ));
    assert!(matches!(
        store.delete(1).unwrap_err(),
        StoreError::Fenced { .. }
    ));
    assert!(matches!(
        store.resume().unwrap_err(),
        StoreError::Fenced { .. }
    ));
    // Nothing of the refused writes was kept.
    assert_eq!(store.get(1).unwrap().unwrap().committed, 10);
    assert!(store.get(2).unwrap().is_none());
    // The new leader's store writes.
    let next = Arc::new(Fence::new());
    next.lead(8, "b:1");
    let store = PostgresStore::open_fenced(&url, next, 8).unwrap();
    store.apply(1, &[batch(10..20), snapshot(20)]).unwrap();
    assert_eq!(store.solutions(1, 0, usize::MAX).unwrap(), expected(0..20));
}
