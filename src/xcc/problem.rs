//! The problem model: named items, options, colors, multiplicities, and
//! option costs (DLX5's `|n`, used only by the cheapest-solutions search).
//!
//! A [`Problem`] is built through a [`ProblemBuilder`], which validates as it
//! goes so that every mistake is reported with the item or option it concerns.
//! The DLX text reader (`dlx_format`) is a thin layer over the builder, so the
//! text format and the programmatic API share one set of rules.

use std::collections::HashMap;

/// Largest number of items a problem may declare.
pub const MAX_ITEMS: usize = 1 << 24;
/// Largest total number of item occurrences over all options. The engine
/// indexes nodes with 32-bit integers, and one spacer is added per option.
pub const MAX_ENTRIES: usize = (1 << 31) - (1 << 25);
/// Largest multiplicity bound `v` of a primary item.
pub const MAX_BOUND: u32 = 1 << 24;
/// Largest number of distinct colors.
pub const MAX_COLORS: usize = 1 << 30;
/// Largest cost of one option. With at most [`MAX_ITEMS`] options in a
/// solution (and taxes summed over at most that many items), every sum of
/// costs stays below 2^56, so no cost arithmetic can overflow.
pub const MAX_COST: u64 = u32::MAX as u64;

/// Index of an item in [`Problem::items`].
pub type ItemId = usize;

/// Whether an item must be covered (primary, within bounds) or may be
/// covered (secondary, at most once or by any number of options agreeing on
/// a color).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// Covered by at least `min` and at most `max` chosen options.
    Primary { min: u32, max: u32 },
    /// Covered at most once, unless colored (then all agree on the color).
    Secondary,
}

/// A named item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub name: String,
    pub kind: ItemKind,
}

impl Item {
    pub fn is_primary(&self) -> bool {
        matches!(self.kind, ItemKind::Primary { .. })
    }
}

/// One item of an option, with the color it asks for (secondary items only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub item: ItemId,
    /// Index into [`Problem::colors`], or `None` for an uncolored occurrence.
    pub color: Option<u32>,
}

/// An item of an option as the builder receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySpec<'a> {
    pub item: &'a str,
    pub color: Option<&'a str>,
}

impl<'a> EntrySpec<'a> {
    /// Parses `name` or `name:color` (the DLX spelling).
    pub fn parse(token: &'a str) -> Self {
        match token.split_once(':') {
            Some((item, color)) => EntrySpec {
                item,
                color: Some(color),
            },
            None => EntrySpec {
                item: token,
                color: None,
            },
        }
    }
}

/// A name or color as an error message quotes it: in full when short, else
/// its beginning and its length, so that a huge token cannot make a huge
/// message (gRPC clients refuse headers of a few kilobytes).
pub fn quote(text: &str) -> String {
    const SHOWN: usize = 40;
    match text.char_indices().nth(SHOWN) {
        None => format!("{text:?}"),
        Some((end, _)) => format!("{:?}... ({} bytes)", &text[..end], text.len()),
    }
}

