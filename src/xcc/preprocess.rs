//! Knuth's DLX-PRE: an XCC problem turned into an equivalent smaller one.
//!
//! Two reductions, tried for every item `c` in turn, round after round until a
//! round changes nothing (DLX-PRE's program text, step for step):
//!
//! * If hiding `c` (deleting the options with an uncolored `c` from every other
//!   list) leaves a primary item `p` in no option, then every option with `p`
//!   has an uncolored `c`: item `c` goes, the options with `p` lose it and the
//!   other options with `c` go.
//! * Else an option `r` whose first surviving item is `c` (uncolored) goes when
//!   choosing it would leave a primary item outside `r` in no option.
//!
//! The options that solve the reduced problem are exactly the options that
//! solve the input (DLX-PRE's own argument), so [`Reduced::origin`] maps a
//! solution back by renaming its options alone.
//!
//! The port is literal, for equal output: Knuth's node array (spacers,
//! shortened options as spacers, the stack of doomed options in `itm` fields,
//! the jump into the middle of the unhiding loop), the same order of items,
//! options and entries in the output, the same counts of removed options and
//! items (his, quirks included: a primary item found in no option counts every
//! item as removed), the same rounds and the same mems. Knuth's input limits
//! (8-character names, one-character colors, fixed capacities) do not apply;
//! multiplicities (`u:v|name`) are rejected, as DLX-PRE's reasoning assumes
//! every primary item is covered exactly once.

use std::fmt::Write as _;

use super::problem::{EntrySpec, ItemId, Problem, ProblemBuilder};

/// DLX-PRE's command-line options (`t`, `T`, `d`, `v`), with its defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Knuth's `t`: rounds run while `round < rounds`, so at most
    /// `rounds - 1` of them.
    pub rounds: u32,
    /// Knuth's `T`: stop reducing (and output what is reduced so far) when
    /// this many mems are spent, checked before each item.
    pub timeout: u64,
    /// Knuth's `d`: a progress line in the log every `delta` mems or so (0:
    /// none). The first is due at 10^9 mems unless `delta` was given.
    pub delta: u64,
    /// The first progress line is due at this many mems.
    pub thresh: u64,
    /// Knuth's `v`: a sum of the `SHOW_*` codes.
    pub verbose: u32,
}

/// Basic statistics on the log (the default).
pub const SHOW_BASICS: u32 = 1;
/// "Beginning round N:" lines.
pub const SHOW_CHOICES: u32 = 2;
/// Every item and option removed, and why.
pub const SHOW_DETAILS: u32 = 4;
/// A comment `| (from N)` after every option of the output.
pub const SHOW_ORIG_NOS: u32 = 8;
/// The length of every item's list, before and after.
pub const SHOW_TOTS: u32 = 512;
/// Options ignored for having no primary item.
pub const SHOW_WARNINGS: u32 = 1024;

impl Default for Config {
    fn default() -> Self {
        Config {
            rounds: 10_000_000,
            timeout: 0x1fff_ffff_ffff_ffff,
            delta: 10_000_000_000,
            thresh: 1_000_000_000,
            verbose: SHOW_BASICS + SHOW_WARNINGS,
        }
    }
}

/// Why a problem cannot be preprocessed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreprocessError {
    #[error("item {0:?} has a multiplicity: DLX-PRE's reductions hold only when every primary item is covered exactly once")]
    Multiplicity(String),
    /// The caller's `stop` said stop (a deadline passed) before the
    /// reduction ended.
    #[error("the preprocessing was stopped before it ended")]
    Stopped,
}

/// DLX-PRE's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Figures {
    /// Options removed (Knuth's `options_out`).
    pub options_out: usize,
    /// Items removed (Knuth's `itms_out`).
    pub items_out: usize,
    /// The round it stopped in (Knuth's `rnd`: 0 when a primary item was in
    /// no option from the start).
    pub rounds: u32,
    /// Mems of the reduction and of the output (not of the input: see
    /// [`input_mems`]).
    pub mems: u64,
    /// Options, items and entries read, as Knuth's first line counts them
    /// (options without primary items left out; entries with one spacer
    /// per option).
    pub options_in: usize,
    pub primary_in: usize,
    pub secondary_in: usize,
    pub entries_in: usize,
}

