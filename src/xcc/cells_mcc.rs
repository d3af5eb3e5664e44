//! Algorithm M on sparse sets, after Knuth's SSMCC (SSXCC-BINARY extended
//! to DLX3's multiplicities by Filip Stappers): the cells engine's search
//! for problems whose primary items have bounds `u:v|`. It owns its arrays
//! and its search; `cells.rs` keeps SSXCC's (d-way branching, no bounds),
//! whose hot path this file leaves untouched.
//!
//! Data, as in SSMCC: `set` holds, for each item `x`, its residual bound
//! less its slack at `x - 4` (primary items), its `slack` (`v - u`, constant) at `x - 3`,
//! its position in the active list at `x - 2`, its size at `x - 1`, and its
//! active options' cells from `x` on; `item` is the sparse-set active list;
//! `nd` the options, a cell per item occurrence, spacers between them.
//!
//! The search branches two ways, as SSMCC does: a node picks an item (the
//! smallest score `size + min(slack, bound) - bound + 1`, then the smaller
//! `min(slack, bound)`, the longer set, the earlier item) and one of its
//! options; its left child *includes* the option (its items' bounds drop,
//! an item whose bound reaches 0 hides its other options, a secondary item
//! hides those of other colors), its right child *removes* it and chooses
//! again (the item may then take no more options: when its set is empty
//! while its bound is within its slack, it just leaves the active list).
//! Items with score 1 must take every option left: they are forced, one
//! node per option, without a right child. Nodes, solutions and updates
//! (removals of an option from an item's set) are counted where SSMCC
//! counts them; a swap out of the active list is no update here.
//!
//! # Orders and tasks
//!
//! [`Order::Ssxcc`] makes SSMCC's own choices: the branching option is the
//! first of the item's set, the forced item the last one pushed, and a
//! failing inclusion counts the updates it made before it failed. A run
//! from the root then counts exactly SSMCC's solutions, nodes and updates
//! (bench/ssmcc-reference.tsv). Those choices depend on the order of the
//! sparse sets, hence on the history of the search, so that order runs
//! whole searches only: it declines give-aways, stops at a checkpoint
//! request without leaving tasks, and refuses a task other than the root.
//!
//! [`Order::Exact`] (the default) makes them from the node alone: the
//! option with the smallest cell (the problem's option order), the smallest
//! active forced item, and a failing inclusion leaves out the updates of
//! the set walk that failed (which options it hid before failing depends
//! on the set's order; what every complete walk hides does not). Its tree
//! differs from SSMCC's (another option first), so its counts do
//! (bench/cells-reference.tsv), but a search cut into tasks counts exactly
//! what it counts in one piece. A level's alternatives are named by rank:
//! 0 includes the node's option, 1 removes it (a forced level has only 0).
//! A give-away hands out the right child of the shallowest level still on
//! its left one; a checkpoint leaves the node, then every untried right
//! child, deepest first.

use super::problem::Problem;
use super::task::{Decision, Task, ALL};
use super::task_run::{Exit, RunsTasks, TaskRun};
use super::vocabulary::{
    Engine, Order, OutOfMemory, Outcome, PathNode, Probe, ProbeEnd, Request, RunConfig, RunError,
    SolutionView, Status, TaskError, Visitor,
};

/// An item occurrence (`itm > 0`, `loc` its slot in the item's set) or a
/// spacer (`itm <= 0`).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Cell {
    itm: i32,
    loc: u32,
}

/// A level's fields the search loop reads and writes at every node, in one
/// place (one address to compute, not one array and bounds check each).
#[derive(Clone, Copy, Debug, Default)]
struct Level {
    /// Start of the level's entries on `save`, and how many.
    saved: usize,
    saved_len: usize,
    /// Options included above the level (SSMCC's stage).
    stage: usize,
    /// The option's cell the level includes or removes.
    choice: u32,
    /// The level's alternatives this run explores: `lo..hi`.
    lo: Decision,
    hi: Decision,
}

/// `s[i]` without its bounds check, for the search loop's per-level arrays.
///
/// # Safety
/// `i < s.len()`. The search's levels stay below `depth` (the loop checks
/// `level + 1 < depth` before it descends), every per-level array has at
/// least `depth` entries (`levels` `depth + 1`, for the level below the
/// last), and a stage (the options included above a level) is below it.
#[inline(always)]
unsafe fn at<T>(s: &mut [T], i: usize) -> &mut T {
    debug_assert!(i < s.len());
    s.get_unchecked_mut(i)
}

/// One saved item: its size and need, restored on backtracking.
#[derive(Clone, Copy, Debug, Default)]
struct Saved {
    item: u32,
    size: u32,
    need: i32,
}

/// The arrays the set walks work on, as raw pointers taken once per step.
#[derive(Clone, Copy)]
struct Sets {
    set: *mut u32,
    item: *mut u32,
    nd: *mut Cell,
    head: *const u32,
    clr: *const u32,
    second: u32,
    #[cfg(debug_assertions)]
    lens: (usize, usize, usize),
}

impl Sets {
    #[inline(always)]
    unsafe fn s(self, i: u32) -> u32 {
        #[cfg(debug_assertions)]
        debug_assert!((i as usize) < self.lens.0);
        *self.set.add(i as usize)
    }
    #[inline(always)]
    unsafe fn put(self, i: u32, v: u32) {
        #[cfg(debug_assertions)]
        debug_assert!((i as usize) < self.lens.0);
        *self.set.add(i as usize) = v;
    }
    #[inline(always)]
    unsafe fn cell(self, n: u32) -> Cell {
        #[cfg(debug_assertions)]
        debug_assert!((n as usize) < self.lens.2);
        *self.nd.add(n as usize)
    }
    #[inline(always)]
    unsafe fn set_loc(self, n: u32, loc: u32) {
        #[cfg(debug_assertions)]
        debug_assert!((n as usize) < self.lens.2);
        (*self.nd.add(n as usize)).loc = loc;
    }

