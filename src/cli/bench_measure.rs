//! Timing one engine on one problem, for the bench tables (`bench`'s
//! engines table and `bench --memo`'s plain count): what a row measures,
//! the layout flag, and the fastest of a few count-only runs. It prints
//! nothing and knows no reference table.

use std::time::Instant;

use xccd::xcc::{CountOnly, Engine, Layout, Order, Problem, RunConfig, Solver, Stats, Task};

use super::CliError;

/// What a row measures: an engine, and for cells how it breaks ties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Measured {
    Links,
    Cells(Order),
}

impl Measured {
    pub(super) fn name(self) -> &'static str {
        match self {
            Measured::Links => "links",
            Measured::Cells(Order::Exact) => "cells",
            Measured::Cells(Order::Ssxcc) => "ssxcc",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutArg {
    Auto,
    Wide,
}

/// The fastest of `repeat` count-only runs of `engine`: seconds, counts and
/// algorithm.
pub(super) fn measure(
    problem: &Problem,
    engine: Measured,
    layout: LayoutArg,
    repeat: u32,
) -> Result<(f64, Stats, &'static str), CliError> {
    let mut best = f64::INFINITY;
    let mut stats = None;
    let mut algorithm = "";
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        let layout = match layout {
            LayoutArg::Wide => Layout::Wide,
            LayoutArg::Auto => Layout::Narrow,
        };
        let mut solver = match engine {
            Measured::Links => Solver::with_engine_layout(problem, Engine::Links, layout),
            Measured::Cells(order) => Solver::cells(problem, layout, order),
        }
        .map_err(|e| CliError::Failed(e.to_string()))?;
        algorithm = solver.algorithm();
        let outcome = solver
            .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
            .map_err(|e| CliError::Failed(e.to_string()))?;
        best = best.min(start.elapsed().as_secs_f64());
        stats = Some(outcome.stats);
    }
    Ok((best, stats.expect("at least one run"), algorithm))
}
