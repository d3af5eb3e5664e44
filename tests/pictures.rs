//! The terminal pictures of solved puzzles, one golden picture per kind:
//! drawn by `xccd puzzle solve --format picture` from the examples'
//! solutions, and the plain text kept when the output is not a terminal.

use std::io::Write;
use std::process::{Command, Stdio};

fn solve(args: &[&str], stdin: &str) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xccd"))
        .args(["puzzle", "solve"])
        .args(args)
        .arg("--quiet")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn picture(kind: &str, stdin: &str) -> String {
    let file = format!("examples/puzzles/{kind}.txt");
    let source = if stdin.is_empty() { file.as_str() } else { "-" };
    let (code, out) = solve(&[kind, source, "--format", "picture"], stdin);
    assert_eq!(code, Some(0), "{kind}: {out}");
    out
}

#[test]
fn sudoku_with_its_boxes() {
    assert_eq!(
        picture("sudoku", ""),
        "\
┌───────┬───────┬───────┐
│ 6 9 3 │ 7 8 4 │ 5 1 2 │
│ 4 8 7 │ 5 1 2 │ 9 3 6 │
│ 1 2 5 │ 9 6 3 │ 8 7 4 │
├───────┼───────┼───────┤
│ 9 3 2 │ 6 5 1 │ 4 8 7 │
│ 5 6 8 │ 2 4 7 │ 3 9 1 │
│ 7 4 1 │ 3 9 8 │ 6 2 5 │
├───────┼───────┼───────┤
│ 3 1 9 │ 4 7 5 │ 2 6 8 │
│ 8 5 6 │ 1 2 9 │ 7 4 3 │
│ 2 7 4 │ 8 3 6 │ 1 5 9 │
└───────┴───────┴───────┘
"
    );
}

#[test]
fn futoshiki_with_its_signs_between_cells() {
    assert_eq!(
        picture("futoshiki", ""),
        "\
┌───┬───┬───┬───┐
│ 3 │ 1 < 4 │ 2 │
├───┼───┼───┼─∧─┤
│ 2 │ 4 > 1 │ 3 │
├─∨─┼───┼───┼───┤
│ 1 │ 2 │ 3 │ 4 │
├───┼───┼───┼───┤
│ 4 │ 3 │ 2 │ 1 │
└───┴───┴───┴───┘
"
    );
}

#[test]
fn latin_square_as_a_grid() {
    assert_eq!(
        picture("latin", "1 . .\n. . 1\n. 1 .\n"),
        "\
┌───┬───┬───┐
│ 1 │ 3 │ 2 │
├───┼───┼───┤
│ 3 │ 2 │ 1 │
├───┼───┼───┤
│ 2 │ 1 │ 3 │
└───┴───┴───┘
"
    );
}

#[test]
fn hitori_with_shaded_cells_as_blocks() {
    assert_eq!(
        picture("hitori", ""),
        "\
┌───┬───┬───┬───┐
│ 1 │ 4 │ 2 │███│
├───┼───┼───┼───┤
│ 4 │███│ 1 │ 2 │
├───┼───┼───┼───┤
│ 2 │ 1 │ 3 │ 4 │
├───┼───┼───┼───┤
│ 3 │███│ 4 │███│
└───┴───┴───┴───┘
"
    );
}

#[test]
fn hidato_with_its_numbers_and_holes() {
    assert_eq!(
        picture("hidato", ""),
        "\
┌────┬────┬────┬────┐
│  1 │  2 │  3 │░░░░│
├────┼────┼────┼────┤
│  6 │  7 │  4 │  9 │
├────┼────┼────┼────┤
│░░░░│  5 │  8 │ 10 │
└────┴────┴────┴────┘
"
    );
}

#[test]
fn slitherlink_with_its_loop_around_the_clues() {
    assert_eq!(
        picture("slitherlink", ""),
        "\
·   ·   ┌───┐
        │ 3 │
·   ┌───┘   │
  1 │ 2   1 │
·   │   ·   │
    │ 2     │
·   └───────┘
"
    );
}

#[test]
fn queens_on_a_board() {
    assert_eq!(
        picture("queens", "5\n"),
        "\
┌───┬───┬───┬───┬───┐
│   │ ♛ │   │ · │   │
├───┼───┼───┼───┼───┤
│ · │   │ · │ ♛ │ · │
├───┼───┼───┼───┼───┤
│ ♛ │ · │   │ · │   │
├───┼───┼───┼───┼───┤
│ · │   │ ♛ │   │ · │
├───┼───┼───┼───┼───┤
│   │ · │   │ · │ ♛ │
└───┴───┴───┴───┴───┘
"
    );
}

#[test]
fn text_stays_the_default_off_a_terminal() {
    // stdout is a pipe here: `auto` (the default) prints the plain text,
    // as `--format text` does, and pictures separate like texts.
    let (_, auto) = solve(&["queens", "-"], "4\n");
    let (_, text) = solve(&["queens", "-", "--format", "text"], "4\n");
    assert_eq!(auto, ".Q..\n...Q\nQ...\n..Q.\n");
    assert_eq!(auto, text);
    let (code, two) = solve(&["queens", "-", "--all", "--format", "picture"], "4\n");
    assert_eq!(code, Some(0));
    assert_eq!(two.matches('♛').count(), 8, "{two}");
    assert_eq!(two.matches("\n\n").count(), 1, "{two}");
}
