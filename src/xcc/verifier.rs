//! Checking solutions that arrive from where they cannot be trusted (a
//! remote worker's reports, many thousands a second), independently of
//! the search.
//!
//! Owns [`Rules`], a problem's options and items in flat arrays (built once
//! per problem and shared), and the [`Verifier`] that checks one solution
//! after another against them in time proportional to the solution's
//! size. The arrays matter: a streamed enumeration checks every solution
//! on the coordinator, and walking [`Problem`]'s vectors of entries and
//! named items cost more than the rest of the coordinator's work on a
//! solution. Error messages name items by the problem's names.

use std::sync::Arc;

use super::problem::{ItemKind, Problem};

/// What a solution must satisfy, in flat arrays.
#[derive(Debug)]
pub struct Rules {
    /// Option `o`'s entries are `entries[starts[o]..starts[o + 1]]`.
    starts: Vec<usize>,
    /// Each entry's item, and its color plus one (0: uncolored).
    entries: Vec<(u32, u32)>,
    /// Each item's bounds (a secondary item's are 0).
    items: Vec<ItemRule>,
    /// Whether each item is secondary.
    secondary: Vec<bool>,
    /// Options that take no part in the search (no primary item).
    dropped: Vec<bool>,
    /// Primary items that must be covered at least once.
    required: usize,
    /// Some primary item must be covered more than once: only then are
    /// the lower bounds checked after a solution's last option (the
    /// others are checked as the options come).
    lower_bounds: bool,
}

#[derive(Debug, Clone, Copy)]
struct ItemRule {
    min: u32,
    max: u32,
}

impl Rules {
    pub fn new(problem: &Problem) -> Rules {
        let options = problem.options();
        let mut starts = Vec::with_capacity(options.len() + 1);
        let mut entries = Vec::with_capacity(options.iter().map(Vec::len).sum());
        starts.push(0);
        for option in options {
            entries.extend(
                option
                    .iter()
                    .map(|e| (e.item as u32, e.color.map_or(0, |c| c + 1))),
            );
            starts.push(entries.len());
        }
        let items: Vec<ItemRule> = problem
            .items()
            .iter()
            .map(|item| match item.kind {
                ItemKind::Primary { min, max } => ItemRule { min, max },
                ItemKind::Secondary => ItemRule { min: 0, max: 0 },
            })
            .collect();
        let secondary: Vec<bool> = problem.items().iter().map(|i| !i.is_primary()).collect();
        let mut dropped = vec![false; options.len()];
        for &o in problem.dropped_options() {
            dropped[o] = true;
        }
        // A secondary item's min is 0.
        let required = items.iter().filter(|i| i.min > 0).count();
        let lower_bounds = items.iter().any(|i| i.min > 1);
        Rules {
            starts,
            entries,
            items,
            secondary,
            dropped,
            required,
            lower_bounds,
        }
    }
}

impl Problem {
    /// Checks independently of the search that `chosen` (option indices, in
    /// any order) is a solution: every primary item within its bounds,
    /// every uncolored secondary item at most once, colored ones
    /// consistent. Returns a description of the first violation.
    pub fn verify(&self, chosen: &[usize]) -> Result<(), String> {
        let mut sorted = chosen.to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("option {} chosen twice", w[0]));
        }
        Verifier::new(self).verify(&sorted)
    }
}

/// An option index as solutions carry it.
pub trait OptionIndex: Copy {
    fn index(self) -> usize;
}

impl OptionIndex for usize {
    #[inline]
    fn index(self) -> usize {
        self
    }
}

impl OptionIndex for u32 {
    #[inline]
    fn index(self) -> usize {
        self as usize
    }
}

/// Checks solutions of one problem one after the other, in time
/// proportional to each solution's size.
pub struct Verifier<'a> {
    problem: &'a Problem,
    rules: Arc<Rules>,
    /// Per item, what the solution being checked did to it, beside the
    /// item's rule: one array, so that an entry costs one bounds check.
    slots: Vec<Slot>,
    /// The solution being checked: a slot whose stamp differs was not
    /// touched by it (no reset between solutions).
    stamp: u32,
}

/// One item's rule and its use by the solution of [`Slot::stamp`].
#[derive(Debug, Clone, Copy)]
struct Slot {
    stamp: u32,
    count: u32,
    /// A secondary item's color plus one (1: uncolored).
    color: u32,
    rule: ItemRule,
    secondary: bool,
    /// A primary item covered exactly once (most are): checked by its
    /// stamp alone, without a count.
    exact_one: bool,
}

