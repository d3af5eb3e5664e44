//! [`run_task`]: one task, from the engine's callbacks to a transport's
//! [`Port`].

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use super::port::{Batch, Control, Port, RunEnd, RunReport, RunSpec, Stop, Taken};
use super::SideCondition;
use crate::xcc::{
    Engine, Flow, Problem, ProgressView, Request, RunConfig, RunError, SolutionView, Solver, Stats,
    Status, Task, Visitor,
};

/// Runs `task` of `problem` on `solver`, its solutions filtered by
/// `condition`, reporting to `port`. A panic in the engine, the condition or
/// the port ends the run as [`RunEnd::Failed`]; `solver` is then rebuilt,
/// so the caller can go on using it.
pub fn run_task<P: Port>(
    solver: &mut Solver,
    problem: &Problem,
    task: &Task,
    spec: &RunSpec,
    condition: Option<&dyn SideCondition>,
    port: &mut P,
) -> RunReport {
    let condition = condition.filter(|c| c.restricts());
    if let Some(memo) = spec.memo {
        match super::memo::run_memo(
            problem,
            task,
            spec,
            memo,
            condition.is_some_and(|c| c.filters()),
            port,
        ) {
            Ok(report) => return report,
            // Nothing was delivered: the plain search below counts from the
            // root (a memoized count runs only there), pruned by the
            // condition the memoized one left out.
            Err(verdict) => port.memo_declined(&verdict),
        }
    }
    if let Some(k) = spec.cheapest {
        return super::cheapest::run_cheapest(
            problem,
            task,
            spec,
            k,
            condition.is_some_and(|c| c.filters()),
            port,
        );
    }
    if spec.limit == Some(0) {
        return RunReport {
            end: RunEnd::Stopped(Stop::SolutionLimit),
            stats: Stats::default(),
            found: 0,
            delivered: 0,
            exact_count: None,
        };
    }
    let config = RunConfig {
        max_solutions: None,
        max_nodes: spec.max_nodes,
        poll_interval: spec.poll_interval.max(1),
        profile: spec.profile,
        stop: spec.stop.clone(),
        check_partial: condition.is_some_and(|c| c.prunes()),
    };
    let mut driver = Driver {
        port,
        condition,
        spec,
        batch_size: spec.batch_size.max(1),
        options: Vec::new(),
        found: 0,
        delivered: 0,
        batch: Batch::default(),
        last_length: 0,
        last_delivery: Instant::now(),
        refused: false,
        checkpoint_asked: false,
        released: false,
        closed: false,
        cause: None,
    };
    let result = catch_unwind(AssertUnwindSafe(|| solver.run(task, &config, &mut driver)));
    let outcome = match result {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(RunError::OutOfMemory(error))) => {
            // The stacks grew as far as they could; the next run starts
            // from fresh ones.
            *solver = solver.rebuilt(problem);
            return RunReport {
                end: RunEnd::OutOfMemory(error.to_string()),
                stats: Default::default(),
                found: driver.found,
                delivered: driver.delivered,
                exact_count: None,
            };
        }
        Ok(Err(RunError::Task(error))) => {
            return driver.failed(format!(
                "task {:?} [{}..{}) cannot be run: {error}",
                task.path,
                task.from,
                if task.to == crate::xcc::ALL {
                    "end".to_string()
                } else {
                    task.to.to_string()
                }
            ))
        }
        Err(panic) => {
            // The links are wherever the panic left them.
            *solver = solver.rebuilt(problem);
            return driver.failed(format!("the search panicked: {}", panic_text(&*panic)));
        }
    };
    let taken = catch_unwind(AssertUnwindSafe(|| driver.deliver(true)));
    if let Err(panic) = taken {
        return driver.failed(format!(
            "delivering solutions panicked: {}",
            panic_text(&*panic)
        ));
    }
    let end = match outcome.status {
        Status::Exhausted => RunEnd::Exhausted,
        Status::Checkpointed => RunEnd::Checkpointed(outcome.remaining),
        Status::NodeLimit => RunEnd::Stopped(Stop::NodeLimit),
        Status::SolutionLimit => RunEnd::Stopped(Stop::SolutionLimit),
        Status::Stopped if driver.released => RunEnd::Released,
        Status::Stopped => RunEnd::Stopped(driver.cause.unwrap_or(Stop::Asked)),
    };
    RunReport {
        end,
        stats: outcome.stats,
        found: driver.found,
        delivered: driver.delivered,
        exact_count: None,
    }
}

