//! Splitting and merging search work: give-away, checkpoints, nested splits,
//! and the early exits (stop flag, visitor stop, limits, invalid tasks).
//!
//! The reference for every check is an unsplit run of the same task, on a
//! separate solver. What must hold:
//! - the solutions of a split search, merged, are the unsplit ones: as a
//!   multiset whatever order the pieces run in, and in the same order when
//!   the pieces are concatenated in search order (the solutions a run keeps,
//!   then its checkpoint's remaining tasks in order, then its given-away
//!   tasks latest first, since each give-away removes a suffix of what the
//!   run still owns);
//! - the solutions a run keeps are a prefix of its task's unsplit sequence;
//! - each task's weight is Knuth's uniform-tree share, recomputed here from
//!   the degrees the search reports along the task's path:
//!   `prod_{k<l} 1/d_k * (to - from) / d_l` for a task at level `l`, and
//!   the degrees of a node are the same in every run;
//! - over a whole work queue, the weight each run completed (its task's
//!   weight minus what it gave away minus what it left in a checkpoint)
//!   is never negative and sums to 1 (this sum is bookkeeping; the
//!   per-task formula above is the real check of the weights);
//! - every node the search enters can be run as a task (a checkpoint may
//!   leave any of them), and a path that names no node is rejected;
//! - a solver stays usable after every kind of early exit.

mod common;

use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use common::random_problems::{self, Shape, Spec};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use xccd::run::{
    run_task, Batch, Control, Ledger, Port, QueuedTask, Region, RunEnd, RunPoint, RunSpec, Stop,
    Taken,
};
use xccd::xcc::{
    Collect, Decision, Engine, Flow, Outcome, Problem, ProblemBuilder, ProgressView, Request,
    RunConfig, SolutionView, Solver, Stats, Status, Task, Visitor, ALL,
};

type Sol = Vec<usize>;

// ----- Utilities -----

/// xorshift64*, seeded.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn sorted(mut v: Vec<Sol>) -> Vec<Sol> {
    v.sort();
    v
}

/// Runs `task` to the end, keeping every solution.
fn unsplit(solver: &mut Solver, task: &Task) -> (Vec<Sol>, Stats) {
    let mut c = Collect::default();
    let outcome = solver
        .run(task, &RunConfig::default(), &mut c)
        .unwrap_or_else(|e| panic!("task {task:?} rejected: {e}"));
    assert_eq!(outcome.status, Status::Exhausted);
    assert!(outcome.remaining.is_empty());
    assert_eq!(outcome.stats.solutions, c.solutions.len() as u64);
    (c.solutions, outcome.stats)
}

/// Degrees of the search-tree nodes seen so far, by path from the root.
#[derive(Default)]
struct Degrees(HashMap<Vec<Decision>, Decision>);

impl Degrees {
    /// Records the degrees of the ancestors of the node being polled and
    /// checks that they agree with every earlier run.
    fn record(&mut self, p: &ProgressView<'_>) {
        assert_eq!(p.positions.len(), p.degrees.len());
        for k in 0..p.positions.len() {
            assert!(
                p.positions[k] < p.degrees[k],
                "position {} at level {k} is not below the degree {}",
                p.positions[k],
                p.degrees[k]
            );
            match self.0.entry(p.positions[..k].to_vec()) {
                MapEntry::Occupied(e) => assert_eq!(
                    *e.get(),
                    p.degrees[k],
                    "node {:?} has two degrees",
                    &p.positions[..k]
                ),
                MapEntry::Vacant(e) => {
                    e.insert(p.degrees[k]);
                }
            }
        }
    }
}

/// Knuth's uniform-tree share of `task` (of a tree whose root weighs 1),
/// from the degrees along its path: `degrees[k]` is the degree of the node
/// `task.path[..k]`. The degree of the task's own node is needed only when
/// the task does not cover all of it.
fn expected_weight(task: &Task, degrees: &[Decision]) -> f64 {
    let l = task.path.len();
    let mut w = 1.0;
    for &d in &degrees[..l] {
        w /= f64::from(d);
    }
    if task.from == 0 && task.to == ALL {
        return w;
    }
    let d = degrees[l];
    let to = if task.to == ALL { d } else { task.to };
    assert!(
        task.from < to && to <= d,
        "task range {}..{} outside the {d} alternatives of its node",
        task.from,
        task.to
    );
    w * f64::from(to - task.from) / f64::from(d)
}

/// Splitting policy of one run.
#[derive(Clone, Copy, Debug)]
struct Policy {
    poll_interval: u64,
    give: f64,
    checkpoint: f64,
}

impl Policy {
    const NONE: Policy = Policy {
        poll_interval: 1,
        give: 0.0,
        checkpoint: 0.0,
    };
}

/// A visitor that records solutions in order and, when polled, gives work
/// away or asks for a checkpoint at random; it checks every task weight and
/// progress report it sees.
struct Splitter<'a> {
    task: Task,
    rng: Rng,
    policy: Policy,
    degrees: &'a mut Degrees,
    solutions: Vec<Sol>,
    given: Vec<Task>,
    given_weight: f64,
    /// (positions, degrees) at the last GiveAway and at the checkpoint.
    give_snapshot: Option<(Vec<Decision>, Vec<Decision>)>,
    checkpoint_snapshot: Option<(Vec<Decision>, Vec<Decision>)>,
    polls: u64,
}

/// What an engine promises beyond "the same solutions" and the same counts
/// (which both keep however the search is cut): the links engine hands out
/// work in search order; the cells engine (SSXCC) names alternatives by
/// rank, so a checkpoint may leave ranks below the current one.
fn strict(solver: &Solver) -> bool {
    solver.engine() == Engine::Links
}

impl Visitor for Splitter<'_> {
    fn solution(&mut self, s: &SolutionView<'_>) -> Flow {
        self.solutions.push(s.options());
        Flow::Continue
    }

    fn poll(&mut self, p: &ProgressView<'_>) -> Request {
        self.polls += 1;
        self.degrees.record(p);
        let task = &self.task;
        let l = task.path.len();
        assert!(p.positions.len() >= l, "polled above the task's level");
        assert_eq!(&p.positions[..l], &task.path[..]);
        assert!(
            close(p.task_weight, task.weight - self.given_weight),
            "task_weight {} but the task weighs {} and gave {} away",
            p.task_weight,
            task.weight,
            self.given_weight
        );
        assert!(p.done_weight >= -1e-12 && p.done_weight <= task.weight * (1.0 + 1e-9));
        if p.positions.len() > l {
            let pos = p.positions[l];
            assert!(pos >= task.from && (task.to == ALL || pos < task.to));
            let w = expected_weight(task, p.degrees);
            assert!(close(w, task.weight), "task {task:?} should weigh {w}");
        }
        let r = self.rng.unit();
        if r < self.policy.give {
            self.give_snapshot = Some((p.positions.to_vec(), p.degrees.to_vec()));
            Request::GiveAway
        } else if r < self.policy.give + self.policy.checkpoint {
            self.checkpoint_snapshot = Some((p.positions.to_vec(), p.degrees.to_vec()));
            Request::Checkpoint
        } else {
            Request::Continue
        }
    }

    fn given_away(&mut self, t: Task) {
        let (positions, degrees) = self
            .give_snapshot
            .take()
            .expect("given_away without a GiveAway request");
        let l = t.path.len();
        // Given away: later siblings of a node on the current path, at or
        // below the task's level, never the whole of a node.
        assert!(l >= self.task.path.len() && l < positions.len(), "{t:?}");
        assert_eq!(&t.path[..], &positions[..l]);
        assert!(t.from > positions[l], "gives away what it is exploring");
        assert!(t.to != ALL && t.to > t.from);
        if l == self.task.path.len() && self.task.to != ALL {
            assert!(t.to <= self.task.to);
        }
        assert!(t.weight > 0.0);
        let w = expected_weight(&t, &degrees);
        assert!(close(w, t.weight), "given {t:?} should weigh {w}");
        self.given_weight += t.weight;
        self.given.push(t);
    }
}

