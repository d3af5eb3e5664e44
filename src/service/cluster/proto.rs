//! The types generated from `proto/xccd/cluster/v1/worker.proto`, and their
//! conversions to the engine's.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

tonic::include_proto!("xccd.cluster.v1");

use crate::xcc;

/// The protocol version of this build; a worker speaking another is refused.
pub const PROTOCOL_VERSION: u32 = 1;

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
        }
    }
}

impl From<&Statistics> for xcc::Stats {
    fn from(stats: &Statistics) -> xcc::Stats {
        xcc::Stats {
            nodes: stats.nodes,
            updates: stats.updates,
            cleansings: stats.cleansings,
            max_level: stats.max_level as usize,
            ..xcc::Stats::default()
        }
    }
}

impl LeaseRef {
    pub fn key(&self) -> (u64, u32) {
        (self.id, self.epoch)
    }
}

/// The digest that names a problem's text.
pub fn digest(dlx: &str) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(dlx.as_bytes()).to_vec()
}
