//! Memoized counting (Knuth's DLX6): Algorithms X and C on dancing links
//! that remember, for every state of the search they have finished, the ZDD
//! of all its solutions, so that a state met again costs one lookup.
//!
//! The search follows DLX6 step for step, so that on the same input it
//! visits the same nodes, makes the same updates and cleansings, caches the
//! same signatures and builds the same ZDD (bench/dlx6-reference.tsv):
//!
//! - The item choice is DLX2's: the active primary item with the shortest
//!   list, the leftmost among ties; the scan stops at a list of length 0.
//! - Covering differs from DLX2's in one way: a node of a purified
//!   secondary item is not unlinked, but its item's length still drops, and a
//!   secondary item whose length drops to 0 leaves the active secondary list.
//!   A state is then exactly its active items: the uncovered primary items and
//!   the secondary items still used by some live option, each with its color
//!   (or none) if purified. That set is the state's *signature*: two nodes
//!   with equal signatures have equal subtrees (Nishino et al., "Dancing with
//!   decision diagrams", AAAI 2017; Knuth added colors).
//! - Every node looks its signature up before branching. A hit takes the
//!   cached ZDD node (0 when that state had no solution) and backs up; a miss
//!   enters the signature and, when the node's last alternative is done,
//!   stores its ZDD node there.
//! - ZDD nodes are made on the way back up: after an option whose subtree had
//!   solutions, a node "option, else the alternatives before it" (DLX6's
//!   `(~option?lo:hi)`), so each level chains its successful alternatives.
//!
//! Counts come from the ZDD (a node counts its two branches' solutions), in
//! 128 bits; beyond that the ZDD is counted again with big integers
//! ([`super::zdd::Zdd::count`]).
//!
//! What memoizing cannot see: a side condition a visitor checks on whole
//! solutions (hitori's connectivity, one slitherlink loop) is not part of
//! the state, so two equal signatures may differ in it. Such problems must
//! not be counted here ([`super::zdd`]'s samples can still be filtered).
//!
//! The cache grows with the search; [`MemoConfig::memory_limit`] bounds it
//! and the ZDD together, and reaching the bound stops the search with
//! [`MemoError::OutOfMemory`] (a count cut short would be wrong, so there is
//! no partial answer).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::links::{ItemLists, ROOT};
// Nodes between two looks at the stop flag, the memory and the poll: the
// project's one poll interval, as the engines'.
use super::problem::Problem;
use super::zdd::{Zdd, ZddBuilder};
use super::POLL_INTERVAL;

mod multiplicities;
mod probe;

pub use probe::{Verdict, FIRST_STAGE};

/// Limits and controls of a memoized count.
#[derive(Debug, Clone, Default)]
pub struct MemoConfig {
    /// The most bytes the cache and the ZDD may take together.
    pub memory_limit: Option<u64>,
    /// Set from elsewhere to stop the search within [`POLL_INTERVAL`] nodes.
    pub stop: Option<Arc<AtomicBool>>,
    /// Judge, in stages, whether the cache pays ([`probe`]), and stop with
    /// [`MemoError::NoGain`] where it does not: for a count alone, which the
    /// caller can then make with the plain search (`xccd solve --memo
    /// --count`, `xccd puzzle solve --memo --count`). Off, the search is
    /// DLX6's to the end.
    pub probe: bool,
}

/// Counters of a memoized search, DLX6's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoStats {
    /// Search-tree nodes, a solution counted as a node (as DLX6 does).
    pub nodes: u64,
    pub updates: u64,
    pub cleansings: u64,
    /// Nodes whose signature was in the cache, plus solutions (DLX6 counts a
    /// solution as a hit one level down, after Algorithm 7.2.2.1Z).
    pub hits: u64,
    /// Lookups that found their state (`hits` without the solutions).
    #[serde(skip)]
    pub lookup_hits: u64,
    /// Signatures cached whose states had no solution.
    pub failed_signatures: u64,
    /// Signatures cached whose states had solutions.
    pub good_signatures: u64,
    /// ZDD nodes made (the two sinks not included).
    pub zdd_nodes: u64,
    /// Deepest level reached.
    pub max_level: usize,
    /// Peak bytes of the cache and the ZDD.
    pub memory_bytes: u64,
}

impl MemoStats {
    /// The ZDD size DLX6 prints: its nodes with the two sinks, or 1 when
    /// there is no solution.
    pub fn knuth_zdd_nodes(&self) -> u64 {
        if self.zdd_nodes == 0 {
            1
        } else {
            self.zdd_nodes + 2
        }
    }

    /// The signature count DLX6 prints as `failed+good`: it adds one good
    /// one, "because the book says the all-zero signature is in the cache".
    pub fn knuth_signatures(&self) -> (u64, u64) {
        (self.failed_signatures, self.good_signatures + 1)
    }
}

