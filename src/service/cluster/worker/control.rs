//! What a worker's run is told at its polls: the coordinator's latest ask,
//! kept where the run's thread reads it, and the rule that turns it into
//! the engine's [`Control`].
//!
//! The rule is apart from the connection because it is shared: the
//! simulated cluster (`cluster::simulate`) answers its runs' polls by it, so
//! that what it measures is what a real worker does. This file must not know
//! the connection or the coordinator's messages beyond the [`AskKind`] they
//! carry; `worker.rs` holds those and re-exports the rule.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use crate::run::Control;
use crate::service::cluster::proto::AskKind;
use crate::service::metrics as metric;
use crate::service::pool::LiveProgress;

/// Whether a new ask replaces the pending `old` one: a revocation is
/// final, nothing overrides it.
pub(crate) fn overrides(old: AskKind) -> bool {
    old != AskKind::Revoke
}

/// What a run is told at a poll, from the coordinator's pending ask; and
/// whether the ask is taken by it (a give-away is advice, taken once).
/// The real worker's rule, and the simulated cluster's
/// (`cluster::simulate`).
pub(crate) fn control_for(pending: AskKind, draining: bool) -> (Control, bool) {
    match pending {
        AskKind::Revoke => (Control::Stop, false),
        AskKind::Checkpoint if draining => (Control::Release, false),
        AskKind::Checkpoint => (Control::Checkpoint, false),
        AskKind::GiveAway => (Control::GiveAway, true),
        AskKind::Unspecified => (Control::Continue, false),
    }
}

/// What the async side tells a running task, and reads of its progress.
#[derive(Default)]
pub(super) struct RunControl {
    /// An [`AskKind`] as a number: the coordinator's latest request.
    ask: AtomicU8,
    /// The worker is draining: a run that cannot checkpoint yet gives its
    /// lease back instead.
    pub(super) draining: AtomicBool,
    pub(super) progress: LiveProgress,
    /// The run's nodes already counted in `xccd_worker_nodes_total`.
    counted: AtomicU64,
}

impl RunControl {
    pub(super) fn ask(&self, kind: AskKind) {
        let kind = kind as u8;
        let _ = self
            .ask
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |old| {
                let old = AskKind::try_from(i32::from(old)).unwrap_or(AskKind::Unspecified);
                overrides(old).then_some(kind)
            });
    }

    /// The pending request.
    pub(super) fn pending(&self) -> AskKind {
        AskKind::try_from(i32::from(self.ask.load(Ordering::SeqCst)))
            .unwrap_or(AskKind::Unspecified)
    }

    /// Counts the run's nodes up to `nodes` (its total so far) in
    /// `xccd_worker_nodes_total`, those not counted yet.
    pub(super) fn count_nodes(&self, nodes: u64) {
        let before = self.counted.fetch_max(nodes, Ordering::SeqCst);
        if nodes > before {
            metrics::counter!(metric::WORKER_NODES).increment(nodes - before);
        }
    }

    /// Marks a request as handled, unless a newer one replaced it.
    pub(super) fn handled(&self, kind: AskKind) {
        let _ = self
            .ask
            .compare_exchange(kind as u8, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}
