//! Messages to and from the engine's types. Every rejection is an
//! INVALID_ARGUMENT status that names the field and, inside it, the item,
//! option or line at fault.

use std::sync::Arc;
use std::time::Duration;

use tonic::Status;

use super::job::{EndReason, Progress, Solutions, Summary};
use super::proto as pb;
use super::puzzle_input::grid;
use super::status;
use crate::puzzles::Encoded;
use crate::run::Failure;
use crate::xcc::{
    dlx_format, Engine, Problem, ProblemBuilder, ProblemError, Stats, UnsupportedEngine,
};

/// Size limits on problems a client may send.
#[derive(Debug, Clone)]
pub struct ProblemLimits {
    /// Longest DLX text, in bytes.
    pub max_text_bytes: usize,
    /// Most items.
    pub max_items: usize,
    /// Most options.
    pub max_options: usize,
    /// Most item occurrences over all options.
    pub max_entries: usize,
}

impl Default for ProblemLimits {
    fn default() -> Self {
        ProblemLimits {
            max_text_bytes: 32 << 20,
            max_items: 1 << 20,
            max_options: 4 << 20,
            max_entries: 16 << 20,
        }
    }
}

fn too_big(field: &str, what: &str, actual: usize, limit: usize) -> Status {
    status::invalid_error(
        status::Reason::ProblemTooLarge,
        format!("{field}: {actual} {what} exceed the server's limit of {limit}"),
    )
    .meta("value", actual)
    .meta("limit", limit)
    .into()
}

/// Builds the engine's problem from a request's `problem` field.
pub fn problem(message: Option<pb::Problem>, limits: &ProblemLimits) -> Result<Problem, Status> {
    let source = message
        .and_then(|p| p.source)
        .ok_or_else(|| status::invalid("problem: required (give dlx or structured)"))?;
    let problem = match source {
        pb::problem::Source::Dlx(text) => {
            if text.len() > limits.max_text_bytes {
                return Err(too_big(
                    "problem.dlx",
                    "bytes",
                    text.len(),
                    limits.max_text_bytes,
                ));
            }
            dlx_format::parse(&text).map_err(|e| status::invalid(format!("problem.dlx: {e}")))?
        }
        pb::problem::Source::Structured(s) => structured(s, limits)?,
    };
    if problem.items().len() > limits.max_items {
        return Err(too_big(
            "problem",
            "items",
            problem.items().len(),
            limits.max_items,
        ));
    }
    if problem.options().len() > limits.max_options {
        return Err(too_big(
            "problem",
            "options",
            problem.options().len(),
            limits.max_options,
        ));
    }
    if problem.entries() > limits.max_entries {
        return Err(too_big(
            "problem",
            "item occurrences",
            problem.entries(),
            limits.max_entries,
        ));
    }
    Ok(problem)
}

fn structured(s: pb::StructuredProblem, limits: &ProblemLimits) -> Result<Problem, Status> {
    if s.items.len() > limits.max_items {
        return Err(too_big(
            "problem.structured.items",
            "items",
            s.items.len(),
            limits.max_items,
        ));
    }
    if s.options.len() > limits.max_options {
        return Err(too_big(
            "problem.structured.options",
            "options",
            s.options.len(),
            limits.max_options,
        ));
    }
    let entries: usize = s.options.iter().map(|o| o.entries.len()).sum();
    if entries > limits.max_entries {
        return Err(too_big(
            "problem.structured.options",
            "item occurrences",
            entries,
            limits.max_entries,
        ));
    }
    let mut b = ProblemBuilder::new();
    for (i, item) in s.items.iter().enumerate() {
        let field = || format!("problem.structured.items[{i}]");
        let kind = pb::ItemKind::try_from(item.kind).map_err(|_| {
            status::invalid(format!("{}.kind: unknown value {}", field(), item.kind))
        })?;
        let result = match kind {
            pb::ItemKind::Secondary => {
                if item.min != 0 || item.max != 0 {
                    return Err(status::invalid(format!(
                        "{}: secondary item {:?} cannot have bounds",
                        field(),
                        item.name
                    )));
                }
                b.secondary(&item.name)
            }
            pb::ItemKind::Primary | pb::ItemKind::Unspecified => {
                if item.min == 0 && item.max == 0 {
                    b.primary(&item.name)
                } else {
                    b.primary_with_bounds(&item.name, item.min, item.max)
                }
            }
        };
        result.map_err(|e| status::invalid(format!("{}: {e}", field())))?;
    }
    for (o, option) in s.options.iter().enumerate() {
        let specs = option
            .entries
            .iter()
            .map(|e| crate::xcc::problem::EntrySpec {
                item: &e.item,
                color: (!e.color.is_empty()).then_some(e.color.as_str()),
            });
        b.option_with_cost(specs, u64::from(option.cost))
            .map_err(|e| {
                let at = entry_of_error(&e, option)
                    .map(|k| format!(".entries[{k}]"))
                    .unwrap_or_default();
                status::invalid(format!("problem.structured.options[{o}]{at}: {e}"))
            })?;
    }
    b.build()
        .map_err(|e| status::invalid(format!("problem.structured: {e}")))
}