/// What a memoized count found.
#[derive(Debug, Clone)]
pub struct MemoOutcome {
    pub stats: MemoStats,
    /// All solutions: the ZDD's variables are input option indices.
    pub zdd: Zdd,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoError {
    #[error("the memo cache and the ZDD need more than {limit} bytes (the memory limit) after {nodes} search nodes: raise the limit or count without memoizing")]
    OutOfMemory { limit: u64, nodes: u64 },
    #[error("the memoized count was stopped after {nodes} search nodes")]
    Stopped { nodes: u64 },
    /// Memoizing does not pay ([`MemoConfig::probe`]).
    #[error("{0}")]
    NoGain(Verdict),
}

/// Counts all solutions of `problem` and builds their ZDD, as DLX6 does.
pub fn count(problem: &Problem, config: &MemoConfig) -> Result<MemoOutcome, MemoError> {
    count_polled(problem, config, &mut |_| true)
}

/// [`count`], calling `poll` with the figures so far every
/// [`POLL_INTERVAL`] nodes: the search stops ([`MemoError::Stopped`]) when it
/// answers false. This is how a transport that cannot share a stop flag
/// (a pool's port, a node budget) steers a memoized count.
pub fn count_polled(
    problem: &Problem,
    config: &MemoConfig,
    poll: &mut dyn FnMut(&MemoStats) -> bool,
) -> Result<MemoOutcome, MemoError> {
    let mut search = Memo::new(problem);
    if config.probe {
        let track = probe::Tracker::new();
        search.next_judgement = track.next_stage;
        search.track = Some(Box::new(track));
    }
    if problem.has_multiplicities() {
        search.run_m(config, poll)?;
    } else {
        if problem.has_colors() {
            search.run::<true>(config, poll)?;
        } else {
            // No color: a lean dance without the color tests.
            search.run::<false>(config, poll)?;
        }
    }
    let zdd = search.zdd.finish(search.root);
    Ok(MemoOutcome {
        stats: search.stats,
        zdd,
    })
}

/// One node of DLX6's links: an item-list node, an item's header (`itm`
/// then holds the list's length, `color` the color it is purified to), or a
/// spacer between options (`itm <= 0`; `up` is the first node of the option
/// before it, `down` the last node of the option after it).
#[derive(Debug, Clone, Copy, Default)]
struct Node {
    up: u32,
    down: u32,
    itm: i32,
    /// The item-local color (1, 2, ...; 0 for none), -1 once cleansed.
    color: i32,
}

/// Where an item's state goes in a signature: bits at `shift` of word
/// `word`.
#[derive(Debug, Clone, Copy, Default)]
struct SigPlace {
    word: u32,
    shift: u32,
}

/// The current state's signature, kept up to date as items leave and
/// enter the active lists and secondary items are purified. DLX6 builds it
/// at every node by scanning every active item, and hashes it with a random
/// number per item state; where states rarely repeat (queens) that scan was
/// most of a node's cost. Kept, it costs one XOR per change, and the
/// signature's few words are hashed at the lookup instead. The words are
/// the scan's ([`Memo::scan_signature`], checked at every lookup in the
/// unit tests), so the cache meets the states DLX6 meets; the hash only
/// places entries in the table, which no figure depends on.
struct Signature {
    place: Vec<SigPlace>,
    words: Vec<u64>,
    /// Per item, the value its field holds now: 0 out of the signature, 1
    /// for an active primary item, 1 + its color for an active secondary
    /// one (0 unpurified).
    value: Vec<u32>,
}

impl Signature {
    /// Item `k`'s field now holds `value`.
    #[inline(always)]
    fn set(&mut self, k: u32, value: u32) {
        debug_assert!((k as usize) < self.value.len());
        // SAFETY: `k` is an item (1..last_itm), and `place` and `value`
        // have a slot for every item, `words` a word for every place
        // (`Memo::prepare_signatures`); called from the dance's inner loop.
        unsafe {
            let old = *self.value.get_unchecked(k as usize);
            let place = *self.place.get_unchecked(k as usize);
            *self.words.get_unchecked_mut(place.word as usize) ^=
                u64::from(old ^ value) << place.shift;
            *self.value.get_unchecked_mut(k as usize) = value;
        }
    }

