//! The pictures of solved puzzles drawn by `xccd puzzle solve`: for a
//! terminal (`--format picture`), one golden picture per kind from the
//! examples' solutions, and the plain text kept when the output is not a
//! terminal; as SVG (`--format svg`), each kind's document well-formed XML
//! (read by an XML parser) holding the right number of numbers, shaded
//! cells, holes, signs, loop segments and queens for a known puzzle,
//! counted against the solution's text. The SVG pictures committed under
//! docs/pictures/ (shown in the README) are what the program draws today.

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

// SVG documents.

/// The puzzles drawn: a kind, where its puzzle comes from, and the text
/// given on standard input (for the kinds without an example file).
const PUZZLES: &[(&str, &str, &str)] = &[
    ("sudoku", "examples/puzzles/sudoku.txt", ""),
    ("futoshiki", "examples/puzzles/futoshiki.txt", ""),
    ("latin", "-", "1 . .\n. . 1\n. 1 .\n"),
    ("hitori", "examples/puzzles/hitori.txt", ""),
    ("hidato", "examples/puzzles/hidato.txt", ""),
    ("slitherlink", "examples/puzzles/slitherlink.txt", ""),
    ("queens", "-", "8\n"),
];

/// The solution's text and its SVG document.
fn drawn(kind: &str) -> (String, String) {
    let &(_, source, stdin) = PUZZLES.iter().find(|p| p.0 == kind).unwrap();
    let run = |format: &str| {
        let (code, out) = solve(&[kind, source, "--format", format], stdin);
        assert_eq!(code, Some(0), "{kind}: {out}");
        out
    };
    (run("text"), run("svg"))
}

/// How many elements of the document carry `class` among their classes.
fn count(doc: &roxmltree::Document, class: &str) -> usize {
    doc.descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c.split_whitespace().any(|c| c == class))
        })
        .count()
}

/// The texts of the elements of class `number`, in document order.
fn numbers(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some("number"))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect()
}

fn parse(svg: &str) -> roxmltree::Document<'_> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}:\n{svg}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    for attribute in ["width", "height", "viewBox"] {
        assert!(root.attribute(attribute).is_some(), "no {attribute}");
    }
    doc
}

fn tokens(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// The digits of `text`, one string each.
fn digits(text: &str) -> Vec<String> {
    text.chars()
        .filter(char::is_ascii_digit)
        .map(String::from)
        .collect()
}

#[test]
fn sudoku_draws_its_81_numbers_in_9_boxes() {
    let (text, svg) = drawn("sudoku");
    let doc = parse(&svg);
    assert_eq!(numbers(&doc), digits(&text));
    assert_eq!(count(&doc, "box"), 9);
    assert_eq!(count(&doc, "cell"), 81);
}

#[test]
fn futoshiki_draws_each_sign_of_its_puzzle() {
    let (text, svg) = drawn("futoshiki");
    let doc = parse(&svg);
    let signs = |t: &str| t.chars().filter(|c| "<>^v".contains(*c)).count();
    let puzzle = std::fs::read_to_string("examples/puzzles/futoshiki.txt").unwrap();
    assert_eq!(count(&doc, "sign"), signs(&puzzle));
    assert_eq!(count(&doc, "sign"), signs(&text));
    assert_eq!(numbers(&doc), digits(&text));
}

#[test]
fn latin_square_draws_its_numbers_and_no_sign() {
    let (text, svg) = drawn("latin");
    let doc = parse(&svg);
    assert_eq!(numbers(&doc), tokens(&text));
    assert_eq!(count(&doc, "sign"), 0);
}

#[test]
fn hitori_shades_the_cells_its_solution_shades() {
    let (text, svg) = drawn("hitori");
    let doc = parse(&svg);
    let shaded = tokens(&text).iter().filter(|t| *t == "#").count();
    assert!(shaded > 0);
    assert_eq!(count(&doc, "shaded"), shaded);
    let unshaded: Vec<String> = tokens(&text).into_iter().filter(|t| t != "#").collect();
    assert_eq!(numbers(&doc), unshaded);
}

#[test]
fn hidato_draws_its_holes_and_one_path_through_every_number() {
    let (text, svg) = drawn("hidato");
    let doc = parse(&svg);
    let cells: Vec<String> = tokens(&text);
    let holes = cells.iter().filter(|t| *t == "#").count();
    assert_eq!(count(&doc, "hole"), holes);
    let path: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("path"))
        .collect();
    assert_eq!(path.len(), 1);
    let points = path[0].attribute("points").unwrap().split(' ').count();
    assert_eq!(points, cells.len() - holes);
}

#[test]
fn slitherlink_draws_one_segment_per_edge_of_its_loop() {
    let (text, svg) = drawn("slitherlink");
    let doc = parse(&svg);
    let edges = text.chars().filter(|c| *c == '-' || *c == '|').count();
    assert!(edges >= 4);
    assert_eq!(count(&doc, "loop"), edges);
    let clues = text.chars().filter(char::is_ascii_digit).count();
    assert_eq!(count(&doc, "clue"), clues);
}

#[test]
fn queens_draws_eight_queens_on_a_board_of_64_squares() {
    let (_, svg) = drawn("queens");
    let doc = parse(&svg);
    assert_eq!(count(&doc, "queen"), 8);
    assert_eq!(count(&doc, "cell"), 64);
}

#[test]
fn several_solutions_are_several_documents() {
    let (code, svg) = solve(&["latin", "-", "--all", "--format", "svg"], "3\n");
    assert_eq!(code, Some(0));
    let documents: Vec<&str> = svg.split("\n\n").collect();
    assert_eq!(documents.len(), 12, "the 12 latin squares of order 3");
    for document in documents {
        parse(document);
    }
}

#[test]
fn the_committed_pictures_are_what_the_program_draws() {
    for &(kind, _, _) in PUZZLES {
        let path = format!("docs/pictures/{kind}.svg");
        let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let (_, svg) = drawn(kind);
        assert_eq!(
            committed, svg,
            "{path} is stale: regenerate it with `xccd puzzle solve {kind} ... --format svg`"
        );
    }
}
