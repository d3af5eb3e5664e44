//! ZDDs of solutions, as the memoized search ([`super::memo`]) builds them:
//! their counts (exact at any size), the solutions they hold, uniformly
//! random solutions, and Knuth's text format.
//!
//! A node `(option, lo, hi)` stands for the solutions of `lo` together with
//! those of `hi` with `option` added. Ids 0 and 1 are the sinks (no
//! solution; the empty solution); the search makes every other node after
//! its two branches, so ids grow bottom-up and one pass in id order counts
//! them all.
//!
//! Knuth's text format (read by his ZDDREAD programs, written by DLX6 with
//! `m1`): one line `id: (~var?lo:hi)` per node, ids in hexadecimal, then a
//! dummy root `id: (~0?0:root)`. Variables are option numbers from 1, the
//! options counted as DLX6 counts them (those with a primary item, in input
//! order: the input's numbering when no option was dropped).

use std::io::{self, Write};

use num_bigint::BigUint;
use rand::Rng;

use super::problem::Problem;

/// Builds a ZDD bottom-up, counting as it goes.
#[derive(Debug, Clone, Default)]
pub struct ZddBuilder {
    nodes: Vec<ZNode>,
    counts: Vec<u128>,
    overflow: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ZNode {
    /// Input option index.
    option: u32,
    lo: u32,
    hi: u32,
}

/// Bytes a node takes in the builder.
const NODE_BYTES: u64 = 12 + 16;

impl ZddBuilder {
    pub fn new() -> ZddBuilder {
        ZddBuilder::default()
    }

    /// Nodes made (the sinks not counted).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.nodes.capacity() as u64 * NODE_BYTES
    }

    fn count_of(&self, id: u32) -> u128 {
        match id {
            0 => 0,
            1 => 1,
            _ => self.counts[id as usize - 2],
        }
    }

    /// A new node: `option` added to the solutions of `hi`, or those of `lo`.
    pub fn node(&mut self, option: u32, lo: u32, hi: u32) -> u32 {
        let id = self.nodes.len() as u32 + 2;
        let count = match self.count_of(lo).checked_add(self.count_of(hi)) {
            Some(c) => c,
            None => {
                self.overflow = true;
                u128::MAX
            }
        };
        self.nodes.push(ZNode { option, lo, hi });
        self.counts.push(count);
        id
    }

    pub fn finish(self, root: u32) -> Zdd {
        Zdd {
            nodes: self.nodes,
            counts: self.counts,
            overflow: self.overflow,
            root,
        }
    }
}

/// The solutions of a problem as a ZDD.
#[derive(Debug, Clone)]
pub struct Zdd {
    nodes: Vec<ZNode>,
    /// Solutions under each node, saturated at `u128::MAX` when `overflow`.
    counts: Vec<u128>,
    overflow: bool,
    root: u32,
}

