//! The tests of the packed form of solution batches (`packed_solutions`,
//! `unpack`): every width gives back the same solutions, and a malformed
//! batch is refused with what is wrong with it.
//!
//! In a file of its own so that `convert.rs` is the conversions alone. It
//! reaches them through `super::*`, as the inline module did, and is built
//! for tests only: nothing outside it may use what it defines.

use super::*;

fn solutions(lists: &[&[u32]]) -> Solutions {
    lists.iter().copied().collect()
}

#[test]
fn packed_batches_unpack_to_their_solutions_at_every_width() {
    let lists: &[&[u32]] = &[&[0, 7, 255], &[], &[3]];
    for width in [1, 2, 4] {
        let batch = packed_solutions(solutions(lists), width);
        assert_eq!(batch.packed_index_bytes, width);
        let back = unpack(batch).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), lists.to_vec());
    }
    let wide: &[&[u32]] = &[&[65_535, 70_000], &[1]];
    let back = unpack(packed_solutions(solutions(wide), 4)).unwrap();
    assert_eq!(back.iter().collect::<Vec<_>>(), wide.to_vec());
    assert!(unpack(pb::SolutionBatch::default()).unwrap().is_empty());
}

#[test]
fn malformed_packed_batches_are_refused_with_what_is_wrong() {
    let good = || packed_solutions(solutions(&[&[1, 2, 3], &[4]]), 2);
    let mut short = good();
    short.packed_indices = short.packed_indices.slice(..6);
    let mut long = good();
    long.packed_lengths = vec![3];
    let mut width = good();
    width.packed_index_bytes = 3;
    let mut none = good();
    none.packed_index_bytes = 0;
    for (batch, says) in [
        (short, "came in 6 bytes"),
        (long, "came in 8 bytes"),
        (width, "packed_index_bytes 3"),
        (none, "packed_index_bytes 0"),
    ] {
        let error = unpack(batch).unwrap_err();
        assert!(error.contains(says), "{error}");
    }
}
