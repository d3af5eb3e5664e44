//! The [`Solver`] front: builds the engine (and word layout) a problem
//! runs on, and hands each call to it. It knows every engine; no engine
//! knows it.

use super::cells::{self, Cells};
use super::cells_mcc::CellsMcc;
use super::links::{node_count, Narrow, NodeRepr, Wide};
use super::problem::Problem;
use super::search::Search;
use super::task::{Decision, Task};
use super::vocabulary::{
    Engine, Order, Outcome, PathNode, Probe, RunConfig, RunError, TaskError, Visitor,
};

/// A solver for one problem: an engine's data plus its search stacks.
/// Build one per worker thread and run any number of tasks on it, one after
/// the other.
///
/// Two engines: dancing links ([`Engine::Links`], Knuth's DLX2/DLX3) and
/// dancing cells ([`Engine::Cells`], Knuth's SSXCC on sparse sets, and his
/// SSMCC for multiplicities); each has half-size words for small problems
/// ([`Layout::Narrow`]). Their search trees differ, so a task made by one engine
/// names nothing in the other's tree: every run of a search uses one engine.
pub struct Solver {
    engine: Inner,
}

enum Inner {
    Narrow(Box<Search<Narrow>>),
    Wide(Box<Search<Wide>>),
    CellsNarrow(Box<Cells<u16>>),
    CellsInCache(Box<Cells<cells::InCache32>>),
    Cells(Box<Cells<u32>>),
    /// Multiplicities: Algorithm M on sparse sets (SSMCC), 32-bit words.
    CellsMcc(Box<CellsMcc>),
}

/// Which word size a [`Solver`]'s arrays use: half-size words keep twice
/// as much of a problem in each cache level (pent6x10 on cells: about a
/// third faster), but only small problems fit them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// 16-bit fields: 8-byte links nodes (at most 65,535 nodes); 4-byte
    /// cells and 2-byte set entries (at most 32,767 set entries and 65,535
    /// cells, see `cells::Word`).
    Narrow,
    /// 32-bit fields, for any problem.
    Wide,
}

/// A problem the chosen engine cannot search. (Both engines search every
/// problem today, the cells engine multiplicities too; the error stays for
/// the API's callers.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {engine} engine cannot search this problem")]
pub struct UnsupportedEngine {
    pub engine: Engine,
}

impl Solver {
    /// A links solver with 8-byte nodes if the problem fits them, else 16-byte.
    pub fn new(problem: &Problem) -> Solver {
        Solver::with_layout(problem, Layout::Narrow)
    }

    /// A solver running `engine` in the faster layout for `problem`: narrow
    /// links nodes whenever they fit; narrow cells when they fit and the
    /// wide ones would not fit the first-level cache (`cells::narrow_pays`).
    /// (Wide cells that fit that cache run without the prefetch:
    /// `cells::InCache32`.)
    pub fn with_engine(problem: &Problem, engine: Engine) -> Result<Solver, UnsupportedEngine> {
        let layout = match engine {
            Engine::Cells if !cells::narrow_pays(problem) => Layout::Wide,
            _ => Layout::Narrow,
        };
        Solver::with_engine_layout(problem, engine, layout)
    }

    /// A solver running `engine` in the given layout; `Narrow` falls back
    /// to `Wide` when the problem does not fit. (For tests and benchmarks:
    /// both layouts must count the same.)
    pub fn with_engine_layout(
        problem: &Problem,
        engine: Engine,
        layout: Layout,
    ) -> Result<Solver, UnsupportedEngine> {
        match engine {
            Engine::Links => Ok(Solver::with_layout(problem, layout)),
            Engine::Cells => Solver::cells(problem, layout, Order::Exact),
        }
    }

    /// A cells solver in the given layout (as [`Solver::with_engine_layout`])
    /// breaking ties by `order`.
    pub fn cells(
        problem: &Problem,
        layout: Layout,
        order: Order,
    ) -> Result<Solver, UnsupportedEngine> {
        if !cells::supports(problem) {
            return Err(UnsupportedEngine {
                engine: Engine::Cells,
            });
        }
        if problem.has_multiplicities() {
            return Ok(Solver {
                engine: Inner::CellsMcc(Box::new(CellsMcc::new(problem, order))),
            });
        }
        Ok(Solver {
            engine: if layout == Layout::Narrow && cells::fits::<u16>(problem) {
                Inner::CellsNarrow(Box::new(Cells::new(problem, order)))
            } else if cells::fits_first_level_cache(problem) {
                Inner::CellsInCache(Box::new(Cells::new(problem, order)))
            } else {
                Inner::Cells(Box::new(Cells::new(problem, order)))
            },
        })
    }

    /// A cells solver that makes SSXCC's own choices ([`Order::Ssxcc`]), in
    /// the layout [`Solver::with_engine`] picks: a whole run counts the
    /// nodes and updates of Knuth's SSXCC (bench/ssxcc-reference.tsv).
    pub fn ssxcc(problem: &Problem) -> Result<Solver, UnsupportedEngine> {
        let layout = if cells::narrow_pays(problem) {
            Layout::Narrow
        } else {
            Layout::Wide
        };
        Solver::cells(problem, layout, Order::Ssxcc)
    }