    /// Swaps item `x`, at position `p`, with the last active one, and
    /// shortens the active list.
    #[inline(always)]
    unsafe fn deactivate(self, x: u32, p: u32, active: &mut u32) {
        *active -= 1;
        let a = *active;
        #[cfg(debug_assertions)]
        debug_assert!((p as usize) < self.lens.1 && (a as usize) < self.lens.1);
        let other = *self.item.add(a as usize);
        *self.item.add(a as usize) = x;
        *self.item.add(p as usize) = other;
        self.put(x - POS as u32, a);
        self.put(other - POS as u32, p);
    }

    /// Moves cell `nn` (at slot `p` of item `ii`'s set) just past the set's
    /// new size `ss`.
    #[inline(always)]
    unsafe fn drop_cell(self, ii: u32, ss: u32, nn: u32, p: u32, updates: &mut u64) {
        let last = ii + ss;
        let nnp = self.s(last);
        self.put(ii - SIZE as u32, ss);
        self.put(last, nn);
        self.put(p, nnp);
        self.set_loc(nn, last);
        self.set_loc(nnp, p);
        *updates += 1;
    }

    /// Takes the option of cell `optp` out of the sets of all its items but
    /// purified secondary ones; a primary item left with no option leaves
    /// the active list. False when a primary item would be left with fewer
    /// options than its bound needs (the removal stops there).
    #[inline(always)]
    unsafe fn hide<const PLAIN: bool>(
        self,
        optp: u32,
        active: &mut u32,
        updates: &mut u64,
    ) -> bool {
        let second = self.second;
        let mut nn = *self.head.add(optp as usize);
        loop {
            let Cell { itm, loc: p } = self.cell(nn);
            if itm <= 0 {
                return true;
            }
            let ii = itm as u32;
            let secondary = !PLAIN && p >= second;
            if secondary && self.s(ii - POS as u32) >= *active {
                nn += 1;
                continue;
            }
            let ss = self.s(ii - SIZE as u32) as i32 - 1;
            if !secondary {
                if ss < self.s(ii - NEED as u32) as i32 {
                    return false;
                }
                if ss == 0 {
                    let pp = self.s(ii - POS as u32);
                    self.deactivate(ii, pp, active);
                    nn += 1;
                    continue;
                }
            }
            if ss > 0 {
                self.drop_cell(ii, ss as u32, nn, p, updates);
            }
            nn += 1;
        }
    }

    /// Hides the options of item `ii`'s set but the one at slot `pp`, from
    /// the last slot down (with `COLORED`, only those whose color at `ii`
    /// is not `c`, a color; else all). False when a hide fails (the walk stops there).
    #[inline(always)]
    unsafe fn purge<const COLORED: bool, const PLAIN: bool>(
        self,
        ii: u32,
        pp: u32,
        c: u32,
        active: &mut u32,
        updates: &mut u64,
    ) -> bool {
        let mut s = ii + self.s(ii - SIZE as u32);
        while s > ii {
            s -= 1;
            if s == pp {
                continue;
            }
            let optp = self.s(s);
            if COLORED && *self.clr.add(optp as usize) == c {
                continue;
            }
            if !self.hide::<PLAIN>(optp, active, updates) {
                return false;
            }
        }
        true
    }

    /// SSMCC's `include_option` (see [`CellsMcc::include`]); with `exact`,
    /// a failing set walk's updates are taken back off the count.
    #[inline(always)]
    unsafe fn include<const PLAIN: bool>(
        self,
        opt: u32,
        active: &mut u32,
        updates: &mut u64,
        exact: bool,
    ) -> bool {
        let second = self.second;
        let mut o = *self.head.add(opt as usize);
        loop {
            let Cell { itm, loc: pp } = self.cell(o);
            if itm <= 0 {
                return true;
            }
            let ii = itm as u32;
            let p = self.s(ii - POS as u32);
            if !PLAIN && p >= *active {
                // A purified secondary item (a primary item of an active
                // option is active).
                debug_assert!(ii >= second, "primary item of an active option inactive");
                o += 1;
                continue;
            }
            let primary = PLAIN || ii < second;
            // The item's new `need` (bound - slack), and whether its bound
            // reached 0.
            let (need, done) = if primary {
                let need = self.s(ii - NEED as u32) as i32 - 1;
                self.put(ii - NEED as u32, need as u32);
                // (A plain problem's slacks are 0.)
                let slack = if PLAIN {
                    0
                } else {
                    self.s(ii - SLACK as u32) as i32
                };
                (need, need + slack == 0)
            } else {
                (0, true)
            };
            if done {
                let start = *updates;
                // A primary item hides every other option of its set, a
                // secondary one those of other colors (two loops, so that
                // the primary one keeps no color in a register).
                let c = if primary {
                    0
                } else {
                    *self.clr.add(o as usize)
                };
                let ok = if PLAIN || c == 0 {
                    self.purge::<false, PLAIN>(ii, pp, 0, active, updates)
                } else {
                    self.purge::<true, PLAIN>(ii, pp, c, active, updates)
                };
                if !ok {
                    if exact {
                        // Which options the walk hid before it failed
                        // depends on the set's order: not counted.
                        *updates = start;
                    }
                    return false;
                }
                let p = self.s(ii - POS as u32);
                self.deactivate(ii, p, active);
            } else {
                let ss = self.s(ii - SIZE as u32) as i32 - 1;
                if ss < need {
                    return false;
                }
                if ss == 0 {
                    self.deactivate(ii, p, active);
                } else {
                    self.drop_cell(ii, ss as u32, o, pp, updates);
                }
            }
            o += 1;
        }
    }
}