/// The reduced problem and how it relates to the input.
#[derive(Debug, Clone)]
pub struct Reduced {
    /// The reduced problem: surviving items in input order (primary first),
    /// options in DLX-PRE's output order, entries in input order.
    pub problem: Problem,
    /// For each option of `problem`, its index in the input problem.
    pub origin: Vec<usize>,
    /// For each option of `problem`, the number DLX-PRE's `v8` shows, from
    /// 1 among the input's options that have a primary item.
    pub from: Vec<usize>,
    /// Items of the input that are not in `problem`.
    pub removed_items: Vec<ItemId>,
    /// A primary item found in no option: the input has no solution, and
    /// `problem` is that item alone (DLX-PRE's one-line output).
    pub infeasible: Option<ItemId>,
    pub figures: Figures,
    /// What DLX-PRE writes on stderr, but the summary line: warnings,
    /// progress, the details `verbose` asks for.
    pub log: String,
}

impl Reduced {
    /// The reduced problem as DLX-PRE prints it: a blank before every name,
    /// `|` only when a secondary item survives, `| (from N)` after each
    /// option with `SHOW_ORIG_NOS`; only the item's name when infeasible.
    pub fn to_dlx_pre(&self, verbose: u32) -> String {
        let p = &self.problem;
        if self.infeasible.is_some() {
            return format!("{}\n", p.items()[0].name);
        }
        let mut out = String::new();
        let mut bar = false;
        for item in p.items() {
            if !item.is_primary() && !bar {
                bar = true;
                out.push_str(" |");
            }
            out.push(' ');
            out.push_str(&item.name);
        }
        out.push('\n');
        for (k, option) in p.options().iter().enumerate() {
            for e in option {
                out.push(' ');
                out.push_str(&p.items()[e.item].name);
                if let Some(c) = e.color {
                    out.push(':');
                    out.push_str(&p.colors()[c as usize]);
                }
            }
            // DLX-PRE has no costs; a DLX5 input keeps them, as DLX5 reads.
            if p.cost(k) > 0 {
                let _ = write!(out, " |{}", p.cost(k));
            }
            out.push('\n');
            if verbose & SHOW_ORIG_NOS != 0 {
                let _ = writeln!(out, "| (from {})", self.from[k]);
            }
        }
        out
    }

    /// DLX-PRE's summary line (without its newline), given the input's mems.
    pub fn summary(&self, input_mems: u64) -> String {
        self.figures.summary(input_mems)
    }

    /// Maps a solution of the reduced problem to the input's option indices.
    pub fn map_back(&self, options: &[usize]) -> Vec<usize> {
        options.iter().map(|&o| self.origin[o]).collect()
    }
}

impl Figures {
    /// DLX-PRE's summary line (without its newline), given the input's mems.
    pub fn summary(&self, input_mems: u64) -> String {
        let f = self;
        let s = |n: usize| if n == 1 { "" } else { "s" };
        format!(
            "Removed {} option{} and {} item{}, after {}+{} mems, {} round{}.",
            f.options_out,
            s(f.options_out),
            f.items_out,
            s(f.items_out),
            input_mems,
            f.mems,
            f.rounds,
            if f.rounds == 1 { "" } else { "s" }
        )
    }
}

/// The most bytes [`preprocess`] of `problem` allocates: Knuth's node array
/// (16 bytes a node: the items, the entries, a spacer an option), its
/// per-item and per-option tables, and the reduced problem (no larger than
/// `problem`, with its maps back).
pub fn memory_bound(problem: &Problem) -> u64 {
    let items = problem.items().len() as u64 + 2;
    let options = problem.options().len() as u64 + 1;
    let nodes = items + problem.entries() as u64 + options;
    nodes * 16 + items * 24 + options * (8 + 16) + super::memory::problem_bound(problem)
}

/// Runs DLX-PRE on `problem`.
pub fn preprocess(problem: &Problem, config: &Config) -> Result<Reduced, PreprocessError> {
    preprocess_until(problem, config, &|| false)
}

/// Runs DLX-PRE on `problem` as [`preprocess`] does, asking `stop` before
/// each item it tries (as DLX-PRE checks its `T`): a server's deadline.
/// Unlike `T`, which ends the reduction with an equivalent problem, a stop
/// is an error: where the reduction stopped would depend on the clock.
pub fn preprocess_until(
    problem: &Problem,
    config: &Config,
    stop: &dyn Fn() -> bool,
) -> Result<Reduced, PreprocessError> {
    if let Some(item) = problem.items().iter().find(|i| {
        matches!(i.kind, super::problem::ItemKind::Primary { min, max } if (min, max) != (1, 1))
    }) {
        return Err(PreprocessError::Multiplicity(item.name.clone()));
    }
    let mut pre = Pre::new(problem, config);
    pre.stop = Some(stop);
    let end = pre.reduce();
    if pre.stopped {
        return Err(PreprocessError::Stopped);
    }
    Ok(pre.output(problem, end))
}

/// One node of Knuth's array; in a header node, `itm` is the list's length
/// and `color` is `aux`, a stamp.
#[derive(Debug, Clone, Copy, Default)]
struct Node {
    up: u32,
    down: u32,
    itm: i32,
    color: u32,
}

