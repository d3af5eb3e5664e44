//! Knuth's DLX text format (dlx1, dlx2, dlx3, dlx5's costs): reader and writer.
//!
//! The format, as read here:
//!
//! * Lines end with `\n` (a `\r` before it is just whitespace, so CRLF files
//!   work). Blank lines, and lines whose first non-blank character is `|`,
//!   are comments wherever they appear.
//! * The first other line is the item line: primary items, then optionally a
//!   `|` token and the secondary items. A primary item may carry a
//!   multiplicity prefix, `u:v|name` (between `u` and `v` times) or `v|name`
//!   (exactly `v` times). As in Knuth's programs, `|` glued to the front of a
//!   name after whitespace (`A B |X`) is the separator followed by that name.
//! * Every later line is an option: whitespace-separated `name` or
//!   `name:color` tokens, and (DLX5) cost tokens `|n`, `n` decimal digits,
//!   anywhere after the first item; the option's cost is their sum. A
//!   malformed cost is reported before the option's items are checked.
//!
//! Beyond Knuth's programs (without rejecting anything they accept): names
//! and colors of any length, colors of several characters, a last line
//! without a newline, and no capacity limits other than those of
//! [`super::problem`]. Whitespace is C's `isspace` set, the one Knuth uses.
//!
//! The reader is a thin layer over [`ProblemBuilder`], which performs every
//! semantic check; this module adds the syntax and the positions.

use std::fmt;

use super::problem::{quote, EntrySpec, ItemKind, Problem, ProblemBuilder, ProblemError};

/// Where and what went wrong in DLX text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {kind} (at {})", quote(token))]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters, of the start of `token`.
    pub column: usize,
    /// The whitespace-delimited token at fault, as written (empty when the
    /// error is the end of the input).
    pub token: String,
    pub kind: ParseErrorKind,
}

/// What went wrong in DLX text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    #[error("invalid UTF-8")]
    InvalidUtf8,
    #[error("no item line (the input has only blank and comment lines)")]
    NoItemLine,
    #[error("| twice on the item line")]
    SeparatorTwice,
    #[error("| at the end of a token (the separator needs whitespace before it, a bound prefix needs an item name after it)")]
    BarEndsToken,
    #[error("illegal digit in bound (the prefix is u:v| or v| with decimal u and v)")]
    IllegalDigitInBound,
    #[error("empty lower bound before ':'")]
    EmptyLowerBound,
    #[error("lower bound without upper bound")]
    LowerWithoutUpper,
    #[error("bound too large to be a 32-bit number")]
    BoundOverflow,
    #[error("a secondary item cannot have a bound prefix")]
    PrefixOnSecondary,
    #[error("option cost should be a decimal number (|n, as in DLX5)")]
    CostNotANumber,
    #[error("illegal digit in option cost (|n with decimal digits n)")]
    IllegalDigitInCost,
    #[error("option cost too large (an option's costs add up to at most {limit})", limit = super::problem::MAX_COST)]
    CostTooLarge,
    #[error(transparent)]
    Problem(#[from] ProblemError),
}

/// Reads a problem in DLX format.
pub fn parse(text: &str) -> Result<Problem, ParseError> {
    // One code path for both entry points; re-checking UTF-8 line by line
    // costs little next to the hashing the builder does for every token.
    parse_bytes(text.as_bytes())
}

/// Reads a problem in DLX format from raw bytes. Invalid UTF-8 in the item
/// line or an option is an error; in a comment it is ignored, as Knuth's
/// programs ignore comments byte by byte.
pub fn parse_bytes(bytes: &[u8]) -> Result<Problem, ParseError> {
    let mut builder = ProblemBuilder::new();
    let mut tokens = Vec::new();
    // The item line, kept to place errors that only `build` can detect.
    let mut item_line: Option<(usize, &str, Token)> = None;
    for (index, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let number = index + 1;
        match raw.iter().find(|&&b| !is_blank(b)) {
            None | Some(b'|') => continue,
            Some(_) => {}
        }
        let line =
            std::str::from_utf8(raw).map_err(|e| utf8_error(number, raw, e.valid_up_to()))?;
        tokenize(line, &mut tokens);
        if item_line.is_none() {
            read_items(&mut builder, number, line, &tokens)?;
            item_line = Some((number, line, tokens[0]));
        } else {
            read_option(&mut builder, number, line, &tokens)?;
        }
    }
    let Some((number, line, first)) = item_line else {
        return Err(end_of_input(bytes, ParseErrorKind::NoItemLine));
    };
    builder
        .build()
        .map_err(|e| error_at(number, line, &first, e.into()))
}