struct RunResult {
    status: Status,
    solutions: Vec<Sol>,
    given: Vec<Task>,
    given_weight: f64,
    remaining: Vec<Task>,
    /// What this run explored: its weight, minus what it gave away, minus
    /// what it left for later.
    done_weight: f64,
    /// Search-tree nodes this run counted.
    nodes: u64,
    /// Updates and cleansings of its own work (its path's replay apart).
    updates: u64,
    cleansings: u64,
}

/// Runs `task` on `solver` with random splits, and checks what comes back.
fn split_run(
    solver: &mut Solver,
    task: &Task,
    policy: Policy,
    seed: u64,
    degrees: &mut Degrees,
) -> RunResult {
    let strict = strict(solver);
    let mut v = Splitter {
        task: task.clone(),
        rng: Rng::new(seed),
        policy,
        degrees,
        solutions: Vec::new(),
        given: Vec::new(),
        given_weight: 0.0,
        give_snapshot: None,
        checkpoint_snapshot: None,
        polls: 0,
    };
    let config = RunConfig {
        poll_interval: policy.poll_interval,
        ..Default::default()
    };
    let outcome = solver
        .run(task, &config, &mut v)
        .unwrap_or_else(|e| panic!("task {task:?} rejected: {e}"));
    assert_eq!(outcome.stats.solutions, v.solutions.len() as u64);
    let remaining_weight: f64 = outcome.remaining.iter().map(|t| t.weight).sum();
    match outcome.status {
        Status::Exhausted => assert!(outcome.remaining.is_empty()),
        Status::Checkpointed => {
            let (positions, degrees) = v.checkpoint_snapshot.take().unwrap();
            let l = task.path.len();
            if positions.len() <= l {
                // Checkpoint at the task's own node: nothing done yet.
                assert!(v.given.is_empty());
                assert_eq!(outcome.remaining, vec![task.clone()]);
            } else {
                // First the node being entered, then the untried siblings
                // of each node on the path, deepest first.
                let first = &outcome.remaining[0];
                assert_eq!(first.path, positions);
                assert_eq!((first.from, first.to), (0, ALL));
                let mut last_level = positions.len();
                for t in &outcome.remaining {
                    let tl = t.path.len();
                    assert!(tl >= l && tl <= last_level);
                    assert_eq!(&t.path[..], &positions[..tl]);
                    if !std::ptr::eq(t, first) {
                        assert!(tl < last_level || !strict && tl == last_level);
                        assert!(t.to != ALL && t.from < t.to);
                        if strict {
                            assert!(t.from > positions[tl]);
                        } else {
                            assert!(!(t.from..t.to).contains(&positions[tl]));
                        }
                    }
                    last_level = tl;
                    assert!(t.weight > 0.0);
                    let w = expected_weight(t, &degrees);
                    assert!(close(w, t.weight), "remaining {t:?} should weigh {w}");
                }
            }
        }
        s => panic!("unexpected status {s:?}"),
    }
    let done_weight = task.weight - v.given_weight - remaining_weight;
    assert!(
        done_weight >= -1e-12,
        "run gave or left more than its weight"
    );
    RunResult {
        status: outcome.status,
        solutions: v.solutions,
        given: v.given,
        given_weight: v.given_weight,
        remaining: outcome.remaining,
        done_weight,
        nodes: outcome.stats.nodes,
        updates: outcome.stats.updates,
        cleansings: outcome.stats.cleansings,
    }
}

// ----- Nested splits, in search order -----

struct Ordered<'a> {
    problem: &'a Problem,
    solver: Solver,
    reference: Solver,
    degrees: Degrees,
    rng: Rng,
    policy: Policy,
    runs: usize,
    done_weight: f64,
}

impl Ordered<'_> {
    /// Runs `task` split at random, recursively, and returns its solutions
    /// in search order, checking each level against an unsplit run.
    fn run(&mut self, task: &Task, depth: usize) -> Vec<Sol> {
        let (expected, _) = unsplit(&mut self.reference, task);
        self.runs += 1;
        let policy = if depth > 40 || self.runs > 3000 {
            Policy {
                give: 0.0,
                checkpoint: 0.0,
                ..self.policy
            }
        } else {
            self.policy
        };
        let seed = self.rng.next();
        let r = split_run(&mut self.solver, task, policy, seed, &mut self.degrees);
        assert!(
            expected.starts_with(&r.solutions),
            "the solutions of a split run are not a prefix of its task's"
        );
        if r.given.is_empty() && r.status == Status::Exhausted {
            assert_eq!(r.solutions, expected);
        }
        self.done_weight += r.done_weight;
        let mut seq = r.solutions;
        for t in &r.remaining {
            seq.extend(self.run(t, depth + 1));
        }
        for t in r.given.iter().rev() {
            seq.extend(self.run(t, depth + 1));
        }
        assert_eq!(
            seq, expected,
            "task {task:?}: merged pieces differ from the unsplit run"
        );
        // Re-running the task, on the solver that did the splitting, gives
        // the same sequence again.
        let (again, _) = unsplit(&mut self.solver, task);
        assert_eq!(again, expected);
        seq
    }
}

fn check_ordered(problem: &Problem, policy: Policy, seed: u64) -> usize {
    let mut o = Ordered {
        problem,
        solver: Solver::new(problem),
        reference: Solver::new(problem),
        degrees: Degrees::default(),
        rng: Rng::new(seed),
        policy,
        runs: 0,
        done_weight: 0.0,
    };
    let seq = o.run(&Task::root(), 0);
    for s in &seq {
        assert!(o.problem.verify(s).is_ok());
    }
    assert!(
        close(o.done_weight, 1.0),
        "weights sum to {}",
        o.done_weight
    );
    o.runs
}

// ----- Work queue, any order -----

#[derive(Clone, Copy, Debug)]
enum Order {
    Lifo,
    Fifo,
    Random,
}

struct QueueReport {
    runs: usize,
    splits: usize,
}

fn check_queue(problem: &Problem, order: Order, policy: Policy, seed: u64) -> QueueReport {
    check_queue_on(problem, Engine::Links, order, policy, seed)
}