/// How the reduction ended.
enum End {
    /// Output the problem as reduced.
    Finish,
    /// This primary item is in no option.
    Infeasible(usize),
}

/// A primary item in no option: Knuth's jump to `all_done`.
struct Infeasible(usize);

struct Pre<'a> {
    nd: Vec<Node>,
    /// Knuth's item number (from 1) to the input's item.
    input_item: Vec<ItemId>,
    /// The input's index of each option Knuth keeps, by his number - 1.
    input_option: Vec<usize>,
    names: Vec<&'a str>,
    colors: &'a [String],
    last_itm: usize,
    second: usize,
    options: usize,
    mems: u64,
    /// A blocked item, or the top of the stack of options to delete.
    stack: usize,
    change: bool,
    rnd: u32,
    options_out: usize,
    itms_out: usize,
    config: Config,
    thresh: u64,
    log: String,
    /// Asked before each item is tried; `stopped` once it said stop.
    stop: Option<&'a dyn Fn() -> bool>,
    stopped: bool,
}

impl<'a> Pre<'a> {
    /// The state after DLX-PRE's input phase.
    fn new(problem: &'a Problem, config: &Config) -> Self {
        let items = problem.items();
        // Knuth's item line lists the primary items first.
        let mut input_item: Vec<ItemId> = vec![usize::MAX];
        input_item.extend((0..items.len()).filter(|&i| items[i].is_primary()));
        let second = input_item.len();
        input_item.extend((0..items.len()).filter(|&i| !items[i].is_primary()));
        let last_itm = input_item.len();
        let mut number = vec![0usize; items.len()];
        for (k, &i) in input_item.iter().enumerate().skip(1) {
            number[i] = k;
        }
        let names = input_item
            .iter()
            .map(|&i| {
                if i == usize::MAX {
                    ""
                } else {
                    items[i].name.as_str()
                }
            })
            .collect();
        let kept = problem.options().len() - problem.dropped_options().len();
        let mut nd = vec![Node::default(); last_itm + problem.entries() + kept + 1];
        for (c, node) in nd.iter_mut().enumerate().take(last_itm) {
            node.up = c as u32;
            node.down = c as u32;
        }
        let mut pre = Pre {
            nd,
            input_item,
            input_option: Vec::with_capacity(kept),
            names,
            colors: problem.colors(),
            last_itm,
            second,
            options: 0,
            mems: 0,
            stack: 0,
            change: false,
            rnd: 0,
            options_out: 0,
            itms_out: 0,
            config: *config,
            thresh: config.thresh,
            log: String::new(),
            stop: None,
            stopped: false,
        };
        let mut last_node = last_itm;
        for (o, option) in problem.options().iter().enumerate() {
            let i = last_node;
            if problem.is_dropped(o) {
                if config.verbose & SHOW_WARNINGS != 0 {
                    let _ = writeln!(
                        pre.log,
                        "Option ignored (no primary items): {}",
                        problem.format_option(o)
                    );
                }
                // Knuth inserts its nodes, then takes them out again; what
                // stays is the duplicate-check stamp.
                for e in option {
                    pre.nd[number[e.item]].color = (i - 1) as u32;
                }
                continue;
            }
            for e in option {
                let k = number[e.item];
                last_node += 1;
                let nd = &mut pre.nd;
                nd[last_node].itm = k as i32;
                nd[last_node].color = e.color.map_or(0, |c| c + 1);
                nd[k].itm += 1;
                nd[k].color = last_node as u32;
                let r = nd[k].up as usize;
                nd[r].down = last_node as u32;
                nd[k].up = last_node as u32;
                nd[last_node].up = r as u32;
                nd[last_node].down = k as u32;
            }
            pre.nd[i].down = last_node as u32;
            last_node += 1;
            pre.options += 1;
            pre.nd[last_node].up = (i + 1) as u32;
            pre.nd[last_node].itm = -(pre.options as i32);
            pre.input_option.push(o);
        }
        debug_assert_eq!(last_node + 1, pre.nd.len());
        if config.verbose & SHOW_BASICS != 0 {
            let _ = writeln!(
                pre.log,
                "({} options, {}+{} items, {} entries successfully read)",
                pre.options,
                second - 1,
                last_itm - second,
                last_node - last_itm
            );
        }
        pre.item_totals();
        pre
    }

    fn item_totals(&mut self) {
        if self.config.verbose & SHOW_TOTS == 0 {
            return;
        }
        self.log.push_str("Item totals:");
        for k in 1..self.last_itm {
            if k == self.second {
                self.log.push_str(" |");
            }
            let _ = write!(self.log, " {}", self.nd[k].itm);
        }
        self.log.push('\n');
    }

