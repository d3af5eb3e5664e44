//! No import circle between the files of `src/`: a file that names another (with `use` or a path
//! in its code) must not be named back by it, directly or through others. A circle is two ideas
//! that cannot be read, tested or moved apart.
//!
//! How it checks, without a Rust parser: every `.rs` file under `src/` is a module (`src/a/b.rs`
//! and `src/a/b/mod.rs` are `a::b`; `src/lib.rs` and `src/main.rs` the roots). Outside comments
//! and before its `#[cfg(test)] mod tests {` (tests may reach anywhere), a file's `use` statements
//! (groups `{a, b::{c}}` expanded) and the paths in its code starting with `crate::`, `xccd::`
//! (the binary naming the library: both roots are `src/`) or `super::` are resolved to the
//! longest module prefix that is a file, following re-exports (`pub use`) to the file an item
//! comes from. A module's own file (`mod.rs`, the roots) naming the files below it is the module
//! tree, not an arrow, and is left out; a part naming its parent is kept. Method calls name no
//! path and are not seen. The edges make a graph; each strongly connected set of two or more files
//! is a circle. Circles known when this check came are listed in [`KNOWN`], to be broken and
//! removed from the list: a new circle fails the test, and so does a listed one that is gone
//! (remove it from the list, so that it cannot come back).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Circles that existed when this check was written (issue 28), each as its files, sorted: to be
/// broken, and then removed from here. None is left: every circle fails the test.
const KNOWN: &[&[&str]] = &[];

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file relative to `src/`.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
        parts.push(stem.to_string());
    }
    parts
}

/// A file's text without comments, cut before its test module.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim().starts_with("mod tests {"))
        {
            break;
        }
        let line = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(p).into_iter().map(move |e| format!("{prefix}{e}")))
        .collect()
}

/// Every path a file's code names, as written (`crate::a::b`, `super::c`).
fn paths_in(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    // `use` statements, groups expanded.
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 4..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest.find(';').unwrap_or(rest.len());
        paths.extend(expand(&rest[..end]));
    }
    // Paths in the code itself.
    for root in ["crate::", "xccd::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(root) {
            let start = from + at;
            from = start + root.len();
            let before = code[..start].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let end = code[start..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| start + e);
            paths.push(code[start..end].to_string());
        }
    }
    paths
}

/// What the files of `src/` hold: each module's file, and the items each
/// re-exports (`pub use a::b as c;`: `c` is `a::b`, read from that module).
struct Tree {
    files: BTreeMap<Vec<String>, String>,
    reexports: BTreeMap<Vec<String>, BTreeMap<String, String>>,
}

impl Tree {
    /// The file a path written in module `here` names, if it is a file of
    /// `src/`: the longest module prefix that is a file, or, when the next
    /// part is an item that module re-exports, the file that item comes
    /// from.
    fn resolve(&self, here: &[String], path: &str, depth: usize) -> Option<String> {
        let mut parts = path.split("::").filter(|p| !p.is_empty());
        let mut module: Vec<String> = match parts.next()? {
            "crate" | "xccd" => Vec::new(),
            "self" => here.to_vec(),
            "super" => here[..here.len().checked_sub(1)?].to_vec(),
            // A path from a submodule of `here` (`use child::Item;`).
            first => {
                let mut child = here.to_vec();
                child.push(first.to_string());
                if !self.files.contains_key(&child) {
                    return None;
                }
                child
            }
        };
        let rest: Vec<&str> = parts.collect();
        let mut at = 0;
        while rest.get(at) == Some(&"super") {
            module.pop();
            at += 1;
        }
        let mut best = self.files.get(&module).cloned()?;
        for part in &rest[at..] {
            if *part == "self" {
                break;
            }
            module.push(part.to_string());
            match self.files.get(&module) {
                Some(file) => best = file.clone(),
                None => {
                    module.pop();
                    let reexported = self.reexports.get(&module).and_then(|r| r.get(*part));
                    if let Some(target) = reexported.filter(|_| depth < 8) {
                        return self.resolve(&module, target, depth + 1).or(Some(best));
                    }
                    break;
                }
            }
        }
        Some(best)
    }
}

/// The items a file's code re-exports (`pub use`, `pub(crate) use`), by the
/// name they go by.
fn reexports_in(code: &str) -> BTreeMap<String, String> {
    let mut items = BTreeMap::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].trim_end();
        let public = before.ends_with("pub")
            || (before.ends_with(')')
                && before.rsplit("pub(").next().is_some_and(|r| r.len() < 12));
        rest = &rest[at + 4..];
        let end = rest.find(';').unwrap_or(rest.len());
        if !public {
            continue;
        }
        for path in expand_keeping_spaces(&rest[..end]) {
            let (path, name) = match path.split_once(" as ") {
                Some((p, n)) => (p.trim().to_string(), n.trim().to_string()),
                None => {
                    let name = path.rsplit("::").next().unwrap_or_default().to_string();
                    (path.clone(), name)
                }
            };
            items.insert(name, path);
        }
    }
    items
}

/// [`expand`], keeping the ` as ` of renames.
fn expand_keeping_spaces(tree: &str) -> Vec<String> {
    expand(&tree.replace(" as ", "\u{1}"))
        .into_iter()
        .map(|p| p.replace('\u{1}', " as "))
        .collect()
}

