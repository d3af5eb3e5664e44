//! What an engine's working memory for a problem can reach, known before a
//! run: the bound a server charges against its budgets and compares to its
//! limits, so that `auto` picks an engine that fits and a run that cannot
//! fit is refused before it allocates (issue 24, point 1).
//!
//! The bounds count what one [`super::Solver`] allocates: its arrays, its
//! per-level stacks (and a profile's counters), and for dancing cells the
//! save stack at its deepest. They do not count the [`Problem`] itself
//! (which the caller already holds) nor the solutions a run delivers (its
//! port's business).
//!
//! Dancing links undo by relinking, so their memory is linear in the
//! problem. Dancing cells (SSXCC) save the sizes of every active item at
//! every branching level: level `l` saves at most `N - l` sizes (each level
//! takes at least its branching item out of the active list), and there are
//! at most `P` levels (each covers a primary item), so the stack holds at
//! most `P * N - P * (P - 1) / 2` pairs: quadratic, which is what a chain of
//! 20,000 items (each in two one-item options) reaches (1.6 GB).

use super::links::node_count;
use super::problem::Problem;
use super::vocabulary::Engine;
pub use super::vocabulary::OutOfMemory;

/// Bytes of the per-level state of an engine: its stacks (at most 8 words)
/// and a profile's counter.
const PER_LEVEL: u64 = 8 * 4 + 8 + 8;

/// The most bytes `engine`'s working memory for `problem` can reach; `None`
/// when `engine` cannot search `problem`.
pub fn bound(problem: &Problem, engine: Engine) -> Option<u64> {
    match engine {
        Engine::Links => Some(links_bound(problem)),
        Engine::Cells if engine.supports(problem) => Some(cells_bound(problem)),
        Engine::Cells => None,
    }
}

/// Dancing links: 16 bytes a node at most (the wide layout) and its
/// option's index, five words an item, and the per-level stacks of a depth
/// of one level per option plus one null move per primary item.
fn links_bound(problem: &Problem) -> u64 {
    let nodes = node_count(problem) as u64;
    let items = problem.items().len() as u64 + 2;
    let depth = (problem.options().len() + problem.primary_count() + 2) as u64;
    nodes * (16 + 4) + items * 5 * 4 + depth * PER_LEVEL
}

/// The most bytes `problem` itself takes (its items, options and entries,
/// with their names): what a job holds beside its solvers, charged once.
pub fn problem_bound(problem: &Problem) -> u64 {
    let names: u64 = problem.items().iter().map(|i| i.name.len() as u64).sum();
    problem.items().len() as u64 * 64
        + names
        + problem.options().len() as u64 * 24
        + problem.entries() as u64 * 8
}

/// How many (item, size) pairs the cells engine's save stack can hold at
/// its deepest, for `problem` (see the module's documentation).
pub(crate) fn cells_save_entries(problem: &Problem) -> u64 {
    let n = problem.items().len() as u64;
    let p = (problem.primary_count() as u64).min(n);
    (p * n).saturating_sub(p * p.saturating_sub(1) / 2)
}

/// Dancing cells, in 32-bit words (the narrow layout takes half): two
/// copies of the cells (two words each) and of `set` and `item` (the
/// pristine ones a run starts from), a color and an option index per cell,
/// the forcing stack, the per-level stacks, and the save stack's pairs.
fn cells_bound(problem: &Problem) -> u64 {
    let n = problem.items().len() as u64;
    let cells = (problem.entries() + problem.options().len() + 1) as u64;
    let set = problem.entries() as u64 + 2 * n + 2;
    let depth = problem.primary_count() as u64 + 3;
    let arrays = cells * (2 * 2 * 4 + 4 + 4) + set * 2 * 4 + n * (2 * 4 + 4);
    if problem.has_multiplicities() {
        // Algorithm M on cells (cells_mcc.rs): a level per option it
        // includes or removes, each saving an item's size and need.
        let depth = problem.options().len() as u64 + 3;
        return arrays.saturating_add(depth * PER_LEVEL).saturating_add(
            super::cells_mcc::save_entries(problem).saturating_mul(super::cells_mcc::SAVED_BYTES),
        );
    }
    arrays + depth * PER_LEVEL + cells_save_entries(problem).saturating_mul(2 * 4)
}