const NONE: u32 = u32::MAX;
/// No alternative to try at a node (a solution, a pruned node).
const NO_ALT: Decision = Decision::MAX;
/// The offsets of an item's fields before its set: `need` is SSMCC's
/// residual `bound` minus the item's `slack` (the options it must still
/// take), kept rather than the bound so that the check of every removal
/// (`size - 1 < bound - slack`) reads one field.
const NEED: usize = 4;
const SLACK: usize = 3;
const POS: usize = 2;
const SIZE: usize = 1;

pub(crate) struct CellsMcc {
    nd: Vec<Cell>,
    /// The first cell of each cell's option.
    head: Vec<u32>,
    clr: Vec<u32>,
    set: Vec<u32>,
    item: Vec<u32>,
    nd0: Vec<Cell>,
    set0: Vec<u32>,
    item0: Vec<u32>,
    /// Active items at the root (optionless ones made inactive, as SSMCC).
    active0: u32,
    /// Items `x < second` are primary.
    second: u32,
    node_option: Vec<u32>,
    exact: bool,
    /// A primary item has fewer options than its lower bound: SSMCC does
    /// not search at all; here the root is a dead end.
    bad: bool,
    active: u32,
    updates: u64,
    /// The items of score 1, once per option each must take; in
    /// `Order::Exact` sorted, the smallest last.
    force: Vec<u32>,
    /// [`CellsMcc::choose`]'s key is a `u64` ([`narrow_key`]).
    narrow: bool,
    /// No secondary items, and every item's slack is 0 and bound positive
    /// (`u = v > 0`; an active item's bound then stays positive): the
    /// search runs its `PLAIN` specialization, which skips the checks for
    /// secondary items and the reads of slacks.
    plain: bool,
    save: Vec<Saved>,
    /// The save stack's worst case ([`save_entries`]): it never grows past it.
    save_limit: usize,
    /// Bytes the save stack could not get (see [`CellsMcc::grow_save`]).
    out_of_memory: Option<u64>,
    // Per level (`depth` of them; see [`at`]).
    levels: Box<[Level]>,
    /// 1 for a forced level, 2 for a branching one.
    degree: Box<[Decision]>,
    /// The alternative being explored: 0 include, 1 remove.
    alt: Box<[Decision]>,
    /// The included cells, by stage.
    chosen: Box<[u32]>,
    // Per run.
    /// The level of the task's node.
    base: usize,
    task_run: TaskRun,
    ranks: Vec<Decision>,
}

/// Whether [`CellsMcc::choose`]'s key, SSMCC's order of items (the score
/// `t`, then `s = min(slack, bound)`, then `0xffff - size`, the longer set
/// first, then the item `x`), fits a `u64` of four 16-bit fields for the
/// problem's values at the root (sizes and bounds only drop below it);
/// else it takes a `u128` of 32-bit fields.
fn narrow_key(set: &[u32], items: &[u32], second: u32) -> bool {
    let (mut largest, mut most_s) = (0u32, 0u32);
    for &x in items.iter().filter(|&&x| x < second) {
        let x = x as usize;
        let slack = set[x - SLACK];
        let bound = (set[x - NEED] as i32 + slack as i32) as u32;
        largest = largest.max(set[x - SIZE]);
        most_s = most_s.max(slack.min(bound));
    }
    // `t <= largest + 1` stays below 0xffff: no key is `u64::MAX`.
    largest < 0xfffe && most_s <= 0xffff && set.len() <= 0x1_0000
}

/// How a node goes on: its item and whether it is forced, or a solution.
enum Pick {
    Solution,
    Item(u32, bool),
}

impl RunsTasks for CellsMcc {
    #[inline(always)]
    fn run_state(&mut self) -> (&mut TaskRun, usize, &[Decision]) {
        (&mut self.task_run, self.base, &self.degree)
    }

    #[inline(always)]
    fn counters(&self) -> (u64, u64) {
        (self.updates, 0)
    }

    fn poll_visitor<V: Visitor>(&mut self, level: usize, visitor: &mut V) -> Option<Exit> {
        let mut ranks = std::mem::take(&mut self.ranks);
        ranks.clear();
        ranks.extend_from_slice(&self.alt[..level]);
        self.ranks = ranks;
        let request = self.task_run.ask(
            visitor,
            self.base,
            &self.ranks,
            &self.degree[..level],
            |l| self.alt[l] - self.levels[l].lo,
        );
        if !self.exact && request == Request::Checkpoint {
            // SSMCC's order leaves no tasks (see the module's doc).
            return Some(Exit::Stop(Status::Stopped));
        }
        Exit::after_poll(request, visitor, || self.give_away(level))
    }
}

