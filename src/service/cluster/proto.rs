//! The types generated from `proto/xccd/cluster/v1/worker.proto`, and the
//! one place they are converted to and from the engine's and the run
//! layer's types.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

tonic::include_proto!("xccd.cluster.v1");

use std::sync::Arc;

use crate::puzzles::{EncodeOptions, Kind, Puzzle};
use crate::run::{Batch, RunEnd, RunReport, SideCondition, Solutions, Stop};
use crate::service::convert;
use crate::service::job::WireProblem;
use crate::xcc::{self, Problem};

/// The protocol version of this build; a worker speaking another is refused.
/// 4: workers report solutions packed (`Found.packed_*`).
pub const PROTOCOL_VERSION: u32 = 4;

impl From<&xcc::Task> for Task {
    fn from(task: &xcc::Task) -> Task {
        Task {
            path: task.path.clone(),
            from: task.from,
            to: task.to,
            weight: task.weight,
            cuts: task
                .cuts
                .iter()
                .map(|cut| Cut {
                    path: cut.path.clone(),
                    end: cut.end,
                })
                .collect(),
        }
    }
}

impl From<Task> for xcc::Task {
    fn from(task: Task) -> xcc::Task {
        xcc::Task {
            path: task.path,
            from: task.from,
            to: task.to,
            weight: task.weight,
            cuts: task
                .cuts
                .into_iter()
                .map(|cut| xcc::Cut {
                    path: cut.path,
                    end: cut.end,
                })
                .collect(),
        }
    }
}

impl From<&xcc::Stats> for Statistics {
    fn from(stats: &xcc::Stats) -> Statistics {
        Statistics {
            nodes: stats.nodes,
            updates: stats.updates,
            cleansings: stats.cleansings,
            max_level: stats.max_level as u64,
            replay_updates: stats.replay_updates,
            replay_cleansings: stats.replay_cleansings,
        }
    }
}

impl From<&Statistics> for xcc::Stats {
    fn from(stats: &Statistics) -> xcc::Stats {
        xcc::Stats {
            nodes: stats.nodes,
            updates: stats.updates,
            cleansings: stats.cleansings,
            max_level: usize::try_from(stats.max_level).unwrap_or(usize::MAX),
            replay_updates: stats.replay_updates,
            replay_cleansings: stats.replay_cleansings,
            ..xcc::Stats::default()
        }
    }
}

impl LeaseRef {
    pub fn key(&self) -> (u64, u32) {
        (self.id, self.epoch)
    }
}

/// A worker's report of a run's end.
/// A run's batch of solutions as a worker reports it: packed, `index_bytes`
/// bytes an option index (see [`convert::packed_index_bytes`]).
pub fn found(lease: Option<LeaseRef>, batch: Batch, index_bytes: u32) -> Found {
    let (first, count) = (batch.first, batch.count);
    if batch.solutions.is_empty() {
        return Found {
            lease,
            first,
            count,
            ..Found::default()
        };
    }
    let packed = convert::pack(batch.solutions, index_bytes);
    Found {
        lease,
        first,
        count,
        solutions: Vec::new(),
        packed_indices: packed.indices,
        packed_lengths: packed.lengths,
        packed_index_bytes: packed.index_bytes,
    }
}

/// The solutions a `found` report lists, in either form (one `Options`
/// each, or packed; not both), read as an untrusted report must be.
pub fn found_solutions(found: &mut Found) -> Result<Solutions, String> {
    let packed = !found.packed_lengths.is_empty() || !found.packed_indices.is_empty();
    if packed && !found.solutions.is_empty() {
        return Err("solutions both packed and one message each".into());
    }
    if !packed {
        return Ok(found.solutions.iter().map(|s| &s.indices).collect());
    }
    let lengths = std::mem::take(&mut found.packed_lengths);
    convert::unpack_parts(&found.packed_indices, lengths, found.packed_index_bytes)
}

pub fn task_ended(lease: Option<LeaseRef>, report: &RunReport) -> TaskEnded {
    let mut ended = TaskEnded {
        lease,
        statistics: Some((&report.stats).into()),
        found: report.found,
        ..TaskEnded::default()
    };
    ended.status = match &report.end {
        RunEnd::Exhausted => RunStatus::Exhausted,
        RunEnd::Checkpointed(remaining) => {
            ended.remaining = remaining.iter().map(Into::into).collect();
            RunStatus::Checkpointed
        }
        RunEnd::Stopped(Stop::Asked) => RunStatus::Stopped,
        RunEnd::Stopped(Stop::NodeLimit) => RunStatus::NodeLimit,
        RunEnd::Stopped(Stop::SolutionLimit) => RunStatus::SolutionLimit,
        RunEnd::Released => RunStatus::Released,
        RunEnd::Failed(error) => {
            ended.error.clone_from(error);
            RunStatus::Failed
        }
        RunEnd::OutOfMemory(error) => {
            ended.error.clone_from(error);
            RunStatus::OutOfMemory
        }
    } as i32;
    ended
}

