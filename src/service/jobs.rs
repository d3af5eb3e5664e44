//! Jobs that outlive the connection that submitted them, by id, kept for a
//! while after they end.
//!
//! A running job holds its problem, its buffers and its scheduling; an
//! ended one needs none of that. So when a job ends, the registry keeps only
//! a [`Record`] of it: the job's message (state, progress, summary) and its
//! kept solutions, compact ([`KeptSolutions`]). Records expire after the
//! retention period, and there are at most `max_records` of them holding at
//! most `max_bytes` of solutions: past either cap the oldest records go
//! first. A client can thus fill the server's memory with neither many jobs
//! nor large ones.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prost::Message;

use crate::puzzles::Encoded;
use crate::xcc::Problem;

use super::callers::Caller;
use super::convert;
use super::job::{EndReason, Job, JobId, RequestKey, SolutionIndices, Summary};
use super::pool::Pool;
use super::proto as pb;
use super::puzzle_input::{grid, kind_message};
use super::status;
use super::store::{JobStore, StoreError, StoredJob, StoredRequest};
use super::sync::Locked;

/// How long and how much the registry keeps of ended jobs.
#[derive(Debug, Clone)]
pub struct Retention {
    /// How long an ended job stays readable.
    pub period: Duration,
    /// Most ended jobs kept.
    pub max_records: usize,
    /// Most bytes of kept solutions over all ended jobs.
    pub max_bytes: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            period: Duration::from_secs(600),
            max_records: 10_000,
            max_bytes: 256 << 20,
        }
    }
}

/// What remains of an ended job.
#[derive(Debug)]
pub struct Record {
    pub id: JobId,
    pub owner: Caller,
    /// The job's message as it ended.
    pub message: pb::Job,
    /// Its kept solutions, with their options' text (a durable job's are
    /// in the store).
    pub solutions: KeptSolutions,
    /// Bytes per index of its solutions in SolutionBatch's packed form (0
    /// for a record read back from the store: its solutions are read there,
    /// with its problem).
    pub packed_index_bytes: u32,
    /// The CreateJob request key it was made with, if any.
    pub request: Option<RequestKey>,
    /// Whether its problem's options have costs: its solutions' messages
    /// then need the problem (Solution.cost), even without option text.
    pub costs: bool,
    bytes: usize,
    ended: Instant,
}

impl Record {
    /// Whether the job's solutions are in the store.
    pub fn durable(&self) -> bool {
        self.message.durable
    }

    /// A durable job that ended before this process started, from the
    /// store.
    fn stored(job: &StoredJob) -> Option<Record> {
        let message = pb::Job::decode(job.ended.as_deref()?).ok()?;
        Some(Record {
            id: job.id,
            owner: Caller(job.request.owner.as_deref().map(Arc::from)),
            message,
            solutions: KeptSolutions::default(),
            packed_index_bytes: 0,
            request: job.request.request_key(),
            costs: job.request.costs,
            bytes: 0,
            ended: Instant::now(),
        })
    }
}

/// The final message of a stored job that cannot run again, for `error`
/// (its `Summary.error`).
pub fn failed_message(id: JobId, request: &StoredRequest, error: &tonic::Status) -> pb::Job {
    pb::Job {
        name: format_id(id),
        state: pb::JobState::Failed as i32,
        progress: None,
        summary: Some(pb::Summary {
            reason: pb::EndReason::Failed as i32,
            error: Some(status::message_of(error)),
            ..pb::Summary::default()
        }),
        durable: true,
        stored_solutions: 0,
        create_time: Some(convert::timestamp(convert::from_unix_seconds(
            request.created_unix_seconds,
        ))),
        end_time: Some(convert::timestamp(std::time::SystemTime::now())),
        puzzle_kind: pb::PuzzleKind::Unspecified as i32,
    }
}

/// A submitted job, running or ended.
#[derive(Clone)]
pub enum Entry {
    Live(Arc<Job>),
    Ended(Arc<Record>),
}

impl Entry {
    pub fn id(&self) -> JobId {
        match self {
            Entry::Live(job) => job.id,
            Entry::Ended(record) => record.id,
        }
    }

    pub fn owner(&self) -> &Caller {
        match self {
            Entry::Live(job) => &job.spec.owner,
            Entry::Ended(record) => &record.owner,
        }
    }

