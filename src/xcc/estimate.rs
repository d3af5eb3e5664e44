//! Knuth's estimate of the size of a search tree by random probes (TAOCP
//! 7.2.2, Theorem E; the estimate behind the progress line, made before a
//! run instead of during it).
//!
//! A probe walks from the root to a leaf, choosing at each node one of its
//! `d` alternatives uniformly at random ([`Solver::probe`]). With degrees
//! `d1, d2, ..., dk` along the path, the walk reaches each node at depth
//! `j` with probability `1 / (d1 ... dj)`, so weighting the node by
//! `d1 ... dj` gives an unbiased estimate of the number of nodes at that
//! depth; summed over the path,
//!
//! ```text
//! nodes     = 1 + d1 + d1 d2 + ... + d1 d2 ... dk
//! solutions = d1 d2 ... dk if the walk ended at a solution, else 0
//! ```
//!
//! are unbiased estimates of the tree's nodes and solutions, counted as
//! [`crate::xcc::Stats`] counts them for a full run of the same search
//! (the probe walks that search's own tree: DLX2's, where a solution is a
//! node of its own, or DLX3's). The mean over many probes converges to the
//! truth, but slowly on unbalanced trees: the spread (standard error of
//! the mean) says how far to trust it.
//!
//! Pure and deterministic: the same seed gives the same estimate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::solver::Solver;
use super::task::{Decision, Task};
use super::vocabulary::{Probe, ProbeEnd, ProgressView, Request, RunConfig, Status, Visitor};

/// Probes of an estimate when nobody says how many.
pub const DEFAULT_PROBES: u64 = 1000;

/// Sebastiano Vigna's splitmix64: small, fast, and good enough to choose
/// among a node's alternatives.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..d` (`d >= 1`), by Lemire's multiply-shift: the bias
    /// is below `d / 2^64`, far under what any estimate could see.
    pub fn below(&mut self, d: Decision) -> Decision {
        ((u128::from(self.next_u64()) * u128::from(d)) >> 64) as Decision
    }
}

/// What one probe says about the tree: Knuth's estimates of its nodes and
/// solutions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub nodes: f64,
    pub solutions: f64,
}

/// The estimates one probe gives (see the module's documentation).
pub fn sample(probe: &Probe) -> Sample {
    let mut weight = 1.0f64;
    let mut nodes = 1.0f64; // the root
    let visited = probe.nodes();
    // Node j (j >= 1) of the path weighs d1 ... dj.
    for &d in &probe.degrees[..visited.saturating_sub(1)] {
        weight *= f64::from(d);
        nodes += weight;
    }
    let solutions = match probe.end {
        ProbeEnd::Solution => weight,
        ProbeEnd::DeadEnd | ProbeEnd::Missing => 0.0,
    };
    Sample { nodes, solutions }
}

/// The mean of one quantity over the probes, with its spread.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Mean {
    /// The estimate: the mean over the probes.
    pub mean: f64,
    /// The standard error of the mean (the sample standard deviation over
    /// the square root of the probes): about two thirds of the time the
    /// truth is within one of it, if the probes were enough to see the
    /// tree's rare heavy paths (on very unbalanced trees they may not be,
    /// and the error is then understated).
    pub standard_error: f64,
    /// The sample standard deviation of one probe's estimate.
    pub standard_deviation: f64,
}

impl Mean {
    fn of(values: &[f64]) -> Mean {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        // Scaled so that squares of huge estimates do not overflow.
        let scale = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let standard_deviation = if values.len() < 2 || scale == 0.0 {
            0.0
        } else if !scale.is_finite() || !mean.is_finite() {
            f64::INFINITY
        } else {
            let m = mean / scale;
            let sum: f64 = values.iter().map(|v| (v / scale - m).powi(2)).sum();
            scale * (sum / (n - 1.0)).sqrt()
        };
        Mean {
            mean,
            standard_error: standard_deviation / n.sqrt(),
            standard_deviation,
        }
    }
}

/// Knuth's estimate of a search tree, from random probes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub probes: u64,
    pub seed: u64,
    /// Search-tree nodes a full run would explore ([`crate::xcc::Stats`]
    /// `nodes`).
    pub nodes: Mean,
    /// Solutions a full run would find.
    pub solutions: Mean,
    /// The longest path a probe took, in nodes below the root.
    pub deepest: usize,
}

impl Estimate {
    /// The estimated seconds of a full run at `nodes_per_second`.
    pub fn seconds(&self, nodes_per_second: f64) -> f64 {
        self.nodes.mean / nodes_per_second
    }
}

/// Knuth's estimate from `probes` random walks (at least one), chosen by a
/// generator seeded with `seed`.
pub fn estimate(solver: &mut Solver, probes: u64, seed: u64) -> Estimate {
    estimate_until(solver, probes, seed, &AtomicBool::new(false), None)
        .expect("nothing stops the estimate")
}