/// A problem displays as its DLX text (here, beside the format's reader
/// and writer, so that the problem model does not name its format).
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write(self, f)
    }
}

/// Writes `problem` in DLX format: the item line, then one line per option,
/// dropped options included (a reader drops them again), so that
/// `parse(&to_string(p)) == Ok(p)`.
///
/// Three things the builder accepts cannot be expressed in the format, and
/// so do not survive a round trip: an option without items (it would be a
/// blank line), secondary items declared before primary ones (the item line
/// lists primaries first), and colors containing whitespace.
pub fn write(problem: &Problem, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let items = problem.items();
    let mut separator = "";
    for item in items {
        if let ItemKind::Primary { min, max } = item.kind {
            f.write_str(separator)?;
            separator = " ";
            match (min, max) {
                (1, 1) => {}
                _ if min == max => write!(f, "{max}|")?,
                _ => write!(f, "{min}:{max}|")?,
            }
            f.write_str(&item.name)?;
        }
    }
    let mut secondaries = items.iter().filter(|i| !i.is_primary()).peekable();
    if secondaries.peek().is_some() {
        f.write_str(" |")?;
        for item in secondaries {
            write!(f, " {}", item.name)?;
        }
    }
    f.write_str("\n")?;
    let colors = problem.colors();
    for (index, option) in problem.options().iter().enumerate() {
        let mut separator = "";
        for entry in option {
            f.write_str(separator)?;
            separator = " ";
            f.write_str(&items[entry.item].name)?;
            if let Some(color) = entry.color {
                write!(f, ":{}", colors[color as usize])?;
            }
        }
        match problem.cost(index) {
            0 => {}
            cost => write!(f, " |{cost}")?,
        }
        f.write_str("\n")?;
    }
    Ok(())
}

/// The problem in DLX format (see [`write`]).
pub fn to_string(problem: &Problem) -> String {
    problem.to_string()
}

/// C's `isspace` in the "C" locale, which Knuth's programs use to split
/// tokens. Deliberately ASCII only (and unlike `u8::is_ascii_whitespace` it
/// includes the vertical tab). Every one of these is also whitespace to the
/// builder, which rejects it in names, so a written name always reads back
/// as one token.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r')
}

/// A whitespace-delimited token and its byte offset in its line.
#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    text: &'a str,
    start: usize,
}

fn tokenize<'a>(line: &'a str, out: &mut Vec<Token<'a>>) {
    out.clear();
    // Blanks are ASCII and never occur inside a multi-byte UTF-8 sequence,
    // so splitting on bytes always cuts at character boundaries.
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if is_blank(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !is_blank(bytes[i]) {
            i += 1;
        }
        out.push(Token {
            text: &line[start..i],
            start,
        });
    }
}

fn error_at(number: usize, line: &str, token: &Token, kind: ParseErrorKind) -> ParseError {
    ParseError {
        line: number,
        column: line[..token.start].chars().count() + 1,
        token: token.text.to_string(),
        kind,
    }
}

fn read_items(
    builder: &mut ProblemBuilder,
    number: usize,
    line: &str,
    tokens: &[Token],
) -> Result<(), ParseError> {
    let mut secondary = false;
    for token in tokens {
        let fail = |kind: ParseErrorKind| error_at(number, line, token, kind);
        let mut text = token.text;
        if let Some(rest) = text.strip_prefix('|') {
            if secondary {
                return Err(fail(ParseErrorKind::SeparatorTwice));
            }
            // The item line is not a comment, so its first token does not
            // start with `|`: at least one primary item precedes this one.
            secondary = true;
            if rest.is_empty() {
                continue;
            }
            // `A B |X`: the separator, then a name glued to it.
            text = rest;
        }
        let prefix = split_prefix(text).map_err(fail)?;
        let added = if secondary {
            if prefix.is_some() {
                return Err(fail(ParseErrorKind::PrefixOnSecondary));
            }
            builder.secondary(text)
        } else {
            match prefix {
                None => builder.primary(text),
                Some((bounds, name)) => {
                    let (min, max) = parse_bounds(bounds).map_err(fail)?;
                    builder.primary_with_bounds(name, min, max)
                }
            }
        };
        added.map_err(|e| fail(e.into()))?;
    }
    Ok(())
}