    /// The CreateJob request key the job was made with, if any.
    pub fn request(&self) -> Option<&RequestKey> {
        match self {
            Entry::Live(job) => job.spec.request.as_ref(),
            Entry::Ended(record) => record.request.as_ref(),
        }
    }
}

/// The message of a job as it is now.
pub fn message(pool: &Pool, job: &Job) -> pb::Job {
    let summary = job.summary().filter(|_| job.is_over());
    message_with(pool, job, summary, job.committed())
}

/// The message a durable job's end is stored with: done, with all its
/// `stored` solutions.
pub fn final_message(pool: &Pool, job: &Job, stored: u64) -> pb::Job {
    message_with(pool, job, job.summary(), stored)
}

fn message_with(pool: &Pool, job: &Job, summary: Option<Summary>, stored: u64) -> pb::Job {
    let progress = pool.progress(job);
    let state = if let Some(summary) = &summary {
        final_state(summary)
    } else if progress.tasks_running > 0 || progress.nodes > 0 {
        pb::JobState::Running
    } else {
        pb::JobState::Queued
    };
    pb::Job {
        name: format_id(job.id),
        state: state as i32,
        progress: Some(convert::progress(&progress)),
        summary: summary.as_ref().map(convert::summary),
        durable: job.spec.durable,
        stored_solutions: stored,
        create_time: Some(convert::timestamp(job.created)),
        end_time: summary
            .as_ref()
            .map(|_| convert::timestamp(job.ended_at().unwrap_or_else(std::time::SystemTime::now))),
        puzzle_kind: job
            .spec
            .puzzle
            .as_ref()
            .map_or(pb::PuzzleKind::Unspecified, |p| kind_message(p.kind))
            as i32,
    }
}

impl pb::JobState {
    /// Whether a job in this state has ended (SUCCEEDED, FAILED, CANCELLED).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            pb::JobState::Succeeded | pb::JobState::Failed | pb::JobState::Cancelled
        )
    }
}

/// The state of a job that ended so (see JobState in solver.proto): its own
/// limits reached are success, a shutdown under a job that is not durable is
/// a failure (a durable job is not ended by one: it resumes).
pub fn final_state(summary: &Summary) -> pb::JobState {
    match summary.reason {
        EndReason::Complete | EndReason::Limit | EndReason::NodeLimit => pb::JobState::Succeeded,
        EndReason::Cancelled => pb::JobState::Cancelled,
        EndReason::Deadline | EndReason::Shutdown | EndReason::Failed => pb::JobState::Failed,
    }
}

#[derive(Default)]
struct Entries {
    by_id: BTreeMap<JobId, Entry>,
    /// Bytes held by the records.
    bytes: usize,
    records: usize,
}

pub struct JobRegistry {
    entries: Mutex<Entries>,
    retention: Retention,
    pool: Arc<Pool>,
    /// Where durable jobs live: an ended one is read from there once its
    /// record has left memory.
    store: Option<Arc<dyn JobStore>>,
}

impl JobRegistry {
    pub fn new(
        pool: Arc<Pool>,
        retention: Retention,
        store: Option<Arc<dyn JobStore>>,
    ) -> JobRegistry {
        JobRegistry {
            entries: Mutex::new(Entries::default()),
            retention,
            pool,
            store,
        }
    }

    /// Forgets job `id` (its record, and the stored job); true if it was
    /// known. A running job must have been cancelled first.
    pub fn remove(&self, id: JobId) -> Result<bool, StoreError> {
        let mut entries = self.entries.locked();
        let known = match entries.by_id.remove(&id) {
            Some(Entry::Ended(record)) => {
                entries.records -= 1;
                entries.bytes -= record.bytes;
                true
            }
            Some(Entry::Live(_)) => true,
            None => false,
        };
        drop(entries);
        let stored = match &self.store {
            Some(store) => store.delete(id)?,
            None => false,
        };
        Ok(known || stored)
    }

    /// A stored job that ended before this process started.
    fn stored(&self, id: JobId) -> Option<Entry> {
        let job = match self.store.as_ref()?.get(id) {
            Ok(job) => job?,
            Err(error) => {
                tracing::error!(job = id, %error, "reading a stored job failed");
                return None;
            }
        };
        Some(Entry::Ended(Arc::new(Record::stored(&job)?)))
    }

