//! What names a job: its id, and the key of the CreateJob that made it.
//! The job store keeps jobs by these without knowing what a running job is
//! ([`super::job`]), so they live apart from it.

/// A job's id on its server.
pub type JobId = u64;

/// A CreateJob's idempotency key (AIP-155, `request_id`) and a digest of
/// the rest of its request: a retry of the same request finds its job by
/// the key, and a different request under the same key is told apart by
/// the digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestKey {
    /// The request_id, a UUID in lower case.
    pub id: String,
    /// SHA-256 of the request without its request_id, in hexadecimal.
    pub digest: String,
}
