//! Memoized counting with multiplicities: DLX3's Algorithm M on DLX6's
//! links, each search node's state looked up and cached as in
//! [`super`]'s Algorithm C. DLX6 has no multiplicities, so there is no
//! Knuth figure to meet here: the counts are checked against the links
//! engine and a brute-force oracle (tests/oracle.rs, tests/memo.rs).
//!
//! The branching is DLX3's. At a node it picks the item `p` of smallest
//! branching degree, lowers its bound, and tries the options of its list
//! from the top; each one tried is *tweaked* before its subtree (taken out
//! of `p`'s list and, while `p` stays active, hidden from every list), so a
//! later alternative, and everything below it, never takes it again: every
//! solution is reached once, whatever order its options come in. When `p`
//! may take no more options (its remaining minimum is 0), the last
//! alternative is the *null move*: `p` leaves the active list, all its
//! options tweaked away.
//!
//! # The signature
//!
//! The remaining subproblem of a node is: the live options (those in the
//! lists), the range of coverings each active primary item still needs and
//! allows, and each active secondary item's color if purified. Its
//! solutions are the sets of live options that meet those ranges and
//! colors. With Algorithm C the live options follow from the active items
//! (an option is live when all its items are and it agrees with every
//! purified color), so DLX6 keys its cache on the items alone. With M that
//! no longer holds: a tweaked option is hidden although its items are all
//! active. So the signature holds, per primary item `p` whose bound passes
//! 1, next to its bound left (its remaining range `[bound - slack, bound]`,
//! the slack fixed), the position in `p`'s input list of its first live
//! option (or "past the end"). That is enough, and exact:
//!
//! - Tweaks on `p` remove options from the top of `p`'s list, and are
//!   undone before anything above them, so the options a tweak on `p`
//!   hides are always a prefix of `p`'s list as input: an option is live
//!   exactly when its items allow it (active, colors agreeing) and, for
//!   every such item `p` in it, it is not in `p`'s tweaked prefix.
//! - The tweaked prefix may be replaced by the first live option's
//!   position `t_p`: an option `o` its items allow with every `p` in it at
//!   or after `t_p` is live, since if it were in some `p`'s tweaked prefix,
//!   every live option of `p`, the first one included, would come after it.
//!   Conversely every live option is at or after `t_p` in each `p`'s list.
//!   So the items' states and the `t_p` give the live options, hence the
//!   remaining subproblem, and two nodes with equal signatures have the
//!   same solutions below them. (The first live position, not the tweak
//!   count, so that states whose prefixes differ only in options hidden
//!   anyway share an entry.)
//! - Items of bound 1 are never tweaked while active (their bound drops to
//!   0 first, covering them), so they keep DLX6's one bit; without
//!   multiplicities this is DLX6's signature.
//!
//! # The ZDD
//!
//! The alternatives of a node are disjoint: the `j`th contains its option
//! `x_j` and none of `x_1 .. x_{j-1}`, the null move none of them. They are
//! chained from the last: `(x_j, lo: the alternatives after j, hi: x_j's
//! subtree)`. Neither branch can contain `x_j` (it is tweaked in both), so
//! an option is on a path at most once and the node stands for exactly
//! "`x_j` and a solution of its subtree, or a solution of a later
//! alternative". (DLX6 chains the other way, each node's `lo` the
//! alternatives before it; under M those may take `x_j` deeper down, which
//! a ZDD reader would see as `x_j` both refused and taken.)

use super::{Memo, MemoConfig, MemoError, MemoStats, ROOT};

impl Memo {
    /// Item `p`'s top moved to `top`: its cursor follows, if it has one and
    /// is active.
    #[inline(always)]
    pub(super) fn top_moved(&mut self, p: u32, top: u32) {
        // SAFETY: `p` is an item and `top` a node of its list or its
        // header, in bounds of `cursor_slot`, `sig.value` and `pos`
        // (`Memo::new`); called from `hide`'s inner loop under `M` only.
        unsafe {
            let slot = *self.cursor_slot.get_unchecked(p as usize);
            if slot != 0 && *self.sig.value.get_unchecked(p as usize) != 0 {
                let at = *self.pos.get_unchecked(top as usize);
                self.sig.set(slot, at + 1);
            }
        }
    }