/// Everything that can be wrong with a problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProblemError {
    #[error("the problem has no items")]
    NoItems,
    #[error("the problem has no primary items (at least one item must be primary)")]
    NoPrimaryItems,
    #[error("item name is empty")]
    EmptyName,
    #[error("item name {} contains a character that is not allowed (whitespace, ':' or '|')", quote(.0))]
    BadName(String),
    #[error("duplicate item {}", quote(.0))]
    DuplicateItem(String),
    #[error("unknown item {} in option {option}", quote(item))]
    UnknownItem { item: String, option: usize },
    #[error("item {} appears twice in option {option}", quote(item))]
    ItemTwiceInOption { item: String, option: usize },
    #[error("primary item {} must be uncolored (option {option})", quote(item))]
    ColorOnPrimary { item: String, option: usize },
    #[error("empty color on item {} in option {option}", quote(item))]
    EmptyColor { item: String, option: usize },
    #[error(
        "color {} of item {} in option {option} contains whitespace",
        quote(color),
        quote(item)
    )]
    BadColor {
        item: String,
        color: String,
        option: usize,
    },
    #[error("option {0} has no items")]
    EmptyOption(usize),
    #[error("item {}: lower bound {min} exceeds upper bound {max}", quote(item))]
    LowerAboveUpper { item: String, min: u32, max: u32 },
    #[error("item {}: upper bound is zero", quote(item))]
    UpperBoundZero { item: String },
    #[error("item {}: upper bound {max} exceeds the limit {limit}", quote(item), limit = MAX_BOUND)]
    BoundTooLarge { item: String, max: u32 },
    #[error("too many items (the limit is {limit})", limit = MAX_ITEMS)]
    TooManyItems,
    #[error("too many item occurrences in options (the limit is {limit})", limit = MAX_ENTRIES)]
    TooManyEntries,
    #[error("too many distinct colors (the limit is {limit})", limit = MAX_COLORS)]
    TooManyColors,
    #[error("items must be declared before the first option (item {})", quote(.0))]
    ItemAfterOptions(String),
    #[error("option {option} costs {cost}, more than the limit {limit}", limit = MAX_COST)]
    CostTooLarge { option: usize, cost: u64 },
}

/// A validated XCC problem. Options keep their input order and index, even
/// those dropped for having no primary item, so that option indices always
/// match the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    items: Vec<Item>,
    options: Vec<Vec<Entry>>,
    colors: Vec<String>,
    dropped: Vec<usize>,
    entries: usize,
    /// Each option's cost, or empty when every cost is zero (so a problem
    /// without costs is the same value however it was built).
    costs: Vec<u64>,
}

impl Problem {
    pub fn items(&self) -> &[Item] {
        &self.items
    }
    /// Every option given, in input order, dropped ones included.
    pub fn options(&self) -> &[Vec<Entry>] {
        &self.options
    }
    pub fn colors(&self) -> &[String] {
        &self.colors
    }
    /// Indices of the options that were dropped because they contain no
    /// primary item (Knuth's programs drop them with a warning).
    pub fn dropped_options(&self) -> &[usize] {
        &self.dropped
    }
    /// Whether option `index` takes part in the search.
    pub fn is_dropped(&self, index: usize) -> bool {
        self.dropped.binary_search(&index).is_ok()
    }
    /// Total number of item occurrences in the options that are kept.
    pub fn entries(&self) -> usize {
        self.entries
    }
    pub fn primary_count(&self) -> usize {
        self.items.iter().filter(|i| i.is_primary()).count()
    }
    /// The most options a solution can have: each chosen option covers a
    /// primary item, which at most `max` options cover.
    pub fn max_solution_len(&self) -> usize {
        self.items
            .iter()
            .map(|i| match i.kind {
                ItemKind::Primary { max, .. } => max as usize,
                ItemKind::Secondary => 0,
            })
            .sum()
    }
    /// True when some primary item has bounds other than `[1, 1]`, so the
    /// search needs Algorithm M.
    pub fn has_multiplicities(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(i.kind, ItemKind::Primary { min, max } if (min, max) != (1, 1)))
    }
    /// True when some option gives a color to a secondary item.
    pub fn has_colors(&self) -> bool {
        !self.colors.is_empty()
    }
    /// The cost of option `index` (0 when none was given). Only the
    /// cheapest-solutions search reads costs; the other searches ignore them.
    pub fn cost(&self, index: usize) -> u64 {
        self.costs.get(index).copied().unwrap_or(0)
    }
    /// True when some option has a nonzero cost.
    pub fn has_costs(&self) -> bool {
        !self.costs.is_empty()
    }

    /// Renders option `index` as Knuth's programs print it: its items in
    /// input order, colored ones as `name:color`.
    pub fn format_option(&self, index: usize) -> String {
        let mut out = String::new();
        for (k, e) in self.options[index].iter().enumerate() {
            if k > 0 {
                out.push(' ');
            }
            out.push_str(&self.items[e.item].name);
            if let Some(c) = e.color {
                out.push(':');
                out.push_str(&self.colors[c as usize]);
            }
        }
        out
    }
}