/// Runs a whole search (the root task) on a solver of its own, on `engine`
/// (links when the problem needs what `engine` lacks): what
/// single-threaded callers (the CLI, [`crate::puzzles::solve`]) run.
pub fn run_root<P: Port>(
    problem: &Problem,
    engine: Engine,
    spec: &RunSpec,
    condition: Option<&dyn SideCondition>,
    port: &mut P,
) -> RunReport {
    let mut solver = Solver::with_engine(problem, engine).unwrap_or_else(|_| Solver::new(problem));
    run_task(&mut solver, problem, &Task::root(), spec, condition, port)
}

/// The text of a panic's payload.
fn panic_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// The most solutions a new batch reserves room for.
const MAX_BATCH_RESERVE: usize = 4096;

/// The engine's visitor for one run.
struct Driver<'a, P: Port> {
    port: &'a mut P,
    condition: Option<&'a dyn SideCondition>,
    spec: &'a RunSpec,
    batch_size: usize,
    /// Scratch space for option indices.
    options: Vec<usize>,
    /// Accepted solutions found by this run, the skipped ones included.
    found: u64,
    /// New solutions the port has taken.
    delivered: u64,
    /// Found, not yet taken.
    batch: Batch,
    /// Indices in the last solution: the room a new batch reserves.
    last_length: usize,
    last_delivery: Instant,
    /// The port had no room for the batch.
    refused: bool,
    /// A checkpoint was asked before the run could make one.
    checkpoint_asked: bool,
    /// Asked to release before catching up.
    released: bool,
    /// The port wants no more solutions.
    closed: bool,
    /// Why the run is stopping, when it decided to.
    cause: Option<Stop>,
}

impl<P: Port> Driver<'_, P> {
    fn caught_up(&self) -> bool {
        self.found >= self.spec.skip
    }

    fn failed(&self, message: String) -> RunReport {
        RunReport {
            end: RunEnd::Failed(message),
            stats: Stats::default(),
            found: self.found,
            delivered: self.delivered,
            exact_count: None,
        }
    }

    /// Offers the pending solutions to the port, in batches of at most
    /// `batch_size`. Returns false once the port wants no more.
    fn deliver(&mut self, force: bool) -> bool {
        while self.batch.count > 0 {
            if self.closed {
                self.batch = Batch::default();
                break;
            }
            let chunk = if self.batch.solutions.len() > self.batch_size {
                let rest = self.batch.solutions.split_off(self.batch_size);
                let n = self.batch_size as u64;
                let chunk = Batch {
                    first: self.batch.first,
                    count: n,
                    solutions: std::mem::replace(&mut self.batch.solutions, rest),
                };
                self.batch.first += n;
                self.batch.count -= n;
                chunk
            } else {
                std::mem::take(&mut self.batch)
            };
            let n = chunk.count;
            match self.port.deliver(chunk, force) {
                Taken::All => self.delivered += n,
                Taken::Refused(mut chunk) => {
                    chunk.count += self.batch.count;
                    chunk.solutions.append(&mut self.batch.solutions);
                    self.batch = chunk;
                    self.refused = true;
                    return true;
                }
                Taken::Stop => {
                    self.closed = true;
                    self.cause.get_or_insert(Stop::Asked);
                }
            }
        }
        self.refused = false;
        self.last_delivery = Instant::now();
        !self.closed
    }
}

