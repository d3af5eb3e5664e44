//! A real PostgreSQL server for a test: `initdb` in a temporary directory
//! and `pg_ctl` on a free loopback port (as the `postgres` user when the
//! tests run as root), stopped and removed when dropped; see
//! `xccd::service::store::local_postgres`.
//!
//! Where PostgreSQL is not installed a test skips, saying so, unless
//! `XCCD_REQUIRE_POSTGRES=1` (as `.ci/run` sets): then it fails. A server
//! that is installed but does not start always fails.

pub use xccd::service::store::local_postgres::LocalPostgres;
use xccd::service::store::postgres::describe;

/// Whether a missing PostgreSQL fails the tests.
pub fn required() -> bool {
    std::env::var("XCCD_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// A server of the test's own, or None (after a note) when PostgreSQL is
/// not installed and not required.
pub fn server() -> Option<LocalPostgres> {
    server_also_at(&[])
}

/// The same, listening on `also` too and trusting the hosts there (see
/// [`LocalPostgres::start_also_at`]).
pub fn server_also_at(also: &[std::net::IpAddr]) -> Option<LocalPostgres> {
    if xccd::service::store::local_postgres::bin_dir().is_none() {
        let why = "no PostgreSQL (initdb, pg_ctl) on this machine: install Debian's postgresql \
                   package, or set XCCD_POSTGRES_BIN";
        assert!(!required(), "XCCD_REQUIRE_POSTGRES=1, but {why}");
        eprintln!("SKIPPED: {why} (XCCD_REQUIRE_POSTGRES=1 makes this a failure)");
        return None;
    }
    match LocalPostgres::start_also_at(also) {
        Ok(server) => Some(server),
        Err(why) => panic!("PostgreSQL is installed but does not start: {why}"),
    }
}

/// Runs `sql` on the server's database as its superuser (from a thread of
/// its own: the sync client must not run on an async runtime's thread).
pub fn execute(url: &str, sql: &str) -> Result<(), String> {
    let (url, sql) = (url.to_string(), sql.to_string());
    std::thread::spawn(move || {
        let mut client =
            postgres::Client::connect(&url, postgres::NoTls).map_err(|e| describe(&e))?;
        client.batch_execute(&sql).map_err(|e| describe(&e))
    })
    .join()
    .expect("the SQL thread")
}

/// The rows of `sql`, each column as text (NULL as "NULL").
pub fn query(url: &str, sql: &str) -> Result<Vec<Vec<String>>, String> {
    let (url, sql) = (url.to_string(), sql.to_string());
    std::thread::spawn(move || {
        let mut client =
            postgres::Client::connect(&url, postgres::NoTls).map_err(|e| describe(&e))?;
        let messages = client.simple_query(&sql).map_err(|e| describe(&e))?;
        Ok(messages
            .into_iter()
            .filter_map(|message| match message {
                postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).unwrap_or("NULL").to_string())
                        .collect(),
                ),
                _ => None,
            })
            .collect())
    })
    .join()
    .expect("the SQL thread")
}