/// The engine `auto` picks for `problem` when a run may take at most
/// `limit` bytes: [`Engine::auto`]'s choice if it fits, else links if they
/// fit, else none (with the smallest need, for the message).
pub fn fitting(problem: &Problem, limit: u64) -> Result<Engine, Need> {
    let first = Engine::auto(problem);
    let mut need = Need {
        engine: first,
        bytes: u64::MAX,
        limit,
    };
    for engine in [first, Engine::Links] {
        if let Some(bytes) = bound(problem, engine) {
            if bytes <= limit {
                return Ok(engine);
            }
            if bytes < need.bytes {
                need = Need {
                    engine,
                    bytes,
                    limit,
                };
            }
        }
    }
    Err(need)
}

/// Whether `engine` fits `limit` for `problem`.
pub fn check(problem: &Problem, engine: Engine, limit: u64) -> Result<u64, Need> {
    let bytes = bound(problem, engine).unwrap_or(u64::MAX);
    if bytes <= limit {
        Ok(bytes)
    } else {
        Err(Need {
            engine,
            bytes,
            limit,
        })
    }
}

/// A search that does not fit its memory limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the search needs up to {bytes} bytes on the {engine} engine, over the limit of {limit} bytes a search may take")]
pub struct Need {
    /// The engine that would need the least.
    pub engine: Engine,
    pub bytes: u64,
    pub limit: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::dlx_format;

    /// Items `x0 .. x{n-1}`, each in two one-item options: a search `n`
    /// levels deep, every level taking one item out of the active list.
    fn chain(n: usize) -> Problem {
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&format!("x{i} "));
        }
        text.push('\n');
        for i in 0..n {
            text.push_str(&format!("x{i}\nx{i}\n"));
        }
        dlx_format::parse(&text).unwrap()
    }

    #[test]
    fn the_cells_save_stack_is_quadratic_and_links_linear() {
        let small = chain(100);
        let large = chain(1000);
        assert_eq!(cells_save_entries(&small), 100 * 101 / 2);
        let cells = |p: &Problem| bound(p, Engine::Cells).unwrap();
        let links = |p: &Problem| bound(p, Engine::Links).unwrap();
        assert!(cells(&large) > 50 * cells(&small));
        assert!(links(&large) < 20 * links(&small));
    }

    /// Multiplicities on cells: a level per option (include or remove), each
    /// saving every active item, so the bound charges options x items.
    #[test]
    fn the_cells_save_stack_with_multiplicities_is_charged_per_option() {
        let mut text = String::from("2:3|x0 ");
        for i in 1..50 {
            text.push_str(&format!("x{i} "));
        }
        text.push('\n');
        for i in 1..50 {
            text.push_str(&format!("x0 x{i}\nx{i}\n"));
        }
        let problem = dlx_format::parse(&text).unwrap();
        assert!(problem.has_multiplicities());
        let cells = bound(&problem, Engine::Cells).unwrap();
        let save = (problem.options().len() as u64 + 2) * 50 * super::super::cells_mcc::SAVED_BYTES;
        assert!(cells > save, "{cells} <= {save}");
    }

    #[test]
    fn auto_falls_back_to_links_and_refuses_what_fits_nothing() {
        let problem = chain(1000);
        let links = bound(&problem, Engine::Links).unwrap();
        let cells = bound(&problem, Engine::Cells).unwrap();
        assert!(links < cells);
        assert_eq!(fitting(&problem, cells), Ok(Engine::Cells));
        assert_eq!(fitting(&problem, links), Ok(Engine::Links));
        let need = fitting(&problem, links - 1).unwrap_err();
        assert_eq!((need.engine, need.bytes), (Engine::Links, links));
        assert!(check(&problem, Engine::Cells, links).is_err());
    }
}
