//! Whether memoizing pays: the judgement a memoized count makes, in stages,
//! when asked to ([`super::MemoConfig::probe`]), and the [`Verdict`] it
//! gives when it does not pay (the caller then counts with the plain
//! search from the root).
//!
//! A memoized node costs more than a plain one (its lookup, and a dance that
//! keeps the signature up to date), and what it buys is the subtrees its
//! hits stand for. So the search keeps, besides DLX6's figures:
//!
//! - per cache entry, the nodes of its state's subtree *in the plain tree*
//!   (the memoized subtree's nodes plus what its own hits stood for), so a
//!   hit adds to `saved` what it replaced; `nodes + saved` is then exactly
//!   the nodes the search without cache (DLX6's tree, unmemoized) would have
//!   visited by now: the *plain nodes covered*;
//! - per level, its branching degree and the alternative it is at, which
//!   estimate the fraction `f` of the plain tree covered (the classic
//!   progress estimate: alternative `i` of `d` at a level whose ancestors
//!   had degrees `d_1 .. d_l` stands for `i / (d d_1 .. d_l)` of the tree
//!   done), hence the plain tree's size, `P = covered / f`.
//!
//! At nodes 256, 1024, 4096, ... (each stage four times the last) it
//! compares the cost of the memoized nodes of the last stage with the plain
//! nodes they covered ([`memo_node_cost`]): that ratio `r` projects the
//! rest. Going on costs `r` times the plain nodes left, `P - covered`;
//! falling back costs the whole plain tree `P` again. It falls back when
//! going on is projected past 1.2 times the plain count in all (what was
//! spent included) and falling back is projected cheaper than going on.
//! Where states repeat, hits soon stand for large subtrees (domino 8x8: at
//! 1024 nodes the covered plain nodes are already many times the memoized
//! ones) and `r` falls as the cache fills; where they rarely do (queens,
//! langford, pentominoes) hits stand for a node or two and `r` stays near
//! the memoized node's cost. Late in a search falling back cannot pay (the
//! plain count would start again), so a search that is mostly done goes
//! on.

/// The first stage's node count; each later stage is four times the last.
/// Early, because a count that falls back has spent its memoized nodes for
/// nothing, and small trees are common (queens8's plain tree is 1223 nodes:
/// judged at 1024, as the hit-rate probe before this did, the cache had
/// already cost more than 1.2 times the plain count); not earlier, because
/// the first hits need a few finished subtrees to meet again (latin5 is
/// projected at 1.03 at 256 nodes, 0.84 at 1024). Four times, so that the
/// judgements are few (a handful in a billion nodes) and each one's window,
/// the nodes since the last, is three quarters of the search so far: the
/// rate it projects is recent, yet not a handful of nodes.
pub const FIRST_STAGE: u64 = 256;

/// The most a memoized count may be projected to cost, against the plain
/// count, before it falls back.
const MAX_RATIO: f64 = 1.2;

/// What one memoized node costs in plain nodes of the same tree, at
/// `updates` updates per node: "plain" is the plain count's whole cost (the
/// default engine, whatever its own tree) over the nodes of DLX6's tree
/// without cache. Measured under callgrind, whole searches: on queens and
/// langford (15-20 updates a node) a memoized node costs about 1.5 plain
/// ones (its lookup: hashing the signature, a probe, a new entry); on
/// pentominoes (370 updates a node) about 2.7, the memoized dance costing
/// more per update than the plain engines'. A line through those, capped.
pub fn memo_node_cost(updates: f64) -> f64 {
    (1.45 + updates * 0.003).min(3.0)
}

/// Why a memoized count gave up its cache: the figures of the stage that
/// judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Memoized nodes so far.
    pub nodes: u64,
    /// Lookups that found their state.
    pub lookup_hits: u64,
    /// Plain nodes those nodes covered (hits counted as the subtrees they
    /// stood for).
    pub covered: u64,
    /// The plain tree's estimated size.
    pub plain_tree: u64,
    /// The projected cost of going on, against the plain count, in
    /// thousandths.
    pub projected_permille: u64,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Memoizing does not pay here (its first {} nodes found their state {} times and stood \
             for {} plain nodes of about {}: going on projected at {:.2} times the plain count): \
             counted without it (--faithful keeps DLX6's search).",
            self.nodes,
            self.lookup_hits,
            self.covered,
            self.plain_tree,
            self.projected_permille as f64 / 1000.0
        )
    }
}

/// A level's node: the plain nodes covered when it was entered, its
/// branching degree and the alternative it is at (from 0).
#[derive(Debug, Default, Clone, Copy)]
struct Branch {
    start: u64,
    degree: u32,
    alt: u32,
}

