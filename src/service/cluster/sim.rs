//! Simulated remote workers, for measuring a coordinator and for testing it
//! with many workers (`xccd bench --scale`, `tests/scale.rs`).
//!
//! A [`SimWorker`] speaks the real protocol over a real gRPC connection
//! (the generated client and messages of `proto.rs`, as `xccd worker`
//! does), but runs each lease inline, on the async task, with a small
//! budget: after `nodes_per_lease` nodes it checkpoints and hands the rest
//! back. A search thus becomes a stream of tiny leases, each of which the
//! coordinator grants, checks and books, so that the coordinator, not the
//! engine, is what is measured; and since the runs are real, the counts
//! and solutions the coordinator delivers must be exactly the in-process
//! ones. It holds one task slot and reports no lease in its heartbeats (a
//! run never spans an await). Asks are ignored: by the time one arrives,
//! the run it names has ended.
//!
//! It also times each grant: from the moment it reports a run's end (its
//! slot is then free, which is how a worker asks for work) to the next
//! lease.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Endpoint;
use tonic::Streaming;

use super::coordinator::MAX_MESSAGE_BYTES;
use super::proto::{
    self as pb, coordinator_client::CoordinatorClient, coordinator_message::Kind as In,
    worker_message::Kind as Out, Instance,
};
use crate::run::{run_task, Batch, Control, Port, RunSpec, Taken};
use crate::service::credentials::WorkerToken;
use crate::xcc::{self, Engine, ProgressView, Solver};

/// One simulated worker, connected and welcomed.
pub struct SimWorker {
    tx: mpsc::Sender<pb::WorkerMessage>,
    inbound: Streaming<pb::CoordinatorMessage>,
    heartbeat: Duration,
}

/// What a simulated worker did, once stopped.
#[derive(Debug, Default)]
pub struct SimReport {
    /// Leases it was granted.
    pub leases: u64,
    /// Solutions it reported (new ones: those past each lease's skip).
    pub solutions: u64,
    /// For each lease but its first: when its previous run ended (the slot
    /// was free), and how long after that the lease came.
    pub waits: Vec<(Instant, Duration)>,
    /// Why it stopped before being asked to, if it did.
    pub error: Option<String>,
}

fn message(kind: Out) -> pb::WorkerMessage {
    pb::WorkerMessage { kind: Some(kind) }
}

impl SimWorker {
    /// Connects to a coordinator's worker listener (`http://host:port`),
    /// says Hello with one slot, and waits for the Welcome.
    pub async fn connect(
        url: &str,
        token: Option<&WorkerToken>,
        name: &str,
    ) -> Result<SimWorker, String> {
        let channel = Endpoint::from_shared(url.to_string())
            .map_err(|e| e.to_string())?
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(10))
            .connect()
            .await
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        let mut client = CoordinatorClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let (tx, rx) = mpsc::channel(64);
        tx.send(message(Out::Hello(pb::Hello {
            name: name.to_string(),
            threads: 1,
            protocol: pb::PROTOCOL_VERSION,
        })))
        .await
        .map_err(|_| "the outgoing stream closed".to_string())?;
        let mut request = tonic::Request::new(ReceiverStream::new(rx));
        if let Some(token) = token {
            let value = token.header().parse().map_err(|_| "a bad token")?;
            request.metadata_mut().insert("authorization", value);
        }
        let mut inbound = client
            .work(request)
            .await
            .map_err(|s| format!("refused: {s}"))?
            .into_inner();
        match inbound.message().await {
            Ok(Some(pb::CoordinatorMessage {
                kind: Some(In::Welcome(welcome)),
            })) => Ok(SimWorker {
                tx,
                inbound,
                heartbeat: Duration::from_millis(u64::from(welcome.heartbeat_interval_ms.max(10))),
            }),
            Ok(other) => Err(format!("expected a Welcome, got {other:?}")),
            Err(status) => Err(format!("no Welcome: {status}")),
        }
    }

    /// Serves leases, each for at most about `nodes_per_lease` nodes, until
    /// `stop` turns true or the coordinator ends the stream; then closes
    /// its side and says what it did.
    pub async fn run(mut self, nodes_per_lease: u64, mut stop: watch::Receiver<bool>) -> SimReport {
        let mut report = SimReport::default();
        let mut problems: HashMap<Vec<u8>, (Arc<Instance>, Vec<Solver>)> = HashMap::new();
        let mut heartbeat = tokio::time::interval(self.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut freed: Option<Instant> = None;
        let mut out = Vec::new();
        loop {
            tokio::select! {
                incoming = self.inbound.message() => {
                    let kind = match incoming {
                        Ok(Some(pb::CoordinatorMessage { kind: Some(kind) })) => kind,
                        Ok(Some(_)) => continue,
                        Ok(None) => {
                            report.error = Some("the coordinator closed the stream".into());
                            break;
                        }
                        Err(status) => {
                            report.error = Some(format!("the stream broke: {status}"));
                            break;
                        }
                    };
                    match kind {
                        In::Problem(data) => match pb::instance(&data) {
                            Ok(instance) => {
                                problems.insert(data.digest, (Arc::new(instance), Vec::new()));
                            }
                            Err(error) => {
                                report.error = Some(format!("a problem it cannot run: {error}"));
                                break;
                            }
                        },
                        In::Lease(lease) => {
                            report.leases += 1;
                            if let Some(freed) = freed.take() {
                                report.waits.push((freed, freed.elapsed()));
                            }
                            let Some(entry) = problems.get_mut(&lease.problem_digest) else {
                                report.error = Some("a lease of a problem never sent".into());
                                break;
                            };
                            match run_lease(&lease, entry, nodes_per_lease, &mut out) {
                                Ok(solutions) => report.solutions += solutions,
                                Err(error) => {
                                    report.error = Some(error);
                                    break;
                                }
                            }
                            let mut sent = true;
                            for kind in out.drain(..) {
                                sent = sent && self.tx.send(message(kind)).await.is_ok();
                            }
                            if !sent {
                                report.error = Some("the outgoing stream closed".into());
                                break;
                            }
                            freed = Some(Instant::now());
                        }
                        In::Ask(_) | In::Welcome(_) => {}
                    }
                }
                _ = heartbeat.tick() => {
                    let beat = message(Out::Heartbeat(pb::Heartbeat::default()));
                    if self.tx.send(beat).await.is_err() {
                        report.error = Some("the outgoing stream closed".into());
                        break;
                    }
                }
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        break;
                    }
                }
            }
        }
        report
    }
}

