//! Random XCC problems for property tests (tests/oracle.rs, tests/split.rs):
//! a problem as plain data ([`Spec`]) and the proptest strategy that draws
//! one of a given [`Shape`]. Some problems get a planted solution (a
//! partition of the primary items into up to three options) so that not
//! every instance is unsolvable. Each test file builds its problems from a
//! `Spec` in its own way (its item names, its checks).

use std::ops::RangeInclusive;

use proptest::prelude::*;
use xccd::xcc::problem::EntrySpec;
use xccd::xcc::{Problem, ProblemBuilder};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemSpec {
    Primary { min: u32, max: u32 },
    Secondary,
}

/// A problem as plain data: items in declaration order (primaries first,
/// then secondaries), options as (item index, color) pairs in the order
/// they are given to the builder.
#[derive(Debug, Clone)]
pub struct Spec {
    pub items: Vec<ItemSpec>,
    pub options: Vec<Vec<(usize, Option<u8>)>>,
}

impl Spec {
    /// The problem, its items named by `name` (by index), its colors `c0`,
    /// `c1`...; `added(k, index, kept)` hears of each option the builder
    /// takes (its index, and whether it has a primary item and is kept).
    pub fn build_with(
        &self,
        name: impl Fn(usize) -> String,
        mut added: impl FnMut(usize, usize, bool),
    ) -> Problem {
        let names: Vec<String> = (0..self.items.len()).map(name).collect();
        let colors: Vec<String> = (0..8).map(|c| format!("c{c}")).collect();
        let mut b = ProblemBuilder::new();
        for (i, item) in self.items.iter().enumerate() {
            match *item {
                ItemSpec::Primary { min, max } => {
                    b.primary_with_bounds(&names[i], min, max).unwrap();
                }
                ItemSpec::Secondary => {
                    b.secondary(&names[i]).unwrap();
                }
            }
        }
        for (k, opt) in self.options.iter().enumerate() {
            let (index, kept) = b
                .option(opt.iter().map(|&(item, color)| EntrySpec {
                    item: &names[item],
                    color: color.map(|c| colors[c as usize].as_str()),
                }))
                .unwrap();
            added(k, index, kept);
        }
        b.build().unwrap()
    }
}

/// What problems a strategy draws.
pub struct Shape {
    pub primaries: RangeInclusive<usize>,
    pub secondaries: RangeInclusive<usize>,
    /// Options drawn; a planted solution replaces some, keeping the number
    /// (at least the planted ones).
    pub options: RangeInclusive<usize>,
    /// Primary bounds [u, v], 0 <= u <= v <= 3, v >= 1 (else [1, 1]).
    pub multiplicities: BoxedStrategy<bool>,
    /// Colors (2 or 3) on secondary items.
    pub colors: BoxedStrategy<bool>,
}

/// An option of up to four of `n_items` items, shuffled; secondary items
/// (from `n_primary` on) colored with one of `n_colors`, or not.
pub fn option_strategy(
    n_items: usize,
    n_primary: usize,
    n_colors: u8,
) -> impl Strategy<Value = Vec<(usize, Option<u8>)>> {
    proptest::sample::subsequence((0..n_items).collect::<Vec<_>>(), 1..=n_items.min(4))
        .prop_shuffle()
        .prop_flat_map(move |items| {
            let len = items.len();
            (Just(items), proptest::collection::vec(0..=n_colors, len))
        })
        .prop_map(move |(items, colors)| {
            items
                .into_iter()
                .zip(colors)
                .map(|(i, c)| (i, (i >= n_primary && c > 0).then(|| c - 1)))
                .collect()
        })
}

/// A random problem of `shape`.
pub fn spec_strategy(shape: Shape) -> impl Strategy<Value = Spec> {
    let most_options = *shape.options.end();
    (
        shape.primaries,
        shape.secondaries,
        shape.options,
        2u8..=3,
        shape.multiplicities,
        shape.colors,
    )
        .prop_flat_map(move |(np, ns, nopt, ncolors, mult, colored)| {
            let bounds = proptest::collection::vec(
                if mult {
                    (0u32..=3, 1u32..=3)
                        .prop_map(|(a, b)| (a.min(b), b))
                        .boxed()
                } else {
                    Just((1u32, 1u32)).boxed()
                },
                np,
            );
            let options = proptest::collection::vec(
                option_strategy(np + ns, np, if colored { ncolors } else { 0 }),
                nopt,
            );
            let plant = proptest::option::of(proptest::collection::vec(0usize..3, np));
            (bounds, options, plant).prop_map(move |(bounds, mut options, plant)| {
                let mut items: Vec<ItemSpec> = bounds
                    .into_iter()
                    .map(|(min, max)| ItemSpec::Primary { min, max })
                    .collect();
                items.extend(std::iter::repeat_n(ItemSpec::Secondary, ns));
                if let Some(groups) = plant {
                    let planted: Vec<Vec<(usize, Option<u8>)>> = (0..3)
                        .map(|g| {
                            (0..np)
                                .filter(|&i| groups[i] == g)
                                .map(|i| (i, None))
                                .collect::<Vec<_>>()
                        })
                        .filter(|p| !p.is_empty())
                        .collect();
                    // The planted options replace random ones, keeping
                    // the number of options (at least the planted ones).
                    options.truncate(options.len().saturating_sub(planted.len()));
                    options.extend(planted);
                    assert!(options.len() <= most_options.max(3));
                }
                Spec { items, options }
            })
        })
}
