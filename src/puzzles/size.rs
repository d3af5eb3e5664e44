//! Cheap upper bounds of the size of a puzzle's encoding, and of the work
//! of building it, computed from the parsed puzzle without building the
//! XCC problem: what a server checks before it encodes a puzzle a client
//! sent.
//!
//! A puzzle's text is small but its encoding need not be: a blank hidato
//! of 1 x 5000 cells (10 KB of text) has about 50 million options, a
//! 40 x 40 hidato with one clue about 20 million; encoding them takes tens
//! of seconds and gigabytes. [`Puzzle::estimate`](super::Puzzle::estimate)
//! parses the text (linear in its length) and bounds the encoding by
//! formulas that follow each encoder's construction (each module's
//! `estimate` documents its own); [`EncodingLimits::check`] then names the
//! first limit the bound exceeds.
//!
//! # Soundness and tightness
//!
//! Every field of [`EncodingSize`] is at least the real value: `items` and
//! `options` at least `problem.items().len()` and `problem.options().len()`,
//! `entries` at least `problem.entries()`. The bounds are exact for latin,
//! sudoku, queens, futoshiki (which runs the encoder's own domain
//! propagation, bounded since n <= 9), hitori and slitherlink, and for
//! hidato boards without holes; on a hidato board with holes the
//! candidates are bounded with king distances in the plane (the encoder
//! measures them through board cells, which is never shorter). All the
//! arithmetic saturates at `u64::MAX`.
//!
//! # Work
//!
//! `work` bounds the steps of building the encoding: loop iterations,
//! tests and breadth-first-search visits, each 1 step, and
//! [`BUILD_STEPS`] steps per item, option and entry built (naming it,
//! looking it up, storing it). Measured on a 2-core x86 machine in the
//! `ci` profile, a step took 0.35 to 2 ns on every kind (4.5 ns on a fully
//! given 100 x 100 sudoku, whose 40,000 named items dominate): `work` is
//! about an upper bound of the encoding time in nanoseconds, give or take
//! a factor of 2 to 4.
//!
//! Most encoders do work linear in their output, give or take a factor n:
//! latin and sudoku look at all n^3 (cell, value) pairs even where givens
//! leave one option per cell, futoshiki's propagation and clue loops are
//! bounded by constants (n <= 9), queens and slitherlink are linear. Two
//! encoders can take far more time than their output suggests:
//!
//! - hitori tests every cell's number against its whole row and column
//!   (seeds, repeated values, once per item and option): about
//!   `2 rows cols (rows + cols + distinct values)` steps for an output
//!   linear in `rows cols` (a 1000 x 1000 latin square as a hitori has
//!   1,000,000 items, options and entries, within the usual limits, but
//!   takes 6 billion steps; a single row of 20,000 distinct numbers has
//!   20,000 items, options and entries and takes a second);
//! - hidato runs a breadth-first search over the whole grid from every
//!   given, keeping a distance per (given, cell) (8 bytes each), and fills
//!   an (N + 1) x cells table of candidates, testing each (number, blank
//!   cell) pair against the givens: about
//!   `32 G cells + 2 N cells + N blanks G` steps (N numbers, G givens),
//!   while a fully given board has one option per number. A fully given
//!   100 x 100 board (40 KB of text, 10,000 options) takes 5.5 s and
//!   900 MB to encode; a 60 x 60 board with every third number given,
//!   11 s.
//!
//! The memory an encoder uses beyond its output is also bounded by `work`
//! (in bytes); the output takes about 16 bytes per entry, 24 per option
//! and 50 per item.
//!
//! A server should therefore bound `work` too ([`EncodingLimits::work`]).

use std::fmt;

/// Upper bounds of an encoding's size, and of the work of building it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EncodingSize {
    /// At least `problem.items().len()`.
    pub items: u64,
    /// At least `problem.options().len()`.
    pub options: u64,
    /// At least `problem.entries()`: item occurrences over all options.
    pub entries: u64,
    /// At least the elementary steps of building the encoding, the items,
    /// options and entries built included (see the module documentation).
    pub work: u64,
}

/// The steps of work counted for building one item, option or entry
/// (about 50 to 75 ns, where a loop step is about 1 ns).
pub const BUILD_STEPS: u64 = 64;

impl EncodingSize {
    /// A size whose work is `steps` beyond building its items, options and
    /// entries ([`BUILD_STEPS`] each).
    pub fn new(items: u64, options: u64, entries: u64, steps: u64) -> EncodingSize {
        EncodingSize {
            items,
            options,
            entries,
            work: sum(&[
                product(&[BUILD_STEPS, sum(&[items, options, entries])]),
                steps,
            ]),
        }
    }
}