    /// Active primary item `p`'s fields: its bound (or 1), its cursor.
    pub(super) fn primary_on(&mut self, p: u32) {
        let slot = self.cursor_slot[p as usize];
        if slot == 0 {
            self.sig.set(p, 1);
        } else {
            self.sig.set(p, self.bound[p as usize] as u32);
            let at = self.pos[self.nd[p as usize].down as usize];
            self.sig.set(slot, at + 1);
        }
    }

    fn primary_off(&mut self, p: u32) {
        self.sig.set(p, 0);
        let slot = self.cursor_slot[p as usize];
        if slot != 0 {
            self.sig.set(slot, 0);
        }
    }

    /// Active primary item `p`'s bound changed.
    fn bound_changed(&mut self, p: u32) {
        if self.cursor_slot[p as usize] != 0 {
            self.sig.set(p, self.bound[p as usize] as u32);
        }
    }

    fn deactivate(&mut self, c: u32) {
        let (l, r) = (self.prev[c as usize], self.next[c as usize]);
        self.next[l as usize] = r;
        self.prev[r as usize] = l;
        if c < self.second {
            self.primary_off(c);
        } else {
            self.sig.set(c, 0);
        }
    }

    fn reactivate(&mut self, c: u32) {
        let (l, r) = (self.prev[c as usize], self.next[c as usize]);
        self.next[l as usize] = c;
        self.prev[r as usize] = c;
        if c < self.second {
            self.primary_on(c);
        } else {
            self.sig.set(c, self.value_of(c));
        }
    }

    /// DLX6's `cover` (DLX3's `cover(c, deact)`), following the cursors.
    fn cover_m(&mut self, c: u32, deact: bool) {
        if deact {
            self.deactivate(c);
        }
        self.stats.updates += 1;
        let mut rr = self.nd[c as usize].down;
        while rr >= self.last_itm {
            self.hide::<true, true>(rr);
            rr = self.nd[rr as usize].down;
        }
    }

    fn uncover_m(&mut self, c: u32, react: bool) {
        let mut rr = self.nd[c as usize].up;
        while rr >= self.last_itm {
            self.unhide::<true, true>(rr);
            rr = self.nd[rr as usize].up;
        }
        if react {
            self.reactivate(c);
        }
    }

    /// DLX3's tweak of `n`, the top of its item's list: out of the list,
    /// and (`block`, the item still active) hidden from the other lists.
    fn tweak(&mut self, n: u32, block: bool) {
        if block {
            self.hide::<true, true>(n);
        }
        let node = self.nd[n as usize];
        let p = node.itm as u32;
        self.nd[node.up as usize].down = node.down;
        self.nd[node.down as usize].up = node.up;
        self.nd[p as usize].itm -= 1;
        self.stats.updates += 1;
        self.top_moved(p, node.down);
    }

    /// Undoes the tweaks made on `c` since its list began at `x`, the last
    /// first (each tweaked node still points at the one tweaked after it).
    fn untweak(&mut self, c: u32, x: u32, unblock: bool) {
        let mut tweaked = std::mem::take(&mut self.scratch);
        tweaked.clear();
        let z = self.nd[c as usize].down;
        let mut rr = x;
        while rr != z {
            tweaked.push(rr);
            rr = self.nd[rr as usize].down;
        }
        for &rr in tweaked.iter().rev() {
            let node = self.nd[rr as usize];
            self.nd[node.up as usize].down = rr;
            self.nd[node.down as usize].up = rr;
            self.nd[c as usize].itm += 1;
            self.top_moved(c, rr);
            if unblock {
                self.unhide::<true, true>(rr);
            }
        }
        self.scratch = tweaked;
        if !unblock {
            self.uncover_m(c, false);
        }
    }

    /// DLX3's commit of `cur`'s other items: a primary item's bound drops,
    /// covering it at 0; secondary items as in DLX6.
    fn m_commit_others(&mut self, cur: u32) {
        let mut pp = cur + 1;
        while pp != cur {
            let node = self.nd[pp as usize];
            if node.itm <= 0 {
                pp = node.up;
                continue;
            }
            let cc = node.itm as u32;
            if cc < self.second {
                self.bound[cc as usize] -= 1;
                if self.bound[cc as usize] == 0 {
                    self.cover_m(cc, true);
                } else {
                    self.bound_changed(cc);
                }
            } else if self.nd[cc as usize].itm != 0 {
                if node.color == 0 {
                    self.cover_m(cc, true);
                } else if node.color > 0 {
                    self.purify::<true>(pp);
                }
            }
            pp += 1;
        }
    }

