//! The simulation's engine threads, in lock-step: each simulated worker's
//! run goes on a thread of its own (a run cannot be suspended mid-search
//! otherwise) and stops at every poll until the simulation answers it.
//!
//! Owns the messages between the simulation and such a thread, the thread's
//! loop and the run's [`Port`], which holds what the run says until its
//! next poll. It must decide nothing: what a poll is answered, and when, is
//! the simulation's (`simulate.rs`), which this file must not name, so that
//! the run's side can be read apart from the clock's.

use std::sync::mpsc::{Receiver, Sender};

use crate::run::{run_task, Batch, Control, Port, RunReport, RunSpec, Taken};
use crate::xcc::{Engine, Problem, ProgressView, Solver, Task};

/// What a simulated worker's run says, in order, between two polls.
pub(super) enum Said {
    Found { first: u64, count: u64 },
    GaveAway { task: Task, found: u64 },
}

/// From a worker's thread: its run reached a poll (and waits), or ended.
/// `said` holds what it said since its last poll; the first `early` of it
/// came at that poll (a give-away, and the solutions delivered before it),
/// the rest at this one.
pub(super) enum FromRun {
    Poll {
        nodes: u64,
        said: Vec<Said>,
        early: usize,
    },
    End {
        report: RunReport,
        said: Vec<Said>,
        early: usize,
    },
}

/// To a worker's thread.
pub(super) enum ToRun {
    Lease { task: Task, spec: Box<RunSpec> },
    Go(Control),
}

/// A simulated worker's engine thread: runs each lease it is given, one
/// poll at a time.
pub(super) fn run_thread(
    problem: &Problem,
    engine: Engine,
    runs: &Receiver<ToRun>,
    says: &Sender<FromRun>,
) {
    let mut solver = Solver::with_engine(problem, engine).unwrap_or_else(|_| Solver::new(problem));
    while let Ok(ToRun::Lease { task, spec }) = runs.recv() {
        let mut port = SimPort {
            runs,
            says,
            said: Vec::new(),
            early: 0,
        };
        let report = run_task(&mut solver, problem, &task, &spec, None, &mut port);
        let end = FromRun::End {
            report,
            said: std::mem::take(&mut port.said),
            early: port.early,
        };
        if says.send(end).is_err() {
            return;
        }
    }
}

/// A simulated worker's port: what its run says waits for the next poll,
/// where the run waits for the simulation's answer.
struct SimPort<'a> {
    runs: &'a Receiver<ToRun>,
    says: &'a Sender<FromRun>,
    said: Vec<Said>,
    early: usize,
}

impl Port for SimPort<'_> {
    fn deliver(&mut self, batch: Batch, _force: bool) -> Taken {
        self.said.push(Said::Found {
            first: batch.first,
            count: batch.count,
        });
        Taken::All
    }

    fn control(&mut self, progress: &ProgressView<'_>) -> Control {
        let poll = FromRun::Poll {
            nodes: progress.stats.nodes,
            said: std::mem::take(&mut self.said),
            early: std::mem::take(&mut self.early),
        };
        if self.says.send(poll).is_err() {
            return Control::Stop;
        }
        match self.runs.recv() {
            Ok(ToRun::Go(control)) => control,
            _ => Control::Stop,
        }
    }

    fn given_away(&mut self, task: Task, found: u64) {
        self.said.push(Said::GaveAway { task, found });
        // Given at the poll just answered, with what was delivered before.
        self.early = self.said.len();
    }
}
