//! A fingerprint of the solutions a lease delivered: what an audit compares
//! besides their number.
//!
//! Each streamed solution is checked as it comes (a solution of the
//! problem, in the lease's part of the tree), and an audit compares how
//! many a lease delivered with how many its task has. That alone passes a
//! worker that sends one solution twice and leaves another out: the number
//! is right and every solution it sent is valid. So the coordinator also
//! sums a hash of every solution a lease delivered, and an audit's run
//! sums the same over what the task gives: equal sums mean the same
//! solutions (but for a chance of about 2^-64).
//!
//! The sum is over solutions, so the order a stream sent them in does not
//! matter; a solution's hash is over its options as the engine lists them
//! (ascending, on every path). The hash is keyed by a number drawn once per
//! process, which a worker never sees: it cannot aim two different sets of
//! solutions at one sum. (It is a fast multiplicative hash, not a
//! cryptographic one: keyed, it is enough against a worker that cannot read
//! the coordinator's memory.)
//!
//! It owns the arithmetic only: what is compared, and what a mismatch
//! means, is `audit`'s.

use std::sync::OnceLock;

use crate::run::Solutions;

/// The sum of the hashes of a set of solutions (see the module's
/// documentation). The empty set's is zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Fingerprint(u64);

impl Fingerprint {
    /// Adds one solution, its options as the engine lists them.
    pub(crate) fn add(&mut self, solution: &[u32]) {
        let key = key();
        let mut h = key.0;
        for &option in solution {
            h = (h ^ u64::from(option)).wrapping_mul(key.1).rotate_left(29);
        }
        self.0 = self.0.wrapping_add(mix(h ^ solution.len() as u64));
    }

    /// Adds every solution of `solutions`.
    pub(crate) fn add_all(&mut self, solutions: &Solutions) {
        for solution in solutions.iter() {
            self.add(solution);
        }
    }
}

/// The process's key: a start and an odd multiplier, drawn once.
fn key() -> (u64, u64) {
    static KEY: OnceLock<(u64, u64)> = OnceLock::new();
    *KEY.get_or_init(|| (rand::random(), rand::random::<u64>() | 1))
}

/// SplitMix64's finalizer: every bit of the result depends on every bit of
/// `z`, so sums of mixed hashes do not cancel by structure.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(solutions: &[&[u32]]) -> Fingerprint {
        let mut fingerprint = Fingerprint::default();
        for s in solutions {
            fingerprint.add(s);
        }
        fingerprint
    }

    #[test]
    fn the_order_of_solutions_does_not_matter_and_their_contents_do() {
        let a: &[u32] = &[0, 4, 9];
        let b: &[u32] = &[1, 3, 8];
        let c: &[u32] = &[2, 5, 7];
        assert_eq!(of(&[a, b, c]), of(&[c, a, b]));
        // One sent twice and another left out: the same count, another sum.
        assert_ne!(of(&[a, b, c]), of(&[a, a, c]));
        assert_ne!(of(&[a, b]), of(&[a, c]));
        // The options of one solution told apart, not only their sum.
        assert_ne!(of(&[&[0, 5]]), of(&[&[1, 4]]));
        assert_ne!(of(&[a]), Fingerprint::default());
        assert_eq!(of(&[]), Fingerprint::default());
    }

    #[test]
    fn a_batch_adds_as_its_solutions_one_by_one() {
        let mut solutions = Solutions::new();
        solutions.push(&[0, 4, 9]);
        solutions.push(&[1, 3, 8]);
        let mut batch = Fingerprint::default();
        batch.add_all(&solutions);
        assert_eq!(batch, of(&[&[0, 4, 9], &[1, 3, 8]]));
    }
}
