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

use std::time::SystemTime;

use prost_types::Timestamp;

use crate::service::proto::JobState;

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
        let tokens = tokenize(text)?;
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
            end: text.chars().count() + 1,
        };
        if tokens.is_empty() {
            return Ok(Filter { expr: None });
        }
        let expr = parser.expression(0)?;
        match parser.peek() {
            None => Ok(Filter { expr: Some(expr) }),
            // Only a `)` stops an expression before the end.
            Some(token) => Err(syntax(token.column, "this ) closes no (".to_string())),
        }
    }

    /// Whether the job passes the filter.
    pub fn matches(&self, job: &JobFacts) -> bool {
        self.expr.as_ref().is_none_or(|expr| expr.eval(job))
    }
}

/// A parsed expression. `And` and `Or` are flat lists; the nesting of
/// `Not` and of the lists is bounded by [`MAX_DEPTH`].
#[derive(Clone, Debug, PartialEq)]
enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Compare(Comparison),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Comparison {
    State { equal: bool, state: JobState },
    Durable { equal: bool, durable: bool },
    CreateTime(Op, Moment),
    EndTime(Op, Moment),
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
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
    fn text(self) -> &'static str {
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

    fn holds(self, ordering: std::cmp::Ordering) -> bool {
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
struct Moment(i64, i32);

impl Moment {
    fn of(time: SystemTime) -> Moment {
        let mut stamp = Timestamp::from(time);
        stamp.normalize();
        Moment(stamp.seconds, stamp.nanos)
    }
}

impl Expr {
    fn eval(&self, job: &JobFacts) -> bool {
        match self {
            Expr::And(all) => all.iter().all(|e| e.eval(job)),
            Expr::Or(any) => any.iter().any(|e| e.eval(job)),
            Expr::Not(inner) => !inner.eval(job),
            Expr::Compare(comparison) => comparison.eval(job),
        }
    }
}

impl Comparison {
    fn eval(&self, job: &JobFacts) -> bool {
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

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// A run of letters, digits, `_` and `.`: a field, a keyword, a bare
    /// value.
    Word(String),
    /// A double-quoted string, without its quotes (no escapes: no value
    /// here needs a `"` or a `\`).
    Text(String),
    Op(Op),
    Open,
    Close,
    Minus,
}

#[derive(Clone, Debug)]
struct Token {
    kind: Kind,
    /// 1-based, in characters.
    column: usize,
}

impl Token {
    /// The token as a message names it.
    fn describe(&self) -> String {
        match &self.kind {
            Kind::Word(word) => crate::xcc::problem::quote(word),
            Kind::Text(text) => format!("the string {}", crate::xcc::problem::quote(text)),
            Kind::Op(op) => op.text().to_string(),
            Kind::Open => "(".to_string(),
            Kind::Close => ")".to_string(),
            Kind::Minus => "-".to_string(),
        }
    }

    fn is_word(&self, word: &str) -> bool {
        matches!(&self.kind, Kind::Word(w) if w == word)
    }
}

fn syntax(column: usize, message: String) -> FilterError {
    FilterError::Syntax { column, message }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn tokenize(text: &str) -> Result<Vec<Token>, FilterError> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().enumerate().peekable();
    while let Some((index, c)) = chars.next() {
        let column = index + 1;
        let kind = match c {
            c if c.is_whitespace() => continue,
            '(' => Kind::Open,
            ')' => Kind::Close,
            '-' => Kind::Minus,
            ':' => Kind::Op(Op::Has),
            '=' => Kind::Op(Op::Eq),
            '<' | '>' | '!' => {
                let then_equal = chars.next_if(|&(_, c)| c == '=').is_some();
                Kind::Op(match (c, then_equal) {
                    ('<', false) => Op::Lt,
                    ('<', true) => Op::Le,
                    ('>', false) => Op::Gt,
                    ('>', true) => Op::Ge,
                    ('!', true) => Op::Ne,
                    _ => {
                        return Err(syntax(
                            column,
                            "expected != (a lone ! is no operator)".into(),
                        ))
                    }
                })
            }
            '"' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        None => {
                            return Err(syntax(
                                column,
                                "this \" opens a string that is never closed".into(),
                            ))
                        }
                        Some((_, '"')) => break,
                        Some((_, c)) => inner.push(c),
                    }
                }
                Kind::Text(inner)
            }
            '\'' => {
                return Err(syntax(
                    column,
                    "strings are in double quotes (\"), not single ones".into(),
                ))
            }
            c if is_word_char(c) => {
                let mut word = String::from(c);
                while let Some((_, c)) = chars.next_if(|&(_, c)| is_word_char(c)) {
                    word.push(c);
                }
                Kind::Word(word)
            }
            c => return Err(syntax(column, format!("{c:?} has no meaning in a filter"))),
        };
        tokens.push(Token { kind, column });
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    /// The column of the end of the text.
    end: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    /// An error about what the next token is not: `expected ..., found X`.
    fn expected(&self, what: &str) -> FilterError {
        match self.peek() {
            None => syntax(
                self.end,
                format!("expected {what}, found the end of the filter"),
            ),
            Some(token) => syntax(
                token.column,
                format!("expected {what}, found {}", token.describe()),
            ),
        }
    }

    /// `sequence {AND sequence}`.
    fn expression(&mut self, depth: usize) -> Result<Expr, FilterError> {
        let mut all = flatten_and(self.sequence(depth)?);
        while self.peek().is_some_and(|t| t.is_word("AND")) {
            self.at += 1;
            all.extend(flatten_and(self.sequence(depth)?));
        }
        Ok(one_or(all, Expr::And))
    }

    /// `factor {factor}`: juxtaposition, AIP-160's implicit AND. A factor
    /// follows while the next token is none that ends a sequence.
    fn sequence(&mut self, depth: usize) -> Result<Expr, FilterError> {
        let mut all = flatten_and(self.factor(depth)?);
        while self
            .peek()
            .is_some_and(|t| !t.is_word("AND") && !t.is_word("OR") && t.kind != Kind::Close)
        {
            all.extend(flatten_and(self.factor(depth)?));
        }
        Ok(one_or(all, Expr::And))
    }

    /// `term {OR term}`.
    fn factor(&mut self, depth: usize) -> Result<Expr, FilterError> {
        let mut any = flatten_or(self.term(depth)?);
        while self.peek().is_some_and(|t| t.is_word("OR")) {
            self.at += 1;
            any.extend(flatten_or(self.term(depth)?));
        }
        Ok(one_or(any, Expr::Or))
    }

    /// `[NOT | -] simple`, where `simple` is a comparison or a
    /// parenthesized expression. Negations repeat in a loop, not by
    /// recursion, each one level deeper.
    fn term(&mut self, mut depth: usize) -> Result<Expr, FilterError> {
        let mut negations = 0usize;
        while let Some(token) = self
            .peek()
            .filter(|t| t.is_word("NOT") || t.kind == Kind::Minus)
        {
            depth += 1;
            if depth > MAX_DEPTH {
                return Err(too_deep(token.column));
            }
            negations += 1;
            self.at += 1;
        }
        let simple = match self.peek() {
            Some(token) if token.kind == Kind::Open => {
                let open = token.column;
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(too_deep(open));
                }
                self.at += 1;
                let inner = self.expression(depth)?;
                if self.peek().is_none_or(|t| t.kind != Kind::Close) {
                    let unclosed = format!("a ) to close the ( at column {open}");
                    return Err(self.expected(&unclosed));
                }
                self.at += 1;
                inner
            }
            _ => Expr::Compare(self.comparison()?),
        };
        // Two negations undo each other; the depth was counted anyway.
        Ok(match negations % 2 {
            0 => simple,
            _ => Expr::Not(Box::new(simple)),
        })
    }

    fn comparison(&mut self) -> Result<Comparison, FilterError> {
        let Some(token) = self.peek() else {
            return Err(self.expected(&format!("a comparison on {FIELDS}")));
        };
        let field = match &token.kind {
            Kind::Word(word) if ["AND", "OR"].contains(&word.as_str()) => {
                return Err(self.expected(&format!("a comparison on {FIELDS}")))
            }
            Kind::Word(word) if ["and", "or", "not"].contains(&word.as_str()) => {
                return Err(syntax(
                    token.column,
                    format!(
                        "{} is no field; the operators AND, OR and NOT are written in capitals",
                        crate::xcc::problem::quote(word)
                    ),
                ))
            }
            Kind::Word(word) => word.clone(),
            _ => return Err(self.expected(&format!("a comparison on {FIELDS}"))),
        };
        let field_column = token.column;
        let (ops, value_kind): (&[Op], &str) = match field.as_str() {
            "state" => (&[Op::Eq, Op::Ne], "a job state"),
            "durable" => (&[Op::Eq, Op::Ne], "true or false"),
            "create_time" | "end_time" => (
                &[Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge],
                "an RFC 3339 timestamp in double quotes",
            ),
            _ => {
                return Err(syntax(
                    field_column,
                    format!(
                        "{} is not a field of a job; filter on {FIELDS}",
                        crate::xcc::problem::quote(&field)
                    ),
                ))
            }
        };
        self.at += 1;
        let allowed = ops.iter().map(|op| op.text()).collect::<Vec<_>>().join(" ");
        let op = match self.peek() {
            Some(Token {
                kind: Kind::Op(op),
                column,
            }) => {
                if !ops.contains(op) {
                    return Err(syntax(
                        *column,
                        format!("{field} takes the operators {allowed}, not {}", op.text()),
                    ));
                }
                *op
            }
            _ => return Err(self.expected(&format!("an operator after {field} ({allowed})"))),
        };
        self.at += 1;
        let Some(value) = self.peek() else {
            return Err(self.expected(&format!("{value_kind} after {field} {}", op.text())));
        };
        let column = value.column;
        let comparison = match (field.as_str(), &value.kind) {
            ("state", Kind::Word(name) | Kind::Text(name)) => {
                let bare = name.strip_prefix("JOB_STATE_").unwrap_or(name);
                let state = match bare {
                    "QUEUED" => JobState::Queued,
                    "RUNNING" => JobState::Running,
                    "SUCCEEDED" => JobState::Succeeded,
                    "FAILED" => JobState::Failed,
                    "CANCELLED" => JobState::Cancelled,
                    _ => {
                        return Err(syntax(
                            column,
                            format!(
                                "{} is not a job state ({STATES})",
                                crate::xcc::problem::quote(name)
                            ),
                        ))
                    }
                };
                Comparison::State {
                    equal: op == Op::Eq,
                    state,
                }
            }
            ("durable", Kind::Word(word)) if word == "true" || word == "false" => {
                Comparison::Durable {
                    equal: op == Op::Eq,
                    durable: word == "true",
                }
            }
            ("create_time" | "end_time", Kind::Text(text)) => {
                let instant = match text.parse::<Timestamp>() {
                    Ok(mut stamp) => {
                        stamp.normalize();
                        Moment(stamp.seconds, stamp.nanos)
                    }
                    Err(_) => {
                        return Err(syntax(
                            column,
                            format!(
                                "{} is not an RFC 3339 timestamp such as \"2026-12-01T00:00:00Z\"",
                                crate::xcc::problem::quote(text)
                            ),
                        ))
                    }
                };
                match field.as_str() {
                    "create_time" => Comparison::CreateTime(op, instant),
                    _ => Comparison::EndTime(op, instant),
                }
            }
            ("create_time" | "end_time", _) => {
                return Err(self.expected(&format!(
                    "{value_kind} after {field} {} (such as \"2026-12-01T00:00:00Z\")",
                    op.text()
                )))
            }
            _ => return Err(self.expected(&format!("{value_kind} after {field} {}", op.text()))),
        };
        self.at += 1;
        Ok(comparison)
    }
}