fn check_queue_on(
    problem: &Problem,
    engine: Engine,
    order: Order,
    policy: Policy,
    seed: u64,
) -> QueueReport {
    let new = || Solver::with_engine(problem, engine).unwrap();
    let (expected, full_stats) = unsplit(&mut new(), &Task::root());
    let mut solver = new();
    let mut degrees = Degrees::default();
    let mut rng = Rng::new(seed);
    let mut queue = VecDeque::from([Task::root()]);
    let mut found = Vec::new();
    let mut solutions_counted = 0;
    let mut nodes_counted = 0;
    let (mut updates_counted, mut cleansings_counted) = (0, 0);
    let mut exhausted_weight = 0.0;
    let mut checkpointed_done = 0.0;
    let (mut runs, mut splits) = (0, 0);
    while !queue.is_empty() {
        let task = match order {
            Order::Lifo => queue.pop_back(),
            Order::Fifo => queue.pop_front(),
            Order::Random => {
                let i = rng.below(queue.len());
                queue.swap_remove_back(i)
            }
        }
        .unwrap();
        runs += 1;
        let p = if runs > 20_000 {
            Policy {
                give: 0.0,
                checkpoint: 0.0,
                ..policy
            }
        } else {
            policy
        };
        let r = split_run(&mut solver, &task, p, rng.next(), &mut degrees);
        solutions_counted += r.solutions.len();
        nodes_counted += r.nodes;
        updates_counted += r.updates;
        cleansings_counted += r.cleansings;
        found.extend(r.solutions);
        match r.status {
            Status::Exhausted => exhausted_weight += task.weight - r.given_weight,
            _ => checkpointed_done += r.done_weight,
        }
        splits += r.given.len() + r.remaining.len();
        queue.extend(r.given);
        queue.extend(r.remaining);
    }
    assert_eq!(solutions_counted as u64, full_stats.solutions);
    // Each node of the tree is counted by exactly one run, on either
    // engine (the cells engine's default order makes its choices and
    // counts depend on the node alone, not on how the run got there).
    assert_eq!(nodes_counted, full_stats.nodes, "{order:?}: node counts");
    // And each update: replaying a task's path counts apart.
    assert_eq!(
        (updates_counted, cleansings_counted),
        (full_stats.updates, full_stats.cleansings),
        "{order:?}: update and cleansing counts"
    );
    assert_eq!(
        sorted(found),
        sorted(expected),
        "{order:?}: split solutions differ from the unsplit run"
    );
    assert!(
        close(exhausted_weight + checkpointed_done, 1.0),
        "{order:?}: weights sum to {}",
        exhausted_weight + checkpointed_done
    );
    // The solver that ran all the pieces still runs the whole search.
    let (again, again_stats) = unsplit(&mut solver, &Task::root());
    assert_eq!(again_stats, full_stats);
    assert_eq!(sorted(again), sorted(unsplit(&mut new(), &Task::root()).0));
    QueueReport { runs, splits }
}

// ----- Early exits -----

/// Polls and records how many solutions were found before each poll.
#[derive(Default)]
struct PollCounter {
    solutions: u64,
    before_poll: Vec<u64>,
}

impl Visitor for PollCounter {
    fn solution(&mut self, _: &SolutionView<'_>) -> Flow {
        self.solutions += 1;
        Flow::Continue
    }
    fn poll(&mut self, _: &ProgressView<'_>) -> Request {
        self.before_poll.push(self.solutions);
        Request::Continue
    }
}

