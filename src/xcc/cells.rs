//! Algorithm C on sparse sets ("dancing cells"), after Knuth's SSXCC
//! (TAOCP 7.2.2.3 pre-fascicle, with Christine Solnon's improvements: the
//! sizes of the active sets are saved on a stack, and items with a single
//! option left are forced without branching).
//!
//! Data, as in SSXCC:
//! - `set` holds, for each item `x` (an index into `set`), its position in
//!   the active list at `x - 2`, its size at `x - 1`, and the nodes of its
//!   active options at `x .. x + size`; inactive options sit just past the
//!   size, so undoing a deletion is restoring a size;
//! - `item` is the sparse-set active list: `item[pos(x)] == x`, the first
//!   `active` entries are the active items (primary and not purified
//!   secondary ones);
//! - `nd` holds the options, one cell per item occurrence (`itm` is the
//!   item, `loc` where the cell sits in the item's set), options separated
//!   by spacers whose `itm` is minus the length of the option before them,
//!   so that `q + itm` jumps back to that option's first cell.
//!
//! The arrays are made of [`Word`]s: 16-bit ones for problems small enough
//! whose 32-bit arrays would not fit the first-level cache (see
//! [`narrow_pays`]), 32-bit ones for any other ([`InCache32`] when they fit
//! that cache, which only leaves out the prefetch).
//!
//! Every search here follows SSXCC step by step (a swap of an item out of
//! the active list, or the removal of an option from an item's set, is an
//! update). With [`Order::Ssxcc`] it also makes SSXCC's choices where they
//! depend on the history (which item left with one option is forced
//! first, how many updates a failing hide made), so a run from the root
//! counts SSXCC's nodes and updates. The default, [`Order::Exact`], makes
//! those choices from the node alone, so that a search cut into tasks
//! counts exactly what it counts in one piece (bench/cells-reference.tsv).
//!
//! # Naming the subtrees of a node
//!
//! SSXCC undoes deletions by restoring sizes, not orders, so the order of an
//! item's set at a node depends on everything explored before. A task's
//! path must name the same alternatives on any worker, so alternatives are
//! named by their *rank*: the position of the option's cell among the
//! node's alternatives sorted by cell index (the problem's option order).
//! The search still tries them in SSXCC's order; a level whose range does
//! not hold every alternative skips the ones whose rank is outside it.
//! Every run starts from the pristine arrays, so a task is explored the same
//! way wherever it runs.
//!
//! A give-away hands out the ranks above every rank already tried at the
//! shallowest level that has any, so the given range holds no tried
//! alternative; a checkpoint turns each maximal interval of untried ranks
//! into a task.
//!
//! Forced moves (one option left) happen, in `Order::Ssxcc`, in an order
//! that depends on the history, but the options they force do not: at a
//! branching node the state is the same whatever the order, so paths
//! through forced levels (always rank 0) replay to the same branching
//! nodes. A replay whose forced moves meet a contradiction the original
//! met later has an empty subtree, as the original's was; such a task ends
//! with no solution. Split runs find exactly the unsplit solutions; in
//! that order their node and update counts may differ slightly from the
//! unsplit run's, since the work of a forced chain that fails depends on
//! its order. In `Order::Exact` the smallest pending item is forced first
//! and a failing hide's own updates are not counted: every node's choices
//! and counts are those of its path, wherever the run started.

use super::problem::Problem;
use super::task::{Decision, Task};
use super::task_run::{upper_half, Exit, RunsTasks, TaskRun};
use super::vocabulary::{
    Engine, Order, OutOfMemory, Outcome, PathNode, Probe, ProbeEnd, RunConfig, RunError,
    SolutionView, Status, TaskError, Visitor,
};

/// The word the engine's arrays are made of: `u16` for problems small
/// enough (half the memory, so twice as much of the problem in each cache
/// level), `u32` for any. Values are computed on as `u32`.
pub(crate) trait Word: Copy + Default + std::fmt::Debug + Send + Sync + 'static {
    /// Whether a problem whose `set` has `set_len` entries, whose `nd` has
    /// `cells` cells and that has `colors` colors fits this word. (A
    /// spacer's offset back, an option's length, is below `set_len`, so it
    /// fits as a signed word whenever the items do.)
    fn fits(set_len: usize, cells: usize, colors: usize) -> bool;
    /// Whether `hide` prefetches the next option's cells while it walks
    /// one: it pays when the arrays overflow the first-level cache (pent6x10
    /// 2-7 % faster in 32 bits), and only costs instructions when they fit
    /// (3 % of langford12's, 1.5 % of latin5's).
    const PREFETCH: bool;
    fn get(self) -> u32;
    /// The word read as signed (a spacer's offset back).
    fn signed(self) -> i32;
    fn put(value: u32) -> Self;
}

impl Word for u16 {
    fn fits(set_len: usize, cells: usize, colors: usize) -> bool {
        // Items (indices into `set`) must read as nonnegative `i16`s.
        set_len <= i16::MAX as usize && cells <= u16::MAX as usize && colors < u16::MAX as usize
    }
    const PREFETCH: bool = true;
    #[inline(always)]
    fn get(self) -> u32 {
        u32::from(self)
    }
    #[inline(always)]
    fn signed(self) -> i32 {
        i32::from(self as i16)
    }
    #[inline(always)]
    fn put(value: u32) -> u16 {
        value as u16
    }
}

impl Word for u32 {
    fn fits(set_len: usize, cells: usize, colors: usize) -> bool {
        set_len <= i32::MAX as usize && cells <= u32::MAX as usize && colors < u32::MAX as usize
    }
    const PREFETCH: bool = true;
    #[inline(always)]
    fn get(self) -> u32 {
        self
    }
    #[inline(always)]
    fn signed(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn put(value: u32) -> u32 {
        value
    }
}

/// A 32-bit word for problems whose arrays fit the first-level cache
/// ([`fits_first_level_cache`]): `u32` without the prefetch.
#[derive(Clone, Copy, Debug, Default)]
#[repr(transparent)]
pub(crate) struct InCache32(u32);

impl Word for InCache32 {
    fn fits(set_len: usize, cells: usize, colors: usize) -> bool {
        u32::fits(set_len, cells, colors)
    }
    const PREFETCH: bool = false;
    #[inline(always)]
    fn get(self) -> u32 {
        self.0
    }
    #[inline(always)]
    fn signed(self) -> i32 {
        self.0 as i32
    }
    #[inline(always)]
    fn put(value: u32) -> InCache32 {
        InCache32(value)
    }
}

/// A cell: an item occurrence in an option, or a spacer (`itm` negative
/// when read as signed).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Cell<W> {
    itm: W,
    loc: W,
}

/// The arrays `hide` works on, as raw pointers taken once per call.
struct Arrays<W> {
    set: *mut W,
    nd: *mut Cell<W>,
    clr: *const W,
}

impl<W> Clone for Arrays<W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<W> Copy for Arrays<W> {}