impl CellsMcc {
    pub(crate) fn new(problem: &Problem, order: Order) -> CellsMcc {
        let items = problem.items();
        let n = items.len();
        let order_of: Vec<usize> = (0..n)
            .filter(|&i| items[i].is_primary())
            .chain((0..n).filter(|&i| !items[i].is_primary()))
            .collect();
        // SSMCC ignores options without primary items: no search takes
        // them, and hiding them would count updates SSMCC does not make.
        let kept: Vec<bool> = problem
            .options()
            .iter()
            .enumerate()
            .map(|(k, o)| !problem.is_dropped(k) && o.iter().any(|e| items[e.item].is_primary()))
            .collect();
        let mut size = vec![0u32; n];
        for (k, option) in problem.options().iter().enumerate() {
            if kept[k] {
                for e in option {
                    size[e.item] += 1;
                }
            }
        }
        let mut base_of = vec![0u32; n];
        let mut set: Vec<u32> = Vec::with_capacity(problem.entries() + 4 * n);
        let mut item: Vec<u32> = Vec::with_capacity(n);
        let mut second = None;
        let mut bad = false;
        for (k, &i) in order_of.iter().enumerate() {
            let (bound, slack) = match items[i].kind {
                super::problem::ItemKind::Primary { min, max } => (max as i32, (max - min) as i32),
                super::problem::ItemKind::Secondary => {
                    if second.is_none() {
                        second = Some(set.len() as u32 + 4);
                    }
                    (1, 0)
                }
            };
            if items[i].is_primary() && (size[i] as i32) < bound - slack {
                bad = true;
            }
            set.push((bound - slack) as u32);
            set.push(slack as u32);
            set.push(k as u32);
            set.push(size[i]);
            base_of[i] = set.len() as u32;
            item.push(set.len() as u32);
            set.resize(set.len() + size[i] as usize, 0);
        }
        let second = second.unwrap_or(set.len() as u32 + 4);
        let mut fill = vec![0u32; n];
        let mut nd = vec![Cell::default()];
        let mut head = vec![0u32];
        let mut clr = vec![0u32];
        let mut node_option = vec![u32::MAX];
        for (index, option) in problem.options().iter().enumerate() {
            if !kept[index] {
                continue;
            }
            let first = nd.len() as u32;
            for e in option {
                let x = base_of[e.item];
                let loc = x + fill[e.item];
                fill[e.item] += 1;
                set[loc as usize] = nd.len() as u32;
                nd.push(Cell { itm: x as i32, loc });
                head.push(first);
                clr.push(e.color.map_or(0, |c| c + 1));
                node_option.push(index as u32);
            }
            nd.push(Cell {
                itm: -(option.len() as i32),
                loc: 0,
            });
            head.push(first);
            clr.push(0);
            node_option.push(u32::MAX);
        }
        // SSMCC's "make optionless items invisible": pushed from the last
        // item down, popped from the first up, each swapped out in turn.
        let mut active = n as u32;
        let optionless: Vec<u32> = item
            .iter()
            .copied()
            .filter(|&x| set[x as usize - SIZE] == 0)
            .collect();
        for x in optionless {
            let p = set[x as usize - POS];
            active -= 1;
            let other = item[active as usize];
            item[active as usize] = x;
            item[p as usize] = other;
            set[x as usize - POS] = active;
            set[other as usize - POS] = p;
        }
        let depth = kept.iter().filter(|&&k| k).count() + 2;
        let narrow = narrow_key(&set, &item, second);
        let plain = second as usize >= set.len() + 4
            && item
                .iter()
                .all(|&x| set[x as usize - SLACK] == 0 && set[x as usize - NEED] as i32 > 0);
        CellsMcc {
            nd0: nd.clone(),
            set0: set.clone(),
            item0: item.clone(),
            nd,
            head,
            clr,
            set,
            item,
            active0: active,
            second,
            node_option,
            exact: order == Order::Exact,
            bad,
            active,
            updates: 0,
            force: Vec::with_capacity(problem.entries() + 1),
            narrow,
            plain,
            save: Vec::new(),
            save_limit: usize::try_from(save_entries(problem)).unwrap_or(usize::MAX),
            out_of_memory: None,
            levels: vec![Level::default(); depth + 1].into_boxed_slice(),
            degree: vec![0; depth].into_boxed_slice(),
            alt: vec![0; depth].into_boxed_slice(),
            chosen: vec![0; depth].into_boxed_slice(),
            base: 0,
            task_run: TaskRun::new(depth),
            ranks: Vec::new(),
        }
    }

    pub(crate) fn order(&self) -> Order {
        if self.exact {
            Order::Exact
        } else {
            Order::Ssxcc
        }
    }

