//! What a request asks of its job, checked: the search it runs (DLX6's
//! memoized count, DLX5's K cheapest solutions, the engine), its
//! preprocessing, a CreateJob's request_id, and the small checks several
//! RPCs share.
//!
//! The checks are written here once for Solve, Enumerate and CreateJob;
//! each RPC gives only its own words for a conflict. This room must not
//! submit jobs or send messages: it answers a value or the status that
//! refuses the request.

use std::sync::Arc;

use tokio::time::Instant;
use tonic::Status;

use super::SolverApi;
use crate::service::convert;
use crate::service::preprocess::{self, Preprocessed};
use crate::service::proto as pb;
use crate::service::status;
use crate::xcc::problem::quote;
use crate::xcc::{Engine, Problem};

/// What a request asks of its search, with the reason, in the RPC's own
/// words, that the rest of the request rules out memo or cheapest (`None`:
/// nothing does).
pub(super) struct SearchAsk<'a> {
    pub memo: bool,
    pub memo_conflict: Option<&'a str>,
    pub cheapest: u32,
    pub cheapest_conflict: Option<&'a str>,
    pub engine: i32,
    /// A puzzle's side condition filters the solutions (which neither
    /// memo nor cheapest can do).
    pub filtered: bool,
}

impl<'a> SearchAsk<'a> {
    /// What a streamed or kept search asks (Enumerate, CreateJob): memo
    /// answers a count, so it needs `count_only`; cheapest answers
    /// solutions, so it rules `count_only` out, and a limit for the reason
    /// `limit_conflict` gives in the RPC's words.
    pub(super) fn listed(
        memo: bool,
        cheapest: u32,
        count_only: bool,
        limit: u64,
        limit_conflict: &'a str,
        engine: i32,
        filtered: bool,
    ) -> SearchAsk<'a> {
        SearchAsk {
            memo,
            memo_conflict: (!count_only)
                .then_some("a memoized search answers a count: set count_only"),
            cheapest,
            cheapest_conflict: if count_only {
                Some("the cheapest-solutions search answers solutions: leave count_only unset")
            } else if limit != 0 {
                Some(limit_conflict)
            } else {
                None
            },
            engine,
            filtered,
        }
    }
}

/// The search a request's job runs.
pub(super) struct Search {
    pub memo: Option<u64>,
    pub cheapest: Option<usize>,
    pub engine: Engine,
}

impl SolverApi {
    /// The search `ask` asks for on `searched` (the problem after any
    /// preprocessing): memo's checks, then cheapest's, then the engine.
    pub(super) fn search(&self, ask: SearchAsk, searched: &Problem) -> Result<Search, Status> {
        let memory = self.pool.run_memory_limit();
        let memo = convert::memo(
            ask.memo,
            ask.memo_conflict,
            ask.engine,
            searched,
            ask.filtered,
            memory,
        )?;
        let cheapest = convert::cheapest(
            ask.cheapest,
            ask.cheapest_conflict,
            ask.memo,
            ask.engine,
            searched,
            ask.filtered,
            memory,
        )?;
        let engine = self.engine(ask.engine, searched, memo.is_some() || cheapest.is_some())?;
        Ok(Search {
            memo,
            cheapest,
            engine,
        })
    }

    /// The engine a request's job runs on: links for DLX6's and DLX5's own
    /// searches (`own_search`: memo, cheapest), else the request's choice.
    fn engine(&self, engine: i32, problem: &Problem, own_search: bool) -> Result<Engine, Status> {
        match own_search {
            true => Ok(Engine::Links),
            false => convert::engine(engine, problem, self.pool.run_memory_limit()),
        }
    }

    /// The reduction a request's `preprocess` asks for (see
    /// [`preprocess::for_request`]), done before its job starts.
    pub(super) async fn preprocess(
        &self,
        requested: bool,
        problem: &Arc<Problem>,
        puzzle: bool,
        deadline: Option<Instant>,
    ) -> Result<Option<Arc<Preprocessed>>, Status> {
        if !requested {
            return Ok(None);
        }
        let wait = self.preprocessing.acquire();
        let _permit = match deadline {
            Some(d) => tokio::time::timeout_at(d, wait).await.map_err(|_| {
                status::deadline("the call's deadline passed while it waited to be preprocessed")
            })?,
            None => wait.await,
        }
        .map_err(|_| status::internal("the preprocessing's queue closed"))?;
        preprocess::for_request(
            requested,
            problem,
            puzzle,
            self.config.max_preprocess_mems,
            self.pool.run_memory_limit(),
            deadline.map(Instant::into_std),
        )
        .await
    }
}

/// Refuses a request for both the packed form and option text.
pub(super) fn packed_or_text(packed: bool, with_text: bool) -> Result<(), Status> {
    match packed && with_text {
        true => Err(status::invalid(
            "packed_solutions: the packed form has no option text; ask for one or the other",
        )),
        false => Ok(()),
    }
}

/// A CreateJob's request_id, checked to be a UUID (AIP-155) and put in
/// lower case.
pub(super) fn request_id(text: &str) -> Result<String, Status> {
    let uuid = text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
    if !uuid {
        return Err(status::invalid(format!(
            "request_id: {} is not a UUID (36 characters: 8-4-4-4-12 hexadecimal digits)",
            quote(&text.chars().take(64).collect::<String>())
        )));
    }
    Ok(text.to_ascii_lowercase())
}

/// The digest that tells a retried CreateJob from a different request
/// under the same request_id: SHA-256 of the request's encoding without
/// its request_id (prost encodes a message the same way every time).
pub(super) fn request_digest(req: &pb::CreateJobRequest) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(prost::Message::encode_to_vec(req));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn nonzero(n: u64) -> Option<u64> {
    (n > 0).then_some(n)
}