    /// A links solver with the given node layout; `Narrow` falls back to
    /// `Wide` when the problem does not fit. (For tests and benchmarks: both
    /// layouts must count the same.)
    pub fn with_layout(problem: &Problem, layout: Layout) -> Solver {
        let fits = Narrow::fits(
            node_count(problem),
            problem.items().len(),
            problem.colors().len(),
        );
        let engine = if layout == Layout::Narrow && fits {
            Inner::Narrow(Box::new(Search::new(problem)))
        } else {
            Inner::Wide(Box::new(Search::new(problem)))
        };
        Solver { engine }
    }

    /// A fresh solver like this one (same engine and layout), for `problem`.
    pub fn rebuilt(&self, problem: &Problem) -> Solver {
        match self.order() {
            Some(order) => Solver::cells(problem, self.layout(), order),
            None => Solver::with_engine_layout(problem, self.engine(), self.layout()),
        }
        .unwrap_or_else(|_| Solver::with_layout(problem, self.layout()))
    }

    /// How a cells solver breaks ties (`None` for links).
    pub fn order(&self) -> Option<Order> {
        match &self.engine {
            Inner::Narrow(_) | Inner::Wide(_) => None,
            Inner::CellsNarrow(s) => Some(s.order()),
            Inner::CellsInCache(s) => Some(s.order()),
            Inner::Cells(s) => Some(s.order()),
            Inner::CellsMcc(s) => Some(s.order()),
        }
    }

    /// The engine in use.
    pub fn engine(&self) -> Engine {
        match self.engine {
            Inner::Narrow(_) | Inner::Wide(_) => Engine::Links,
            Inner::Cells(_)
            | Inner::CellsInCache(_)
            | Inner::CellsNarrow(_)
            | Inner::CellsMcc(_) => Engine::Cells,
        }
    }

    /// The layout in use.
    pub fn layout(&self) -> Layout {
        match self.engine {
            Inner::Narrow(_) | Inner::CellsNarrow(_) => Layout::Narrow,
            Inner::Wide(_) | Inner::Cells(_) | Inner::CellsInCache(_) | Inner::CellsMcc(_) => {
                Layout::Wide
            }
        }
    }

    /// Which of Knuth's algorithms this problem needs.
    pub fn algorithm(&self) -> &'static str {
        match &self.engine {
            Inner::Narrow(s) => s.algorithm(),
            Inner::Wide(s) => s.algorithm(),
            Inner::CellsNarrow(s) => s.algorithm(),
            Inner::CellsInCache(s) => s.algorithm(),
            Inner::Cells(s) => s.algorithm(),
            Inner::CellsMcc(s) => s.algorithm(),
        }
    }

    /// Explores the subtree(s) named by `task`, reporting to `visitor`.
    pub fn run<V: Visitor>(
        &mut self,
        task: &Task,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Result<Outcome, RunError> {
        match &mut self.engine {
            Inner::Narrow(s) => Ok(s.run(task, config, visitor)?),
            Inner::Wide(s) => Ok(s.run(task, config, visitor)?),
            Inner::CellsNarrow(s) => s.run(task, config, visitor),
            Inner::CellsInCache(s) => s.run(task, config, visitor),
            Inner::Cells(s) => s.run(task, config, visitor),
            Inner::CellsMcc(s) => s.run(task, config, visitor),
        }
    }

    /// What `path` leads to: the options taken on the way (and, for
    /// Algorithm M, passed over), and the node it reaches: its moves'
    /// options in the order positions name them, and how many moves it has
    /// (see [`PathNode`] for which solutions lie below it).
    ///
    /// A solution lies in the subtrees `[from, to)` of that node exactly
    /// when it lies below the node and its move there is at a position in
    /// the range: what lets a coordinator check that a worker's solution
    /// belongs to the task it leased, for every algorithm.
    pub fn describe(&mut self, path: &[Decision]) -> Result<PathNode, TaskError> {
        match &mut self.engine {
            Inner::Narrow(s) => s.describe(path),
            Inner::Wide(s) => s.describe(path),
            Inner::CellsNarrow(s) => s.describe(path),
            Inner::CellsInCache(s) => s.describe(path),
            Inner::Cells(s) => s.describe(path),
            Inner::CellsMcc(s) => s.describe(path),
        }
    }
    /// Walks one random path from the root of the search tree, as the
    /// search would go down it, choosing at each node the alternative
    /// `choose(d)` among its `d` (a value in `0..d`; larger values count as
    /// `d - 1`). Returns the degrees along the path and how it ended; the
    /// links are as before. Knuth's estimate of the tree's size is built on
    /// it (see [`crate::xcc::estimate`]). Side conditions a visitor checks
    /// are not seen: the walk is in the tree of the problem alone.
    pub fn probe(&mut self, choose: &mut dyn FnMut(Decision) -> Decision) -> Probe {
        match &mut self.engine {
            Inner::Narrow(s) => s.probe(choose),
            Inner::Wide(s) => s.probe(choose),
            Inner::CellsNarrow(s) => s.probe(choose),
            Inner::CellsInCache(s) => s.probe(choose),
            Inner::Cells(s) => s.probe(choose),
            Inner::CellsMcc(s) => s.probe(choose),
        }
    }
}

/// What each engine can search: the front's knowledge, beside the engines
/// it builds.
impl Engine {
    /// Whether this engine can search `problem`.
    pub fn supports(self, problem: &Problem) -> bool {
        match self {
            Engine::Links => true,
            Engine::Cells => cells::supports(problem),
        }
    }
}