    fn details(&self) -> bool {
        self.config.verbose & SHOW_DETAILS != 0
    }

    /// Knuth's `dpoption`: the surviving items of the option holding node
    /// `p`, in input order, and its number.
    fn dpoption(&self, p: usize) -> (String, usize) {
        let nd = &self.nd;
        let mut p = p - 1;
        while nd[p].itm > 0 || (nd[p].down as usize) < p {
            p -= 1;
        }
        let mut text = String::new();
        let mut q = p + 1;
        loop {
            let c = nd[q].itm;
            if c < 0 {
                return (text, (-c) as usize);
            }
            if c > 0 {
                text.push(' ');
                text.push_str(self.names[c as usize]);
                if nd[q].color != 0 {
                    text.push(':');
                    text.push_str(&self.colors[nd[q].color as usize - 1]);
                }
            }
            q += 1;
        }
    }

    fn log_option(&mut self, what: &str, r: usize) {
        let (text, t) = self.dpoption(r);
        let _ = writeln!(self.log, "{what}{text} (option {t})");
    }

    /// Knuth's "Take note that `cc` has no options".
    fn note_empty(&mut self, cc: usize) -> Result<(), Infeasible> {
        self.itms_out += 1;
        if cc >= self.second {
            if self.details() {
                let _ = writeln!(self.log, " {} is in no options", self.names[cc]);
            }
            Ok(())
        } else {
            if self.details() {
                let _ = writeln!(
                    self.log,
                    "Primary item {} is in no options!",
                    self.names[cc]
                );
            }
            self.options_out = self.options;
            self.itms_out = self.last_itm - 1;
            Err(Infeasible(cc))
        }
    }

    /// "Reduce the problem".
    fn reduce(&mut self) -> End {
        match self.rounds() {
            Ok(()) => End::Finish,
            Err(Infeasible(cc)) => End::Infeasible(cc),
        }
    }

    fn rounds(&mut self) -> Result<(), Infeasible> {
        for cc in 1..self.last_itm {
            self.mems += 1;
            if self.nd[cc].itm == 0 {
                self.note_empty(cc)?;
            }
        }
        self.rnd = 1;
        while self.rnd < self.config.rounds {
            if self.config.verbose & SHOW_CHOICES != 0 {
                let _ = writeln!(self.log, "Beginning round {}:", self.rnd);
            }
            self.change = false;
            for c in 1..self.last_itm {
                self.mems += 1;
                if self.nd[c].itm != 0 && !self.try_item(c)? {
                    return Ok(());
                }
            }
            if !self.change {
                break;
            }
            self.rnd += 1;
        }
        Ok(())
    }

    /// "Try to reduce options in item `c`'s list". False on a timeout.
    fn try_item(&mut self, c: usize) -> Result<bool, Infeasible> {
        if self.config.delta != 0 && self.mems >= self.thresh {
            self.thresh += self.config.delta;
            let _ = writeln!(
                self.log,
                " after {} mems: {}.{}, {} items out, {} options out",
                self.mems, self.rnd, c, self.itms_out, self.options_out
            );
        }
        if self.mems >= self.config.timeout {
            return Ok(false);
        }
        if self.stop.is_some_and(|stop| stop()) {
            self.stopped = true;
            return Ok(false);
        }
        self.stack = 0;
        self.hide(c);
        if self.stack != 0 {
            self.remove_item(c)?;
            return Ok(true);
        }
        let last_itm = self.last_itm;
        self.mems += 1;
        let mut r = self.nd[c].down as usize;
        while r >= last_itm {
            let mut q = r - 1;
            loop {
                self.mems += 1;
                if self.nd[q].down as usize == q - 1 {
                    q -= 1;
                } else {
                    break;
                }
            }
            self.mems += 1;
            if self.nd[q].itm <= 0 {
                self.mems += 1;
                if self.nd[r].color == 0 {
                    self.stack_if_blocking(r);
                }
            }
            self.mems += 1;
            r = self.nd[r].down as usize;
        }
        self.unhide(c);
        let mut r = self.stack;
        while r != 0 {
            self.mems += 2;
            let rr = self.nd[r].itm as usize;
            self.nd[r].itm = c as i32;
            self.delete_stacked(r)?;
            r = rr;
        }
        Ok(true)
    }

