//! The task-range bookkeeping every engine shares, written once: a run's
//! counters and limits ([`TaskRun`]: the nodes it counts, when it polls,
//! where the replay of the task's path ends), the range of alternatives a
//! level owns, Knuth's estimate of the weight done, and the tasks a
//! give-away or a checkpoint makes. How an engine's main loop ends is an
//! [`Exit`].
//!
//! The engines keep what differs: their per-level arrays (which
//! alternative a level tries, how its ranks are read) and their loops; they
//! call in here with the task's level (`base`) and the slices the
//! bookkeeping reads. Nothing here knows an engine.
//!
//! A level's alternatives have ranks `0..degree`; a run owns `lo..hi` of
//! them at each level: above the task's level the single alternative of its
//! path, at it the task's range, below it all, each cut by the task's cuts.

use std::sync::atomic::Ordering;

use super::task::{Cut, Decision, Task, ALL};
use super::vocabulary::{Outcome, ProgressView, Request, RunConfig, Stats, Status, Visitor};

/// How an engine's main loop ends, before unwinding (every engine).
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

/// What entering a node asks of the engine.
pub(crate) enum Entered {
    /// Go on searching.
    Go,
    /// Poll the stop flag and the visitor (see [`TaskRun::poll_due`]).
    Poll,
    /// End the run.
    Stop(Exit),
}

/// An engine as its task run sees it: the start of a node and of a poll,
/// written once here as default methods (monomorphized and inlined into
/// each engine's loop as its own were), over what the engine gives: its
/// run, its task's level and its levels' degrees, its update counters, and
/// the rest of its poll.
pub(crate) trait RunsTasks {
    /// The run's state, the task's level (`base`), and the number of
    /// alternatives of each level.
    fn run_state(&mut self) -> (&mut TaskRun, usize, &[Decision]);

    /// The engine's update counters (updates, cleansings) now.
    fn counters(&self) -> (u64, u64);

    /// The engine's part of a poll at a node on `level` (units filled):
    /// shows the visitor the run with the path in ranks, and does what it
    /// asks.
    fn poll_visitor<V: Visitor>(&mut self, level: usize, visitor: &mut V) -> Option<Exit>;

