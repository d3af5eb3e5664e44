//! The Estimate RPC: Knuth's estimate of a search tree by random probes,
//! and the time a full run would take on this server's workers.
//!
//! The probing and the short run that measures the speed are plain
//! synchronous work, bounded by the probes a request may ask for and by
//! [`PROBE_BUDGET`]; they run
//! on the runtime's blocking threads, at most one per core at once (the
//! rest wait their turn), so the server keeps serving. A call that goes
//! away (or whose deadline passes) stops its work within 64 probes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tonic::{Request, Response, Status};

use super::convert::{self, ProblemLimits};
use super::pool::Pool;
use super::proto as pb;
use super::status;
use crate::xcc::estimate::{estimate_until, measure_rate, DEFAULT_PROBES};
use crate::xcc::Solver;

/// The most probes one request may ask for.
pub const MAX_PROBES: u64 = 100_000;
/// How long the run that measures the speed lasts at most.
const RATE_BUDGET: Duration = Duration::from_millis(100);
/// How long the probes of one request may take: past it the estimate is
/// made of the probes so far (a probe's cost grows with the problem's
/// size, and a few huge problems must not hold a core for minutes).
const PROBE_BUDGET: Duration = Duration::from_secs(2);

/// What the Estimate RPC needs of the server.
pub struct Estimator {
    /// Estimates running at once: one per core.
    running: Arc<Semaphore>,
}

impl Default for Estimator {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Estimator {
            running: Arc::new(Semaphore::new(cores)),
        }
    }
}

/// Sets its flag when dropped: the call's future went away.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Estimator {
    pub async fn estimate(
        &self,
        pool: &Pool,
        limits: &ProblemLimits,
        request: Request<pb::EstimateRequest>,
    ) -> Result<Response<pb::EstimateResponse>, Status> {
        let arrived = tokio::time::Instant::now();
        let deadline = convert::deadline(&request);
        let req = request.into_inner();
        let probes = match req.probes {
            0 => DEFAULT_PROBES,
            n if n > MAX_PROBES => {
                return Err(status::invalid(format!(
                    "probes: {n} exceeds the limit of {MAX_PROBES}"
                )))
            }
            n => n,
        };
        let problem = convert::problem(req.problem, limits)?;
        let engine = convert::engine(req.engine, &problem, pool.run_memory_limit())?;
        let seed = req.seed;
        let work = async {
            let _permit = self
                .running
                .acquire()
                .await
                .map_err(|_| status::shutting_down("the server is shutting down"))?;
            let stop = Arc::new(AtomicBool::new(false));
            let _guard = StopOnDrop(stop.clone());
            tokio::task::spawn_blocking(move || {
                let mut solver =
                    Solver::with_engine(&problem, engine).unwrap_or_else(|_| Solver::new(&problem));
                let until = Instant::now() + PROBE_BUDGET;
                let estimate = estimate_until(&mut solver, probes, seed, &stop, Some(until))?;
                let rate = measure_rate(&mut solver, RATE_BUDGET, &stop);
                Some((estimate, rate))
            })
            .await
            .map_err(|_| status::internal("the estimate failed"))?
            .ok_or_else(|| status::error(status::Reason::Cancelled, "the estimate was stopped"))
        };
        let (estimate, rate) = match deadline {
            // Answer DEADLINE_EXCEEDED just before tonic's own timeout
            // answers CANCELLED, as Solve does.
            Some(d) => tokio::time::timeout_at(convert::unary_deadline(arrived, d), work)
                .await
                .map_err(|_| {
                    status::deadline(format!("deadline of {:.3} s passed", d.as_secs_f64()))
                })??,
            None => work.await?,
        };
        let workers = pool.workers() + pool.remote_slots();
        let nodes_per_second = rate.nodes_per_second();
        let seconds = estimate.seconds(nodes_per_second);
        Ok(Response::new(pb::EstimateResponse {
            probes: estimate.probes,
            estimated_nodes: estimate.nodes.mean,
            nodes_standard_error: estimate.nodes.standard_error,
            estimated_solutions: estimate.solutions.mean,
            solutions_standard_error: estimate.solutions.standard_error,
            nodes_per_second,
            workers: workers as u64,
            estimated_seconds: seconds,
            estimated_seconds_all_workers: seconds / workers.max(1) as f64,
            engine: engine.name().to_string(),
        }))
    }
}