    /// The hash of the signature's words (a multiply-rotate mix).
    #[inline]
    fn hash(&self) -> u64 {
        let mut h = 0x9e37_79b9_7f4a_7c15u64;
        for &w in &self.words {
            h = (h ^ w).wrapping_mul(0xbf58_476d_1ce4_e5b9).rotate_left(27);
        }
        h ^ (h >> 31)
    }
}

/// Slots of the hash table hold an entry's index plus one (0: empty).
struct Memo {
    nd: Vec<Node>,
    prev: Vec<u32>,
    next: Vec<u32>,
    sig: Signature,
    /// Input option index of each node (spacers: u32::MAX).
    node_option: Vec<u32>,
    second: u32,
    last_itm: u32,
    /// Words per signature.
    words: usize,
    /// Cached signatures, `words` words each.
    keys: Vec<u64>,
    /// Per entry: its hash and the ZDD node of its state's solutions.
    entry_hash: Vec<u64>,
    entry_zdd: Vec<u32>,
    table: Vec<u32>,
    zdd: ZddBuilder,
    root: u32,
    stats: MemoStats,
    /// Algorithm M (all empty without multiplicities): per item, how many
    /// more options may cover it (DLX3's `bound`) and `max - min`.
    bound: Vec<i32>,
    slack: Vec<i32>,
    /// Per item, the signature slot of its first live option's position
    /// (0: none; only primary items with a bound above 1 have one).
    cursor_slot: Vec<u32>,
    /// Per node of such an item's list, its position in the list as input
    /// (the header: the list's length, "past the end").
    pos: Vec<u32>,
    /// Room for [`multiplicities`]' untweak.
    scratch: Vec<u32>,
    /// What the judgement of [`MemoConfig::probe`] keeps (None without),
    /// and the node count of its next stage (`u64::MAX`: none).
    track: Option<Box<probe::Tracker>>,
    next_judgement: u64,
}

impl Memo {
    fn new(problem: &Problem) -> Memo {
        let n = problem.items().len();
        let ItemLists {
            engine_item,
            second,
            last_itm,
            prev,
            next,
        } = ItemLists::new(problem);
        let kept: Vec<usize> = (0..problem.options().len())
            .filter(|&o| !problem.is_dropped(o))
            .collect();
        let total = last_itm as usize
            + 1
            + kept
                .iter()
                .map(|&o| problem.options()[o].len() + 1)
                .sum::<usize>();
        let mut nd = vec![Node::default(); total];
        let mut node_option = vec![u32::MAX; total];
        for (i, header) in nd.iter_mut().enumerate().take(n + 1).skip(1) {
            header.up = i as u32;
            header.down = i as u32;
        }
        let mut last = last_itm as usize;
        let mut spacers = 0i32;
        for &index in &kept {
            let spacer_before = last;
            for entry in &problem.options()[index] {
                last += 1;
                let item = engine_item[entry.item] as usize;
                let bottom = nd[item].up as usize;
                nd[last] = Node {
                    up: bottom as u32,
                    down: item as u32,
                    itm: item as i32,
                    color: entry.color.map_or(0, |c| c as i32 + 1),
                };
                nd[bottom].down = last as u32;
                nd[item].up = last as u32;
                nd[item].itm += 1;
                node_option[last] = index as u32;
            }
            nd[spacer_before].down = last as u32;
            last += 1;
            spacers += 1;
            nd[last] = Node {
                up: spacer_before as u32 + 1,
                down: 0,
                itm: -spacers,
                color: 0,
            };
        }
        debug_assert_eq!(last + 1, total);

        // Algorithm M's bounds, and a cursor slot for each item whose bound
        // passes 1 (numbered after the items' own slots).
        let mut bound = Vec::new();
        let mut slack = Vec::new();
        let mut cursor_slot = Vec::new();
        let mut pos = Vec::new();
        let mut slots = n + 2;
        if problem.has_multiplicities() {
            bound = vec![0i32; n + 2];
            slack = vec![0i32; n + 2];
            cursor_slot = vec![0u32; n + 2];
            pos = vec![0u32; total];
            for (i, item) in problem.items().iter().enumerate() {
                if let super::problem::ItemKind::Primary { min, max } = item.kind {
                    let k = engine_item[i] as usize;
                    bound[k] = max as i32;
                    slack[k] = (max - min) as i32;
                    if max > 1 {
                        cursor_slot[k] = slots as u32;
                        slots += 1;
                        let mut at = 0;
                        let mut p = nd[k].down as usize;
                        while p != k {
                            pos[p] = at;
                            at += 1;
                            p = nd[p].down as usize;
                        }
                        pos[k] = at;
                    }
                }
            }
        }

        let mut memo = Memo {
            nd,
            prev,
            next,
            sig: Signature {
                place: vec![SigPlace::default(); slots],
                words: Vec::new(),
                value: vec![0; slots],
            },
            node_option,
            second,
            last_itm,
            words: 0,
            keys: Vec::new(),
            entry_hash: Vec::new(),
            entry_zdd: Vec::new(),
            table: vec![0; 1024],
            zdd: ZddBuilder::new(),
            root: 0,
            stats: MemoStats::default(),
            bound,
            slack,
            cursor_slot,
            pos,
            scratch: Vec::new(),
            track: None,
            next_judgement: u64::MAX,
        };
        memo.prepare_signatures();
        memo
    }

    /// DLX6's "Initialize the memo cache": signature places from the last
    /// item down (the earliest items are covered first, so the states that
    /// repeat differ in the last words), unused secondary items out of the
    /// active list, and each secondary item's colors renumbered 1, 2, ...
    /// with room for "not purified" and each color.
    fn prepare_signatures(&mut self) {
        let (mut word, mut bit) = (0u32, 0u32);
        for k in (1..self.last_itm).rev() {
            if k < self.second {
                let cursor = self.cursor_slot.get(k as usize).copied().unwrap_or(0);
                if cursor == 0 {
                    if bit == 64 {
                        word += 1;
                        bit = 0;
                    }
                    self.sig.place[k as usize] = SigPlace { word, shift: bit };
                    bit += 1;
                    continue;
                }
                // Algorithm M: the bound left (1..=max while active), then
                // the first live option's position plus one (1..=len+1).
                let max = self.bound[k as usize] as u32;
                let len = self.pos[k as usize];
                for (slot, values) in [(k, max), (cursor, len + 1)] {
                    let width = 32 - values.leading_zeros();
                    if bit + width > 64 {
                        word += 1;
                        bit = 0;
                    }
                    self.sig.place[slot as usize] = SigPlace { word, shift: bit };
                    bit += width;
                }
                continue;
            }
            if self.nd[k as usize].down == k {
                let (l, r) = (self.prev[k as usize], self.next[k as usize]);
                self.next[l as usize] = r;
                self.prev[r as usize] = l;
                continue;
            }
            self.nd[k as usize].color = 0;
            let mut local: Vec<i32> = Vec::new();
            let mut p = self.nd[k as usize].down;
            while p != k {
                let c = self.nd[p as usize].color;
                if c != 0 {
                    let at = match local.iter().position(|&x| x == c) {
                        Some(at) => at,
                        None => {
                            local.push(c);
                            local.len() - 1
                        }
                    };
                    self.nd[p as usize].color = at as i32 + 1;
                }
                p = self.nd[p as usize].down;
            }
            let states = local.len() as u32 + 1;
            let width = 32 - states.leading_zeros();
            if bit + width > 64 {
                word += 1;
                bit = 0;
            }
            self.sig.place[k as usize] = SigPlace { word, shift: bit };
            bit += width;
        }
        self.words = word as usize + 1;
        self.sig.words = vec![0; self.words];
        for k in self.active_items() {
            if k < self.second && !self.cursor_slot.is_empty() {
                self.primary_on(k);
            } else {
                self.sig.set(k, self.value_of(k));
            }
        }
    }