impl<'a> Verifier<'a> {
    /// A verifier with rules of its own (for a few solutions; many
    /// verifiers of one problem share theirs, see [`Verifier::with_rules`]).
    pub fn new(problem: &'a Problem) -> Verifier<'a> {
        Verifier::with_rules(problem, Arc::new(Rules::new(problem)))
    }

    /// A verifier of `problem` by its `rules` (built from it).
    pub fn with_rules(problem: &'a Problem, rules: Arc<Rules>) -> Verifier<'a> {
        let slots = rules
            .items
            .iter()
            .zip(&rules.secondary)
            .map(|(&rule, &secondary)| Slot {
                stamp: 0,
                count: 0,
                color: 0,
                rule,
                secondary,
                exact_one: !secondary && rule.min == 1 && rule.max == 1,
            })
            .collect();
        Verifier {
            problem,
            rules,
            slots,
            stamp: 0,
        }
    }

    /// Checks that `chosen` (option indices, strictly ascending) is a
    /// solution (see [`Problem::verify`]). Upper bounds and colors are
    /// checked entry by entry, the items covered counted as they come;
    /// what is left at the end is whether every required item was, and
    /// lower bounds above 1 (rare).
    pub fn verify<O: OptionIndex>(&mut self, chosen: &[O]) -> Result<(), String> {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Once in 2^32 solutions: no slot may keep a stamp of before.
            self.slots.iter_mut().for_each(|slot| slot.stamp = 0);
            self.stamp = 1;
        }
        let stamp = self.stamp;
        let rules = &*self.rules;
        let mut previous = None;
        let mut covered = 0;
        for &o in chosen {
            let o = o.index();
            if previous.is_some_and(|p| p >= o) {
                return Err("option indices are not strictly ascending".into());
            }
            previous = Some(o);
            if o >= rules.dropped.len() {
                return Err(format!("option {o} does not exist"));
            }
            if rules.dropped[o] {
                return Err(format!("option {o} was dropped (no primary item)"));
            }
            for &(item, color) in &rules.entries[rules.starts[o]..rules.starts[o + 1]] {
                let slot = &mut self.slots[item as usize];
                if slot.exact_one {
                    if slot.stamp == stamp {
                        let rule = slot.rule;
                        return Err(self.outside(item as usize, rule, 2));
                    }
                    slot.stamp = stamp;
                    covered += 1;
                    continue;
                }
                if slot.stamp != stamp {
                    slot.stamp = stamp;
                    slot.count = 0;
                    slot.color = 0;
                    covered += usize::from(slot.rule.min > 0);
                }
                slot.count += 1;
                if slot.secondary {
                    if slot.color == 0 {
                        slot.color = color + 1;
                    } else if color == 0 || slot.color != color + 1 {
                        return Err(format!(
                            "secondary item {:?} is used with conflicting colors",
                            self.problem.items()[item as usize].name
                        ));
                    }
                } else if slot.count > slot.rule.max {
                    let slot = *slot;
                    return Err(self.outside(item as usize, slot.rule, slot.count));
                }
            }
        }
        if covered < rules.required {
            let item = self
                .slots
                .iter()
                .position(|slot| slot.rule.min > 0 && slot.stamp != stamp)
                .expect("an uncovered item");
            return Err(self.outside(item, self.slots[item].rule, 0));
        }
        if rules.lower_bounds {
            for &o in chosen {
                let o = o.index();
                for &(item, _) in &rules.entries[rules.starts[o]..rules.starts[o + 1]] {
                    let slot = self.slots[item as usize];
                    // (An item covered exactly once keeps no count.)
                    if !slot.exact_one && slot.count < slot.rule.min {
                        return Err(self.outside(item as usize, slot.rule, slot.count));
                    }
                }
            }
        }
        Ok(())
    }

    /// The error of a primary item covered `count` times.
    fn outside(&self, item: usize, rule: ItemRule, count: u32) -> String {
        format!(
            "primary item {:?} is covered {count} times, outside [{}, {}]",
            self.problem.items()[item].name,
            rule.min,
            rule.max
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::dlx_format::parse;

    fn problem(text: &str) -> Problem {
        parse(text).expect("a valid problem")
    }

    #[test]
    fn checks_bounds_colors_and_order() {
        // Items a (exactly once), b (1 to 2 times), x secondary.
        let p = problem("a 1:2|b | x\na x:1\na b x:2\nb\nb x:1\na b x\nb\n");
        let mut v = Verifier::new(&p);
        assert_eq!(v.verify(&[0u32, 2]), Ok(()));
        assert_eq!(v.verify(&[1u32]), Ok(()));
        // b twice, x with one color.
        assert_eq!(v.verify(&[0u32, 2, 3]), Ok(()));
        let e = v.verify(&[0u32, 2, 3, 5]).unwrap_err();
        assert!(
            e.contains("\"b\" is covered 3 times, outside [1, 2]"),
            "{e}"
        );
        // x with two colors (option 1 says 2, and option 3 says 1).
        let e = v.verify(&[1u32, 3]).unwrap_err();
        assert!(e.contains("conflicting colors"), "{e}");
        // b is not covered.
        let e = v.verify(&[0u32]).unwrap_err();
        assert!(e.contains("\"b\" is covered 0 times"), "{e}");
        assert!(v.verify(&[2u32, 0]).unwrap_err().contains("ascending"));
        assert!(v.verify(&[9u32]).unwrap_err().contains("does not exist"));
        // The reset between solutions: the first one is still fine.
        assert_eq!(v.verify(&[0usize, 2]), Ok(()));
    }

    #[test]
    fn an_exactly_once_item_covered_twice_or_never_is_refused() {
        // a, b exactly once (the stamp-only path); c 2 times (counted).
        let p = problem("a b 2:2|c\na c\nb c\na b\nc\n");
        let mut v = Verifier::new(&p);
        assert_eq!(v.verify(&[0u32, 1]), Ok(()));
        let e = v.verify(&[0u32, 2, 3]).unwrap_err();
        assert!(
            e.contains("\"a\" is covered 2 times, outside [1, 1]"),
            "{e}"
        );
        let e = v.verify(&[1u32, 3]).unwrap_err();
        assert!(e.contains("\"a\" is covered 0 times"), "{e}");
        // The stamps of the refused ones do not leak into the next.
        assert_eq!(v.verify(&[0u32, 1]), Ok(()));
    }

    #[test]
    fn an_uncolored_secondary_item_at_most_once() {
        let p = problem("a b | x\na x\nb x\na\nb\n");
        let mut v = Verifier::new(&p);
        assert!(v.verify(&[0u32, 1]).unwrap_err().contains("conflicting"));
        assert_eq!(v.verify(&[0u32, 3]), Ok(()));
        assert_eq!(v.verify(&[1u32, 2]), Ok(()));
    }
}
