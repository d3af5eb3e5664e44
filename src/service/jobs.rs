//! Jobs that outlive the connection that submitted them, by id, kept for a
//! while after they end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::job::{Job, JobId};

pub struct JobRegistry {
    jobs: Mutex<HashMap<JobId, Arc<Job>>>,
    retention: Duration,
}

impl JobRegistry {
    pub fn new(retention: Duration) -> JobRegistry {
        JobRegistry {
            jobs: Mutex::new(HashMap::new()),
            retention,
        }
    }

    pub fn insert(&self, job: Arc<Job>) {
        let mut jobs = self.jobs.lock().unwrap();
        self.expire(&mut jobs);
        jobs.insert(job.id, job);
    }

    pub fn get(&self, id: JobId) -> Option<Arc<Job>> {
        let mut jobs = self.jobs.lock().unwrap();
        self.expire(&mut jobs);
        jobs.get(&id).cloned()
    }

    /// Every remembered job, oldest first.
    pub fn list(&self) -> Vec<Arc<Job>> {
        let mut jobs = self.jobs.lock().unwrap();
        self.expire(&mut jobs);
        let mut all: Vec<Arc<Job>> = jobs.values().cloned().collect();
        all.sort_by_key(|j| j.id);
        all
    }

    /// Drops the jobs that ended more than `retention` ago.
    fn expire(&self, jobs: &mut HashMap<JobId, Arc<Job>>) {
        let now = Instant::now();
        jobs.retain(|_, job| match job.summary() {
            Some(summary) => now.duration_since(job.started + summary.elapsed) < self.retention,
            None => true,
        });
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
