//! A parsed filter: its expression tree and how a job's facts match it.
//!
//! This room owns what a filter means; it must not read text (`parse`
//! builds the tree) and stays free of error messages but for an operator's
//! own text.

use std::time::SystemTime;

use prost_types::Timestamp;

use super::JobFacts;
use crate::service::proto::JobState;

/// A parsed expression. `And` and `Or` are flat lists; the nesting of
/// `Not` and of the lists is bounded by [`MAX_DEPTH`].
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Compare(Comparison),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Comparison {
    State { equal: bool, state: JobState },
    Durable { equal: bool, durable: bool },
    CreateTime(Op, Moment),
    EndTime(Op, Moment),
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// AIP-160's "has"; no field here takes it, but it is a token so that
    /// the message can say so.
    Has,
}

impl Op {
    pub(super) fn text(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Has => ":",
        }
    }

    pub(super) fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            Op::Eq => ordering == Equal,
            Op::Ne => ordering != Equal,
            Op::Lt => ordering == Less,
            Op::Le => ordering != Greater,
            Op::Gt => ordering == Greater,
            Op::Ge => ordering != Less,
            Op::Has => false,
        }
    }
}

/// A point in time as seconds and nanoseconds since the Unix epoch, the
/// form of `prost_types::Timestamp`, ordered. (Times before the epoch or
/// far in the future convert without failure, unlike `SystemTime`'s.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Moment(pub(super) i64, pub(super) i32);

impl Moment {
    pub(super) fn of(time: SystemTime) -> Moment {
        let mut stamp = Timestamp::from(time);
        stamp.normalize();
        Moment(stamp.seconds, stamp.nanos)
    }
}

impl Expr {
    pub(super) fn eval(&self, job: &JobFacts) -> bool {
        match self {
            Expr::And(all) => all.iter().all(|e| e.eval(job)),
            Expr::Or(any) => any.iter().any(|e| e.eval(job)),
            Expr::Not(inner) => !inner.eval(job),
            Expr::Compare(comparison) => comparison.eval(job),
        }
    }
}

impl Comparison {
    pub(super) fn eval(&self, job: &JobFacts) -> bool {
        match *self {
            Comparison::State { equal, state } => (job.state == state) == equal,
            Comparison::Durable { equal, durable } => (job.durable == durable) == equal,
            Comparison::CreateTime(op, value) => op.holds(Moment::of(job.create_time).cmp(&value)),
            // Not set: false, whatever the operator (AIP-160).
            Comparison::EndTime(op, value) => job
                .end_time
                .is_some_and(|end| op.holds(Moment::of(end).cmp(&value))),
        }
    }
}