    pub(crate) fn algorithm(&self) -> &'static str {
        "M"
    }

    fn reset(&mut self) {
        self.nd.copy_from_slice(&self.nd0);
        self.set.copy_from_slice(&self.set0);
        self.item.copy_from_slice(&self.item0);
        self.active = self.active0;
        self.force.clear();
        self.save.clear();
        self.levels[0].saved = 0;
        self.levels[0].stage = 0;
        self.updates = 0;
    }

    // ----- The sparse sets -----
    //
    // The steps below run hundreds of millions of times on the larger
    // benchmarks. They read and write the arrays through raw pointers
    // taken once per step (`Sets`), with the active count and the update
    // counter in locals: every index is an item (`x` with its fields at
    // `x - 4 .. x`), a cell of `nd` or a slot of an item's set, all built in
    // bounds by `CellsMcc::new` and only ever permuted within their item's
    // set since (debug builds check them). Bounds-checked indexing through
    // `self` made the compiler reload `active` and the arrays' addresses
    // after every store (rowcol7k2 about a third slower).

    #[inline(always)]
    fn sets(&mut self) -> Sets {
        Sets {
            set: self.set.as_mut_ptr(),
            item: self.item.as_mut_ptr(),
            nd: self.nd.as_mut_ptr(),
            head: self.head.as_ptr(),
            clr: self.clr.as_ptr(),
            second: self.second,
            #[cfg(debug_assertions)]
            lens: (self.set.len(), self.item.len(), self.nd.len()),
        }
    }

    #[inline(always)]
    fn pos(&self, x: u32) -> u32 {
        self.set[x as usize - POS]
    }

    /// SSMCC's "remove `optp` from its other sets" (and "remove the option
    /// `cur_choice`"); see [`Sets::hide`].
    fn hide<const PLAIN: bool>(&mut self, optp: u32) -> bool {
        let sets = self.sets();
        let (mut active, mut updates) = (self.active, self.updates);
        // SAFETY: `optp` is a cell of an option; the arrays are this
        // engine's (see above).
        let ok = unsafe { sets.hide::<PLAIN>(optp, &mut active, &mut updates) };
        (self.active, self.updates) = (active, updates);
        ok
    }

    /// SSMCC's `include_option`: takes the option of cell `opt`, lowering
    /// its primary items' bounds; an item whose bound reaches 0, and a
    /// secondary item, hide their conflicting options and leave the active
    /// list. False (the force stack cleared) when that leaves a primary item
    /// with too few options. (Not inlined: in the search loop it cost
    /// rowcol6k3 1 % more instructions, the loop's registers spilled.)
    fn include<const PLAIN: bool>(&mut self, opt: u32) -> bool {
        let sets = self.sets();
        let (mut active, mut updates) = (self.active, self.updates);
        // SAFETY: as for `hide`.
        let ok = unsafe { sets.include::<PLAIN>(opt, &mut active, &mut updates, self.exact) };
        (self.active, self.updates) = (active, updates);
        if !ok {
            self.force.clear();
        }
        ok
    }

    /// SSMCC's choice of the item to branch on: every active primary item
    /// of score 1 goes on the force stack (once per option it must take);
    /// otherwise the best score. `NONE` when no item is left to branch on.
    #[inline(always)]
    fn choose<const PLAIN: bool>(&mut self) -> u32 {
        // SSMCC's order as one key (see `narrow_key`), so that the minimum
        // is taken without a branch per item that the predictor misses.
        if self.narrow {
            self.scan::<u64, PLAIN>(u64::MAX, |t, s, z, x| {
                u64::from(t) << 48 | u64::from(s) << 32 | u64::from(z) << 16 | u64::from(x)
            })
            .map_or(NONE, |k| (k & 0xffff) as u32)
        } else {
            self.scan::<u128, PLAIN>(u128::MAX, |t, s, z, x| {
                u128::from(t) << 96 | u128::from(s) << 64 | u128::from(z) << 32 | u128::from(x)
            })
            .map_or(NONE, |k| k as u32)
        }
    }

    /// The scan of [`CellsMcc::choose`], with the key `pack` makes of an
    /// item's score `t`, `min(slack, bound)`, `0xffff - size` (the longer
    /// set first; `!size` in a wide key) and index.
    #[inline(always)]
    fn scan<K: Copy + Ord, const PLAIN: bool>(
        &mut self,
        max: K,
        pack: impl Fn(u32, u32, u32, u32) -> K,
    ) -> Option<K> {
        let mut best = max;
        let set = self.set.as_ptr();
        let second = self.second;
        let top = if self.narrow { 0xffff } else { u32::MAX };
        // The force stack is empty here (`pick` scans only then), and its
        // capacity, `problem.entries() + 1`, holds what a scan pushes: an
        // item of score 1 is pushed `size` times, and the active items'
        // sizes add up to at most the entries.
        debug_assert!(self.force.is_empty());
        let force = self.force.as_mut_ptr();
        let mut forced = 0usize;
        for &x in &self.item[..self.active as usize] {
            if !PLAIN && x >= second {
                continue;
            }
            // SAFETY: active entries are items. (A plain problem's slacks
            // are 0.)
            let (need, slack, size) = unsafe {
                (
                    *set.add(x as usize - NEED) as i32,
                    if PLAIN {
                        0
                    } else {
                        *set.add(x as usize - SLACK)
                    },
                    *set.add(x as usize - SIZE),
                )
            };
            // With `bound = need + slack`: the score `size + min(slack,
            // bound) - bound + 1` is `size + 1 - max(need, 0)`, and
            // `min(slack, bound)` is `slack + min(need, 0)`.
            let must = if PLAIN { need } else { need.max(0) };
            let t = size + 1 - must as u32;
            if t == 1 {
                // SAFETY: see above.
                unsafe { push_forced(force, &mut forced, x, must) };
                debug_assert!(forced <= self.force.capacity());
            } else {
                let s = slack.wrapping_add((need - must) as u32);
                best = best.min(pack(t, s, top - size, x));
            }
        }
        // SAFETY: the `forced` entries pushed are written.
        unsafe { self.force.set_len(forced) };
        (best != max).then_some(best)
    }

    /// The next forced item still active (the stack's stale entries, items
    /// an inclusion since made inactive, dropped).
    #[inline(always)]
    fn pop_forced(&mut self) -> Option<u32> {
        while let Some(x) = self.force.pop() {
            if self.pos(x) < self.active {
                return Some(x);
            }
        }
        None
    }

    /// The node's item, as SSMCC's step "forward" picks it: the last forced
    /// item pushed, or (`Order::Exact`, whose stack is sorted) the smallest
    /// active one.
    #[inline(always)]
    fn pick<const PLAIN: bool>(&mut self) -> Pick {
        if let Some(x) = self.pop_forced() {
            return Pick::Item(x, true);
        }
        // The stack is empty: the scan fills it (with active items).
        let best = self.choose::<PLAIN>();
        if self.exact && self.force.len() > 1 {
            sort_forced(&mut self.force);
        }
        if let Some(x) = self.force.pop() {
            return Pick::Item(x, true);
        }
        if best == NONE {
            Pick::Solution
        } else {
            Pick::Item(best, false)
        }
    }

    /// The option of `x` the node includes, then removes: SSMCC's first of
    /// the set, or (`Order::Exact`) the smallest cell.
    #[inline(always)]
    fn option_of(&self, x: u32) -> u32 {
        if self.exact {
            // SAFETY: `x` is an item, its set within `set` (see "The sparse
            // sets" above).
            let s = unsafe {
                let set = self.set.as_ptr().add(x as usize);
                std::slice::from_raw_parts(set, *set.sub(SIZE) as usize)
            };
            s.iter().fold(u32::MAX, |m, &c| m.min(c))
        } else {
            self.set[x as usize]
        }
    }

    /// SSMCC's "save the currently active items and their sizes and
    /// bounds", for `level`.
    #[inline(always)]
    /// False when the stack could not grow (the search then stops, and the
    /// run answers `OutOfMemory`).
    fn save_state(&mut self, level: usize) -> bool {
        // SAFETY (here and below in the search loop): see `at`.
        let start = unsafe { at(&mut self.levels, level) }.saved;
        let active = self.active as usize;
        if self.save.len() < start + active && !self.grow_save(start + active) {
            return false;
        }
        let set = self.set.as_ptr();
        let save = &mut self.save[start..start + active];
        for (slot, &x) in save.iter_mut().zip(&self.item[..active]) {
            // SAFETY: active entries are items.
            unsafe {
                *slot = Saved {
                    item: x,
                    size: *set.add(x as usize - SIZE),
                    need: *set.add(x as usize - NEED) as i32,
                };
            }
        }
        unsafe { at(&mut self.levels, level) }.saved_len = active;
        true
    }

    /// Makes the save stack `needed` entries long. Its capacity doubles, as a
    /// `Vec`'s would, but never past `save_limit`, and an allocation that
    /// fails is noted in `out_of_memory`, not an abort (as in `cells.rs`).
    #[cold]
    #[inline(never)]
    fn grow_save(&mut self, needed: usize) -> bool {
        if needed > self.save.capacity() {
            let wanted = needed
                .max(self.save.capacity().saturating_mul(2))
                .min(self.save_limit.max(needed));
            let more = wanted - self.save.len();
            if self.save.try_reserve_exact(more).is_err() {
                self.out_of_memory = Some((wanted * std::mem::size_of::<Saved>()) as u64);
                return false;
            }
        }
        self.save.resize(needed, Saved::default());
        true
    }

    #[inline(always)]
    fn restore_state(&mut self, level: usize) {
        let Level {
            saved: start,
            saved_len: len,
            ..
        } = *unsafe { at(&mut self.levels, level) };
        self.active = len as u32;
        let set = self.set.as_mut_ptr();
        for &Saved { item, size, need } in &self.save[start..start + len] {
            // SAFETY: saved entries are items. (A secondary item's bound
            // is never read: writing it back saves a branch.)
            unsafe {
                *set.add(item as usize - SIZE) = size;
                *set.add(item as usize - NEED) = need as u32;
            }
        }
    }

    // ----- Runs -----

    pub(crate) fn run<V: Visitor>(
        &mut self,
        task: &Task,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Result<Outcome, RunError> {
        self.reset();
        self.out_of_memory = None;
        self.base = task.path.len();
        if let Some(outcome) = self.task_run.start(task, config) {
            return Ok(outcome);
        }
        // SSMCC's node does no work before its range: the replay of the
        // task's path ends on entering the task's node, whatever its range.
        self.task_run.fresh_base = true;
        let whole = task.path.is_empty() && task.from == 0 && task.to == ALL;
        if self.base + 2 > self.degree.len() || (!self.exact && !whole) {
            // SSMCC's own order names no subtree but the root's (see the
            // module's doc).
            return Err(TaskError {
                level: 0,
                position: task.path.first().copied().unwrap_or(task.from),
            }
            .into());
        }
        // The plain search (no secondary items, every slack 0) is
        // monomorphized once, chosen here.
        let result = if self.plain {
            self.search::<V, true>(task, config, visitor)?
        } else {
            self.search::<V, false>(task, config, visitor)?
        };
        if let Some(bytes) = self.out_of_memory.take() {
            return Err(RunError::OutOfMemory(OutOfMemory {
                engine: Engine::Cells,
                bytes,
            }));
        }
        Ok(self.task_run.outcome((self.updates, 0), result))
    }

    /// Enters level `level + 1` from `level`, by alternative `alt`.
    #[inline(always)]
    fn descend(&mut self, level: usize, alt: Decision) {
        // SAFETY: see `at` (`levels` has a level below the last).
        let this = *unsafe { at(&mut self.levels, level) };
        let below = unsafe { at(&mut self.levels, level + 1) };
        if alt == 0 {
            below.stage = this.stage + 1;
            below.saved = this.saved + this.saved_len;
            *unsafe { at(&mut self.chosen, this.stage) } = this.choice;
        } else {
            // SSMCC reuses the stage's save: the level above is done with it.
            below.stage = this.stage;
            below.saved = this.saved;
        }
    }

    /// SSMCC's main loop with task ranges: forward (a node), advance (its
    /// left child), purgeit (its right child), backup.
    fn search<V: Visitor, const PLAIN: bool>(
        &mut self,
        task: &Task,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Result<(Status, Vec<Task>), TaskError> {
        let mut level = 0usize;
        let exit = 'forward: loop {
            if let Some(exit) = self.enter_node(level, config, visitor) {
                break self.finish(exit, level, task);
            }
            // The first alternative to try (`NO_ALT`: back up at once).
            let mut alt = NO_ALT;
            if self.bad {
                // The root of a problem with an item short of options: a
                // dead end (SSMCC does not search at all; a node here, as
                // on SSXCC's cells, so that every tree has one).
                if level < self.base {
                    return Err(TaskError {
                        level,
                        position: task.path[level],
                    });
                }
            } else if config.check_partial && level > self.base && !self.accepts(level, visitor) {
                self.force.clear();
            } else {
                match self.pick::<PLAIN>() {
                    Pick::Solution => {
                        if level < self.base {
                            // The path goes on below a solution.
                            return Err(TaskError {
                                level,
                                position: task.path[level],
                            });
                        }
                        if level == self.base && task.from > 0 {
                            // The node's only "alternative" is itself.
                            break self.finish(Exit::Done, level, task);
                        }
                        if let Some(exit) = self.record(level, config, visitor) {
                            break self.finish(exit, level, task);
                        }
                    }
                    Pick::Item(best, forced) => {
                        let degree = if forced {
                            unsafe { at(&mut self.levels, level) }.saved_len = 0;
                            1
                        } else if self.save_state(level) {
                            2
                        } else {
                            break self.finish(Exit::Stop(Status::Stopped), level, task);
                        };
                        let choice = self.option_of(best);
                        unsafe { at(&mut self.levels, level) }.choice = choice;
                        if level < self.base && task.path[level] >= degree {
                            return Err(TaskError {
                                level,
                                position: task.path[level],
                            });
                        }
                        self.enter_level(level, task, degree);
                        alt = unsafe { at(&mut self.levels, level) }.lo;
                    }
                }
            }
            loop {
                // Advance: the alternatives of `level` from `alt` on, the
                // left child (include) first, then the right (remove).
                while alt < unsafe { at(&mut self.levels, level) }.hi {
                    *unsafe { at(&mut self.alt, level) } = alt;
                    let cur = unsafe { at(&mut self.levels, level) }.choice;
                    let ok = if alt == 0 {
                        self.include::<PLAIN>(cur)
                    } else {
                        // The node's state (a no-op when the left child
                        // was not this run's).
                        self.restore_state(level);
                        self.hide::<PLAIN>(cur)
                    };
                    if ok {
                        self.descend(level, alt);
                        level += 1;
                        if level + 1 >= self.degree.len() {
                            // Each level takes or drops an option (and
                            // `at`'s bound).
                            unreachable!("more levels than options");
                        }
                        continue 'forward;
                    }
                    if level < self.base && (self.degree[level] > 1 || alt > 0) {
                        // A branching alternative that fails is no node:
                        // the path is not one of this tree.
                        return Err(TaskError {
                            level,
                            position: task.path[level],
                        });
                    }
                    alt += 1;
                }
                // Backup, as often as the level above has nothing left.
                loop {
                    if level == 0 {
                        break 'forward self.finish(Exit::Done, 0, task);
                    }
                    level -= 1;
                    alt = *unsafe { at(&mut self.alt, level) } + 1;
                    if alt < unsafe { at(&mut self.levels, level) }.hi {
                        break;
                    }
                }
            }
        };
        Ok(exit)
    }

    #[inline(always)]
    fn enter_level(&mut self, level: usize, task: &Task, degree: Decision) {
        if level > self.base && self.task_run.cuts.is_empty() {
            // The common case: every alternative is this run's.
            // SAFETY: see `at`.
            let this = unsafe { at(&mut self.levels, level) };
            this.lo = 0;
            this.hi = degree;
            unsafe {
                *at(&mut self.degree, level) = degree;
                *at(&mut self.alt, level) = 0;
            }
            return;
        }
        self.enter_task_level(level, task, degree);
    }

    #[cold]
    #[inline(never)]
    fn enter_task_level(&mut self, level: usize, task: &Task, degree: Decision) {
        let (lo, hi) = self
            .task_run
            .range(level, self.base, task, degree, || &self.alt[..level]);
        self.levels[level].lo = lo;
        self.levels[level].hi = hi.min(degree);
        self.degree[level] = degree;
        self.alt[level] = lo;
        if level == self.base {
            self.task_run.set_base_unit(self.base, task, lo, hi);
        }
    }

    /// Gives away the right child of the shallowest level still exploring
    /// its left one (with the right one in its range). Units filled.
    fn give_away(&mut self, level: usize) -> Option<Task> {
        if !self.exact {
            return None;
        }
        let l = (self.base..level).find(|&l| self.alt[l] + 1 < self.levels[l].hi)?;
        let (from, to) = (self.alt[l] + 1, self.levels[l].hi);
        self.levels[l].hi = from;
        Some(self.task_run.give_away(self.alt[..l].to_vec(), from, to))
    }

    /// The run's status and, after a checkpoint, its unexplored work: the
    /// node, then each untried right child, deepest first.
    fn finish(&mut self, exit: Exit, level: usize, task: &Task) -> (Status, Vec<Task>) {
        self.task_run.fill_units(level, self.base, &self.degree);
        exit.finish(|| {
            self.task_run
                .remaining_tasks(self.base, task, &self.alt[..level], |l, untried| {
                    if self.alt[l] + 1 < self.levels[l].hi {
                        untried.push((self.alt[l] + 1, self.levels[l].hi));
                    }
                })
        })
    }

    fn accepts<V: Visitor>(&self, level: usize, visitor: &mut V) -> bool {
        let stage = self.levels[level].stage;
        visitor.partial(&SolutionView::new(
            &self.chosen[..stage],
            &self.node_option,
            0,
        ))
    }

    fn record<V: Visitor>(
        &mut self,
        level: usize,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Option<Exit> {
        let stage = self.levels[level].stage;
        let flow = visitor.solution(&SolutionView::new(
            &self.chosen[..stage],
            &self.node_option,
            0,
        ));
        self.task_run
            .stats
            .count_solution(flow, config)
            .map(Exit::Stop)
    }

    /// What `path` (ranks) leads to, replayed as the search goes down it: a
    /// node's one alternative is its option, which rank 0 includes and
    /// rank 1 (absent at a forced node) removes, taking none. A branching
    /// move that fails is no node (as the search rejects it); a forced one
    /// that fails leads to a dead end.
    pub(crate) fn describe(&mut self, path: &[Decision]) -> Result<PathNode, TaskError> {
        self.reset();
        let mut taken = Vec::new();
        let mut passed = Vec::new();
        let node = |taken, passed, alternatives, degree, solution| {
            Ok(PathNode {
                taken,
                passed,
                alternatives,
                degree,
                solution,
            })
        };
        if self.bad {
            if let Some(&position) = path.first() {
                return Err(TaskError { level: 0, position });
            }
            return node(taken, passed, Vec::new(), 0, false);
        }
        let mut level = 0;
        loop {
            let (best, forced) = match self.pick::<false>() {
                Pick::Solution => {
                    if let Some(&position) = path.get(level) {
                        return Err(TaskError { level, position });
                    }
                    return node(taken, passed, Vec::new(), 0, true);
                }
                Pick::Item(best, forced) => (best, forced),
            };
            let degree = if forced { 1 } else { 2 };
            let cur = self.option_of(best);
            let option = self.node_option[cur as usize] as usize;
            let Some(&position) = path.get(level) else {
                return node(taken, passed, vec![option], degree, false);
            };
            if position >= degree {
                return Err(TaskError { level, position });
            }
            let ok = if position == 0 {
                taken.push(option);
                self.include::<false>(cur)
            } else {
                passed.push(option);
                self.hide::<false>(cur)
            };
            level += 1;
            if !ok {
                if forced && level == path.len() {
                    return node(taken, passed, Vec::new(), 0, false);
                }
                return Err(TaskError {
                    level: level - 1,
                    position,
                });
            }
            if level + 1 >= self.degree.len() {
                // Deeper than the search goes (each level takes or drops
                // an option): no node of this tree.
                return Err(TaskError { level, position });
            }
        }
    }

    /// One random walk down the tree: at each node one of its one or two
    /// alternatives (include, remove), as `choose` draws.
    pub(crate) fn probe(&mut self, choose: &mut dyn FnMut(Decision) -> Decision) -> Probe {
        self.reset();
        let mut degrees = Vec::new();
        if self.bad {
            return Probe {
                degrees,
                end: ProbeEnd::DeadEnd,
            };
        }
        let mut level = 0;
        let end = loop {
            let (best, forced) = match self.pick::<false>() {
                Pick::Solution => break ProbeEnd::Solution,
                Pick::Item(best, forced) => (best, forced),
            };
            let degree = if forced { 1 } else { 2 };
            let cur = self.option_of(best);
            let r = choose(degree).min(degree - 1);
            degrees.push(degree);
            let ok = if r == 0 {
                self.include::<false>(cur)
            } else {
                self.hide::<false>(cur)
            };
            if !ok {
                break ProbeEnd::Missing;
            }
            level += 1;
            if level + 1 >= self.degree.len() {
                break ProbeEnd::DeadEnd;
            }
        };
        Probe { degrees, end }
    }
}

/// Puts forced item `x` on the stack at `force + *len` once per option it
/// must take. (Out of line, as a cold call, it cost rowcol6k3 19M
/// instructions: forced items are common; through `Vec::push`, a capacity
/// check and a store of the length per entry.)
///
/// # Safety
/// The stack has room for `must` more entries.
#[inline(always)]
unsafe fn push_forced(force: *mut u32, len: &mut usize, x: u32, must: i32) {
    for _ in 0..must {
        *force.add(*len) = x;
        *len += 1;
    }
}

/// Sorts the force stack, the largest item first, so that pops take the
/// smallest first. It holds a few items, which an insertion sort in place
/// orders in fewer steps than a call to the library's sort.
#[inline(always)]
fn sort_forced(force: &mut [u32]) {
    for i in 1..force.len() {
        let x = force[i];
        let mut j = i;
        while j > 0 && force[j - 1] < x {
            force[j] = force[j - 1];
            j -= 1;
        }
        force[j] = x;
    }
}

/// The save stack's worst case: a level per option the search may include
/// or remove (and two more), each saving at most every item.
pub(crate) fn save_entries(problem: &Problem) -> u64 {
    let levels = problem.options().len() as u64 + 2;
    levels.saturating_mul(problem.items().len() as u64)
}

/// Bytes of one saved item.
pub(crate) const SAVED_BYTES: u64 = std::mem::size_of::<Saved>() as u64;
