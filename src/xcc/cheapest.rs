//! The k cheapest solutions (Knuth's DLX5): Algorithms X and C on dancing
//! links where every option has a nonnegative cost (`|n` in the DLX text),
//! searching only for solutions cheaper than the k-th best found so far.
//!
//! The search follows DLX5 step for step, so that on the same input it
//! visits the same nodes, makes the same updates and cleansings, and finds
//! the same solutions in the same order (bench/dlx5-reference.tsv):
//!
//! - *Taxes*: each primary item, in input order, is taxed the least net cost
//!   of its options, which is subtracted from all of them. Then every item
//!   has an option of net cost 0 and no net cost is negative; a solution's
//!   cost is its net cost plus the total tax (a constant).
//! - Every item list is sorted by net cost (stably: equal costs keep input
//!   order), so "the options still worth trying" is a prefix of each list.
//! - The *cutoff* is the k-th best cost found so far (infinite before k
//!   solutions are known), kept in DLX5's heap; a solution is found only if it
//!   beats the cutoff, and it then replaces the heap's largest entry.
//! - Covering with a threshold: covering for a choice of net cost so far `c`
//!   hides only the options of net cost below `cutoff - c` (the others can
//!   never be chosen below it, since the cutoff only falls), and uncovering
//!   undoes exactly the same ones, going down the list again.
//! - The item choice: the active primary item with the fewest usable options
//!   (net cost below `cutoff - cost so far`), counted up to `h` = 10 (beyond that
//!   the list's length stands in), ties to the larger least cost, then the
//!   leftmost; an item with no usable option ends the node. A node is
//!   counted when entered, and every solution counts as one more.
//!
//! DLX5 has no multiplicities; a problem with them is refused
//! ([`CheapestError::Multiplicities`]). DLX5's parameters `h` (how far the
//! item choice counts), `z` and `Z` (a lower bound on the cost left, for
//! problems whose options have exactly `z` primary items besides one of
//! each `Z` prefix; off by default) are [`CheapestConfig`]'s.

use super::links::{node_count, Links, Narrow, NodeRepr, Wide, ROOT};
use super::problem::Problem;

/// DLX5's bound on k (`maxk`).
pub const MAX_K: usize = 15000;

/// DLX5's default for `h`: how far down a list the item choice counts.
const LEN_THRESHOLD: usize = 10;

/// An "infinite" cost (DLX5's `infcost`): no sum of costs reaches it.
const INF: u64 = u64::MAX;

/// DLX5's `sortbufsize`: the `z` bound with z > 1 applies only while at
/// most about this many primary items are active.
const SORTBUF_SIZE: i64 = 32;

/// What to look for, and DLX5's search parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheapestConfig {
    /// How many of the cheapest solutions to keep (DLX5's `k`, 1..=MAX_K).
    pub k: usize,
    /// DLX5's `h` (`lenthresh`, default 10): the item choice counts an
    /// item's usable options up to this many, then takes its list's length
    /// as the count.
    pub len_threshold: usize,
    /// DLX5's `z` (`zgiven`, 0: off): every option has exactly this many
    /// primary items besides its `prefixes` ones. With it (or `prefixes`),
    /// a node whose least costs of the active items cannot beat the cutoff
    /// ends at once (DLX5's lower bound; it holds only for such problems).
    pub z: u32,
    /// DLX5's `Z`: at most 7 characters; every option has exactly one
    /// primary item whose name begins with each (as a byte).
    pub prefixes: Vec<u8>,
}

impl CheapestConfig {
    /// The `k` cheapest, with DLX5's default parameters.
    pub fn new(k: usize) -> CheapestConfig {
        CheapestConfig {
            k,
            len_threshold: LEN_THRESHOLD,
            z: 0,
            prefixes: Vec::new(),
        }
    }

    /// Whether DLX5's `z`/`Z` lower bound is on (its `ppgiven`).
    fn bounded(&self) -> bool {
        self.z > 0 || !self.prefixes.is_empty()
    }
}

impl Default for CheapestConfig {
    fn default() -> Self {
        CheapestConfig::new(1)
    }
}