/// Stops at the k-th poll (1-based) by the flag, by a request, or at the
/// k-th solution by the solution callback's answer.
struct Stopper {
    how: StopBy,
    k: u64,
    polls: u64,
    solutions: Vec<Sol>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum StopBy {
    Flag,
    Request,
    Solution,
}

impl Visitor for Stopper {
    fn solution(&mut self, s: &SolutionView<'_>) -> Flow {
        self.solutions.push(s.options());
        if self.how == StopBy::Solution && self.solutions.len() as u64 == self.k {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
    fn poll(&mut self, _: &ProgressView<'_>) -> Request {
        self.polls += 1;
        match self.how {
            StopBy::Flag => Request::Continue,
            StopBy::Request if self.polls == self.k => Request::Stop,
            _ => Request::Continue,
        }
    }
}

/// A visitor whose polls set a shared stop flag at the k-th poll.
struct FlagSetter {
    inner: Stopper,
    flag: Arc<AtomicBool>,
}

impl Visitor for FlagSetter {
    fn solution(&mut self, s: &SolutionView<'_>) -> Flow {
        self.inner.solution(s)
    }
    fn poll(&mut self, p: &ProgressView<'_>) -> Request {
        let r = self.inner.poll(p);
        if self.inner.polls == self.inner.k {
            self.flag.store(true, Ordering::Relaxed);
        }
        r
    }
}

fn expect_full(solver: &mut Solver, expected: &[Sol], stats: &Stats, what: &str) {
    let (again, again_stats) = unsplit(solver, &Task::root());
    assert_eq!(again, expected, "after {what}: solutions differ");
    assert_eq!(&again_stats, stats, "after {what}: counters differ");
}

/// Every early exit, each followed by a full run on the same solver.
fn check_early_exits(problem: &Problem, seed: u64) {
    check_early_exits_on(problem, Engine::Links, seed)
}

fn check_early_exits_on(problem: &Problem, engine: Engine, seed: u64) {
    let mut rng = Rng::new(seed);
    let new = || Solver::with_engine(problem, engine).unwrap();
    let (full, full_stats) = unsplit(&mut new(), &Task::root());
    let total = full.len() as u64;
    let mut solver = new();
    let poll_interval = 1 + rng.below(7) as u64;
    let config = RunConfig {
        poll_interval,
        ..Default::default()
    };
    let mut counter = PollCounter::default();
    solver.run(&Task::root(), &config, &mut counter).unwrap();
    // With few nodes and a long interval there may be no poll at all.
    let polls = counter.before_poll.len() as u64;
    let random_poll = if polls > 0 {
        1 + rng.below(polls as usize) as u64
    } else {
        0
    };
    let poll_ks = move || {
        [1, polls, random_poll]
            .into_iter()
            .filter(move |&k| k >= 1 && k <= polls)
    };

    // The stop flag, set during the k-th poll (k = 0: before the run), is
    // read at the next poll: the search stops there, having found what it
    // had found by then.
    for k in [0, 1, polls / 2, polls.saturating_sub(1), polls, random_poll] {
        let flag = Arc::new(AtomicBool::new(k == 0));
        let cfg = RunConfig {
            stop: Some(flag.clone()),
            ..config.clone()
        };
        let mut v = FlagSetter {
            inner: Stopper {
                how: StopBy::Flag,
                k,
                polls: 0,
                solutions: Vec::new(),
            },
            flag,
        };
        let out = solver.run(&Task::root(), &cfg, &mut v).unwrap();
        let found = &v.inner.solutions;
        if k < polls {
            assert_eq!(out.status, Status::Stopped, "flag at poll {k} of {polls}");
            assert_eq!(found.len() as u64, counter.before_poll[k as usize]);
            assert_eq!(v.inner.polls, k, "the visitor was polled after the flag");
        } else {
            assert_eq!(out.status, Status::Exhausted);
        }
        assert!(out.remaining.is_empty());
        assert!(full.starts_with(found));
        assert_eq!(out.stats.solutions, found.len() as u64);
        expect_full(&mut solver, &full, &full_stats, "a stop by flag");
    }

    // The visitor's Stop request at the k-th poll.
    for k in poll_ks() {
        let mut v = Stopper {
            how: StopBy::Request,
            k,
            polls: 0,
            solutions: Vec::new(),
        };
        let out = solver.run(&Task::root(), &config, &mut v).unwrap();
        assert_eq!(out.status, Status::Stopped);
        assert_eq!(
            v.solutions.len() as u64,
            counter.before_poll[k as usize - 1]
        );
        assert!(full.starts_with(&v.solutions));
        expect_full(&mut solver, &full, &full_stats, "a stop request");
    }

    // Flow::Stop at the k-th solution.
    if total > 0 {
        for k in [1, total, 1 + rng.below(total as usize) as u64] {
            let mut v = Stopper {
                how: StopBy::Solution,
                k,
                polls: 0,
                solutions: Vec::new(),
            };
            let out = solver.run(&Task::root(), &config, &mut v).unwrap();
            assert_eq!(out.status, Status::Stopped);
            assert_eq!(&v.solutions[..], &full[..k as usize]);
            expect_full(
                &mut solver,
                &full,
                &full_stats,
                "a stop by the solution callback",
            );
        }
    }

    // max_solutions: exactly that many, the first ones; more than there
    // are: the search runs out.
    for k in [
        1,
        total,
        total + 1,
        1 + rng.below(total as usize + 1) as u64,
    ] {
        if k == 0 {
            continue;
        }
        let cfg = RunConfig {
            max_solutions: Some(k),
            ..config.clone()
        };
        let mut c = Collect::default();
        let out = solver.run(&Task::root(), &cfg, &mut c).unwrap();
        if k <= total {
            assert_eq!(
                out.status,
                Status::SolutionLimit,
                "max_solutions {k} of {total}"
            );
            assert_eq!(&c.solutions[..], &full[..k as usize]);
        } else {
            assert_eq!(out.status, Status::Exhausted);
            assert_eq!(c.solutions, full);
        }
        expect_full(&mut solver, &full, &full_stats, "a solution limit");
    }

    // max_nodes: a node limit well below the tree size must bite (even if
    // solution nodes are counted outside the limit check); one at the tree
    // size must not.
    let nodes = full_stats.nodes;
    for m in [0, nodes / 2, nodes, rng.below(nodes as usize + 1) as u64] {
        let cfg = RunConfig {
            max_nodes: Some(m),
            ..config.clone()
        };
        let mut c = Collect::default();
        let out = solver.run(&Task::root(), &cfg, &mut c).unwrap();
        assert!(full.starts_with(&c.solutions));
        match out.status {
            Status::NodeLimit => {
                assert!(m < nodes);
                assert!(
                    out.stats.nodes <= m + out.stats.solutions,
                    "{:?}",
                    out.stats
                );
            }
            Status::Exhausted => {
                assert!(m + total >= nodes, "max_nodes {m} of {nodes} did not stop");
                assert_eq!(c.solutions, full);
            }
            s => panic!("unexpected status {s:?}"),
        }
        if m + total < nodes {
            assert_eq!(out.status, Status::NodeLimit);
        }
        if m == 0 {
            assert_eq!((out.status, out.stats.nodes), (Status::NodeLimit, 0));
        }
        expect_full(&mut solver, &full, &full_stats, "a node limit");
    }

    // Paths that name no node: an alternative far past the root's, a path
    // longer than any branch, an absurd position.
    for bad in [vec![1000], vec![0; 100_000], vec![Decision::MAX - 1]] {
        let task = Task {
            path: bad.clone(),
            ..Task::root()
        };
        let mut c = Collect::default();
        let r = solver.run(&task, &RunConfig::default(), &mut c);
        assert!(r.is_err(), "path of length {} accepted", bad.len());
        assert!(c.solutions.is_empty(), "a rejected task reported solutions");
        expect_full(&mut solver, &full, &full_stats, "an invalid task");
    }
}

/// The solutions of `all` that [`Region`] places in `task`: what a
/// coordinator accepts from a worker leasing it.
fn within(solver: &mut Solver, all: &[Sol], task: &Task) -> Vec<Sol> {
    let region = Region::new(solver, task).unwrap();
    all.iter()
        .filter(|s| {
            let mut ascending = (*s).clone();
            ascending.sort_unstable();
            region.contains(&ascending)
        })
        .cloned()
        .collect()
}

/// Tasks named from the tree itself: every node the search enters can be
/// run as a task and yields a contiguous run of the full sequence (starting
/// with the solutions found after entering it); ranges of alternatives
/// concatenate; the solver keeps working afterwards.
fn check_tasks(problem: &Problem) {
    check_tasks_on(problem, Engine::Links);
}

fn check_tasks_on(problem: &Problem, engine: Engine) {
    let (full, full_stats) = unsplit(
        &mut Solver::with_engine(problem, engine).unwrap(),
        &Task::root(),
    );
    let solver = &mut Solver::with_engine(problem, engine).unwrap();
    // Every node entered, with the solutions found before entering it.
    struct Nodes {
        seen: Vec<(Vec<Decision>, usize)>,
        solutions: usize,
        degrees: Degrees,
    }
    impl Visitor for Nodes {
        fn solution(&mut self, _: &SolutionView<'_>) -> Flow {
            self.solutions += 1;
            Flow::Continue
        }
        fn poll(&mut self, p: &ProgressView<'_>) -> Request {
            self.degrees.record(p);
            self.seen.push((p.positions.to_vec(), self.solutions));
            Request::Continue
        }
    }
    let mut nodes = Nodes {
        seen: Vec::new(),
        solutions: 0,
        degrees: Degrees::default(),
    };
    let cfg = RunConfig {
        poll_interval: 1,
        ..Default::default()
    };
    solver.run(&Task::root(), &cfg, &mut nodes).unwrap();
    assert_eq!(nodes.solutions, full.len());
    // The root is not necessarily polled; it is a node all the same.
    let mut seen = nodes.seen;
    if seen.first().is_none_or(|(path, _)| !path.is_empty()) {
        seen.insert(0, (Vec::new(), 0));
    }
    let degrees = nodes.degrees.0;

    let step = (seen.len() / 60).max(1);
    for (path, before) in seen.iter().step_by(step) {
        let task = Task {
            path: path.clone(),
            ..Task::root()
        };
        let (sols, _) = unsplit(solver, &task);
        // A subtree is a contiguous part of the depth-first order, starting
        // with the solutions found after entering it.
        assert_eq!(
            &full[*before..*before + sols.len()],
            &sols[..],
            "node {path:?}"
        );
        // What the path leads to tells which solutions lie below it (the
        // task's region, for Algorithms X, C and M alike).
        assert_eq!(
            sorted(within(solver, &full, &task)),
            sorted(sols.clone()),
            "the region of node {path:?}"
        );
        if let Some(&d) = degrees.get(path) {
            assert_eq!(solver.describe(path).unwrap().degree, d, "node {path:?}");
            let upper = Task {
                from: d / 2,
                ..task.clone()
            };
            assert_eq!(
                sorted(within(solver, &full, &upper)),
                sorted(unsplit(solver, &upper).0),
                "the region of a range of {path:?}"
            );
            // Ranges concatenate.
            let cut = d / 2;
            let lo = unsplit(
                solver,
                &Task {
                    to: cut,
                    ..task.clone()
                },
            )
            .0;
            let hi = unsplit(
                solver,
                &Task {
                    from: cut,
                    ..task.clone()
                },
            )
            .0;
            assert_eq!([lo, hi].concat(), sols);
        }
    }
    expect_full(solver, &full, &full_stats, "tasks named from the tree");
}

/// Checkpoints and give-aways at every poll of a search that polls at every
/// node: the pieces, run in search order on the same solver, give the full
/// sequence.
fn check_every_poll(problem: &Problem) {
    check_every_poll_on(problem, Engine::Links);
}

fn check_every_poll_on(problem: &Problem, engine: Engine) {
    let (full, full_stats) = unsplit(
        &mut Solver::with_engine(problem, engine).unwrap(),
        &Task::root(),
    );
    let mut solver = Solver::with_engine(problem, engine).unwrap();
    let mut counter = PollCounter::default();
    let cfg = RunConfig {
        poll_interval: 1,
        ..Default::default()
    };
    solver.run(&Task::root(), &cfg, &mut counter).unwrap();
    let polls = counter.before_poll.len();
    /// Makes `request` at the k-th poll (1-based).
    struct At {
        k: usize,
        request: Request,
        polls: usize,
        at: Vec<Decision>,
        solutions: Vec<Sol>,
        given: Vec<Task>,
    }
    impl Visitor for At {
        fn solution(&mut self, s: &SolutionView<'_>) -> Flow {
            self.solutions.push(s.options());
            Flow::Continue
        }
        fn poll(&mut self, p: &ProgressView<'_>) -> Request {
            self.polls += 1;
            if self.polls == self.k {
                self.at = p.positions.to_vec();
                self.request
            } else {
                Request::Continue
            }
        }
        fn given_away(&mut self, t: Task) {
            self.given.push(t);
        }
    }
    let step = (polls / 150).max(1);
    for k in (1..=polls).step_by(step) {
        for request in [Request::Checkpoint, Request::GiveAway] {
            let mut v = At {
                k,
                request,
                polls: 0,
                at: Vec::new(),
                solutions: Vec::new(),
                given: Vec::new(),
            };
            let out = solver.run(&Task::root(), &cfg, &mut v).unwrap();
            assert_eq!(v.solutions.len(), out.stats.solutions as usize);
            let mut seq = v.solutions;
            for t in out.remaining.iter().chain(v.given.iter().rev()) {
                let mut c = Collect::default();
                let r = solver.run(t, &RunConfig::default(), &mut c);
                assert!(
                    matches!(r, Ok(Outcome { status: Status::Exhausted, .. })),
                    "{request:?} at node {:?} (poll {k} of {polls}) made task {t:?}, which gives {r:?}",
                    v.at
                );
                // Each piece's region (cuts and all) holds its solutions
                // and no other.
                assert_eq!(
                    sorted(within(&mut solver, &full, t)),
                    sorted(c.solutions.clone()),
                    "{request:?} at node {:?}: the region of {t:?}",
                    v.at
                );
                seq.extend(c.solutions);
            }
            assert_eq!(seq, full, "{request:?} at node {:?}", v.at);
        }
    }
    expect_full(&mut solver, &full, &full_stats, "checkpoints at every node");
}

/// For every node whose degree d is known (it has a child the search
/// entered), the path to it followed by d names no node and must be
/// rejected; the solver must work afterwards.
fn check_past_last_alternative(problem: &Problem) {
    check_past_last_alternative_on(problem, Engine::Links);
}

fn check_past_last_alternative_on(problem: &Problem, engine: Engine) {
    let mut solver = Solver::with_engine(problem, engine).unwrap();
    let (full, full_stats) = unsplit(
        &mut Solver::with_engine(problem, engine).unwrap(),
        &Task::root(),
    );
    let mut degrees = Degrees::default();
    let r = split_run(&mut solver, &Task::root(), Policy::NONE, 0, &mut degrees);
    assert_eq!(r.solutions, full);
    let mut nodes: Vec<(Vec<Decision>, Decision)> = degrees.0.into_iter().collect();
    nodes.sort();
    let step = (nodes.len() / 60).max(1);
    for (path, d) in nodes.into_iter().step_by(step) {
        let mut bad = path;
        bad.push(d);
        let mut c = Collect::default();
        let r = solver.run(
            &Task {
                path: bad.clone(),
                ..Task::root()
            },
            &RunConfig::default(),
            &mut c,
        );
        assert!(
            r.is_err() && c.solutions.is_empty(),
            "path {bad:?} (the node has {d} alternatives) accepted: {r:?}, solutions {:?}",
            c.solutions
        );
        expect_full(
            &mut solver,
            &full,
            &full_stats,
            "a path past the last alternative",
        );
    }
}

// ----- Instances -----

fn build(primaries: &[(String, u32, u32)], secondaries: &[String], options: &[String]) -> Problem {
    let mut b = ProblemBuilder::new();
    for (name, min, max) in primaries {
        b.primary_with_bounds(name, *min, *max).unwrap();
    }
    for name in secondaries {
        b.secondary(name).unwrap();
    }
    for o in options {
        let tokens: Vec<&str> = o.split_whitespace().collect();
        b.option_str(&tokens).unwrap();
    }
    b.build().unwrap()
}

fn queens(n: usize) -> Problem {
    let mut primaries = Vec::new();
    for i in 0..n {
        primaries.push((format!("r{i}"), 1, 1));
    }
    for j in 0..n {
        primaries.push((format!("c{j}"), 1, 1));
    }
    let mut secondaries = Vec::new();
    for d in 0..2 * n - 1 {
        secondaries.push(format!("a{d}"));
    }
    for d in 0..2 * n - 1 {
        secondaries.push(format!("b{d}"));
    }
    let mut options = Vec::new();
    for i in 0..n {
        for j in 0..n {
            options.push(format!("r{i} c{j} a{} b{}", i + j, i + n - 1 - j));
        }
    }
    build(&primaries, &secondaries, &options)
}

/// Latin squares of order 4: cells, rows and columns as primary items.
fn latin4() -> Problem {
    let mut primaries = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            primaries.push((format!("p{i}{j}"), 1, 1));
        }
    }
    for i in 0..4 {
        for v in 0..4 {
            primaries.push((format!("r{i}v{v}"), 1, 1));
            primaries.push((format!("c{i}v{v}"), 1, 1));
        }
    }
    let mut options = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            for v in 0..4 {
                options.push(format!("p{i}{j} r{i}v{v} c{j}v{v}"));
            }
        }
    }
    build(&primaries, &[], &options)
}

