//! The puzzle kinds by name, one entry point to encode any of them from
//! text, and the generators.

use std::fmt;
use std::str::FromStr;

use super::futoshiki::FutoshikiEncoding;
use super::size::{EncodingLimits, EncodingSize, SizeError};
use super::{Encoded, PuzzleError};

/// A kind of puzzle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Latin,
    Futoshiki,
    Hitori,
    Hidato,
    Slitherlink,
    Sudoku,
    Queens,
}

impl Kind {
    /// Every kind, in the order of the enum.
    pub const ALL: [Kind; 7] = [
        Kind::Latin,
        Kind::Futoshiki,
        Kind::Hitori,
        Kind::Hidato,
        Kind::Slitherlink,
        Kind::Sudoku,
        Kind::Queens,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Latin => "latin",
            Kind::Futoshiki => "futoshiki",
            Kind::Hitori => "hitori",
            Kind::Hidato => "hidato",
            Kind::Slitherlink => "slitherlink",
            Kind::Sudoku => "sudoku",
            Kind::Queens => "queens",
        }
    }

    /// Whether [`generate`] can make puzzles of this kind.
    pub fn can_generate(self) -> bool {
        matches!(self, Kind::Futoshiki | Kind::Hitori | Kind::Slitherlink)
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown puzzle kind {s:?} (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// Choices that change how a puzzle is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EncodeOptions {
    /// Hitori and slitherlink: accept weak solutions (skip the conditions
    /// exact cover cannot express). Ignored by the other kinds.
    pub weak: bool,
    /// Futoshiki: how weak clues are encoded.
    pub encoding: FutoshikiEncoding,
}

/// A puzzle as its user gives it: all it takes to encode it anywhere.
/// Remote workers rebuild a puzzle's encoding, side condition included, from
/// this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Puzzle {
    pub kind: Kind,
    pub text: String,
    pub options: EncodeOptions,
}

impl Puzzle {
    pub fn encode(&self) -> Result<Box<dyn Encoded>, PuzzleError> {
        encode(self.kind, &self.text, &self.options)
    }

    /// Upper bounds of the size of [`Self::encode`]'s problem and of the
    /// work of building it, without building it (see [`super::size`]):
    /// parses the text (the same errors as `encode`) and counts, in time
    /// linear in the text.
    pub fn estimate(&self) -> Result<EncodingSize, PuzzleError> {
        estimate(self.kind, &self.text, &self.options)
    }

    /// The estimate, if it is within `limits`: what to check before
    /// [`Self::encode`] on a puzzle from an untrusted source.
    pub fn check_size(&self, limits: &EncodingLimits) -> Result<EncodingSize, SizeError> {
        let size = self.estimate()?;
        limits.check(&size)?;
        Ok(size)
    }
}

/// Parses `text` as a puzzle of the given kind and bounds its encoding
/// (see [`Puzzle::estimate`]).
pub fn estimate(
    kind: Kind,
    text: &str,
    options: &EncodeOptions,
) -> Result<EncodingSize, PuzzleError> {
    Ok(match kind {
        Kind::Latin => super::latin::LatinPuzzle::parse(text)?.estimate(),
        Kind::Futoshiki => super::futoshiki::Futoshiki::parse(text)?.estimate(options.encoding),
        Kind::Sudoku => super::sudoku::Sudoku::parse(text)?.estimate(),
        Kind::Queens => super::queens::estimate(super::queens::parse(text)?),
        Kind::Hitori => super::hitori::parse(text)?.estimate(),
        Kind::Hidato => super::hidato::parse(text)?.estimate(),
        Kind::Slitherlink => super::slitherlink::parse(text)?.estimate(),
    })
}

/// Parses `text` as a puzzle of the given kind and encodes it.
pub fn encode(
    kind: Kind,
    text: &str,
    options: &EncodeOptions,
) -> Result<Box<dyn Encoded>, PuzzleError> {
    Ok(match kind {
        Kind::Latin => Box::new(super::latin::encode_text(text)?),
        Kind::Futoshiki => Box::new(super::futoshiki::encode_text(text, options.encoding)?),
        Kind::Sudoku => Box::new(super::sudoku::encode_text(text)?),
        Kind::Queens => Box::new(super::queens::encode_text(text)?),
        Kind::Hitori => super::hitori::encode_text(text, options.weak)?,
        Kind::Hidato => super::hidato::encode_text(text)?,
        Kind::Slitherlink => super::slitherlink::encode_text(text, options.weak)?,
    })
}

/// A valid puzzle (exactly one solution) of a square size, in the kind's
/// text format; the same for the same seed. See [`generate_rect`].
pub fn generate(kind: Kind, size: usize, seed: u64) -> Result<String, PuzzleError> {
    generate_rect(kind, size, size, seed)
}

/// A valid puzzle of `rows` x `cols` (only slitherlink may be
/// rectangular), in the kind's text format. Futoshiki, hitori and
/// slitherlink can be generated; other kinds give an error (at line 1,
/// column 1, since there is no text).
pub fn generate_rect(
    kind: Kind,
    rows: usize,
    cols: usize,
    seed: u64,
) -> Result<String, PuzzleError> {
    let square = |what: &str| {
        if rows == cols {
            Ok(())
        } else {
            Err(PuzzleError::new(
                1,
                1,
                format!("{what} puzzles are square: {rows} rows and {cols} columns"),
            ))
        }
    };
    match kind {
        Kind::Futoshiki => {
            square("futoshiki")?;
            Ok(super::futoshiki::generate(rows, seed)?.to_text())
        }
        Kind::Hitori => {
            square("hitori")?;
            super::hitori::generate(rows, seed)
        }
        Kind::Slitherlink => super::slitherlink::generate(rows, cols, seed),
        other => Err(PuzzleError::new(
            1,
            1,
            format!("cannot generate {other} puzzles (only futoshiki, hitori and slitherlink)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(kind.to_string().parse::<Kind>(), Ok(kind));
        }
        assert!("sudoku9".parse::<Kind>().is_err());
    }

    #[test]
    fn dispatch_encodes() {
        let options = EncodeOptions::default();
        let e = encode(Kind::Queens, "6", &options).unwrap();
        assert_eq!(super::super::solve(&*e, None, 0).count, 4);
        assert!(encode(Kind::Latin, "1 2\n2 x\n", &options).is_err());
        assert!(generate(Kind::Sudoku, 9, 1).is_err());
    }
}