/// The entry of `option` that a builder error is about, when it names one.
fn entry_of_error(error: &ProblemError, option: &pb::ProblemOption) -> Option<usize> {
    let name = match error {
        ProblemError::UnknownItem { item, .. }
        | ProblemError::ColorOnPrimary { item, .. }
        | ProblemError::EmptyColor { item, .. }
        | ProblemError::BadColor { item, .. } => item,
        ProblemError::ItemTwiceInOption { item, .. } => {
            // The second occurrence is the one at fault.
            return option
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| &e.item == item)
                .nth(1)
                .map(|(k, _)| k);
        }
        _ => return None,
    };
    option.entries.iter().position(|e| &e.item == name)
}

/// Bytes per index in SolutionBatch's packed form for `problem`'s
/// solutions: the fewest that hold its largest option index.
pub fn packed_index_bytes(problem: &Problem) -> u32 {
    match problem.options().len() {
        0..=0x100 => 1,
        0x101..=0x1_0000 => 2,
        _ => 4,
    }
}

/// Solutions in the packed form (SolutionBatch's, and the cluster's
/// `Found`): every solution's option indices back to back, little-endian,
/// `index_bytes` bytes each, and each solution's number of indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    pub indices: prost::bytes::Bytes,
    pub lengths: Vec<u32>,
    pub index_bytes: u32,
}

/// Packs a batch, `index_bytes` (1, 2 or 4, see [`packed_index_bytes`]) a
/// little-endian index. Four-byte indices are the batch's buffer as it is
/// (on a little-endian machine), narrower ones one pass over it: either
/// way much less than the copies that the bytes they save would cost the
/// transport and the reader.
pub fn pack(batch: Solutions, index_bytes: u32) -> Packed {
    let (indices, lengths) = batch.into_parts();
    let (indices, index_bytes) = match index_bytes {
        1 => (narrow::<1>(&indices), 1),
        2 => (narrow::<2>(&indices), 2),
        _ => (little_endian(indices), 4),
    };
    Packed {
        indices,
        lengths,
        index_bytes,
    }
}

/// The bytes per index of packed solutions, checked as a reader must (the
/// writer is not trusted to send what it says): 1, 2 or 4, and exactly as
/// many bytes as the lengths announce.
pub fn checked_width(indices: &[u8], lengths: &[u32], index_bytes: u32) -> Result<usize, String> {
    let width = index_bytes as usize;
    if !matches!(width, 1 | 2 | 4) {
        return Err(format!(
            "a packed batch with packed_index_bytes {width} (expected 1, 2 or 4)"
        ));
    }
    let count: u64 = lengths.iter().map(|&n| u64::from(n)).sum();
    if count.checked_mul(width as u64) != Some(indices.len() as u64) {
        return Err(format!(
            "a packed batch of {count} indices of {width} bytes came in {} bytes",
            indices.len()
        ));
    }
    Ok(width)
}