/// Splits `bounds|name` at its first `|`. A `|` in front is left alone (the
/// caller has already taken a separator off, and the builder rejects a name
/// that still starts with one).
fn split_prefix(text: &str) -> Result<Option<(&str, &str)>, ParseErrorKind> {
    match text.find('|') {
        None | Some(0) => Ok(None),
        Some(i) if i + 1 == text.len() => Err(ParseErrorKind::BarEndsToken),
        Some(i) => Ok(Some((&text[..i], &text[i + 1..]))),
    }
}

/// Reads `u:v` or `v` (meaning `v:v`). Range checks are the builder's.
fn parse_bounds(bounds: &str) -> Result<(u32, u32), ParseErrorKind> {
    match bounds.split_once(':') {
        None => {
            let v = parse_number(bounds)?;
            Ok((v, v))
        }
        Some(("", _)) => Err(ParseErrorKind::EmptyLowerBound),
        Some((_, "")) => Err(ParseErrorKind::LowerWithoutUpper),
        Some((u, v)) => Ok((parse_number(u)?, parse_number(v)?)),
    }
}

/// Decimal digits only: `str::parse` would also take a leading `+`.
fn parse_number(digits: &str) -> Result<u32, ParseErrorKind> {
    digits.bytes().try_fold(0u32, |n, b| {
        if !b.is_ascii_digit() {
            return Err(ParseErrorKind::IllegalDigitInBound);
        }
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u32::from(b - b'0')))
            .ok_or(ParseErrorKind::BoundOverflow)
    })
}

fn read_option(
    builder: &mut ProblemBuilder,
    number: usize,
    line: &str,
    tokens: &[Token],
) -> Result<(), ParseError> {
    // DLX5's costs: `|n` tokens, summed. (Before costs, a token starting with
    // `|` was an unknown item, so no input that parsed changes meaning.)
    let mut cost = 0u64;
    for token in tokens.iter().filter(|t| t.text.starts_with('|')) {
        let fail = |kind: ParseErrorKind| error_at(number, line, token, kind);
        cost = parse_cost(&token.text[1..])
            .and_then(|c| {
                cost.checked_add(c)
                    .filter(|&sum| sum <= super::problem::MAX_COST)
                    .ok_or(ParseErrorKind::CostTooLarge)
            })
            .map_err(fail)?;
    }
    // The builder checks entries in order and stops at the first bad one, so
    // the last token it pulled is the one at fault. (An error found after the
    // whole option, such as the entry limit, points at its last token.)
    let mut last = 0;
    let specs = tokens
        .iter()
        .enumerate()
        .filter(|(_, token)| !token.text.starts_with('|'))
        .map(|(k, token)| {
            last = k;
            EntrySpec::parse(token.text)
        });
    // A kept=false result is an option without primary items: the builder
    // records it as dropped, as Knuth's programs do, and that is no error.
    let result = builder.option_with_cost(specs, cost);
    result
        .map(|_| ())
        .map_err(|e| error_at(number, line, &tokens[last], e.into()))
}

/// The digits of a cost token after its `|`, checked as DLX5 checks them: a
/// digit first, then digits only.
fn parse_cost(digits: &str) -> Result<u64, ParseErrorKind> {
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(ParseErrorKind::CostNotANumber);
    }
    digits.bytes().try_fold(0u64, |n, b| {
        if !b.is_ascii_digit() {
            return Err(ParseErrorKind::IllegalDigitInCost);
        }
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .filter(|&n| n <= super::problem::MAX_COST)
            .ok_or(ParseErrorKind::CostTooLarge)
    })
}

/// An error on the `valid_up_to`-th byte of line `number`, which starts an
/// invalid UTF-8 sequence. Reported like other errors: at the start of the
/// token that holds it, with the token shown lossily.
fn utf8_error(number: usize, raw: &[u8], valid_up_to: usize) -> ParseError {
    let start = raw[..valid_up_to]
        .iter()
        .rposition(|&b| is_blank(b))
        .map_or(0, |p| p + 1);
    let end = raw[valid_up_to..]
        .iter()
        .position(|&b| is_blank(b))
        .map_or(raw.len(), |p| valid_up_to + p);
    ParseError {
        line: number,
        column: String::from_utf8_lossy(&raw[..start]).chars().count() + 1,
        token: String::from_utf8_lossy(&raw[start..end]).into_owned(),
        kind: ParseErrorKind::InvalidUtf8,
    }
}

