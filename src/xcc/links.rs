//! The dancing-links data structure and its dance steps, after Knuth's DLX2
//! and DLX3: flat arrays of nodes indexed by integers.
//!
//! Layout (as in Knuth's programs):
//! - items are numbered 1..=N, primary items first, in input order; `prev` and
//!   `next` link the active primary items in a circular list through the root
//!   0, and the secondary items in a list through the head N+1;
//! - nodes 1..=N are the item headers (their `top` holds the list length);
//!   node N+1 is the first spacer; each option's nodes follow, each option
//!   closed by a spacer whose `top` is <= 0, whose `up` points to the first
//!   node of the option before it and whose `down` to the last node of the
//!   option after it;
//! - `color` is 0 for an uncolored occurrence, the color number + 1
//!   otherwise, and -1 while the option is known to agree with a purified item.
//!
//! Every removal of a node from a list, and every removal of an item from the
//! active list, counts as one *update*, so the counts can be compared with
//! Knuth's. The `COLORS` parameter compiles a lean version of each step for
//! problems without colors, where no node can carry a color test.

use super::problem::Problem;

/// Knuth's numbering of a problem's items and their active lists, shared by
/// every dancing-links search (DLX2/DLX3 here, DLX6 in `memo`, DLX5 in
/// `cheapest`, which also uses [`Links`] and its `hide`/`unhide`): items
/// 1..=N, primary ones first, each kind in input order; the primary items
/// in a ring through the root 0, the secondary ones through the head N+1.
pub(super) struct ItemLists {
    /// The engine's number of each input item.
    pub engine_item: Vec<u32>,
    /// The first secondary item's number.
    pub second: u32,
    /// N + 1: the secondary ring's head, and the first spacer node.
    pub last_itm: u32,
    pub prev: Vec<u32>,
    pub next: Vec<u32>,
}

impl ItemLists {
    pub fn new(problem: &Problem) -> ItemLists {
        let items = problem.items();
        let n = items.len();
        let mut engine_item = vec![0u32; n];
        let mut k = 1u32;
        for primary in [true, false] {
            for (i, item) in items.iter().enumerate() {
                if item.is_primary() == primary {
                    engine_item[i] = k;
                    k += 1;
                }
            }
        }
        let second = 1 + items.iter().filter(|i| i.is_primary()).count() as u32;
        let last_itm = n as u32 + 1;
        let mut prev = vec![0u32; n + 2];
        let mut next = vec![0u32; n + 2];
        let mut ring = |head: u32, lo: u32, hi: u32| {
            let mut last = head;
            for i in lo..hi {
                next[last as usize] = i;
                prev[i as usize] = last;
                last = i;
            }
            next[last as usize] = head;
            prev[head as usize] = last;
        };
        ring(ROOT, 1, second);
        ring(last_itm, second, last_itm);
        ItemLists {
            engine_item,
            second,
            last_itm,
            prev,
            next,
        }
    }
}

/// A node of the dancing-links arrays: `up` and `down` link it in its item's
/// list; `top` is the item number for an option node, the list length for a
/// header, and <= 0 for a spacer; `color` as described above.
///
/// Two layouts: [`Wide`] (16 bytes, any size) and [`Narrow`] (8 bytes, for
/// problems of at most 65,535 nodes). The search touches nodes at random
/// all over the arrays, so halving them keeps twice as many in each cache
/// level: on pent6x10 (14,500 nodes) that is about a quarter of the time.
/// Both run the same steps; the counts of nodes and updates are the same.
pub(crate) trait NodeRepr: Copy + Default + std::fmt::Debug + Send + Sync + 'static {
    /// Whether a problem with this many nodes, items and colors fits.
    fn fits(nodes: usize, items: usize, colors: usize) -> bool;
    fn make(up: u32, down: u32, top: i32, color: i32) -> Self;
    fn up(&self) -> u32;
    fn down(&self) -> u32;
    fn top(&self) -> i32;
    fn color(&self) -> i32;
    fn set_up(&mut self, up: u32);
    fn set_down(&mut self, down: u32);
    fn set_top(&mut self, top: i32);
    fn set_color(&mut self, color: i32);
    #[inline(always)]
    fn add_top(&mut self, delta: i32) {
        let top = self.top();
        self.set_top(top + delta);
    }
}