/// DLX5's warnings on reading `problem` with `z`/`Z` set: an option with
/// the wrong number of other primary items, without an item of a prefix,
/// or with two (in DLX5's words and order; empty when neither is set).
pub fn z_warnings(problem: &Problem, config: &CheapestConfig) -> Vec<String> {
    let mut out = Vec::new();
    if !config.bounded() {
        return out;
    }
    for (o, option) in problem.options().iter().enumerate() {
        if problem.is_dropped(o) {
            continue;
        }
        let text = problem.format_option(o);
        let (mut seen, mut others) = (0u32, 0u32);
        for e in option {
            let item = &problem.items()[e.item];
            if !item.is_primary() {
                continue;
            }
            match prefix_index(&config.prefixes, &item.name) {
                Some(r) if seen & (1 << r) != 0 => out.push(format!(
                    "Option has two {} items: {text}",
                    config.prefixes[r] as char
                )),
                Some(r) => seen |= 1 << r,
                None => others += 1,
            }
        }
        if config.z > 0 && others != config.z {
            out.push(format!(
                "Option has {others} non-Z primary items, not {}: {text}",
                config.z
            ));
        }
        for (r, &c) in config.prefixes.iter().enumerate() {
            if seen & (1 << r) == 0 {
                out.push(format!("Option lacks a {} item: {text}", c as char));
            }
        }
    }
    out
}

/// Which of `prefixes` the name begins with.
fn prefix_index(prefixes: &[u8], name: &str) -> Option<usize> {
    let first = *name.as_bytes().first()?;
    prefixes.iter().position(|&c| c == first)
}

/// One solution found, with its cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CostedSolution {
    /// Its number in the order of discovery (1 for the first found).
    pub found: u64,
    /// The sum of its options' costs.
    pub cost: u64,
    /// Input option indices, in the order they were chosen (by level).
    pub options: Vec<usize>,
}

/// DLX5's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CheapestStats {
    /// Solutions found (each cheaper than the k-th best before it): DLX5's
    /// "Altogether N solutions".
    pub solutions: u64,
    /// Search-tree nodes, a solution counted as a node (as DLX5 does).
    pub nodes: u64,
    pub updates: u64,
    pub cleansings: u64,
    /// The taxes of all items together.
    pub total_tax: u64,
}

/// What a search for the cheapest solutions found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheapestOutcome {
    pub stats: CheapestStats,
    /// The k cheapest solutions (fewer if there are fewer), in the order
    /// they were found. Among solutions that tie at the k-th cost, the ones
    /// DLX5's heap keeps.
    pub solutions: Vec<CostedSolution>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheapestError {
    #[error("the cheapest-solutions search does not handle multiplicities (items with bounds other than 1, as in DLX3), nor does DLX5")]
    Multiplicities,
    #[error("k must be between 1 and {MAX_K} (as in DLX5), not {0}")]
    KOutOfRange(usize),
    /// DLX5's check of `z` and `Z` before it searches: the primary items
    /// must come in groups of `z` + the number of prefixes.
    #[error("there are {primary} primary items, but z={z} and Z={prefixes}: not a multiple of {group} (DLX5 does not search then)")]
    ZMismatch {
        primary: usize,
        z: u32,
        prefixes: String,
        group: usize,
    },
    #[error("Z takes at most 7 prefix characters (as in DLX5), not {0}")]
    TooManyPrefixes(usize),
    /// The poll of [`cheapest_polled`] answered false: the solutions kept
    /// so far need not be the cheapest, so none are given.
    #[error("the cheapest-solutions search was stopped after {nodes} search nodes")]
    Stopped { nodes: u64 },
}

/// Finds the `config.k` cheapest solutions of `problem` as DLX5 does.
pub fn cheapest(
    problem: &Problem,
    config: &CheapestConfig,
) -> Result<CheapestOutcome, CheapestError> {
    cheapest_with(problem, config, |_| {})
}

/// Like [`cheapest`], also showing `found` every solution as it is found
/// (DLX5 prints each one with `m1`), evicted ones included.
pub fn cheapest_with(
    problem: &Problem,
    config: &CheapestConfig,
    found: impl FnMut(&CostedSolution),
) -> Result<CheapestOutcome, CheapestError> {
    cheapest_polled(problem, config, u64::MAX, found, &mut |_| true)
}