impl Zdd {
    /// Nodes, the sinks not counted.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn node(&self, id: u32) -> ZNode {
        self.nodes[id as usize - 2]
    }

    /// The number of solutions when it fits 128 bits.
    pub fn count_u128(&self) -> Option<u128> {
        match self.root {
            0 => Some(0),
            1 => Some(1),
            r if !self.overflow => Some(self.counts[r as usize - 2]),
            _ => None,
        }
    }

    /// The exact number of solutions.
    pub fn count(&self) -> BigUint {
        if let Some(c) = self.count_u128() {
            return BigUint::from(c);
        }
        let mut big: Vec<BigUint> = vec![BigUint::from(0u32), BigUint::from(1u32)];
        for n in &self.nodes {
            let c = &big[n.lo as usize] + &big[n.hi as usize];
            big.push(c);
        }
        big.swap_remove(self.root as usize)
    }

    /// Up to `limit` solutions (input option indices, deepest choice
    /// first), in the ZDD's order.
    pub fn solutions(&self, limit: usize) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let mut chosen = Vec::new();
        self.collect(self.root, &mut chosen, &mut out, limit);
        out
    }

    fn collect(&self, id: u32, chosen: &mut Vec<usize>, out: &mut Vec<Vec<usize>>, limit: usize) {
        if out.len() >= limit || id == 0 {
            return;
        }
        if id == 1 {
            out.push(chosen.clone());
            return;
        }
        let n = self.node(id);
        self.collect(n.lo, chosen, out, limit);
        chosen.push(n.option as usize);
        self.collect(n.hi, chosen, out, limit);
        chosen.pop();
    }

    /// One solution drawn uniformly at random (input option indices); `None`
    /// when there is none or when there are more than 2^128 - 1 (too many
    /// to draw from with 128-bit counts).
    pub fn sample<R: Rng>(&self, rng: &mut R) -> Option<Vec<usize>> {
        let total = self.count_u128()?;
        if total == 0 {
            return None;
        }
        let mut r = rng.random_range(0..total);
        let mut id = self.root;
        let mut chosen = Vec::new();
        while id > 1 {
            let n = self.node(id);
            let lo = match n.lo {
                0 => 0,
                1 => 1,
                l => self.counts[l as usize - 2],
            };
            if r < lo {
                id = n.lo;
            } else {
                r -= lo;
                chosen.push(n.option as usize);
                id = n.hi;
            }
        }
        Some(chosen)
    }

    /// Writes the ZDD in Knuth's text format, as DLX6 `m1` does (see the
    /// module's documentation), numbering options as DLX6 does for
    /// `problem`.
    pub fn write_knuth<W: Write>(&self, problem: &Problem, out: &mut W) -> io::Result<()> {
        self.write_knuth_numbered(&dlx6_numbers(problem), out)
    }

    /// Writes the ZDD as [`Zdd::write_knuth`] does, option `o` numbered
    /// `numbers[o]` (a preprocessed problem's options numbered as the
    /// input's, so the ZDD names the input's options).
    pub fn write_knuth_numbered<W: Write>(&self, numbers: &[u32], out: &mut W) -> io::Result<()> {
        for (i, n) in self.nodes.iter().enumerate() {
            writeln!(
                out,
                "{:x}: (~{}?{:x}:{:x})",
                i + 2,
                numbers[n.option as usize],
                n.lo,
                n.hi
            )?;
        }
        let id = self.nodes.len() + 2;
        if self.root == 0 {
            writeln!(out, "{id:x}: (~0?0:0)")
        } else {
            writeln!(out, "{id:x}: (~0?0:{:x})", self.root)
        }
    }
}

/// The number DLX6 gives each input option: 1, 2, ... over the options
/// that have a primary item (0 for a dropped one).
pub fn dlx6_numbers(problem: &Problem) -> Vec<u32> {
    let mut next = 0u32;
    (0..problem.options().len())
        .map(|o| {
            if problem.is_dropped(o) {
                0
            } else {
                next += 1;
                next
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn chain() -> Zdd {
        // {0}, {1}, {2, 3}
        let mut b = ZddBuilder::new();
        let a = b.node(0, 0, 1);
        let c = b.node(1, a, 1);
        let d = b.node(3, 0, 1);
        let e = b.node(2, c, d);
        b.finish(e)
    }

    #[test]
    fn counts_and_solutions_agree() {
        let z = chain();
        assert_eq!(z.count_u128(), Some(3));
        assert_eq!(z.solutions(10), vec![vec![0], vec![1], vec![2, 3]]);
        assert_eq!(z.solutions(2).len(), 2);
    }

    #[test]
    fn counts_beyond_128_bits_are_exact() {
        // A chain of 130 doubling nodes: 2^130 solutions.
        let mut b = ZddBuilder::new();
        let mut top = 1;
        for v in 0..130 {
            top = b.node(v, top, top);
        }
        let z = b.finish(top);
        assert_eq!(z.count_u128(), None);
        assert_eq!(z.count(), BigUint::from(1u32) << 130usize);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        assert_eq!(z.sample(&mut rng), None);
    }

    #[test]
    fn samples_are_solutions() {
        let z = chain();
        let all = z.solutions(10);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut seen = [0usize; 3];
        for _ in 0..3000 {
            let s = z.sample(&mut rng).unwrap();
            let mut sorted = s.clone();
            sorted.sort_unstable();
            let at = all.iter().position(|a| *a == sorted).expect("a solution");
            seen[at] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }
}