/// Knuth's node: four 32-bit fields.
#[derive(Clone, Copy, Default, Debug)]
#[repr(C)]
pub(crate) struct Wide {
    up: u32,
    down: u32,
    top: i32,
    color: i32,
}

impl NodeRepr for Wide {
    fn fits(_: usize, _: usize, _: usize) -> bool {
        true
    }
    #[inline(always)]
    fn make(up: u32, down: u32, top: i32, color: i32) -> Self {
        Wide {
            up,
            down,
            top,
            color,
        }
    }
    #[inline(always)]
    fn up(&self) -> u32 {
        self.up
    }
    #[inline(always)]
    fn down(&self) -> u32 {
        self.down
    }
    #[inline(always)]
    fn top(&self) -> i32 {
        self.top
    }
    #[inline(always)]
    fn color(&self) -> i32 {
        self.color
    }
    #[inline(always)]
    fn set_up(&mut self, up: u32) {
        self.up = up;
    }
    #[inline(always)]
    fn set_down(&mut self, down: u32) {
        self.down = down;
    }
    #[inline(always)]
    fn set_top(&mut self, top: i32) {
        self.top = top;
    }
    #[inline(always)]
    fn set_color(&mut self, color: i32) {
        self.color = color;
    }
}

/// A half-size node: four 16-bit fields. Node indices fit in `u16`; `top`
/// (an item number, a list length, or minus a spacer's number) fits in `i16`
/// because every option takes at least two nodes, so there are fewer than
/// 32,768 options, and items are limited to 32,767; colors likewise.
#[derive(Clone, Copy, Default, Debug)]
#[repr(C)]
pub(crate) struct Narrow {
    up: u16,
    down: u16,
    top: i16,
    color: i16,
}

impl NodeRepr for Narrow {
    fn fits(nodes: usize, items: usize, colors: usize) -> bool {
        nodes <= u16::MAX as usize && items < i16::MAX as usize && colors + 1 < i16::MAX as usize
    }
    #[inline(always)]
    fn make(up: u32, down: u32, top: i32, color: i32) -> Self {
        Narrow {
            up: up as u16,
            down: down as u16,
            top: top as i16,
            color: color as i16,
        }
    }
    #[inline(always)]
    fn up(&self) -> u32 {
        u32::from(self.up)
    }
    #[inline(always)]
    fn down(&self) -> u32 {
        u32::from(self.down)
    }
    #[inline(always)]
    fn top(&self) -> i32 {
        i32::from(self.top)
    }
    #[inline(always)]
    fn color(&self) -> i32 {
        i32::from(self.color)
    }
    #[inline(always)]
    fn set_up(&mut self, up: u32) {
        self.up = up as u16;
    }
    #[inline(always)]
    fn set_down(&mut self, down: u32) {
        self.down = down as u16;
    }
    #[inline(always)]
    fn set_top(&mut self, top: i32) {
        self.top = top as i16;
    }
    #[inline(always)]
    fn set_color(&mut self, color: i32) {
        self.color = color as i16;
    }
}

/// How many nodes `Links::new` makes for a problem.
pub(crate) fn node_count(problem: &Problem) -> usize {
    let kept = problem.options().len() - problem.dropped_options().len();
    problem.items().len() + 2 + problem.entries() + kept
}

pub(crate) struct Links<N: NodeRepr> {
    pub nd: Vec<N>,
    pub prev: Vec<u32>,
    pub next: Vec<u32>,
    /// Algorithm M: how many more options may still cover each primary item.
    pub bound: Vec<i32>,
    /// Algorithm M: `max - min` of each primary item.
    pub slack: Vec<i32>,
    /// Index of the first secondary item (N1 + 1).
    pub second: u32,
    /// N + 1: the first spacer, and the head of the secondary list.
    pub last_itm: u32,
    /// The problem's option index of each node (`u32::MAX` for headers and spacers).
    pub node_option: Vec<u32>,
    pub updates: u64,
    pub cleansings: u64,
}

pub(crate) const ROOT: u32 = 0;

