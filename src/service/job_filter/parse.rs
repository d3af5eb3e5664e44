//! The text of a filter to its expression: the tokens, then a parser
//! whose recursion is bounded by [`MAX_DEPTH`], with messages that say
//! where the text went wrong.
//!
//! This room owns the grammar; it must not match jobs (`expr` does).

use prost_types::Timestamp;

use super::expr::{Comparison, Expr, Moment, Op};
use super::{FilterError, FIELDS, MAX_DEPTH, STATES};
use crate::service::proto::JobState;

/// The expression of a filter's text (at most [`MAX_LEN`](super::MAX_LEN)
/// bytes, checked by the caller): `None` for the empty filter.
pub(super) fn parse(text: &str) -> Result<Option<Expr>, FilterError> {
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
        end: text.chars().count() + 1,
    };
    if tokens.is_empty() {
        return Ok(None);
    }
    let expr = parser.expression(0)?;
    match parser.peek() {
        None => Ok(Some(expr)),
        // Only a `)` stops an expression before the end.
        Some(token) => Err(syntax(token.column, "this ) closes no (".to_string())),
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
