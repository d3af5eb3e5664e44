//! The part of the search tree a task owns, to check that a solution an
//! untrusted run reports belongs to its task (Algorithms X and C).
//!
//! A valid solution from *another* task's part of the tree would be
//! delivered twice (once by each task) if it were taken: checking that it is
//! a solution is not enough. The engine tells what a path leads to
//! ([`Solver::describe`]); a solution lies below a node exactly when it
//! holds every option taken on the way and its option among the node's
//! alternatives is in the task's range, and not in a range given away
//! (a cut). Each check costs a few lookups; building a region replays the
//! task's path and each cut's once.

use crate::xcc::verifier::OptionIndex;
use crate::xcc::{Cut, Decision, Solver, Task, TaskError, ALL};

/// One node and a range of its alternatives.
#[derive(Debug)]
struct Side {
    /// The options taken to reach the node, ascending.
    taken: Vec<usize>,
    /// Each alternative of the node and its position, by option: a
    /// binary search finds a solution's option among them (a hash map's
    /// hashing cost more, checked for each option of every solution).
    positions: Vec<(usize, Decision)>,
    from: Decision,
    to: Decision,
}

impl Side {
    fn new(
        solver: &mut Solver,
        path: &[Decision],
        from: Decision,
        to: Decision,
    ) -> Result<Option<Side>, TaskError> {
        let Some(node) = solver.describe(path)? else {
            return Ok(None);
        };
        let mut taken = node.taken;
        taken.sort_unstable();
        let mut positions: Vec<(usize, Decision)> = node
            .alternatives
            .iter()
            .enumerate()
            .map(|(k, &o)| (o, k as Decision))
            .collect();
        positions.sort_unstable();
        Ok(Some(Side {
            taken,
            positions,
            from,
            to,
        }))
    }

    /// Whether `solution` (ascending) lies below this node, in its range.
    fn holds<O: OptionIndex>(&self, solution: &[O]) -> bool {
        let has = |o: usize| solution.binary_search_by(|s| s.index().cmp(&o)).is_ok();
        if !self.taken.iter().all(|&o| has(o)) {
            return false;
        }
        if self.positions.is_empty() {
            // The node is a solution: this one.
            return solution.len() == self.taken.len();
        }
        solution
            .iter()
            .find_map(|o| {
                let at = self
                    .positions
                    .binary_search_by(|&(p, _)| p.cmp(&o.index()))
                    .ok()?;
                Some(self.positions[at].1)
            })
            .is_some_and(|p| self.from <= p && p < self.to)
    }
}

/// The solutions a task may report.
#[derive(Debug)]
pub struct Region {
    own: Side,
    cuts: Vec<Side>,
    /// How many of the task's cuts are in `cuts`.
    known: usize,
}

impl Region {
    /// The region of `task` (with its cuts), or `None` for a problem of
    /// Algorithm M. An error when the task names no node.
    pub fn new(solver: &mut Solver, task: &Task) -> Result<Option<Region>, TaskError> {
        let Some(own) = Side::new(solver, &task.path, task.from, task.to)? else {
            return Ok(None);
        };
        let mut region = Region {
            own,
            cuts: Vec::new(),
            known: 0,
        };
        region.cut(solver, &task.cuts)?;
        Ok(Some(region))
    }

    /// Takes the cuts of `cuts` that are new since the last call (the task's
    /// cuts only grow).
    pub fn cut(&mut self, solver: &mut Solver, cuts: &[Cut]) -> Result<(), TaskError> {
        for cut in &cuts[self.known.min(cuts.len())..] {
            if let Some(side) = Side::new(solver, &cut.path, cut.end, ALL)? {
                self.cuts.push(side);
            }
        }
        self.known = cuts.len();
        Ok(())
    }

    /// Whether `solution` (option indices, ascending) belongs to the task.
    pub fn contains<O: OptionIndex>(&self, solution: &[O]) -> bool {
        self.own.holds(solution) && !self.cuts.iter().any(|cut| cut.holds(solution))
    }
}

/// Checks that `task` names a node of the tree whose alternatives reach
/// `task.to` (Algorithms X and C; anything goes for M): a task given away or
/// handed back by an untrusted run must be one a worker can run.
pub fn check_task(solver: &mut Solver, task: &Task) -> Result<(), TaskError> {
    if let Some(node) = solver.describe(&task.path)? {
        let degree = node.alternatives.len() as Decision;
        if task.to != ALL && task.to > degree {
            return Err(TaskError {
                level: task.path.len(),
                position: task.to - 1,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::testing::queens;
    use crate::xcc::{Collect, RunConfig};

    fn solutions(solver: &mut Solver, task: &Task) -> Vec<Vec<usize>> {
        let mut c = Collect::default();
        solver.run(task, &RunConfig::default(), &mut c).unwrap();
        c.solutions
    }

    #[test]
    fn a_region_holds_its_tasks_solutions_and_no_other() {
        let problem = queens(8);
        let mut solver = Solver::new(&problem);
        let all = solutions(&mut solver, &Task::root());
        // A task at depth 2, with a cut below it.
        let task = Task {
            path: vec![1, 2],
            from: 0,
            to: ALL,
            weight: 1.0,
            cuts: vec![Cut {
                path: vec![1, 2, 0],
                end: 1,
            }],
        };
        let mine = solutions(&mut solver, &task);
        assert!(!mine.is_empty() && mine.len() < all.len());
        let region = Region::new(&mut solver, &task).unwrap().unwrap();
        for solution in &all {
            assert_eq!(
                region.contains(solution),
                mine.contains(solution),
                "{solution:?}"
            );
        }
        assert!(check_task(&mut solver, &task).is_ok());
        let past = Task {
            to: 99,
            ..task.clone()
        };
        assert!(check_task(&mut solver, &past).is_err());
        let nowhere = Task {
            path: vec![1, 2, 40],
            ..task
        };
        assert!(Region::new(&mut solver, &nowhere).is_err());
        // Describing left the solver as it was.
        assert_eq!(solutions(&mut solver, &Task::root()), all);
    }
}
