//! Enumerate: a stream of a job's solutions (one message each or packed)
//! with progress, for a job the call owns, and the messages that stream
//! sends (`ProblemEvents`).
//!
//! This room owns Enumerate's batch sizes and its messages; it must not
//! pump the stream itself (`stream` does) or repeat the search checks
//! (`request`).

use std::sync::Arc;

use tokio::time::Instant;
use tonic::{Request, Response, Status};

use super::request::{nonzero, packed_or_text, Search, SearchAsk};
use super::stream::{EventStream, Pump, StreamEvents};
use super::SolverApi;
use crate::service::callers::Caller;
use crate::service::convert;
use crate::service::job::{Delivery, JobSpec, Solutions};
use crate::service::proto as pb;
use crate::service::status;
use crate::xcc::Problem;

/// Answers an Enumerate call.
pub(super) async fn enumerate(
    api: &SolverApi,
    request: Request<pb::EnumerateRequest>,
) -> Result<Response<EventStream<pb::EnumerateResponse>>, Status> {
    let deadline = convert::deadline(&request).map(|d| Instant::now() + d);
    let caller = Caller::of(&request);
    let req = request.into_inner();
    let interval = convert::interval("progress_interval_seconds", req.progress_interval_seconds)?;
    // 0 for the default, which depends on the form and the problem.
    let batch_size = status::count("batch_size", req.batch_size, 0, api.config.max_batch_size)?;
    packed_or_text(req.packed_solutions, req.include_option_text)?;
    let problem = Arc::new(convert::problem(req.problem, &api.config.limits)?);
    let preprocessed = api
        .preprocess(req.preprocess, &problem, false, deadline)
        .await?;
    let searched = preprocessed.as_ref().map_or(&problem, |p| &p.problem);
    let Search {
        memo,
        cheapest,
        engine,
    } = api.search(
        SearchAsk::listed(
            req.memo,
            req.cheapest,
            req.count_only,
            req.limit,
            "the stream sends the K cheapest solutions, K its number: leave limit at 0",
            req.engine,
            false,
        ),
        searched,
    )?;
    let packed_index_bytes = if req.packed_solutions {
        convert::packed_index_bytes(&problem)
    } else {
        0
    };
    let batch_size = match batch_size {
        0 if req.packed_solutions => api.config.packed_batch_size(&problem),
        0 => api.config.default_batch_size,
        n => n,
    };
    let delivery = if req.count_only {
        Delivery::CountOnly
    } else {
        Delivery::Stream {
            buffer_batches: api.config.buffer_batches,
            batch_size,
        }
    };
    let job = api.submit(
        problem.clone(),
        JobSpec {
            engine,
            memo,
            cheapest,
            preprocessed,
            limit: nonzero(req.limit),
            max_nodes: nonzero(req.max_nodes),
            delivery,
            owner: caller.clone(),
            waits_on_call: true,
            ..JobSpec::default()
        },
    )?;
    let pump = Pump {
        pool: api.pool.clone(),
        job: job.clone(),
        events: ProblemEvents {
            problem,
            with_text: req.include_option_text,
            packed_index_bytes,
        },
        interval,
        deadline,
    };
    Ok(pump.start(tracing::info_span!("job", id = job.id, rpc = "Enumerate")))
}

/// A problem's events on an Enumerate stream.
struct ProblemEvents {
    problem: Arc<Problem>,
    with_text: bool,
    /// Solutions in SolutionBatch's packed form, with indices of this many
    /// bytes (0: one Solution message each).
    packed_index_bytes: u32,
}

impl StreamEvents for ProblemEvents {
    type Message = pb::EnumerateResponse;
    fn solutions(&self, batch: Solutions) -> Self::Message {
        use pb::enumerate_response::Event as E;
        let batch = if self.packed_index_bytes > 0 {
            convert::packed_solutions(batch, self.packed_index_bytes)
        } else {
            pb::SolutionBatch {
                solutions: batch
                    .iter()
                    .map(|s| convert::solution(&self.problem, s, self.with_text))
                    .collect(),
                ..Default::default()
            }
        };
        pb::EnumerateResponse {
            event: Some(E::Solutions(batch)),
        }
    }
    fn progress(&self, progress: pb::Progress) -> Self::Message {
        pb::EnumerateResponse {
            event: Some(pb::enumerate_response::Event::Progress(progress)),
        }
    }
    fn summary(&self, summary: pb::Summary) -> Self::Message {
        pb::EnumerateResponse {
            event: Some(pb::enumerate_response::Event::Summary(summary)),
        }
    }
}