fn too_deep(column: usize) -> FilterError {
    syntax(
        column,
        format!("the filter nests deeper than {MAX_DEPTH} parentheses and negations"),
    )
}

/// The operands of a conjunction, its own inlined (the tree stays flat).
fn flatten_and(expr: Expr) -> Vec<Expr> {
    match expr {
        Expr::And(all) => all,
        other => vec![other],
    }
}

fn flatten_or(expr: Expr) -> Vec<Expr> {
    match expr {
        Expr::Or(any) => any,
        other => vec![other],
    }
}

/// The list's only element, or the list wrapped.
fn one_or(mut list: Vec<Expr>, wrap: fn(Vec<Expr>) -> Expr) -> Expr {
    match (list.pop(), list.is_empty()) {
        (Some(only), true) => only,
        (last, _) => {
            list.extend(last);
            wrap(list)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// 2026-12-01T00:00:00Z, in seconds since the epoch.
    fn base() -> i64 {
        "2026-12-01T00:00:00Z".parse::<Timestamp>().unwrap().seconds
    }

    fn at(seconds: i64, nanos: u32) -> SystemTime {
        UNIX_EPOCH + Duration::new(seconds as u64, nanos)
    }

    /// The RFC 3339 text of a time, as a filter quotes it.
    fn text_of(seconds: i64, nanos: i32) -> String {
        format!("\"{}\"", Timestamp { seconds, nanos })
    }

    fn job(state: JobState, create: i64, end: Option<i64>, durable: bool) -> JobFacts {
        JobFacts {
            state,
            create_time: at(create, 0),
            end_time: end.map(|end| at(end, 0)),
            durable,
        }
    }

    fn matches(filter: &str, job: &JobFacts) -> bool {
        Filter::parse(filter)
            .unwrap_or_else(|e| panic!("{filter}: {e}"))
            .matches(job)
    }

    fn error(filter: &str) -> FilterError {
        match Filter::parse(filter) {
            Ok(parsed) => panic!("{filter} parsed as {parsed:?}"),
            Err(e) => e,
        }
    }

    const STATES: [(JobState, &str); 5] = [
        (JobState::Queued, "QUEUED"),
        (JobState::Running, "RUNNING"),
        (JobState::Succeeded, "SUCCEEDED"),
        (JobState::Failed, "FAILED"),
        (JobState::Cancelled, "CANCELLED"),
    ];

    #[test]
    fn an_empty_filter_matches_every_job() {
        for text in ["", "   ", "\t\n "] {
            let filter = Filter::parse(text).unwrap();
            for (state, _) in STATES {
                assert!(filter.matches(&job(state, base(), None, false)));
                assert!(filter.matches(&job(state, base(), Some(base()), true)));
            }
        }
    }

    #[test]
    fn state_compares_by_name_with_or_without_prefix() {
        for (state, name) in STATES {
            let job = job(state, base(), None, false);
            for (other, other_name) in STATES {
                let same = state == other;
                for value in [
                    other_name.to_string(),
                    format!("JOB_STATE_{other_name}"),
                    format!("\"{other_name}\""),
                ] {
                    assert_eq!(
                        matches(&format!("state = {value}"), &job),
                        same,
                        "{name} {value}"
                    );
                    assert_eq!(
                        matches(&format!("state != {value}"), &job),
                        !same,
                        "{name} {value}"
                    );
                    // Spaces around the operator are optional.
                    assert_eq!(matches(&format!("state={value}"), &job), same);
                }
            }
        }
    }

    #[test]
    fn durable_compares_with_true_and_false() {
        for durable in [false, true] {
            let job = job(JobState::Running, base(), None, durable);
            assert_eq!(matches("durable = true", &job), durable);
            assert_eq!(matches("durable = false", &job), !durable);
            assert_eq!(matches("durable != true", &job), !durable);
            assert_eq!(matches("durable != false", &job), durable);
        }
    }

    /// Each operator on a time one second before, at and one second after
    /// the job's, and the expected answers, in that order.
    const TIME_OPS: [(&str, [bool; 3]); 6] = [
        // value:  before  equal  after
        ("=", [false, true, false]),
        ("!=", [true, false, true]),
        ("<", [false, false, true]),
        ("<=", [false, true, true]),
        (">", [true, false, false]),
        (">=", [true, true, false]),
    ];

    #[test]
    fn times_compare_at_the_boundary() {
        let t = base();
        let job = job(JobState::Succeeded, t, Some(t + 100), true);
        for (op, expected) in TIME_OPS {
            for (value, want) in [t - 1, t, t + 1].into_iter().zip(expected) {
                let filter = format!("create_time {op} {}", text_of(value, 0));
                assert_eq!(matches(&filter, &job), want, "{filter}");
                let filter = format!("end_time {op} {}", text_of(value + 100, 0));
                assert_eq!(matches(&filter, &job), want, "{filter}");
            }
        }
    }

    #[test]
    fn times_compare_to_the_nanosecond_and_across_offsets() {
        let t = base();
        let job = JobFacts {
            create_time: at(t, 500_000_000),
            ..job(JobState::Queued, t, None, false)
        };
        assert!(matches("create_time = \"2026-12-01T00:00:00.5Z\"", &job));
        assert!(matches(
            "create_time > \"2026-12-01T00:00:00.499999999Z\"",
            &job
        ));
        assert!(matches(
            "create_time < \"2026-12-01T00:00:00.500000001Z\"",
            &job
        ));
        // The same instant, written in another time zone.
        assert!(matches(
            "create_time = \"2026-12-01T01:00:00.5+01:00\"",
            &job
        ));
        // A bare date is its midnight UTC.
        assert!(matches("create_time > \"2026-12-01\"", &job));
        // Times before the epoch compare too.
        assert!(matches("create_time > \"1969-07-20T20:17:00Z\"", &job));
    }

    #[test]
    fn a_job_that_has_not_ended_matches_no_end_time_comparison() {
        let t = base();
        let live = job(JobState::Running, t, None, false);
        for (op, _) in TIME_OPS {
            for value in [t - 1, t, t + 1] {
                let filter = format!("end_time {op} {}", text_of(value, 0));
                assert!(!matches(&filter, &live), "{filter}");
                assert!(matches(&format!("NOT {filter}"), &live), "{filter}");
            }
        }
    }

    #[test]
    fn or_binds_tighter_than_and() {
        // a false, b false, c true: a AND (b OR c) is false, (a AND b) OR c
        // true.
        let job = job(JobState::Failed, base(), None, true);
        let (a, b, c) = ("state = RUNNING", "durable = false", "durable = true");
        assert!(!matches(&format!("{a} AND {b} OR {c}"), &job));
        assert!(!matches(&format!("{a} AND ({b} OR {c})"), &job));
        assert!(matches(&format!("({a} AND {b}) OR {c}"), &job));
        // And on the other side: c OR b AND a is (c OR b) AND a.
        assert!(!matches(&format!("{c} OR {b} AND {a}"), &job));
        assert!(matches(&format!("{c} OR ({b} AND {a})"), &job));
        // Juxtaposition is an AND too, looser than OR.
        assert!(!matches(&format!("{a} {b} OR {c}"), &job));
        assert!(matches(&format!("({a} {b}) OR {c}"), &job));
    }

    #[test]
    fn and_or_and_juxtaposition_combine() {
        let job = job(JobState::Queued, base(), None, true);
        assert!(matches("state = QUEUED AND durable = true", &job));
        assert!(!matches("state = QUEUED AND durable = false", &job));
        assert!(matches("state = QUEUED durable = true", &job));
        assert!(!matches("state = QUEUED durable = false", &job));
        assert!(matches("state = RUNNING OR durable = true", &job));
        assert!(!matches("state = RUNNING OR durable = false", &job));
        assert!(matches(
            "state = RUNNING OR state = FAILED OR state = QUEUED",
            &job
        ));
    }

    #[test]
    fn not_and_minus_negate() {
        let job = job(JobState::Queued, base(), None, true);
        for negation in ["NOT ", "-", "- ", "NOT\t"] {
            assert!(!matches(&format!("{negation}state = QUEUED"), &job));
            assert!(matches(&format!("{negation}state = RUNNING"), &job));
            // It binds to one comparison, tighter than OR and AND.
            assert!(matches(
                &format!("{negation}state = RUNNING AND durable = true"),
                &job
            ));
            assert!(!matches(
                &format!("{negation}state = QUEUED OR durable = false"),
                &job
            ));
            assert!(matches(
                &format!("{negation}(state = QUEUED AND durable = false)"),
                &job
            ));
            assert!(!matches(
                &format!("{negation}(state = QUEUED OR durable = false)"),
                &job
            ));
        }
        assert!(matches("NOT(state = RUNNING)", &job));
        assert!(matches("NOT NOT state = QUEUED", &job));
        assert!(matches("- -state = QUEUED", &job));
        assert!(matches("NOT -state = QUEUED", &job));
        assert!(!matches("NOT NOT -state = QUEUED", &job));
    }

    #[test]
    fn parentheses_group() {
        let job = job(JobState::Cancelled, base(), Some(base() + 5), false);
        assert!(matches("(state = CANCELLED)", &job));
        assert!(matches("((((state = CANCELLED))))", &job));
        assert!(matches(
            "(state = RUNNING OR state = CANCELLED) AND (durable = false)",
            &job
        ));
        assert!(!matches(
            "(state = RUNNING OR state = QUEUED) AND durable = false",
            &job
        ));
    }

    #[test]
    fn errors_say_what_was_expected() {
        assert_eq!(
            error("state = SUCEEDED").to_string(),
            "at column 9: \"SUCEEDED\" is not a job state (QUEUED, RUNNING, SUCCEEDED, FAILED or CANCELLED)"
        );
        assert_eq!(
            error("status = RUNNING").to_string(),
            "at column 1: \"status\" is not a field of a job; filter on state, create_time, end_time or durable"
        );
    }

    /// Each refused filter, where its error is (the first occurrence of a
    /// piece of the text, or `None` for its end) and part of the message.
    #[test]
    fn every_error_names_its_column() {
        let cases: &[(&str, Option<&str>, &str)] = &[
            ("state = SUCEEDED", Some("SUCEEDED"), "is not a job state"),
            ("state = running", Some("running"), "is not a job state"),
            (
                "state = JOB_STATE_UNSPECIFIED",
                Some("JOB_"),
                "is not a job state",
            ),
            (
                "durable = true AND foo = 1",
                Some("foo"),
                "is not a field of a job; filter on state",
            ),
            (
                "state < RUNNING",
                Some("<"),
                "state takes the operators = !=, not <",
            ),
            (
                "durable >= true",
                Some(">="),
                "durable takes the operators = !=, not >=",
            ),
            (
                "create_time : \"x\"",
                Some(":"),
                "create_time takes the operators = != < <= > >=, not :",
            ),
            (
                "state RUNNING",
                Some("RUNNING"),
                "expected an operator after state (= !=), found \"RUNNING\"",
            ),
            (
                "state",
                None,
                "expected an operator after state (= !=), found the end of the filter",
            ),
            (
                "state =",
                None,
                "expected a job state after state =, found the end of the filter",
            ),
            (
                "state = (",
                Some("("),
                "expected a job state after state =, found (",
            ),
            (
                "durable = yes",
                Some("yes"),
                "expected true or false after durable =, found \"yes\"",
            ),
            (
                "durable = \"true\"",
                Some("\"true"),
                "expected true or false after durable =, found the string \"true\"",
            ),
            (
                "create_time > 2026",
                Some("2026"),
                "expected an RFC 3339 timestamp in double quotes after create_time >",
            ),
            (
                "end_time < \"2026-13-01T00:00:00Z\"",
                Some("\"2026"),
                "\"2026-13-01T00:00:00Z\" is not an RFC 3339 timestamp",
            ),
            (
                "end_time < \"yesterday\"",
                Some("\"yes"),
                "is not an RFC 3339 timestamp such as \"2026-12-01T00:00:00Z\"",
            ),
            (
                "(state = RUNNING",
                None,
                "expected a ) to close the ( at column 1, found the end of the filter",
            ),
            (
                "durable = true (state = RUNNING durable",
                None,
                "expected an operator after durable",
            ),
            ("(durable = true", None, "to close the ( at column 1"),
            ("state = RUNNING)", Some(")"), "this ) closes no ("),
            (
                "state = \"RUNNING",
                Some("\""),
                "this \" opens a string that is never closed",
            ),
            (
                "state = 'RUNNING'",
                Some("'"),
                "strings are in double quotes",
            ),
            (
                "state ! RUNNING",
                Some("!"),
                "expected != (a lone ! is no operator)",
            ),
            (
                "state = RUNNING && durable = true",
                Some("&"),
                "'&' has no meaning in a filter",
            ),
            (
                "state = RUNNING and durable = true",
                Some("and"),
                "the operators AND, OR and NOT are written in capitals",
            ),
            (
                "state = RUNNING AND",
                None,
                "expected a comparison on state, create_time, end_time or durable, found the end",
            ),
            (
                "OR state = RUNNING",
                Some("OR"),
                "expected a comparison on state, create_time, end_time or durable, found \"OR\"",
            ),
            (
                "state = RUNNING AND OR durable = true",
                Some("OR"),
                "expected a comparison on",
            ),
            ("NOT", None, "expected a comparison on"),
            (
                "()",
                Some(")"),
                "expected a comparison on state, create_time, end_time or durable, found )",
            ),
            (
                "state = = RUNNING",
                Some("= R"),
                "expected a job state after state =, found =",
            ),
        ];
        for &(text, piece, message) in cases {
            let column = match piece {
                Some(piece) => text.find(piece).unwrap() + 1,
                None => text.chars().count() + 1,
            };
            match error(text) {
                FilterError::Syntax {
                    column: c,
                    message: m,
                } => {
                    assert_eq!(c, column, "{text}: {m}");
                    assert!(m.contains(message), "{text}: {m}");
                }
                other => panic!("{text}: {other}"),
            }
        }
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        // U+3000, a space of three bytes: `foo` is at column 2, byte 4.
        assert_eq!(
            error("\u{3000}foo = 1"),
            FilterError::Syntax {
                column: 2,
                message: "\"foo\" is not a field of a job; filter on state, create_time, end_time or durable".into()
            }
        );
        // "é" is two bytes: the second one is at column 5, byte 6.
        assert_eq!(
            error("\"é\" é"),
            FilterError::Syntax {
                column: 5,
                message: "'é' has no meaning in a filter".into()
            }
        );
    }

    #[test]
    fn over_long_filters_are_refused() {
        let clause = "state = RUNNING";
        let mut long = clause.to_string();
        while long.len() + " OR ".len() + clause.len() <= MAX_LEN {
            long.push_str(" OR ");
            long.push_str(clause);
        }
        let padded = format!("{long:<MAX_LEN$}");
        assert_eq!(padded.len(), MAX_LEN);
        assert!(matches(
            &padded,
            &job(JobState::Running, base(), None, false)
        ));
        let over = format!("{padded} ");
        assert_eq!(error(&over), FilterError::TooLong { len: MAX_LEN + 1 });
        assert_eq!(
            error(&over).to_string(),
            "is 2049 bytes long; a filter has at most 2048"
        );
    }

    #[test]
    fn over_deep_filters_are_refused() {
        let job = job(JobState::Running, base(), None, false);
        let deep = |n: usize| format!("{}state = RUNNING{}", "(".repeat(n), ")".repeat(n));
        assert!(matches(&deep(MAX_DEPTH), &job));
        let error_of_deep = error(&deep(MAX_DEPTH + 1));
        assert_eq!(
            error_of_deep,
            FilterError::Syntax {
                column: MAX_DEPTH + 1,
                message: "the filter nests deeper than 32 parentheses and negations".into()
            }
        );
        let nots = |n: usize| format!("{}state = RUNNING", "NOT ".repeat(n));
        assert!(matches(&nots(MAX_DEPTH), &job));
        assert!(matches!(
            error(&nots(MAX_DEPTH + 1)),
            FilterError::Syntax { column, .. } if column == 4 * MAX_DEPTH + 1
        ));
        // Negations and parentheses count together.
        let mixed = format!("{}{}", "-(".repeat(16), "state = RUNNING");
        let mixed = format!("{mixed}{}", ")".repeat(16));
        assert!(matches(&mixed, &job));
        // One more in front: the last ( is the 33rd, at column 4 + 2 * 16.
        let mixed = format!("NOT {mixed}");
        assert!(matches!(
            error(&mixed),
            FilterError::Syntax { column: 36, .. }
        ));
        // As deep as the length allows: refused, without a stack overflow.
        assert!(matches!(
            error(&"(".repeat(MAX_LEN)),
            FilterError::Syntax { .. }
        ));
        assert!(matches!(
            error(&"-".repeat(MAX_LEN)),
            FilterError::Syntax { .. }
        ));
    }

    #[test]
    fn long_flat_chains_are_no_deep_recursion() {
        // A chain of 50 ORs of which only the last matches.
        let job = job(JobState::Failed, base(), Some(base() + 1000), false);
        let mut text = String::new();
        for i in 0..50 {
            text.push_str(&format!("end_time = {} OR ", text_of(base() + i, 0)));
        }
        text.push_str("state = FAILED");
        assert!(text.len() <= MAX_LEN, "{}", text.len());
        assert!(matches(&text, &job));
        let anded = text.replace(" OR ", " AND ");
        assert!(!matches(&anded, &job));
    }

    // A random well-formed filter, printed with the fewest parentheses the
    // precedence allows (and some more), parses to a filter that answers as
    // the tree itself does, evaluated here on its own.

    #[derive(Clone, Debug)]
    enum Tree {
        State {
            equal: bool,
            state: usize,
            prefix: bool,
            quoted: bool,
        },
        Durable {
            equal: bool,
            value: bool,
        },
        /// A time comparison; `end` for end_time, else create_time; the
        /// value is `base() + offset`.
        Time {
            end: bool,
            op: usize,
            offset: i64,
        },
        And {
            all: Vec<Tree>,
            implicit: bool,
        },
        Or(Vec<Tree>),
        Not {
            inner: Box<Tree>,
            minus: bool,
        },
        Paren(Box<Tree>),
    }

    const OPS: [&str; 6] = ["=", "!=", "<", "<=", ">", ">="];

    impl Tree {
        fn eval(&self, job: &JobFacts) -> bool {
            let seconds =
                |time: SystemTime| time.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
            match self {
                Tree::State { equal, state, .. } => (job.state == STATES[*state].0) == *equal,
                Tree::Durable { equal, value } => (job.durable == *value) == *equal,
                Tree::Time { end, op, offset } => {
                    let value = base() + offset;
                    let time = match end {
                        true => match job.end_time {
                            Some(end) => seconds(end),
                            None => return false,
                        },
                        false => seconds(job.create_time),
                    };
                    match OPS[*op] {
                        "=" => time == value,
                        "!=" => time != value,
                        "<" => time < value,
                        "<=" => time <= value,
                        ">" => time > value,
                        _ => time >= value,
                    }
                }
                Tree::And { all, .. } => all.iter().all(|t| t.eval(job)),
                Tree::Or(any) => any.iter().any(|t| t.eval(job)),
                Tree::Not { inner, .. } => !inner.eval(job),
                Tree::Paren(inner) => inner.eval(job),
            }
        }

        /// How tightly the printed form binds: 1 AND, 2 juxtaposition, 3
        /// OR, 4 a negation, 5 a comparison or parentheses.
        fn level(&self) -> u8 {
            match self {
                Tree::And {
                    implicit: false, ..
                } => 1,
                Tree::And { implicit: true, .. } => 2,
                Tree::Or(_) => 3,
                Tree::Not { .. } => 4,
                _ => 5,
            }
        }

        /// The text, in parentheses if it binds looser than `needed`.
        fn print(&self, needed: u8) -> String {
            let text = match self {
                Tree::State {
                    equal,
                    state,
                    prefix,
                    quoted,
                } => {
                    let name = match prefix {
                        true => format!("JOB_STATE_{}", STATES[*state].1),
                        false => STATES[*state].1.to_string(),
                    };
                    let name = match quoted {
                        true => format!("\"{name}\""),
                        false => name,
                    };
                    format!("state {} {name}", if *equal { "=" } else { "!=" })
                }
                Tree::Durable { equal, value } => {
                    format!("durable {} {value}", if *equal { "=" } else { "!=" })
                }
                Tree::Time { end, op, offset } => format!(
                    "{} {} {}",
                    if *end { "end_time" } else { "create_time" },
                    OPS[*op],
                    text_of(base() + offset, 0)
                ),
                Tree::And { all, implicit } => {
                    let (separator, child) = if *implicit { (" ", 3) } else { (" AND ", 2) };
                    all.iter()
                        .map(|t| t.print(child))
                        .collect::<Vec<_>>()
                        .join(separator)
                }
                Tree::Or(any) => any
                    .iter()
                    .map(|t| t.print(4))
                    .collect::<Vec<_>>()
                    .join(" OR "),
                Tree::Not { inner, minus } => {
                    format!("{}{}", if *minus { "-" } else { "NOT " }, inner.print(5))
                }
                Tree::Paren(inner) => format!("({})", inner.print(0)),
            };
            match self.level() < needed {
                true => format!("({text})"),
                false => text,
            }
        }
    }

    fn tree() -> impl Strategy<Value = Tree> {
        let leaf = prop_oneof![
            (any::<bool>(), 0..5usize, any::<bool>(), any::<bool>()).prop_map(
                |(equal, state, prefix, quoted)| Tree::State {
                    equal,
                    state,
                    prefix,
                    quoted
                }
            ),
            (any::<bool>(), any::<bool>())
                .prop_map(|(equal, value)| Tree::Durable { equal, value }),
            (any::<bool>(), 0..6usize, 0..4i64).prop_map(|(end, op, offset)| Tree::Time {
                end,
                op,
                offset
            }),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                (
                    proptest::collection::vec(inner.clone(), 2..4),
                    any::<bool>()
                )
                    .prop_map(|(all, implicit)| Tree::And { all, implicit }),
                proptest::collection::vec(inner.clone(), 2..4).prop_map(Tree::Or),
                (inner.clone(), any::<bool>()).prop_map(|(inner, minus)| Tree::Not {
                    inner: Box::new(inner),
                    minus
                }),
                inner.prop_map(|inner| Tree::Paren(Box::new(inner))),
            ]
        })
    }

    fn facts() -> impl Strategy<Value = JobFacts> {
        (
            0..5usize,
            0..4i64,
            proptest::option::of(0..4i64),
            any::<bool>(),
        )
            .prop_map(|(state, create, end, durable)| {
                job(
                    STATES[state].0,
                    base() + create,
                    end.map(|end| base() + end),
                    durable,
                )
            })
    }

    proptest! {
        #[test]
        fn printed_filters_answer_as_their_trees(tree in tree(), jobs in proptest::collection::vec(facts(), 8)) {
            let text = tree.print(0);
            let filter = Filter::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            for job in &jobs {
                prop_assert_eq!(filter.matches(job), tree.eval(job), "{} on {:?}", text, job);
            }
        }

        #[test]
        fn any_text_parses_or_is_refused(text in "\\PC{0,2100}") {
            // Never a panic; a refusal inside the limit names a column within
            // the text (or just past its end).
            match Filter::parse(&text) {
                Err(FilterError::Syntax { column, .. }) => {
                    prop_assert!(column >= 1 && column <= text.chars().count() + 1);
                }
                Err(FilterError::TooLong { len }) => prop_assert!(len > MAX_LEN),
                Ok(_) => {}
            }
        }

        #[test]
        fn filter_like_text_parses_or_is_refused(
            text in "([()\"!=<>:-]|NOT|AND|OR| |state|end_time|create_time|durable|RUNNING|true|\"2026-12-01T00:00:00Z\"){0,200}",
            job in facts(),
        ) {
            if let Ok(filter) = Filter::parse(&text) {
                let _ = filter.matches(&job);
            }
        }

        #[test]
        fn any_quoted_time_parses_or_is_refused(inner in "[0-9TZ:.+ -]{0,40}|\\PC{0,40}") {
            let inner = inner.replace('"', "");
            let text = format!("create_time < \"{inner}\"");
            match Filter::parse(&text) {
                Ok(_) => prop_assert!(inner.parse::<Timestamp>().is_ok()),
                Err(FilterError::Syntax { column, .. }) => prop_assert_eq!(column, 15),
                Err(other) => prop_assert!(false, "{}", other),
            }
        }
    }
}