/// The figures a probing search keeps (none when it does not probe).
#[derive(Debug, Default)]
pub(super) struct Tracker {
    /// Per cache entry, the plain nodes of its state's subtree (saturating).
    pub entry_size: Vec<u32>,
    /// Plain nodes the hits stood for beyond their own node.
    pub saved: u64,
    /// Per level, its node's [`Branch`].
    levels: Vec<Branch>,
    /// The node count of the next judgement.
    pub next_stage: u64,
    /// Nodes, plain nodes covered and updates at the last judgement.
    last: (u64, u64, u64),
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker {
            next_stage: FIRST_STAGE,
            ..Tracker::default()
        }
    }

    /// Plain nodes covered, at `nodes` memoized ones.
    #[inline]
    fn covered(&self, nodes: u64) -> u64 {
        nodes.saturating_add(self.saved)
    }

    /// A lookup hit `entry`.
    #[inline]
    pub fn hit(&mut self, entry: u32) {
        let size = self.entry_size[entry as usize];
        self.saved = self.saved.saturating_add(u64::from(size) - 1);
    }

    /// The node at `level` (the `nodes`th) missed its state and branches
    /// `degree` ways: its subtree starts.
    #[inline]
    pub fn enter(&mut self, level: usize, nodes: u64, degree: u32) {
        if level >= self.levels.len() {
            self.levels.resize(level + 1, Branch::default());
        }
        self.levels[level] = Branch {
            start: self.covered(nodes),
            degree: degree.max(1),
            alt: 0,
        };
    }

    /// The node at `level` goes on to its next alternative.
    #[inline]
    pub fn next_alternative(&mut self, level: usize) {
        self.levels[level].alt += 1;
    }

    /// The node at `level`, whose state is `entry`, is done.
    #[inline]
    pub fn done(&mut self, level: usize, entry: u32, nodes: u64) {
        let size = self.covered(nodes) - self.levels[level].start + 1;
        self.entry_size[entry as usize] = u32::try_from(size).unwrap_or(u32::MAX);
    }

    /// The fraction of the plain tree covered, by the levels above `level`
    /// (the node at `level` has not branched yet).
    fn fraction_done(&self, level: usize) -> f64 {
        let (mut done, mut weight) = (0.0, 1.0);
        for b in &self.levels[..level.min(self.levels.len())] {
            let d = f64::from(b.degree);
            done += weight * f64::from(b.alt).min(d) / d;
            weight /= d;
        }
        done
    }

    /// The judgement at a stage (`nodes == next_stage`), at `level`, with
    /// the search's `updates` and `lookup_hits` so far: a verdict when
    /// memoizing does not pay.
    pub fn judge(
        &mut self,
        nodes: u64,
        updates: u64,
        lookup_hits: u64,
        level: usize,
    ) -> Option<Verdict> {
        self.next_stage = self.next_stage.saturating_mul(4);
        let covered = self.covered(nodes);
        let (last_nodes, last_covered, last_updates) = self.last;
        self.last = (nodes, covered, updates);
        let window = (nodes - last_nodes) as f64;
        let window_covered = (covered - last_covered) as f64;
        let per_node = (updates - last_updates) as f64 / window;
        // The last stage's memoized cost per plain node covered.
        let rate = window * memo_node_cost(per_node) / window_covered;
        let cumulative = {
            let per_node = updates as f64 / nodes as f64;
            nodes as f64 * memo_node_cost(per_node) / covered as f64
        };
        let f = self.fraction_done(level);
        let plain = if f > 0.0 {
            (covered as f64 / f).max(covered as f64)
        } else {
            f64::INFINITY
        };
        // Against the plain count: what was spent, then going on or
        // starting again (with no alternative done anywhere yet, the plain
        // tree is taken as endless: going on costs `rate`, starting again
        // nothing more).
        let (going_on, falling_back) = if plain.is_finite() {
            let spent = cumulative * covered as f64;
            let left = plain - covered as f64;
            ((spent + rate * left) / plain, (spent + plain) / plain)
        } else {
            (rate, 1.0)
        };
        let verdict = going_on > MAX_RATIO && falling_back < going_on;
        verdict.then(|| Verdict {
            nodes,
            lookup_hits,
            covered,
            plain_tree: if plain.is_finite() {
                plain as u64
            } else {
                u64::MAX
            },
            projected_permille: if going_on.is_finite() {
                (going_on * 1000.0) as u64
            } else {
                u64::MAX
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tracker at its first stage whose hits stood for nothing, 15
    /// updates a node (a memoized node then costs about 1.5 plain ones), at
    /// a level whose one finished alternative is `done` of `degree`.
    fn judged(done: u32, degree: u32) -> Option<Verdict> {
        let mut track = Tracker::new();
        track.enter(0, 1, degree);
        for _ in 0..done {
            track.next_alternative(0);
        }
        track.judge(FIRST_STAGE, FIRST_STAGE * 15, 0, 1)
    }

    /// Early in a search whose cache does not pay it falls back; late in
    /// it (half the tree done: starting again would cost more than going
    /// on) it goes on, which the hit rate judged at a fixed node did not.
    #[test]
    fn falls_back_early_and_goes_on_late() {
        let verdict = judged(1, 100).expect("early: falls back");
        assert_eq!(verdict.nodes, FIRST_STAGE);
        assert_eq!(verdict.covered, FIRST_STAGE);
        assert_eq!(verdict.plain_tree, FIRST_STAGE * 100);
        assert!(
            (1400..1600).contains(&verdict.projected_permille),
            "{verdict:?}"
        );
        assert_eq!(judged(1, 2), None, "half done: goes on");
        // No alternative done anywhere: the tree is taken as endless.
        assert!(judged(0, 3).is_some());
    }

    /// Hits that stood for large subtrees keep the cache.
    #[test]
    fn hits_that_stand_for_much_keep_the_cache() {
        let mut track = Tracker::new();
        track.enter(0, 1, 100);
        track.next_alternative(0);
        track.entry_size.push(2000);
        track.hit(0);
        assert_eq!(track.judge(FIRST_STAGE, FIRST_STAGE * 15, 1, 1), None);
        assert_eq!(track.next_stage, FIRST_STAGE * 4);
    }
}