    /// The items in the active lists, primary then secondary.
    fn active_items(&self) -> Vec<u32> {
        let mut items = Vec::new();
        for head in [ROOT, self.last_itm] {
            let mut k = self.next[head as usize];
            while k != head {
                items.push(k);
                k = self.next[k as usize];
            }
        }
        items
    }

    /// What active item `k`'s field of the signature holds.
    #[inline]
    fn value_of(&self, k: u32) -> u32 {
        if k < self.second {
            1
        } else {
            self.nd[k as usize].color as u32 + 1
        }
    }

    /// The signature of the current state as DLX6 builds it, by scanning
    /// the active items: what [`Signature`] keeps up to date (the unit
    /// tests check it at every lookup).
    #[cfg(test)]
    fn scan_signature(&self) -> Vec<u64> {
        let mut words = vec![0u64; self.words];
        let mut k = self.prev[self.last_itm as usize];
        while k != self.last_itm {
            if self.nd[k as usize].itm != 0 {
                let place = self.sig.place[k as usize];
                let state = self.nd[k as usize].color as u32;
                words[place.word as usize] |= u64::from(state + 1) << place.shift;
            }
            k = self.prev[k as usize];
        }
        let mut k = self.prev[ROOT as usize];
        while k != ROOT {
            let place = self.sig.place[k as usize];
            let cursor = self.cursor_slot.get(k as usize).copied().unwrap_or(0);
            if cursor == 0 {
                words[place.word as usize] |= 1u64 << place.shift;
            } else {
                let bound = self.bound[k as usize] as u64;
                words[place.word as usize] |= bound << place.shift;
                let first = self.pos[self.nd[k as usize].down as usize] as u64;
                let place = self.sig.place[cursor as usize];
                words[place.word as usize] |= (first + 1) << place.shift;
            }
            k = self.prev[k as usize];
        }
        words
    }

    fn bytes(&self) -> u64 {
        let sizes = self.track.as_ref().map_or(0, |t| t.entry_size.len() * 4);
        (self.keys.len() * 8 + self.entry_hash.len() * 12 + self.table.len() * 4 + sizes) as u64
            + self.zdd.bytes()
    }

    /// Every [`POLL_INTERVAL`] nodes: the stop flag, the poll, the memory; at
    /// the probe's stages, its judgement of the node at `level`. Both
    /// searches (DLX6's and Algorithm M's) call it at each node.
    #[inline]
    fn tick(
        &mut self,
        config: &MemoConfig,
        poll: &mut dyn FnMut(&MemoStats) -> bool,
        level: usize,
    ) -> Result<(), MemoError> {
        if self.stats.nodes == self.next_judgement {
            if let Some(track) = &mut self.track {
                let s = &self.stats;
                let verdict = track.judge(s.nodes, s.updates, s.lookup_hits, level);
                self.next_judgement = track.next_stage;
                if let Some(verdict) = verdict {
                    return Err(MemoError::NoGain(verdict));
                }
            }
        }
        if self.stats.nodes.is_multiple_of(POLL_INTERVAL) {
            if config
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
                || !poll(&self.stats)
            {
                return Err(MemoError::Stopped {
                    nodes: self.stats.nodes,
                });
            }
            self.check_memory(config, 0)?;
        }
        Ok(())
    }

    /// Fails when the cache and the ZDD, with `extra` bytes more, would pass
    /// the limit.
    fn check_memory(&mut self, config: &MemoConfig, extra: u64) -> Result<(), MemoError> {
        let bytes = self.bytes() + extra;
        self.stats.memory_bytes = self.stats.memory_bytes.max(bytes);
        match config.memory_limit {
            Some(limit) if bytes > limit => Err(MemoError::OutOfMemory {
                limit,
                nodes: self.stats.nodes,
            }),
            _ => Ok(()),
        }
    }

    /// Looks the current state's signature up: `Ok(entry)` for a hit,
    /// `Err(entry)` for a new entry made for it.
    fn lookup(&mut self) -> Result<u32, u32> {
        #[cfg(test)]
        assert_eq!(
            self.scan_signature(),
            self.sig.words,
            "the kept signature is the scanned one"
        );
        let hash = self.sig.hash();
        let words = self.words;
        let mask = self.table.len() - 1;
        let mut slot = (hash ^ (hash >> 29)) as usize & mask;
        loop {
            let e = self.table[slot];
            if e == 0 {
                break;
            }
            let entry = (e - 1) as usize;
            if self.entry_hash[entry] == hash
                && self.keys[entry * words..(entry + 1) * words] == self.sig.words[..]
            {
                return Ok(entry as u32);
            }
            slot = (slot + 1) & mask;
        }
        let entry = self.entry_hash.len() as u32;
        self.table[slot] = entry + 1;
        self.entry_hash.push(hash);
        self.entry_zdd.push(0);
        self.keys.extend_from_slice(&self.sig.words);
        if let Some(track) = &mut self.track {
            track.entry_size.push(1);
        }
        Err(entry)
    }

    /// Doubles the hash table once it is half full, the new table charged
    /// against the limit before it is allocated.
    fn grow_table_if_half_full(&mut self, config: &MemoConfig) -> Result<(), MemoError> {
        if self.entry_hash.len() * 2 <= self.table.len() {
            return Ok(());
        }
        self.check_memory(config, self.table.len() as u64 * 8)?;
        self.grow_table();
        Ok(())
    }

