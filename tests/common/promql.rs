//! The metric names a PromQL expression reads, without a PromQL parser:
//! what is left of the expression once strings, label matchers (`{...}`),
//! ranges and subqueries (`[...]`), numbers and durations, Grafana's
//! variables (`$__rate_interval`, `${datasource}`), keywords and the label
//! lists of `by`, `without`, `on`, `ignoring`, `group_left` and
//! `group_right` are skipped, and the names of functions and aggregations
//! (a word followed by `(`) dropped. Enough for the expressions of
//! deploy/monitoring, which tests/monitoring.rs checks against live pages.

/// Words that are operators, modifiers or aggregations (`sum by (le) (...)`:
/// not always followed by `(`), never metrics.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "atan2",
    "inf",
    "nan",
    "start",
    "end",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];
/// Words whose parenthesized list that follows names labels.
const LABEL_LISTS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// The index just past the bracket that closes the one at `at` (`open`),
/// with strings inside skipped.
fn close(chars: &[char], at: usize, open: char, shut: char) -> usize {
    let mut depth = 0;
    let mut i = at;
    while i < chars.len() {
        match chars[i] {
            '"' | '\'' | '`' => i = string_end(chars, i) - 1,
            c if c == open => depth += 1,
            c if c == shut => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    panic!("unclosed {open} in {}", chars.iter().collect::<String>())
}

/// The index just past the string that starts at `at`.
fn string_end(chars: &[char], at: usize) -> usize {
    let quote = chars[at];
    let mut i = at + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if quote != '`' => i += 1,
            c if c == quote => return i + 1,
            _ => {}
        }
        i += 1;
    }
    panic!("unclosed string in {}", chars.iter().collect::<String>())
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The metric names `expr` reads, in order, each once.
pub fn metric_names(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names: Vec<String> = Vec::new();
    let mut labels_next = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' | '`' => i = string_end(&chars, i),
            '{' => i = close(&chars, i, '{', '}'),
            '[' => i = close(&chars, i, '[', ']'),
            '(' if labels_next => {
                labels_next = false;
                i = close(&chars, i, '(', ')');
            }
            '$' => {
                i += 1;
                if chars.get(i) == Some(&'{') {
                    i = close(&chars, i, '{', '}');
                }
                while i < chars.len() && word_char(chars[i]) {
                    i += 1;
                }
            }
            c if c.is_ascii_digit()
                || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                while i < chars.len() && (word_char(chars[i]) || chars[i] == '.') {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len() && word_char(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let next = chars[i..].iter().find(|c| !c.is_whitespace()).copied();
                labels_next = false;
                if LABEL_LISTS.contains(&word.as_str()) {
                    labels_next = next == Some('(');
                } else if KEYWORDS.contains(&word.as_str()) || next == Some('(') {
                    // An operator, or a function's or an aggregation's name.
                } else if !names.contains(&word) {
                    names.push(word);
                }
            }
            _ => i += 1,
        }
    }
    names
}
