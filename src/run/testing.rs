//! A port for the unit tests of runs that give no work away (the memoized
//! count, the cheapest-solutions search): it takes every batch and answers
//! every poll with one control.

use super::port::{Batch, Control, Port, Taken};
use crate::xcc::ProgressView;

pub(crate) struct Answering {
    pub control: Control,
    pub polls: u64,
    pub taken: Vec<Batch>,
    /// What a memoized count that gave its cache up said.
    pub declined: Option<crate::xcc::memo::Verdict>,
}

impl Port for Answering {
    fn deliver(&mut self, batch: Batch, _force: bool) -> Taken {
        self.taken.push(batch);
        Taken::All
    }
    fn control(&mut self, _: &ProgressView<'_>) -> Control {
        self.polls += 1;
        self.control
    }
    fn memo_declined(&mut self, verdict: &crate::xcc::memo::Verdict) {
        self.declined = Some(verdict.clone());
    }
}

/// A port answering `control` at every poll.
pub(crate) fn port(control: Control) -> Answering {
    Answering {
        control,
        polls: 0,
        taken: Vec::new(),
        declined: None,
    }
}
