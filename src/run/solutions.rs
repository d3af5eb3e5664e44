//! [`Solutions`]: many solutions in two buffers, as they travel from a run
//! to whatever takes them.

/// Solutions one after another: every solution's option indices
/// (ascending) back to back in one buffer, and how many each has.
///
/// A run fills one of these per batch instead of a vector per solution: at
/// hundreds of thousands of solutions a second, an allocation and a free
/// per solution cost as much as finding it. The buffers travel as they are
/// through the pool and the job's stream buffer, and the indices become a
/// stream's packed bytes without a copy (see
/// `service::convert::packed_solutions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Solutions {
    /// Every solution's option indices, one solution after another.
    indices: Vec<u32>,
    /// How many indices each solution has.
    lengths: Vec<u32>,
}

impl Solutions {
    pub fn new() -> Solutions {
        Solutions::default()
    }

    /// Room for `solutions` solutions of `indices` indices in all.
    pub fn with_capacity(solutions: usize, indices: usize) -> Solutions {
        Solutions {
            indices: Vec::with_capacity(indices),
            lengths: Vec::with_capacity(solutions),
        }
    }

    /// Solutions from their indices back to back and their lengths; `None`
    /// when the lengths do not add up to the indices.
    pub fn from_parts(indices: Vec<u32>, lengths: Vec<u32>) -> Option<Solutions> {
        let total = lengths.iter().map(|&l| l as u64).sum::<u64>();
        (total == indices.len() as u64).then_some(Solutions { indices, lengths })
    }

    /// The indices back to back and the lengths.
    pub fn into_parts(self) -> (Vec<u32>, Vec<u32>) {
        (self.indices, self.lengths)
    }

    /// How many solutions.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Every solution's option indices, one solution after another.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// How many indices each solution has.
    pub fn lengths(&self) -> &[u32] {
        &self.lengths
    }

    /// Appends a solution.
    pub fn push(&mut self, solution: &[u32]) {
        self.indices.extend_from_slice(solution);
        self.lengths.push(solution.len() as u32);
    }

    /// Appends the solution that `write` appends to the indices: a run
    /// writes each solution straight into the batch's buffer.
    pub fn push_with(&mut self, write: impl FnOnce(&mut Vec<u32>)) {
        let before = self.indices.len();
        write(&mut self.indices);
        self.lengths.push((self.indices.len() - before) as u32);
    }

    /// The solutions in order, each as its option indices.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            indices: &self.indices,
            lengths: self.lengths.iter(),
        }
    }

    /// Indices taken by the first `n` solutions.
    fn indices_of_first(&self, n: usize) -> usize {
        self.lengths[..n].iter().map(|&l| l as usize).sum()
    }

    /// Keeps the first `n` solutions.
    pub fn truncate(&mut self, n: usize) {
        if n < self.len() {
            let keep = self.indices_of_first(n);
            self.indices.truncate(keep);
            self.lengths.truncate(n);
        }
    }

    /// Splits off the solutions from `at` on (all of them when `at` is 0).
    pub fn split_off(&mut self, at: usize) -> Solutions {
        let at = at.min(self.len());
        if at == 0 {
            return std::mem::take(self);
        }
        let cut = self.indices_of_first(at);
        Solutions {
            indices: self.indices.split_off(cut),
            lengths: self.lengths.split_off(at),
        }
    }

    /// Renames every option `o` to `names[o]` and sorts each solution's
    /// indices again: a preprocessed problem's solutions as the input's
    /// options (`names`: the reduced problem's origin).
    pub fn rename(&mut self, names: &[u32]) {
        let mut at = 0;
        for &len in &self.lengths {
            let solution = &mut self.indices[at..at + len as usize];
            for o in solution.iter_mut() {
                *o = names[*o as usize];
            }
            solution.sort_unstable();
            at += len as usize;
        }
    }

    /// Moves `other`'s solutions to the end of these.
    pub fn append(&mut self, other: &mut Solutions) {
        if self.is_empty() && self.indices.capacity() < other.indices.len() {
            std::mem::swap(self, other);
            return;
        }
        self.indices.append(&mut other.indices);
        self.lengths.append(&mut other.lengths);
    }

    /// Reserves room for `solutions` more solutions of `indices` indices.
    pub fn reserve(&mut self, solutions: usize, indices: usize) {
        self.indices.reserve(indices);
        self.lengths.reserve(solutions);
    }
}

/// The solutions of a [`Solutions`], each as its option indices.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    indices: &'a [u32],
    lengths: std::slice::Iter<'a, u32>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u32];
    fn next(&mut self) -> Option<&'a [u32]> {
        let &length = self.lengths.next()?;
        let (solution, rest) = self.indices.split_at(length as usize);
        self.indices = rest;
        Some(solution)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.lengths.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Solutions {
    type Item = &'a [u32];
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<S: AsRef<[u32]>> FromIterator<S> for Solutions {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Solutions {
        let mut solutions = Solutions::new();
        solutions.extend(iter);
        solutions
    }
}

impl<S: AsRef<[u32]>> Extend<S> for Solutions {
    fn extend<I: IntoIterator<Item = S>>(&mut self, iter: I) {
        for solution in iter {
            self.push(solution.as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vecs(s: &Solutions) -> Vec<Vec<u32>> {
        s.iter().map(<[u32]>::to_vec).collect()
    }

    #[test]
    fn solutions_keep_their_order_and_boundaries() {
        let list: Vec<Vec<u32>> = vec![vec![1, 4, 7], vec![], vec![2], vec![0, 3, 5, 9]];
        let all: Solutions = list.iter().collect();
        assert_eq!(all.len(), 4);
        assert_eq!(vecs(&all), list);
        assert_eq!(all.lengths(), &[3, 0, 1, 4]);
        assert_eq!(all.indices(), &[1, 4, 7, 2, 0, 3, 5, 9]);
        let (indices, lengths) = all.clone().into_parts();
        assert_eq!(
            Solutions::from_parts(indices.clone(), lengths),
            Some(all.clone())
        );
        assert_eq!(Solutions::from_parts(indices, vec![3, 0, 1, 3]), None);
        for at in 0..=5 {
            let mut head = all.clone();
            let tail = head.split_off(at);
            let at = at.min(4);
            assert_eq!(vecs(&head), list[..at].to_vec(), "split at {at}");
            assert_eq!(vecs(&tail), list[at..].to_vec(), "split at {at}");
            let mut joined = head.clone();
            let mut rest = tail.clone();
            joined.append(&mut rest);
            assert!(rest.is_empty());
            assert_eq!(joined, all);
            let mut cut = all.clone();
            cut.truncate(at);
            assert_eq!(cut, head);
        }
        let mut written = Solutions::new();
        written.push_with(|out| out.extend([3, 1]));
        written.push_with(|_| {});
        assert_eq!(vecs(&written), vec![vec![3, 1], vec![]]);
    }
}
