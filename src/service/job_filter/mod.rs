//! The `filter` of ListJobs: a small subset of Google's AIP-160 filter
//! language, parsed once per call and matched against each job's facts.
//!
//! What it accepts:
//!
//! - comparisons `field op value`:
//!   - `state = RUNNING`, `state != JOB_STATE_FAILED` (`=`, `!=`; a
//!     [`JobState`] name with or without its `JOB_STATE_` prefix, in
//!     capitals: enum values are case-sensitive in AIP-160; bare or in
//!     double quotes);
//!   - `create_time > "2026-12-01T00:00:00Z"`, `end_time <= "..."` (`=`,
//!     `!=`, `<`, `<=`, `>`, `>=`; an RFC 3339 timestamp in double quotes,
//!     as `prost_types::Timestamp` parses it: a bare date is its midnight
//!     UTC);
//!   - `durable = true` (`=`, `!=`; `true` or `false`);
//! - `AND`, `OR`, `NOT` and the prefix `-` (the same as `NOT`), in capitals,
//!   and parentheses. As in AIP-160, `OR` binds tighter than `AND`:
//!   `a AND b OR c` is `a AND (b OR c)`;
//! - juxtaposition, AIP-160's implicit `AND`: `state = RUNNING durable =
//!   true` is `state = RUNNING AND durable = true`. It binds between `AND`
//!   and `OR` (AIP-160's "sequence"), which makes no difference to the
//!   result since both are conjunctions. It is safe to accept: every factor
//!   must be a whole comparison (there are no bare global-search words), so
//!   a typo cannot silently turn into a conjunction;
//! - an empty or all-whitespace filter, which matches every job.
//!
//! A job that has not ended has no `end_time`. As AIP-160 has it for a
//! field that is not set, every comparison on it is false, `!=` included:
//! `end_time != "..."` matches only ended jobs, and `NOT end_time > "..."`
//! matches the live ones too.
//!
//! The text comes from the network: it is refused beyond [`MAX_LEN`] bytes
//! and beyond [`MAX_DEPTH`] nested parentheses and negations. The parser
//! recurses only into those, so its stack is bounded; chains of `AND`/`OR`
//! are loops and flat lists, and parsing and matching are linear in the
//! text's length.
//!
//! The filter's rooms: `parse` (the text to an expression: tokens and the
//! parser), `expr` (the expression and its matching) and `tests`. This
//! file holds the API ([`Filter`], [`JobFacts`], [`FilterError`]) and must
//! not parse or match itself.

mod expr;
mod parse;
#[cfg(test)]
mod tests;

use std::time::SystemTime;

use crate::service::proto::JobState;

use expr::Expr;

/// The longest filter accepted, in bytes.
pub const MAX_LEN: usize = 2048;

/// The deepest nesting of parentheses and negations (`NOT`, `-`) accepted.
pub const MAX_DEPTH: usize = 32;

/// The fields a filter can name, in the order error messages list them.
const FIELDS: &str = "state, create_time, end_time or durable";

/// The states a filter can name, in the order error messages list them.
const STATES: &str = "QUEUED, RUNNING, SUCCEEDED, FAILED or CANCELLED";

/// What a filter sees of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobFacts {
    pub state: JobState,
    pub create_time: SystemTime,
    /// `None` while the job has not ended.
    pub end_time: Option<SystemTime>,
    pub durable: bool,
}

/// Why a filter's text was refused. The messages do not name the field:
/// the caller puts "filter: " in front.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("is {len} bytes long; a filter has at most {MAX_LEN}")]
    TooLong { len: usize },
    /// `column` counts characters from 1; the end of the text is one past
    /// its last character.
    #[error("at column {column}: {message}")]
    Syntax { column: usize, message: String },
}

/// A parsed filter.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// `None` for the empty filter.
    expr: Option<Expr>,
}

impl Filter {
    /// Parses a filter's text (see the module's documentation).
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        if text.len() > MAX_LEN {
            return Err(FilterError::TooLong { len: text.len() });
        }
        Ok(Filter {
            expr: parse::parse(text)?,
        })
    }

    /// Whether the job passes the filter.
    pub fn matches(&self, job: &JobFacts) -> bool {
        self.expr.as_ref().is_none_or(|expr| expr.eval(job))
    }
}
