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
}

impl Task {
    /// The whole search tree.
    pub fn root() -> Task {
        Task {
            path: Vec::new(),
            from: 0,
            to: ALL,
            weight: 1.0,
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