/// Packed solutions read back, checked by [`checked_width`]; no indices and
/// no lengths are no solutions, whatever the width says.
pub fn unpack_parts(
    indices: &[u8],
    lengths: Vec<u32>,
    index_bytes: u32,
) -> Result<Solutions, String> {
    if lengths.is_empty() && indices.is_empty() {
        return Ok(Solutions::new());
    }
    let width = checked_width(indices, &lengths, index_bytes)?;
    let indices = match width {
        1 => indices.iter().map(|&b| u32::from(b)).collect(),
        2 => indices
            .chunks_exact(2)
            .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        _ => indices
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    };
    Solutions::from_parts(indices, lengths)
        .ok_or_else(|| "a packed batch whose lengths do not add up".to_string())
}

/// A batch of solutions in SolutionBatch's packed form (see [`pack`]).
pub fn packed_solutions(batch: Solutions, index_bytes: u32) -> pb::SolutionBatch {
    let packed = pack(batch, index_bytes);
    pb::SolutionBatch {
        solutions: Vec::new(),
        packed_indices: packed.indices,
        packed_lengths: packed.lengths,
        packed_index_bytes: packed.index_bytes,
    }
}

/// Solutions given one list of option indices each (kept or stored ones),
/// in SolutionBatch's packed form (see [`packed_solutions`]).
pub fn packed_lists<'a>(
    lists: impl IntoIterator<Item = &'a [u32]>,
    index_bytes: u32,
) -> pb::SolutionBatch {
    packed_solutions(lists.into_iter().collect(), index_bytes)
}

/// The bytes per index of a batch in SolutionBatch's packed form, checked
/// as a client must (see [`checked_width`]).
pub fn packed_width(batch: &pb::SolutionBatch) -> Result<usize, String> {
    checked_width(
        &batch.packed_indices,
        &batch.packed_lengths,
        batch.packed_index_bytes,
    )
}

/// The solutions of a batch in SolutionBatch's packed form, as a client
/// reads them (see [`unpack_parts`]).
pub fn unpack(batch: pb::SolutionBatch) -> Result<Solutions, String> {
    unpack_parts(
        &batch.packed_indices,
        batch.packed_lengths,
        batch.packed_index_bytes,
    )
}

/// The low `N` bytes of each index, little-endian, one after another.
fn narrow<const N: usize>(indices: &[u32]) -> prost::bytes::Bytes {
    let mut out = vec![0u8; indices.len() * N];
    for (bytes, &index) in out.chunks_exact_mut(N).zip(indices) {
        bytes.copy_from_slice(&index.to_le_bytes()[..N]);
    }
    out.into()
}

/// `u32`s as little-endian bytes.
fn little_endian(words: Vec<u32>) -> prost::bytes::Bytes {
    /// A vector of `u32`s seen as its bytes, which on a little-endian
    /// machine are the little-endian bytes of its values.
    #[cfg(target_endian = "little")]
    struct AsBytes(Vec<u32>);
    #[cfg(target_endian = "little")]
    impl AsRef<[u8]> for AsBytes {
        fn as_ref(&self) -> &[u8] {
            let words = &self.0;
            // SAFETY: the bytes of the vector's initialized elements, which
            // stay put while the vector lives and is not changed (it is
            // owned here and never mutated); u32 has no padding and u8 no
            // alignment.
            unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 4) }
        }
    }
    #[cfg(target_endian = "little")]
    return prost::bytes::Bytes::from_owner(AsBytes(words));
    #[cfg(not(target_endian = "little"))]
    return words.iter().flat_map(|w| w.to_le_bytes()).collect();
}

