//! The engines' shared vocabulary: what a run is given ([`RunConfig`], a
//! [`Visitor`]), what it reports ([`Stats`], [`Status`], [`Outcome`], the
//! views a visitor reads), how it can fail, and the names of the engines and
//! their tie-breaking [`Order`]. Every engine and the [`super::Solver`] front
//! use these; this file names no engine.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::problem::{ItemKind, Problem};
use super::task::{Decision, Task};

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
    OutOfMemory(#[from] OutOfMemory),
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
            ItemKind::Primary { min, max } => min == max,
            ItemKind::Secondary => false,
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
///
/// A solution lies below the node exactly when it holds every option
/// `taken`, none `passed`, and its move at the node is one of the node's
/// `degree` moves: the position of the first of the `alternatives` it
/// holds, or `alternatives.len()` when it holds none (Algorithm M's null
/// move, or the removal of SSMCC's binary branching). For Algorithms X and
/// C a solution holds exactly one alternative and nothing is passed; for
/// Algorithm M a solution may hold several of a node's options, and the
/// moves before its own are the ones whose options it does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathNode {
    /// The option taken at each level of the path (a null move or a
    /// removal takes none).
    pub taken: Vec<usize>,
    /// The options the moves on the way passed over (Algorithm M): no
    /// solution below the node holds them.
    pub passed: Vec<usize>,
    /// The options of the node's moves, in the order the search tries them
    /// (empty when the node is a solution).
    pub alternatives: Vec<usize>,
    /// How many moves the node has: 0 at a solution and at a dead end.
    pub degree: Decision,
    /// Whether the node is a solution: then the solution of its `taken`
    /// options, and nothing else, lies below it.
    pub solution: bool,
}

/// How the cells engine breaks the ties of its branching rule, where
/// SSXCC's choice depends on the order of the sparse sets, and so on the
/// history of the search: which of the items left with one option is
/// forced first, and what a hide that fails counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// A choice that depends on the node alone: the smallest item of
    /// those waiting to be forced, and a failing hide's updates left out
    /// (see `ForceStack::failed_hide`). A search cut into tasks (threads,
    /// workers, checkpoints) counts exactly the nodes and updates of the
    /// same search in one piece.
    #[default]
    Exact,
    /// SSXCC's own choices (the item forced last first, every update
    /// counted): its node and update counts on a whole run, but a split
    /// run's depend on where it was cut.
    Ssxcc,
}

/// The engine could not allocate working memory it needed (within its
/// bound): the run stopped, the process did not abort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the {engine} engine ran out of memory: it could not allocate {bytes} bytes")]
pub struct OutOfMemory {
    pub engine: Engine,
    pub bytes: u64,
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
