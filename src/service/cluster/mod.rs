//! Remote workers: the coordinator's service and the worker process.
//!
//! Users whose searches outgrow one machine run `xccd worker` processes that
//! connect out to one `xccd serve` (the coordinator). The remote workers'
//! task slots join the pool's scheduler beside the local threads
//! (`serve --threads 0` has none); tasks move over one bidirectional gRPC
//! stream per worker (`proto/xccd/cluster/v1/worker.proto`).
//!
//! The guarantees rest on the engine's determinism: a task's solutions come
//! in the same order on every run.
//!
//! - **Leases.** A task handed to a worker is a lease (an id never reused,
//!   and an epoch counting the task's lost attempts). Workers heartbeat; a
//!   worker silent past the lease timeout, or whose connection breaks, loses
//!   all its leases, and their tasks are queued again.
//! - **Exactly-once delivery.** Each report of solutions carries the index of
//!   its first solution in the task's order. The coordinator keeps, per
//!   lease, how many it has delivered and drops the ones it already has. A
//!   task queued again after a loss carries that count (`skip`), so the next
//!   run reports only what is new.
//! - **Give-aways** (asked when a slot is idle and nothing is queued) take
//!   the upper part of a node's untried range, all of it after anything
//!   the run has found. The coordinator records each as a *cut* on the
//!   lease's task, so a rerun of the task neither repeats the given work nor
//!   shifts the solution indices before the cut. A run gives nothing away
//!   and does not checkpoint before it has caught up with `skip`.
//! - **Fencing.** A report on a lease the worker no longer holds (another id,
//!   or an old epoch) is ignored: a stalled or partitioned worker can never
//!   double-count.
//! - **Poison tasks.** A task lost `max_attempts` times in a row at the same
//!   point of its run fails its job with a clear error instead of taking
//!   down one worker after another; workers killed or partitioned from
//!   outside lose runs wherever they are, which does not (`Ledger::lose`
//!   argues the rule). A lost task waits a backoff before it runs again.
//! - **Draining.** A worker asked to stop checkpoints its runs back to the
//!   coordinator before it exits.
//!
//! Jobs with a side condition (some puzzles) are checked by code that only
//! local threads run; their tasks are never leased.

pub mod audit;
pub mod coordinator;
pub(crate) mod fingerprint;
pub mod proto;
pub mod roster;
pub mod sim;
pub mod simulate;
pub mod worker;

pub use audit::AuditConfig;
pub use coordinator::{ClusterConfig, CoordinatorApi};
pub use worker::{WorkerConfig, WorkerError};