/// Like [`cheapest_with`], also calling `poll` with the figures so far
/// every `interval` nodes: the search stops ([`CheapestError::Stopped`])
/// when it answers false. This is how a pool's port (a stop, a deadline, a
/// node budget) steers the search; polling changes none of DLX5's figures.
pub fn cheapest_polled(
    problem: &Problem,
    config: &CheapestConfig,
    interval: u64,
    found: impl FnMut(&CostedSolution),
    poll: &mut dyn FnMut(&CheapestStats) -> bool,
) -> Result<CheapestOutcome, CheapestError> {
    if problem.has_multiplicities() {
        return Err(CheapestError::Multiplicities);
    }
    if config.k == 0 || config.k > MAX_K {
        return Err(CheapestError::KOutOfRange(config.k));
    }
    if config.prefixes.len() > 7 {
        return Err(CheapestError::TooManyPrefixes(config.prefixes.len()));
    }
    if config.z > 0 {
        let group = config.z as usize + config.prefixes.len();
        let primary = problem.primary_count();
        if !primary.is_multiple_of(group) {
            return Err(CheapestError::ZMismatch {
                primary,
                z: config.z,
                prefixes: String::from_utf8_lossy(&config.prefixes).into_owned(),
                group,
            });
        }
    }
    let narrow = Narrow::fits(
        node_count(problem),
        problem.items().len(),
        problem.colors().len(),
    );
    let interval = interval.max(1);
    if narrow {
        Search::<Narrow>::new(problem, config).run(found, interval, poll)
    } else {
        Search::<Wide>::new(problem, config).run(found, interval, poll)
    }
}

/// An entry of DLX5's heap of the k best net costs: a cost and the slot
/// in `Search::kept` of its solution (`NONE` for the initial infinities and
/// the sentinel 0 at index k).
#[derive(Debug, Clone, Copy)]
struct Best {
    cost: u64,
    slot: u32,
}

const NONE: u32 = u32::MAX;

struct Search<N: NodeRepr> {
    links: Links<N>,
    /// The net cost of each node's option (0 for headers and spacers).
    cost: Vec<u64>,
    k: usize,
    /// `bestcost[0..k]`, a max-heap, and `bestcost[k] = 0`.
    heap: Vec<Best>,
    kept: Vec<CostedSolution>,
    cutoff: u64,
    stats: CheapestStats,
    /// DLX5's `lenthresh`.
    len_threshold: usize,
    /// DLX5's `zgiven`, and whether `z` or `Z` was given (`ppgiven`).
    z: i64,
    bounded: bool,
    /// Whether `Z` was given (`ppgiven & 0xff`), and how many prefixes.
    prefixes: usize,
    /// For each primary item (by number), the index of the `Z` prefix its
    /// name begins with, or `NO_PREFIX`.
    prefix_of: Vec<u8>,
    /// DLX5's `cumcost` (one per prefix) and `sortbuf` (indexed from its
    /// end, as DLX5 does; as long as the active primary items, so that it
    /// never overflows where DLX5's 32 would).
    cumcost: Vec<u64>,
    sortbuf: Vec<u64>,
}

const NO_PREFIX: u8 = u8::MAX;

impl<N: NodeRepr> Search<N> {
    fn new(problem: &Problem, config: &CheapestConfig) -> Search<N> {
        let k = config.k;
        let mut links = Links::<N>::new(problem);
        let total = links.nd.len();
        let mut net: Vec<u64> = (0..problem.options().len())
            .map(|o| problem.cost(o))
            .collect();
        let option_of = |node: u32, links: &Links<N>| links.node_option[node as usize] as usize;
        // DLX5's "Assign taxes", primary items in order.
        let mut total_tax = 0;
        for item in 1..links.second {
            let mut minc = INF;
            let mut p = links.nd[item as usize].down();
            while p != item {
                minc = minc.min(net[option_of(p, &links)]);
                p = links.nd[p as usize].down();
            }
            if minc != INF && minc > 0 {
                total_tax += minc;
                let mut p = links.nd[item as usize].down();
                while p != item {
                    net[option_of(p, &links)] -= minc;
                    p = links.nd[p as usize].down();
                }
            }
        }
        let mut cost = vec![0u64; total];
        for (node, c) in cost.iter_mut().enumerate() {
            let option = links.node_option[node];
            if option != u32::MAX {
                *c = net[option as usize];
            }
        }
        // DLX5's "Sort the item lists": every list, by net cost, stably.
        let mut list = Vec::new();
        for item in 1..links.last_itm {
            list.clear();
            let mut p = links.nd[item as usize].down();
            while p != item {
                list.push(p);
                p = links.nd[p as usize].down();
            }
            list.sort_by_key(|&p| cost[p as usize]);
            let mut above = item;
            for &p in &list {
                links.nd[above as usize].set_down(p);
                links.nd[p as usize].set_up(above);
                above = p;
            }
            links.nd[above as usize].set_down(item);
            links.nd[item as usize].set_up(above);
        }
        let mut heap = vec![
            Best {
                cost: INF,
                slot: NONE
            };
            k + 1
        ];
        heap[k].cost = 0;
        // Primary items are numbered 1.. in input order.
        let mut prefix_of = vec![NO_PREFIX];
        prefix_of.extend(
            problem
                .items()
                .iter()
                .filter(|i| i.is_primary())
                .map(|i| prefix_index(&config.prefixes, &i.name).map_or(NO_PREFIX, |r| r as u8)),
        );
        let sortbuf = vec![0u64; (links.second as usize + 1).max(SORTBUF_SIZE as usize)];
        Search {
            links,
            cost,
            k,
            heap,
            kept: Vec::new(),
            cutoff: INF,
            stats: CheapestStats {
                total_tax,
                ..CheapestStats::default()
            },
            len_threshold: config.len_threshold,
            z: config.z as i64,
            bounded: config.bounded(),
            prefixes: config.prefixes.len(),
            prefix_of,
            cumcost: vec![0; config.prefixes.len()],
            sortbuf,
        }
    }