/// Which items `hide` updates (`pos < oactive`) and checks (`pos < active`
/// and primary: `x < second`).
///
/// The functions that are called rather than inlined ([`hide_primary`],
/// [`hide_secondary`], [`hide_unchecked`]) take its three fields as
/// separate arguments: passed as a struct, they went through the stack,
/// and the first comparison of every walk (`pos < oactive`) waited for the
/// store to be forwarded (latin5 7 % faster without, queens14 3 %,
/// pent6x10 4 %).
#[derive(Clone, Copy)]
struct Limits {
    oactive: u32,
    active: u32,
    second: u32,
}

impl Limits {
    #[inline(always)]
    fn new(oactive: u32, active: u32, second: u32) -> Limits {
        Limits {
            oactive,
            active,
            second,
        }
    }
}

/// SSXCC's `hide`: removes the options of item `c` that do not agree with
/// `color` (all of them for 0) from the sets of the other items that were
/// active before this step (`pos < oactive`). With `CHECK`, stops as soon
/// as an active primary item is left with no option, and pushes those left
/// with one on the force stack. Returns whether no item was left without
/// options, and the updates it made.
///
/// It is inlined only into small functions that are never inlined
/// themselves ([`hide_unchecked`], [`hide_primary`], [`hide_secondary`]):
/// inside the search loop the compiler ran out of registers and kept the
/// array addresses and the counters on the stack, reloading them on every
/// update (about a third of the time on pent6x10); inlined into
/// [`cover_option`] it still reloaded the address of `set` from the stack
/// three times per update (MacMahon's squares 15 % slower, pent6x10 10 %).
/// Only its walk of one option, [`hide_option`], is also inlined into the
/// search loop, for a forced item, whose set has a single option.
///
/// # Safety
/// `c` is an item of `arrays.set`; its set holds cells of `arrays.nd`,
/// whose `itm` is an item or (spacers) the offset back to the first cell
/// of its option, and whose `loc` is a slot of its item's set.
#[inline(always)]
unsafe fn hide_options<W: Word, const COLORS: bool, const CHECK: bool>(
    arrays: Arrays<W>,
    limits: Limits,
    c: u32,
    color: u32,
    force: &mut ForceStack,
) -> (bool, u64) {
    let Arrays { set, nd, clr } = arrays;
    let mut updates = 0u64;
    let end = c + (*set.add(c as usize - 1)).get();
    for rr in c..end {
        let tt = (*set.add(rr as usize)).get();
        #[cfg(target_arch = "x86_64")]
        if W::PREFETCH && !COLORS && rr + 1 < end {
            // The next option's cells: their loads start the next chain of
            // dependent loads, so fetch them while this option is walked
            // (pent6x10 2-7 % faster; with colors, where many options are
            // skipped unwalked, MacMahon's squares went 6 % slower).
            let next = (*set.add(rr as usize + 1)).get();
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                nd.add(next as usize + 1).cast::<i8>(),
            );
        }
        if COLORS && color != 0 && (*clr.add(tt as usize)).get() == color {
            continue;
        }
        if !hide_option::<W, CHECK>(set, nd, limits, tt, force, &mut updates) {
            force.failed_hide = updates;
            return (false, updates);
        }
    }
    (true, updates)
}

/// One option's part of [`hide_options`]: removes the option of cell `tt`
/// (`c`'s cell in it) from the sets of its other items that were active
/// before this step, adding them to `updates`. False as soon as, with
/// `CHECK`, an active primary item is left without options.
///
/// # Safety
/// As for [`hide_options`]; `tt` is a cell of `nd` (not a spacer).
#[inline(always)]
unsafe fn hide_option<W: Word, const CHECK: bool>(
    set: *mut W,
    nd: *mut Cell<W>,
    limits: Limits,
    tt: u32,
    force: &mut ForceStack,
    updates: &mut u64,
) -> bool {
    let Limits {
        oactive,
        active,
        second,
    } = limits;
    let mut nn = tt + 1;
    while nn != tt {
        let Cell { itm, loc } = *nd.add(nn as usize);
        let itm = itm.signed();
        let loc = loc.get();
        if itm < 0 {
            nn = nn.wrapping_add_signed(itm);
            continue;
        }
        let uu = itm as u32;
        let pu = (*set.add(uu as usize - 2)).get();
        if pu < oactive {
            let ss = (*set.add(uu as usize - 1)).get() - 1;
            // `ss <= 1` first, and on its own: it is almost always
            // false, so its branch is predicted, whereas `pu < active`
            // (is the item still active after this step's swaps?)
            // varies from update to update. Left to itself the compiler
            // tested that one first and mispredicted it.
            if CHECK && ss <= 1 {
                std::hint::cold_path();
                if pu < active && uu < second {
                    if ss == 0 {
                        return false;
                    }
                    force.push(uu);
                }
            }
            let last = set.add((uu + ss) as usize);
            let nnp = (*last).get();
            *set.add(uu as usize - 1) = W::put(ss);
            *last = W::put(nn);
            *set.add(loc as usize) = W::put(nnp);
            (*nd.add(nn as usize)).loc = W::put(uu + ss);
            (*nd.add(nnp as usize)).loc = W::put(loc);
            *updates += 1;
        }
        nn += 1;
    }
    true
}

/// The loop of [`Cells::choose`], on its own for the same reason as
/// [`hide_options`]: its minimum stays in registers. The minimum is taken
/// over `size << 32 | item`, which is SSXCC's rule (fewest options, then
/// the smallest item) in one comparison.
///
/// # Safety
/// Every entry of `active` is an item of `set`.
#[inline(never)]
unsafe fn choose_item<W: Word>(
    set: *const W,
    active: &[W],
    second: u32,
    force: &mut ForceStack,
) -> (u32, u32) {
    let mut best = u64::MAX;
    for &x in active {
        let x = x.get();
        if x >= second {
            continue;
        }
        let s = (*set.add(x as usize - 1)).get();
        if s <= 1 {
            // An item with none (caught by `hide` below the root, but not
            // at the root: SSXCC would not search at all) is forced too,
            // and has no alternative: a dead end.
            force.push(x);
        } else {
            best = best.min(u64::from(s) << 32 | u64::from(x));
        }
    }
    if best == u64::MAX {
        (NONE, NONE)
    } else {
        (best as u32, (best >> 32) as u32)
    }
}

/// [`hide_options`] without checks, for the item being branched on; the
/// updates it made.
///
/// # Safety
/// As for [`hide_options`].
#[inline(never)]
unsafe fn hide_unchecked<W: Word, const COLORS: bool>(
    arrays: Arrays<W>,
    oactive: u32,
    active: u32,
    second: u32,
    c: u32,
    force: &mut ForceStack,
) -> u64 {
    hide_options::<W, COLORS, false>(arrays, Limits::new(oactive, active, second), c, 0, force).1
}

