//! The statuses of the public API, with the error details that gRPC clients
//! read by machine (Google's API guidelines, through `tonic-types`): a bad
//! request names its field in a `google.rpc.BadRequest`, and a refusal for
//! want of resources says which limit in a `google.rpc.ErrorInfo`.
//!
//! Messages keep their form "field: what is wrong", so people read the same
//! thing that programs parse.

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// Where the API's error reasons live (`ErrorInfo.domain`).
pub const DOMAIN: &str = "xccd.dev";

/// The field a message "field: description" names, if it names one: a path
/// of lower-case names, indices and dots.
fn field_of(message: &str) -> Option<(&str, &str)> {
    let (field, description) = message.split_once(": ")?;
    let plausible = !field.is_empty()
        && field.len() <= 128
        && field.starts_with(|c: char| c.is_ascii_lowercase())
        && field
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.[]".contains(c));
    plausible.then_some((field, description))
}

/// INVALID_ARGUMENT for `message` ("field: what is wrong"), with a
/// `BadRequest` field violation naming the field.
pub fn invalid(message: impl Into<String>) -> Status {
    let message = message.into();
    match field_of(&message) {
        Some((field, description)) => Status::with_error_details(
            Code::InvalidArgument,
            message.clone(),
            ErrorDetails::with_bad_request_violation(field, description),
        ),
        None => Status::invalid_argument(message),
    }
}

/// A count a request asks for: `default` for 0, INVALID_ARGUMENT naming
/// `field` past `max`.
pub fn count(field: &str, value: u32, default: usize, max: usize) -> Result<usize, Status> {
    match value as usize {
        0 => Ok(default),
        n if n > max => Err(invalid(format!("{field}: {n} exceeds the limit of {max}"))),
        n => Ok(n),
    }
}

/// RESOURCE_EXHAUSTED for `message`, with an `ErrorInfo` whose reason
/// (`TOO_MANY_JOBS`, `STORE_FULL`, ...) programs can branch on.
pub fn exhausted(reason: &str, message: impl Into<String>) -> Status {
    Status::with_error_details(
        Code::ResourceExhausted,
        message,
        ErrorDetails::with_error_info(reason, DOMAIN, std::collections::HashMap::new()),
    )
}

/// How long a client should wait before trying a call again that the
/// server's shutdown cut short (`RetryInfo.retry_delay`): a restart, or
/// another replica behind the same address, takes about that.
pub const SHUTDOWN_RETRY_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// UNAVAILABLE for a call the server's shutdown refused or cut short, with
/// a `RetryInfo` (try again in [`SHUTDOWN_RETRY_DELAY`]) and an `ErrorInfo`
/// whose reason is `SHUTTING_DOWN`.
pub fn shutting_down(message: impl Into<String>) -> Status {
    let mut details = ErrorDetails::with_retry_info(Some(SHUTDOWN_RETRY_DELAY));
    details.set_error_info("SHUTTING_DOWN", DOMAIN, std::collections::HashMap::new());
    Status::with_error_details(Code::Unavailable, message, details)
}

/// RESOURCE_EXHAUSTED for `message`, with an `ErrorInfo` of `reason` and
/// `metadata` (the numbers a program needs, such as bytes and limits), and
/// a `RetryInfo` when the refusal is for now only.
pub fn exhausted_with(
    reason: &str,
    message: impl Into<String>,
    metadata: &[(&str, String)],
    retry: Option<std::time::Duration>,
) -> Status {
    let metadata: std::collections::HashMap<String, String> = metadata
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let mut details = ErrorDetails::new();
    details.set_error_info(reason, DOMAIN, metadata);
    if retry.is_some() {
        details.set_retry_info(retry);
    }
    Status::with_error_details(Code::ResourceExhausted, message, details)
}

/// How long a client is told to wait before it tries again a call that
/// found no worker.
pub const NO_WORKERS_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// UNAVAILABLE for a call that found no worker to run it, with an
/// `ErrorInfo` (reason `NO_WORKERS`) and a `RetryInfo`.
pub fn no_workers(message: impl Into<String>) -> Status {
    let mut details = ErrorDetails::with_retry_info(Some(NO_WORKERS_RETRY));
    details.set_error_info("NO_WORKERS", DOMAIN, std::collections::HashMap::new());
    Status::with_error_details(Code::Unavailable, message, details)
}

/// The status of a call the job store failed: one that cannot be written
/// says why in an `ErrorInfo` (`STORE_DISK_FULL` is RESOURCE_EXHAUSTED,
/// `STORE_READ_ONLY` and `STORE_PERMISSION_DENIED` are UNAVAILABLE: an
/// operator must act); any other failure is UNAVAILABLE.
pub fn store(error: &crate::service::store::StoreError) -> Status {
    use crate::service::store::Cause;
    let code = match error.cause() {
        Some(Cause::Full) => Code::ResourceExhausted,
        Some(_) => Code::Unavailable,
        None => return Status::unavailable(error.to_string()),
    };
    let reason = error.cause().map(Cause::reason).unwrap_or_default();
    Status::with_error_details(
        code,
        error.to_string(),
        ErrorDetails::with_error_info(reason, DOMAIN, std::collections::HashMap::new()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_field_becomes_a_field_violation() {
        let status = invalid("problem.dlx: line 3: unknown item \"C\"");
        let details = status.get_error_details();
        let bad = details.bad_request().expect("a BadRequest");
        assert_eq!(bad.field_violations[0].field, "problem.dlx");
        assert_eq!(
            bad.field_violations[0].description,
            "line 3: unknown item \"C\""
        );
        assert_eq!(status.code(), Code::InvalidArgument);
        let plain = invalid("Nothing names a field here");
        assert!(plain.get_error_details().bad_request().is_none());
    }

    #[test]
    fn exhaustion_says_why() {
        let status = exhausted("TOO_MANY_JOBS", "too many jobs");
        let details = status.get_error_details();
        let info = details.error_info().expect("an ErrorInfo");
        assert_eq!(info.reason, "TOO_MANY_JOBS");
        assert_eq!(info.domain, DOMAIN);
    }

    #[test]
    fn shutdown_says_when_to_retry() {
        let status = shutting_down("the server is shutting down");
        assert_eq!(status.code(), Code::Unavailable);
        let details = status.get_error_details();
        assert_eq!(details.error_info().unwrap().reason, "SHUTTING_DOWN");
        assert_eq!(
            details.retry_info().unwrap().retry_delay,
            Some(SHUTDOWN_RETRY_DELAY)
        );
    }
}
