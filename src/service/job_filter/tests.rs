//! The filter's tests: its API, parsed and matched, and its bounds.

use super::*;
use proptest::prelude::*;
use prost_types::Timestamp;
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
            message:
                "\"foo\" is not a field of a job; filter on state, create_time, end_time or durable"
                    .into()
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
        let seconds = |time: SystemTime| time.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
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
        (any::<bool>(), any::<bool>()).prop_map(|(equal, value)| Tree::Durable { equal, value }),
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
