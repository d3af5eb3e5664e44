//! Checks of a worker's reports of solutions, before anything of them is
//! delivered: a worker is not trusted with what can be checked.
//!
//! Owns the checks of one [`pb::Found`]: that it lists solutions exactly
//! when the lease wants them, that each is a solution of the problem (and
//! passes the puzzle's side condition), and that each lies in the leased
//! task's part of the tree (else it would be delivered twice, by this
//! lease and another task's). It must not deliver, count or book anything:
//! the session's [`crate::run::Ledger`] does that with what passes.

use crate::run::{verify_solution, Region, Solutions};
use crate::service::cluster::proto as pb;
use crate::service::job::Job;
use crate::xcc::{self, Task};

/// The solutions a `found` report on a lease of `job` over `task` lists,
/// once checked; else why it cannot be right (for the worker, as the
/// protocol error that disconnects it). `want_solutions`: the lease asked
/// for each solution's options (else for counts). `region`: the lease's
/// part of the tree, built at its first solutions and kept.
pub(super) fn check_found(
    found: &mut pb::Found,
    want_solutions: bool,
    job: &Job,
    task: &Task,
    region: &mut Option<Region>,
) -> Result<Solutions, String> {
    let solutions = pb::found_solutions(found).map_err(|e| format!("found: {e}"))?;
    let listed = solutions.len() as u64;
    if (want_solutions && listed != found.count) || (!want_solutions && listed > 0) {
        return Err(format!(
            "found: {listed} solutions listed for a count of {} on a lease that wants {}",
            found.count,
            if want_solutions {
                "solutions"
            } else {
                "counts"
            }
        ));
    }
    if solutions.is_empty() {
        return Ok(solutions);
    }
    let mut verifier = job.verifier();
    for (k, options) in solutions.iter().enumerate() {
        verify_solution(
            &mut verifier,
            job.spec.condition.as_deref(),
            found.first.saturating_add(k as u64),
            options,
        )
        .map_err(|e| format!("found: {e}"))?;
    }
    // Solutions of another task's part of the tree would be delivered
    // twice: each must lie in this lease's part.
    let built = job.with_checker(|solver| match region {
        Some(region) => region.cut(solver, &task.cuts),
        None => {
            *region = Some(Region::new(solver, task)?);
            Ok(())
        }
    });
    built.map_err(|e: xcc::TaskError| format!("found: the leased task: {e}"))?;
    if let Some(region) = region {
        for (k, solution) in solutions.iter().enumerate() {
            if !region.contains(solution) {
                return Err(format!(
                    "found: solution {} lies outside the leased task",
                    found.first.saturating_add(k as u64)
                ));
            }
        }
    }
    Ok(solutions)
}
