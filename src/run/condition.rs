//! Conditions on solutions that exact cover cannot express.

/// A condition that solutions must satisfy beyond the XCC problem's own
/// (puzzles: white cells connected, a single loop). Encoded puzzles
/// implement it; [`super::run_task`] applies it wherever a task runs.
///
/// Both checks must be deterministic functions of the options: a task's
/// solutions must come in the same order on every run, on every machine.
pub trait SideCondition: Send + Sync {
    /// Whether a complete XCC solution (option indices, ascending) counts.
    fn accept(&self, _options: &[usize]) -> bool {
        true
    }
    /// Whether a partial solution (the options chosen so far, ascending)
    /// may still extend to an accepted one; `false` prunes its subtree. It
    /// must never prune a subtree holding an accepted solution.
    fn accept_partial(&self, _options: &[usize]) -> bool {
        true
    }
    /// Whether [`Self::accept_partial`] is worth calling at every node.
    fn prunes(&self) -> bool {
        false
    }
    /// Whether either check can say no at all: when not, the XCC problem
    /// alone defines the solutions and nothing needs checking.
    fn restricts(&self) -> bool {
        self.prunes()
    }
    /// Whether [`Self::accept`] can reject a complete solution of the XCC
    /// problem. When not (a condition that only prunes branches that cannot
    /// complete, as hidato's), the XCC problem alone defines the solutions,
    /// and a memoized count, which cannot apply a condition, is exact
    /// without it.
    fn filters(&self) -> bool {
        self.restricts()
    }
}