    fn hide(&mut self, c: usize) {
        let last_itm = self.last_itm;
        self.mems += 1;
        let mut rr = self.nd[c].down as usize;
        while rr >= last_itm {
            self.mems += 1;
            if self.nd[rr].color == 0 {
                let mut nn = rr + 1;
                while nn != rr {
                    let nd = &mut self.nd;
                    let (uu, dd) = (nd[nn].up as usize, nd[nn].down as usize);
                    let cc = nd[nn].itm;
                    self.mems += 2;
                    if cc <= 0 {
                        nn = uu;
                        continue;
                    }
                    let cc = cc as usize;
                    nd[uu].down = dd as u32;
                    nd[dd].up = uu as u32;
                    let t = nd[cc].itm - 1;
                    nd[cc].itm = t;
                    self.mems += 4;
                    if t == 0 && cc < self.second {
                        self.stack = cc;
                    }
                    nn += 1;
                }
            }
            self.mems += 1;
            rr = self.nd[rr].down as usize;
        }
    }

    fn unhide(&mut self, c: usize) {
        let last_itm = self.last_itm;
        self.mems += 1;
        let mut rr = self.nd[c].down as usize;
        while rr >= last_itm {
            self.mems += 1;
            if self.nd[rr].color == 0 {
                let mut nn = rr + 1;
                while nn != rr {
                    let nd = &mut self.nd;
                    let (uu, dd) = (nd[nn].up as usize, nd[nn].down as usize);
                    let cc = nd[nn].itm;
                    self.mems += 2;
                    if cc <= 0 {
                        nn = uu;
                        continue;
                    }
                    let cc = cc as usize;
                    let t = nd[cc].itm;
                    nd[uu].down = nn as u32;
                    nd[dd].up = nn as u32;
                    nd[cc].itm = t + 1;
                    self.mems += 4;
                    nn += 1;
                }
            }
            self.mems += 1;
            rr = self.nd[rr].down as usize;
        }
    }

    /// "Remove item `c`, and maybe some options": `stack` is a primary item
    /// whose every option has an uncolored `c`.
    fn remove_item(&mut self, c: usize) -> Result<(), Infeasible> {
        self.unhide(c);
        if self.details() {
            let _ = writeln!(
                self.log,
                "Deleting item {}, forced by {}",
                self.names[c], self.names[self.stack]
            );
        }
        let last_itm = self.last_itm;
        self.mems += 1;
        let mut r = self.nd[c].down as usize;
        while r >= last_itm {
            self.mems += 1;
            let rrr = self.nd[r].down as usize;
            self.delete_or_shorten(r)?;
            r = rrr;
        }
        self.mems += 2;
        self.nd[c].up = c as u32;
        self.nd[c].down = c as u32;
        self.nd[c].itm = 0;
        self.itms_out += 1;
        self.change = true;
        Ok(())
    }

    fn delete_or_shorten(&mut self, r: usize) -> Result<(), Infeasible> {
        let mut q = r + 1;
        while q != r {
            self.mems += 1;
            let cc = self.nd[q].itm;
            if cc <= 0 {
                self.mems += 1;
                q = self.nd[q].up as usize;
                continue;
            }
            if cc as usize == self.stack {
                break;
            }
            q += 1;
        }
        if q != r {
            if self.details() {
                self.log_option(" shortening", r);
            }
            // Node `r` becomes a spacer within its option.
            self.mems += 2;
            self.nd[r].up = (r + 1) as u32;
            self.nd[r].down = (r - 1) as u32;
            self.nd[r].itm = 0;
            Ok(())
        } else {
            self.delete_option(r)
        }
    }

    /// "Delete option `r`" (its node in the item being removed stays).
    fn delete_option(&mut self, r: usize) -> Result<(), Infeasible> {
        if self.details() {
            self.log_option(" deleting", r);
        }
        self.options_out += 1;
        self.mems += 1;
        let mut q = r + 1;
        while q != r {
            self.mems += 1;
            let cc = self.nd[q].itm;
            if cc <= 0 {
                self.mems += 1;
                q = self.nd[q].up as usize;
                continue;
            }
            let cc = cc as usize;
            self.mems += 1;
            let t = self.nd[cc].itm - 1;
            if t == 0 {
                self.note_empty(cc)?;
            }
            let nd = &mut self.nd;
            nd[cc].itm = t;
            let (uu, dd) = (nd[q].up as usize, nd[q].down as usize);
            nd[uu].down = dd as u32;
            nd[dd].up = uu as u32;
            self.mems += 4;
            q += 1;
        }
        Ok(())
    }