/// Latin squares of order 4 with the cells as colored secondary items
/// (the color is the value): Algorithm C with purification.
fn latin4_colored() -> Problem {
    let mut primaries = Vec::new();
    for i in 0..4 {
        for v in 0..4 {
            primaries.push((format!("r{i}v{v}"), 1, 1));
            primaries.push((format!("c{i}v{v}"), 1, 1));
        }
    }
    let mut secondaries = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            secondaries.push(format!("x{i}{j}"));
        }
    }
    let mut options = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            for v in 0..4 {
                options.push(format!("r{i}v{v} c{j}v{v} x{i}{j}:{v}"));
            }
        }
    }
    build(&primaries, &secondaries, &options)
}

/// 0/1 matrices n x n with every row and column sum in [lo, hi]; with
/// `colored`, also: the chosen columns of each row agree in parity (a
/// colored secondary per row), the chosen cells of each anti-diagonal mod n
/// agree in row parity (a colored secondary per class), and at most one
/// chosen cell is on the main diagonal (an uncolored secondary).
fn matrices(n: usize, lo: u32, hi: u32, colored: bool) -> Problem {
    let mut primaries = Vec::new();
    for i in 0..n {
        primaries.push((format!("r{i}"), lo, hi));
    }
    for j in 0..n {
        primaries.push((format!("c{j}"), lo, hi));
    }
    let mut secondaries = Vec::new();
    let mut options = Vec::new();
    if colored {
        for i in 0..n {
            secondaries.push(format!("R{i}"));
        }
        for d in 0..n {
            secondaries.push(format!("D{d}"));
        }
        secondaries.push("X".to_string());
    }
    for i in 0..n {
        for j in 0..n {
            if colored {
                let x = if i == j { " X" } else { "" };
                options.push(format!(
                    "r{i} c{j} R{i}:{} D{}:{}{x}",
                    j % 2,
                    (i + j) % n,
                    i % 2
                ));
            } else {
                options.push(format!("r{i} c{j}"));
            }
        }
    }
    build(&primaries, &secondaries, &options)
}