/// [`hide_options`] with checks, for a secondary item of the option being
/// covered.
///
/// # Safety
/// As for [`hide_options`].
#[inline(never)]
unsafe fn hide_secondary<W: Word, const COLORS: bool>(
    arrays: Arrays<W>,
    oactive: u32,
    active: u32,
    second: u32,
    c: u32,
    color: u32,
    force: &mut ForceStack,
) -> (bool, u64) {
    hide_options::<W, COLORS, true>(
        arrays,
        Limits::new(oactive, active, second),
        c,
        color,
        force,
    )
}

/// [`hide_options`] with checks, for a primary item of the option being
/// covered.
///
/// # Safety
/// As for [`hide_options`].
#[inline(never)]
unsafe fn hide_primary<W: Word, const COLORS: bool>(
    arrays: Arrays<W>,
    oactive: u32,
    active: u32,
    second: u32,
    c: u32,
    force: &mut ForceStack,
) -> (bool, u64) {
    hide_options::<W, COLORS, true>(arrays, Limits::new(oactive, active, second), c, 0, force)
}

/// `pos(x)`.
///
/// # Safety
/// `x` is an item of `set`.
#[inline(always)]
unsafe fn pos_before<W: Word>(set: *const W, x: u32) -> u32 {
    (*set.add(x as usize - 2)).get()
}

/// Moves item `x`, at position `px` of the active list, to position `p`,
/// and the item at `p` to `px` (SSXCC's swap of an item out of the active
/// list, with `p` the last active position).
///
/// # Safety
/// `x` is an item of `set` at position `px`; `p` is a position of `item`.
#[inline(always)]
unsafe fn swap_in_active_list<W: Word>(set: *mut W, item: *mut W, x: u32, px: u32, p: u32) {
    let other = (*item.add(p as usize)).get();
    *item.add(p as usize) = W::put(x);
    *item.add(px as usize) = W::put(other);
    *set.add(other as usize - 2) = W::put(px);
    *set.add(x as usize - 2) = W::put(p);
}

/// The body of [`Cells::try_option`] (SSXCC's steps that cover an option),
/// with the active count and the update counter in registers: swaps the
/// option's items out of the active list, then hides their conflicting
/// options. Returns whether no primary item was left without options, the
/// new active count and the updates made.
///
/// Inlined into the search loop: a call of its own cost a stack frame and
/// a result returned through memory at every node (latin5 4 % and
/// langford12 3 % more instructions; MacMahon's squares 5 % slower).
///
/// # Safety
/// `cur` is a cell of `arrays.nd` (not a spacer); `item` is the active
/// list of `arrays.set`, whose first `active` entries are the active items.
#[inline(always)]
unsafe fn cover_option<W: Word, const COLORS: bool>(
    arrays: Arrays<W>,
    item: *mut W,
    cur: u32,
    active: u32,
    second: u32,
    force: &mut ForceStack,
) -> (bool, u32, u64) {
    let Arrays { set, nd, clr } = arrays;
    let oactive = active;
    let mut p = oactive;
    let mut updates = 0u64;
    let mut q = cur + 1;
    while q != cur {
        let c = (*nd.add(q as usize)).itm.signed();
        if c < 0 {
            q = q.wrapping_add_signed(c);
            continue;
        }
        let c = c as u32;
        let pc = pos_before(set, c);
        if pc < p {
            p -= 1;
            swap_in_active_list(set, item, c, pc, p);
            updates += 1;
        }
        q += 1;
    }
    let mut q = cur + 1;
    while q != cur {
        let cc = (*nd.add(q as usize)).itm.signed();
        if cc < 0 {
            q = q.wrapping_add_signed(cc);
            continue;
        }
        let cc = cc as u32;
        let (ok, hidden) = if cc < second {
            // A primary item whose set the branching item's `hide` has just
            // emptied (latin5: every other one) has nothing to hide:
            // skipping the call saves the registers spilled around it
            // (latin5 4 % fewer instructions, 3 % faster).
            if (*set.add(cc as usize - 1)).get() == 0 {
                (true, 0)
            } else {
                hide_primary::<W, COLORS>(arrays, oactive, p, second, cc, force)
            }
        } else if pos_before(set, cc) < oactive {
            let color = if COLORS {
                (*clr.add(q as usize)).get()
            } else {
                0
            };
            hide_secondary::<W, COLORS>(arrays, oactive, p, second, cc, color, force)
        } else {
            (true, 0) // purified already
        };
        updates += hidden;
        if !ok {
            return (false, p, updates);
        }
        q += 1;
    }
    (true, p, updates)
}

/// The primary items known to have a single option left, waiting to be
/// forced (SSXCC's `force` array). An item goes on it when its set shrinks
/// from two options to one, and sizes grow back only when the search backs
/// up, by which time the stack is empty (a failed option clears it, a
/// solution drains it, and a node branches only once it is empty). So it
/// never holds an item twice, and room for every item is enough.
///
/// `Vec::push` cost `hide` a stack frame and spilled registers on every
/// call, for its growing path that never runs: latin5 executes 2 % fewer
/// instructions with this stack (SSXCC's node and update counts unchanged).
pub(crate) struct ForceStack {
    items: Box<[u32]>,
    len: usize,
    /// `Order::Exact`: the items taken off `items` and not yet picked, as
    /// bits (item `x` is bit `pos(x)` of the pristine arrays), which gives the
    /// smallest in a few instructions (scanning the stack for it cost
    /// latin5, where most nodes are forced, 16 % more instructions; setting
    /// the bits in `push` cost `hide` registers, 8-12 % on queens11 and
    /// langford11).
    bits: Box<[u64]>,
    /// The words of `bits` that may be nonzero: `lo..hi`.
    lo: usize,
    hi: usize,
    /// The updates of the last hide that failed, made before it met the
    /// item it left without options. That depends on the order of the
    /// sets it walked, which depends on the history of the search (a node
    /// rebuilt from a task's path differs from one reached by
    /// backtracking); which hide fails, and what each hide before it
    /// removes, do not (the sets hold the same options in any order). So
    /// `Order::Exact` does not count them: they are undone at once anyway.
    /// (Kept here, where the failing hide has a pointer, rather than
    /// returned: `cover_option` kept one more register for it.)
    failed_hide: u64,
}

impl ForceStack {
    /// A stack for `items` items, with `bits` for `Order::Exact`.
    fn new(items: usize, exact: bool) -> ForceStack {
        let words = if exact { items / 64 + 1 } else { 1 };
        ForceStack {
            items: vec![0; items.max(1)].into_boxed_slice(),
            len: 0,
            bits: vec![0; words].into_boxed_slice(),
            lo: words,
            hi: 0,
            failed_hide: 0,
        }
    }