    /// "Stack option `r` for deletion if it leaves some primary item
    /// uncoverable": hides, item by item of `r`, every option clashing with
    /// `r`, stopping as soon as a primary item outside `r` has none left.
    fn stack_if_blocking(&mut self, r: usize) {
        let last_itm = self.last_itm;
        // Stamp the items of `r`.
        let mut q = r + 1;
        loop {
            self.mems += 1;
            let cc = self.nd[q].itm;
            if cc <= 0 {
                self.mems += 1;
                q = self.nd[q].up as usize;
                if q > r {
                    continue;
                }
                break;
            }
            self.mems += 1;
            self.nd[cc as usize].color = r as u32;
            q += 1;
        }
        let mut blocked = None;
        let mut q = r + 1;
        'items: loop {
            self.mems += 1;
            let cc = self.nd[q].itm;
            if cc <= 0 {
                self.mems += 1;
                q = self.nd[q].up as usize;
                if q > r {
                    continue;
                }
                break;
            }
            let x = self.nd[q].color;
            self.mems += 1;
            let mut p = self.nd[cc as usize].down as usize;
            while p >= last_itm {
                if x > 0 {
                    self.mems += 1;
                    if self.nd[p].color == x {
                        self.mems += 1;
                        p = self.nd[p].down as usize;
                        continue;
                    }
                }
                // "Hide the entries of option `p`, or goto backup".
                let mut qq = p + 1;
                while qq != p {
                    self.mems += 1;
                    let cc = self.nd[qq].itm;
                    if cc <= 0 {
                        self.mems += 1;
                        qq = self.nd[qq].up as usize;
                        continue;
                    }
                    let cc = cc as usize;
                    self.mems += 1;
                    let t = self.nd[cc].itm - 1;
                    if t == 0 && cc < self.second && self.nd[cc].color as usize != r {
                        blocked = Some((cc, q, x, p, qq));
                        break 'items;
                    }
                    let nd = &mut self.nd;
                    nd[cc].itm = t;
                    let (uu, dd) = (nd[qq].up as usize, nd[qq].down as usize);
                    nd[uu].down = dd as u32;
                    nd[dd].up = uu as u32;
                    self.mems += 4;
                    qq += 1;
                }
                self.mems += 1;
                p = self.nd[p].down as usize;
            }
            q += 1;
        }
        // "backup": undo in reverse order; after a block, from the middle of
        // the option that blocked (Knuth's jump to `midst`).
        let mut resume = blocked.map(|(_, q, x, p, qq)| (q, x, p, qq));
        let mut q = resume.map_or(r - 1, |(q, ..)| q);
        loop {
            let (x, mut p) = match resume.take() {
                Some((_, x, p, qq)) => {
                    self.unhide_entries(p, qq - 1);
                    self.mems += 1;
                    (x, self.nd[p].up as usize)
                }
                None => {
                    if q == r {
                        break;
                    }
                    self.mems += 1;
                    let cc = self.nd[q].itm;
                    if cc <= 0 {
                        self.mems += 1;
                        q = self.nd[q].down as usize;
                        continue;
                    }
                    self.mems += 1;
                    (self.nd[q].color, self.nd[cc as usize].up as usize)
                }
            };
            while p >= last_itm {
                if x > 0 {
                    self.mems += 1;
                    if self.nd[p].color == x {
                        self.mems += 1;
                        p = self.nd[p].up as usize;
                        continue;
                    }
                }
                self.unhide_entries(p, p - 1);
                self.mems += 1;
                p = self.nd[p].up as usize;
            }
            q -= 1;
        }
        if let Some((pp, ..)) = blocked {
            if self.details() {
                let what = format!(" {} blocked by", self.names[pp]);
                self.log_option(&what, r);
            }
            self.options_out += 1;
            self.change = true;
            self.mems += 1;
            self.nd[r].itm = self.stack as i32;
            self.stack = r;
        }
    }

    /// "Unhide the entries of option `p`", from node `qq` leftwards.
    fn unhide_entries(&mut self, p: usize, mut qq: usize) {
        while qq != p {
            self.mems += 1;
            let cc = self.nd[qq].itm;
            if cc <= 0 {
                self.mems += 1;
                qq = self.nd[qq].down as usize;
                continue;
            }
            let nd = &mut self.nd;
            nd[cc as usize].itm += 1;
            let (uu, dd) = (nd[qq].up as usize, nd[qq].down as usize);
            nd[uu].down = qq as u32;
            nd[dd].up = qq as u32;
            self.mems += 5;
            qq -= 1;
        }
    }

    /// "Actually delete option `r`", stacked as unnecessary.
    fn delete_stacked(&mut self, r: usize) -> Result<(), Infeasible> {
        let mut p = r + 1;
        loop {
            self.mems += 1;
            let cc = self.nd[p].itm;
            if cc <= 0 {
                self.mems += 1;
                p = self.nd[p].up as usize;
                continue;
            }
            let cc = cc as usize;
            let nd = &mut self.nd;
            let (uu, dd) = (nd[p].up as usize, nd[p].down as usize);
            nd[uu].down = dd as u32;
            nd[dd].up = uu as u32;
            nd[cc].itm -= 1;
            self.mems += 5;
            if self.nd[cc].itm == 0 {
                self.note_empty(cc)?;
            }
            if p == r {
                break;
            }
            p += 1;
        }
        Ok(())
    }

    /// "Output the reduced problem", as a [`Reduced`].
    fn output(mut self, input: &Problem, end: End) -> Reduced {
        let figures = |pre: &Pre| Figures {
            options_out: pre.options_out,
            items_out: pre.itms_out,
            rounds: pre.rnd,
            mems: pre.mems,
            options_in: pre.options,
            primary_in: pre.second - 1,
            secondary_in: pre.last_itm - pre.second,
            entries_in: pre.nd.len() - 1 - pre.last_itm,
        };
        if let End::Infeasible(cc) = end {
            let mut b = ProblemBuilder::new();
            b.primary(self.names[cc]).expect("a valid input's name");
            let item = self.input_item[cc];
            return Reduced {
                problem: b.build().expect("one primary item"),
                origin: Vec::new(),
                from: Vec::new(),
                removed_items: (0..input.items().len()).filter(|&i| i != item).collect(),
                infeasible: Some(item),
                figures: figures(&self),
                log: self.log,
            };
        }
        let last_itm = self.last_itm;
        let mut b = ProblemBuilder::new();
        let mut removed_items = Vec::new();
        for c in 1..last_itm {
            self.mems += 1;
            let name = self.names[c];
            let added = if self.nd[c].itm == 0 {
                removed_items.push(self.input_item[c]);
                continue;
            } else if c < self.second {
                b.primary(name)
            } else {
                b.secondary(name)
            };
            added.expect("a valid input's name");
        }
        removed_items.sort_unstable();
        let mut origin = Vec::new();
        let mut from = Vec::new();
        let mut entries: Vec<(usize, u32)> = Vec::new();
        for c in 1..last_itm {
            self.mems += 1;
            if self.nd[c].itm == 0 {
                continue;
            }
            self.mems += 1;
            let mut r = self.nd[c].down as usize;
            while r >= last_itm {
                let mut q = r - 1;
                loop {
                    self.mems += 1;
                    if self.nd[q].down as usize == q - 1 {
                        q -= 1;
                    } else {
                        break;
                    }
                }
                self.mems += 1;
                if self.nd[q].itm <= 0 {
                    // `r` is the leftmost survivor of its option.
                    let t = self.option_entries(r, &mut entries);
                    let names = &self.names;
                    let colors = self.colors;
                    // A kept option keeps its cost (DLX5's `|n`): removing
                    // options that are in no solution changes no solution's
                    // cost, so `--cheapest` finds the same ones after it.
                    b.option_with_cost(
                        entries.iter().map(|&(c, k)| EntrySpec {
                            item: names[c],
                            color: (k > 0).then(|| colors[k as usize - 1].as_str()),
                        }),
                        input.cost(self.input_option[t - 1]),
                    )
                    .expect("entries of a valid input");
                    origin.push(self.input_option[t - 1]);
                    from.push(t);
                }
                self.mems += 1;
                r = self.nd[r].down as usize;
            }
        }
        self.item_totals();
        Reduced {
            problem: b.build().expect("a primary item survives"),
            origin,
            from,
            removed_items,
            infeasible: None,
            figures: figures(&self),
            log: self.log,
        }
    }

    /// The surviving entries of `r`'s option (item, color + 1 or 0), and
    /// its number.
    fn option_entries(&self, r: usize, entries: &mut Vec<(usize, u32)>) -> usize {
        entries.clear();
        let nd = &self.nd;
        let mut p = r - 1;
        while nd[p].itm > 0 || (nd[p].down as usize) < p {
            p -= 1;
        }
        let mut q = p + 1;
        loop {
            let c = nd[q].itm;
            if c < 0 {
                return (-c) as usize;
            }
            if c > 0 {
                entries.push((c as usize, nd[q].color));
            }
            q += 1;
        }
    }
}

