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

use super::links::{Links, NodeRepr, ROOT};
use super::problem::Problem;
use super::task::{Decision, Task};
use super::task_run::{upper_half, Exit, RunsTasks, TaskRun};
use super::vocabulary::{
    Outcome, PathNode, Probe, ProbeEnd, RunConfig, SolutionView, Status, TaskError, Visitor,
};

/// The search over one node layout.
pub(crate) struct Search<N: NodeRepr> {
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
    first_tweak: Vec<u32>,
    null_taken: Vec<bool>,
    // Per-run state.
    /// The level of the task's node.
    base: usize,
    task_run: TaskRun,
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

impl<N: NodeRepr> RunsTasks for Search<N> {
    #[inline(always)]
    fn run_state(&mut self) -> (&mut TaskRun, usize, &[Decision]) {
        (&mut self.task_run, self.base, &self.degree)
    }

    #[inline(always)]
    fn counters(&self) -> (u64, u64) {
        (self.links.updates, self.links.cleansings)
    }

    fn poll_visitor<V: Visitor>(&mut self, level: usize, visitor: &mut V) -> Option<Exit> {
        let request = self.task_run.ask(
            visitor,
            self.base,
            &self.pos[..level],
            &self.degree[..level],
            |l| self.pos[l] - self.lo[l],
        );
        Exit::after_poll(request, visitor, || self.give_away(level))
    }
}

impl<N: NodeRepr> Search<N> {
    pub(crate) fn new(problem: &Problem) -> Search<N> {
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
            first_tweak: vec![0; depth],
            null_taken: vec![false; depth],
            base: 0,
            task_run: TaskRun::new(depth),
        }
    }