/// Like [`estimate`], for a server: gives up (`None`) soon after `stop` is
/// set, and makes fewer probes (at least one) when `until` comes first:
/// the estimate is then as good as the probes made (see
/// [`Estimate::probes`]), and no longer the same for the same seed.
pub fn estimate_until(
    solver: &mut Solver,
    probes: u64,
    seed: u64,
    stop: &AtomicBool,
    until: Option<Instant>,
) -> Option<Estimate> {
    let probes = probes.max(1);
    let mut rng = SplitMix64::new(seed);
    let mut nodes = Vec::with_capacity(probes.min(1 << 20) as usize);
    let mut solutions = Vec::with_capacity(nodes.capacity());
    let mut deepest = 0;
    for i in 0..probes {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        if i > 0 && until.is_some_and(|t| Instant::now() >= t) {
            break;
        }
        let probe = solver.probe(&mut |d| rng.below(d));
        deepest = deepest.max(probe.nodes().saturating_sub(1));
        let s = sample(&probe);
        nodes.push(s.nodes);
        solutions.push(s.solutions);
    }
    Some(Estimate {
        probes: nodes.len() as u64,
        seed,
        nodes: Mean::of(&nodes),
        solutions: Mean::of(&solutions),
        deepest,
    })
}

/// How fast this machine searches one problem, measured by a short real
/// run of it (count only, from the root, on the calling thread).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Rate {
    /// Nodes the measuring run explored.
    pub nodes: u64,
    pub seconds: f64,
    /// The run explored the whole tree: `nodes` is its exact size.
    pub complete: bool,
}

impl Rate {
    pub fn nodes_per_second(&self) -> f64 {
        self.nodes as f64 / self.seconds.max(1e-9)
    }
}

/// Stops a run once its time is up, or when its caller says so.
struct Timer<'a> {
    until: Instant,
    stop: &'a AtomicBool,
}

impl Visitor for Timer<'_> {
    fn poll(&mut self, _progress: &ProgressView<'_>) -> Request {
        if Instant::now() >= self.until || self.stop.load(Ordering::Relaxed) {
            Request::Stop
        } else {
            Request::Continue
        }
    }
}

/// Measures the nodes per second of `solver`'s search by running it for
/// about `budget` (less when the tree is smaller), or until `stop` is set.
/// The first nodes of a search are near the root, where lists are long, so
/// this tends to understate the speed of a whole run a little.
pub fn measure_rate(solver: &mut Solver, budget: Duration, stop: &AtomicBool) -> Rate {
    let config = RunConfig {
        poll_interval: 1024,
        ..RunConfig::default()
    };
    let start = Instant::now();
    let mut timer = Timer {
        until: start + budget,
        stop,
    };
    let outcome = solver
        .run(&Task::root(), &config, &mut timer)
        .expect("the root task names the whole tree");
    Rate {
        nodes: outcome.stats.nodes,
        seconds: start.elapsed().as_secs_f64(),
        complete: outcome.status == Status::Exhausted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::testing::queens;
    use crate::xcc::{CountOnly, Engine, Problem};

    fn full(problem: &Problem, engine: Engine) -> crate::xcc::Stats {
        Solver::with_engine(problem, engine)
            .unwrap()
            .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
            .unwrap()
            .stats
    }

    // The exact expectation of one probe (every path walked, weighted by
    // its probability) against full counts is in tests/estimate.rs.

    #[test]
    fn probes_leave_the_links_as_they_were() {
        let problem = queens(8);
        let before = full(&problem, Engine::Links);
        let mut solver = Solver::new(&problem);
        let e = estimate(&mut solver, 500, 7);
        let after = solver
            .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
            .unwrap()
            .stats;
        assert_eq!(before, after);
        assert_eq!(e.probes, 500);
        assert_eq!(e, estimate(&mut solver, 500, 7), "same seed, same estimate");
        assert_ne!(e.nodes.mean, estimate(&mut solver, 500, 8).nodes.mean);
    }

    #[test]
    fn spreads_are_finite_for_huge_estimates() {
        let m = Mean::of(&[1e300, 1e300, 3e300]);
        assert!(m.standard_deviation.is_finite());
        assert!((m.standard_deviation - 2e300 / 3f64.sqrt()).abs() < 1e288);
        assert_eq!(Mean::of(&[5.0]).standard_error, 0.0);
    }

    #[test]
    fn a_rate_is_measured() {
        let mut solver = Solver::new(&queens(8));
        let rate = measure_rate(&mut solver, Duration::from_secs(5), &AtomicBool::new(false));
        assert!(rate.complete);
        assert_eq!(rate.nodes, full(&queens(8), Engine::Links).nodes);
        assert!(rate.nodes_per_second() > 0.0);
    }
}
