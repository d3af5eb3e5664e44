//! The compact form of stored solutions: each solution as its number of
//! options, then its option indices in ascending order as differences, all
//! LEB128 varints. A queens-16 solution (16 options among 1,240) takes
//! about 17 bytes this way, against 64 as 32-bit integers.

use super::StoreError;
use crate::run::SolutionIndices;

fn put(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn get(bytes: &[u8], at: &mut usize) -> Result<u64, StoreError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes
            .get(*at)
            .ok_or_else(|| StoreError::Corrupt("a solution chunk ends early".into()))?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(StoreError::Corrupt(
        "a number in a solution chunk is too long".into(),
    ))
}

/// Appends `solution` (sorted) to `out`.
pub fn encode(out: &mut Vec<u8>, solution: &[u32]) {
    let mut scratch = Vec::new();
    encode_with(out, solution, &mut scratch);
}

/// [`encode`], sorting in `scratch` (kept between calls: no allocation
/// per solution).
pub fn encode_with(out: &mut Vec<u8>, solution: &[u32], scratch: &mut Vec<u32>) {
    let sorted: &[u32] = if solution.is_sorted() {
        solution
    } else {
        scratch.clear();
        scratch.extend_from_slice(solution);
        scratch.sort_unstable();
        scratch
    };
    put(out, sorted.len() as u64);
    let mut previous = 0u64;
    for (i, &option) in sorted.iter().enumerate() {
        let option = u64::from(option);
        put(out, if i == 0 { option } else { option - previous });
        previous = option;
    }
}

/// The first `keep` of the `count` solutions of a chunk, encoded again,
/// and how many they are: what a chunk that straddles its job's last
/// snapshot keeps at a restart.
pub fn keep_first(bytes: &[u8], count: usize, keep: usize) -> Result<(Vec<u8>, usize), StoreError> {
    let mut solutions = decode(bytes, count)?;
    solutions.truncate(keep);
    let mut kept = Vec::new();
    for solution in &solutions {
        encode(&mut kept, solution);
    }
    Ok((kept, solutions.len()))
}

/// The solutions of a chunk that `encode` wrote, `count` of them.
pub fn decode(bytes: &[u8], count: usize) -> Result<Vec<SolutionIndices>, StoreError> {
    let mut at = 0;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let len = get(bytes, &mut at)?;
        if len > bytes.len() as u64 {
            return Err(StoreError::Corrupt(
                "a solution in a chunk is longer than the chunk".into(),
            ));
        }
        let mut solution = Vec::with_capacity(len as usize);
        let mut option = 0u64;
        for i in 0..len {
            let delta = get(bytes, &mut at)?;
            option = if i == 0 { delta } else { option + delta };
            let index = u32::try_from(option)
                .map_err(|_| StoreError::Corrupt("an option index out of range".into()))?;
            solution.push(index);
        }
        out.push(solution);
    }
    if at != bytes.len() {
        return Err(StoreError::Corrupt(
            "a solution chunk is longer than its solutions".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn solutions_come_back_sorted(solutions in proptest::collection::vec(
            proptest::collection::vec(any::<u32>(), 0..20), 0..20)) {
            let mut bytes = Vec::new();
            for s in &solutions {
                encode(&mut bytes, s);
            }
            let back = decode(&bytes, solutions.len()).unwrap();
            let sorted: Vec<Vec<u32>> = solutions.iter().map(|s| {
                let mut s = s.clone();
                s.sort_unstable();
                s
            }).collect();
            prop_assert_eq!(back, sorted);
        }
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        let mut bytes = Vec::new();
        encode(&mut bytes, &[1, 200, 70_000]);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], 1).is_err());
        }
        assert!(decode(&bytes, 2).is_err());
        assert!(decode(&[0xff; 12], 1).is_err());
    }
}