    pub(crate) fn describe(&mut self, path: &[Decision]) -> Result<PathNode, TaskError> {
        match (self.multiplicities, self.colors) {
            (true, false) => self.describe_m::<false>(path),
            (true, true) => self.describe_m::<true>(path),
            (false, false) => self.describe_c::<false>(path),
            (false, true) => self.describe_c::<true>(path),
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
        let solution = self.links.next[ROOT as usize] == ROOT;
        if failure.is_none() && !solution {
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
                passed: Vec::new(),
                degree: alternatives.len() as Decision,
                alternatives,
                solution,
            }),
        }
    }

    pub(crate) fn algorithm(&self) -> &'static str {
        match (self.multiplicities, self.colors) {
            (true, _) => "M",
            (false, true) => "C",
            (false, false) => "X",
        }
    }

    pub(crate) fn run<V: Visitor>(
        &mut self,
        task: &Task,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Result<Outcome, TaskError> {
        self.links.updates = 0;
        self.links.cleansings = 0;
        self.base = task.path.len();
        if let Some(outcome) = self.task_run.start(task, config) {
            return Ok(outcome);
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
        }?;
        Ok(self.task_run.outcome(self.counters(), result))
    }

    /// Sets the range of alternatives of a freshly entered level (and, at
    /// the task's own level, the weight per alternative).
    #[inline(always)]
    fn enter_level(&mut self, level: usize, task: &Task, degree: Decision) {
        let (lo, hi) = self
            .task_run
            .range(level, self.base, task, degree, || &self.pos[..level]);
        self.lo[level] = lo;
        self.hi[level] = hi;
        self.pos[level] = lo;
        self.degree[level] = degree;
        if level == self.base {
            self.task_run.set_base_unit(self.base, task, lo, hi);
        }
    }

    /// Ends the replay of the task's path at the task's node, when the run
    /// that made the task did not branch there (see [`TaskRun::end_replay`]).
    /// (The calls sit in branches the search takes at the task's node
    /// anyway, so the search's inner loop pays nothing for them.)
    #[cold]
    #[inline(never)]
    fn end_replay(&mut self) {
        self.task_run.end_replay(self.counters());
    }

    /// Gives away the upper half of the untried alternatives at the
    /// shallowest level that has any. Called at a node on `level` (units
    /// filled).
    fn give_away(&mut self, level: usize) -> Option<Task> {
        let (l, mid) = (self.base..level)
            .find_map(|l| upper_half(self.pos[l], self.hi[l]).map(|mid| (l, mid)))?;
        let hi = std::mem::replace(&mut self.hi[l], mid);
        Some(self.task_run.give_away(self.pos[..l].to_vec(), mid, hi))
    }

    fn finish(&mut self, exit: Exit, level: usize, task: &Task) -> (Status, Vec<Task>) {
        self.task_run.fill_units(level, self.base, &self.degree);
        exit.finish(|| {
            // Each level's untried alternatives follow the current one.
            let (pos, hi) = (&self.pos, &self.hi);
            self.task_run
                .remaining_tasks(self.base, task, &pos[..level], |l, untried| {
                    if hi[l] > pos[l] + 1 {
                        untried.push((pos[l] + 1, hi[l]));
                    }
                })
        })
    }

    /// Asks the visitor whether the options chosen above `level` may still
    /// lead to a solution.
    fn accepts<V: Visitor>(&self, level: usize, visitor: &mut V) -> bool {
        visitor.partial(&SolutionView::new(
            &self.choice[..level],
            &self.links.node_option,
            self.links.last_itm,
        ))
    }

    /// Reports a solution; returns how the search should go on.
    fn record<V: Visitor>(
        &mut self,
        chosen: usize,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Option<Exit> {
        let flow = visitor.solution(&SolutionView::new(
            &self.choice[..chosen],
            &self.links.node_option,
            self.links.last_itm,
        ));
        self.task_run
            .stats
            .count_solution(flow, config)
            .map(Exit::Stop)
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
                        if level == self.base && !self.task_run.fresh_base {
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
                        self.task_run.stats.nodes += 1;
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

    /// Sets `level` up to branch on `best`, as DLX3 does on entering a
    /// level: its first option is current, its bound one less, and the
    /// item covered when that bound reaches 0.
    #[inline(always)]
    fn m_enter<const COLORS: bool>(&mut self, level: usize, best: u32) {
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
    }

    /// Moves `level` past its first `moves` alternatives, tweaking them
    /// away as DLX3 does while trying them; how many it could pass.
    #[inline(always)]
    fn m_skip<const COLORS: bool>(&mut self, level: usize, moves: Decision) -> Decision {
        let mut skipped = 0;
        while skipped < moves && self.m_prepare::<COLORS>(level, true) {
            let cur = self.choice[level];
            self.choice[level] = self.links.nd[cur as usize].down();
            skipped += 1;
        }
        skipped
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
                    self.m_enter::<COLORS>(level, best);
                    let degree = Decision::try_from(score).unwrap_or(Decision::MAX - 1);
                    self.enter_level(level, task, degree);
                    // Skip to the start of the range, tweaking as DLX3 would
                    // have done while trying the skipped alternatives.
                    let skipped = self.m_skip::<COLORS>(level, self.lo[level]);
                    if skipped < self.lo[level] {
                        if level == self.base && !self.task_run.fresh_base {
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
                    if level == self.base && !self.task_run.fresh_base {
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

    /// Replays `path` as Algorithm M would (each level set up as `run_m`
    /// sets it up, and the moves before the path's tweaked away as DLX3
    /// tries them), reads the node it reaches, and restores the links.
    /// A node's alternatives are its item's list as the node finds it: move
    /// `k < len` takes the `k`-th option after the ones before it were
    /// tweaked away, and move `len`, the null move, takes none of them.
    fn describe_m<const COLORS: bool>(&mut self, path: &[Decision]) -> Result<PathNode, TaskError> {
        let mut taken = Vec::new();
        let mut passed = Vec::new();
        let mut level = 0usize;
        let result = loop {
            let (best, score) = self.choose_m();
            let Some(score) = score else {
                if let Some(&position) = path.get(level) {
                    break Err(TaskError { level, position });
                }
                break Ok(PathNode {
                    taken,
                    passed,
                    alternatives: Vec::new(),
                    degree: 0,
                    solution: true,
                });
            };
            let degree = if score <= 0 {
                0
            } else {
                Decision::try_from(score).unwrap_or(Decision::MAX - 1)
            };
            let b = best as usize;
            let mut alternatives = Vec::new();
            let mut cur = self.links.nd[b].down();
            while cur != best {
                alternatives.push(self.links.node_option[cur as usize] as usize);
                cur = self.links.nd[cur as usize].down();
            }
            let Some(&position) = path.get(level) else {
                break Ok(PathNode {
                    taken,
                    passed,
                    alternatives,
                    degree,
                    solution: false,
                });
            };
            if position >= degree {
                break Err(TaskError { level, position });
            }
            self.m_enter::<COLORS>(level, best);
            let skipped = self.m_skip::<COLORS>(level, position);
            if skipped < position || !self.m_prepare::<COLORS>(level, false) {
                self.m_restore::<COLORS>(level);
                break Err(TaskError { level, position });
            }
            let moved = (position as usize).min(alternatives.len());
            passed.extend_from_slice(&alternatives[..moved]);
            let cur = self.choice[level];
            if cur != best {
                taken.push(self.links.node_option[cur as usize] as usize);
                self.links.m_commit_others::<COLORS>(cur);
            }
            level += 1;
        };
        self.unwind_m::<COLORS>(level);
        result
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
    pub(crate) fn probe(&mut self, choose: &mut dyn FnMut(Decision) -> Decision) -> Probe {
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
            self.m_enter::<COLORS>(level, best);
            let degree = Decision::try_from(score).unwrap_or(Decision::MAX - 1);
            let r = choose(degree).min(degree - 1);
            // Reach the r-th move as DLX3 would, tweaking the options of
            // the moves before it away.
            let skipped = self.m_skip::<COLORS>(level, r);
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