    fn m_uncommit_others(&mut self, cur: u32) {
        let mut pp = cur - 1;
        while pp != cur {
            let node = self.nd[pp as usize];
            if node.itm <= 0 {
                pp = node.down;
                continue;
            }
            let cc = node.itm as u32;
            if cc < self.second {
                self.bound[cc as usize] += 1;
                if self.bound[cc as usize] == 1 {
                    self.uncover_m(cc, true);
                } else {
                    self.bound_changed(cc);
                }
            } else if self.nd[cc as usize].itm != 0 {
                if node.color == 0 {
                    self.uncover_m(cc, true);
                } else if node.color > 0 {
                    self.unpurify::<true>(pp);
                }
            }
            pp -= 1;
        }
    }

    /// DLX3's choice: the smallest branching degree `len + s - bound + 1`
    /// (`s = min(slack, bound)`), ties to the smaller `s`, then the longer
    /// list, then the leftmost. Returns the item and its degree.
    fn choose_m(&self) -> (u32, i64) {
        let mut score = i64::MAX;
        let (mut best, mut best_s, mut best_l) = (ROOT, 0i64, 0i64);
        let mut k = self.next[ROOT as usize];
        while k != ROOT {
            let bound = i64::from(self.bound[k as usize]);
            let s = i64::from(self.slack[k as usize]).min(bound);
            let len = i64::from(self.nd[k as usize].itm);
            let t = len + s - bound + 1;
            if t <= score && (t < score || s < best_s || (s == best_s && len > best_l)) {
                score = t;
                best = k;
                best_s = s;
                best_l = len;
            }
            k = self.next[k as usize];
        }
        (best, score)
    }

    /// DLX3's "Solve the problem" with DLX6's cache, its gotos as states.
    pub(super) fn run_m(
        &mut self,
        config: &MemoConfig,
        poll: &mut dyn FnMut(&MemoStats) -> bool,
    ) -> Result<(), MemoError> {
        if self.next[ROOT as usize] == ROOT {
            self.stats.nodes = 1;
            self.root = 1;
            return Ok(());
        }
        // A level takes an option or deactivates an item: levels grow as
        // the search goes down.
        let mut levels = vec![Level::default()];
        // The alternatives with solutions (option, ZDD of its subtree) of
        // every level, each level's from its `Level::alts` on.
        let mut alts: Vec<(u32, u32)> = Vec::new();
        let mut level = 0usize;
        let mut znode = 0u32;
        let mut step = Step::Forward;
        loop {
            match step {
                Step::Forward => {
                    self.stats.nodes += 1;
                    self.tick(config, poll, level)?;
                    if levels.len() <= level {
                        levels.push(Level::default());
                    }
                    match self.lookup() {
                        Ok(entry) => {
                            znode = self.entry_zdd[entry as usize];
                            self.stats.hits += 1;
                            self.stats.lookup_hits += 1;
                            if let Some(track) = &mut self.track {
                                track.hit(entry);
                            }
                            step = Step::Backdown;
                            continue;
                        }
                        Err(entry) => {
                            levels[level].entry = entry;
                            self.grow_table_if_half_full(config)?;
                        }
                    }
                    let (best, score) = self.choose_m();
                    if score <= 0 {
                        // Some item has too few options left.
                        self.stats.failed_signatures += 1;
                        znode = 0;
                        step = Step::Backdown;
                        continue;
                    }
                    let b = best as usize;
                    if let Some(track) = &mut self.track {
                        // The options of its list, and the null move when
                        // the item may take none.
                        let null = u32::from(self.slack[b] > 0);
                        track.enter(level, self.stats.nodes, self.nd[b].itm as u32 + null);
                    }
                    let cur = self.nd[b].down;
                    levels[level] = Level {
                        best,
                        choice: cur,
                        first_tweak: cur,
                        null_taken: false,
                        null_zdd: 0,
                        alts: alts.len(),
                        entry: levels[level].entry,
                    };
                    self.bound[b] -= 1;
                    if self.bound[b] == 0 {
                        self.cover_m(best, true);
                    } else {
                        self.bound_changed(best);
                    }
                    step = Step::Advance;
                }
                Step::Advance => {
                    if !self.m_prepare(&mut levels[level]) {
                        step = Step::Backup;
                        continue;
                    }
                    let (cur, best) = (levels[level].choice, levels[level].best);
                    if cur != best {
                        self.m_commit_others(cur);
                    }
                    if self.next[ROOT as usize] == ROOT {
                        // A solution, counted as DLX6 counts one.
                        self.stats.nodes += 1;
                        self.stats.hits += 1;
                        self.stats.max_level = self.stats.max_level.max(level + 1);
                        step = self.m_recover(level, &mut levels[level], &mut alts, 1);
                        continue;
                    }
                    level += 1;
                    self.stats.max_level = self.stats.max_level.max(level);
                    step = Step::Forward;
                }
                Step::Backup => {
                    let ls = levels[level];
                    let mut z = ls.null_zdd;
                    for &(option, sub) in alts[ls.alts..].iter().rev() {
                        z = self.zdd.node(option, z, sub);
                    }
                    alts.truncate(ls.alts);
                    self.m_restore(&ls);
                    if let Some(track) = &mut self.track {
                        track.done(level, ls.entry, self.stats.nodes);
                    }
                    if z != 0 {
                        self.entry_zdd[ls.entry as usize] = z;
                        self.stats.good_signatures += 1;
                    } else {
                        self.stats.failed_signatures += 1;
                    }
                    znode = z;
                    step = Step::Backdown;
                }
                Step::Backdown => {
                    if level == 0 {
                        self.root = znode;
                        self.stats.zdd_nodes = self.zdd.len() as u64;
                        return self.check_memory(config, 0);
                    }
                    level -= 1;
                    step = self.m_recover(level, &mut levels[level], &mut alts, znode);
                }
            }
        }
    }