impl<P: Port> Visitor for Driver<'_, P> {
    fn solution(&mut self, solution: &SolutionView<'_>) -> Flow {
        if let Some(condition) = self.condition {
            solution.options_into(&mut self.options);
            if !condition.accept(&self.options) {
                return Flow::Reject;
            }
        }
        let index = self.found;
        self.found += 1;
        if index < self.spec.skip {
            return Flow::Continue;
        }
        if self.closed {
            return Flow::Stop;
        }
        if self.batch.count == 0 {
            self.batch.first = index;
        }
        self.batch.count += 1;
        if self.spec.want_solutions {
            let solutions = &mut self.batch.solutions;
            if solutions.is_empty() {
                // One allocation a batch (they are delivered at batch_size).
                let room = self.batch_size.min(MAX_BATCH_RESERVE);
                solutions.reserve(room, room * self.last_length);
            }
            match self.condition {
                // Checked above: the options are in `options` already.
                Some(_) => solutions.push_with(|out| {
                    out.extend(self.options.iter().map(|&o| o as u32));
                }),
                None => solutions.push_with(|out| solution.append_options(out)),
            }
            self.last_length = solutions.lengths().last().map_or(0, |&l| l as usize);
        }
        if self
            .spec
            .limit
            .is_some_and(|limit| self.found - self.spec.skip >= limit)
        {
            // Delivered when the run ends.
            self.cause = Some(Stop::SolutionLimit);
            return Flow::Stop;
        }
        if !self.refused && self.batch.count >= self.batch_size as u64 && !self.deliver(false) {
            return Flow::Stop;
        }
        Flow::Continue
    }

    fn poll(&mut self, progress: &ProgressView<'_>) -> Request {
        if self.batch.count > 0
            && (self.refused || self.last_delivery.elapsed() >= self.spec.max_delay)
            && !self.deliver(false)
        {
            return Request::Stop;
        }
        let caught_up = self.caught_up();
        let request = match self.port.control(progress) {
            Control::Stop => return Request::Stop,
            Control::Release if !caught_up => {
                self.released = true;
                return Request::Stop;
            }
            Control::Release | Control::Checkpoint => {
                self.checkpoint_asked = true;
                Request::Continue
            }
            Control::GiveAway if caught_up && !self.refused => Request::GiveAway,
            Control::GiveAway | Control::Continue => Request::Continue,
        };
        if caught_up && (self.checkpoint_asked || self.refused) {
            return Request::Checkpoint;
        }
        request
    }

    fn given_away(&mut self, task: Task) {
        // Reports stay in search order: the solutions found before the cut
        // go out first.
        self.deliver(false);
        self.port.given_away(task, self.found);
    }

    fn partial(&mut self, chosen: &SolutionView<'_>) -> bool {
        match self.condition {
            Some(condition) => {
                chosen.options_into(&mut self.options);
                condition.accept_partial(&self.options)
            }
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::testing::queens;
    use crate::xcc::{Collect, ALL};

    fn unsplit(problem: &Problem) -> Vec<Vec<usize>> {
        let mut collect = Collect::default();
        Solver::new(problem)
            .run(&Task::root(), &RunConfig::default(), &mut collect)
            .unwrap();
        collect.solutions
    }

    /// A port that keeps everything and answers polls from a script.
    #[derive(Default)]
    struct Script {
        batches: Vec<Batch>,
        given: Vec<(Task, u64)>,
        /// What to answer at each poll (then Continue).
        controls: Vec<Control>,
        polls: usize,
        /// Refuse this many unforced deliveries.
        refuse: usize,
        forced: usize,
    }

    impl Script {
        fn solutions(&self) -> Vec<Vec<usize>> {
            self.batches
                .iter()
                .flat_map(|b| b.solutions.iter())
                .map(|s| s.iter().map(|&o| o as usize).collect())
                .collect()
        }
        /// The batches' indices follow each other from `first`.
        fn check_indices(&self, mut first: u64) {
            for b in &self.batches {
                assert_eq!(b.first, first, "batches in order, without gaps");
                assert!(b.solutions.is_empty() || b.solutions.len() as u64 == b.count);
                first += b.count;
            }
        }
    }

    impl Port for Script {
        fn deliver(&mut self, batch: Batch, force: bool) -> Taken {
            if force {
                self.forced += 1;
            } else if self.refuse > 0 {
                self.refuse -= 1;
                return Taken::Refused(batch);
            }
            if batch.count > 0 {
                self.batches.push(batch);
            }
            Taken::All
        }
        fn control(&mut self, _progress: &ProgressView<'_>) -> Control {
            self.polls += 1;
            self.controls
                .get(self.polls - 1)
                .copied()
                .unwrap_or(Control::Continue)
        }
        fn given_away(&mut self, task: Task, found: u64) {
            self.given.push((task, found));
        }
    }

    fn spec(skip: u64) -> RunSpec {
        RunSpec {
            skip,
            batch_size: 3,
            poll_interval: 1,
            ..RunSpec::default()
        }
    }

    fn run(
        problem: &Problem,
        spec: &RunSpec,
        condition: Option<&dyn SideCondition>,
        port: &mut Script,
    ) -> RunReport {
        run_root(problem, Engine::Links, spec, condition, port)
    }

    #[test]
    fn skipped_solutions_are_found_again_but_not_delivered() {
        let problem = queens(6);
        let all = unsplit(&problem);
        assert_eq!(all.len(), 4);
        for skip in 0..=5 {
            let mut port = Script::default();
            let report = run(&problem, &spec(skip), None, &mut port);
            assert_eq!(report.end, RunEnd::Exhausted);
            assert_eq!(report.found, 4);
            let skip = (skip as usize).min(4);
            assert_eq!(port.solutions(), all[skip..].to_vec());
            assert_eq!(report.delivered, (4 - skip) as u64);
            port.check_indices(skip as u64);
        }
    }

    /// The solutions of `tasks`, each run apart.
    fn solutions_of<'a>(
        problem: &Problem,
        tasks: impl Iterator<Item = &'a Task>,
    ) -> Vec<Vec<usize>> {
        let mut all = Vec::new();
        for task in tasks {
            let mut c = Collect::default();
            Solver::new(problem)
                .run(task, &RunConfig::default(), &mut c)
                .unwrap();
            all.extend(c.solutions);
        }
        all
    }

    #[test]
    fn nothing_leaves_a_run_before_it_caught_up() {
        let problem = queens(8);
        let all = unsplit(&problem);
        let mut expected = all[50..].to_vec();
        expected.sort();
        // Asked to give away every 20 polls, with 50 to skip: the asks
        // before the 50th solution was found again are ignored, the later
        // ones are not.
        let mut port = Script {
            controls: (0..3000)
                .map(|i| {
                    if i % 20 == 19 {
                        Control::GiveAway
                    } else {
                        Control::Continue
                    }
                })
                .collect(),
            ..Script::default()
        };
        let report = run(&problem, &spec(50), None, &mut port);
        assert_eq!(report.end, RunEnd::Exhausted);
        assert!(
            !port.given.is_empty(),
            "no give-away at all: nothing tested"
        );
        assert!(
            port.given.iter().all(|&(_, found)| found >= 50),
            "{:?}",
            port.given
        );
        let mut got = port.solutions();
        got.extend(solutions_of(&problem, port.given.iter().map(|(t, _)| t)));
        got.sort();
        assert_eq!(got, expected);
        // A checkpoint asked early waits until the run has caught up.
        let mut port = Script {
            controls: vec![Control::Continue, Control::Checkpoint],
            ..Script::default()
        };
        let report = run(&problem, &spec(50), None, &mut port);
        let RunEnd::Checkpointed(remaining) = report.end else {
            panic!("expected a checkpoint, got {:?}", report.end)
        };
        assert!(report.found >= 50 && report.found < 92, "{}", report.found);
        assert!(port.polls > 100, "the checkpoint came at once");
        let mut got = port.solutions();
        got.extend(solutions_of(&problem, remaining.iter()));
        got.sort();
        assert_eq!(got, expected);
        // A release before catching up stops at once and asks for a rerun.
        let mut port = Script {
            controls: vec![Control::Release],
            ..Script::default()
        };
        let report = run(&problem, &spec(50), None, &mut port);
        assert_eq!(report.end, RunEnd::Released);
        assert!(port.batches.is_empty());
    }

    /// Accepts the solutions whose smallest option is even; prunes nothing
    /// but counts its calls.
    struct EvenFirst(std::sync::atomic::AtomicU64);
    impl SideCondition for EvenFirst {
        fn accept(&self, options: &[usize]) -> bool {
            options[0].is_multiple_of(2)
        }
        fn accept_partial(&self, _options: &[usize]) -> bool {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            true
        }
        fn prunes(&self) -> bool {
            true
        }
    }

    #[test]
    fn the_side_condition_filters_complete_solutions_and_sees_partial_ones() {
        let problem = queens(8);
        let all = unsplit(&problem);
        let even: Vec<Vec<usize>> = all
            .iter()
            .filter(|s| s[0].is_multiple_of(2))
            .cloned()
            .collect();
        assert!(!even.is_empty() && even.len() < all.len());
        let condition = EvenFirst(Default::default());
        let mut port = Script::default();
        let report = run(&problem, &spec(2), Some(&condition), &mut port);
        assert_eq!(report.end, RunEnd::Exhausted);
        // Skips count accepted solutions only.
        assert_eq!(port.solutions(), even[2..].to_vec());
        assert_eq!(report.found, even.len() as u64);
        assert!(condition.0.load(std::sync::atomic::Ordering::SeqCst) > 0);
    }

    #[test]
    fn limits_stop_the_run_and_say_which() {
        let problem = queens(8);
        let all = unsplit(&problem);
        let mut port = Script::default();
        let limited = RunSpec {
            limit: Some(7),
            ..spec(3)
        };
        let report = run(&problem, &limited, None, &mut port);
        assert_eq!(report.end, RunEnd::Stopped(Stop::SolutionLimit));
        assert_eq!(port.solutions(), all[3..10].to_vec());
        let nodes = RunSpec {
            max_nodes: Some(100),
            ..spec(0)
        };
        let report = run(&problem, &nodes, None, &mut Script::default());
        assert_eq!(report.end, RunEnd::Stopped(Stop::NodeLimit));
        assert_eq!(report.stats.nodes, 100);
        let report = run(
            &problem,
            &RunSpec {
                limit: Some(0),
                ..spec(0)
            },
            None,
            &mut Script::default(),
        );
        assert_eq!(report.end, RunEnd::Stopped(Stop::SolutionLimit));
    }

    #[test]
    fn a_refused_batch_is_kept_and_the_run_checkpoints() {
        let problem = queens(8);
        let all = unsplit(&problem);
        let mut port = Script {
            refuse: 1,
            ..Script::default()
        };
        let report = run(&problem, &spec(0), None, &mut port);
        let RunEnd::Checkpointed(remaining) = report.end else {
            panic!("expected a checkpoint, got {:?}", report.end)
        };
        assert_eq!(port.forced, 1, "the kept batch goes out when the run ends");
        port.check_indices(0);
        let mut got = port.solutions();
        got.extend(solutions_of(&problem, remaining.iter()));
        assert_eq!(got, all, "the kept batch, then the rest, in order");
        assert!(port.batches.iter().all(|b| b.count <= 3));
    }

    #[test]
    fn counts_only_deliver_counts() {
        let problem = queens(8);
        let mut port = Script::default();
        let counts = RunSpec {
            want_solutions: false,
            batch_size: usize::MAX,
            ..spec(5)
        };
        let report = run(&problem, &counts, None, &mut port);
        assert_eq!(report.end, RunEnd::Exhausted);
        assert!(port.batches.iter().all(|b| b.solutions.is_empty()));
        port.check_indices(5);
        assert_eq!(port.batches.iter().map(|b| b.count).sum::<u64>(), 87);
    }

    /// Panics after a number of partial checks.
    struct Bomb(std::sync::atomic::AtomicU64);
    impl SideCondition for Bomb {
        fn accept_partial(&self, _options: &[usize]) -> bool {
            if self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                panic!("a bug in a side condition");
            }
            true
        }
        fn prunes(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_panic_fails_the_run_and_leaves_the_solver_usable() {
        let problem = queens(8);
        let mut solver = Solver::new(&problem);
        let bomb = Bomb(std::sync::atomic::AtomicU64::new(500));
        let mut port = Script::default();
        let report = run_task(
            &mut solver,
            &problem,
            &Task::root(),
            &spec(0),
            Some(&bomb),
            &mut port,
        );
        let RunEnd::Failed(message) = report.end else {
            panic!("expected a failure, got {:?}", report.end)
        };
        assert!(message.contains("a bug in a side condition"), "{message}");
        let mut port = Script::default();
        let report = run_task(
            &mut solver,
            &problem,
            &Task::root(),
            &spec(0),
            None,
            &mut port,
        );
        assert_eq!(report.end, RunEnd::Exhausted);
        assert_eq!(port.solutions(), unsplit(&problem));
        // A task that names no node fails too, with its path.
        let bad = Task {
            path: vec![9, 9],
            from: 0,
            to: ALL,
            weight: 1.0,
            cuts: Vec::new(),
        };
        let report = run_task(
            &mut solver,
            &problem,
            &bad,
            &spec(0),
            None,
            &mut Script::default(),
        );
        assert!(
            matches!(report.end, RunEnd::Failed(ref m) if m.contains("[9, 9]")),
            "{:?}",
            report.end
        );
    }
}
