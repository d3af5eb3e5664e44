//! The service: a worker pool that runs subtree tasks of many jobs, and the
//! gRPC API in front of it.
//!
//! One idea per file: [`job`] (what a job shares with its consumers),
//! [`pool`] (workers and scheduling), [`jobs`] (jobs that outlive a
//! connection), [`convert`] (messages to and from the engine's types),
//! [`grpc`] (the RPCs), [`puzzles_grpc`] (the puzzle RPCs), [`grpc_headers`]
//! (the gRPC headers checked before any service), [`server`] (listening,
//! health, reflection, metrics, shutdown), [`tls_advice`] (the causes and
//! fixes of failed TLS handshakes), [`job_filter`] (ListJobs' AIP-160
//! filter), [`page_token`] (the lists' opaque page tokens), [`preprocess`]
//! (a request's DLX-PRE before its job's search), [`telemetry`]
//! (OpenTelemetry traces, off by default) and [`grpc_trace`] (a gRPC call's
//! span).

pub mod callers;
pub mod cluster;
pub mod convert;
pub mod credentials;
pub mod dashboard;
pub mod durable;
pub mod estimate;
pub mod grpc;
pub mod grpc_headers;
pub mod grpc_metrics;
pub mod grpc_trace;
pub mod http_listener;
pub mod job;
pub mod job_filter;
pub mod job_id;
pub mod job_output;
pub mod jobs;
pub mod leader;
pub mod leader_gate;
pub mod memory;
pub mod metrics;
pub mod page_token;
pub mod pool;
pub mod preprocess;
pub mod proto;
pub mod puzzle_input;
pub mod puzzles_grpc;
pub mod server;
pub mod status;
pub mod store;
mod sync;
pub mod telemetry;
pub mod tls_advice;

pub use crate::run::SideCondition;

/// An error with its causes, for people ("transport error: connection
/// refused", "invalid peer certificate: UnknownIssuer").
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}
pub use job::{Class, Delivery, EndReason, Job, JobSpec, Progress, Summary};
pub use pool::{Pool, PoolConfig};