impl<N: NodeRepr> Links<N> {
    pub fn new(problem: &Problem) -> Links<N> {
        let items = problem.items();
        let n = items.len();
        let ItemLists {
            engine_item,
            second,
            last_itm,
            prev,
            next,
        } = ItemLists::new(problem);
        let mut bound = vec![0i32; n + 2];
        let mut slack = vec![0i32; n + 2];
        for (i, item) in items.iter().enumerate() {
            if let super::problem::ItemKind::Primary { min, max } = item.kind {
                let k = engine_item[i] as usize;
                bound[k] = max as i32;
                slack[k] = (max - min) as i32;
            }
        }

        let total = node_count(problem);
        debug_assert!(N::fits(total, n, problem.colors().len()));
        let mut nd = vec![N::default(); total];
        let mut node_option = vec![u32::MAX; total];
        for (i, header) in nd.iter_mut().enumerate().take(n + 1).skip(1) {
            header.set_up(i as u32);
            header.set_down(i as u32);
        }
        let mut last = last_itm as usize; // the spacer before the next option
        let mut spacers = 0i32;
        for (index, option) in problem.options().iter().enumerate() {
            if problem.is_dropped(index) {
                continue;
            }
            let spacer_before = last;
            for entry in option {
                last += 1;
                let item = engine_item[entry.item] as usize;
                let bottom = nd[item].up() as usize;
                nd[last] = N::make(
                    bottom as u32,
                    item as u32,
                    item as i32,
                    entry.color.map_or(0, |c| c as i32 + 1),
                );
                nd[bottom].set_down(last as u32);
                nd[item].set_up(last as u32);
                nd[item].add_top(1);
                node_option[last] = index as u32;
            }
            nd[spacer_before].set_down(last as u32);
            last += 1;
            spacers += 1;
            nd[last] = N::make(spacer_before as u32 + 1, 0, -spacers, 0);
        }
        debug_assert_eq!(last + 1, total);
        Links {
            nd,
            prev,
            next,
            bound,
            slack,
            second,
            last_itm,
            node_option,
            updates: 0,
            cleansings: 0,
        }
    }

    /// The node at `i`, without a bounds check.
    ///
    /// The dance steps follow links millions of times a second, and a bounds
    /// check on each costs a few percent. Every index they follow comes from
    /// `Links::new` (which builds every `up`, `down`, `top` and active-list
    /// link inside the arrays) or was copied from such a link, so it is in
    /// bounds; debug builds check it anyway.
    #[inline(always)]
    fn node(&self, i: u32) -> &N {
        debug_assert!((i as usize) < self.nd.len());
        // SAFETY: `i` is a link index, in bounds as explained above.
        unsafe { self.nd.get_unchecked(i as usize) }
    }

    /// The next active item after `k` (`ROOT` after the last primary item).
    #[inline(always)]
    pub fn next_active(&self, k: u32) -> u32 {
        debug_assert!((k as usize) < self.next.len());
        // SAFETY: an active-list link, in bounds as explained at `node`.
        unsafe { *self.next.get_unchecked(k as usize) }
    }

    #[inline(always)]
    pub fn len(&self, item: u32) -> i32 {
        self.node(item).top()
    }

    #[inline(always)]
    pub fn deactivate(&mut self, c: u32) {
        let (prev, next) = (self.prev.as_mut_ptr(), self.next.as_mut_ptr());
        debug_assert!((c as usize) < self.next.len());
        // SAFETY: `c` and its neighbours are active-list links (see `node`).
        unsafe {
            let (l, r) = (*prev.add(c as usize), *next.add(c as usize));
            *next.add(l as usize) = r;
            *prev.add(r as usize) = l;
        }
    }

    #[inline(always)]
    pub fn reactivate(&mut self, c: u32) {
        let (prev, next) = (self.prev.as_mut_ptr(), self.next.as_mut_ptr());
        debug_assert!((c as usize) < self.next.len());
        // SAFETY: as in `deactivate`.
        unsafe {
            let (l, r) = (*prev.add(c as usize), *next.add(c as usize));
            *next.add(l as usize) = c;
            *prev.add(r as usize) = c;
        }
    }