/// An error at the very end of the input.
fn end_of_input(bytes: &[u8], kind: ParseErrorKind) -> ParseError {
    let last_start = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    ParseError {
        line: bytes.iter().filter(|&&b| b == b'\n').count() + 1,
        // Comments may hold invalid UTF-8; count what a viewer would show.
        column: String::from_utf8_lossy(&bytes[last_start..])
            .chars()
            .count()
            + 1,
        token: String::new(),
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::problem::{Entry, MAX_BOUND, MAX_COST};
    use proptest::prelude::*;

    const EXACT: &str = "\
| exact cover (DLX1): unique solution {A D}, {E F C}, {B G}
A B C D E | F G
C E F
A D G
B C F
A D
B G
D E G
";

    const COLORS: &str = "\
| colors (DLX2): solution {A C X:1 Y:1}, {B X:1}; \"X:0 Y:1\" is dropped
A B C | X Y
A B X:0 Y:0
A C X:1 Y:1
X:0 Y:1
B X:1
C Y:1
";

    const MULTIPLICITY: &str = "\
| multiplicity (DLX3): C must be covered 2 or 3 times
A B 2:3|C | X Y
A B X:0 Y:0
A C X:1 Y:1
C X:0
B X:1
C Y:1
";

    fn names(p: &Problem) -> Vec<&str> {
        p.items().iter().map(|i| i.name.as_str()).collect()
    }

    fn kinds(p: &Problem) -> Vec<ItemKind> {
        p.items().iter().map(|i| i.kind).collect()
    }

    const ONCE: ItemKind = ItemKind::Primary { min: 1, max: 1 };
    const SEC: ItemKind = ItemKind::Secondary;

    fn plain(item: usize) -> Entry {
        Entry { item, color: None }
    }

    fn colored(item: usize, color: u32) -> Entry {
        Entry {
            item,
            color: Some(color),
        }
    }

    #[test]
    fn reads_the_exact_cover_example() {
        let p = parse(EXACT).unwrap();
        assert_eq!(names(&p), ["A", "B", "C", "D", "E", "F", "G"]);
        assert_eq!(kinds(&p), [ONCE, ONCE, ONCE, ONCE, ONCE, SEC, SEC]);
        let options: Vec<String> = (0..6).map(|o| p.format_option(o)).collect();
        assert_eq!(options, ["C E F", "A D G", "B C F", "A D", "B G", "D E G"]);
        assert_eq!(p.options()[0], [plain(2), plain(4), plain(5)]);
        assert!(p.dropped_options().is_empty());
        assert!(!p.has_colors() && !p.has_multiplicities());
        assert_eq!(p.entries(), 16);
        assert!(p.verify(&[3, 0, 4]).is_ok());
    }

    #[test]
    fn reads_the_color_example() {
        let p = parse(COLORS).unwrap();
        assert_eq!(names(&p), ["A", "B", "C", "X", "Y"]);
        assert_eq!(kinds(&p), [ONCE, ONCE, ONCE, SEC, SEC]);
        assert_eq!(p.colors(), ["0", "1"]);
        assert_eq!(p.options().len(), 5);
        assert_eq!(
            p.options()[1],
            [plain(0), plain(2), colored(3, 1), colored(4, 1)]
        );
        assert_eq!(p.options()[2], [colored(3, 0), colored(4, 1)]);
        assert_eq!(p.dropped_options(), [2]);
        assert!(p.verify(&[1, 3]).is_ok());
    }

    #[test]
    fn reads_the_multiplicity_example() {
        let p = parse(MULTIPLICITY).unwrap();
        assert_eq!(names(&p), ["A", "B", "C", "X", "Y"]);
        assert_eq!(
            kinds(&p),
            [ONCE, ONCE, ItemKind::Primary { min: 2, max: 3 }, SEC, SEC]
        );
        assert!(p.has_multiplicities() && p.has_colors());
        assert_eq!(p.options()[2], [plain(2), colored(3, 0)]);
        assert!(p.dropped_options().is_empty());
    }

    #[test]
    fn writes_the_examples_back() {
        assert_eq!(
            to_string(&parse(MULTIPLICITY).unwrap()),
            "A B 2:3|C | X Y\nA B X:0 Y:0\nA C X:1 Y:1\nC X:0\nB X:1\nC Y:1\n"
        );
        // The dropped option is written too, and Display is this writer.
        let colors = parse(COLORS).unwrap();
        assert!(colors.to_string().contains("\nX:0 Y:1\n"));
        let exact = parse(EXACT).unwrap();
        assert!(to_string(&exact).starts_with("A B C D E | F G\nC E F\n"));
        for p in [colors, exact] {
            assert_eq!(parse(&to_string(&p)), Ok(p));
        }
    }

    #[test]
    fn reads_and_writes_dlx5_costs() {
        // Costs anywhere after the first item, summed; `|0` is no cost.
        let p = parse("A B | X\nA |3 X:1 |4\nB |0\nA B |12\nX |5\n").unwrap();
        assert!(p.has_costs());
        let costs: Vec<u64> = (0..4).map(|o| p.cost(o)).collect();
        assert_eq!(costs, [7, 0, 12, 5]);
        assert_eq!(p.format_option(0), "A X:1");
        assert_eq!(p.dropped_options(), [3]);
        assert_eq!(to_string(&p), "A B | X\nA X:1 |7\nB\nA B |12\nX |5\n");
        assert_eq!(parse(&to_string(&p)), Ok(p));
        // Without costs nothing changes, and all-zero costs are none.
        assert!(!parse(EXACT).unwrap().has_costs());
        assert_eq!(parse("A\nA |0 |00\n"), parse("A\nA\n"));
        let max = format!("A\nA |{}\n", crate::xcc::problem::MAX_COST);
        assert_eq!(parse(&max).unwrap().cost(0), crate::xcc::problem::MAX_COST);
    }

    #[test]
    fn cost_errors_name_line_column_and_token() {
        use ParseErrorKind::*;
        check_error(b"A B\nA |\n", 2, 3, "|", CostNotANumber);
        check_error(b"A B\nA |x1\n", 2, 3, "|x1", CostNotANumber);
        check_error(b"A B\nA |+1\n", 2, 3, "|+1", CostNotANumber);
        check_error(b"A B\nA ||1\n", 2, 3, "||1", CostNotANumber);
        check_error(b"A B\nB\nA B |1x\n", 3, 5, "|1x", IllegalDigitInCost);
        check_error(b"A B\nA |1:2\n", 2, 3, "|1:2", IllegalDigitInCost);
        check_error(b"A B\nA |4294967296\n", 2, 3, "|4294967296", CostTooLarge);
        check_error(b"A B\nA |4294967295 B |1\n", 2, 17, "|1", CostTooLarge);
        check_error(
            b"A B\nA |99999999999999999999999\n",
            2,
            3,
            "|99999999999999999999999",
            CostTooLarge,
        );
        // A glued bar is part of a name, as before.
        let item = "A|1".to_string();
        let unknown = ProblemError::UnknownItem { item, option: 0 };
        check_error(b"A B\nA|1\n", 2, 1, "A|1", Problem(unknown));
    }

    #[test]
    fn writes_bounds_as_knuth_does() {
        let p = parse("2|A 0:3|B 1:1|C 1|D\n").unwrap();
        assert_eq!(
            kinds(&p),
            [
                ItemKind::Primary { min: 2, max: 2 },
                ItemKind::Primary { min: 0, max: 3 },
                ONCE,
                ONCE
            ]
        );
        // No `|` when there are no secondary items.
        assert_eq!(to_string(&p), "2|A 0:3|B C D\n");
    }

    #[test]
    fn accepts_knuth_spellings_and_our_extensions() {
        // `|` glued to the next name, comments between options, blank lines
        // of any whitespace (vertical tab and form feed are C whitespace),
        // CRLF endings, no final newline, long names, long colors.
        let text = "\r\n  | comment\r\nA 2|long_item_name |X Y\r\n\x0B\x0C\t\r\n\
                    A X:red Y:0\r\n| another comment\r\n long_item_name\tY:verylongcolor\r\nX:red";
        let p = parse(text).unwrap();
        assert_eq!(names(&p), ["A", "long_item_name", "X", "Y"]);
        assert_eq!(
            kinds(&p),
            [ONCE, ItemKind::Primary { min: 2, max: 2 }, SEC, SEC]
        );
        assert_eq!(p.colors(), ["red", "0", "verylongcolor"]);
        assert_eq!(p.options().len(), 3);
        assert_eq!(p.dropped_options(), [2]);
        assert_eq!(p.format_option(1), "long_item_name Y:verylongcolor");
        // A separator with nothing after it, and characters Knuth allows.
        let p = parse("#1 é? |\n#1 é?\n").unwrap();
        assert_eq!(names(&p), ["#1", "é?"]);
        assert_eq!(p.options().len(), 1);
        // A problem with no options is valid.
        assert_eq!(parse("A").unwrap().options().len(), 0);
        // Invalid UTF-8 is harmless in a comment, which is never decoded.
        let p = parse_bytes(b"| caf\xe9\nA\nA\n").unwrap();
        assert_eq!(names(&p), ["A"]);
    }

    /// Expected error: (input, line, column, token, kind).
    fn check_error(text: &[u8], line: usize, column: usize, token: &str, kind: ParseErrorKind) {
        let expected = ParseError {
            line,
            column,
            token: token.to_string(),
            kind,
        };
        assert_eq!(
            parse_bytes(text).map(|p| to_string(&p)),
            Err(expected),
            "input {:?}",
            String::from_utf8_lossy(text)
        );
    }

    #[test]
    fn syntax_errors_name_line_column_and_token() {
        use ParseErrorKind::*;
        check_error(b"", 1, 1, "", NoItemLine);
        check_error(b"| only\n\n  | comments\n", 4, 1, "", NoItemLine);
        // The item line cannot start with the separator: it is a comment.
        check_error(b"| A B\n", 2, 1, "", NoItemLine);
        check_error(b"\n| c", 2, 4, "", NoItemLine);
        check_error(b"A | X | Y\n", 1, 7, "|", SeparatorTwice);
        check_error(b"A | X |Y\n", 1, 7, "|Y", SeparatorTwice);
        check_error(b"A B| X\n", 1, 3, "B|", BarEndsToken);
        check_error(b"A 2| X\n", 1, 3, "2|", BarEndsToken);
        check_error(b"A | X|\n", 1, 5, "X|", BarEndsToken);
        check_error(b"A x|B\n", 1, 3, "x|B", IllegalDigitInBound);
        check_error(b"A +2|B\n", 1, 3, "+2|B", IllegalDigitInBound);
        check_error(b"A 1:2:3|B\n", 1, 3, "1:2:3|B", IllegalDigitInBound);
        check_error(b"A :2|B\n", 1, 3, ":2|B", EmptyLowerBound);
        check_error(b"A 2:|B\n", 1, 3, "2:|B", LowerWithoutUpper);
        check_error(b"A 4294967296|B\n", 1, 3, "4294967296|B", BoundOverflow);
        check_error(b"A | 2|X\n", 1, 5, "2|X", PrefixOnSecondary);
        check_error(b"A |2|X\n", 1, 3, "|2|X", PrefixOnSecondary);
        check_error(b"A\nA \xffB C\n", 2, 3, "\u{FFFD}B", InvalidUtf8);
        check_error(b"A\xc3\n", 1, 1, "A\u{FFFD}", InvalidUtf8);
    }

    #[test]
    fn builder_errors_name_line_column_and_token() {
        use ProblemError::*;
        let e = |p: ProblemError| ParseErrorKind::Problem(p);
        let s = String::from;
        check_error(b"A B A\n", 1, 5, "A", e(DuplicateItem(s("A"))));
        check_error(b"A B |A\n", 1, 5, "|A", e(DuplicateItem(s("A"))));
        check_error(b"A | X:1\n", 1, 5, "X:1", e(BadName(s("X:1"))));
        check_error(b"A ||X\n", 1, 3, "||X", e(BadName(s("|X"))));
        check_error(b"A 0|B\n", 1, 3, "0|B", e(UpperBoundZero { item: s("B") }));
        let above = LowerAboveUpper {
            item: s("B"),
            min: 3,
            max: 2,
        };
        check_error(b"A 3:2|B\n", 1, 3, "3:2|B", e(above));
        let too_large = format!("A {}|B", MAX_BOUND + 1);
        let item = s("B");
        let max = MAX_BOUND + 1;
        check_error(
            too_large.as_bytes(),
            1,
            3,
            &too_large[2..],
            e(BoundTooLarge { item, max }),
        );

        let items = "A B | X\n| comment\nA X\n";
        let unknown = format!("{items}\r\n\tB  Z\r\n");
        let item = s("Z");
        check_error(
            unknown.as_bytes(),
            5,
            5,
            "Z",
            e(UnknownItem { item, option: 1 }),
        );
        let twice = format!("{items}B X A B\n");
        let item = s("B");
        check_error(
            twice.as_bytes(),
            4,
            7,
            "B",
            e(ItemTwiceInOption { item, option: 1 }),
        );
        let primary = format!("{items}B:1\n");
        let item = s("B");
        check_error(
            primary.as_bytes(),
            4,
            1,
            "B:1",
            e(ColorOnPrimary { item, option: 1 }),
        );
        // The first fault in the option wins: here the repeat, not the color.
        let repeat = format!("{items}X B X:\n");
        let item = s("X");
        check_error(
            repeat.as_bytes(),
            4,
            5,
            "X:",
            e(ItemTwiceInOption { item, option: 1 }),
        );
        let empty = format!("{items}B X:\n");
        let item = s("X");
        check_error(
            empty.as_bytes(),
            4,
            3,
            "X:",
            e(EmptyColor { item, option: 1 }),
        );
        let nameless = format!("{items}A :1\n");
        let item = s("");
        check_error(
            nameless.as_bytes(),
            4,
            3,
            ":1",
            e(UnknownItem { item, option: 1 }),
        );
        // Columns count characters, not bytes; a tab is one character.
        let item = s("Q");
        let text = "é\tα | X\nα\té Q\n";
        check_error(
            text.as_bytes(),
            2,
            5,
            "Q",
            e(UnknownItem { item, option: 0 }),
        );
    }

    #[test]
    fn error_messages_read_well() {
        let err = parse("A B\nA C\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2, column 3: unknown item \"C\" in option 0 (at \"C\")"
        );
        let err = parse("A 2:|B\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 1, column 3: lower bound without upper bound (at \"2:|B\")"
        );
    }

    #[test]
    fn round_trips_the_benchmark_instances() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/instances");
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{} is part of the repository: {e}", dir.display()));
        let mut count = 0;
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "dlx") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let p = parse_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let written = to_string(&p);
            assert_eq!(parse(&written).as_ref(), Ok(&p), "{}", path.display());
            assert_eq!(to_string(&parse(&written).unwrap()), written);
            count += 1;
        }
        assert!(count >= 20, "only {count} instances in {}", dir.display());
    }

    /// Checks what every error must satisfy: a line that exists, and the
    /// token found at the column it names.
    fn check_error_position(bytes: &[u8], e: &ParseError) -> Result<(), TestCaseError> {
        let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        prop_assert!(e.line >= 1 && e.line <= lines.len(), "{e}");
        prop_assert!(e.column >= 1, "{e}");
        if e.kind != ParseErrorKind::InvalidUtf8 {
            let line = String::from_utf8_lossy(lines[e.line - 1]);
            let rest: String = line.chars().skip(e.column - 1).collect();
            prop_assert!(rest.starts_with(&e.token), "{e} in line {line:?}");
            prop_assert_eq!(e.token.is_empty(), e.kind == ParseErrorKind::NoItemLine);
        }
        Ok(())
    }

    /// Whatever parses must write back to the same problem.
    fn check_parse(bytes: &[u8]) -> Result<(), TestCaseError> {
        match parse_bytes(bytes) {
            Ok(p) => prop_assert_eq!(parse(&to_string(&p)), Ok(p)),
            Err(e) => check_error_position(bytes, &e)?,
        }
        Ok(())
    }

    /// Pieces of DLX text: names and colored names of the test item line,
    /// then pieces that are wrong or odd in some places.
    const PIECES: &[&str] = &["A", "B", "C", "X", "Y", "X:1", "Y:red", "Y:1", "|"];
    const ODD_PIECES: &[&str] = &[
        "é", "|C", "B|", "2:3|C", "0|A", "3:2|B", "2:|A", ":1|B", "x|B", "X:", "A:0", ":", "::",
        "#", "\u{a0}", "\u{2028}", "\u{FFFD}", "\0",
    ];
    /// What goes between pieces: mostly whitespace, sometimes nothing.
    const GAPS: &[&str] = &[" ", " ", "  ", "\t", "\n", "\n", "\r\n", "\x0B", ""];

    /// Random DLX-like text. Raw bytes are rare, or nearly every soup would
    /// stop at its first invalid UTF-8 sequence.
    fn soup() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            60 => prop::sample::select(PIECES).prop_map(|t| t.as_bytes().to_vec()),
            20 => prop::sample::select(ODD_PIECES).prop_map(|t| t.as_bytes().to_vec()),
            1 => prop::collection::vec(any::<u8>(), 1..3),
        ];
        let gap = prop::sample::select(GAPS).prop_map(str::as_bytes);
        prop::collection::vec((piece, gap), 0..40).prop_map(|pieces| {
            pieces
                .into_iter()
                .flat_map(|(piece, gap)| piece.into_iter().chain(gap.iter().copied()))
                .collect()
        })
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            check_parse(&bytes)?;
        }

        #[test]
        fn never_panics_on_token_soup(bytes in soup()) {
            check_parse(&bytes)?;
        }

        #[test]
        fn never_panics_on_soup_after_a_valid_item_line(bytes in soup()) {
            // Gets past the item line, so that options are exercised too.
            let text = [b"A B 0:2|C |Y X\n".as_slice(), &bytes].concat();
            check_parse(&text)?;
        }

        #[test]
        fn round_trips_random_problems(p in problem()) {
            let text = to_string(&p);
            prop_assert_eq!(parse(&text), Ok(p), "{}", text);
        }
    }

    /// Names made of characters the builder accepts, some longer than
    /// Knuth's 8, some that look like bounds or comments when misread.
    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[A-Za-z0-9]{1,3}",
            "[a-z0-9#é_.\\-]{1,12}",
            "[0-9]{1,2}",
            "[\u{a1}-\u{ff}\u{3b1}\u{1F600}]{1,3}",
        ]
    }

    fn color() -> impl Strategy<Value = String> {
        prop_oneof![
            "[01]",
            "[a-z]{2,8}",
            Just(":".to_string()),
            Just("a:b".to_string()),
            Just("|".to_string()),
            Just("é".to_string()),
        ]
    }

    /// Random valid problems: primaries (with random bounds) before
    /// secondaries, as the format requires, and non-empty options that may
    /// have no primary item (dropped) or colors on secondary items.
    fn problem() -> impl Strategy<Value = Problem> {
        let bounds = (0u32..3, 1u32..4).prop_map(|(a, b)| (a.min(b), b));
        let items = prop::collection::vec((name(), prop::option::of(bounds)), 1..10);
        let entry = (any::<prop::sample::Index>(), prop::option::of(color()));
        let cost = prop_oneof![3 => Just(0u64), 1 => 0u64..20, 1 => Just(MAX_COST)];
        let options = prop::collection::vec((prop::collection::vec(entry, 1..6), cost), 0..10);
        (items, options, any::<prop::sample::Index>()).prop_map(|(mut items, options, split)| {
            let mut seen = std::collections::HashSet::new();
            items.retain(|(name, _)| seen.insert(name.clone()));
            // Items with bounds are primary, as is the first one; the others
            // are secondary when past a random split point.
            let split = split.index(items.len()).max(1);
            let mut b = ProblemBuilder::new();
            let mut primary = Vec::new();
            for (k, (name, bounds)) in items.iter().enumerate() {
                if k < split {
                    let (min, max) = bounds.unwrap_or((1, 1));
                    b.primary_with_bounds(name, min, max).unwrap();
                    primary.push(true);
                } else {
                    b.secondary(name).unwrap();
                    primary.push(false);
                }
            }
            for (option, cost) in options {
                let mut used = std::collections::HashSet::new();
                let tokens: Vec<String> = option
                    .into_iter()
                    .filter_map(|(index, color)| {
                        let i = index.index(items.len());
                        if !used.insert(i) {
                            return None;
                        }
                        Some(match color {
                            Some(c) if !primary[i] => format!("{}:{c}", items[i].0),
                            _ => items[i].0.clone(),
                        })
                    })
                    .collect();
                let specs = tokens.iter().map(|t| EntrySpec::parse(t));
                b.option_with_cost(specs, cost).unwrap();
            }
            b.build().unwrap()
        })
    }
}
