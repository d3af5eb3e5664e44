//! The requests' `preprocess` field (Solve, Enumerate, CreateJob): Knuth's
//! DLX-PRE on the caller's problem before its job starts. The job searches
//! the reduced problem (`Job::searched`) and delivers its solutions as the
//! caller's options (`Job::deliver` renames them through
//! [`Preprocessed::origin`]), so its streams, kept solutions and stored
//! solutions all name the caller's options, with their text and costs.
//!
//! Bounded like a search, before any search starts: at most
//! `max_mems` mems (DLX-PRE's `T`: past it the problem reduced so far, still
//! equivalent, is what is searched), its node array and the reduced problem
//! within one search's memory (RESOURCE_EXHAUSTED `SEARCH_MEMORY_LIMIT`
//! beyond), stopped by the call's deadline (DEADLINE_EXCEEDED), and run on
//! a blocking thread, never on the runtime's.

use std::sync::Arc;
use std::time::Instant;

use tonic::Status;

use super::status;
use crate::xcc::preprocess::{self, Config, PreprocessError};
use crate::xcc::Problem;

/// DLX-PRE's default `T` on a server: about ten seconds of reduction at
/// most (DLX-PRE counts a few nanoseconds a mem).
pub const DEFAULT_MAX_MEMS: u64 = 5_000_000_000;

// The reduced problem a job holds is the job's vocabulary (job.rs), so that
// the job does not import this file, which builds statuses.
pub use super::job::Preprocessed;

/// Why `problem` cannot be preprocessed (INVALID_ARGUMENT naming
/// `preprocess`), if it cannot: DLX-PRE's reductions assume every primary
/// item is covered exactly once, and a puzzle job's remote workers rebuild
/// the puzzle's own problem, not a reduced one.
pub fn refusal(problem: &Problem, puzzle: bool) -> Option<Status> {
    if puzzle {
        return Some(status::invalid(
            "preprocess: a puzzle job searches its puzzle's encoding as it is: \
             preprocess applies to a problem",
        ));
    }
    problem
        .items()
        .iter()
        .find(|i| {
            matches!(i.kind, crate::xcc::problem::ItemKind::Primary { min, max } if (min, max) != (1, 1))
        })
        .map(|item| {
            status::invalid(format!(
                "preprocess: item {} has a multiplicity: DLX-PRE's reductions hold only \
                 when every primary item is covered exactly once",
                crate::xcc::problem::quote(&item.name)
            ))
        })
}

/// Reduces `problem` under `max_mems`, asking `stop` before each item.
pub fn reduce(
    problem: &Problem,
    max_mems: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Preprocessed, PreprocessError> {
    let config = Config {
        timeout: max_mems,
        delta: 0,
        verbose: 0,
        ..Config::default()
    };
    let reduced = preprocess::preprocess_until(problem, &config, stop)?;
    Ok(Preprocessed {
        origin: reduced.origin.iter().map(|&o| o as u32).collect(),
        problem: Arc::new(reduced.problem),
        figures: reduced.figures,
        max_mems,
    })
}

/// The reduction a request asks for (`requested`): `None` when it asks
/// none; else `problem` reduced under `max_mems`, within `memory_limit`
/// bytes, by `deadline`, on a blocking thread.
pub async fn for_request(
    requested: bool,
    problem: &Arc<Problem>,
    puzzle: bool,
    max_mems: u64,
    memory_limit: u64,
    deadline: Option<Instant>,
) -> Result<Option<Arc<Preprocessed>>, Status> {
    if !requested {
        return Ok(None);
    }
    if let Some(refused) = refusal(problem, puzzle) {
        return Err(refused);
    }
    let need = preprocess::memory_bound(problem);
    if need > memory_limit {
        return Err(status::exhausted_with(
            status::Reason::SearchMemoryLimit,
            format!(
                "preprocess: DLX-PRE needs up to {need} bytes for this problem, over the limit \
                 of {memory_limit} bytes a search may take (--max-search-memory)"
            ),
            &[
                ("needed_bytes", need.to_string()),
                ("limit_bytes", memory_limit.to_string()),
            ],
            None,
        ));
    }
    let problem = problem.clone();
    let reduced = tokio::task::spawn_blocking(move || {
        let stop = move || deadline.is_some_and(|d| Instant::now() >= d);
        reduce(&problem, max_mems, &stop)
    })
    .await
    .map_err(|_| status::internal("the preprocessing failed"))?;
    match reduced {
        Ok(reduced) => Ok(Some(Arc::new(reduced))),
        Err(PreprocessError::Stopped) => Err(status::deadline(
            "the call's deadline passed while the problem was preprocessed",
        )),
        // Refused above; kept in words should DLX-PRE refuse more.
        Err(e) => Err(status::invalid(format!("preprocess: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::dlx_format;

    #[test]
    fn a_bound_of_mems_stops_the_reduction_with_an_equivalent_problem() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("bench/instances/sudoku_hard17.dlx"),
        )
        .unwrap();
        let problem = dlx_format::parse(&text).unwrap();
        let full = reduce(&problem, DEFAULT_MAX_MEMS, &|| false).unwrap();
        let cut = reduce(&problem, 50_000, &|| false).unwrap();
        assert!(cut.figures.options_out < full.figures.options_out);
        assert!(cut.figures.options_out > 0);
        // The same bound reduces the same way again (a resumed job's tree).
        let again = reduce(&problem, 50_000, &|| false).unwrap();
        assert_eq!(again.origin, cut.origin);
        assert_eq!(
            reduce(&problem, DEFAULT_MAX_MEMS, &|| true).unwrap_err(),
            PreprocessError::Stopped
        );
    }
}