    /// Whether the branching item of `ls` has another alternative at its
    /// current option; if so, makes it ready (tweaks the option, or for
    /// the null move deactivates the item).
    fn m_prepare(&mut self, ls: &mut Level) -> bool {
        let (best, cur) = (ls.best, ls.choice);
        let bound = self.bound[best as usize];
        let slack = self.slack[best as usize];
        if bound == 0 && slack == 0 {
            return cur != best;
        }
        if self.nd[best as usize].itm <= bound - slack {
            return false;
        }
        if cur != best {
            self.tweak(cur, bound != 0);
        } else {
            if bound != 0 {
                self.deactivate(best);
            }
            ls.null_taken = true;
        }
        true
    }

    /// Back from the alternative of `ls` with the ZDD `zsol` of its
    /// subtree: undoes it, keeps `zsol`, and says where to go on.
    fn m_recover(
        &mut self,
        level: usize,
        ls: &mut Level,
        alts: &mut Vec<(u32, u32)>,
        zsol: u32,
    ) -> Step {
        if let Some(track) = &mut self.track {
            track.next_alternative(level);
        }
        let cur = ls.choice;
        if cur == ls.best {
            // The null move, always the last alternative.
            self.reactivate(cur);
            ls.null_zdd = zsol;
            return Step::Backup;
        }
        self.m_uncommit_others(cur);
        if zsol != 0 {
            alts.push((self.node_option[cur as usize], zsol));
        }
        ls.choice = self.nd[cur as usize].down;
        Step::Advance
    }

    /// DLX3's "Restore the original state of best_itm".
    fn m_restore(&mut self, ls: &Level) {
        let best = ls.best;
        let b = best as usize;
        if self.bound[b] == 0 && self.slack[b] == 0 {
            self.uncover_m(best, true);
        } else {
            let unblock = self.bound[b] != 0;
            if !unblock && !ls.null_taken {
                // Covered on entry; the null move's way back, which
                // reactivates it, was not reached.
                self.reactivate(best);
            }
            self.untweak(best, ls.first_tweak, unblock);
        }
        self.bound[b] += 1;
        self.primary_on(best);
    }
}

/// A level of the search: its branching item, the option it is at, where
/// its tweaks began, its null move's ZDD, where its alternatives start in
/// the shared list, and its cache entry.
#[derive(Debug, Clone, Copy, Default)]
struct Level {
    best: u32,
    choice: u32,
    first_tweak: u32,
    null_taken: bool,
    null_zdd: u32,
    alts: usize,
    entry: u32,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Forward,
    Advance,
    Backup,
    Backdown,
}