    /// Pushes `x`, which is not on the stack (so there is room; see
    /// above). The index is clamped rather than checked: a check that
    /// panics made `hide` keep a stack frame (3 % more instructions on
    /// latin5 than the clamp), and the clamp keeps the write in bounds for
    /// any caller.
    #[inline(always)]
    fn push(&mut self, x: u32) {
        debug_assert!(self.len < self.items.len());
        let top = self.len.min(self.items.len() - 1);
        // SAFETY: `top` is below the length (`items` is never empty).
        unsafe { *self.items.get_unchecked_mut(top) = x };
        self.len = top + 1;
    }

    /// The item pushed last (`Order::Ssxcc`).
    #[inline(always)]
    fn pop(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: `len` was at most the length of `items`.
        Some(unsafe { *self.items.get_unchecked(self.len) })
    }

    #[inline(always)]
    fn clear(&mut self) {
        self.len = 0;
        if self.lo < self.hi {
            self.clear_bits();
        }
    }

    #[cold]
    #[inline(never)]
    fn clear_bits(&mut self) {
        for w in self.lo..self.hi {
            self.bits[w] = 0;
        }
        self.lo = self.bits.len();
        self.hi = 0;
    }

    /// `Order::Exact`'s pick: the smallest item on the stack that is still
    /// active (`active(x)`), taken off it; the inactive ones below it are
    /// dropped on the way. Which items are on the stack does not depend on
    /// the history (each went on it when a hide of the path left it one
    /// option), only the order they were pushed in does, so the smallest
    /// is the same in every run that reaches the node.
    #[inline(always)]
    fn take_smallest(
        &mut self,
        index: impl Fn(u32) -> u32,
        item: impl Fn(u32) -> u32,
        active: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        if self.lo >= self.hi && self.len <= 1 {
            // One item or none, the common case (queens11 3 % fewer
            // instructions than going through the bits).
            return self.pop().filter(|&x| active(x));
        }
        let last = self.bits.len() - 1;
        for k in 0..self.len {
            // SAFETY: `k < len <= items.len()`; `word` is clamped.
            unsafe {
                let i = index(*self.items.get_unchecked(k));
                let word = (i as usize / 64).min(last);
                *self.bits.get_unchecked_mut(word) |= 1 << (i % 64);
                self.lo = self.lo.min(word);
                self.hi = self.hi.max(word + 1);
            }
        }
        self.len = 0;
        while self.lo < self.hi {
            // SAFETY: `hi <= bits.len()`.
            let word = unsafe { self.bits.get_unchecked_mut(self.lo) };
            if *word == 0 {
                self.lo += 1;
                continue;
            }
            let x = item((self.lo * 64) as u32 + word.trailing_zeros());
            *word &= *word - 1;
            if active(x) {
                return Some(x);
            }
        }
        self.lo = self.bits.len();
        self.hi = 0;
        None
    }
}

/// `array[level]` for a per-level array, without a bounds check: the
/// search loop touches these arrays about ten times per node, and the
/// checks were 5 % of latin5's instructions.
///
/// # Safety
/// `level < array.len()`. Every per-level array has `depth` entries
/// (`saved` one more) from [`Cells::new`] on, and the search never lets
/// `level + 1` reach `depth` (see its `unreachable!`).
#[inline(always)]
unsafe fn at<T>(array: &mut [T], level: usize) -> &mut T {
    debug_assert!(level < array.len());
    array.get_unchecked_mut(level)
}

/// "No branching item": the size SSXCC uses for "no active primary item".
const NONE: u32 = u32::MAX;

pub(crate) struct Cells<W> {
    nd: Vec<Cell<W>>,
    /// Color of each cell: 0 uncolored, else the color's index + 1.
    clr: Vec<W>,
    set: Vec<W>,
    item: Vec<W>,
    /// The arrays as built, copied back at the start of every run.
    nd0: Vec<Cell<W>>,
    set0: Vec<W>,
    item0: Vec<W>,
    items: u32,
    /// Items `x < second` are primary.
    second: u32,
    node_option: Vec<u32>,
    colors: bool,
    /// `order == Order::Exact`.
    exact: bool,
    active: u32,
    updates: u64,
    force: ForceStack,
    save: Vec<(W, W)>,
    /// The most pairs `save` can need (see [`super::memory`]): it grows up
    /// to there and no further, and a failed allocation stops the run.
    save_limit: usize,
    /// Bytes the save stack could not get, when it could not.
    out_of_memory: Option<u64>,
    // Per level: boxed, so their lengths stay those `Cells::new` gives them
    // (`depth`, `saved` one more), which the search's unchecked accesses
    // (see `at`) rely on.
    saved: Box<[usize]>,
    choice: Box<[u32]>,
    /// Position in the branching item's set of the alternative being tried.
    pos: Box<[Decision]>,
    /// The ranks of the current path, filled when progress is reported.
    ranks: Vec<Decision>,
    degree: Box<[Decision]>,
    /// The range of ranks this run owns at each level.
    lo: Box<[Decision]>,
    hi: Box<[Decision]>,
    /// Whether some alternative's rank may be outside `lo..hi`.
    filtered: Box<[bool]>,
    /// Alternatives of the range tried before the current one.
    tried: Box<[Decision]>,
    // Per run.
    /// The level of the task's node.
    base: usize,
    task_run: TaskRun,
}

/// Whether the cells engine can search `problem`: every problem, those
/// with multiplicities by Algorithm M on sparse sets (`cells_mcc.rs`).
pub(crate) fn supports(_problem: &Problem) -> bool {
    true
}

/// The lengths of the arrays [`Cells::new`] builds for `problem`, at most
/// (dropped options count too): `set` (two words per item and one per item
/// occurrence) and `nd` (a cell per item occurrence, a spacer per option,
/// and the cell 0).
fn array_lengths(problem: &Problem) -> (usize, usize) {
    let set = problem.entries() + 2 * problem.items().len();
    let cells = problem.entries() + problem.options().len() + 1;
    (set, cells)
}

/// Whether `problem`'s arrays fit words of type `W`.
pub(crate) fn fits<W: Word>(problem: &Problem) -> bool {
    let (set, cells) = array_lengths(problem);
    W::fits(set, cells, problem.colors().len())
}

/// Whether the 32-bit arrays the search walks (`nd`, `set`, and `clr` with
/// colors) fit a 32 KiB first-level data cache.
pub(crate) fn fits_first_level_cache(problem: &Problem) -> bool {
    const FIRST_LEVEL_CACHE: usize = 32 * 1024;
    let (set, cells) = array_lengths(problem);
    let colors = if problem.has_colors() { cells } else { 0 };
    4 * (2 * cells + set + colors) <= FIRST_LEVEL_CACHE
}

/// Whether 16-bit words pay for `problem`: they fit, and the 32-bit arrays
/// would not fit the first-level cache. Measured on an AMD Zen 3 (whose L1
/// has 32 KiB): pent6x10's 165 KB of 32-bit arrays ran about a third faster
/// in 16 bits and MacMahon's squares' 103 KB about 8 %, while latin5,
/// langford12 and queens14 (6 to 12 KB) ran 2 to 4 % slower, the words
/// costing more to widen than the cache saves.
pub(crate) fn narrow_pays(problem: &Problem) -> bool {
    fits::<u16>(problem) && !fits_first_level_cache(problem)
}