    #[inline(always)]
    fn cost(&self, node: u32) -> u64 {
        self.cost[node as usize]
    }

    /// DLX5's `cover`: deactivates `c` and hides the options of its list
    /// whose net cost is below `thresh`.
    fn cover(&mut self, c: u32, thresh: u64) {
        self.links.deactivate(c);
        let mut updates = 1;
        let mut rr = self.links.nd[c as usize].down();
        while rr >= self.links.last_itm && self.cost(rr) < thresh {
            updates += self.links.hide::<true>(rr);
            rr = self.links.nd[rr as usize].down();
        }
        self.links.updates += updates;
    }

    /// Undoes [`Self::cover`] with the same threshold, going down the list
    /// again (Knuth: no harm is done by processing the options in the same
    /// order, and going down is what the threshold needs).
    fn uncover(&mut self, c: u32, thresh: u64) {
        let mut rr = self.links.nd[c as usize].down();
        while rr >= self.links.last_itm && self.cost(rr) < thresh {
            self.links.unhide::<true>(rr);
            rr = self.links.nd[rr as usize].down();
        }
        self.links.reactivate(c);
    }

    /// DLX5's `purify` of the secondary item of node `p`, below `thresh`.
    fn purify(&mut self, p: u32, thresh: u64) {
        let cc = self.links.nd[p as usize].top() as u32;
        let x = self.links.nd[p as usize].color();
        self.links.cleansings += 1;
        let mut rr = self.links.nd[cc as usize].down();
        while rr >= self.links.last_itm && self.cost(rr) < thresh {
            if self.links.nd[rr as usize].color() != x {
                self.links.updates += self.links.hide::<true>(rr);
            } else if rr != p {
                self.links.cleansings += 1;
                self.links.nd[rr as usize].set_color(-1);
            }
            rr = self.links.nd[rr as usize].down();
        }
    }

    fn unpurify(&mut self, p: u32, thresh: u64) {
        let cc = self.links.nd[p as usize].top() as u32;
        let x = self.links.nd[p as usize].color();
        let mut rr = self.links.nd[cc as usize].down();
        while rr >= self.links.last_itm && self.cost(rr) < thresh {
            if self.links.nd[rr as usize].color() < 0 {
                self.links.nd[rr as usize].set_color(x);
            } else if rr != p {
                self.links.unhide::<true>(rr);
            }
            rr = self.links.nd[rr as usize].down();
        }
    }

    /// Covers or purifies the other items of `cur`'s option, rightward.
    fn commit_others(&mut self, cur: u32, thresh: u64) {
        let mut pp = cur + 1;
        while pp != cur {
            let node = self.links.nd[pp as usize];
            if node.top() <= 0 {
                pp = node.up();
                continue;
            }
            if node.color() == 0 {
                self.cover(node.top() as u32, thresh);
            } else if node.color() > 0 {
                self.purify(pp, thresh);
            }
            pp += 1;
        }
    }

    /// Undoes [`Self::commit_others`], leftward.
    fn uncommit_others(&mut self, cur: u32, thresh: u64) {
        let mut pp = cur - 1;
        while pp != cur {
            let node = self.links.nd[pp as usize];
            if node.top() <= 0 {
                pp = node.down();
                continue;
            }
            if node.color() == 0 {
                self.uncover(node.top() as u32, thresh);
            } else if node.color() > 0 {
                self.unpurify(pp, thresh);
            }
            pp -= 1;
        }
    }

