//! Solve: a unary call that runs a job of its own, bounded by the call's
//! limit and deadline, and answers its solutions (or count) in one reply.
//!
//! This room owns Solve's limits and its wait; it must not hold checks
//! another RPC shares (`request`) or stream (`stream`).

use std::sync::Arc;

use tokio::time::Instant;
use tonic::{Request, Response, Status};
use tracing::Instrument;

use super::request::{nonzero, Search, SearchAsk};
use super::stream::CancelOnDrop;
use super::SolverApi;
use crate::service::callers::Caller;
use crate::service::convert;
use crate::service::job::{Class, Delivery, EndReason, JobSpec};
use crate::service::proto as pb;
use crate::service::status;

/// Answers a Solve call.
pub(super) async fn solve(
    api: &SolverApi,
    request: Request<pb::SolveRequest>,
) -> Result<Response<pb::SolveResponse>, Status> {
    let arrived = Instant::now();
    let deadline = convert::deadline(&request);
    let caller = Caller::of(&request);
    let req = request.into_inner();
    let limit = req.limit.max(1);
    if limit > api.config.max_solve_limit {
        return Err(status::invalid(format!(
            "limit: {limit} exceeds the limit of {} for Solve; use Enumerate",
            api.config.max_solve_limit
        )));
    }
    let problem = Arc::new(convert::problem(req.problem, &api.config.limits)?);
    let preprocessed = api
        .preprocess(
            req.preprocess,
            &problem,
            false,
            deadline.map(|d| convert::unary_deadline(arrived, d)),
        )
        .await?;
    let searched = preprocessed.as_ref().map_or(&problem, |p| &p.problem);
    let Search {
        memo,
        cheapest,
        engine,
    } = api.search(
        SearchAsk {
            memo: req.memo,
            memo_conflict: (req.limit != 0).then_some(
                "Solve with memo returns the count of all solutions, not solutions: leave limit at 0",
            ),
            cheapest: req.cheapest,
            cheapest_conflict: if req.limit != 0 {
                Some("Solve returns the K cheapest solutions, K its number: leave limit at 0")
            } else if u64::from(req.cheapest) > api.config.max_solve_limit {
                Some("K exceeds this server's limit of solutions for Solve")
            } else {
                None
            },
            engine: req.engine,
            filtered: false,
        },
        searched,
    )?;
    let job = api.submit(
        problem.clone(),
        JobSpec {
            engine,
            memo,
            cheapest,
            preprocessed,
            // The cheapest-solutions search ends with its K solutions
            // (no limit to stop it before: they would not be the
            // cheapest).
            limit: (memo.is_none() && cheapest.is_none()).then_some(limit),
            max_nodes: nonzero(req.max_nodes),
            delivery: match (memo, cheapest) {
                (Some(_), _) => Delivery::CountOnly,
                (None, Some(k)) => Delivery::Keep { keep: k },
                (None, None) => Delivery::Keep {
                    keep: limit as usize,
                },
            },
            owner: caller.clone(),
            class: Class::Interactive,
            waits_on_call: true,
            ..JobSpec::default()
        },
    )?;
    let _guard = CancelOnDrop {
        pool: api.pool.clone(),
        job: job.clone(),
    };
    let span = tracing::info_span!("job", id = job.id, rpc = "Solve");
    let summary = async {
        match deadline {
            // tonic's own timeout on the same deadline answers
            // CANCELLED; answer DEADLINE_EXCEEDED just before it fires.
            Some(d) => {
                match tokio::time::timeout_at(convert::unary_deadline(arrived, d), job.wait()).await
                {
                    Ok(summary) => Ok(summary),
                    Err(_) => {
                        api.pool.cancel(&job, EndReason::Deadline);
                        Err(status::deadline(format!(
                            "deadline of {:.3} s passed",
                            d.as_secs_f64()
                        )))
                    }
                }
            }
            None => Ok(job.wait().await),
        }
    }
    .instrument(span)
    .await?;
    if let Some(status) = convert::end_status(&summary) {
        return Err(status);
    }
    let solutions = job
        .kept_from(0)
        .iter()
        .map(|s| convert::solution(&problem, s, req.include_option_text))
        .collect();
    Ok(Response::new(pb::SolveResponse {
        solutions,
        exhausted: summary.reason == EndReason::Complete,
        statistics: Some(convert::summary_statistics(&summary)),
        reason: convert::end_reason(summary.reason) as i32,
    }))
}
