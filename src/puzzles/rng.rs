//! The puzzle generators' one source of randomness (futoshiki, hidato,
//! hitori, slitherlink): deterministic, so a seed names a puzzle.

use crate::xcc::estimate::SplitMix64;

/// The puzzle generators' deterministic source: the engine's splitmix64
/// (the estimates' generator), with the index helpers they need.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}
