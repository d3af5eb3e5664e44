//! The part of the search tree a task owns, to check that a solution an
//! untrusted run reports belongs to its task (Algorithms X, C and M).
//!
//! A valid solution from *another* task's part of the tree would be
//! delivered twice (once by each task) if it were taken: checking that it is
//! a solution is not enough. The engine tells what a path leads to
//! ([`Solver::describe`]); a solution lies below a node exactly when it
//! holds every option taken on the way and none passed over (Algorithm M's
//! moves before the path's), and its move at the node is in the task's
//! range, and not in a range given away (a cut). Its move is the position
//! of its option among the node's alternatives (X and C: it holds exactly
//! one), or for Algorithm M of the first of them it holds, or the null move
//! after them when it holds none. Each check costs a few lookups; building
//! a region replays the task's path and each cut's once.

use crate::xcc::verifier::OptionIndex;
use crate::xcc::{Cut, Decision, Solver, Task, TaskError, ALL};

/// One node and a range of its moves.
#[derive(Debug)]
struct Side {
    /// The options taken to reach the node, ascending.
    taken: Vec<usize>,
    /// The options passed over on the way (Algorithm M), ascending.
    passed: Vec<usize>,
    /// Each alternative of the node and its position, by option: a
    /// binary search finds a solution's option among them (a hash map's
    /// hashing cost more, checked for each option of every solution).
    positions: Vec<(usize, Decision)>,
    /// The node's moves: positions `0..degree`.
    degree: Decision,
    /// The node is a solution: only the solution of `taken` lies below it,
    /// as its one move (position 0).
    solution: bool,
    from: Decision,
    to: Decision,
}

impl Side {
    fn new(
        solver: &mut Solver,
        path: &[Decision],
        from: Decision,
        to: Decision,
    ) -> Result<Side, TaskError> {
        let node = solver.describe(path)?;
        let mut taken = node.taken;
        taken.sort_unstable();
        let mut passed = node.passed;
        passed.sort_unstable();
        let mut positions: Vec<(usize, Decision)> = node
            .alternatives
            .iter()
            .enumerate()
            .map(|(k, &o)| (o, k as Decision))
            .collect();
        positions.sort_unstable();
        Ok(Side {
            taken,
            passed,
            positions,
            degree: node.degree,
            solution: node.solution,
            from,
            to,
        })
    }

    /// Whether `solution` (ascending) lies below this node, in its range.
    fn holds<O: OptionIndex>(&self, solution: &[O]) -> bool {
        if !subset(&self.taken, solution) || meets(&self.passed, solution) {
            return false;
        }
        if self.solution {
            // The node's one "move" is itself, at position 0.
            return solution.len() == self.taken.len() && self.from == 0 && self.to > 0;
        }
        // The first alternative it holds in the search's order (for X and
        // C its only one; Algorithm M's lists are in option order, so the
        // first it holds is also its smallest, but the rule is the order);
        // holding none is the move after them (the null move of Algorithm
        // M; no move at all for X and C).
        let at = self
            .first_held(solution)
            .unwrap_or(self.positions.len() as Decision);
        at < self.degree && self.from <= at && at < self.to
    }

    /// The smallest position among the node's alternatives that
    /// `solution` holds. Both lists are ascending: one merge walk, or a
    /// binary search per option of the solution when the node has many
    /// more alternatives than the solution has options. (Checked for every
    /// solution a worker streams: a binary search per option cost a third
    /// of the coordinator's checking.)
    fn first_held<O: OptionIndex>(&self, solution: &[O]) -> Option<Decision> {
        let positions = &self.positions;
        if positions.len() > 8 * solution.len() {
            return solution
                .iter()
                .filter_map(|o| {
                    let at = positions
                        .binary_search_by(|&(p, _)| p.cmp(&o.index()))
                        .ok()?;
                    Some(positions[at].1)
                })
                .min();
        }
        let (mut i, mut j) = (0, 0);
        let mut first: Option<Decision> = None;
        while i < solution.len() && j < positions.len() {
            let (o, (p, position)) = (solution[i].index(), positions[j]);
            match o.cmp(&p) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    first = Some(first.map_or(position, |f| f.min(position)));
                    i += 1;
                    j += 1;
                }
            }
        }
        first
    }
}

/// Whether every option of `part` (ascending) is in `solution` (ascending).
fn subset<O: OptionIndex>(part: &[usize], solution: &[O]) -> bool {
    let mut rest = solution.iter().map(|o| o.index());
    part.iter()
        .all(|&o| rest.by_ref().find(|&s| s >= o) == Some(o))
}

