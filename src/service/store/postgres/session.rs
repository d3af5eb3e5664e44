//! The PostgreSQL store's connection, on the store's thread: connecting
//! (again, after a drop), taking the coordinator's session lock, bringing
//! the schema up to date, and running an operation with one retry. It must
//! not hold the SQL of jobs: the operations it runs are given to it.

use std::time::{Duration, Instant};

use postgres::{Client, Config, NoTls};

use super::messages::describe;
use super::schema::migrate;
use super::LOCK_CLASS;
use crate::service::store::{StoreError, StoreResult};

/// The second key of the coordinator's session lock.
const COORDINATOR_LOCK: i32 = 1;
/// How long a start waits for the coordinator's lock: a killed
/// predecessor's connection may take a moment to be seen closed.
const LOCK_WAIT: Duration = Duration::from_secs(3);
/// How long a dropped connection is tried again before a call fails.
const RECONNECT_FOR: Duration = Duration::from_secs(10);

/// The connection, on the store's thread.
pub(super) struct Session {
    pub(super) config: Config,
    pub(super) place: String,
    pub(super) client: Option<Client>,
    /// Takes the coordinator's advisory lock (an unfenced store).
    pub(super) lock: bool,
}

impl Session {
    fn open_error(&self, message: String) -> StoreError {
        StoreError::Open {
            path: self.place.clone(),
            message,
        }
    }

    /// Connects, takes the coordinator's lock and brings the schema up to
    /// date; tries again for `patience` while the server cannot be reached.
    pub(super) fn connect(&mut self, patience: Duration) -> StoreResult<&mut Client> {
        if self.client.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(self.client.as_mut().expect("checked"));
        }
        self.client = None;
        let start = Instant::now();
        let mut pause = Duration::from_millis(50);
        let mut client = loop {
            match self.config.connect(NoTls) {
                Ok(client) => break client,
                // A refusal by the server itself (a wrong password, no such
                // database) does not pass by waiting.
                Err(error) if error.as_db_error().is_some() || start.elapsed() >= patience => {
                    return Err(self.open_error(format!("cannot connect: {}", describe(&error))))
                }
                Err(error) => {
                    tracing::debug!(%error, "the job store's database cannot be reached yet");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        };
        let start = Instant::now();
        // A fenced store writes under the lease's token instead.
        let mut locked = !self.lock;
        while !locked {
            locked = client
                .query_one(
                    "SELECT pg_try_advisory_lock($1, $2)",
                    &[&LOCK_CLASS, &COORDINATOR_LOCK],
                )?
                .get(0);
            if !locked && start.elapsed() >= LOCK_WAIT {
                return Err(self.open_error(
                    "another xccd coordinator uses this database (opened alone, without the \
                     leadership of `xccd serve`); stop it or give this one its own database"
                        .into(),
                ));
            }
            if !locked {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        migrate(&mut client).map_err(|e| match e {
            StoreError::Io(message) => self.open_error(message),
            other => other,
        })?;
        Ok(self.client.insert(client))
    }

    /// Runs `op` on the connection; if the connection turns out dropped, connects
    /// again and runs it once more (`op` must be safe to repeat).
    pub(super) fn run<T>(&mut self, op: &dyn Fn(&mut Client) -> StoreResult<T>) -> StoreResult<T> {
        let client = self.connect(RECONNECT_FOR)?;
        let error = match op(client) {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        if !client.is_closed() && client.is_valid(Duration::from_secs(5)).is_ok() {
            return Err(error);
        }
        tracing::warn!(%error, "the job store's connection dropped; connecting again");
        self.client = None;
        let client = self.connect(RECONNECT_FOR)?;
        op(client)
    }
}