    /// DLX5's item choice at net cost `curcost` so far: the item and the
    /// number of its usable options (0: backtrack).
    fn choose(&self, curcost: u64) -> (u32, usize) {
        let nd = &self.links.nd;
        let room = self.cutoff - curcost;
        let (mut t, mut best, mut best_min) = (usize::MAX, ROOT, 0u64);
        let mut k = self.links.next_active(ROOT);
        while k != ROOT {
            let first = nd[k as usize].down();
            if first == k {
                return (k, 0);
            }
            let mincost = self.cost(first);
            if mincost >= room {
                return (k, 0);
            }
            // Count the usable options (those below `room`), up to t.
            let mut s = 1;
            let mut p = nd[first as usize].down();
            let counted = loop {
                if p < self.links.last_itm || self.cost(p) >= room {
                    break Some(s);
                }
                if s == t {
                    break None; // more than t: no better than the best
                }
                if s >= self.len_threshold {
                    break Some(self.links.len(k) as usize); // an upper bound
                }
                p = nd[p as usize].down();
                s += 1;
            };
            if let Some(s) = counted {
                if s < t || (s == t && mincost > best_min) {
                    (t, best, best_min) = (s, k, mincost);
                }
            }
            k = self.links.next_active(k);
        }
        (best, t)
    }

    /// DLX5's "If the remaining cost is clearly too high, goto backdown"
    /// (`z`/`Z` given, a cutoff known) at `level` with net cost `curcost`:
    /// true when the least net costs of the active primary items (one per
    /// prefix group; for the others with z > 1, every z-th of them sorted)
    /// reach the cutoff, or an active item has an empty list.
    fn too_costly(&mut self, level: usize, curcost: u64) -> bool {
        if !self.bounded || self.cutoff == INF {
            return false;
        }
        let pp = if self.z > 1 {
            if self.links.second as i64 - level as i64 * self.z <= SORTBUF_SIZE + 1 {
                self.z
            } else if self.prefixes > 0 {
                0
            } else {
                -1
            }
        } else {
            self.z
        };
        if pp < 0 {
            return false;
        }
        let cutoff = self.cutoff;
        let size = self.sortbuf.len() as i64;
        let mut acccost = curcost;
        self.cumcost.fill(curcost);
        let mut t = 0i64;
        let mut k = self.links.next_active(ROOT);
        while k != ROOT {
            let p = self.links.nd[k as usize].down();
            if p < self.links.last_itm {
                return true; // an empty list
            }
            let tmpcost = self.cost(p);
            let r = self.prefix_of[k as usize];
            if r != NO_PREFIX {
                let cum = &mut self.cumcost[r as usize];
                if *cum + tmpcost >= cutoff {
                    return true;
                }
                *cum += tmpcost;
            } else if pp == 1 {
                if acccost + tmpcost >= cutoff {
                    return true;
                }
                acccost += tmpcost;
            } else if pp > 1 {
                // Sort tmpcost into sortbuf's last t entries, adding up
                // every pp-th least cost (Knuth's "cute little online
                // algorithm").
                let buf = &mut self.sortbuf;
                let (mut p, mut oldcost) = (t, 0u64);
                while p > 0 {
                    let newcost = buf[(size - p) as usize];
                    if tmpcost <= newcost {
                        break;
                    }
                    if p % pp == 0 {
                        acccost += newcost - oldcost;
                        if acccost >= cutoff {
                            return true;
                        }
                    }
                    buf[(size - p - 1) as usize] = newcost;
                    p -= 1;
                    oldcost = newcost;
                }
                if p % pp == 0 {
                    acccost += tmpcost - oldcost;
                    if acccost >= cutoff {
                        return true;
                    }
                }
                buf[(size - p - 1) as usize] = tmpcost;
                t += 1;
            }
            k = self.links.next_active(k);
        }
        false
    }

    /// DLX5's "Update cutoffcost": the new net cost replaces the heap's
    /// largest; returns the slot of `kept` the solution goes to.
    fn enter(&mut self, nextcost: u64) -> u32 {
        let heap = &mut self.heap;
        let slot = match heap[0].slot {
            NONE => {
                self.kept.push(CostedSolution::default());
                self.kept.len() as u32 - 1
            }
            evicted => evicted,
        };
        let (mut h, mut hh) = (0, 2);
        while hh <= self.k {
            if heap[hh].cost > heap[hh - 1].cost {
                if nextcost < heap[hh].cost {
                    heap[h] = heap[hh];
                    h = hh;
                } else {
                    break;
                }
            } else if nextcost < heap[hh - 1].cost {
                heap[h] = heap[hh - 1];
                h = hh - 1;
            } else {
                break;
            }
            hh = h + h + 2;
        }
        heap[h] = Best {
            cost: nextcost,
            slot,
        };
        self.cutoff = heap[0].cost;
        slot
    }