    /// Keeps a stored job that did not end but cannot run now (its store
    /// cannot be written) readable, as failed for `why`, with its committed
    /// solutions; it resumes at a later start, as it is in the store.
    pub fn insert_unresumed(&self, job: &StoredJob, why: &tonic::Status) {
        let mut message = failed_message(job.id, &job.request, why);
        message.stored_solutions = job.committed;
        let record = Record {
            id: job.id,
            owner: Caller(job.request.owner.as_deref().map(Arc::from)),
            message,
            solutions: KeptSolutions::default(),
            packed_index_bytes: 0,
            request: job.request.request_key(),
            costs: job.request.costs,
            bytes: 0,
            ended: Instant::now(),
        };
        let mut entries = self.entries.locked();
        entries.records += 1;
        entries.by_id.insert(job.id, Entry::Ended(Arc::new(record)));
    }

    pub fn insert(&self, job: Arc<Job>) {
        let mut entries = self.entries.locked();
        entries.by_id.insert(job.id, Entry::Live(job));
        let freed = self.tidy(&mut entries);
        drop(entries);
        give_back(freed);
    }

    pub fn get(&self, id: JobId) -> Option<Entry> {
        let mut entries = self.entries.locked();
        let freed = self.tidy(&mut entries);
        let found = entries.by_id.get(&id).cloned();
        drop(entries);
        give_back(freed);
        found.or_else(|| self.stored(id))
    }

    /// Every remembered job, oldest first: those in memory, and the ended
    /// ones of the store.
    pub fn list(&self) -> Vec<Entry> {
        let mut entries = self.entries.locked();
        let freed = self.tidy(&mut entries);
        let mut all = entries.by_id.clone();
        drop(entries);
        give_back(freed);
        if let Some(store) = &self.store {
            for job in store.list().unwrap_or_default() {
                if let std::collections::btree_map::Entry::Vacant(slot) = all.entry(job.id) {
                    if let Some(record) = Record::stored(&job) {
                        slot.insert(Entry::Ended(Arc::new(record)));
                    }
                }
            }
        }
        all.into_values().collect()
    }

    /// The job of `caller` made by a CreateJob with request_id `id`, if
    /// the registry (or the store) still remembers it.
    pub fn find_request(&self, caller: &Caller, id: &str) -> Option<Entry> {
        self.list()
            .into_iter()
            .find(|entry| caller.owns(entry.owner()) && entry.request().is_some_and(|k| k.id == id))
    }

    /// Jobs remembered now, and bytes their records hold.
    pub fn usage(&self) -> (usize, usize) {
        let mut entries = self.entries.locked();
        let freed = self.tidy(&mut entries);
        let usage = (entries.by_id.len(), entries.bytes);
        drop(entries);
        give_back(freed);
        usage
    }

    /// Turns ended jobs into records, then drops the expired records and,
    /// past the caps, the oldest ones; returns the bytes of the records
    /// dropped (for [`give_back`], once the lock is released).
    fn tidy(&self, entries: &mut Entries) -> usize {
        let ended: Vec<Arc<Job>> = entries
            .by_id
            .values()
            .filter_map(|e| match e {
                Entry::Live(job) if job.is_over() => Some(job.clone()),
                _ => None,
            })
            .collect();
        for job in ended {
            let record = self.record(&job);
            entries.bytes += record.bytes;
            entries.records += 1;
            entries.by_id.insert(job.id, Entry::Ended(Arc::new(record)));
        }
        let now = Instant::now();
        let period = self.retention.period;
        let (mut records, mut bytes) = (entries.records, entries.bytes);
        let mut gone = Vec::new();
        let mut freed = 0;
        for (id, entry) in &entries.by_id {
            if let Entry::Ended(record) = entry {
                let expired = now.saturating_duration_since(record.ended) >= period;
                let over = records > self.retention.max_records || bytes > self.retention.max_bytes;
                if expired || over {
                    gone.push(*id);
                    records -= 1;
                    bytes -= record.bytes;
                    freed += record.bytes;
                }
            }
        }
        for id in gone {
            entries.by_id.remove(&id);
        }
        entries.records = records;
        entries.bytes = bytes;
        freed
    }