/// Runs a lease for at most about `budget` nodes (it then checkpoints);
/// the messages that report it go to `out`. The new solutions it reported.
fn run_lease(
    lease: &pb::Lease,
    (instance, solvers): &mut (Arc<Instance>, Vec<Solver>),
    budget: u64,
    out: &mut Vec<Out>,
) -> Result<u64, String> {
    let engine: Engine = lease.engine.parse()?;
    let mut solver = match solvers.iter().position(|s| s.engine() == engine) {
        Some(at) => solvers.swap_remove(at),
        None => Solver::with_engine(&instance.problem, engine).map_err(|e| e.to_string())?,
    };
    let task: xcc::Task = lease.task.clone().unwrap_or_default().into();
    let budget = budget.max(1);
    let spec = RunSpec {
        poll_interval: budget,
        ..super::worker::lease_spec(lease)
    };
    let mut port = SimPort {
        lease: lease.lease,
        index_bytes: crate::service::convert::packed_index_bytes(&instance.problem),
        out,
        budget,
        solutions: 0,
    };
    let report = run_task(
        &mut solver,
        &instance.problem,
        &task,
        &spec,
        instance.condition.as_deref(),
        &mut port,
    );
    let solutions = port.solutions;
    solvers.push(solver);
    out.push(Out::Ended(pb::task_ended(lease.lease, &report)));
    Ok(solutions)
}

/// Collects a run's reports; checkpoints once the budget is spent.
struct SimPort<'a> {
    lease: Option<pb::LeaseRef>,
    /// Bytes an option index takes in the packed solutions.
    index_bytes: u32,
    out: &'a mut Vec<Out>,
    budget: u64,
    solutions: u64,
}

impl Port for SimPort<'_> {
    fn deliver(&mut self, batch: Batch, _force: bool) -> Taken {
        self.solutions += batch.count;
        self.out
            .push(Out::Found(pb::found(self.lease, batch, self.index_bytes)));
        Taken::All
    }

    fn control(&mut self, progress: &ProgressView<'_>) -> Control {
        if progress.stats.nodes >= self.budget {
            Control::Checkpoint
        } else {
            Control::Continue
        }
    }

    fn given_away(&mut self, task: xcc::Task, found: u64) {
        self.out.push(Out::GaveAway(pb::GaveAway {
            lease: self.lease,
            task: Some((&task).into()),
            found,
        }));
    }
}