/// The mems DLX-PRE's input phase charges for `text`, the first figure of
/// its summary: its parser's every read and write of a character, name
/// lookup (a linear search) and list insertion. `text` should be one the DLX
/// reader accepts; longer names and colors than Knuth allows are charged as
/// if his loops ran to their end.
pub fn input_mems(text: &[u8]) -> u64 {
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r');
    let mut mems = 0u64;
    let mut lines = text.split_inclusive(|&b| b == b'\n');
    // Each name's item number and whether it is primary.
    let mut items: std::collections::HashMap<&[u8], (u64, bool)> = Default::default();
    // Knuth's lines end in '\0'; ours end where the slice does.
    fn at(line: &[u8], p: usize) -> u8 {
        line.get(p).copied().unwrap_or(0)
    }
    // The line's newline check and its leading blanks; the position after.
    let start = |line: &[u8], mems: &mut u64| {
        let lead = line.iter().take_while(|&&b| blank(b)).count();
        *mems += 1 + lead as u64 + 1;
        lead
    };
    // Blanks after a token, the first of which Knuth skips without looking.
    let skip = |line: &[u8], mut p: usize, mems: &mut u64| {
        while blank(at(line, p)) {
            *mems += 1;
            p += 1;
        }
        *mems += 1;
        p
    };
    // Testing and storing the name's characters.
    let name_mems = |len: usize| 2 * len as u64 + u64::from(len < 8);
    let mut item_line = None;
    for line in lines.by_ref() {
        let p = start(line, &mut mems);
        if p < line.len() && line[p] != b'|' {
            item_line = Some((line, p));
            break;
        }
    }
    let Some((line, mut p)) = item_line else {
        return mems;
    };
    let mut last_itm = 1u64;
    let mut primary = true;
    loop {
        mems += 1;
        if at(line, p) == 0 {
            break;
        }
        let len = line[p..]
            .iter()
            .take_while(|&&b| !blank(b) && b != 0)
            .count();
        mems += name_mems(len) + last_itm + if primary { 2 } else { 1 } + 1;
        items.insert(&line[p..p + len], (last_itm, primary));
        last_itm += 1;
        p = skip(line, p + len + 1, &mut mems);
        if at(line, p) == b'|' {
            primary = false;
            p = skip(line, p + 1, &mut mems);
        }
    }
    mems += 2;
    for line in lines {
        let mut p = start(line, &mut mems);
        if p == line.len() || line[p] == b'|' {
            continue;
        }
        let (mut nodes, mut has_primary) = (0u64, false);
        while at(line, p) != 0 {
            let len = line[p..]
                .iter()
                .take_while(|&&b| !blank(b) && b != b':' && b != 0)
                .count();
            let (k, is_primary) = items.get(&line[p..p + len]).copied().unwrap_or((0, false));
            mems += name_mems(len) + u64::from(len < 8) + (k + 1) + 8;
            has_primary |= is_primary;
            nodes += 1;
            let mut end = p + len;
            if at(line, end) == b':' {
                mems += 3;
                end += 1 + line[end + 1..].iter().take_while(|&&b| !blank(b)).count();
            } else {
                mems += 1;
            }
            p = skip(line, end + 1, &mut mems);
        }
        mems += if has_primary { 3 } else { 6 * nodes };
    }
    mems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::dlx_format::parse;

    /// The two examples of DLX-PRE's introduction; what Knuth's program
    /// prints for them (its text today, which differs from the
    /// introduction's for the first).
    #[test]
    fn knuths_examples() {
        let toy = "  A B C D E | F G\n\nC E F\n| c\n A D G\nB C F\nA D\nB G\nD E G\n";
        let config = Config {
            rounds: 2,
            ..Config::default()
        };
        let r = preprocess(&parse(toy).unwrap(), &config).unwrap();
        assert_eq!(
            r.to_dlx_pre(0),
            " A B C E | G\n A G\n A\n B C\n B G\n C E\n"
        );
        assert_eq!(r.origin, [1, 3, 2, 4, 0]);
        assert_eq!(
            r.summary(input_mems(toy.as_bytes())),
            "Removed 1 option and 2 items, after 434+833 mems, 2 rounds."
        );

        let colors = "| colors\nA B C | X Y\nA B X:0 Y:0\nA C X:1 Y:1\nX:0 Y:1\nB X:1\nC Y:1\n";
        let r = preprocess(&parse(colors).unwrap(), &Config::default()).unwrap();
        assert_eq!(
            r.to_dlx_pre(SHOW_ORIG_NOS),
            " A B | X Y\n A X:1 Y:1\n| (from 2)\n B X:1\n| (from 3)\n"
        );
        // Input indices count the dropped option `X:0 Y:1`; Knuth's do not.
        assert_eq!(r.origin, [1, 3]);
        assert_eq!(r.removed_items, [2]);
        assert_eq!(r.map_back(&[1, 0]), [3, 1]);
        assert_eq!(
            r.log,
            "Option ignored (no primary items): X:0 Y:1\n\
             (4 options, 3+2 items, 16 entries successfully read)\n"
        );
        assert_eq!(
            r.summary(input_mems(colors.as_bytes())),
            "Removed 2 options and 1 item, after 370+566 mems, 2 rounds."
        );
    }
}