    fn record(&self, job: &Job) -> Record {
        let solutions =
            KeptSolutions::new(&job.problem, job.spec.grids.as_deref(), &job.kept_from(0));
        let bytes = 512 + solutions.bytes();
        Record {
            id: job.id,
            owner: job.spec.owner.clone(),
            message: message(&self.pool, job),
            solutions,
            packed_index_bytes: convert::packed_index_bytes(&job.problem),
            request: job.spec.request.clone(),
            costs: job.problem.has_costs(),
            bytes,
            ended: job
                .summary()
                .map_or_else(Instant::now, |s| job.started + s.elapsed),
        }
    }
}

/// Records of at least this many bytes dropped at once are worth handing
/// their memory back to the system for.
const GIVE_BACK_BYTES: usize = 16 << 20;

/// Hands the free memory of the heap back to the system after `freed`
/// bytes of records were dropped: glibc keeps freed memory in its arenas
/// (see [`KeptSolutions`] for the figures).
fn give_back(freed: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if freed >= GIVE_BACK_BYTES {
        // SAFETY: malloc_trim only walks and releases glibc's own free
        // lists; it takes no pointer of ours.
        unsafe {
            libc::malloc_trim(0);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (freed, GIVE_BACK_BYTES);
}

/// The kept solutions of an ended job, compact: every solution's option
/// indices one after the other in one vector, and the text of each option
/// used once (its solutions mostly repeat the same options).
///
/// Messages are built when read (GetJob, WatchJob), for the window read.
/// Measured with examples/retention_rss.py (40 latin5 jobs keeping 100,000
/// solutions each, 256 MiB cap, VmRSS once all ended / once all expired):
///
/// | records                         | plateau  | expired  |
/// |---------------------------------|----------|----------|
/// | a `pb::Solution` each (before)  | 1,489 MB | 1,158 MB |
/// |   with MALLOC_ARENA_MAX=2       | 1,279 MB | 1,279 MB |
/// |   with jemalloc (LD_PRELOAD)    |   264 MB |    33 MB |
/// | compact                         |   400 MB |   304 MB |
/// |   with MALLOC_ARENA_MAX=2       |   406 MB |   148 MB |
/// |   with jemalloc (LD_PRELOAD)    |   272 MB |    19 MB |
/// |   with [`give_back`] (adopted)  |   274 MB |    17 MB |
///
/// (Before, the cap's estimate let only 2 records stay, of a real 150 MB
/// or so each in a `String` per option; compact, 24 stay, of 11 MB each.)
/// The compact form with malloc_trim does as well as jemalloc, without a
/// change of allocator (and its effect on every search).
#[derive(Debug, Default)]
pub struct KeptSolutions {
    /// The solutions' option indices, one solution after another.
    indices: Vec<u32>,
    /// Where each solution ends in `indices`.
    ends: Vec<usize>,
    /// The options the solutions use, sorted, with their texts.
    options: Vec<u32>,
    texts: Vec<Box<str>>,
    /// A puzzle job's solutions as grids, in order (empty otherwise).
    grids: Vec<Box<str>>,
    /// Each solution's cost, in order (empty for a problem without costs).
    costs: Vec<u64>,
}

impl KeptSolutions {
    /// The solutions `kept` of `problem`, with their options' text, and
    /// their grids for a puzzle job (`puzzle` the puzzle's encoding).
    pub fn new(
        problem: &Problem,
        puzzle: Option<&dyn Encoded>,
        kept: &[SolutionIndices],
    ) -> KeptSolutions {
        let total = kept.iter().map(|s| s.len()).sum();
        let mut indices = Vec::with_capacity(total);
        let mut ends = Vec::with_capacity(kept.len());
        for solution in kept {
            indices.extend_from_slice(solution);
            ends.push(indices.len());
        }
        let mut options = indices.clone();
        options.sort_unstable();
        options.dedup();
        options.shrink_to_fit();
        let texts = options
            .iter()
            .map(|&o| problem.format_option(o as usize).into_boxed_str())
            .collect();
        let grids = match puzzle {
            Some(encoded) => kept
                .iter()
                .map(|s| grid(encoded, s).text.into_boxed_str())
                .collect(),
            None => Vec::new(),
        };
        let costs = match problem.has_costs() {
            true => kept
                .iter()
                .map(|s| super::convert::solution_cost(problem, s))
                .collect(),
            false => Vec::new(),
        };
        KeptSolutions {
            indices,
            ends,
            options,
            texts,
            grids,
            costs,
        }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Solution `i`'s option indices.
    pub fn indices(&self, i: usize) -> &[u32] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.indices[start..self.ends[i]]
    }

    /// Every solution's option indices, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u32]> + '_ {
        (0..self.len()).map(|i| self.indices(i))
    }

    /// The messages of the first `n` solutions (or all, if fewer), with
    /// their options' text.
    pub fn messages(&self, n: usize) -> Vec<pb::Solution> {
        self.iter()
            .take(n)
            .enumerate()
            .map(|(i, indices)| pb::Solution {
                cost: self.costs.get(i).copied().unwrap_or(0),
                option_indices: indices.to_vec(),
                option_texts: indices.iter().map(|&o| self.text(o).to_string()).collect(),
                grid: self.grids.get(i).map(|text| pb::PuzzleSolution {
                    lines: text.lines().map(str::to_string).collect(),
                    text: text.to_string(),
                }),
            })
            .collect()
    }

    fn text(&self, option: u32) -> &str {
        // Every option of a solution is in `options`, by construction.
        let at = self.options.binary_search(&option).unwrap_or_default();
        &self.texts[at]
    }

    /// Bytes it holds, roughly (what the retention cap counts).
    fn bytes(&self) -> usize {
        4 * self.indices.len()
            + 8 * self.ends.len()
            + self.texts.iter().map(|t| 4 + 16 + t.len()).sum::<usize>()
            + self.grids.iter().map(|t| 16 + t.len()).sum::<usize>()
    }
}

/// A job's resource name, `jobs/{id}` (Google's API guidelines).
pub fn format_id(id: JobId) -> String {
    format!("jobs/{id}")
}

/// Parses [`format_id`]'s form (and `job-{id}`, the form before it).
pub fn parse_id(text: &str) -> Option<JobId> {
    let digits = text
        .strip_prefix("jobs/")
        .or_else(|| text.strip_prefix("job-"))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job's final message stored before `Summary.error` became a
    /// google.rpc.Status (a string in field 5, now reserved) still reads,
    /// its error unset; the same string under the Status's number would
    /// not, and the stored job would be lost (the proto's reason for 6).
    #[test]
    fn a_final_message_stored_with_a_string_error_still_reads() {
        let old = |field: u8| {
            let mut summary = pb::Summary {
                solutions: 3,
                reason: pb::EndReason::Failed as i32,
                ..pb::Summary::default()
            }
            .encode_to_vec();
            summary.extend([(field << 3) | 2, 4]);
            summary.extend(b"boom");
            let mut job = pb::Job {
                name: "jobs/7".into(),
                state: pb::JobState::Failed as i32,
                ..pb::Job::default()
            }
            .encode_to_vec();
            job.extend([(4 << 3) | 2, summary.len() as u8]);
            job.extend(summary);
            job
        };
        let job = pb::Job::decode(old(5).as_slice()).expect("an old record decodes");
        assert_eq!(job.name, "jobs/7");
        assert_eq!(job.state(), pb::JobState::Failed);
        let summary = job.summary.expect("its summary");
        assert_eq!(summary.solutions, 3);
        assert_eq!(summary.reason(), pb::EndReason::Failed);
        assert!(summary.error.is_none());
        assert!(pb::Job::decode(old(6).as_slice()).is_err());
    }

    /// The compact form gives back what a message per solution held: the
    /// same indices and texts, in order, for any window.
    #[test]
    fn kept_solutions_read_back_as_messages() {
        let problem =
            crate::xcc::dlx_format::parse(include_str!("../../bench/instances/latin4.dlx"))
                .expect("latin4 parses");
        let kept: Vec<SolutionIndices> = vec![vec![0, 5, 17], vec![3], vec![], vec![17, 2, 0]];
        let compact = KeptSolutions::new(&problem, None, &kept);
        assert_eq!(compact.len(), kept.len());
        let expected: Vec<pb::Solution> = kept
            .iter()
            .map(|s| convert::solution(&problem, s, true))
            .collect();
        assert_eq!(compact.messages(usize::MAX), expected);
        assert_eq!(compact.messages(2), expected[..2]);
        let lists: Vec<&[u32]> = compact.iter().collect();
        assert_eq!(lists, kept.iter().map(|s| s.as_slice()).collect::<Vec<_>>());
        assert!(KeptSolutions::new(&problem, None, &[]).is_empty());
    }
}