/// The saturating sum of `terms`.
pub(super) fn sum(terms: &[u64]) -> u64 {
    terms.iter().fold(0u64, |a, &t| a.saturating_add(t))
}

/// The saturating product of `factors`.
pub(super) fn product(factors: &[u64]) -> u64 {
    factors.iter().fold(1u64, |a, &f| a.saturating_mul(f))
}

/// Limits on an encoding's size, checked against an [`EncodingSize`]
/// before encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodingLimits {
    pub items: u64,
    pub options: u64,
    pub entries: u64,
    pub work: u64,
}

impl EncodingLimits {
    /// 2^20 items, 2^22 options, 2^24 entries, 2^31 steps of work (the
    /// work of building that many items, options and entries, 1.4 billion
    /// steps, fits): generous for every legitimate puzzle (a 100 x 100
    /// sudoku, queens 1000, a 300 x 300 slitherlink, a 500 x 500 hitori, a
    /// 30 x 30 hidato), and reached only by puzzles that take a few
    /// seconds and up to a gigabyte or so to encode.
    pub const DEFAULT: EncodingLimits = EncodingLimits {
        items: 1 << 20,
        options: 1 << 22,
        entries: 1 << 24,
        work: 1 << 31,
    };

    /// The first limit `size` exceeds, if any.
    pub fn check(&self, size: &EncodingSize) -> Result<(), TooLarge> {
        let checks = [
            (Measure::Items, size.items, self.items),
            (Measure::Options, size.options, self.options),
            (Measure::Entries, size.entries, self.entries),
            (Measure::Work, size.work, self.work),
        ];
        match checks.into_iter().find(|&(_, bound, limit)| bound > limit) {
            Some((measure, bound, limit)) => Err(TooLarge {
                measure,
                bound,
                limit,
            }),
            None => Ok(()),
        }
    }
}

impl Default for EncodingLimits {
    fn default() -> EncodingLimits {
        EncodingLimits::DEFAULT
    }
}

/// What an [`EncodingLimits`] limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measure {
    Items,
    Options,
    Entries,
    Work,
}

impl Measure {
    pub fn name(self) -> &'static str {
        match self {
            Measure::Items => "items",
            Measure::Options => "options",
            Measure::Entries => "entries",
            Measure::Work => "work",
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A puzzle whose encoding would exceed a limit: the measure, the bound of
/// the estimate and the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub struct TooLarge {
    pub measure: Measure,
    pub bound: u64,
    pub limit: u64,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bound = if self.bound == u64::MAX {
            "more than 18446744073709551614".to_string()
        } else {
            format!("up to {}", self.bound)
        };
        match self.measure {
            Measure::Items | Measure::Options | Measure::Entries => write!(
                f,
                "puzzle too large: its encoding would have {bound} {}, above the limit of {} {}",
                self.measure, self.limit, self.measure
            ),
            Measure::Work => write!(
                f,
                "puzzle too large: its encoding would take {bound} steps of work, above the \
                 limit of {} steps",
                self.limit
            ),
        }
    }
}

/// Why a puzzle is refused before encoding: its text is wrong, or its
/// encoding would be too large.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error(transparent)]
    Puzzle(#[from] super::PuzzleError),
    #[error(transparent)]
    TooLarge(#[from] TooLarge),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(sum(&[u64::MAX, 1]), u64::MAX);
        assert_eq!(product(&[1 << 40, 1 << 40, 0]), 0);
        assert_eq!(product(&[1 << 40, 1 << 40]), u64::MAX);
        let size = EncodingSize::new(u64::MAX, 1, 1, 1);
        assert_eq!(size.work, u64::MAX);
    }

    #[test]
    fn check_names_the_first_limit_exceeded() {
        let limits = EncodingLimits::DEFAULT;
        assert_eq!(limits.check(&EncodingSize::new(10, 10, 10, 10)), Ok(()));
        let e = limits
            .check(&EncodingSize::new(10, 1 << 23, 1 << 25, 0))
            .unwrap_err();
        assert_eq!(e.measure, Measure::Options);
        assert_eq!(e.limit, 1 << 22);
        let text = e.to_string();
        assert!(
            text.contains("options") && text.contains("4194304"),
            "{text}"
        );
        let e = limits
            .check(&EncodingSize {
                items: 1,
                options: 1,
                entries: 1,
                work: u64::MAX,
            })
            .unwrap_err();
        assert_eq!(e.measure, Measure::Work);
        assert!(e.to_string().contains("work"), "{e}");
    }
}