impl<W: Word> RunsTasks for Cells<W> {
    #[inline(always)]
    fn run_state(&mut self) -> (&mut TaskRun, usize, &[Decision]) {
        (&mut self.task_run, self.base, &self.degree)
    }

    #[inline(always)]
    fn counters(&self) -> (u64, u64) {
        (self.updates, 0)
    }

    fn poll_visitor<V: Visitor>(&mut self, level: usize, visitor: &mut V) -> Option<Exit> {
        // Positions are ranks, as in tasks: the same node has the same
        // name in every run.
        let mut ranks = std::mem::take(&mut self.ranks);
        ranks.clear();
        ranks.extend((0..level).map(|l| {
            let cur = self.choice[l];
            self.rank(self.item_of(cur), cur)
        }));
        self.ranks = ranks;
        let request = self.task_run.ask(
            visitor,
            self.base,
            &self.ranks,
            &self.degree[..level],
            |l| self.tried[l],
        );
        Exit::after_poll(request, visitor, || self.give_away(level))
    }
}

impl<W: Word> Cells<W> {
    /// # Panics
    /// If `problem` does not [`fits`] `W`.
    pub(crate) fn new(problem: &Problem, ties: Order) -> Cells<W> {
        assert!(fits::<W>(problem), "the problem is too large for this word");
        let items = problem.items();
        let n = items.len();
        // Primary items first, then secondary ones, each in input order.
        let order: Vec<usize> = (0..n)
            .filter(|&i| items[i].is_primary())
            .chain((0..n).filter(|&i| !items[i].is_primary()))
            .collect();
        let mut size = vec![0u32; n];
        for (index, option) in problem.options().iter().enumerate() {
            if !problem.is_dropped(index) {
                for e in option {
                    size[e.item] += 1;
                }
            }
        }
        let mut base_of = vec![0u32; n];
        let mut set: Vec<W> = Vec::with_capacity(problem.entries() + 2 * n + 2);
        let mut item: Vec<W> = Vec::with_capacity(n);
        let mut second = None;
        for (k, &i) in order.iter().enumerate() {
            if !items[i].is_primary() && second.is_none() {
                second = Some(set.len() as u32 + 2);
            }
            set.push(W::put(k as u32)); // pos
            set.push(W::put(size[i])); // size
            base_of[i] = set.len() as u32;
            item.push(W::put(set.len() as u32));
            set.resize(set.len() + size[i] as usize, W::default());
        }
        let second = second.unwrap_or(set.len() as u32 + 2);
        let mut fill = vec![0u32; n];
        let mut nd: Vec<Cell<W>> = vec![Cell::default()];
        let mut clr: Vec<W> = vec![W::default()];
        let mut node_option = vec![u32::MAX];
        for (index, option) in problem.options().iter().enumerate() {
            if problem.is_dropped(index) {
                continue;
            }
            for e in option {
                let x = base_of[e.item];
                let loc = x + fill[e.item];
                fill[e.item] += 1;
                set[loc as usize] = W::put(nd.len() as u32);
                nd.push(Cell {
                    itm: W::put(x),
                    loc: W::put(loc),
                });
                clr.push(W::put(e.color.map_or(0, |c| c + 1)));
                node_option.push(index as u32);
            }
            nd.push(Cell {
                itm: W::put((option.len() as u32).wrapping_neg()),
                loc: W::default(),
            });
            clr.push(W::default());
            node_option.push(u32::MAX);
        }
        // A solution has at most one option per primary item; forced moves
        // and branchings each choose one.
        let depth = problem.primary_count() + 2;
        let force = ForceStack::new(n, ties == Order::Exact);
        Cells {
            nd0: nd.clone(),
            set0: set.clone(),
            item0: item.clone(),
            nd,
            clr,
            set,
            item,
            items: n as u32,
            second,
            node_option,
            colors: problem.has_colors(),
            exact: ties == Order::Exact,
            active: n as u32,
            updates: 0,
            force,
            save: Vec::new(),
            save_limit: usize::try_from(super::memory::cells_save_entries(problem))
                .unwrap_or(usize::MAX),
            out_of_memory: None,
            saved: vec![0; depth + 1].into_boxed_slice(),
            choice: vec![0; depth].into_boxed_slice(),
            pos: vec![0; depth].into_boxed_slice(),
            ranks: Vec::with_capacity(depth),
            degree: vec![0; depth].into_boxed_slice(),
            lo: vec![0; depth].into_boxed_slice(),
            hi: vec![0; depth].into_boxed_slice(),
            filtered: vec![false; depth].into_boxed_slice(),
            tried: vec![0; depth].into_boxed_slice(),
            base: 0,
            task_run: TaskRun::new(depth),
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
        if self.colors {
            "C"
        } else {
            "X"
        }
    }

    fn reset(&mut self) {
        self.nd.copy_from_slice(&self.nd0);
        self.set.copy_from_slice(&self.set0);
        self.item.copy_from_slice(&self.item0);
        self.active = self.items;
        self.force.clear();
        self.save.clear();
        self.out_of_memory = None;
        self.saved[0] = 0;
        self.updates = 0;
    }

    // ----- The sparse sets -----
    //
    // The steps below run a billion times on the larger benchmarks. They
    // read and write the arrays through raw pointers taken once per step:
    // every index is an item (`x` with `pos` at `x - 2` and size at
    // `x - 1`), a cell of `nd`, or a slot of an item's set, all built in
    // bounds by `Cells::new` and only ever permuted within their item's
    // set since (debug builds check them). Local pointers also keep the
    // compiler from reloading each array's address after every store.

    #[inline(always)]
    fn size(&self, x: u32) -> u32 {
        debug_assert!(x >= 2 && (x as usize) <= self.set.len());
        // SAFETY: `x` is an item (see above).
        unsafe { self.set.get_unchecked(x as usize - 1).get() }
    }

    #[inline(always)]
    fn position(&self, x: u32) -> u32 {
        debug_assert!(x >= 2 && (x as usize) <= self.set.len());
        // SAFETY: `x` is an item.
        unsafe { self.set.get_unchecked(x as usize - 2).get() }
    }

    /// Swaps item `x` (active, at `pos(x) < last`) to position `last - 1`.
    #[inline(always)]
    fn swap_out(&mut self, x: u32, last: u32) {
        let set = self.set.as_mut_ptr();
        let item = self.item.as_mut_ptr();
        debug_assert!(last >= 1 && last <= self.items && self.position(x) < last);
        // SAFETY: `x` and `item[..]` are items, `last - 1` and `pos(x)` are
        // positions of the active list.
        unsafe { swap_in_active_list(set, item, x, pos_before(set, x), last - 1) };
        self.updates += 1;
    }

    /// SSXCC's `hide(c, 0, 0)`: removes every option of item `c` from the
    /// sets of the other items that are still active.
    #[inline(always)]
    fn hide_all<const COLORS: bool>(&mut self, c: u32) {
        let arrays = Arrays {
            set: self.set.as_mut_ptr(),
            nd: self.nd.as_mut_ptr(),
            clr: self.clr.as_ptr(),
        };
        let (active, second) = (self.active, self.second);
        if self.size(c) == 1 {
            // A forced item (most of latin5's nodes): its one option is
            // walked here, inline, rather than through `hide_unchecked`,
            // whose call and stack frame cost more than the walk (latin5
            // 3 % fewer instructions and 4-5 % faster; the others within
            // noise).
            // SAFETY: `set[c]`, the first slot of `c`'s set, holds a cell;
            // the arrays are this engine's (see the comment above `size`).
            unsafe {
                let tt = (*arrays.set.add(c as usize)).get();
                let force = &mut self.force;
                hide_option::<W, false>(
                    arrays.set,
                    arrays.nd,
                    Limits::new(active, active, second),
                    tt,
                    force,
                    &mut self.updates,
                );
            }
            return;
        }
        // SAFETY: `c` is an item and the arrays are this engine's (see the
        // comment above `size`).
        self.updates += unsafe {
            hide_unchecked::<W, COLORS>(arrays, active, active, second, c, &mut self.force)
        };
    }

    /// The item to branch on at a node, by SSXCC's rule: among the active
    /// primary items, every one with a single option goes on the force
    /// stack; otherwise the one with the fewest options, the earliest item
    /// on ties. `NONE` when no primary item is active (a solution).
    #[inline(always)]
    fn choose(&mut self) -> (u32, u32) {
        // SAFETY: the first `active` entries of `item` are items of `set`.
        unsafe {
            choose_item(
                self.set.as_ptr(),
                &self.item[..self.active as usize],
                self.second,
                &mut self.force,
            )
        }
    }

    /// The item to branch on at the node being entered, as SSXCC's step
    /// "forward" picks it: an item left on the force stack by the level
    /// above if one is still active, else `choose`'s pick (the last item it
    /// forced, if any). Returns the item and its degree: 1 for a forced
    /// item, `NONE` (no item) at a solution.
    #[inline(always)]
    fn next_item(&mut self) -> (u32, u32) {
        if self.exact {
            return self.next_item_exact();
        }
        while let Some(x) = self.force.pop() {
            if self.position(x) < self.active {
                return (x, 1);
            }
        }
        let (best, t) = self.choose();
        match self.force.pop() {
            Some(x) => (x, 1),
            None => (best, t),
        }
    }

    /// [`Cells::next_item`] in `Order::Exact`: the smallest active item
    /// waiting to be forced rather than the last one pushed.
    #[inline(always)]
    fn next_item_exact(&mut self) -> (u32, u32) {
        let set = self.set.as_ptr();
        let (set0, item0) = (self.set0.as_ptr(), self.item0.as_ptr());
        let active = self.active;
        // SAFETY: the stack holds items of `set`, whose pristine positions
        // index `item0`.
        let index = |x: u32| unsafe { pos_before(set0, x) };
        let item = |i: u32| unsafe { (*item0.add(i as usize)).get() };
        let is_active = |x: u32| unsafe { pos_before(set, x) } < active;
        if let Some(x) = self.force.take_smallest(index, item, is_active) {
            return (x, 1);
        }
        let (best, t) = self.choose();
        match self.force.take_smallest(index, item, is_active) {
            Some(x) => (x, 1),
            None => (best, t),
        }
    }

    /// Takes `best` out of the active list and hides its options.
    #[inline(always)]
    fn open<const COLORS: bool>(&mut self, best: u32) {
        let active = self.active;
        self.swap_out(best, active);
        self.active = active - 1;
        self.hide_all::<COLORS>(best);
    }

    /// SSXCC's "save the currently active sizes" for level `level`; false
    /// when the stack could not grow (see [`Cells::grow_save`]).
    #[inline(always)]
    fn save_sizes(&mut self, level: usize) -> bool {
        let start = self.saved[level];
        let active = self.active as usize;
        if self.save.len() < start + active && !self.grow_save(start + active) {
            return false;
        }
        let set = self.set.as_ptr();
        let item = self.item.as_ptr();
        let save = self.save.as_mut_ptr();
        // SAFETY: positions below `active` hold items; `save` has room.
        unsafe {
            for p in 0..active {
                let x = *item.add(p);
                *save.add(start + p) = (x, *set.add(x.get() as usize - 1));
            }
        }
        self.saved[level + 1] = start + active;
        true
    }

    /// Makes the save stack `needed` pairs long. Its capacity doubles, as a
    /// `Vec`'s would, but never past `save_limit` (the stack's worst case),
    /// and an allocation that fails is noted in `out_of_memory`, not an
    /// abort: a chain of 20,000 items asked for 2.6 GB at once.
    #[cold]
    #[inline(never)]
    fn grow_save(&mut self, needed: usize) -> bool {
        if needed > self.save.capacity() {
            let wanted = needed
                .max(self.save.capacity().saturating_mul(2))
                .min(self.save_limit.max(needed));
            let more = wanted - self.save.len();
            if self.save.try_reserve_exact(more).is_err() {
                self.out_of_memory = Some((wanted * std::mem::size_of::<(W, W)>()) as u64);
                return false;
            }
        }
        self.save.resize(needed, Default::default());
        true
    }

    #[inline(always)]
    fn restore_sizes(&mut self, level: usize) {
        let (start, end) = (self.saved[level], self.saved[level + 1]);
        self.active = (end - start) as u32;
        let set = self.set.as_mut_ptr();
        for &(x, s) in &self.save[start..end] {
            // SAFETY: saved entries are items.
            unsafe { *set.add(x.get() as usize - 1) = s };
        }
    }

    /// Covers the other items of the option of cell `cur`: swaps them out
    /// of the active list, then hides their conflicting options. False when
    /// that leaves an active primary item without options.
    #[inline(always)]
    fn try_option<const COLORS: bool>(&mut self, cur: u32) -> bool {
        let arrays = Arrays {
            set: self.set.as_mut_ptr(),
            nd: self.nd.as_mut_ptr(),
            clr: self.clr.as_ptr(),
        };
        // SAFETY: `cur` is a cell of an option; the arrays are this
        // engine's (see the comment above `size`).
        let (ok, active, updates) = unsafe {
            cover_option::<W, COLORS>(
                arrays,
                self.item.as_mut_ptr(),
                cur,
                self.active,
                self.second,
                &mut self.force,
            )
        };
        self.active = active;
        self.updates += updates;
        if !ok {
            if self.exact {
                self.updates -= self.force.failed_hide;
            }
            self.force.clear();
        }
        ok
    }

    /// The rank of cell `y` among the alternatives of `best` (see the
    /// module's doc).
    fn rank(&self, best: u32, y: u32) -> Decision {
        let s = &self.set[best as usize..(best + self.size(best)) as usize];
        s.iter().filter(|&&z| z.get() < y).count() as Decision
    }

    /// The cell at slot `slot` of `set`.
    #[inline(always)]
    fn slot(&self, slot: u32) -> u32 {
        debug_assert!((slot as usize) < self.set.len());
        // SAFETY: slots are indices of `set` (see the comment above `size`).
        unsafe { self.set.get_unchecked(slot as usize).get() }
    }

    /// The item of cell `cur` (not a spacer).
    #[inline(always)]
    fn item_of(&self, cur: u32) -> u32 {
        debug_assert!((cur as usize) < self.nd.len());
        // SAFETY: `cur` is a cell of `nd`.
        unsafe { self.nd.get_unchecked(cur as usize).itm.get() }
    }

    /// Ranks of the alternatives chosen at levels `0..level`.
    fn rank_path(&self, level: usize) -> Vec<Decision> {
        (0..level)
            .map(|l| {
                let cur = self.choice[l];
                self.rank(self.item_of(cur), cur)
            })
            .collect()
    }

    // ----- Runs -----

    pub(crate) fn run<V: Visitor>(
        &mut self,
        task: &Task,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Result<Outcome, RunError> {
        self.reset();
        self.base = task.path.len();
        if let Some(outcome) = self.task_run.start(task, config) {
            return Ok(outcome);
        }
        if self.base + 2 > self.choice.len() {
            return Err(TaskError {
                level: self.choice.len() - 2,
                position: 0,
            }
            .into());
        }
        let result = if self.colors {
            self.search::<true, V>(task, config, visitor)
        } else {
            self.search::<false, V>(task, config, visitor)
        };
        let result = result?;
        if let Some(bytes) = self.out_of_memory.take() {
            return Err(RunError::OutOfMemory(OutOfMemory {
                engine: Engine::Cells,
                bytes,
            }));
        }
        Ok(self.task_run.outcome((self.updates, 0), result))
    }

    /// SSXCC's main loop, with task ranges. Knuth's labels (forward,
    /// advance, backup, abort) are loops here rather than states of a
    /// `match`: the jumps between them are then direct branches, where a
    /// state variable cost an indirect jump per step (several per node).
    fn search<const COLORS: bool, V: Visitor>(
        &mut self,
        task: &Task,
        config: &RunConfig,
        visitor: &mut V,
    ) -> Result<(Status, Vec<Task>), TaskError> {
        let mut level = 0usize;
        // The cell of `set` being tried at `level`, and its item.
        let mut cur_choice;
        let mut best;
        let exit = 'forward: loop {
            if let Some(exit) = self.enter_node(level, config, visitor) {
                break self.finish(exit, level, task);
            }
            // Whether this node has alternatives to try (else: back up).
            let mut branch = true;
            cur_choice = 0;
            best = 0;
            if config.check_partial && level > self.base && !self.accepts(level, visitor) {
                self.force.clear();
                branch = false;
            } else {
                let (item, t) = self.next_item();
                if t == NONE {
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
                    branch = false;
                } else {
                    best = item;
                    self.open::<COLORS>(best);
                    if t == 1 {
                        // SAFETY: `level + 1 < depth` (see `at`).
                        unsafe { *at(&mut self.saved, level + 1) = *at(&mut self.saved, level) };
                    } else if !self.save_sizes(level) {
                        break self.finish(Exit::Stop(Status::Stopped), level, task);
                    }
                    self.enter_level(level, task, t);
                    cur_choice = best;
                    if level == self.base && !self.task_run.fresh_base {
                        self.end_replay();
                    }
                }
            }
            // Advance: try the alternatives of `level` from `cur_choice` on;
            // on running out, back up to the level above and abort the
            // alternative taken there.
            loop {
                if branch {
                    // Skip the alternatives outside this run's range.
                    let end = best + self.size(best);
                    // SAFETY (here and below): `level + 1 < depth` (see `at`).
                    if unsafe { *at(&mut self.filtered, level) } {
                        while cur_choice < end {
                            let r = self.rank(best, self.slot(cur_choice));
                            if self.lo[level] <= r && r < self.hi[level] {
                                break;
                            }
                            cur_choice += 1;
                        }
                    }
                    if cur_choice < end {
                        let cur = self.slot(cur_choice);
                        unsafe {
                            *at(&mut self.choice, level) = cur;
                            *at(&mut self.pos, level) = cur_choice - best;
                        }
                        if self.try_option::<COLORS>(cur) {
                            level += 1;
                            if level + 1 >= self.choice.len() {
                                // Each level covers a primary item: cannot happen.
                                unreachable!("more levels than primary items");
                            }
                            continue 'forward;
                        }
                        if level < self.base && self.degree[level] > 1 {
                            // A branching alternative that fails on entry
                            // is no node: the path is not one of this tree.
                            return Err(TaskError {
                                level,
                                position: task.path[level],
                            });
                        }
                        // Abort: on to the next alternative, if any.
                        if self.next_alternative(level, best, &mut cur_choice) {
                            continue;
                        }
                    } else if level < self.base
                        && self.tried[level] == 0
                        && (self.degree[level] > 1 || task.path[level] > 0)
                    {
                        // The path names an alternative past the last.
                        return Err(TaskError {
                            level,
                            position: task.path[level],
                        });
                    }
                }
                // Backup, as often as the level above has no alternative left.
                loop {
                    if level == 0 {
                        break 'forward self.finish(Exit::Done, 0, task);
                    }
                    level -= 1;
                    let cur = unsafe { *at(&mut self.choice, level) };
                    best = self.item_of(cur);
                    cur_choice = self.nd[cur as usize].loc.get();
                    if self.next_alternative(level, best, &mut cur_choice) {
                        break;
                    }
                }
                branch = true;
            }
        };
        Ok(exit)
    }

    /// Knuth's "abort": undoes the alternative at `cur_choice` and moves to
    /// the next one of `best`'s set; false when there is none.
    #[inline(always)]
    fn next_alternative(&mut self, level: usize, best: u32, cur_choice: &mut u32) -> bool {
        if *cur_choice + 1 >= best + self.size(best) {
            return false;
        }
        self.restore_sizes(level);
        // SAFETY: `level + 1 < depth` (see `at`).
        unsafe { *at(&mut self.tried, level) += 1 };
        *cur_choice += 1;
        true
    }

    /// Sets the range of ranks of a freshly entered level with `degree`
    /// alternatives.
    #[inline(always)]
    fn enter_level(&mut self, level: usize, task: &Task, degree: u32) {
        if level > self.base && self.task_run.cuts.is_empty() {
            // The common case, without the general case's branches (1.4 %
            // of latin5's instructions): every alternative is this run's.
            self.set_range(level, 0, degree, degree);
            return;
        }
        let (lo, hi) = self
            .task_run
            .range(level, self.base, task, degree, || self.rank_path(level));
        self.set_range(level, lo, hi, degree);
        if level == self.base {
            self.task_run.set_base_unit(self.base, task, lo, hi);
        }
    }

    /// Gives `level` (with `degree` alternatives) the range of ranks `lo..hi`.
    #[inline(always)]
    fn set_range(&mut self, level: usize, lo: Decision, hi: Decision, degree: Decision) {
        // SAFETY: `level + 1 < depth` (see `at`).
        unsafe {
            *at(&mut self.lo, level) = lo;
            *at(&mut self.hi, level) = hi;
            *at(&mut self.degree, level) = degree;
            *at(&mut self.tried, level) = 0;
            *at(&mut self.filtered, level) = lo > 0 || hi < degree;
        }
    }

    #[cold]
    #[inline(never)]
    fn end_replay(&mut self) {
        self.task_run.end_replay((self.updates, 0));
    }

    /// The ranks of the alternatives of the range at `level` tried so far
    /// (the current one included).
    fn tried_ranks(&self, level: usize) -> Vec<Decision> {
        let cur = self.choice[level];
        let best = self.item_of(cur);
        let upto = self.pos[level];
        (0..=upto)
            .map(|k| self.rank(best, self.slot(best + k)))
            .filter(|&r| self.lo[level] <= r && r < self.hi[level])
            .collect()
    }

    /// Gives away the ranks above every tried rank, upper half, at the
    /// shallowest level that has any. Called at a node on `level` (units
    /// filled).
    fn give_away(&mut self, level: usize) -> Option<Task> {
        for l in self.base..level {
            let hi = self.hi[l];
            if self.tried[l] + 1 >= hi.saturating_sub(self.lo[l]) {
                continue; // nothing untried
            }
            let max_tried = self.tried_ranks(l).into_iter().max()?;
            let Some(mid) = upper_half(max_tried, hi) else {
                continue;
            };
            self.hi[l] = mid;
            self.filtered[l] = true;
            return Some(self.task_run.give_away(self.rank_path(l), mid, hi));
        }
        None
    }

    /// The run's status and, after a checkpoint, its unexplored work: the
    /// node itself, then each level's untried ranks as maximal intervals,
    /// deepest first.
    fn finish(&mut self, exit: Exit, level: usize, task: &Task) -> (Status, Vec<Task>) {
        self.task_run.fill_units(level, self.base, &self.degree);
        exit.finish(|| {
            let ranks = self.rank_path(level);
            self.task_run
                .remaining_tasks(self.base, task, &ranks, |l, untried| {
                    let (lo, hi) = (self.lo[l], self.hi[l]);
                    let tried = self.tried_ranks(l);
                    let mut r = lo;
                    while r < hi {
                        if tried.contains(&r) {
                            r += 1;
                            continue;
                        }
                        let from = r;
                        while r < hi && !tried.contains(&r) {
                            r += 1;
                        }
                        untried.push((from, r));
                    }
                })
        })
    }

    fn accepts<V: Visitor>(&self, level: usize, visitor: &mut V) -> bool {
        visitor.partial(&SolutionView::new(
            &self.choice[..level],
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
        let flow = visitor.solution(&SolutionView::new(
            &self.choice[..level],
            &self.node_option,
            0,
        ));
        self.task_run
            .stats
            .count_solution(flow, config)
            .map(Exit::Stop)
    }

    /// What `path` (ranks) leads to: the option taken at each level and the
    /// node's alternatives in rank order (none at a solution, or when a
    /// forced move on the way meets a contradiction: an empty subtree).
    pub(crate) fn describe(&mut self, path: &[Decision]) -> Result<PathNode, TaskError> {
        if self.colors {
            self.describe_with::<true>(path)
        } else {
            self.describe_with::<false>(path)
        }
    }

    fn describe_with<const COLORS: bool>(
        &mut self,
        path: &[Decision],
    ) -> Result<PathNode, TaskError> {
        self.reset();
        let mut taken = Vec::with_capacity(path.len());
        let mut level = 0;
        loop {
            let (best, t) = self.next_item();
            if t == NONE {
                if level < path.len() {
                    return Err(TaskError {
                        level,
                        position: path[level],
                    });
                }
                return Ok(PathNode {
                    taken,
                    passed: Vec::new(),
                    alternatives: Vec::new(),
                    degree: 0,
                    solution: true,
                });
            }
            self.open::<COLORS>(best);
            let mut alternatives: Vec<u32> = (best..best + self.size(best))
                .map(|slot| self.slot(slot))
                .collect();
            alternatives.sort_unstable();
            if level == path.len() {
                return Ok(PathNode {
                    taken,
                    passed: Vec::new(),
                    degree: alternatives.len() as Decision,
                    alternatives: alternatives
                        .iter()
                        .map(|&c| self.node_option[c as usize] as usize)
                        .collect(),
                    solution: false,
                });
            }
            let Some(&cur) = alternatives.get(path[level] as usize) else {
                return Err(TaskError {
                    level,
                    position: path[level],
                });
            };
            taken.push(self.node_option[cur as usize] as usize);
            if !self.try_option::<COLORS>(cur) {
                if alternatives.len() > 1 {
                    return Err(TaskError {
                        level,
                        position: path[level],
                    });
                }
                // A forced chain that fails: a dead end, no solution below.
                return Ok(PathNode {
                    taken,
                    passed: Vec::new(),
                    alternatives: Vec::new(),
                    degree: 0,
                    solution: false,
                });
            }
            level += 1;
        }
    }

    /// One random walk down SSXCC's tree (see [`super::Solver::probe`]):
    /// at each node an alternative drawn by `choose` among the branching
    /// item's options, in any order (the walk is uniform whatever the
    /// order). An option that fails on entry ends the walk as
    /// [`ProbeEnd::Missing`]: SSXCC does not count it as a node.
    pub(crate) fn probe(&mut self, choose: &mut dyn FnMut(Decision) -> Decision) -> Probe {
        if self.colors {
            self.probe_with::<true>(choose)
        } else {
            self.probe_with::<false>(choose)
        }
    }

    fn probe_with<const COLORS: bool>(
        &mut self,
        choose: &mut dyn FnMut(Decision) -> Decision,
    ) -> Probe {
        self.reset();
        let mut degrees = Vec::new();
        let end = loop {
            let (best, t) = self.next_item();
            if t == NONE {
                break ProbeEnd::Solution;
            }
            self.open::<COLORS>(best);
            let degree = self.size(best);
            if degree == 0 {
                break ProbeEnd::DeadEnd;
            }
            let r = choose(degree).min(degree - 1);
            degrees.push(degree);
            let cur = self.slot(best + r);
            if !self.try_option::<COLORS>(cur) {
                break ProbeEnd::Missing;
            }
        };
        Probe { degrees, end }
    }
}
