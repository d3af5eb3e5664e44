//! Jobs that outlive the connection that submitted them, by id, kept for a
//! while after they end.
//!
//! A running job holds its problem, its buffers and its scheduling; an
//! ended one needs none of that. So when a job ends, the registry keeps only
//! a [`Record`] of it: the job's message (state, progress, summary) and its
//! kept solutions as the API returns them. Records expire after the
//! retention period, and there are at most `max_records` of them holding at
//! most `max_bytes` of solutions: past either cap the oldest records go
//! first. A client can thus fill the server's memory with neither many jobs
//! nor large ones.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::callers::Caller;
use super::convert;
use super::job::{Job, JobId};
use super::pool::Pool;
use super::proto as pb;
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
    /// Its kept solutions, with their options' text.
    pub solutions: Vec<pb::Solution>,
    bytes: usize,
    ended: Instant,
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
}

/// The message of a job as it is now.
pub fn message(pool: &Pool, job: &Job) -> pb::Job {
    let progress = pool.progress(job);
    let summary = job.summary();
    let state = if summary.is_some() {
        pb::JobState::Done
    } else if progress.tasks_running > 0 || progress.nodes > 0 {
        pb::JobState::Running
    } else {
        pb::JobState::Queued
    };
    pb::Job {
        job_id: format_id(job.id),
        state: state as i32,
        progress: Some(convert::progress(&progress)),
        summary: summary.as_ref().map(convert::summary),
        created_unix_seconds: job
            .created
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
    }
}

/// Bytes a solution takes in a record, roughly.
fn solution_bytes(solution: &pb::Solution) -> usize {
    64 + 4 * solution.option_indices.len()
        + solution
            .option_texts
            .iter()
            .map(|t| t.len() + 24)
            .sum::<usize>()
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
}

impl JobRegistry {
    pub fn new(pool: Arc<Pool>, retention: Retention) -> JobRegistry {
        JobRegistry {
            entries: Mutex::new(Entries::default()),
            retention,
            pool,
        }
    }

    pub fn insert(&self, job: Arc<Job>) {
        let mut entries = self.entries.locked();
        entries.by_id.insert(job.id, Entry::Live(job));
        self.tidy(&mut entries);
    }

    pub fn get(&self, id: JobId) -> Option<Entry> {
        let mut entries = self.entries.locked();
        self.tidy(&mut entries);
        entries.by_id.get(&id).cloned()
    }

    /// Every remembered job, oldest first.
    pub fn list(&self) -> Vec<Entry> {
        let mut entries = self.entries.locked();
        self.tidy(&mut entries);
        entries.by_id.values().cloned().collect()
    }

    /// Jobs remembered now, and bytes their records hold.
    pub fn usage(&self) -> (usize, usize) {
        let mut entries = self.entries.locked();
        self.tidy(&mut entries);
        (entries.by_id.len(), entries.bytes)
    }

    /// Turns ended jobs into records, then drops the expired records and,
    /// past the caps, the oldest ones.
    fn tidy(&self, entries: &mut Entries) {
        let ended: Vec<Arc<Job>> = entries
            .by_id
            .values()
            .filter_map(|e| match e {
                Entry::Live(job) if job.summary().is_some() => Some(job.clone()),
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
        for (id, entry) in &entries.by_id {
            if let Entry::Ended(record) = entry {
                let expired = now.saturating_duration_since(record.ended) >= period;
                let over = records > self.retention.max_records || bytes > self.retention.max_bytes;
                if expired || over {
                    gone.push(*id);
                    records -= 1;
                    bytes -= record.bytes;
                }
            }
        }
        for id in gone {
            entries.by_id.remove(&id);
        }
        entries.records = records;
        entries.bytes = bytes;
    }

    fn record(&self, job: &Job) -> Record {
        let solutions: Vec<pb::Solution> = job
            .kept_from(0)
            .iter()
            .map(|s| convert::solution(&job.problem, s, true))
            .collect();
        let bytes = 512 + solutions.iter().map(solution_bytes).sum::<usize>();
        Record {
            id: job.id,
            owner: job.spec.owner.clone(),
            message: message(&self.pool, job),
            solutions,
            bytes,
            ended: job
                .summary()
                .map_or_else(Instant::now, |s| job.started + s.elapsed),
        }
    }
}

/// The text form of a job id.
pub fn format_id(id: JobId) -> String {
    format!("job-{id}")
}

/// Parses [`format_id`]'s form.
pub fn parse_id(text: &str) -> Option<JobId> {
    text.strip_prefix("job-")?.parse().ok()
}