/// How the run a [`TaskEnded`] reports ended; `None` for an unknown status.
pub fn run_end(ended: &mut TaskEnded) -> Option<RunEnd> {
    Some(match RunStatus::try_from(ended.status).ok()? {
        RunStatus::Unspecified => return None,
        RunStatus::Exhausted => RunEnd::Exhausted,
        RunStatus::Checkpointed => RunEnd::Checkpointed(
            std::mem::take(&mut ended.remaining)
                .into_iter()
                .map(Into::into)
                .collect(),
        ),
        RunStatus::Stopped => RunEnd::Stopped(Stop::Asked),
        RunStatus::NodeLimit => RunEnd::Stopped(Stop::NodeLimit),
        RunStatus::SolutionLimit => RunEnd::Stopped(Stop::SolutionLimit),
        RunStatus::Released => RunEnd::Released,
        RunStatus::Failed => RunEnd::Failed(std::mem::take(&mut ended.error)),
        RunStatus::OutOfMemory => RunEnd::OutOfMemory(std::mem::take(&mut ended.error)),
    })
}

/// The digest that names a plain problem's text.
pub fn digest(dlx: &str) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(dlx.as_bytes()).to_vec()
}

/// The digest that names a puzzle whose encoding's DLX text is `dlx`: the
/// puzzle and its encoding both, so that two builds that encode the same
/// puzzle differently never share a digest.
fn puzzle_digest(source: &PuzzleSource, dlx: &str) -> Vec<u8> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    for part in [
        "xccd puzzle",
        &source.kind,
        if source.weak { "weak" } else { "full" },
        &source.futoshiki_encoding,
        &source.text,
        dlx,
    ] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize().to_vec()
}

fn puzzle_source(puzzle: &Puzzle) -> PuzzleSource {
    PuzzleSource {
        kind: puzzle.kind.name().to_string(),
        text: puzzle.text.clone(),
        weak: puzzle.options.weak,
        futoshiki_encoding: puzzle.options.encoding.to_string(),
    }
}

/// A job's problem as the protocol sends it: the puzzle it encodes if any
/// (the worker rebuilds the encoding and its side condition), else its
/// DLX text.
pub fn wire_problem(problem: &Problem, puzzle: Option<&Puzzle>) -> WireProblem {
    let dlx = xcc::dlx_format::to_string(problem);
    match puzzle {
        Some(puzzle) => WireProblem {
            digest: puzzle_digest(&puzzle_source(puzzle), &dlx),
            dlx: String::new(),
            puzzle: Some(puzzle.clone()),
        },
        None => WireProblem {
            digest: digest(&dlx),
            dlx,
            puzzle: None,
        },
    }
}

impl From<&WireProblem> for ProblemData {
    fn from(wire: &WireProblem) -> ProblemData {
        ProblemData {
            digest: wire.digest.clone(),
            dlx: wire.dlx.clone(),
            puzzle: wire.puzzle.as_ref().map(puzzle_source),
        }
    }
}

/// What a worker runs a problem's leases on.
pub struct Instance {
    pub problem: Arc<Problem>,
    pub condition: Option<Arc<dyn SideCondition>>,
    /// The puzzle and its encoding, for a puzzle.
    pub puzzle: Option<(Puzzle, Arc<dyn crate::puzzles::Encoded>)>,
}

/// Rebuilds a problem (and a puzzle's side condition) from its data, and
/// checks that it is the one the digest names.
pub fn instance(data: &ProblemData) -> Result<Instance, String> {
    let Some(source) = &data.puzzle else {
        if digest(&data.dlx) != data.digest {
            return Err("the problem's text does not match its digest".into());
        }
        let problem = xcc::dlx_format::parse(&data.dlx)
            .map_err(|e| format!("the problem does not parse: {e}"))?;
        return Ok(Instance {
            problem: Arc::new(problem),
            condition: None,
            puzzle: None,
        });
    };
    let kind: Kind = source.kind.parse()?;
    let encoding = source.futoshiki_encoding.parse()?;
    let puzzle = Puzzle {
        kind,
        text: source.text.clone(),
        options: EncodeOptions {
            weak: source.weak,
            encoding,
        },
    };
    let encoded = puzzle
        .encode()
        .map_err(|e| format!("the puzzle does not encode: {e}"))?;
    let dlx = xcc::dlx_format::to_string(encoded.problem());
    if puzzle_digest(source, &dlx) != data.digest {
        return Err(
            "this worker encodes the puzzle differently from the coordinator (another xccd version?)"
                .into(),
        );
    }
    let encoded: Arc<dyn crate::puzzles::Encoded> = Arc::from(encoded);
    Ok(Instance {
        problem: Arc::new(encoded.problem().clone()),
        condition: Some(encoded.clone()),
        puzzle: Some((puzzle, encoded)),
    })
}
