//! Where `xccd bench` finds its instances and reference tables: the set
//! built into the binary (the repository's `bench/`, embedded by build.rs),
//! or a folder of the same shape given with `--dir` (`instances/*.dlx`,
//! `knuth-reference.tsv`, `ssxcc-reference.tsv`, `ssmcc-reference.tsv`,
//! `cells-reference.tsv`, for `--memo` `memo/*.dlx` and `dlx6-reference.tsv`,
//! for `--service` `costs/*.dlx`).
//!
//! Built in, because a binary runs where its build machine's paths do not
//! exist (a container, another host): `xccd bench` then measures the same
//! instances wherever it runs.

use std::path::PathBuf;

use xccd::xcc::{dlx_format, Problem};

use super::CliError;

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/bench_set.rs"));
}

/// A benchmark set.
#[derive(Debug, Clone)]
pub enum BenchSet {
    /// The instances and tables built into this binary.
    Builtin,
    /// A folder holding `instances/*.dlx` and the reference tables.
    Dir(PathBuf),
}

/// Knuth's DLX1-3 counts (`knuth-reference.tsv`), SSXCC's, SSMCC's (the
/// instances with multiplicities), or the cells
/// engine's own (`cells-reference.tsv`: SSXCC's search with ties broken
/// the same way in every piece of a split search).
#[derive(Debug, Clone, Copy)]
pub enum ReferenceTable {
    Knuth,
    Ssxcc,
    Ssmcc,
    Cells,
    /// Knuth's DLX6 (memoized counting): `dlx6-reference.tsv`.
    Dlx6,
}

impl ReferenceTable {
    fn file(self) -> &'static str {
        match self {
            ReferenceTable::Knuth => "knuth-reference.tsv",
            ReferenceTable::Ssxcc => "ssxcc-reference.tsv",
            ReferenceTable::Ssmcc => "ssmcc-reference.tsv",
            ReferenceTable::Cells => "cells-reference.tsv",
            ReferenceTable::Dlx6 => "dlx6-reference.tsv",
        }
    }
}

impl BenchSet {
    /// The set `--dir` names, or the built-in one.
    pub fn new(dir: Option<PathBuf>) -> BenchSet {
        dir.map_or(BenchSet::Builtin, BenchSet::Dir)
    }

    /// The instances' names (file stems), sorted.
    pub fn names(&self) -> Result<Vec<String>, CliError> {
        match self {
            BenchSet::Builtin => Ok(builtin::INSTANCES
                .iter()
                .map(|(name, _)| name.to_string())
                .collect()),
            BenchSet::Dir(dir) => {
                let folder = dir.join("instances");
                let mut names: Vec<String> = std::fs::read_dir(&folder)
                    .map_err(|e| {
                        CliError::BadInput(format!("cannot read {}: {e}", folder.display()))
                    })?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "dlx"))
                    .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
                    .collect();
                names.sort();
                Ok(names)
            }
        }
    }

    /// Instance `name`'s problem and DLX text.
    pub fn load(&self, name: &str) -> Result<(Problem, String), CliError> {
        let text = self.text("instances", name)?;
        let problem = dlx_format::parse(&text)
            .map_err(|e| CliError::BadInput(format!("bench instance {name}: {e}")))?;
        Ok((problem, text))
    }

    /// A memoized-counting instance: `memo/NAME.dlx` (the tilings made for
    /// it), else the instance of that name.
    pub fn load_memo(&self, name: &str) -> Result<Problem, CliError> {
        let text = self
            .text("memo", name)
            .or_else(|_| self.text("instances", name))?;
        dlx_format::parse(&text)
            .map_err(|e| CliError::BadInput(format!("bench instance {name}: {e}")))
    }

    /// An instance with costs: `costs/NAME.dlx`.
    pub fn load_costs(&self, name: &str) -> Result<(Problem, String), CliError> {
        let text = self.text("costs", name)?;
        let problem = dlx_format::parse(&text)
            .map_err(|e| CliError::BadInput(format!("bench instance {name}: {e}")))?;
        Ok((problem, text))
    }

    /// The DLX text of `folder/name.dlx`.
    fn text(&self, folder: &str, name: &str) -> Result<String, CliError> {
        match self {
            BenchSet::Builtin => match folder {
                "memo" => builtin::MEMO_INSTANCES,
                "costs" => builtin::COST_INSTANCES,
                _ => builtin::INSTANCES,
            }
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, text)| text.to_string())
            .ok_or_else(|| {
                CliError::BadInput(format!(
                    "no instance {folder}/{name} in the built-in bench set"
                ))
            }),
            BenchSet::Dir(dir) => {
                let path = dir.join(folder).join(format!("{name}.dlx"));
                std::fs::read_to_string(&path)
                    .map_err(|e| CliError::BadInput(format!("cannot read {}: {e}", path.display())))
            }
        }
    }

    /// A reference table's text; `None` when a folder has none.
    pub fn reference(&self, table: ReferenceTable) -> Option<String> {
        match self {
            BenchSet::Builtin => Some(
                match table {
                    ReferenceTable::Knuth => builtin::KNUTH_REFERENCE,
                    ReferenceTable::Ssxcc => builtin::SSXCC_REFERENCE,
                    ReferenceTable::Ssmcc => builtin::SSMCC_REFERENCE,
                    ReferenceTable::Cells => builtin::CELLS_REFERENCE,
                    ReferenceTable::Dlx6 => builtin::DLX6_REFERENCE,
                }
                .to_string(),
            ),
            BenchSet::Dir(dir) => std::fs::read_to_string(dir.join(table.file())).ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_set_is_the_repository_bench_folder() {
        let folder = BenchSet::Dir(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/bench")));
        let builtin = BenchSet::Builtin;
        let names = builtin.names().unwrap();
        assert_eq!(names, folder.names().unwrap());
        assert!(names.iter().any(|n| n == "queens8"), "{names:?}");
        for name in &names {
            assert_eq!(builtin.load(name).unwrap().1, folder.load(name).unwrap().1);
        }
        assert!(builtin.load_memo("domino8x8").is_ok());
        assert_eq!(
            builtin.load_memo("domino8x8").unwrap().options().len(),
            folder.load_memo("domino8x8").unwrap().options().len()
        );
        for table in [
            ReferenceTable::Knuth,
            ReferenceTable::Ssxcc,
            ReferenceTable::Ssmcc,
            ReferenceTable::Dlx6,
        ] {
            assert_eq!(builtin.reference(table), folder.reference(table));
        }
        assert!(builtin.load("no-such-instance").is_err());
    }
}