/// Brute-force count for [`matrices`], straight from its description.
fn matrices_count(n: usize, lo: u32, hi: u32, colored: bool) -> usize {
    let mut count = 0;
    'all: for mask in 0u32..(1 << (n * n)) {
        let cell = |i: usize, j: usize| mask >> (i * n + j) & 1 == 1;
        for i in 0..n {
            let r = (0..n).filter(|&j| cell(i, j)).count() as u32;
            let c = (0..n).filter(|&j| cell(j, i)).count() as u32;
            if r < lo || r > hi || c < lo || c > hi {
                continue 'all;
            }
        }
        if colored {
            for i in 0..n {
                let parities: Vec<usize> = (0..n).filter(|&j| cell(i, j)).map(|j| j % 2).collect();
                if parities.windows(2).any(|w| w[0] != w[1]) {
                    continue 'all;
                }
            }
            for d in 0..n {
                let parities: Vec<usize> = (0..n)
                    .filter(|&i| cell(i, (d + n - i) % n))
                    .map(|i| i % 2)
                    .collect();
                if parities.windows(2).any(|w| w[0] != w[1]) {
                    continue 'all;
                }
            }
            if (0..n).filter(|&i| cell(i, i)).count() > 1 {
                continue 'all;
            }
        }
        count += 1;
    }
    count
}

fn named_instances() -> Vec<(String, Problem, usize)> {
    let mut v = vec![
        ("queens6".to_string(), queens(6), 4),
        ("queens7".to_string(), queens(7), 40),
        ("queens8".to_string(), queens(8), 92),
        ("latin4".to_string(), latin4(), 576),
        ("latin4-colored".to_string(), latin4_colored(), 576),
        ("matrices4-sums2".to_string(), matrices(4, 2, 2, false), 90),
    ];
    let count = matrices_count(4, 0, 2, true);
    v.push((
        "matrices4-colored".to_string(),
        matrices(4, 0, 2, true),
        count,
    ));
    v
}

#[test]
fn named_instances_have_the_known_counts() {
    for (name, problem, count) in named_instances() {
        let (sols, _) = unsplit(&mut Solver::new(&problem), &Task::root());
        assert_eq!(sols.len(), count, "{name}");
        let mut s = sorted(sols.clone());
        s.dedup();
        assert_eq!(s.len(), count, "{name}: duplicates");
        for x in &sols {
            assert!(problem.verify(x).is_ok(), "{name}");
        }
    }
    let (_, p, count) = named_instances().pop().unwrap();
    assert!(
        count > 1,
        "the colored matrix instance should not be trivial"
    );
    assert_eq!(Solver::new(&p).algorithm(), "M");
    assert!(p.has_colors());
}

#[test]
fn named_instances_split_in_order() {
    let start = Instant::now();
    for (name, problem, _) in named_instances() {
        let mut runs = 0;
        for (seed, (pi, give, ck)) in [
            (1, 0.2, 0.02),
            (4, 0.1, 0.05),
            (32, 0.3, 0.0),
            (7, 0.0, 0.1),
            (2, 0.6, 0.01),
            (1, 1.0, 0.0),
            (11, 0.4, 0.04),
            (3, 0.05, 0.2),
        ]
        .into_iter()
        .enumerate()
        {
            let policy = Policy {
                poll_interval: pi,
                give,
                checkpoint: ck,
            };
            runs += check_ordered(&problem, policy, seed as u64 + 1);
        }
        eprintln!("{name}: {runs} runs in order");
    }
    eprintln!("ordered splits: {:?}", start.elapsed());
}

#[test]
fn named_instances_split_in_any_order() {
    let start = Instant::now();
    for (name, problem, _) in named_instances() {
        for (k, order) in [Order::Lifo, Order::Fifo, Order::Random]
            .into_iter()
            .enumerate()
        {
            for seed in 0..8u64 {
                let mut rng = Rng::new(seed * 31 + k as u64);
                let policy = Policy {
                    poll_interval: 1 + rng.below(49) as u64,
                    give: 0.1 + 0.5 * rng.unit(),
                    checkpoint: 0.1 * rng.unit(),
                };
                let r = check_queue(&problem, order, policy, seed);
                eprintln!(
                    "{name} {order:?} {policy:?}: {} runs, {} tasks split off",
                    r.runs, r.splits
                );
            }
        }
    }
    eprintln!("queued splits: {:?}", start.elapsed());
}

/// The same queues on the cells engine, for the instances it can search.
#[test]
fn named_instances_split_in_any_order_on_cells() {
    for (name, problem, _) in named_instances() {
        if !Engine::Cells.supports(&problem) {
            continue;
        }
        for (k, order) in [Order::Lifo, Order::Fifo, Order::Random]
            .into_iter()
            .enumerate()
        {
            for seed in 0..8u64 {
                let mut rng = Rng::new(seed * 31 + k as u64);
                let policy = Policy {
                    poll_interval: 1 + rng.below(49) as u64,
                    give: 0.1 + 0.5 * rng.unit(),
                    checkpoint: 0.1 * rng.unit(),
                };
                let r = check_queue_on(&problem, Engine::Cells, order, policy, seed);
                assert!(r.splits > 0 || r.runs == 1, "{name}");
            }
        }
        for seed in 0..4 {
            check_early_exits_on(&problem, Engine::Cells, seed);
        }
    }
}

/// Tasks named from the tree, a split at every node and paths past the
/// last alternative on the cells engine's Algorithm M (SSMCC's binary
/// branching, `Order::Exact`), for the instances with multiplicities.
#[test]
fn named_instances_with_multiplicities_on_cells_from_the_tree() {
    let mut checked = 0;
    for (name, problem, _) in named_instances() {
        if !problem.has_multiplicities() {
            continue;
        }
        eprintln!("{name}");
        check_tasks_on(&problem, Engine::Cells);
        check_every_poll_on(&problem, Engine::Cells);
        check_past_last_alternative_on(&problem, Engine::Cells);
        checked += 1;
    }
    assert!(checked >= 2);
}

#[test]
fn named_instances_early_exits() {
    for (k, (_, problem, _)) in named_instances().into_iter().enumerate() {
        check_early_exits(&problem, k as u64);
    }
}

#[test]
fn named_instances_tasks_from_the_tree() {
    for (name, problem, _) in named_instances() {
        eprintln!("{name}");
        check_tasks(&problem);
    }
}

#[test]
fn named_instances_split_at_every_node() {
    for (name, problem, _) in named_instances() {
        eprintln!("{name}");
        check_every_poll(&problem);
    }
}

