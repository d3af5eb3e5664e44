//! The search: Algorithm C (DLX2) for problems whose primary items all have
//! bounds [1, 1], Algorithm M (DLX3) otherwise, both able to start from a
//! subtree [`Task`] and to give work away while running.
//!
//! The two loops follow Knuth's programs step for step, so that on the same
//! input they visit the same search tree and report the same numbers of
//! nodes and updates. The differences between them matter for those counts:
//! DLX2 covers the branching item even when its list is empty and detects a
//! solution right after covering an option (counting it as a node there);
//! DLX3 backtracks at once on a node whose best score is <= 0 and detects a
//! solution on entering a node with no active item.
//!
//! Levels below the task's level replay the task's path: each is a level
//! whose range holds exactly one alternative. At the task's level the range is
//! the task's; below it, all alternatives. Giving work away shrinks the range
//! of the shallowest level that has untried alternatives; checkpointing turns
//! every untried alternative into tasks and stops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use super::cells::Order;
use super::cells::{self, Cells};
use super::cells_mcc::CellsMcc;
use super::links::{node_count, Links, Narrow, NodeRepr, Wide, ROOT};
use super::problem::Problem;
use super::task::{Cut, Decision, Task, ALL};

/// Counters of one search, all machine-independent.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Search-tree nodes, each solution counted as a node (as Knuth does).
    pub nodes: u64,
    /// Removals of a node from a list or of an item from the active list,
    /// made while exploring the task's own subtrees: over the tasks a
    /// search is cut into, these add up to the unsplit search's count.
    pub updates: u64,
    /// Purifications and options marked as agreeing with a purified item
    /// (likewise without the replay).
    pub cleansings: u64,
    /// Updates spent replaying the task's path to reach its node: work the
    /// run that made the task had already counted. Zero for the root task.
    pub replay_updates: u64,
    /// Cleansings spent on the same replay.
    pub replay_cleansings: u64,
    pub solutions: u64,
    /// Deepest level reached.
    pub max_level: usize,
    /// Nodes per level (only when [`RunConfig::profile`] is set).
    pub profile: Vec<u64>,
}

impl Stats {
    /// Counts a node on `level`, `depth` levels below the task's node (both
    /// engines enter their nodes through this). False when that passes the
    /// run's node limit: the node is then not counted and the run stops.
    #[inline(always)]
    pub(crate) fn count_node(&mut self, level: usize, depth: usize, config: &RunConfig) -> bool {
        self.nodes += 1;
        if config.profile {
            if self.profile.len() <= depth {
                self.profile.resize(depth + 1, 0);
            }
            self.profile[depth] += 1;
        }
        if level > self.max_level {
            self.max_level = level;
        }
        if config.max_nodes.is_some_and(|max| self.nodes > max) {
            self.nodes -= 1;
            return false;
        }
        true
    }

    /// [`Stats::count_node`] when the run [`RunConfig::counts_plainly`].
    #[inline(always)]
    pub(crate) fn count_plain_node(&mut self, level: usize) {
        self.nodes += 1;
        self.max_level = self.max_level.max(level);
    }

    /// Counts a solution as the visitor judged it; the status the run must
    /// stop with, if any (the visitor's stop, or `max_solutions` reached).
    pub(crate) fn count_solution(&mut self, flow: Flow, config: &RunConfig) -> Option<Status> {
        match flow {
            Flow::Reject => return None,
            Flow::Stop => {
                self.solutions += 1;
                return Some(Status::Stopped);
            }
            Flow::Continue => self.solutions += 1,
        }
        config
            .max_solutions
            .is_some_and(|m| self.solutions >= m)
            .then_some(Status::SolutionLimit)
    }

    /// Adds the counters of another (part of the same) search.
    pub fn merge(&mut self, other: &Stats) {
        self.nodes += other.nodes;
        self.updates += other.updates;
        self.cleansings += other.cleansings;
        self.replay_updates += other.replay_updates;
        self.replay_cleansings += other.replay_cleansings;
        self.solutions += other.solutions;
        self.max_level = self.max_level.max(other.max_level);
        if self.profile.len() < other.profile.len() {
            self.profile.resize(other.profile.len(), 0);
        }
        for (a, b) in self.profile.iter_mut().zip(&other.profile) {
            *a += b;
        }
    }
}

/// How a search run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Status {
    /// Every alternative of the task was explored.
    Exhausted,
    /// `max_solutions` solutions were found.
    SolutionLimit,
    /// `max_nodes` nodes were explored.
    NodeLimit,
    /// The visitor or the stop flag asked to stop.
    Stopped,
    /// The visitor asked for a checkpoint: the unexplored work is in
    /// [`Outcome::remaining`].
    Checkpointed,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    pub stats: Stats,
    /// After a checkpoint: the unexplored rest of the task, in the order the
    /// search would have explored it.
    pub remaining: Vec<Task>,
}

/// Nodes between two polls of a running search, by default: the one
/// default of every layer's poll interval ([`RunConfig`], the run layer's
/// `RunSpec`, the service's pool and `xccd serve --poll-nodes`). A poll is a
/// few microseconds of work apart, so a stop or a give-away is noticed soon.
pub const POLL_INTERVAL: u64 = 1024;
/// The most nodes between two polls a server accepts: a run must notice a
/// stop soon.
pub const MAX_POLL_INTERVAL: u64 = 1 << 20;

/// Limits and controls of one run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub max_solutions: Option<u64>,
    pub max_nodes: Option<u64>,
    /// Call [`Visitor::poll`] (and read the stop flag) every this many nodes.
    pub poll_interval: u64,
    /// Count nodes per level.
    pub profile: bool,
    /// Set from elsewhere to stop the search within `poll_interval` nodes.
    pub stop: Option<Arc<AtomicBool>>,
    /// Ask [`Visitor::partial`] at every node.
    pub check_partial: bool,
}