/// The strongly connected sets of two or more nodes (Tarjan's algorithm).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.edges.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut set = Vec::new();
                loop {
                    let top = self.stack.pop().unwrap();
                    self.on_stack.remove(top);
                    set.push(top.to_string());
                    if top == node {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.found.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found.sort();
    walk.found
}

/// The graph of `src/`'s files: which files each names. A module's own
/// file naming the files of its submodules (declaring, re-exporting and
/// using its parts) is the module tree, not an arrow between ideas: those
/// edges are left out; a part naming its parent's file is kept.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let src = root.join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    let name = |p: &Path| format!("src/{}", p.strip_prefix(&src).unwrap().display());
    let mut tree = Tree {
        files: BTreeMap::new(),
        reexports: BTreeMap::new(),
    };
    let mut codes = Vec::new();
    for path in &paths {
        let module = module_of(path.strip_prefix(&src).unwrap());
        let code = code_of(&std::fs::read_to_string(path).unwrap());
        if !path.ends_with("src/main.rs") {
            tree.files.insert(module.clone(), name(path));
            tree.reexports.insert(module.clone(), reexports_in(&code));
        }
        codes.push((name(path), module, code));
    }
    let mut edges = BTreeMap::new();
    for (file, here, code) in codes {
        // A module's own file: `mod.rs`, `lib.rs`, `main.rs`.
        let own = file.ends_with("/mod.rs") || file == "src/lib.rs" || file == "src/main.rs";
        let directory = match file.rfind('/') {
            Some(at) => file[..=at].to_string(),
            None => String::new(),
        };
        let named: BTreeSet<String> = paths_in(&code)
            .iter()
            .filter_map(|p| tree.resolve(&here, p, 0))
            .filter(|target| *target != file)
            .filter(|target| !(own && target.starts_with(&directory)))
            .collect();
        edges.insert(file, named);
    }
    edges
}

#[test]
fn no_file_of_src_imports_a_file_that_imports_it_back() {
    let edges = graph(Path::new(env!("CARGO_MANIFEST_DIR")));
    let found = circles(&edges);
    let known: Vec<Vec<String>> = KNOWN
        .iter()
        .map(|c| c.iter().map(|f| f.to_string()).collect())
        .collect();
    let new: Vec<_> = found.iter().filter(|c| !known.contains(c)).collect();
    let gone: Vec<_> = known.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        new.is_empty(),
        "import circles between files of src/ (each set names itself through the others): \
         {new:#?}; break them (a shared vocabulary in a file of its own, say)"
    );
    assert!(
        gone.is_empty(),
        "these known circles are gone: remove them from KNOWN in tests/imports.rs: {gone:#?}"
    );
}

#[test]
fn the_check_sees_circles_uses_and_paths() {
    // Its parts on a small example: groups, `super`, a path in the code.
    assert_eq!(expand("a::{b, c::{d, e}}"), ["a::b", "a::c::d", "a::c::e"]);
    let code = code_of(
        "use super::{x, y::Z};\n// use crate::gone;\nfn f() { crate::w::g(); }\n\
         #[cfg(test)]\nmod tests {\n use crate::t;\n}\n",
    );
    let paths = paths_in(&code);
    assert!(paths.contains(&"super::x".to_string()));
    assert!(paths.contains(&"super::y::Z".to_string()));
    assert!(paths.contains(&"crate::w::g".to_string()));
    assert!(!paths
        .iter()
        .any(|p| p.contains("gone") || p.contains("::t")));
    let files: BTreeMap<Vec<String>, String> = [
        (vec![], "src/lib.rs"),
        (vec!["a".to_string()], "src/a/mod.rs"),
        (vec!["a".to_string(), "b".to_string()], "src/a/b.rs"),
        (vec!["a".to_string(), "c".to_string()], "src/a/c.rs"),
    ]
    .into_iter()
    .map(|(m, f)| (m, f.to_string()))
    .collect();
    let reexports = [(
        vec!["a".to_string()],
        reexports_in(&code_of(
            "pub use c::{Item, Other as Renamed};\nuse b::Private;\n",
        )),
    )]
    .into_iter()
    .collect();
    let tree = Tree { files, reexports };
    let here = ["a".to_string(), "b".to_string()];
    let resolve = |p: &str| tree.resolve(&here, p, 0);
    // A re-exported item is read from the file it comes from.
    assert_eq!(resolve("super::Item").as_deref(), Some("src/a/c.rs"));
    assert_eq!(resolve("crate::a::Renamed").as_deref(), Some("src/a/c.rs"));
    assert_eq!(resolve("super::Private").as_deref(), Some("src/a/mod.rs"));
    assert_eq!(resolve("crate::a::b::f").as_deref(), Some("src/a/b.rs"));
    assert_eq!(resolve("std::io"), None);
    let mut edges = BTreeMap::new();
    for (from, to) in [("p", "q"), ("q", "r"), ("r", "p"), ("r", "s")] {
        edges
            .entry(from.to_string())
            .or_insert_with(BTreeSet::new)
            .insert(to.to_string());
    }
    assert_eq!(circles(&edges), [["p", "q", "r"]]);
}