/// The smallest case of a checkpoint whose remaining task is rejected: an
/// item that may be covered 0 to 2 times and a single option. The search
/// tree is: root (2 alternatives: the option, or no option) -> [0] (the
/// null move only) -> [0, 0], a solution node; a checkpoint there leaves
/// the task [0, 0], which must run and find the solution {0}.
#[test]
fn checkpoint_at_the_deepest_node_can_be_resumed() {
    let p = build(&[("a".to_string(), 0, 2)], &[], &["a".to_string()]);
    let mut solver = Solver::new(&p);
    let (full, _) = unsplit(&mut solver, &Task::root());
    assert_eq!(sorted(full.clone()), vec![vec![], vec![0]]);
    struct CheckpointAt(Vec<Decision>, Vec<Sol>);
    impl Visitor for CheckpointAt {
        fn solution(&mut self, s: &SolutionView<'_>) -> Flow {
            self.1.push(s.options());
            Flow::Continue
        }
        fn poll(&mut self, p: &ProgressView<'_>) -> Request {
            if p.positions == &self.0[..] {
                Request::Checkpoint
            } else {
                Request::Continue
            }
        }
    }
    let cfg = RunConfig {
        poll_interval: 1,
        ..Default::default()
    };
    let mut v = CheckpointAt(vec![0, 0], Vec::new());
    let out = solver.run(&Task::root(), &cfg, &mut v).unwrap();
    assert_eq!(out.status, Status::Checkpointed);
    assert_eq!(out.remaining[0].path, vec![0, 0]);
    let mut seq = v.1;
    for t in &out.remaining {
        let r = solver.run(t, &RunConfig::default(), &mut Collect::default());
        assert!(r.is_ok(), "remaining task {t:?} rejected: {r:?}");
        seq.extend(unsplit(&mut solver, t).0);
    }
    assert_eq!(seq, full);
}

#[test]
fn named_instances_reject_paths_past_the_last_alternative() {
    for (name, problem, _) in named_instances() {
        eprintln!("{name}");
        check_past_last_alternative(&problem);
    }
}

/// A task whose path goes through a solution and on below it names no node:
/// it must be rejected, not report the solution. (Dropped options pad the
/// problem so that the paths are not rejected for their length alone.)
#[test]
fn path_below_a_solution_is_rejected() {
    for (min, max) in [(1, 1), (1, 2)] {
        let mut options = vec!["a".to_string()];
        options.extend(std::iter::repeat_n("x".to_string(), 8));
        let p = build(&[("a".to_string(), min, max)], &["x".to_string()], &options);
        let mut solver = Solver::new(&p);
        let (full, _) = unsplit(&mut solver, &Task::root());
        assert_eq!(full, vec![vec![0]]);
        // With [1,1] (Algorithm C) choosing `a` at the root is a solution
        // leaf; with [1,2] (Algorithm M) the leaf is one null move further,
        // at [0, 0].
        let below: Vec<Vec<u32>> = if max == 1 {
            vec![vec![0, 0], vec![0, 0, 0], vec![0, 1]]
        } else {
            vec![vec![0, 0, 0], vec![0, 1], vec![0, 0, 1]]
        };
        for path in below {
            let mut c = Collect::default();
            let r = solver.run(
                &Task {
                    path: path.clone(),
                    ..Task::root()
                },
                &RunConfig::default(),
                &mut c,
            );
            assert!(
                r.is_err() && c.solutions.is_empty(),
                "bounds [{min},{max}]: path {path:?} gave {r:?} and solutions {:?}",
                c.solutions
            );
            assert_eq!(unsplit(&mut solver, &Task::root()).0, full);
        }
    }
}

/// One past the last alternative at the root names no node.
#[test]
fn path_past_the_last_alternative_is_rejected() {
    // Two options for one item: the root has two alternatives, 0 and 1
    // (three with the null move when the item may stay uncovered).
    for (min, max, degree) in [(1, 1, 2), (1, 2, 2), (0, 1, 3), (2, 2, 1)] {
        let p = build(
            &[("a".to_string(), min, max)],
            &[],
            &["a".to_string(), "a".to_string()],
        );
        let mut solver = Solver::new(&p);
        let (full, _) = unsplit(&mut solver, &Task::root());
        for k in 0..degree {
            let r = solver.run(
                &Task {
                    path: vec![k],
                    ..Task::root()
                },
                &RunConfig::default(),
                &mut Collect::default(),
            );
            assert!(r.is_ok(), "[{min},{max}]: path [{k}] rejected");
        }
        let mut c = Collect::default();
        let r = solver.run(
            &Task {
                path: vec![degree],
                ..Task::root()
            },
            &RunConfig::default(),
            &mut c,
        );
        assert!(
            r.is_err(),
            "[{min},{max}]: path [{degree}] accepted: {r:?}, solutions {:?}",
            c.solutions
        );
        assert_eq!(unsplit(&mut solver, &Task::root()).0, full);
    }
}

// ----- Random problems (the generator of tests/oracle.rs) -----

impl Spec {
    fn build(&self) -> Problem {
        self.build_with(|i| format!("i{i}"), |_, _, _| {})
    }
}

/// Random problems of every kind at once: `mult` and `colored` chosen per
/// case; a planted partition of the primaries keeps many of them solvable.
fn spec_strategy() -> impl Strategy<Value = Spec> {
    random_problems::spec_strategy(Shape {
        primaries: 1..=8,
        secondaries: 0..=3,
        options: 1..=20,
        multiplicities: any::<bool>().boxed(),
        colors: any::<bool>().boxed(),
    })
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn policy_strategy() -> impl Strategy<Value = Policy> {
    (1u64..=4, 0.0f64..1.0, 0.0f64..0.2).prop_map(|(poll_interval, give, checkpoint)| Policy {
        poll_interval,
        give,
        checkpoint,
    })
}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn random_problems_split_in_order(spec in spec_strategy(), policy in policy_strategy(), seed in any::<u64>()) {
        check_ordered(&spec.build(), policy, seed);
    }

    #[test]
    fn random_problems_split_in_any_order(
        spec in spec_strategy(),
        policy in policy_strategy(),
        seed in any::<u64>(),
        order in prop_oneof![Just(Order::Lifo), Just(Order::Fifo), Just(Order::Random)],
    ) {
        check_queue(&spec.build(), order, policy, seed);
    }

    #[test]
    fn random_problems_split_in_any_order_on_cells(
        spec in spec_strategy(),
        policy in policy_strategy(),
        seed in any::<u64>(),
        order in prop_oneof![Just(Order::Lifo), Just(Order::Fifo), Just(Order::Random)],
    ) {
        let problem = spec.build();
        prop_assume!(Engine::Cells.supports(&problem));
        check_queue_on(&problem, Engine::Cells, order, policy, seed);
        check_early_exits_on(&problem, Engine::Cells, seed);
    }

    #[test]
    fn random_problems_early_exits(spec in spec_strategy(), seed in any::<u64>()) {
        check_early_exits(&spec.build(), seed);
    }

    #[test]
    fn random_problems_with_multiplicities_on_cells_from_the_tree(spec in spec_strategy()) {
        let problem = spec.build();
        prop_assume!(problem.has_multiplicities());
        check_tasks_on(&problem, Engine::Cells);
        check_every_poll_on(&problem, Engine::Cells);
        check_past_last_alternative_on(&problem, Engine::Cells);
    }

    #[test]
    fn random_problems_tasks_from_the_tree(spec in spec_strategy()) {
        check_tasks(&spec.build());
    }

    #[test]
    fn random_problems_split_at_every_node(spec in spec_strategy()) {
        check_every_poll(&spec.build());
    }

    #[test]
    fn random_problems_reject_paths_past_the_last_alternative(spec in spec_strategy()) {
        check_past_last_alternative(&spec.build());
    }
}

