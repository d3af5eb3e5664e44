//! Reading SolutionBatch's packed form as a client does, checking it on the
//! way: one copy of the decoder for every test crate that asks for it.

use xccd::service::proto as pb;

/// The solutions of a batch in the packed form (little-endian indices of
/// `packed_index_bytes` bytes, and a length per solution), as lists of
/// option indices.
pub fn unpack(batch: &pb::SolutionBatch) -> Vec<Vec<u32>> {
    let bytes = &batch.packed_indices;
    let width = batch.packed_index_bytes as usize;
    if batch.packed_lengths.is_empty() {
        assert!(bytes.is_empty(), "packed indices without lengths");
        return Vec::new();
    }
    assert!(
        [1, 2, 4].contains(&width),
        "packed_index_bytes {width} in a packed batch"
    );
    assert_eq!(bytes.len() % width, 0, "{width} bytes per packed index");
    let indices: Vec<u32> = bytes
        .chunks_exact(width)
        .map(|b| {
            let mut word = [0u8; 4];
            word[..width].copy_from_slice(b);
            u32::from_le_bytes(word)
        })
        .collect();
    let mut start = 0;
    let solutions = batch
        .packed_lengths
        .iter()
        .map(|&n| {
            let end = start + n as usize;
            let solution = indices[start..end].to_vec();
            start = end;
            solution
        })
        .collect();
    assert_eq!(start, indices.len(), "the lengths add up to the indices");
    solutions
}