    /// Removes the other nodes of the option of `rr` from their lists,
    /// skipping nodes known to agree with a purified item. Returns the number
    /// of updates.
    #[inline(always)]
    pub(super) fn hide<const COLORS: bool>(&mut self, rr: u32) -> u64 {
        let nd = self.nd.as_mut_ptr();
        let mut updates = 0;
        let mut nn = rr + 1;
        // SAFETY: every link and `top` of a node points inside `nd` by
        // construction (`Links::new`), and the dance steps only ever copy
        // such indices; this is the innermost loop of the solver.
        unsafe {
            while nn != rr {
                // Field by field, as Knuth's C does: a whole-node load right
                // after a neighbour's store to one field of this node could
                // not take its value from the store buffer, and would wait.
                let node = &*nd.add(nn as usize);
                if !COLORS || node.color() >= 0 {
                    let top = node.top();
                    if top <= 0 {
                        nn = node.up();
                        continue;
                    }
                    let (up, down) = (node.up(), node.down());
                    (*nd.add(up as usize)).set_down(down);
                    (*nd.add(down as usize)).set_up(up);
                    (*nd.add(top as usize)).add_top(-1);
                    updates += 1;
                }
                nn += 1;
            }
        }
        updates
    }

    /// Undoes [`Self::hide`], going leftward.
    #[inline(always)]
    pub(super) fn unhide<const COLORS: bool>(&mut self, rr: u32) {
        let nd = self.nd.as_mut_ptr();
        let mut nn = rr - 1;
        // SAFETY: as in `hide`.
        unsafe {
            while nn != rr {
                let node = &*nd.add(nn as usize);
                if !COLORS || node.color() >= 0 {
                    let top = node.top();
                    if top <= 0 {
                        nn = node.down();
                        continue;
                    }
                    let (up, down) = (node.up(), node.down());
                    (*nd.add(up as usize)).set_down(nn);
                    (*nd.add(down as usize)).set_up(nn);
                    (*nd.add(top as usize)).add_top(1);
                }
                nn -= 1;
            }
        }
    }

    /// Covers item `c`: hides every option in its list, and (if `deact`)
    /// removes it from the active list.
    #[inline(always)]
    pub fn cover<const COLORS: bool>(&mut self, c: u32, deact: bool) {
        if deact {
            self.deactivate(c);
        }
        let mut updates = 1;
        let mut rr = self.node(c).down();
        while rr >= self.last_itm {
            updates += self.hide::<COLORS>(rr);
            rr = self.node(rr).down();
        }
        self.updates += updates;
    }

    #[inline(always)]
    pub fn uncover<const COLORS: bool>(&mut self, c: u32, react: bool) {
        let mut rr = self.node(c).up();
        while rr >= self.last_itm {
            self.unhide::<COLORS>(rr);
            rr = self.node(rr).up();
        }
        if react {
            self.reactivate(c);
        }
    }

    /// Purifies the secondary item of node `p` for `p`'s color: hides the
    /// options that give the item another color, and marks those that agree
    /// (color -1) so they are neither hidden nor purified again. Each call and
    /// each marked node count as one *cleansing*, as in DLX2.
    pub fn purify(&mut self, p: u32) {
        let cc = self.nd[p as usize].top() as u32;
        let x = self.nd[p as usize].color();
        self.cleansings += 1;
        let mut rr = self.nd[cc as usize].down();
        while rr >= self.last_itm {
            if self.nd[rr as usize].color() != x {
                self.updates += self.hide::<true>(rr);
            } else if rr != p {
                self.cleansings += 1;
                self.nd[rr as usize].set_color(-1);
            }
            rr = self.nd[rr as usize].down();
        }
    }

    pub fn unpurify(&mut self, p: u32) {
        let cc = self.nd[p as usize].top() as u32;
        let x = self.nd[p as usize].color();
        let mut rr = self.nd[cc as usize].up();
        while rr >= self.last_itm {
            if self.nd[rr as usize].color() < 0 {
                self.nd[rr as usize].set_color(x);
            } else if rr != p {
                self.unhide::<true>(rr);
            }
            rr = self.nd[rr as usize].up();
        }
    }

    /// Algorithm C: covers or purifies the items of `cur`'s option other
    /// than the branching one, going rightward.
    #[inline(always)]
    pub fn commit_others<const COLORS: bool>(&mut self, cur: u32) {
        let mut pp = cur + 1;
        while pp != cur {
            let top = self.node(pp).top();
            if top <= 0 {
                pp = self.node(pp).up();
                continue;
            }
            let color = if COLORS { self.node(pp).color() } else { 0 };
            if !COLORS || color == 0 {
                self.cover::<COLORS>(top as u32, true);
            } else if color > 0 {
                self.purify(pp);
            }
            pp += 1;
        }
    }