/// Builds a [`Problem`], validating every step.
#[derive(Debug, Default, Clone)]
pub struct ProblemBuilder {
    items: Vec<Item>,
    by_name: HashMap<String, ItemId>,
    options: Vec<Vec<Entry>>,
    colors: Vec<String>,
    color_ids: HashMap<String, u32>,
    dropped: Vec<usize>,
    entries: usize,
    stamp: Vec<usize>,
    /// As in [`Problem`]: empty until the first nonzero cost.
    costs: Vec<u64>,
}

fn valid_name(name: &str) -> Result<(), ProblemError> {
    if name.is_empty() {
        return Err(ProblemError::EmptyName);
    }
    if name
        .chars()
        .any(|c| c.is_whitespace() || c == ':' || c == '|')
    {
        return Err(ProblemError::BadName(name.to_string()));
    }
    Ok(())
}

impl ProblemBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a primary item that must be covered exactly once.
    pub fn primary(&mut self, name: &str) -> Result<ItemId, ProblemError> {
        self.primary_with_bounds(name, 1, 1)
    }

    /// Declares a primary item that must be covered between `min` and `max`
    /// times (Algorithm M).
    pub fn primary_with_bounds(
        &mut self,
        name: &str,
        min: u32,
        max: u32,
    ) -> Result<ItemId, ProblemError> {
        if max == 0 {
            return Err(ProblemError::UpperBoundZero {
                item: name.to_string(),
            });
        }
        if min > max {
            return Err(ProblemError::LowerAboveUpper {
                item: name.to_string(),
                min,
                max,
            });
        }
        if max > MAX_BOUND {
            return Err(ProblemError::BoundTooLarge {
                item: name.to_string(),
                max,
            });
        }
        self.add_item(name, ItemKind::Primary { min, max })
    }

    /// Declares a secondary item.
    pub fn secondary(&mut self, name: &str) -> Result<ItemId, ProblemError> {
        self.add_item(name, ItemKind::Secondary)
    }

    fn add_item(&mut self, name: &str, kind: ItemKind) -> Result<ItemId, ProblemError> {
        valid_name(name)?;
        if !self.options.is_empty() {
            return Err(ProblemError::ItemAfterOptions(name.to_string()));
        }
        if self.by_name.contains_key(name) {
            return Err(ProblemError::DuplicateItem(name.to_string()));
        }
        if self.items.len() >= MAX_ITEMS {
            return Err(ProblemError::TooManyItems);
        }
        let id = self.items.len();
        self.by_name.insert(name.to_string(), id);
        self.items.push(Item {
            name: name.to_string(),
            kind,
        });
        self.stamp.push(usize::MAX);
        Ok(id)
    }

    /// Looks up an item by name.
    pub fn item_id(&self, name: &str) -> Option<ItemId> {
        self.by_name.get(name).copied()
    }

    /// Adds an option. Returns its index, and whether it was kept (`false`
    /// when it has no primary item and is dropped, as Knuth's programs do).
    /// On error, the option is not added.
    pub fn option<'a, I>(&mut self, entries: I) -> Result<(usize, bool), ProblemError>
    where
        I: IntoIterator<Item = EntrySpec<'a>>,
    {
        self.option_with_cost(entries, 0)
    }

    /// Adds an option of cost `cost` (at most [`MAX_COST`]), as
    /// [`Self::option`] does.
    pub fn option_with_cost<'a, I>(
        &mut self,
        entries: I,
        cost: u64,
    ) -> Result<(usize, bool), ProblemError>
    where
        I: IntoIterator<Item = EntrySpec<'a>>,
    {
        let index = self.options.len();
        if cost > MAX_COST {
            return Err(ProblemError::CostTooLarge {
                option: index,
                cost,
            });
        }
        let mut option = Vec::new();
        let mut has_primary = false;
        let mut new_colors: Vec<String> = Vec::new();
        for spec in entries {
            let item = match self.by_name.get(spec.item) {
                Some(&i) => i,
                None => {
                    self.unstamp(&option, usize::MAX);
                    return Err(ProblemError::UnknownItem {
                        item: spec.item.to_string(),
                        option: index,
                    });
                }
            };
            if self.stamp[item] == index {
                self.unstamp(&option, usize::MAX);
                return Err(ProblemError::ItemTwiceInOption {
                    item: spec.item.to_string(),
                    option: index,
                });
            }
            self.stamp[item] = index;
            let primary = self.items[item].is_primary();
            has_primary |= primary;
            let color = match spec.color {
                None => None,
                Some(_) if primary => {
                    self.unstamp(&option, item);
                    return Err(ProblemError::ColorOnPrimary {
                        item: spec.item.to_string(),
                        option: index,
                    });
                }
                Some("") => {
                    self.unstamp(&option, item);
                    return Err(ProblemError::EmptyColor {
                        item: spec.item.to_string(),
                        option: index,
                    });
                }
                Some(c) if c.chars().any(char::is_whitespace) => {
                    self.unstamp(&option, item);
                    return Err(ProblemError::BadColor {
                        item: spec.item.to_string(),
                        color: c.to_string(),
                        option: index,
                    });
                }
                Some(c) => Some(match self.color_ids.get(c) {
                    Some(&id) => id,
                    None => {
                        let pending = new_colors.iter().position(|n| n == c);
                        let id = self.colors.len()
                            + pending.unwrap_or_else(|| {
                                new_colors.push(c.to_string());
                                new_colors.len() - 1
                            });
                        if id >= MAX_COLORS {
                            self.unstamp(&option, item);
                            return Err(ProblemError::TooManyColors);
                        }
                        id as u32
                    }
                }),
            };
            option.push(Entry { item, color });
        }
        // Stamps only guard against duplicates within one option; clear them
        // so an option that failed half-way leaves no trace.
        self.unstamp(&option, usize::MAX);
        if option.is_empty() {
            return Err(ProblemError::EmptyOption(index));
        }
        let kept = has_primary;
        if kept {
            if self.entries + option.len() + self.options.len() + 1 > MAX_ENTRIES {
                return Err(ProblemError::TooManyEntries);
            }
            self.entries += option.len();
        } else {
            self.dropped.push(index);
        }
        for c in new_colors {
            self.color_ids.insert(c.clone(), self.colors.len() as u32);
            self.colors.push(c);
        }
        if cost > 0 || !self.costs.is_empty() {
            self.costs.resize(index, 0);
            self.costs.push(cost);
        }
        self.options.push(option);
        Ok((index, kept))
    }

    fn unstamp(&mut self, option: &[Entry], extra: ItemId) {
        for e in option {
            self.stamp[e.item] = usize::MAX;
        }
        if extra != usize::MAX {
            self.stamp[extra] = usize::MAX;
        }
    }

    /// Convenience: adds an option written as DLX tokens (`"A"`, `"X:red"`).
    pub fn option_str(&mut self, tokens: &[&str]) -> Result<(usize, bool), ProblemError> {
        self.option(tokens.iter().map(|t| EntrySpec::parse(t)))
    }

    /// Number of options added so far, dropped ones included.
    pub fn option_count(&self) -> usize {
        self.options.len()
    }

    /// Finishes the problem.
    pub fn build(mut self) -> Result<Problem, ProblemError> {
        if self.items.is_empty() {
            return Err(ProblemError::NoItems);
        }
        if !self.items.iter().any(Item::is_primary) {
            return Err(ProblemError::NoPrimaryItems);
        }
        if !self.costs.is_empty() {
            self.costs.resize(self.options.len(), 0);
        }
        Ok(Problem {
            items: self.items,
            options: self.options,
            colors: self.colors,
            dropped: self.dropped,
            entries: self.entries,
            costs: self.costs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_solution_has_at_most_one_option_per_primary_item_or_its_upper_bound() {
        let parse = |text: &str| crate::xcc::dlx_format::parse(text).unwrap();
        assert_eq!(parse("A B | X\nA X\nB\n").max_solution_len(), 2);
        assert_eq!(parse("A 2:3|C 4|D | X\nA C\nC D\n").max_solution_len(), 8);
    }

    #[test]
    fn builder_reports_each_mistake() {
        let mut b = ProblemBuilder::new();
        b.primary("A").unwrap();
        b.secondary("X").unwrap();
        assert_eq!(b.primary("A"), Err(ProblemError::DuplicateItem("A".into())));
        assert!(matches!(
            b.primary_with_bounds("C", 3, 2),
            Err(ProblemError::LowerAboveUpper { min: 3, max: 2, .. })
        ));
        assert!(matches!(
            b.primary_with_bounds("C", 0, 0),
            Err(ProblemError::UpperBoundZero { .. })
        ));
        assert!(matches!(
            b.option_str(&["A", "Z"]),
            Err(ProblemError::UnknownItem { ref item, option: 0 }) if item == "Z"
        ));
        assert!(matches!(
            b.option_str(&["A", "A"]),
            Err(ProblemError::ItemTwiceInOption { .. })
        ));
        assert!(matches!(
            b.option_str(&["A:1"]),
            Err(ProblemError::ColorOnPrimary { .. })
        ));
        // Failed options leave no trace: the next one is option 0 and the
        // duplicate stamp of "A" was cleared.
        assert_eq!(b.option_str(&["A", "X:red"]), Ok((0, true)));
        assert_eq!(b.option_str(&["X"]), Ok((1, false)));
        assert!(matches!(
            b.secondary("Y"),
            Err(ProblemError::ItemAfterOptions(_))
        ));
        let p = b.build().unwrap();
        assert_eq!(p.dropped_options(), &[1]);
        assert_eq!(p.colors(), &["red".to_string()]);
        assert_eq!(p.format_option(0), "A X:red");
        assert!(p.verify(&[0]).is_ok());
        assert!(p.verify(&[1]).is_err());
        assert!(p.verify(&[]).is_err());
    }

    #[test]
    fn costs_are_kept_per_option_and_absent_when_all_zero() {
        let mut b = ProblemBuilder::new();
        b.primary("A").unwrap();
        b.primary("B").unwrap();
        b.option_str(&["A"]).unwrap();
        let spec = |t: &'static str| [EntrySpec::parse(t)];
        assert_eq!(b.option_with_cost(spec("B"), 7), Ok((1, true)));
        assert_eq!(
            b.option_with_cost(spec("A"), MAX_COST + 1),
            Err(ProblemError::CostTooLarge {
                option: 2,
                cost: MAX_COST + 1
            })
        );
        b.option_str(&["A", "B"]).unwrap();
        let p = b.build().unwrap();
        assert!(p.has_costs());
        assert_eq!((0..4).map(|o| p.cost(o)).collect::<Vec<_>>(), [0, 7, 0, 0]);
        // Zero costs make the same problem as no costs at all.
        let build = |cost: u64| {
            let mut b = ProblemBuilder::new();
            b.primary("A").unwrap();
            b.option_with_cost(spec("A"), cost).unwrap();
            b.build().unwrap()
        };
        assert_eq!(build(0), crate::xcc::dlx_format::parse("A\nA\n").unwrap());
        assert!(!build(0).has_costs() && build(1).has_costs());
    }

    #[test]
    fn empty_and_secondary_only_problems_are_rejected() {
        assert_eq!(ProblemBuilder::new().build(), Err(ProblemError::NoItems));
        let mut b = ProblemBuilder::new();
        b.secondary("X").unwrap();
        assert_eq!(b.build(), Err(ProblemError::NoPrimaryItems));
    }
}