#[test]
fn policy_none_never_splits() {
    let p = queens(6);
    let mut degrees = Degrees::default();
    let r = split_run(
        &mut Solver::new(&p),
        &Task::root(),
        Policy::NONE,
        0,
        &mut degrees,
    );
    assert_eq!(r.status, Status::Exhausted);
    assert!(r.given.is_empty() && r.remaining.is_empty());
    assert_eq!(r.solutions.len(), 4);
    assert!(close(r.done_weight, 1.0));
    // Every node of 6-queens was polled: the root's degree is known.
    assert_eq!(degrees.0.get(&Vec::new()), Some(&6));
}

// ----- Lost runs: re-running a task with its cuts and a skip count -----
//
// A simulated coordinator, built of the product's own parts: `run_task` runs
// each task and `Ledger` keeps its books, as in the pool and the cluster's
// coordinator. Only the transport is simulated: a port whose worker dies at
// random polls (its undelivered solutions die with it).

/// A worker that gives work away, checkpoints, or dies at random polls.
struct Flaky<'a> {
    rng: &'a mut Rng,
    ledger: &'a mut Ledger,
    delivered: &'a mut Vec<Sol>,
    queue: &'a mut VecDeque<QueuedTask>,
    die: f64,
    give: f64,
    checkpoint: f64,
    died: bool,
}

impl Port for Flaky<'_> {
    fn deliver(&mut self, batch: Batch, _force: bool) -> Taken {
        if self.died {
            // What a dead worker had not sent is lost with it.
            return Taken::Stop;
        }
        let known = self
            .ledger
            .found(batch.first, batch.count)
            .expect("a run reports in order");
        self.delivered.extend(
            batch
                .solutions
                .iter()
                .skip(known as usize)
                .map(|s| s.iter().map(|&o| o as usize).collect::<Sol>()),
        );
        Taken::All
    }

    fn control(&mut self, _: &ProgressView<'_>) -> Control {
        let x = self.rng.unit();
        if x < self.die {
            self.died = true;
            Control::Stop
        } else if x < self.die + self.give {
            Control::GiveAway
        } else if x < self.die + self.give + self.checkpoint {
            Control::Checkpoint
        } else {
            Control::Continue
        }
    }

    fn given_away(&mut self, task: Task, found: u64) {
        assert!(task.weight > 0.0);
        let task = self
            .ledger
            .gave_away(task, found)
            .unwrap_or_else(|e| panic!("the ledger refused a give-away: {e}"));
        self.queue.push_back(QueuedTask::new(task));
    }
}

/// Runs a whole search as a coordinator would with workers that die: a
/// lost run's task goes back to the queue with the cuts of what it gave
/// away and the count of solutions already delivered. Returns the
/// delivered solutions and the number of lost runs.
fn run_with_losses(problem: &Problem, seed: u64, die: f64, give: f64, ck: f64) -> (Vec<Sol>, u32) {
    let mut rng = Rng::new(seed);
    let mut solver = Solver::new(problem);
    let mut queue = VecDeque::from([QueuedTask::new(Task::root())]);
    let mut delivered = Vec::new();
    let mut lost = 0;
    let mut finished_weight = 0.0;
    while let Some(work) = queue.pop_front() {
        let spec = RunSpec {
            skip: work.skip,
            poll_interval: 1 + rng.below(8) as u64,
            batch_size: 1 + rng.below(4),
            ..RunSpec::default()
        };
        let task = work.task.clone();
        // Dying gets rarer with every attempt, so the search ends.
        let die = die / f64::from(1 + work.attempts * work.attempts);
        let mut ledger = Ledger::new(work);
        let mut port = Flaky {
            rng: &mut rng,
            ledger: &mut ledger,
            delivered: &mut delivered,
            queue: &mut queue,
            die,
            give,
            checkpoint: ck,
            died: false,
        };
        let report = run_task(&mut solver, problem, &task, &spec, None, &mut port);
        let died = port.died;
        let settlement = if died {
            lost += 1;
            assert_eq!(report.end, RunEnd::Stopped(Stop::Asked));
            ledger.lose(u32::MAX, RunPoint::default())
        } else {
            assert!(
                matches!(report.end, RunEnd::Exhausted | RunEnd::Checkpointed(_)),
                "{:?}",
                report.end
            );
            ledger
                .settle(report.end, report.found)
                .unwrap_or_else(|e| panic!("the ledger refused a run's end: {e}"))
        };
        assert!(settlement.failure.is_none());
        finished_weight += settlement.finished_weight;
        for work in settlement.requeue {
            // Put it anywhere: tasks may run again in any order.
            let at = rng.below(queue.len() + 1);
            queue.insert(at, work);
        }
    }
    assert!(
        close(finished_weight, 1.0),
        "the finished weights sum to {finished_weight}"
    );
    (delivered, lost)
}

#[test]
fn lost_runs_resumed_with_cuts_and_skips_deliver_each_solution_once() {
    let start = Instant::now();
    for (name, problem, count) in named_instances() {
        let (all, _) = unsplit(&mut Solver::new(&problem), &Task::root());
        let mut lost_total = 0;
        for (seed, (die, give, ck)) in [
            (0.05, 0.2, 0.0),
            (0.02, 0.3, 0.02),
            (0.2, 0.5, 0.0),
            (0.1, 0.1, 0.05),
            (0.3, 0.8, 0.01),
        ]
        .into_iter()
        .enumerate()
        {
            let (delivered, lost) = run_with_losses(&problem, seed as u64 + 17, die, give, ck);
            assert_eq!(delivered.len(), count, "{name} seed {seed}: count");
            assert_eq!(
                sorted(delivered),
                sorted(all.clone()),
                "{name} seed {seed}: solution multiset"
            );
            lost_total += lost;
        }
        assert!(
            lost_total > 0,
            "{name}: no run was lost, the test tests nothing"
        );
        eprintln!("{name}: {lost_total} lost runs");
    }
    eprintln!("lost runs: {:?}", start.elapsed());
}

#[test]
fn a_cut_task_skips_exactly_what_it_gave_away() {
    // Give away once at a deep node, then run the task again with the cut:
    // its solutions and the given task's are the whole tree, disjoint.
    let problem = queens(8);
    let (all, _) = unsplit(&mut Solver::new(&problem), &Task::root());
    struct GiveOnce {
        polls: u32,
        given: Option<Task>,
    }
    impl Visitor for GiveOnce {
        fn poll(&mut self, _: &ProgressView<'_>) -> Request {
            self.polls += 1;
            if self.polls == 50 && self.given.is_none() {
                Request::GiveAway
            } else {
                Request::Continue
            }
        }
        fn given_away(&mut self, t: Task) {
            self.given = Some(t);
        }
    }
    let mut solver = Solver::new(&problem);
    let mut v = GiveOnce {
        polls: 0,
        given: None,
    };
    let config = RunConfig {
        poll_interval: 1,
        ..RunConfig::default()
    };
    solver.run(&Task::root(), &config, &mut v).unwrap();
    let given = v.given.expect("gave away");
    let cut = Task {
        cuts: vec![xccd::xcc::Cut::of_given(&given)],
        ..Task::root()
    };
    let (mine, _) = unsplit(&mut solver, &cut);
    let (theirs, _) = unsplit(&mut solver, &given);
    assert!(!mine.is_empty() && !theirs.is_empty());
    assert!(mine.len() < all.len());
    assert_eq!(sorted([mine.clone(), theirs].concat()), sorted(all.clone()));
    // The cut task's solutions keep the unsplit order.
    let order: Vec<&Sol> = all.iter().filter(|s| mine.contains(s)).collect();
    assert_eq!(order, mine.iter().collect::<Vec<_>>());
}