    fn run(
        mut self,
        mut found: impl FnMut(&CostedSolution),
        interval: u64,
        poll: &mut dyn FnMut(&CheapestStats) -> bool,
    ) -> Result<CheapestOutcome, CheapestError> {
        #[derive(Clone, Copy)]
        enum Step {
            Forward,
            Advance,
            Backup,
            Backdown,
            Recover,
        }
        let levels = self.links.second as usize + 1;
        let mut choice = vec![0u32; levels];
        let mut partcost = vec![0u64; levels];
        let mut coverthresh0 = vec![0u64; levels];
        let mut coverthresh = vec![0u64; levels];
        let (mut level, mut curcost, mut nextcost) = (0usize, 0u64, 0u64);
        let (mut best, mut cur) = (ROOT, ROOT);
        let mut step = Step::Forward;
        loop {
            step = match step {
                Step::Forward => {
                    self.stats.nodes += 1;
                    if self.stats.nodes.is_multiple_of(interval) {
                        self.stats.updates = self.links.updates;
                        self.stats.cleansings = self.links.cleansings;
                        if !poll(&self.stats) {
                            return Err(CheapestError::Stopped {
                                nodes: self.stats.nodes,
                            });
                        }
                    }
                    let (item, t) = match self.too_costly(level, curcost) {
                        true => (best, 0),
                        false => self.choose(curcost),
                    };
                    best = item;
                    if t == 0 {
                        Step::Backdown
                    } else {
                        partcost[level] = curcost;
                        cur = self.links.nd[best as usize].down();
                        choice[level] = cur;
                        nextcost = curcost + self.cost(cur);
                        coverthresh0[level] = self.cutoff - nextcost;
                        self.cover(best, coverthresh0[level]);
                        Step::Advance
                    }
                }
                Step::Advance => {
                    coverthresh[level] = self.cutoff - nextcost;
                    self.commit_others(cur, coverthresh[level]);
                    if self.links.next_active(ROOT) == ROOT {
                        self.visit(&choice[..=level], nextcost, &mut found);
                        Step::Recover
                    } else {
                        level += 1;
                        curcost = nextcost;
                        Step::Forward
                    }
                }
                Step::Backup => {
                    self.uncover(best, coverthresh0[level]);
                    Step::Backdown
                }
                Step::Backdown => {
                    if level == 0 {
                        break;
                    }
                    level -= 1;
                    cur = choice[level];
                    best = self.links.nd[cur as usize].top() as u32;
                    curcost = partcost[level];
                    Step::Recover
                }
                Step::Recover => {
                    self.uncommit_others(cur, coverthresh[level]);
                    cur = self.links.nd[cur as usize].down();
                    choice[level] = cur;
                    if cur == best {
                        Step::Backup
                    } else {
                        nextcost = curcost + self.cost(cur);
                        if nextcost >= self.cutoff {
                            Step::Backup
                        } else {
                            Step::Advance
                        }
                    }
                }
            };
        }
        self.stats.updates = self.links.updates;
        self.stats.cleansings = self.links.cleansings;
        let kept = &mut self.kept;
        let mut solutions: Vec<CostedSolution> = self.heap[..self.k]
            .iter()
            .filter(|b| b.slot != NONE)
            .map(|b| std::mem::take(&mut kept[b.slot as usize]))
            .collect();
        solutions.sort_by_key(|s| s.found);
        Ok(CheapestOutcome {
            stats: self.stats,
            solutions,
        })
    }

    /// A solution of net cost `nextcost`: a node, an entry in the heap.
    fn visit(&mut self, chosen: &[u32], nextcost: u64, found: &mut impl FnMut(&CostedSolution)) {
        self.stats.nodes += 1;
        self.stats.solutions += 1;
        let slot = self.enter(nextcost) as usize;
        let solution = &mut self.kept[slot];
        solution.found = self.stats.solutions;
        solution.cost = self.stats.total_tax + nextcost;
        solution.options.clear();
        solution.options.extend(
            chosen
                .iter()
                .map(|&node| self.links.node_option[node as usize] as usize),
        );
        found(solution);
    }
}