impl RunConfig {
    /// Whether a node needs no more than counting (and its level noting):
    /// no profile per level, no node limit.
    pub(crate) fn counts_plainly(&self) -> bool {
        !self.profile && self.max_nodes.is_none()
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            max_solutions: None,
            max_nodes: None,
            poll_interval: POLL_INTERVAL,
            profile: false,
            stop: None,
            check_partial: false,
        }
    }
}

/// What a visitor wants after a solution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
    /// Not a solution after all (a side condition the XCC encoding cannot
    /// express, such as connectivity, fails): not counted, search goes on.
    Reject,
}

/// What a visitor wants when polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Continue,
    Stop,
    /// Turn all remaining work into tasks and stop.
    Checkpoint,
    /// Give part of the remaining work away (to [`Visitor::given_away`]).
    GiveAway,
}

/// Receives what a search finds. Every method has a default, so a counter
/// implements nothing, and a solution is never materialized unless asked.
pub trait Visitor {
    fn solution(&mut self, _solution: &SolutionView<'_>) -> Flow {
        Flow::Continue
    }
    fn poll(&mut self, _progress: &ProgressView<'_>) -> Request {
        Request::Continue
    }
    fn given_away(&mut self, _task: Task) {}
    /// With [`RunConfig::check_partial`]: called on entering each node with
    /// the options chosen so far; returning `false` prunes the node's whole
    /// subtree. Puzzles use it for conditions that exact cover cannot
    /// express (one loop, connected cells) to cut dead branches early.
    fn partial(&mut self, _chosen: &SolutionView<'_>) -> bool {
        true
    }
}

/// A visitor that only counts (the [`Stats`] already do).
pub struct CountOnly;
impl Visitor for CountOnly {}

/// A visitor that keeps every solution (as sorted option indices).
#[derive(Debug, Default)]
pub struct Collect {
    pub solutions: Vec<Vec<usize>>,
}
impl Visitor for Collect {
    fn solution(&mut self, solution: &SolutionView<'_>) -> Flow {
        self.solutions.push(solution.options());
        Flow::Continue
    }
}

/// A solution as the search holds it, valid during the callback.
pub struct SolutionView<'a> {
    choices: &'a [u32],
    node_option: &'a [u32],
    last_itm: u32,
}

impl<'a> SolutionView<'a> {
    /// A view of the chosen nodes `choices` (those above `last_itm` are
    /// option nodes), named through `node_option`.
    pub(crate) fn new(choices: &'a [u32], node_option: &'a [u32], last_itm: u32) -> Self {
        SolutionView {
            choices,
            node_option,
            last_itm,
        }
    }

    /// Writes the chosen option indices, ascending, into `out`.
    pub fn options_into(&self, out: &mut Vec<usize>) {
        out.clear();
        out.extend(self.chosen().map(|o| o as usize));
        sort_options(out);
    }
    /// Appends the chosen option indices, ascending, to `out` (a buffer
    /// that holds solution after solution, see `run::Solutions`).
    pub fn append_options(&self, out: &mut Vec<u32>) {
        let start = out.len();
        if self.last_itm == 0 {
            // Every choice is an option node (the cells engine): one
            // reservation, no test per choice.
            out.extend(self.choices.iter().map(|&n| self.node_option[n as usize]));
        } else {
            out.extend(self.chosen());
        }
        sort_options(&mut out[start..]);
    }
    /// The chosen option indices, ascending.
    pub fn options(&self) -> Vec<usize> {
        let mut v = Vec::new();
        self.options_into(&mut v);
        v
    }
    /// The chosen option indices, in the order of the levels.
    fn chosen(&self) -> impl Iterator<Item = u32> + '_ {
        self.choices
            .iter()
            .filter(|&&n| n > self.last_itm)
            .map(|&n| self.node_option[n as usize])
    }
}

/// Sorts a solution's option indices. A solution has a few dozen options,
/// and comes almost sorted (levels tend to follow the items' order):
/// insertion sort beats the general sort there, which showed up at 6 % of
/// the CPU time of a server streaming every solution. (Sorting by a bitmap
/// of the options, without a data-dependent branch, was no faster on
/// latin5 in a streaming server.)
fn sort_options<T: Copy + Ord>(v: &mut [T]) {
    if v.len() > 64 {
        v.sort_unstable();
        return;
    }
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// The state of a running search, for progress reports.
pub struct ProgressView<'a> {
    pub stats: &'a Stats,
    /// Alternative positions (0-based) and degrees of the current path,
    /// from the root.
    pub positions: &'a [Decision],
    pub degrees: &'a [Decision],
    /// Weight of this task's part of the tree explored so far (Knuth's
    /// estimate), in units of the whole tree.
    pub done_weight: f64,
    /// Weight of the work this run still owns plus what it has done.
    pub task_weight: f64,
}

impl ProgressView<'_> {
    /// Knuth's estimate of the fraction of the *whole* tree explored, when
    /// the run started from the root task.
    pub fn fraction(&self) -> f64 {
        self.done_weight
    }
    /// Knuth's progress string: one "kd" pair per level, with 0-9, a-z,
    /// A-Z for 0..61 and `*` above.
    pub fn knuth_path(&self) -> String {
        fn code(x: u32) -> char {
            match x {
                0..=9 => (b'0' + x as u8) as char,
                10..=35 => (b'a' + (x - 10) as u8) as char,
                36..=61 => (b'A' + (x - 36) as u8) as char,
                _ => '*',
            }
        }
        let mut s = String::new();
        for (k, d) in self.positions.iter().zip(self.degrees) {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push(code(k + 1));
            s.push(code(*d));
        }
        s
    }
}

/// A task that does not name a node of this problem's search tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task path is invalid at level {level}: alternative {position} does not exist")]
pub struct TaskError {
    pub level: usize,
    pub position: Decision,
}

/// Why a run could not be made: its task names no node of the tree, or the
/// engine could not get the memory it needed (the run stopped cleanly).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Task(#[from] TaskError),
    #[error(transparent)]
    OutOfMemory(#[from] super::memory::OutOfMemory),
}

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