pub fn solution(problem: &Problem, indices: &[u32], with_text: bool) -> pb::Solution {
    pb::Solution {
        grid: None,
        cost: solution_cost(problem, indices),
        option_indices: indices.to_vec(),
        option_texts: if with_text {
            indices
                .iter()
                .map(|&o| problem.format_option(o as usize))
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// A solution's cost: the sum of its options' costs. The runs and the
/// pool carry option indices only; the cost is added up again here, from
/// the problem's costs (at most 2^32-1 an option, so no sum overflows).
pub fn solution_cost(problem: &Problem, indices: &[u32]) -> u64 {
    if !problem.has_costs() {
        return 0;
    }
    indices.iter().map(|&o| problem.cost(o as usize)).sum()
}

/// A job's problem as the messages of its solutions need it: its options'
/// text and, for a puzzle job, the encoding that turns a solution into
/// its grid (`Solution.grid`).
#[derive(Clone)]
pub struct JobProblem {
    pub problem: Arc<Problem>,
    pub puzzle: Option<Arc<dyn Encoded>>,
}

impl JobProblem {
    /// The message of solution `indices`: with its options' text if asked,
    /// with its grid for a puzzle job.
    pub fn solution(&self, indices: &[u32], with_text: bool) -> pb::Solution {
        pb::Solution {
            grid: self.puzzle.as_deref().map(|encoded| grid(encoded, indices)),
            ..solution(&self.problem, indices, with_text)
        }
    }
}

/// The engine a request asks for (field `engine`), `auto` resolved for
/// `problem` (see [`Engine::auto`]) among the engines whose working memory
/// fits `memory_limit` bytes (see [`crate::xcc::memory`]): an explicit
/// engine that does not fit, or a problem no engine fits, is refused with
/// RESOURCE_EXHAUSTED (reason `SEARCH_MEMORY_LIMIT`).
pub fn engine(value: i32, problem: &Problem, memory_limit: u64) -> Result<Engine, Status> {
    let engine = match pb::Engine::try_from(value) {
        Ok(pb::Engine::Unspecified) => {
            return crate::xcc::memory::fitting(problem, memory_limit)
                .map_err(|need| memory_limit_status(&need))
        }
        Ok(pb::Engine::Links) => Engine::Links,
        Ok(pb::Engine::Cells) => Engine::Cells,
        Err(_) => {
            return Err(status::invalid(format!(
                "engine: unknown value {value} (0 auto, 1 links, 2 cells)"
            )))
        }
    };
    if !engine.supports(problem) {
        return Err(status::invalid(format!(
            "engine: {}",
            UnsupportedEngine { engine }
        )));
    }
    crate::xcc::memory::check(problem, engine, memory_limit)
        .map(|_| engine)
        .map_err(|need| memory_limit_status(&need))
}

/// The memoized count a request asks for (its `memo` field): `None` for a
/// search; else the bytes its cache and ZDD may take, what one search may
/// take here less its links. INVALID_ARGUMENT naming `memo` when it cannot
/// count this: `conflict` (the request's own reason, e.g. no count_only), an
/// engine other than links, a `restricted` side condition.
pub fn memo(
    requested: bool,
    conflict: Option<&str>,
    engine: i32,
    problem: &Problem,
    restricted: bool,
    memory_limit: u64,
) -> Result<Option<u64>, Status> {
    if !requested {
        return Ok(None);
    }
    if let Some(conflict) = conflict {
        return Err(status::invalid(format!("memo: {conflict}")));
    }
    if !matches!(
        pb::Engine::try_from(engine),
        Ok(pb::Engine::Unspecified | pb::Engine::Links)
    ) {
        return Err(status::invalid(
            "memo: a memoized count is its own search (DLX6's, on dancing links): \
             leave engine unset",
        ));
    }
    if let Some(why) = crate::run::memo_refusal(&crate::xcc::Task::root(), restricted) {
        return Err(status::invalid(format!("memo: {why}")));
    }
    memo_limit(problem, memory_limit)
        .map(Some)
        .map_err(|need| memory_limit_status(&need))
}

/// The cheapest-solutions search a request asks for (its `cheapest`
/// field, K): `None` for 0. INVALID_ARGUMENT naming `cheapest` when it
/// cannot run: `conflict` (the request's own reason, e.g. a limit), `memo`
/// asked too, an engine other than links, K out of range, multiplicities,
/// a `restricted` side condition; RESOURCE_EXHAUSTED when its links do not
/// fit `memory_limit`.
pub fn cheapest(
    requested: u32,
    conflict: Option<&str>,
    memo: bool,
    engine: i32,
    problem: &Problem,
    restricted: bool,
    memory_limit: u64,
) -> Result<Option<usize>, Status> {
    if requested == 0 {
        return Ok(None);
    }
    // DLX5's bound on K (LIMIT_EXCEEDED past it).
    let k = status::count("cheapest", requested, 0, crate::xcc::cheapest::MAX_K)?;
    if let Some(conflict) = conflict {
        return Err(status::invalid(format!("cheapest: {conflict}")));
    }
    if memo {
        return Err(status::invalid(
            "cheapest: a memoized count is another search: ask for memo or cheapest, not both",
        ));
    }
    if !matches!(
        pb::Engine::try_from(engine),
        Ok(pb::Engine::Unspecified | pb::Engine::Links)
    ) {
        return Err(status::invalid(
            "cheapest: the cheapest-solutions search is its own search (DLX5's, on dancing \
             links): leave engine unset",
        ));
    }
    if let Some(why) =
        crate::run::cheapest_refusal(problem, &crate::xcc::Task::root(), k, restricted)
    {
        return Err(status::invalid(format!("cheapest: {why}")));
    }
    crate::xcc::memory::check(problem, Engine::Links, memory_limit)
        .map_err(|need| memory_limit_status(&need))?;
    Ok(Some(k))
}

/// What a memoized count of `problem` may give its cache and ZDD when one
/// search may take `memory_limit` bytes: the rest after its links and the
/// problem itself, so that the job's charge (the pool's `memory_need`: the
/// three together) is one search's memory.
pub fn memo_limit(problem: &Problem, memory_limit: u64) -> Result<u64, crate::xcc::memory::Need> {
    let own = crate::xcc::memory::problem_bound(problem);
    let links =
        crate::xcc::memory::check(problem, Engine::Links, memory_limit.saturating_sub(own))?;
    Ok(memory_limit - own - links)
}

/// RESOURCE_EXHAUSTED for a search that cannot fit its memory limit, with
/// the bytes it needs and the limit in its `ErrorInfo`.
pub fn memory_limit_status(need: &crate::xcc::memory::Need) -> Status {
    status::exhausted_with(
        status::Reason::SearchMemoryLimit,
        format!("{need} (--max-search-memory, --max-total-search-memory)"),
        &[
            ("needed_bytes", need.bytes.to_string()),
            ("limit_bytes", need.limit.to_string()),
            ("engine", need.engine.name().to_string()),
        ],
        None,
    )
}

pub fn statistics(
    stats: &Stats,
    solutions: u64,
    elapsed: Duration,
    engine: Engine,
) -> pb::Statistics {
    pb::Statistics {
        engine: engine.name().to_string(),
        solutions,
        nodes: stats.nodes,
        updates: stats.updates,
        cleansings: stats.cleansings,
        seconds: elapsed.as_secs_f64(),
        replay_updates: stats.replay_updates,
        replay_cleansings: stats.replay_cleansings,
        elapsed: Some(duration(elapsed)),
        solutions_decimal: solutions.to_string(),
        preprocessing: None,
        leases_audited: 0,
    }
}

/// A job's statistics, its count exact past `u64::MAX` (a memoized count's
/// `solutions_decimal`).
pub fn summary_statistics(s: &Summary) -> pb::Statistics {
    let mut statistics = statistics(&s.stats, s.solutions, s.elapsed, s.engine);
    if let Some(exact) = &s.exact_solutions {
        statistics.solutions_decimal = exact.clone();
    }
    statistics.leases_audited = s.leases_audited;
    statistics.preprocessing = s.preprocessed.map(|f| pb::Preprocessing {
        removed_options: f.options_out as u64,
        removed_items: f.items_out as u64,
        rounds: f.rounds,
        mems: f.mems,
    });
    statistics
}

/// A duration as `google.protobuf.Duration` (saturating).
pub fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration::try_from(d).unwrap_or(prost_types::Duration {
        seconds: i64::MAX,
        nanos: 999_999_999,
    })
}

/// Seconds since the Unix epoch (0 before it).
pub fn unix_seconds(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The time [`unix_seconds`] gave (the epoch for what is not a time),
/// to the nearest microsecond: a job's times are whole microseconds (see
/// `Job::new`), which an f64 of seconds holds exactly enough
/// (to about 0.24 us until 2106) for the rounding to give them back, so
/// that a job's create_time is the same before and after a restart.
pub fn from_unix_seconds(seconds: f64) -> std::time::SystemTime {
    let micros = (seconds * 1e6).round();
    if !(0.0..=u64::MAX as f64).contains(&micros) {
        return std::time::UNIX_EPOCH;
    }
    std::time::UNIX_EPOCH + Duration::from_micros(micros as u64)
}

/// A time as `google.protobuf.Timestamp`.
pub fn timestamp(t: std::time::SystemTime) -> prost_types::Timestamp {
    prost_types::Timestamp::from(t)
}

#[cfg(test)]
mod time_tests {
    use super::*;

    #[test]
    fn create_times_survive_the_store_exactly() {
        let now = std::time::SystemTime::now();
        for nanos in [0u64, 1, 999, 123_456_789, 999_999_999] {
            let t = now + Duration::from_nanos(nanos);
            let micros = t.duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64;
            let t = std::time::UNIX_EPOCH + Duration::from_micros(micros);
            assert_eq!(from_unix_seconds(unix_seconds(t)), t);
        }
        assert_eq!(from_unix_seconds(f64::NAN), std::time::UNIX_EPOCH);
        assert_eq!(from_unix_seconds(-5.0), std::time::UNIX_EPOCH);
    }
}

pub fn end_reason(reason: EndReason) -> pb::EndReason {
    match reason {
        EndReason::Complete => pb::EndReason::Complete,
        EndReason::Limit => pb::EndReason::Limit,
        EndReason::Cancelled => pb::EndReason::Cancelled,
        EndReason::Deadline => pb::EndReason::Deadline,
        EndReason::NodeLimit => pb::EndReason::NodeLimit,
        EndReason::Shutdown => pb::EndReason::Shutdown,
        EndReason::Failed => pb::EndReason::Failed,
    }
}

pub fn summary(s: &Summary) -> pb::Summary {
    pb::Summary {
        solutions: s.solutions,
        statistics: Some(summary_statistics(s)),
        reason: end_reason(s.reason) as i32,
        exhausted: s.reason == EndReason::Complete,
        // The status the search's call ends with, details and all: one
        // place says what a client sees, in a status or in a summary.
        error: end_status(s).map(|status| status::message_of(&status)),
    }
}

/// The status that ends a call whose job ended for `s.reason`, after its
/// summary (or instead of a unary call's answer); `None` when the job did
/// what was asked (COMPLETE, LIMIT, NODE_LIMIT), which ends the call OK.
/// Every RPC that runs a search ends through here, so a new end reason has
/// one place to say what a client sees (the proto's `EndReason` documents
/// it), and [`summary`] puts the same status in `Summary.error`:
/// - SHUTDOWN: UNAVAILABLE with a `RetryInfo` and `ErrorInfo` reason
///   `SHUTTING_DOWN`: the answer is partial, the same call may be retried;
/// - DEADLINE: DEADLINE_EXCEEDED; CANCELLED: CANCELLED;
/// - FAILED: ABORTED when its tasks were lost with their workers too often
///   (try again), RESOURCE_EXHAUSTED (`JOB_STORE_LIMIT`) when it outgrew the
///   store or (`SEARCH_MEMORY_LIMIT`) its search's memory, UNAVAILABLE
///   (`NO_WORKERS`, with a `RetryInfo`) when no worker came to run it,
///   the job store's reason (`STORE_*`, see [`status::store`]) when the
///   store failed under a durable job, INTERNAL when a run failed (a bug: a
///   panic, or a task that names no node).
pub fn end_status(s: &Summary) -> Option<tonic::Status> {
    match s.reason {
        EndReason::Complete | EndReason::Limit | EndReason::NodeLimit => None,
        EndReason::Shutdown => Some(status::shutting_down(format!(
            "the server is shutting down: the search was stopped after {} solutions \
             and {} nodes, so the answer is partial; try again",
            s.solutions, s.stats.nodes
        ))),
        EndReason::Deadline => Some(status::deadline(
            "the call's deadline passed: the answer is partial",
        )),
        EndReason::Cancelled => Some(status::error(
            status::Reason::Cancelled,
            "the search was cancelled: the answer is partial",
        )),
        EndReason::Failed => Some(match &s.failure {
            Some(Failure::Lost(message)) => {
                status::error(status::Reason::WorkLost, message.clone())
            }
            Some(Failure::Broken(message)) => status::internal(message.clone()),
            Some(Failure::Exhausted(message)) => {
                status::exhausted(status::Reason::JobStoreLimit, message.clone())
            }
            Some(Failure::Memory(message)) => {
                status::exhausted(status::Reason::SearchMemoryLimit, message.clone())
            }
            Some(Failure::NoWorkers(message)) => status::no_workers(message.clone()),
            Some(Failure::Store(message, cause)) => {
                status::error(status::store_reason(*cause), message.clone())
            }
            Some(Failure::Corrupted(message)) => {
                status::error(status::Reason::AuditUncorrectable, message.clone())
            }
            None => status::internal("the search failed"),
        }),
    }
}

/// The status that ends a WatchJob call once the job it watches has ended:
/// as [`end_status`] for SHUTDOWN (the watch is cut short) and FAILED, and
/// OK when CancelJob or its own deadline ended the job, since the watch saw
/// the job to its end.
pub fn watch_end_status(s: &Summary) -> Option<tonic::Status> {
    match s.reason {
        EndReason::Cancelled | EndReason::Deadline => None,
        _ => end_status(s),
    }
}

pub fn progress(p: &Progress) -> pb::Progress {
    pb::Progress {
        solutions: p.solutions,
        nodes: p.nodes,
        fraction_done: p.fraction_done,
        elapsed_seconds: p.elapsed.as_secs_f64(),
        eta_seconds: p.eta.map_or(-1.0, |d| d.as_secs_f64()),
        tasks_queued: p.tasks_queued as u32,
        tasks_running: p.tasks_running as u32,
        tasks_done: p.tasks_done,
        workers_busy: p.workers_busy as u32,
        workers_total: p.workers_total as u32,
        elapsed: Some(duration(p.elapsed)),
        waiting_for: p.waiting_for.unwrap_or_default().to_string(),
        waiting: p.waiting_for.is_some(),
    }
}

/// Reads a gRPC deadline (`grpc-timeout` header: an integer and a unit),
/// clamped to ten years. The layer in front of the services
/// ([`super::grpc_headers`]) has refused a header that does not parse.
pub fn deadline<T>(request: &tonic::Request<T>) -> Option<Duration> {
    super::grpc_headers::parse_timeout(request.metadata().get("grpc-timeout")?.as_bytes())
}

/// When a unary call must answer DEADLINE_EXCEEDED: a little before its
/// deadline, counted from the call's arrival, because tonic's own timer on
/// the same deadline would answer CANCELLED. The margin covers a timer that
/// wakes late while the pool's threads hold every core (measured up to
/// 7 ms on two cores).
pub fn unary_deadline(arrived: tokio::time::Instant, d: Duration) -> tokio::time::Instant {
    arrived + d.saturating_sub(d / 25 + Duration::from_millis(15))
}

/// The longest progress interval a request may ask for.
const LONGEST_INTERVAL: f64 = 86_400.0;

/// A progress interval from a request's `field`: 0 means the default (1 s),
/// and at least 10 ms; negative, infinite and NaN values are refused.
pub fn interval(field: &str, seconds: f64) -> Result<Duration, Status> {
    if !(seconds.is_finite() && (0.0..=LONGEST_INTERVAL).contains(&seconds)) {
        return Err(status::invalid(format!(
            "{field}: {seconds} is not a number of seconds between 0 and {LONGEST_INTERVAL}"
        )));
    }
    Ok(if seconds == 0.0 {
        Duration::from_secs(1)
    } else {
        Duration::from_secs_f64(seconds.max(0.01))
    })
}

#[cfg(test)]
mod tests;
