//! Reading SolutionBatch's packed form as the Rust client does
//! (`convert::unpack`, which `solve --server` uses; the Python client's
//! tests decode it independently), for every test crate that asks for it.

use xccd::service::{convert, proto as pb};

/// The solutions of a batch in the packed form, as lists of option
/// indices; a malformed batch fails the test with what is wrong with it.
pub fn unpack(batch: &pb::SolutionBatch) -> Vec<Vec<u32>> {
    let solutions = convert::unpack(batch.clone()).unwrap_or_else(|e| panic!("{e}"));
    solutions.iter().map(<[u32]>::to_vec).collect()
}