    fn grow_table(&mut self) {
        let size = self.table.len() * 2;
        let mask = size - 1;
        let mut table = vec![0u32; size];
        for (entry, &hash) in self.entry_hash.iter().enumerate() {
            let mut slot = (hash ^ (hash >> 29)) as usize & mask;
            while table[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            table[slot] = entry as u32 + 1;
        }
        self.table = table;
    }

    /// DLX6's `cover`: hides the options of `c`'s list; a secondary item
    /// whose length reaches 0 leaves the active list.
    fn cover<const COLORS: bool>(&mut self, c: u32) {
        self.unlink_active(c);
        self.sig.set(c, 0);
        self.stats.updates += 1;
        let last_itm = self.last_itm;
        let mut rr = self.nd[c as usize].down;
        while rr >= last_itm {
            self.hide::<false, COLORS>(rr);
            // SAFETY: as in `hide`: a list's links point inside `nd`.
            rr = unsafe { (*self.nd.as_ptr().add(rr as usize)).down };
        }
    }

    /// Hides the option of node `rr` from every list but `rr`'s own. `M`:
    /// Algorithm M's search ([`multiplicities`]), which also follows the
    /// first live option of each item with a bound above 1.
    #[inline]
    fn hide<const M: bool, const COLORS: bool>(&mut self, rr: u32) {
        let nd = self.nd.as_mut_ptr();
        let (prev, next) = (self.prev.as_mut_ptr(), self.next.as_mut_ptr());
        let second = self.second;
        let mut updates = 0;
        let mut nn = rr + 1;
        // SAFETY: every link, `itm` of a node and active-list index points
        // inside `nd`, `prev` and `next` by construction (`Memo::new`), and
        // the dance only ever copies such indices. The innermost loop of
        // the search, so without bounds checks, field by field as Knuth's
        // C (see links.rs' hide).
        unsafe {
            while nn != rr {
                let node = nd.add(nn as usize);
                let itm = (*node).itm;
                if itm <= 0 {
                    nn = (*node).up;
                    continue;
                }
                if !COLORS || (*node).color >= 0 {
                    let (up, down) = ((*node).up, (*node).down);
                    (*nd.add(up as usize)).down = down;
                    (*nd.add(down as usize)).up = up;
                    if M && up == itm as u32 {
                        self.top_moved(up, down);
                    }
                }
                updates += 1;
                let cc = itm as u32;
                let t = (*nd.add(cc as usize)).itm - 1;
                (*nd.add(cc as usize)).itm = t;
                if t == 0 && cc >= second {
                    let (l, r) = (*prev.add(cc as usize), *next.add(cc as usize));
                    *next.add(l as usize) = r;
                    *prev.add(r as usize) = l;
                    self.sig.set(cc, 0);
                }
                nn += 1;
            }
        }
        self.stats.updates += updates;
    }

    fn uncover<const COLORS: bool>(&mut self, c: u32) {
        let last_itm = self.last_itm;
        let mut rr = self.nd[c as usize].up;
        while rr >= last_itm {
            self.unhide::<false, COLORS>(rr);
            // SAFETY: as in `hide`.
            rr = unsafe { (*self.nd.as_ptr().add(rr as usize)).up };
        }
        self.relink_active(c);
        self.sig.set(c, self.value_of(c));
    }

    /// Takes item `c` out of its active list.
    #[inline(always)]
    fn unlink_active(&mut self, c: u32) {
        debug_assert!((c as usize) < self.next.len());
        // SAFETY: `c` and its neighbours are active-list links, inside
        // `prev` and `next` by construction (`ItemLists::new`).
        unsafe {
            let (prev, next) = (self.prev.as_mut_ptr(), self.next.as_mut_ptr());
            let (l, r) = (*prev.add(c as usize), *next.add(c as usize));
            *next.add(l as usize) = r;
            *prev.add(r as usize) = l;
        }
    }

    /// Puts item `c` back in its active list.
    #[inline(always)]
    fn relink_active(&mut self, c: u32) {
        debug_assert!((c as usize) < self.next.len());
        // SAFETY: as in `unlink_active`.
        unsafe {
            let (prev, next) = (self.prev.as_mut_ptr(), self.next.as_mut_ptr());
            let (l, r) = (*prev.add(c as usize), *next.add(c as usize));
            *next.add(l as usize) = c;
            *prev.add(r as usize) = c;
        }
    }

    /// Undoes [`Self::hide`], going leftward.
    #[inline]
    fn unhide<const M: bool, const COLORS: bool>(&mut self, rr: u32) {
        let nd = self.nd.as_mut_ptr();
        let (prev, next) = (self.prev.as_mut_ptr(), self.next.as_mut_ptr());
        let second = self.second;
        let mut nn = rr - 1;
        // SAFETY: as in `hide`.
        unsafe {
            while nn != rr {
                let node = nd.add(nn as usize);
                let itm = (*node).itm;
                if itm <= 0 {
                    nn = (*node).down;
                    continue;
                }
                if !COLORS || (*node).color >= 0 {
                    let (up, down) = ((*node).up, (*node).down);
                    (*nd.add(up as usize)).down = nn;
                    (*nd.add(down as usize)).up = nn;
                    if M && up == itm as u32 {
                        self.top_moved(up, nn);
                    }
                }
                let cc = itm as u32;
                let t = (*nd.add(cc as usize)).itm + 1;
                (*nd.add(cc as usize)).itm = t;
                if t == 1 && cc >= second {
                    let (l, r) = (*prev.add(cc as usize), *next.add(cc as usize));
                    *next.add(l as usize) = cc;
                    *prev.add(r as usize) = cc;
                    self.sig.set(cc, (*nd.add(cc as usize)).color as u32 + 1);
                }
                nn -= 1;
            }
        }
    }

    /// DLX6's `purify`: hides the options that give `p`'s item another
    /// color, marks those that agree (color -1), and keeps in the header the
    /// color and the count of live options (-1 when none is left: the item
    /// then leaves the active list, and the -1 tells `unpurify` so).
    fn purify<const M: bool>(&mut self, p: u32) {
        let cc = self.nd[p as usize].itm as u32;
        let x = self.nd[p as usize].color;
        self.nd[cc as usize].color = x;
        if self.sig.value[cc as usize] != 0 {
            self.sig.set(cc, x as u32 + 1);
        }
        let mut tt = self.nd[cc as usize].itm;
        self.stats.cleansings += 1;
        let mut rr = self.nd[cc as usize].down;
        while rr >= self.last_itm {
            if self.nd[rr as usize].color != x {
                tt -= 1;
                self.hide::<M, true>(rr);
            } else {
                self.stats.cleansings += 1;
                self.nd[rr as usize].color = -1;
            }
            rr = self.nd[rr as usize].down;
        }
        if tt > 0 {
            self.nd[cc as usize].itm = tt;
        } else {
            self.nd[cc as usize].itm = -1;
            let (l, r) = (self.prev[cc as usize], self.next[cc as usize]);
            self.next[l as usize] = r;
            self.prev[r as usize] = l;
            self.sig.set(cc, 0);
        }
    }

    fn unpurify<const M: bool>(&mut self, p: u32) {
        let cc = self.nd[p as usize].itm as u32;
        let x = self.nd[p as usize].color;
        self.nd[cc as usize].color = 0;
        if self.sig.value[cc as usize] != 0 {
            self.sig.set(cc, 1);
        }
        let mut tt = self.nd[cc as usize].itm;
        if tt < 0 {
            tt = 0;
            let (l, r) = (self.prev[cc as usize], self.next[cc as usize]);
            self.next[l as usize] = cc;
            self.prev[r as usize] = cc;
            self.sig.set(cc, 1);
        }
        let mut rr = self.nd[cc as usize].up;
        while rr >= self.last_itm {
            if self.nd[rr as usize].color < 0 {
                self.nd[rr as usize].color = x;
            } else {
                tt += 1;
                self.unhide::<M, true>(rr);
            }
            rr = self.nd[rr as usize].up;
        }
        self.nd[cc as usize].itm = tt;
    }

    /// Covers or purifies the other items of `cur`'s option, left to right.
    /// A secondary item whose list emptied (by the branching item's cover or
    /// an earlier item of this option) is left alone: it is gone already.
    fn commit_others<const COLORS: bool>(&mut self, cur: u32) {
        let mut pp = cur + 1;
        while pp != cur {
            let node = self.nd[pp as usize];
            if node.itm <= 0 {
                pp = node.up;
                continue;
            }
            let cc = node.itm as u32;
            if cc < self.second || self.nd[cc as usize].itm != 0 {
                if !COLORS || node.color == 0 {
                    self.cover::<COLORS>(cc);
                } else if node.color > 0 {
                    self.purify::<false>(pp);
                }
            }
            pp += 1;
        }
    }

    /// Undoes [`Self::commit_others`] right to left.
    fn uncommit_others<const COLORS: bool>(&mut self, cur: u32) {
        let mut pp = cur - 1;
        while pp != cur {
            let node = self.nd[pp as usize];
            if node.itm <= 0 {
                pp = node.down;
                continue;
            }
            let cc = node.itm as u32;
            if cc < self.second || self.nd[cc as usize].itm != 0 {
                if !COLORS || node.color == 0 {
                    self.uncover::<COLORS>(cc);
                } else if node.color > 0 {
                    self.unpurify::<false>(pp);
                }
            }
            pp -= 1;
        }
    }

    /// DLX2's choice: the shortest list among the active primary items, the
    /// leftmost of ties, the scan ending at an empty list.
    fn best_item(&self) -> u32 {
        let mut best = ROOT;
        let mut t = i32::MAX;
        let mut k = self.next[ROOT as usize];
        while t != 0 && k != ROOT {
            let len = self.nd[k as usize].itm;
            if len < t {
                best = k;
                t = len;
            }
            k = self.next[k as usize];
        }
        best
    }

    /// DLX6's "Solve the problem", its gotos as states.
    fn run<const COLORS: bool>(
        &mut self,
        config: &MemoConfig,
        poll: &mut dyn FnMut(&MemoStats) -> bool,
    ) -> Result<(), MemoError> {
        if self.next[ROOT as usize] == ROOT {
            // No primary item: the empty set is the one solution.
            self.stats.nodes = 1;
            self.root = 1;
            return Ok(());
        }
        let depth = (self.second as usize) + 1;
        let mut choice = vec![0u32; depth];
        let mut saved_zdd = vec![0u32; depth];
        let mut entry_at = vec![0u32; depth];
        let mut level = 0usize;
        let mut znode = 0u32;
        enum Step {
            Forward,
            Advance,
            Backup,
            Backdown,
        }
        let mut step = Step::Forward;
        loop {
            match step {
                Step::Forward => {
                    self.stats.nodes += 1;
                    self.tick(config, poll, level)?;
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
                            entry_at[level] = entry;
                            self.grow_table_if_half_full(config)?;
                        }
                    }
                    znode = 0;
                    let best = self.best_item();
                    if let Some(track) = &mut self.track {
                        track.enter(level, self.stats.nodes, self.nd[best as usize].itm as u32);
                    }
                    self.cover::<COLORS>(best);
                    choice[level] = self.nd[best as usize].down;
                    step = Step::Advance;
                }
                Step::Advance => {
                    let cur = choice[level];
                    if cur < self.last_itm {
                        // Back at the header: `cur` is the branching item.
                        step = Step::Backup;
                        continue;
                    }
                    self.commit_others::<COLORS>(cur);
                    if self.next[ROOT as usize] == ROOT {
                        self.stats.nodes += 1;
                        self.stats.hits += 1;
                        self.stats.max_level = self.stats.max_level.max(level + 1);
                        self.recover::<COLORS>(level, &mut choice, &mut znode, 1);
                        continue;
                    }
                    saved_zdd[level] = znode;
                    level += 1;
                    self.stats.max_level = self.stats.max_level.max(level);
                    step = Step::Forward;
                }
                Step::Backup => {
                    self.uncover::<COLORS>(choice[level]);
                    if let Some(track) = &mut self.track {
                        track.done(level, entry_at[level], self.stats.nodes);
                    }
                    if znode != 0 {
                        self.entry_zdd[entry_at[level] as usize] = znode;
                        self.stats.good_signatures += 1;
                    } else {
                        self.stats.failed_signatures += 1;
                    }
                    step = Step::Backdown;
                }
                Step::Backdown => {
                    if level == 0 {
                        self.root = znode;
                        self.stats.zdd_nodes = self.zdd.len() as u64;
                        self.check_memory(config, 0)?;
                        return Ok(());
                    }
                    level -= 1;
                    let zsol = znode;
                    znode = saved_zdd[level];
                    self.recover::<COLORS>(level, &mut choice, &mut znode, zsol);
                    step = Step::Advance;
                }
            }
        }
    }

