//! Where `xccd bench` prints its results: tables for people, or with
//! `--json` one JSON object per row for dashboards and CI, the row's table
//! named first: `{"table":"latency","call":"sudoku_hard17","p50_ms":...}`.

use std::fmt::Display;

use serde_json::Value;

/// The output of one `xccd bench` run.
#[derive(Debug, Clone, Copy)]
pub struct Rows {
    json: bool,
}

impl Rows {
    pub fn new(json: bool) -> Rows {
        Rows { json }
    }

    /// A line for people (a title, a header, a row of a table, a note):
    /// printed unless the output is JSON.
    pub fn text(&self, line: impl Display) {
        if !self.json {
            println!("{line}");
        }
    }

    /// A row for machines: with `--json`, one line holding `fields` (an
    /// object) with `"table": table` first; nothing otherwise.
    pub fn row(&self, table: &str, fields: Value) {
        if self.json {
            println!("{}", line(table, fields));
        }
    }
}

/// `fields` (an object; anything else goes under `"value"`) with
/// `"table"` first, on one line.
fn line(table: &str, fields: Value) -> String {
    let fields = match fields {
        Value::Object(map) => map,
        other => [("value".to_string(), other)].into_iter().collect(),
    };
    let mut out = format!("{{\"table\":{}", Value::from(table));
    for (key, value) in fields {
        if key == "table" {
            continue;
        }
        out.push(',');
        out.push_str(&Value::from(key).to_string());
        out.push(':');
        // Not a number (a measurement that could not be taken) is null.
        out.push_str(&value.to_string());
    }
    out.push('}');
    out
}

/// A measured number for a JSON row: `null` when it is not finite.
pub fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_row_is_one_object_with_its_table_first() {
        let text = line(
            "latency",
            json!({"call": "sudoku_hard17", "p99_ms": num(2.5), "cpu": num(f64::NAN)}),
        );
        assert!(text.starts_with("{\"table\":\"latency\","), "{text}");
        assert!(!text.contains('\n'));
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back,
            json!({"table": "latency", "call": "sudoku_hard17", "p99_ms": 2.5, "cpu": null})
        );
    }
}
