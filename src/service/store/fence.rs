//! The fencing token of a coordinator that leads on a PostgreSQL store
//! (see [`crate::service::leader`]): what the lease says this process holds
//! now, shared by the lease's task (which sets it), the job store (whose
//! writes carry it) and the API's gate (which refuses calls without it).
//!
//! A token is a number the database hands out, one larger at each
//! takeover; 0 means "not the leader". The store checks its token inside
//! every write transaction against the lease row (`SELECT token FROM leader
//! WHERE id = 1 FOR SHARE`), so once another coordinator has taken over,
//! the old one's writes are refused by the database itself, whatever the
//! old one believes.

use std::sync::Mutex;

use tokio::sync::watch;

use crate::service::sync::Locked;

/// The lease's table, one row (`id = 1`): made by migration 2 of the
/// PostgreSQL store.
pub const LEADER_TABLE: &str = "leader";

/// This process's token (0: standby) and the leader's address as last seen.
pub struct Fence {
    token: watch::Sender<i64>,
    leader: Mutex<Option<String>>,
}

impl std::fmt::Debug for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fence")
            .field("token", &self.token())
            .field("leader", &self.leader())
            .finish()
    }
}

impl Default for Fence {
    fn default() -> Self {
        Fence::new()
    }
}

impl Fence {
    pub fn new() -> Fence {
        Fence {
            token: watch::Sender::new(0),
            leader: Mutex::new(None),
        }
    }

    /// The token this process leads with, 0 if it does not.
    pub fn token(&self) -> i64 {
        *self.token.borrow()
    }

    /// Whether this process leads now.
    pub fn leads(&self) -> bool {
        self.token() != 0
    }

    /// Leads with `token` (taken from the database), at `me`.
    pub fn lead(&self, token: i64, me: &str) {
        *self.leader.locked() = Some(me.to_string());
        self.token.send_replace(token);
    }

    /// Leads no more if it led with `token`; `leader` is the new one's
    /// address, if known. True if this changed anything.
    pub fn lose(&self, token: i64, leader: Option<String>) -> bool {
        let lost = self.token.send_if_modified(|now| {
            let was = *now == token && token != 0;
            if was {
                *now = 0;
            }
            was
        });
        if lost || leader.is_some() {
            *self.leader.locked() = leader;
        }
        lost
    }

    /// Records the leader's address as seen by a standby.
    pub fn set_leader(&self, leader: Option<String>) {
        *self.leader.locked() = leader;
    }

    /// The leader's advertised address, as last seen (None: unknown).
    pub fn leader(&self) -> Option<String> {
        self.leader.locked().clone()
    }

    /// Changes of the token, for a task that waits for one.
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.token.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_lost_only_by_its_holder() {
        let fence = Fence::new();
        assert!(!fence.leads());
        fence.lead(3, "a:1");
        assert!(!fence.lose(2, None), "an older token loses nothing");
        assert_eq!(fence.token(), 3);
        assert!(fence.lose(3, Some("b:1".into())));
        assert_eq!(fence.token(), 0);
        assert_eq!(fence.leader().as_deref(), Some("b:1"));
        assert!(!fence.lose(0, None), "0 is nobody's token");
    }
}