/// Whether some option of `options` (ascending) is in `solution` (ascending).
fn meets<O: OptionIndex>(options: &[usize], solution: &[O]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < options.len() && j < solution.len() {
        match options[i].cmp(&solution[j].index()) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
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
    /// The region of `task` (with its cuts). An error when the task names
    /// no node.
    pub fn new(solver: &mut Solver, task: &Task) -> Result<Region, TaskError> {
        let mut region = Region {
            own: Side::new(solver, &task.path, task.from, task.to)?,
            cuts: Vec::new(),
            known: 0,
        };
        region.cut(solver, &task.cuts)?;
        Ok(region)
    }

    /// Takes the cuts of `cuts` that are new since the last call (the task's
    /// cuts only grow).
    pub fn cut(&mut self, solver: &mut Solver, cuts: &[Cut]) -> Result<(), TaskError> {
        for cut in &cuts[self.known.min(cuts.len())..] {
            self.cuts.push(Side::new(solver, &cut.path, cut.end, ALL)?);
        }
        self.known = cuts.len();
        Ok(())
    }

    /// Whether `solution` (option indices, ascending) belongs to the task.
    pub fn contains<O: OptionIndex>(&self, solution: &[O]) -> bool {
        self.own.holds(solution) && !self.cuts.iter().any(|cut| cut.holds(solution))
    }
}

/// Checks that `task` names a node of the tree whose moves reach
/// `task.to`: a task given away or handed back by an untrusted run must be
/// one a worker can run.
pub fn check_task(solver: &mut Solver, task: &Task) -> Result<(), TaskError> {
    let node = solver.describe(&task.path)?;
    if task.to != ALL && task.to > node.degree {
        return Err(TaskError {
            level: task.path.len(),
            position: task.to - 1,
        });
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
        let region = Region::new(&mut solver, &task).unwrap();
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

    /// Algorithm M on both engines: solutions that hold several options of
    /// a node's item (`a` twice, `b` up to twice) lie below it by the first
    /// they hold; the null move holds none. Every range of every node to
    /// depth 3, with a cut of its first child, holds its task's solutions
    /// and no other.
    #[test]
    fn a_region_of_algorithm_m_holds_its_tasks_solutions_and_no_other() {
        use crate::xcc::{dlx_format, Engine};
        let problem = dlx_format::parse("a 2:2|b 0:2|c\na b\nb\nb c\na c\nc\nb c\na\n").unwrap();
        for engine in [Engine::Links, Engine::Cells] {
            let mut solver = Solver::with_engine(&problem, engine).unwrap();
            let mut all = solutions(&mut solver, &Task::root());
            for s in &mut all {
                s.sort_unstable();
            }
            assert!(all.len() > 3, "{engine:?}: {all:?}");
            let mut paths = vec![Vec::new()];
            let mut checked = 0;
            while let Some(path) = paths.pop() {
                let node = solver.describe(&path).unwrap();
                for from in 0..node.degree {
                    let cuts = if path.len() < 3 && from + 1 < node.degree {
                        vec![Cut {
                            path: [path.clone(), vec![from]].concat(),
                            end: 1,
                        }]
                    } else {
                        Vec::new()
                    };
                    for cuts in [Vec::new(), cuts] {
                        let task = Task {
                            path: path.clone(),
                            from,
                            to: ALL,
                            weight: 1.0,
                            cuts,
                        };
                        let Ok(mut mine) = solver
                            .run(&task, &RunConfig::default(), &mut Collect::default())
                            .map(|_| solutions(&mut solver, &task))
                        else {
                            continue; // a cut below a move that fails
                        };
                        for s in &mut mine {
                            s.sort_unstable();
                        }
                        let region = Region::new(&mut solver, &task).unwrap();
                        for solution in &all {
                            assert_eq!(
                                region.contains(solution),
                                mine.contains(solution),
                                "{engine:?} {task:?} {solution:?}"
                            );
                        }
                        checked += 1;
                    }
                    if path.len() < 3 {
                        paths.push([path.clone(), vec![from]].concat());
                    }
                }
            }
            assert!(checked > 10, "{engine:?}: {checked}");
        }
    }

    /// The merge walks agree with the plain definitions, on every small
    /// pair of ascending lists, and both ways of finding a node's first
    /// held alternative agree.
    #[test]
    fn the_merge_walks_agree_with_their_definitions() {
        let lists: Vec<Vec<usize>> = (0u32..256)
            .map(|bits| (0..8).filter(|k| bits & (1 << k) != 0).collect())
            .collect();
        for part in &lists {
            for solution in &lists {
                let plain_subset = part.iter().all(|o| solution.contains(o));
                let plain_meets = part.iter().any(|o| solution.contains(o));
                assert_eq!(
                    subset(part, solution),
                    plain_subset,
                    "{part:?} {solution:?}"
                );
                assert_eq!(meets(part, solution), plain_meets, "{part:?} {solution:?}");
            }
        }
        // A node with many alternatives (the binary searches) and with few
        // (the merge), positions in a shuffled order.
        for alternatives in [3usize, 40, 200] {
            let mut positions: Vec<(usize, Decision)> = (0..alternatives)
                .map(|k| (3 * k + 1, ((k * 7919) % alternatives) as Decision))
                .collect();
            positions.sort_unstable();
            let side = Side {
                taken: Vec::new(),
                passed: Vec::new(),
                positions: positions.clone(),
                degree: alternatives as Decision,
                solution: false,
                from: 0,
                to: ALL,
            };
            for start in 0..12 {
                let solution: Vec<usize> = (start..start + 5).map(|k| 2 * k).collect();
                let plain = solution
                    .iter()
                    .filter_map(|o| positions.iter().find(|(p, _)| p == o).map(|&(_, d)| d))
                    .min();
                assert_eq!(
                    side.first_held(&solution),
                    plain,
                    "{alternatives} {solution:?}"
                );
            }
        }
    }
}
