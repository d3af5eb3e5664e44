//! The coordinator's side of the cluster protocol: one [`Session`] per
//! connected worker, holding that worker's leases.
//!
//! A session is the only place a lease lives, so fencing is a map lookup:
//! a report on a lease this session does not hold, under the same epoch, is
//! ignored. A session ends when its stream does or when the worker has been
//! silent for the lease timeout; every lease it still holds is then *lost*
//! and its task goes back to the pool's queue with the cuts of what it gave
//! away and the number of solutions it delivered (see [`super`]).
//!
//! This file owns the service workers connect to (the token, the Hello,
//! the Welcome) and the protocol's timing; [`session`] the session loop and
//! its books, [`steering`] what leases are asked (the pool's policy, as on
//! local threads), [`reports`] the checks of reported solutions. It must not
//! hold leases itself.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::proto::{
    self as pb, coordinator_message::Kind as Out, coordinator_server, worker_message::Kind as In,
};
use crate::service::cluster::audit::{AuditConfig, Auditor};
use crate::service::credentials::WorkerToken;
use crate::service::pool::Pool;

mod reports;
mod session;
pub(crate) mod steering;
#[cfg(test)]
mod tests;

use crate::service::metrics as metric;
use session::Session;

/// Timing of the protocol, chosen by the coordinator and told to workers.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// How often workers send a heartbeat.
    pub heartbeat_interval: Duration,
    /// A worker silent for this long loses its leases.
    pub lease_timeout: Duration,
    /// Workers must present this token (unless client certificates
    /// authenticate them; with both, both are required).
    pub token: Option<WorkerToken>,
    /// A lease whose run reports no new node for this long (a stuck or
    /// hostile worker that still heartbeats) is revoked, and its task runs
    /// elsewhere.
    pub stall_timeout: Duration,
    /// Which finished leases are run again and compared (see
    /// [`crate::service::cluster::audit`]).
    pub audit: AuditConfig,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            heartbeat_interval: Duration::from_secs(1),
            lease_timeout: Duration::from_secs(5),
            token: None,
            stall_timeout: Duration::from_secs(30),
            audit: AuditConfig::default(),
        }
    }
}

/// How often a session asks a give-away again while a slot elsewhere is
/// hungry and its ask has not been answered (see
/// [`steering::give_ask_due`]); the simulated cluster's look.
pub(crate) const TICK: Duration = Duration::from_millis(20);
/// How long a session holding leases goes without looking at them when
/// nothing wakes it and no deadline of theirs comes: a safety net for a
/// change that is not signalled (see `session::Session::run`).
pub(crate) const HOLDING_LOOK: Duration = Duration::from_millis(500);
/// How often a session with an idle slot looks for a task unasked: a
/// safety net, since it is woken when one is queued.
const IDLE_LOOK: Duration = Duration::from_millis(500);
/// How long a remote run keeps its slot while another job waits. Longer
/// than the local time slice: asking costs a round trip.
pub(crate) const REMOTE_SLICE: Duration = Duration::from_millis(50);
/// Problems a worker keeps; the session mirrors the worker's cache (both
/// see the same leases in the same order) to know what to send.
pub const PROBLEM_CACHE: usize = 16;
/// The largest message either side accepts (a problem's text).
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The gRPC service remote workers connect to.
pub struct CoordinatorApi {
    pool: Arc<Pool>,
    config: ClusterConfig,
    next_lease: Arc<AtomicU64>,
    next_worker: AtomicU64,
    auditor: Arc<Auditor>,
}

/// Where this process's lease ids start: from the clock, in steps of 2^32.
fn first_lease_id() -> u64 {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (seconds & 0x7fff_ffff) << 32 | 1
}

impl CoordinatorApi {
    pub fn new(pool: Arc<Pool>, config: ClusterConfig) -> CoordinatorApi {
        CoordinatorApi {
            auditor: Auditor::new(pool.clone(), config.audit.clone()),
            pool,
            config,
            // Lease ids of a restarted coordinator never meet its previous
            // life's: a worker still holding an old lease cannot report on
            // a new one (leases are also bound to their session).
            next_lease: Arc::new(AtomicU64::new(first_lease_id())),
            next_worker: AtomicU64::new(1),
        }
    }

    pub fn into_server(self) -> coordinator_server::CoordinatorServer<CoordinatorApi> {
        coordinator_server::CoordinatorServer::new(self)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }
}

type OutStream =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::CoordinatorMessage, Status>> + Send>>;

#[tonic::async_trait]
impl coordinator_server::Coordinator for CoordinatorApi {
    type WorkStream = OutStream;

    async fn work(
        &self,
        request: Request<Streaming<pb::WorkerMessage>>,
    ) -> Result<Response<OutStream>, Status> {
        let peer = request
            .remote_addr()
            .map_or_else(|| "unknown".to_string(), |a| a.to_string());
        let address = peer.clone();
        if let Some(token) = &self.config.token {
            let header = request
                .metadata()
                .get("authorization")
                .map(|v| v.as_bytes());
            if !token.admits(header) {
                metrics::counter!(metric::WORKER_AUTH_FAILURES).increment(1);
                tracing::warn!(%peer, "a worker without the right token was refused");
                return Err(Status::unauthenticated(
                    "this coordinator takes workers that present its worker token \
                     (authorization: Bearer TOKEN)",
                ));
            }
        }
        let mut inbound = request.into_inner();
        let first = tokio::time::timeout(self.config.lease_timeout, inbound.message()).await;
        let hello = match first {
            Ok(Ok(Some(pb::WorkerMessage {
                kind: Some(In::Hello(hello)),
            }))) => hello,
            Ok(Err(status)) => return Err(status),
            Err(_) => {
                return Err(Status::deadline_exceeded(
                    "no Hello from the worker in time",
                ))
            }
            _ => {
                return Err(Status::invalid_argument(
                    "the first message must be a Hello",
                ))
            }
        };
        if hello.protocol != pb::PROTOCOL_VERSION {
            return Err(Status::failed_precondition(format!(
                "hello.protocol: this coordinator speaks protocol {}, the worker {}; run the same xccd version on both",
                pb::PROTOCOL_VERSION,
                hello.protocol
            )));
        }
        if !(1..=4096).contains(&hello.threads) {
            return Err(Status::invalid_argument(format!(
                "hello.threads: {} is not in 1..=4096",
                hello.threads
            )));
        }
        let number = self.next_worker.fetch_add(1, Ordering::SeqCst);
        let name = if hello.name.is_empty() {
            peer
        } else {
            hello.name.chars().take(100).collect()
        };
        if !self.auditor.admits(&name) {
            return Err(Status::permission_denied(format!(
                "worker {name:?} is barred: an audit caught it reporting what its leases do not give"
            )));
        }
        let id = format!("worker-{number}");
        let (tx, rx) = mpsc::channel(256);
        let welcome = pb::CoordinatorMessage {
            kind: Some(Out::Welcome(pb::Welcome {
                worker_id: id.clone(),
                heartbeat_interval_ms: self.config.heartbeat_interval.as_millis() as u32,
                lease_timeout_ms: self.config.lease_timeout.as_millis() as u32,
            })),
        };
        tx.send(Ok(welcome))
            .await
            .map_err(|_| Status::cancelled("worker gone"))?;
        let mut session = Session::new(
            self.pool.clone(),
            self.config.clone(),
            self.next_lease.clone(),
            (id, name),
            hello.threads as usize,
            tx,
            self.auditor.clone(),
        );
        session.roster_key = number;
        session.address = address;
        tokio::spawn(session.run(inbound));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
