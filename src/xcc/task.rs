//! Subtree tasks: the unit of work that searches are cut into.
//!
//! The search tree is deterministic: at every node the engine chooses the
//! branching item by the same rule, and the alternatives at that node come in
//! the same order. A node is therefore named by the path of alternative
//! positions that leads to it from the root, and a set of sibling subtrees by
//! a range of positions at the node below the path. That is all a task needs
//! to carry; any worker holding the problem can rebuild the state by replaying
//! the path.
//!
//! An *alternative* (a [`Decision`]) is a position, counted from 0:
//! - Algorithm C (and X): the k-th option in the list of the branching item,
//!   in list order at the moment the item was chosen (Knuth's "k of d", minus 1);
//! - Algorithm M: the k-th move of Knuth's DLX3 at that node; the moves are the
//!   options of the item's list in order (each tried one is then tweaked away),
//!   possibly followed by the null move "use no more options for this item",
//!   which is always the last alternative.

use serde::{Deserialize, Serialize};

/// Position of an alternative at one level of the search tree.
pub type Decision = u32;

/// Marks a range that runs to the last alternative, whatever their number.
pub const ALL: Decision = Decision::MAX;

/// A set of sibling subtrees of the search tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The alternative taken at each level from the root down to the node
    /// whose alternatives this task explores.
    pub path: Vec<Decision>,
    /// First alternative of the range, at level `path.len()`.
    pub from: Decision,
    /// One past the last alternative of the range; [`ALL`] for "to the end".
    pub to: Decision,
    /// This task's share of the whole tree, by Knuth's uniform-tree estimate:
    /// the root task weighs 1, and a node's weight is split evenly among its
    /// alternatives. The weights of the tasks a search is cut into sum to the
    /// weight of the original task.
    pub weight: f64,
    /// Parts of this subtree given away while it was run before: each cut
    /// ends the range of alternatives at one node below the task's path.
    /// A task is only run again (with cuts) after a worker was lost; the
    /// cuts then keep it from repeating work that now belongs to the tasks
    /// it gave away. Empty on every task a fresh search makes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<Cut>,
}

/// The end of a range of alternatives at one node: at the node reached by
/// `path`, the alternatives from `end` on are not part of the task.
///
/// A give-away always takes the upper part of a node's untried range, so the
/// given-away task `[from, to)` at `path` is recorded as the cut
/// `(path, from)` on the task that gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    pub path: Vec<Decision>,
    pub end: Decision,
}

impl Cut {
    /// The cut a give-away of `given` leaves on the task that gave it.
    pub fn of_given(given: &Task) -> Cut {
        Cut {
            path: given.path.clone(),
            end: given.from,
        }
    }

    /// The cuts of `cuts` that lie inside the subtrees `[from, to)` below
    /// `path`: those a task made from there inherits.
    pub fn all_within(cuts: &[Cut], path: &[Decision], from: Decision, to: Decision) -> Vec<Cut> {
        cuts.iter()
            .filter(|cut| cut.within(path, from, to))
            .cloned()
            .collect()
    }

    /// Whether this cut lies inside the subtrees `[from, to)` below `path`.
    pub fn within(&self, path: &[Decision], from: Decision, to: Decision) -> bool {
        self.path.starts_with(path)
            && (self.path.len() == path.len() || (from..to).contains(&self.path[path.len()]))
    }
}

impl Task {
    /// The whole search tree.
    pub fn root() -> Task {
        Task {
            path: Vec::new(),
            from: 0,
            to: ALL,
            weight: 1.0,
            cuts: Vec::new(),
        }
    }

    /// The level at which this task's range lies.
    pub fn level(&self) -> usize {
        self.path.len()
    }
}

impl Default for Task {
    fn default() -> Self {
        Task::root()
    }
}
