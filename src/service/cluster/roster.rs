//! The roster of connected remote workers, as the `ListWorkers` RPC and the
//! dashboard show them: each session writes its own row (at its start, at
//! each heartbeat and report, at its end) and readers copy the rows.
//!
//! It must not hold anything a session decides by (leases, books): it is a
//! picture of the sessions, written after the fact.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

/// One connected worker, as last written by its session.
#[derive(Debug, Clone)]
pub struct WorkerRow {
    /// The coordinator's id of the session, `worker-N`.
    pub id: String,
    /// The name the worker gave (its address if none).
    pub name: String,
    /// The worker's address as the coordinator sees it.
    pub address: String,
    /// Its task slots (threads).
    pub slots: usize,
    /// Leases it holds now.
    pub leases: usize,
    /// Nodes its runs reported since it joined (ended runs and live ones).
    pub nodes: u64,
    /// When it joined.
    pub joined: SystemTime,
    /// For the rate: when it joined, on the monotonic clock.
    pub joined_at: Instant,
    /// When its last message came.
    pub last_heartbeat: SystemTime,
    /// Reports it sent on leases it does not hold (fenced off, ignored).
    pub rejected_reports: u64,
}

impl WorkerRow {
    /// Nodes per second since it joined.
    pub fn nodes_per_second(&self) -> f64 {
        let seconds = self.joined_at.elapsed().as_secs_f64();
        if seconds <= 0.0 {
            0.0
        } else {
            self.nodes as f64 / seconds
        }
    }
}

/// The rows of the connected workers, by session id.
#[derive(Debug, Default)]
pub struct Roster {
    rows: Mutex<BTreeMap<u64, RosterRow>>,
}

/// A session's own row of the [`Roster`]: written after each message
/// without the roster's lock (one lock per row, not one for every session:
/// a lookup in a map of all the workers per message made a message cost
/// more with more workers).
#[derive(Debug, Clone)]
pub struct RosterRow(Arc<Mutex<WorkerRow>>);

impl RosterRow {
    /// Changes the row.
    pub fn update(&self, change: impl FnOnce(&mut WorkerRow)) {
        change(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn read(&self) -> WorkerRow {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Roster {
    /// Adds the row of session `number` (or writes it over); the handle
    /// that writes it from then on.
    pub fn write(&self, number: u64, row: WorkerRow) -> RosterRow {
        let handle = RosterRow(Arc::new(Mutex::new(row)));
        self.rows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(number, handle.clone());
        handle
    }

    /// Removes the row of a session that ended.
    pub fn remove(&self, number: u64) {
        self.rows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&number);
    }

    /// The connected workers, in the order they joined.
    pub fn rows(&self) -> Vec<WorkerRow> {
        let handles: Vec<RosterRow> = self
            .rows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        handles.iter().map(RosterRow::read).collect()
    }
}