    /// Counts a node at `level` and, every `poll_interval` nodes, consults
    /// the stop flag and the visitor. Returns how to go on.
    #[inline(always)]
    fn enter_node<V: Visitor>(
        &mut self,
        level: usize,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Option<Exit> {
        let counters = self.counters();
        let (run, base, _) = self.run_state();
        match run.enter_node(level, base, config, || counters) {
            Entered::Go => None,
            Entered::Poll => self.poll(level, config, visitor),
            Entered::Stop(exit) => Some(exit),
        }
    }

    /// A poll: the stop flag, the units, then the engine's part.
    #[cold]
    #[inline(never)]
    fn poll<V: Visitor>(
        &mut self,
        level: usize,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Option<Exit> {
        let counters = self.counters();
        let (run, base, degree) = self.run_state();
        if let Some(exit) = run.poll_due(config, counters) {
            return Some(exit);
        }
        run.fill_units(level, base, degree);
        self.poll_visitor(level, visitor)
    }
}

/// The state of one run of a task, beside an engine's search: its
/// counters, its poll countdown, its weights and cuts, and the weight of one
/// alternative at each level from the task's down.
pub(crate) struct TaskRun {
    pub(crate) stats: Stats,
    /// Whether the task's own node is new to the search (the root task).
    count_base: bool,
    /// Whether the replay of the task's path ends on entering the task's
    /// node: when the task covers its node's whole range (the root task, and
    /// the first task a checkpoint leaves), the run that made it counted the
    /// node but did not branch there, so the branching is new work. Else
    /// the engine ends the replay itself, once it skipped the alternatives
    /// before the range ([`TaskRun::end_replay`]).
    pub(crate) fresh_base: bool,
    /// The update counters (updates, cleansings) when the replay of the
    /// task's path ended; `None` until then.
    replay_mark: Option<(u64, u64)>,
    task_weight: f64,
    given_weight: f64,
    countdown: u64,
    /// [`RunConfig::counts_plainly`] for this run.
    plain_count: bool,
    /// The running task's cuts (see [`Task::cuts`]).
    pub(crate) cuts: Vec<Cut>,
    /// The weight of one alternative at each level from the task's own down
    /// (set at the task's level, filled below it by [`TaskRun::fill_units`]
    /// when they are needed: a division per node costs more than they do).
    pub(crate) unit: Box<[f64]>,
}

impl TaskRun {
    /// A run's state for searches of at most `depth` levels.
    pub(crate) fn new(depth: usize) -> TaskRun {
        TaskRun {
            stats: Stats::default(),
            count_base: true,
            fresh_base: true,
            replay_mark: None,
            task_weight: 1.0,
            given_weight: 0.0,
            countdown: 0,
            plain_count: false,
            cuts: Vec::new(),
            unit: vec![0.0; depth].into_boxed_slice(),
        }
    }

    /// Starts a run of `task`. `Some` when the run has nothing to do: no
    /// solution is wanted.
    pub(crate) fn start(&mut self, task: &Task, config: &RunConfig) -> Option<Outcome> {
        self.stats = Stats::default();
        self.count_base = task.path.is_empty() && task.from == 0 && task.to == ALL;
        self.fresh_base = task.from == 0 && task.to == ALL;
        self.replay_mark = None;
        self.task_weight = task.weight;
        self.given_weight = 0.0;
        self.countdown = config.poll_interval.max(1);
        self.plain_count = config.counts_plainly();
        self.cuts.clone_from(&task.cuts);
        (config.max_solutions == Some(0)).then(|| Outcome {
            status: Status::SolutionLimit,
            stats: Stats::default(),
            remaining: Vec::new(),
        })
    }

    /// Ends the run at the engine's update `counters`: books those counted
    /// since the replay ended as the task's, those before as its replay's,
    /// and makes the outcome.
    pub(crate) fn outcome(
        &mut self,
        (updates, cleansings): (u64, u64),
        (status, remaining): (Status, Vec<Task>),
    ) -> Outcome {
        let (replay_updates, replay_cleansings) = self.replay_mark.unwrap_or((updates, cleansings));
        self.stats.updates = updates - replay_updates;
        self.stats.cleansings = cleansings - replay_cleansings;
        self.stats.replay_updates = replay_updates;
        self.stats.replay_cleansings = replay_cleansings;
        Outcome {
            status,
            stats: std::mem::take(&mut self.stats),
            remaining,
        }
    }

    /// Ends the replay of the task's path: the updates from here on
    /// (`counters`, as the engine counts them now) are the task's own work.
    /// Called at the task's node, once per run: on entering it when
    /// [`TaskRun::fresh_base`], else by the engine.
    #[cold]
    #[inline(never)]
    pub(crate) fn end_replay(&mut self, counters: (u64, u64)) {
        self.replay_mark = Some(counters);
    }

    /// Counts a node at `level` (the task's node at `base`) and, every
    /// `poll_interval` nodes, asks for a poll. `counters` reads the
    /// engine's update counters, should the replay end here.
    #[inline(always)]
    pub(crate) fn enter_node(
        &mut self,
        level: usize,
        base: usize,
        config: &RunConfig,
        counters: impl FnOnce() -> (u64, u64),
    ) -> Entered {
        if level > base && self.plain_count {
            // The common case in few steps: the general one below was 4 %
            // of latin5's instructions on cells.
            self.stats.count_plain_node(level);
            return self.count_down();
        }
        // The node a task starts from was counted by the run that made the
        // task, unless the task is the whole tree; polling there could only
        // hand the task back.
        if level < base || (level == base && !self.count_base) {
            if level == base && self.fresh_base {
                self.end_replay(counters());
            }
            return Entered::Go;
        }
        if !self.stats.count_node(level, level - base, config) {
            return Entered::Stop(Exit::Stop(Status::NodeLimit));
        }
        if level == base {
            // The root task: its branching is all new.
            self.end_replay(counters());
            return Entered::Go;
        }
        self.count_down()
    }

    #[inline(always)]
    fn count_down(&mut self) -> Entered {
        self.countdown -= 1;
        if self.countdown > 0 {
            Entered::Go
        } else {
            Entered::Poll
        }
    }

    /// The start of a poll: restarts the countdown and reads the stop flag
    /// (`Some` to stop); else books the updates counted so far (`counters`,
    /// as the engine counts them now) for the progress report. Polls come
    /// only below the task's node, after its replay ended.
    pub(crate) fn poll_due(&mut self, config: &RunConfig, counters: (u64, u64)) -> Option<Exit> {
        self.countdown = config.poll_interval.max(1);
        if let Some(flag) = &config.stop {
            if flag.load(Ordering::Relaxed) {
                return Some(Exit::Stop(Status::Stopped));
            }
        }
        let (replay_updates, replay_cleansings) = self.replay_mark.unwrap_or_default();
        self.stats.updates = counters.0 - replay_updates;
        self.stats.cleansings = counters.1 - replay_cleansings;
        None
    }

    /// Asks `visitor` what to do, showing it the run at a node on `level`
    /// reached by `positions` (ranks), whose levels have `degrees`
    /// alternatives and have tried `tried` of their range's (see
    /// [`TaskRun::done_weight`]).
    pub(crate) fn ask<V: Visitor>(
        &self,
        visitor: &mut V,
        base: usize,
        positions: &[Decision],
        degrees: &[Decision],
        tried: impl Fn(usize) -> Decision,
    ) -> Request {
        let view = ProgressView {
            stats: &self.stats,
            positions,
            degrees,
            done_weight: self.done_weight(positions.len(), base, tried),
            task_weight: self.task_weight - self.given_weight,
        };
        visitor.poll(&view)
    }

    /// The range `lo..hi` a level entered with `degree` alternatives owns
    /// (see the module's doc); `path` gives the ranks that lead to its node,
    /// read only when a cut may apply. At the task's level, the engine then
    /// calls [`TaskRun::set_base_unit`].
    #[inline(always)]
    pub(crate) fn range<P: AsRef<[Decision]>>(
        &self,
        level: usize,
        base: usize,
        task: &Task,
        degree: Decision,
        path: impl FnOnce() -> P,
    ) -> (Decision, Decision) {
        let (lo, hi) = if level < base {
            (task.path[level], task.path[level].saturating_add(1))
        } else if level == base {
            (task.from, if task.to == ALL { degree } else { task.to })
        } else {
            (0, degree)
        };
        let hi = if self.cuts.is_empty() || level < base {
            hi
        } else {
            self.cut_end(level, hi, path)
        };
        (lo, hi)
    }

    /// Sets the weight of one alternative at the task's level `base`, whose
    /// range is `lo..hi`.
    #[cold]
    pub(crate) fn set_base_unit(&mut self, base: usize, task: &Task, lo: Decision, hi: Decision) {
        self.unit[base] = if hi > lo {
            task.weight / f64::from(hi - lo)
        } else {
            0.0
        };
    }

    /// The end of the range at the node on `level` now entered (reached by
    /// `path`), after the task's cuts.
    #[cold]
    fn cut_end<P: AsRef<[Decision]>>(
        &self,
        level: usize,
        hi: Decision,
        path: impl FnOnce() -> P,
    ) -> Decision {
        if !self.cuts.iter().any(|cut| cut.path.len() == level) {
            return hi;
        }
        let path = path();
        self.cuts
            .iter()
            .filter(|cut| cut.path[..] == *path.as_ref())
            .fold(hi, |hi, cut| hi.min(cut.end))
    }

    /// The weight of one alternative at each level below the task's, up to
    /// `level` (excluded): each splits the weight of one alternative above
    /// it evenly among its `degree` alternatives (Knuth's estimate).
    #[allow(clippy::needless_range_loop)] // reads `unit[l - 1]` too
    pub(crate) fn fill_units(&mut self, level: usize, base: usize, degree: &[Decision]) {
        for l in base + 1..level {
            self.unit[l] = self.unit[l - 1] / f64::from(degree[l].max(1));
        }
    }

    /// Knuth's estimate of the weight explored, at a node on `level` not yet
    /// branched on, whose levels from `base` down have tried `tried(l)`
    /// alternatives of their range before the current one (units filled).
    fn done_weight(&self, level: usize, base: usize, tried: impl Fn(usize) -> Decision) -> f64 {
        if level <= base {
            return 0.5 * (self.task_weight - self.given_weight);
        }
        let mut done = 0.0;
        for l in base..level {
            done += f64::from(tried(l)) * self.unit[l];
        }
        done + 0.5 * self.unit[level - 1]
    }

    /// Hands out the ranks `from..to` of the node that `path` reaches on
    /// level `path.len()`, whose range the engine ends at `from` now.
    pub(crate) fn give_away(&mut self, path: Vec<Decision>, from: Decision, to: Decision) -> Task {
        let weight = self.unit[path.len()] * f64::from(to - from);
        self.given_weight += weight;
        self.task(path, from, to, weight)
    }

    /// The unexplored work of a run stopped at a node on `level` (reached
    /// by `path`, not yet branched on), as tasks in the order the search
    /// would have met them: the node itself, then each level's untried
    /// ranks (`untried(l)` pushes them as intervals, in order), deepest
    /// first. Units filled.
    pub(crate) fn remaining_tasks(
        &self,
        base: usize,
        task: &Task,
        path: &[Decision],
        mut untried: impl FnMut(usize, &mut Vec<(Decision, Decision)>),
    ) -> Vec<Task> {
        let level = path.len();
        if level <= base {
            return vec![task.clone()];
        }
        let mut tasks = vec![self.task(path.to_vec(), 0, ALL, self.unit[level - 1])];
        let mut intervals = Vec::new();
        for l in (base..level).rev() {
            intervals.clear();
            untried(l, &mut intervals);
            for &(from, to) in &intervals {
                let weight = self.unit[l] * f64::from(to - from);
                tasks.push(self.task(path[..l].to_vec(), from, to, weight));
            }
        }
        tasks
    }

    /// The task of the ranks `from..to` at the node `path` reaches, with
    /// the running task's cuts inside it.
    fn task(&self, path: Vec<Decision>, from: Decision, to: Decision, weight: f64) -> Task {
        Task {
            cuts: Cut::all_within(&self.cuts, &path, from, to),
            path,
            from,
            to,
            weight,
        }
    }
}

/// The first rank of the upper half of the untried ranks of a range ending
/// at `hi` whose ranks up to `max_tried` were tried: what a give-away hands
/// out. `None` when no rank is above `max_tried`.
pub(crate) fn upper_half(max_tried: Decision, hi: Decision) -> Option<Decision> {
    let above = hi.checked_sub(max_tried)?.checked_sub(1)?;
    (above > 0).then(|| max_tried + 1 + above / 2)
}