    /// Undoes [`Self::commit_others`], going leftward.
    #[inline(always)]
    pub fn uncommit_others<const COLORS: bool>(&mut self, cur: u32) {
        let mut pp = cur - 1;
        while pp != cur {
            let top = self.node(pp).top();
            if top <= 0 {
                pp = self.node(pp).down();
                continue;
            }
            let color = if COLORS { self.node(pp).color() } else { 0 };
            if !COLORS || color == 0 {
                self.uncover::<COLORS>(top as u32, true);
            } else if color > 0 {
                self.unpurify(pp);
            }
            pp -= 1;
        }
    }

    /// Algorithm M: like [`Self::commit_others`], but a primary item is only
    /// covered when its bound drops to zero.
    pub fn m_commit_others<const COLORS: bool>(&mut self, cur: u32) {
        let mut pp = cur + 1;
        while pp != cur {
            let top = self.node(pp).top();
            if top <= 0 {
                pp = self.node(pp).up();
                continue;
            }
            let color = if COLORS { self.node(pp).color() } else { 0 };
            let cc = top as u32;
            if cc < self.second {
                self.bound[cc as usize] -= 1;
                if self.bound[cc as usize] == 0 {
                    self.cover::<COLORS>(cc, true);
                }
            } else if !COLORS || color == 0 {
                self.cover::<COLORS>(cc, true);
            } else if color > 0 {
                self.purify(pp);
            }
            pp += 1;
        }
    }

    pub fn m_uncommit_others<const COLORS: bool>(&mut self, cur: u32) {
        let mut pp = cur - 1;
        while pp != cur {
            let top = self.node(pp).top();
            if top <= 0 {
                pp = self.node(pp).down();
                continue;
            }
            let color = if COLORS { self.node(pp).color() } else { 0 };
            let cc = top as u32;
            if cc < self.second {
                if self.bound[cc as usize] == 0 {
                    self.uncover::<COLORS>(cc, true);
                }
                self.bound[cc as usize] += 1;
            } else if !COLORS || color == 0 {
                self.uncover::<COLORS>(cc, true);
            } else if color > 0 {
                self.unpurify(pp);
            }
            pp -= 1;
        }
    }

    /// DLX3's tweak: removes the topmost option `n` from its item's list and,
    /// if `block`, hides it from the other lists too (when the item was
    /// covered already its options are hidden, so only `n` itself moves).
    pub fn tweak<const COLORS: bool>(&mut self, n: u32, block: bool) {
        let nd = &mut self.nd[..];
        let mut nn = if block { n + 1 } else { n };
        loop {
            if !COLORS || nd[nn as usize].color() >= 0 {
                let top = nd[nn as usize].top();
                if top <= 0 {
                    nn = nd[nn as usize].up();
                    continue;
                }
                let (up, down) = (nd[nn as usize].up(), nd[nn as usize].down());
                nd[up as usize].set_down(down);
                nd[down as usize].set_up(up);
                nd[top as usize].add_top(-1);
                self.updates += 1;
            }
            if nn == n {
                break;
            }
            nn += 1;
        }
    }

    /// Undoes every tweak made on item `c` since its list began at `x`.
    pub fn untweak<const COLORS: bool>(&mut self, c: u32, x: u32, unblock: bool) {
        let z = self.nd[c as usize].down();
        self.nd[c as usize].set_down(x);
        let (mut rr, mut qq, mut k) = (x, c, 0);
        while rr != z {
            self.nd[rr as usize].set_up(qq);
            k += 1;
            if unblock {
                // Relink the option's other nodes (the order does not matter:
                // each goes back between neighbours that still point past it).
                let mut nn = rr + 1;
                while nn != rr {
                    if !COLORS || self.nd[nn as usize].color() >= 0 {
                        let top = self.nd[nn as usize].top();
                        if top <= 0 {
                            nn = self.nd[nn as usize].up();
                            continue;
                        }
                        let (up, down) = (self.nd[nn as usize].up(), self.nd[nn as usize].down());
                        self.nd[up as usize].set_down(nn);
                        self.nd[down as usize].set_up(nn);
                        self.nd[top as usize].add_top(1);
                    }
                    nn += 1;
                }
            }
            qq = rr;
            rr = self.nd[rr as usize].down();
        }
        self.nd[rr as usize].set_up(qq);
        self.nd[c as usize].add_top(k);
        if !unblock {
            self.uncover::<COLORS>(c, false);
        }
    }
}