/// The search engines, each with its own search tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Engine {
    /// Dancing links: Algorithms X, C (DLX1/DLX2) and M (DLX3).
    Links,
    /// Dancing cells: Algorithm C on sparse sets (SSXCC), and M for
    /// multiplicities (SSMCC).
    Cells,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Links => "links",
            Engine::Cells => "cells",
        }
    }

    /// Whether this engine can search `problem`.
    pub fn supports(self, problem: &Problem) -> bool {
        match self {
            Engine::Links => true,
            Engine::Cells => cells::supports(problem),
        }
    }

    /// The engine `auto` picks for `problem`: dancing cells, except for a
    /// problem with multiplicities whose every primary item has one exact
    /// count (`u = v`) and that has no secondary items, where links.
    ///
    /// Measured with `xccd bench` (docs/performance.md): SSXCC's
    /// search tree is never larger than DLX2's (it stops a branch as soon as
    /// an item loses its last option and forces items left with one), and
    /// our cells engine runs it faster than the links engine runs DLX2's on
    /// every benchmark instance. With multiplicities the cells engine runs
    /// SSMCC's binary tree: smaller than DLX3's, and faster, where items
    /// have slack or secondary items prune (bench/instances/mcc_bands*,
    /// mcc_queens*: 0.5-0.8 of the links engine's time), but larger where
    /// every count is exact and nothing else constrains (mcc_rowcol*: SSMCC
    /// counts a node for each option it drops, 11.97M nodes against DLX3's
    /// 8.86M on rowcol7k2, 1.1-1.2 of the links engine's time).
    pub fn auto(problem: &Problem) -> Engine {
        let exact_counts_only = problem.items().iter().all(|item| match item.kind {
            super::problem::ItemKind::Primary { min, max } => min == max,
            super::problem::ItemKind::Secondary => false,
        });
        if problem.has_multiplicities() && exact_counts_only {
            Engine::Links
        } else {
            Engine::Cells
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Engine, String> {
        match s {
            "links" => Ok(Engine::Links),
            "cells" => Ok(Engine::Cells),
            _ => Err(format!("unknown engine '{s}' (expected links or cells)")),
        }
    }
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

    /// What `path` leads to, for Algorithms X and C: the option taken at
    /// each level, and the alternatives at the node it reaches (the options
    /// of its branching item's list, in the order positions name them; none
    /// at a solution). `None` for Algorithm M, whose alternatives are not
    /// options alone.
    ///
    /// A solution lies in the subtrees `[from, to)` of that node exactly
    /// when it holds every option taken and its option among the
    /// alternatives is at a position in the range: what lets a coordinator
    /// check that a worker's solution belongs to the task it leased.
    pub fn describe(&mut self, path: &[Decision]) -> Result<Option<PathNode>, TaskError> {
        match &mut self.engine {
            Inner::Narrow(s) => s.describe(path),
            Inner::Wide(s) => s.describe(path),
            Inner::CellsNarrow(s) => s.describe(path).map(Some),
            Inner::CellsInCache(s) => s.describe(path).map(Some),
            Inner::Cells(s) => s.describe(path).map(Some),
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

/// One random walk down the search tree (see [`Solver::probe`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The degree (number of alternatives) of each node the walk went
    /// through, from the root, in the search's own terms: the options of
    /// the branching item's list for Algorithms X and C, DLX3's moves for
    /// Algorithm M. The walk took one alternative at each.
    pub degrees: Vec<Decision>,
    /// How the walk ended.
    pub end: ProbeEnd,
}

/// Where a [`Probe`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeEnd {
    /// At a solution, a node of the tree as [`Stats::nodes`] counts it.
    Solution,
    /// At a node without alternatives that is not a solution (a primary
    /// item that no option can cover any more), also a node of its own.
    DeadEnd,
    /// The alternative chosen at the last node is no node: the walk ended
    /// on an empty subtree. On dancing links, that node had fewer
    /// alternatives than its degree says (Algorithm M's degree is DLX3's
    /// count of its moves, which the search never exceeds; this should not
    /// happen). On dancing cells it is common: an option whose covering
    /// leaves an item without options is tried but is no node (SSXCC does
    /// not count it).
    Missing,
}

impl Probe {
    /// How many nodes of the tree the walk visited, the root included.
    pub fn nodes(&self) -> usize {
        match self.end {
            ProbeEnd::Missing => self.degrees.len(),
            ProbeEnd::Solution | ProbeEnd::DeadEnd => self.degrees.len() + 1,
        }
    }
}

/// What a path of the search tree leads to (see [`Solver::describe`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathNode {
    /// The option taken at each level of the path.
    pub taken: Vec<usize>,
    /// The alternatives at the node: option indices in the order the search
    /// tries them; empty when the node is a solution.
    pub alternatives: Vec<usize>,
}

/// The search over one node layout.
struct Search<N: NodeRepr> {
    links: Links<N>,
    colors: bool,
    multiplicities: bool,
    // Per-level state.
    best: Vec<u32>,
    choice: Vec<u32>,
    pos: Vec<Decision>,
    hi: Vec<Decision>,
    lo: Vec<Decision>,
    degree: Vec<Decision>,
    /// The weight of one alternative at the task's own level. Deeper levels'
    /// weights follow from the degrees (see [`Search::units`]); they are only
    /// needed when progress is read or work is handed out, so the search
    /// does not divide at every node.
    base_unit: f64,
    first_tweak: Vec<u32>,
    null_taken: Vec<bool>,
    // Per-run state.
    stats: Stats,
    base: usize,
    /// Whether the task's own node is new to the search (the root task).
    count_base: bool,
    /// Whether the task covers its node's whole range (the root task, and
    /// the first task a checkpoint leaves): the run that made it counted
    /// the node but did not branch there, so the branching is new work.
    fresh_base: bool,
    /// The link counters (updates, cleansings) when the replay of the
    /// task's path ended; `None` until then.
    replay_mark: Option<(u64, u64)>,
    task_weight: f64,
    given_weight: f64,
    countdown: u64,
    /// The running task's cuts (see [`Task::cuts`]).
    cuts: Vec<Cut>,
}

enum Step {
    Forward,
    Advance,
    Backup,
    /// C: undo the current option and move to the next one.
    Recover,
    /// M: leave the level.
    Backdown,
}

/// How an engine's main loop ends, before unwinding (both engines).
pub(crate) enum Exit {
    Done,
    Stop(Status),
    Checkpoint,
}

impl Exit {
    /// How a run goes on after the visitor answered a poll with `request`;
    /// `give_away` makes the task a give-away hands out, if there is one.
    #[cold]
    pub(crate) fn after_poll<V: Visitor>(
        request: Request,
        visitor: &mut V,
        give_away: impl FnOnce() -> Option<Task>,
    ) -> Option<Exit> {
        match request {
            Request::Continue => None,
            Request::Stop => Some(Exit::Stop(Status::Stopped)),
            Request::Checkpoint => Some(Exit::Checkpoint),
            Request::GiveAway => {
                if let Some(task) = give_away() {
                    visitor.given_away(task);
                }
                None
            }
        }
    }

    /// The run's status, and its unexplored work after a checkpoint.
    pub(crate) fn finish(self, remaining: impl FnOnce() -> Vec<Task>) -> (Status, Vec<Task>) {
        match self {
            Exit::Done => (Status::Exhausted, Vec::new()),
            Exit::Stop(status) => (status, Vec::new()),
            Exit::Checkpoint => (Status::Checkpointed, remaining()),
        }
    }
}

impl<N: NodeRepr> Search<N> {
    fn new(problem: &Problem) -> Search<N> {
        let links = Links::new(problem);
        // Depth is at most one level per option plus one null move per
        // primary item, plus the final node.
        let depth = problem.options().len() + problem.primary_count() + 2;
        Search {
            links,
            colors: problem.has_colors(),
            multiplicities: problem.has_multiplicities(),
            best: vec![0; depth],
            choice: vec![0; depth],
            pos: vec![0; depth],
            hi: vec![0; depth],
            lo: vec![0; depth],
            degree: vec![0; depth],
            base_unit: 0.0,
            first_tweak: vec![0; depth],
            null_taken: vec![false; depth],
            stats: Stats::default(),
            base: 0,
            count_base: true,
            fresh_base: true,
            replay_mark: None,
            task_weight: 1.0,
            given_weight: 0.0,
            countdown: 0,
            cuts: Vec::new(),
        }
    }

    fn describe(&mut self, path: &[Decision]) -> Result<Option<PathNode>, TaskError> {
        match (self.multiplicities, self.colors) {
            (true, _) => Ok(None),
            (false, false) => self.describe_c::<false>(path).map(Some),
            (false, true) => self.describe_c::<true>(path).map(Some),
        }
    }

    /// Replays `path` as Algorithm C would, reads the node it reaches, and
    /// restores the links.
    fn describe_c<const COLORS: bool>(&mut self, path: &[Decision]) -> Result<PathNode, TaskError> {
        let mut steps: Vec<(u32, u32)> = Vec::with_capacity(path.len());
        let mut failure = None;
        for (level, &position) in path.iter().enumerate() {
            if self.links.next[ROOT as usize] == ROOT {
                // The path goes on below a solution.
                failure = Some(TaskError { level, position });
                break;
            }
            let (best, _) = self.choose_c();
            self.links.cover::<COLORS>(best, true);
            let mut cur = self.links.nd[best as usize].down();
            for _ in 0..position {
                if cur == best {
                    break;
                }
                cur = self.links.nd[cur as usize].down();
            }
            if cur == best {
                self.links.uncover::<COLORS>(best, true);
                failure = Some(TaskError { level, position });
                break;
            }
            self.links.commit_others::<COLORS>(cur);
            steps.push((best, cur));
        }
        let mut alternatives = Vec::new();
        if failure.is_none() && self.links.next[ROOT as usize] != ROOT {
            let (best, _) = self.choose_c();
            let mut cur = self.links.nd[best as usize].down();
            while cur != best {
                alternatives.push(self.links.node_option[cur as usize] as usize);
                cur = self.links.nd[cur as usize].down();
            }
        }
        let taken = steps
            .iter()
            .map(|&(_, cur)| self.links.node_option[cur as usize] as usize)
            .collect();
        for &(best, cur) in steps.iter().rev() {
            self.links.uncommit_others::<COLORS>(cur);
            self.links.uncover::<COLORS>(best, true);
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(PathNode {
                taken,
                alternatives,
            }),
        }
    }

    fn algorithm(&self) -> &'static str {
        match (self.multiplicities, self.colors) {
            (true, _) => "M",
            (false, true) => "C",
            (false, false) => "X",
        }
    }

    fn run<V: Visitor>(
        &mut self,
        task: &Task,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Result<Outcome, TaskError> {
        self.stats = Stats::default();
        self.links.updates = 0;
        self.links.cleansings = 0;
        self.base = task.path.len();
        self.count_base = task.path.is_empty() && task.from == 0 && task.to == ALL;
        self.fresh_base = task.from == 0 && task.to == ALL;
        self.replay_mark = None;
        self.task_weight = task.weight;
        self.given_weight = 0.0;
        self.countdown = config.poll_interval.max(1);
        self.cuts.clone_from(&task.cuts);
        if config.max_solutions == Some(0) {
            return Ok(Outcome {
                status: Status::SolutionLimit,
                stats: Stats::default(),
                remaining: Vec::new(),
            });
        }
        // Levels run from 0 to at most options + primaries (the deepest node).
        if self.base + 2 > self.best.len() {
            return Err(TaskError {
                level: self.best.len() - 2,
                position: 0,
            });
        }
        let result = match (self.multiplicities, self.colors) {
            (false, false) => self.run_c::<false, V>(task, config, visitor),
            (false, true) => self.run_c::<true, V>(task, config, visitor),
            (true, false) => self.run_m::<false, V>(task, config, visitor),
            (true, true) => self.run_m::<true, V>(task, config, visitor),
        };
        let (replay_updates, replay_cleansings) = self
            .replay_mark
            .unwrap_or((self.links.updates, self.links.cleansings));
        self.stats.updates = self.links.updates - replay_updates;
        self.stats.cleansings = self.links.cleansings - replay_cleansings;
        self.stats.replay_updates = replay_updates;
        self.stats.replay_cleansings = replay_cleansings;
        let (status, remaining) = result?;
        Ok(Outcome {
            status,
            stats: std::mem::take(&mut self.stats),
            remaining,
        })
    }

    /// Sets the range of alternatives of a freshly entered level (and, at
    /// the task's own level, the weight per alternative).
    #[inline(always)]
    fn enter_level(&mut self, level: usize, task: &Task, degree: Decision) {
        let (lo, hi) = if level < self.base {
            (task.path[level], task.path[level].saturating_add(1))
        } else if level == self.base {
            (task.from, if task.to == ALL { degree } else { task.to })
        } else {
            (0, degree)
        };
        let hi = if self.cuts.is_empty() || level < self.base {
            hi
        } else {
            self.cut_end(level, hi)
        };
        self.lo[level] = lo;
        self.hi[level] = hi;
        self.pos[level] = lo;
        self.degree[level] = degree;
        if level == self.base {
            self.base_unit = if hi > lo {
                task.weight / f64::from(hi - lo)
            } else {
                0.0
            };
        }
    }

    /// Ends the replay of the task's path: the updates from here on are the
    /// task's own work. Called at the task's node, once per run: on entering
    /// it when the branching there is new (`fresh_base`), else once its item
    /// is covered and the alternatives before the range skipped, which the
    /// run that made the task did and counted already. (The calls sit in
    /// branches the search takes at the task's node anyway, so the search's
    /// inner loop pays nothing for them.)
    #[cold]
    #[inline(never)]
    fn end_replay(&mut self) {
        self.replay_mark = Some((self.links.updates, self.links.cleansings));
    }

    /// `(level, weight of one alternative there)` for the levels from the
    /// task's own down to `level - 1`: each level splits the weight of one
    /// alternative above it evenly among its `degree` alternatives (Knuth's
    /// estimate).
    fn units(&self, level: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        (self.base..level).scan(0.0, move |unit, l| {
            *unit = if l == self.base {
                self.base_unit
            } else {
                *unit / f64::from(self.degree[l].max(1))
            };
            Some((l, *unit))
        })
    }

    /// The end of the range at the node on `level` now entered, after the
    /// task's cuts.
    #[cold]
    fn cut_end(&self, level: usize, hi: Decision) -> Decision {
        self.cuts
            .iter()
            .filter(|cut| cut.path.len() == level && cut.path[..] == self.pos[..level])
            .fold(hi, |hi, cut| hi.min(cut.end))
    }

    /// The cuts of the running task that lie inside a task made from it.
    fn cuts_within(&self, path: &[Decision], from: Decision, to: Decision) -> Vec<Cut> {
        Cut::all_within(&self.cuts, path, from, to)
    }

    /// Counts a node at `level` and, every `poll_interval` nodes, consults
    /// the stop flag and the visitor. Returns how to go on.
    #[inline(always)]
    fn enter_node<V: Visitor>(
        &mut self,
        level: usize,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Option<Exit> {
        // The node a task starts from was counted by the run that made the
        // task, unless the task is the whole tree; polling there could only
        // hand the task back.
        if level < self.base || (level == self.base && !self.count_base) {
            if level == self.base && self.fresh_base {
                self.end_replay();
            }
            return None;
        }
        if !self.stats.count_node(level, level - self.base, config) {
            return Some(Exit::Stop(Status::NodeLimit));
        }
        if level == self.base {
            // The root task: its branching is all new.
            self.end_replay();
            return None;
        }
        self.countdown -= 1;
        if self.countdown > 0 {
            return None;
        }
        self.countdown = config.poll_interval.max(1);
        if let Some(flag) = &config.stop {
            if flag.load(Ordering::Relaxed) {
                return Some(Exit::Stop(Status::Stopped));
            }
        }
        // Polls come only below the task's node, after its replay ended.
        let (replay_updates, replay_cleansings) = self.replay_mark.unwrap_or_default();
        self.stats.updates = self.links.updates - replay_updates;
        self.stats.cleansings = self.links.cleansings - replay_cleansings;
        let request = {
            let view = ProgressView {
                stats: &self.stats,
                positions: &self.pos[..level],
                degrees: &self.degree[..level],
                done_weight: self.done_weight(level),
                task_weight: self.task_weight - self.given_weight,
            };
            visitor.poll(&view)
        };
        Exit::after_poll(request, visitor, || self.give_away(level))
    }

    /// Knuth's estimate of the weight explored, at a node on `level` not yet
    /// branched on.
    fn done_weight(&self, level: usize) -> f64 {
        if level <= self.base {
            return 0.5 * (self.task_weight - self.given_weight);
        }
        let mut done = 0.0;
        let mut deepest = 0.0;
        for (l, unit) in self.units(level) {
            done += f64::from(self.pos[l] - self.lo[l]) * unit;
            deepest = unit;
        }
        done + 0.5 * deepest
    }

    /// Gives away the upper half of the untried alternatives at the
    /// shallowest level that has any. Called at a node on `level`.
    fn give_away(&mut self, level: usize) -> Option<Task> {
        let (l, unit) = self
            .units(level)
            .find(|&(l, _)| self.hi[l] > self.pos[l] + 1)?;
        let (pos, hi) = (self.pos[l], self.hi[l]);
        let untried = hi - pos - 1;
        let mid = pos + 1 + untried / 2;
        let weight = unit * f64::from(hi - mid);
        self.hi[l] = mid;
        self.given_weight += weight;
        let path = self.pos[..l].to_vec();
        let cuts = self.cuts_within(&path, mid, hi);
        Some(Task {
            path,
            from: mid,
            to: hi,
            weight,
            cuts,
        })
    }

    /// The unexplored work of a run stopped at a node on `level` (not yet
    /// branched on), as tasks in the order the search would have met them.
    fn remaining_tasks(&self, level: usize, task: &Task) -> Vec<Task> {
        if level <= self.base {
            return vec![task.clone()];
        }
        let units: Vec<(usize, f64)> = self.units(level).collect();
        let path = self.pos[..level].to_vec();
        let mut tasks = vec![Task {
            cuts: self.cuts_within(&path, 0, ALL),
            path,
            from: 0,
            to: ALL,
            weight: units[units.len() - 1].1,
        }];
        for &(l, unit) in units.iter().rev() {
            let (pos, hi) = (self.pos[l], self.hi[l]);
            if hi > pos + 1 {
                let path = self.pos[..l].to_vec();
                tasks.push(Task {
                    cuts: self.cuts_within(&path, pos + 1, hi),
                    path,
                    from: pos + 1,
                    to: hi,
                    weight: unit * f64::from(hi - pos - 1),
                });
            }
        }
        tasks
    }

    fn finish(&mut self, exit: Exit, level: usize, task: &Task) -> (Status, Vec<Task>) {
        exit.finish(|| self.remaining_tasks(level, task))
    }

    /// Asks the visitor whether the options chosen above `level` may still
    /// lead to a solution.
    fn accepts<V: Visitor>(&self, level: usize, visitor: &mut V) -> bool {
        visitor.partial(&SolutionView {
            choices: &self.choice[..level],
            node_option: &self.links.node_option,
            last_itm: self.links.last_itm,
        })
    }

    /// Reports a solution; returns how the search should go on.
    fn record<V: Visitor>(
        &mut self,
        chosen: usize,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Option<Exit> {
        let flow = visitor.solution(&SolutionView {
            choices: &self.choice[..chosen],
            node_option: &self.links.node_option,
            last_itm: self.links.last_itm,
        });
        self.stats.count_solution(flow, config).map(Exit::Stop)
    }

    // ----- Algorithm C (DLX2) -----

    /// Knuth's MRV rule as coded in DLX1/DLX2: scan the active primary
    /// items from the left and take the first with the fewest options,
    /// stopping at once on an item with none.
    #[inline(always)]
    fn choose_c(&self) -> (u32, i32) {
        let links = &self.links;
        let mut best = ROOT;
        let mut t = i32::MAX;
        let mut k = links.next_active(ROOT);
        while k != ROOT {
            let len = links.len(k);
            if len < t {
                best = k;
                t = len;
                if t == 0 {
                    break;
                }
            }
            k = links.next_active(k);
        }
        (best, t)
    }

    fn run_c<const COLORS: bool, V: Visitor>(
        &mut self,
        task: &Task,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Result<(Status, Vec<Task>), TaskError> {
        let mut level = 0usize;
        let mut step = Step::Forward;
        let exit = loop {
            match step {
                Step::Forward => {
                    if let Some(exit) = self.enter_node(level, config, visitor) {
                        self.unwind_c::<COLORS>(level);
                        break self.finish(exit, level, task);
                    }
                    if config.check_partial && level > self.base && !self.accepts(level, visitor) {
                        level -= 1;
                        step = Step::Recover;
                        continue;
                    }
                    let (best, len) = self.choose_c();
                    self.links.cover::<COLORS>(best, true);
                    self.best[level] = best;
                    self.enter_level(level, task, len as Decision);
                    let mut cur = self.links.nd[best as usize].down();
                    for _ in 0..self.lo[level] {
                        if cur == best {
                            break;
                        }
                        cur = self.links.nd[cur as usize].down();
                    }
                    self.choice[level] = cur;
                    if level <= self.base {
                        if level < self.base && cur == best {
                            let err = TaskError {
                                level,
                                position: self.lo[level],
                            };
                            self.links.uncover::<COLORS>(best, true);
                            self.unwind_c::<COLORS>(level);
                            return Err(err);
                        }
                        if level == self.base && !self.fresh_base {
                            self.end_replay();
                        }
                    }
                    step = Step::Advance;
                }
                Step::Advance => {
                    let cur = self.choice[level];
                    if cur == self.best[level] || self.pos[level] >= self.hi[level] {
                        step = Step::Backup;
                        continue;
                    }
                    self.links.commit_others::<COLORS>(cur);
                    if self.links.next[ROOT as usize] == ROOT {
                        if level + 1 < self.base {
                            // The task's path goes on below a solution. (A
                            // path that ends at the solution names it.)
                            self.unwind_c::<COLORS>(level + 1);
                            return Err(TaskError {
                                level: level + 1,
                                position: task.path.get(level + 1).copied().unwrap_or(task.from),
                            });
                        }
                        // A solution: DLX2 counts it as a node of its own.
                        self.stats.nodes += 1;
                        if let Some(exit) = self.record(level + 1, config, visitor) {
                            self.unwind_c::<COLORS>(level + 1);
                            break self.finish(exit, level + 1, task);
                        }
                        step = Step::Recover;
                        continue;
                    }
                    level += 1;
                    step = Step::Forward;
                }
                Step::Backup => {
                    self.links.uncover::<COLORS>(self.best[level], true);
                    if level == 0 {
                        break self.finish(Exit::Done, 0, task);
                    }
                    level -= 1;
                    step = Step::Recover;
                }
                Step::Recover => {
                    let cur = self.choice[level];
                    self.links.uncommit_others::<COLORS>(cur);
                    self.choice[level] = self.links.nd[cur as usize].down();
                    self.pos[level] += 1;
                    step = Step::Advance;
                }
                Step::Backdown => unreachable!("Algorithm C has no backdown step"),
            }
        };
        Ok(exit)
    }

    /// Restores the links after an early exit: every level below `level`
    /// has its option committed and its item covered.
    fn unwind_c<const COLORS: bool>(&mut self, level: usize) {
        for l in (0..level).rev() {
            self.links.uncommit_others::<COLORS>(self.choice[l]);
            self.links.uncover::<COLORS>(self.best[l], true);
        }
    }

    // ----- Algorithm M (DLX3) -----

    /// DLX3's choice: minimize the branching degree `len + s - bound + 1`
    /// where `s = min(slack, bound)`; on ties prefer the smaller `s`, then
    /// the longer list, then the leftmost. Returns (item, score), score
    /// `None` when no item is active (a solution).
    fn choose_m(&self) -> (u32, Option<i64>) {
        let links = &self.links;
        let mut score = i64::MAX;
        let (mut best, mut best_s, mut best_l) = (ROOT, 0i64, 0i64);
        let mut k = links.next_active(ROOT);
        while k != ROOT {
            let bound = i64::from(links.bound[k as usize]);
            let s = i64::from(links.slack[k as usize]).min(bound);
            let len = i64::from(links.len(k));
            let t = len + s - bound + 1;
            if t <= score && (t < score || s < best_s || (s == best_s && len > best_l)) {
                score = t;
                best = k;
                best_s = s;
                best_l = len;
            }
            k = links.next_active(k);
        }
        (best, (best != ROOT).then_some(score))
    }

    /// Whether the branching item of `level` has no more alternatives at its
    /// current option; otherwise makes the current alternative ready (tweaks
    /// it, or for the null move deactivates the item).
    fn m_prepare<const COLORS: bool>(&mut self, level: usize, skip_only: bool) -> bool {
        let best = self.best[level];
        let cur = self.choice[level];
        let bound = self.links.bound[best as usize];
        let slack = self.links.slack[best as usize];
        if bound == 0 && slack == 0 {
            return cur != best;
        }
        if self.links.len(best) <= bound - slack {
            return false;
        }
        if cur != best {
            self.links.tweak::<COLORS>(cur, bound != 0);
        } else {
            if skip_only {
                return false; // the null move is the last alternative
            }
            if bound != 0 {
                self.links.deactivate(best);
            }
            self.null_taken[level] = true;
        }
        true
    }

    /// Undoes the setup of the branching item of `level` (DLX3's "restore
    /// the original state of best_itm").
    fn m_restore<const COLORS: bool>(&mut self, level: usize) {
        let best = self.best[level];
        let b = best as usize;
        if self.links.bound[b] == 0 && self.links.slack[b] == 0 {
            self.links.uncover::<COLORS>(best, true);
        } else {
            let unblock = self.links.bound[b] != 0;
            if !unblock && !self.null_taken[level] {
                // Covered (and deactivated) on entry; DLX3 reactivates it on
                // leaving the null move, which this range never reached.
                self.links.reactivate(best);
            }
            self.links
                .untweak::<COLORS>(best, self.first_tweak[level], unblock);
        }
        self.links.bound[b] += 1;
    }

    fn run_m<const COLORS: bool, V: Visitor>(
        &mut self,
        task: &Task,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Result<(Status, Vec<Task>), TaskError> {
        let mut level = 0usize;
        let mut step = Step::Forward;
        let exit = loop {
            match step {
                Step::Forward => {
                    if let Some(exit) = self.enter_node(level, config, visitor) {
                        self.unwind_m::<COLORS>(level);
                        break self.finish(exit, level, task);
                    }
                    if config.check_partial && level > self.base && !self.accepts(level, visitor) {
                        step = Step::Backdown;
                        continue;
                    }
                    let (best, score) = self.choose_m();
                    let Some(score) = score else {
                        if level < self.base {
                            self.unwind_m::<COLORS>(level);
                            return Err(TaskError { level, position: 0 });
                        }
                        if let Some(exit) = self.record(level, config, visitor) {
                            self.unwind_m::<COLORS>(level);
                            break self.finish(exit, level, task);
                        }
                        step = Step::Backdown;
                        continue;
                    };
                    if score <= 0 {
                        if level < self.base {
                            self.unwind_m::<COLORS>(level);
                            return Err(TaskError { level, position: 0 });
                        }
                        step = Step::Backdown;
                        continue;
                    }
                    let b = best as usize;
                    self.best[level] = best;
                    self.null_taken[level] = false;
                    let cur = self.links.nd[b].down();
                    self.choice[level] = cur;
                    self.links.bound[b] -= 1;
                    if self.links.bound[b] == 0 && self.links.slack[b] == 0 {
                        self.links.cover::<COLORS>(best, true);
                    } else {
                        self.first_tweak[level] = cur;
                        if self.links.bound[b] == 0 {
                            self.links.cover::<COLORS>(best, true);
                        }
                    }
                    let degree = Decision::try_from(score).unwrap_or(Decision::MAX - 1);
                    self.enter_level(level, task, degree);
                    // Skip to the start of the range, tweaking as DLX3 would
                    // have done while trying the skipped alternatives.
                    let mut skipped = 0;
                    while skipped < self.lo[level] && self.m_prepare::<COLORS>(level, true) {
                        let cur = self.choice[level];
                        self.choice[level] = self.links.nd[cur as usize].down();
                        skipped += 1;
                    }
                    if skipped < self.lo[level] {
                        if level == self.base && !self.fresh_base {
                            self.end_replay();
                        }
                        if level < self.base {
                            let err = TaskError {
                                level,
                                position: self.lo[level],
                            };
                            self.m_restore::<COLORS>(level);
                            self.unwind_m::<COLORS>(level);
                            return Err(err);
                        }
                        step = Step::Backup;
                        continue;
                    }
                    if level == self.base && !self.fresh_base {
                        self.end_replay();
                    }
                    step = Step::Advance;
                }
                Step::Advance => {
                    if self.pos[level] >= self.hi[level] {
                        step = Step::Backup;
                        continue;
                    }
                    if !self.m_prepare::<COLORS>(level, false) {
                        if level < self.base {
                            // The path names an alternative past the last.
                            let err = TaskError {
                                level,
                                position: self.pos[level],
                            };
                            self.m_restore::<COLORS>(level);
                            self.unwind_m::<COLORS>(level);
                            return Err(err);
                        }
                        step = Step::Backup;
                        continue;
                    }
                    let cur = self.choice[level];
                    if cur != self.best[level] {
                        self.links.m_commit_others::<COLORS>(cur);
                    }
                    level += 1;
                    step = Step::Forward;
                }
                Step::Backup => {
                    self.m_restore::<COLORS>(level);
                    step = Step::Backdown;
                }
                Step::Backdown => {
                    if level == 0 {
                        break self.finish(Exit::Done, 0, task);
                    }
                    level -= 1;
                    let cur = self.choice[level];
                    let best = self.best[level];
                    if cur == best {
                        self.links.reactivate(best);
                        step = Step::Backup;
                        continue;
                    }
                    self.links.m_uncommit_others::<COLORS>(cur);
                    self.choice[level] = self.links.nd[cur as usize].down();
                    self.pos[level] += 1;
                    step = Step::Advance;
                }
                Step::Recover => unreachable!("Algorithm M has no recover step"),
            }
        };
        Ok(exit)
    }

    /// Restores the links after an early exit at a node on `level`, whose
    /// item has not been chosen yet.
    fn unwind_m<const COLORS: bool>(&mut self, level: usize) {
        for l in (0..level).rev() {
            let cur = self.choice[l];
            let best = self.best[l];
            if cur == best {
                self.links.reactivate(best);
            } else {
                self.links.m_uncommit_others::<COLORS>(cur);
            }
            self.m_restore::<COLORS>(l);
        }
    }
}

// ----- Random probes (Knuth's estimate of the tree's size) -----

impl<N: NodeRepr> Search<N> {
    fn probe(&mut self, choose: &mut dyn FnMut(Decision) -> Decision) -> Probe {
        match (self.multiplicities, self.colors) {
            (false, false) => self.probe_c::<false>(choose),
            (false, true) => self.probe_c::<true>(choose),
            (true, false) => self.probe_m::<false>(choose),
            (true, true) => self.probe_m::<true>(choose),
        }
    }

    /// One random walk of Algorithm C (DLX2): the alternatives at a node
    /// are the options in the list of the item `choose_c` picks, and a
    /// solution is detected right after committing an option.
    fn probe_c<const COLORS: bool>(
        &mut self,
        choose: &mut dyn FnMut(Decision) -> Decision,
    ) -> Probe {
        let mut degrees = Vec::new();
        let mut steps: Vec<(u32, u32)> = Vec::new();
        let end = loop {
            if self.links.next[ROOT as usize] == ROOT {
                break ProbeEnd::Solution;
            }
            let (best, len) = self.choose_c();
            if len <= 0 {
                break ProbeEnd::DeadEnd;
            }
            let degree = len as Decision;
            let r = choose(degree).min(degree - 1);
            self.links.cover::<COLORS>(best, true);
            let mut cur = self.links.nd[best as usize].down();
            for _ in 0..r {
                cur = self.links.nd[cur as usize].down();
            }
            self.links.commit_others::<COLORS>(cur);
            steps.push((best, cur));
            degrees.push(degree);
        };
        for &(best, cur) in steps.iter().rev() {
            self.links.uncommit_others::<COLORS>(cur);
            self.links.uncover::<COLORS>(best, true);
        }
        Probe { degrees, end }
    }

    /// One random walk of Algorithm M (DLX3): the alternatives at a node
    /// are DLX3's moves for the item `choose_m` picks, as many as its
    /// score; a node whose score is <= 0 has none, and a solution is
    /// detected on entering a node. Each level is set up as `run_m` sets
    /// it up, and the walk unwinds as `run_m` does after an early exit.
    fn probe_m<const COLORS: bool>(
        &mut self,
        choose: &mut dyn FnMut(Decision) -> Decision,
    ) -> Probe {
        let mut degrees = Vec::new();
        let mut level = 0usize;
        let end = loop {
            let (best, score) = self.choose_m();
            let Some(score) = score else {
                break ProbeEnd::Solution;
            };
            if score <= 0 {
                break ProbeEnd::DeadEnd;
            }
            let b = best as usize;
            self.best[level] = best;
            self.null_taken[level] = false;
            let cur = self.links.nd[b].down();
            self.choice[level] = cur;
            self.links.bound[b] -= 1;
            if self.links.bound[b] == 0 && self.links.slack[b] == 0 {
                self.links.cover::<COLORS>(best, true);
            } else {
                self.first_tweak[level] = cur;
                if self.links.bound[b] == 0 {
                    self.links.cover::<COLORS>(best, true);
                }
            }
            let degree = Decision::try_from(score).unwrap_or(Decision::MAX - 1);
            let r = choose(degree).min(degree - 1);
            // Reach the r-th move as DLX3 would, tweaking the options of
            // the moves before it away.
            let mut skipped = 0;
            while skipped < r && self.m_prepare::<COLORS>(level, true) {
                let cur = self.choice[level];
                self.choice[level] = self.links.nd[cur as usize].down();
                skipped += 1;
            }
            degrees.push(degree);
            if skipped < r || !self.m_prepare::<COLORS>(level, false) {
                self.m_restore::<COLORS>(level);
                break ProbeEnd::Missing;
            }
            let cur = self.choice[level];
            if cur != best {
                self.links.m_commit_others::<COLORS>(cur);
            }
            level += 1;
        };
        self.unwind_m::<COLORS>(level);
        Probe { degrees, end }
    }
}

#[cfg(test)]
mod sort_tests {
    use super::sort_options;
    use proptest::prelude::*;

    proptest! {
        /// Short (insertion) and long (the general sort) alike, as u32 and
        /// as usize.
        #[test]
        fn options_sort_like_the_general_sort(
            v in prop::collection::vec(0u32..5000, 0..80),
        ) {
            let mut expected = v.clone();
            expected.sort_unstable();
            let mut sorted = v.clone();
            sort_options(&mut sorted);
            prop_assert_eq!(&sorted, &expected);
            let mut wide: Vec<usize> = v.iter().map(|&o| o as usize).collect();
            sort_options(&mut wide);
            prop_assert!(wide.iter().zip(&expected).all(|(&a, &b)| a == b as usize));
        }
    }
}