    /// DLX6's `recover`: undoes the option at `level`, makes its ZDD node if
    /// its subtree had solutions (`zsol != 0`), and moves to the next
    /// alternative.
    fn recover<const COLORS: bool>(
        &mut self,
        level: usize,
        choice: &mut [u32],
        znode: &mut u32,
        zsol: u32,
    ) {
        let cur = choice[level];
        self.uncommit_others::<COLORS>(cur);
        if zsol != 0 {
            let option = self.node_option[cur as usize];
            *znode = self.zdd.node(option, *znode, zsol);
        }
        choice[level] = self.nd[cur as usize].down;
        if let Some(track) = &mut self.track {
            track.next_alternative(level);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::dlx_format::parse;
    use crate::xcc::{Collect, RunConfig, Solver, Task};

    /// Every row of DLX6's table but the largest, searched with the kept
    /// signature checked against DLX6's scan at every node (`lookup` does so
    /// under test): same hits, signatures and ZDD as DLX6's.
    #[test]
    fn the_kept_signature_is_dlx6s_scan_on_every_reference_instance() {
        let bench = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench");
        let table = std::fs::read_to_string(bench.join("dlx6-reference.tsv")).unwrap();
        let mut rows = 0;
        for line in table.lines().filter(|l| !l.starts_with('#')).skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            if ["langford11", "queens12", "latin5"].contains(&f[0]) {
                continue;
            }
            let memo = bench.join("memo").join(format!("{}.dlx", f[0]));
            let path = if memo.exists() {
                memo
            } else {
                bench.join("instances").join(format!("{}.dlx", f[0]))
            };
            let problem = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
            let outcome = count(&problem, &MemoConfig::default()).unwrap();
            let (failed, good) = outcome.stats.knuth_signatures();
            assert_eq!(outcome.zdd.count().to_string(), f[1], "{}", f[0]);
            assert_eq!(outcome.stats.hits.to_string(), f[7], "{}", f[0]);
            assert_eq!(format!("{failed}+{good}"), f[6], "{}", f[0]);
            rows += 1;
        }
        assert!(rows >= 15, "{rows}");
    }

    fn all_solutions(problem: &Problem) -> Vec<Vec<usize>> {
        let mut collect = Collect::default();
        Solver::new(problem)
            .run(&Task::root(), &RunConfig::default(), &mut collect)
            .unwrap();
        let mut all = collect.solutions;
        for s in &mut all {
            s.sort_unstable();
        }
        all.sort();
        all
    }

    fn zdd_solutions(problem: &Problem) -> Vec<Vec<usize>> {
        let out = count(problem, &MemoConfig::default()).unwrap();
        let mut all = out.zdd.solutions(1 << 20);
        for s in &mut all {
            s.sort_unstable();
        }
        all.sort();
        all
    }

    #[test]
    fn the_zdd_holds_exactly_the_solutions() {
        for text in [
            "a b c\na b\nb c\nc\na\nb\n",
            "p q r | x y\np x:1\nq x:1 y:2\nr y:2\np q x:2\nr\nq y:1\np\n",
            "a b | s\na s\nb s\na\nb\n",
            "a b | s\na s:1\nb s:1\nb s:2\n",
        ] {
            let problem = parse(text).unwrap();
            assert_eq!(zdd_solutions(&problem), all_solutions(&problem), "{text}");
        }
    }

    /// Algorithm M: the ZDD holds the links engine's solutions, each once,
    /// no option twice on a path (the kept signature checked against the
    /// scan at every lookup, as under test always).
    #[test]
    fn with_multiplicities_the_zdd_holds_exactly_the_solutions() {
        for text in [
            "2:3|a b\na\nb\na b\na\n",
            "a 2:2|b 0:2|c\na b\nb\nb c\na c\nc\nb c\n",
            "0:2|a 1:3|b | x\na x:1\nb x:1\na b x:2\nb\na\nb x:2\n",
            "2:2|p 0:1|q | s t\np s\np t\np q s:1\nq t:2\np s:1 t:2\np\n",
            "3:3|a\na\na\na\na\n",
            "1:2|a 1:2|b\na b\na b\na\nb\n",
        ] {
            let problem = parse(text).unwrap();
            let zdd = zdd_solutions(&problem);
            for s in &zdd {
                assert!(s.windows(2).all(|w| w[0] < w[1]), "{s:?} in {text}");
            }
            assert_eq!(zdd, all_solutions(&problem), "{text}");
        }
    }

    /// The multiplicity instances of bench/instances: the links engine's
    /// counts, with the signature checked at every lookup.
    #[test]
    fn with_multiplicities_the_bench_instances_count_as_the_links_engine() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/instances");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.starts_with("mcc_") {
                continue;
            }
            let problem = parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
            assert!(problem.has_multiplicities(), "{name}");
            let plain = Solver::new(&problem)
                .run(
                    &Task::root(),
                    &RunConfig::default(),
                    &mut crate::xcc::CountOnly,
                )
                .unwrap()
                .stats
                .solutions;
            let out = count(&problem, &MemoConfig::default()).unwrap();
            assert_eq!(out.zdd.count().to_string(), plain.to_string(), "{name}");
            seen += 1;
        }
        assert!(seen >= 3, "{seen}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 400,
            failure_persistence: None,
            ..Default::default()
        })]

        /// Random small problems with bounds, secondary items and colors:
        /// the ZDD's solutions are the links engine's.
        #[test]
        fn random_multiplicities_and_colors(
            bounds in proptest::collection::vec((0u32..=3, 1u32..=3), 1..=4),
            secondaries in 0usize..=2,
            options in proptest::collection::vec(
                proptest::collection::vec((0usize..6, 0u8..=2), 1..=4), 1..=10),
        ) {
            let np = bounds.len();
            let mut text = String::new();
            for (i, &(a, b)) in bounds.iter().enumerate() {
                text.push_str(&format!("{}:{}|p{i} ", a.min(b), b));
            }
            if secondaries > 0 {
                text.push('|');
                for s in 0..secondaries {
                    text.push_str(&format!(" s{s}"));
                }
            }
            text.push('\n');
            let mut lines = 0;
            for opt in &options {
                let mut used = vec![false; np + secondaries];
                let mut line = String::new();
                for &(item, color) in opt {
                    let item = item % (np + secondaries);
                    if used[item] {
                        continue;
                    }
                    used[item] = true;
                    if item < np {
                        line.push_str(&format!("p{item} "));
                    } else if color == 0 {
                        line.push_str(&format!("s{} ", item - np));
                    } else {
                        line.push_str(&format!("s{}:{color} ", item - np));
                    }
                }
                if used[..np].iter().any(|&u| u) {
                    text.push_str(&line);
                    text.push('\n');
                    lines += 1;
                }
            }
            proptest::prop_assume!(lines > 0);
            let problem = parse(&text).unwrap();
            let zdd = zdd_solutions(&problem);
            for s in &zdd {
                proptest::prop_assert!(s.windows(2).all(|w| w[0] < w[1]), "{:?} in {}", s, text);
            }
            proptest::prop_assert_eq!(zdd, all_solutions(&problem), "{}", text);
        }
    }

    /// The probe's plain nodes covered: at the end of a search, the nodes
    /// of DLX6's tree without a cache, which is the links engine's tree
    /// (DLX2's choice and order, a solution counted as a node).
    #[test]
    fn the_probe_covers_exactly_the_plain_tree() {
        for text in [
            crate::xcc::dlx_format::to_string(&crate::xcc::testing::queens(8)),
            std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/memo/domino4x7.dlx"),
            )
            .unwrap(),
            "a b c\na b\nb c\nc\na\nb\n".to_string(),
        ] {
            let problem = parse(&text).unwrap();
            let mut search = Memo::new(&problem);
            let mut track = probe::Tracker::new();
            track.next_stage = u64::MAX;
            search.track = Some(Box::new(track));
            search
                .run::<false>(&MemoConfig::default(), &mut |_| true)
                .unwrap();
            let covered = search.stats.nodes + search.track.as_ref().unwrap().saved;
            let plain = Solver::with_engine(&problem, crate::xcc::Engine::Links)
                .unwrap()
                .run(
                    &Task::root(),
                    &RunConfig::default(),
                    &mut crate::xcc::CountOnly,
                )
                .unwrap()
                .stats;
            assert!(search.stats.lookup_hits > 0 || text.len() < 30);
            assert_eq!(covered, plain.nodes, "{text}");
        }
    }

    #[test]
    fn a_tiny_memory_limit_stops_with_a_clear_error() {
        let text: String = {
            let mut t = String::new();
            let n = 8;
            for r in 0..n {
                for c in 0..n {
                    t.push_str(&format!("c{r}_{c} "));
                }
            }
            t.push('\n');
            for r in 0..n {
                for c in 0..n {
                    if c + 1 < n {
                        t.push_str(&format!("c{r}_{c} c{r}_{}\n", c + 1));
                    }
                    if r + 1 < n {
                        t.push_str(&format!("c{r}_{c} c{}_{c}\n", r + 1));
                    }
                }
            }
            t
        };
        let problem = parse(&text).unwrap();
        let config = MemoConfig {
            memory_limit: Some(10_000),
            ..MemoConfig::default()
        };
        assert!(matches!(
            count(&problem, &config),
            Err(MemoError::OutOfMemory { limit: 10_000, .. })
        ));
        let out = count(&problem, &MemoConfig::default()).unwrap();
        assert_eq!(out.zdd.count().to_string(), "12988816");
        assert_eq!(out.stats.nodes, 2317);
    }
}
