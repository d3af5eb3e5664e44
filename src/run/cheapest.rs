//! [`run_cheapest`]: the K cheapest solutions (Knuth's DLX5,
//! [`crate::xcc::cheapest`]) found as a task, so that the pool runs them
//! through the same [`Port`] as a search.
//!
//! DLX5's pruning depends on every solution found before (only options
//! cheaper than the K-th best so far are tried), so the search cannot start
//! below the root, give work away or checkpoint. It runs only the root
//! task; a give-away or a checkpoint asked at a poll is declined, a release
//! stops it to run again from the start, and a stop or a node budget stops
//! it. The K solutions kept go to the port as one batch when the search
//! ends, in DLX5's order of discovery: nothing before, since the cheapest
//! so far need not be the cheapest. A batch carries option indices only; a
//! solution's cost is the sum of its options' costs, which whoever holds
//! the problem can add up again.

use crate::xcc::cheapest::{self, CheapestConfig, CheapestError, CheapestStats, MAX_K};
use crate::xcc::{Decision, Problem, ProgressView, Stats, Task};

use super::port::{Batch, Control, Port, RunEnd, RunReport, RunSpec, Stop};
use super::Solutions;

/// Why the K cheapest solutions cannot be searched for on a problem or a
/// task: checked by the callers before a job starts (as a status naming
/// the field), and again here.
pub fn cheapest_refusal(
    problem: &Problem,
    task: &Task,
    k: usize,
    restricted: bool,
) -> Option<String> {
    if k == 0 || k > MAX_K {
        Some(format!(
            "K must be between 1 and {MAX_K} (as in DLX5), not {k}"
        ))
    } else if problem.has_multiplicities() {
        Some(
            "the cheapest-solutions search does not handle multiplicities \
             (items with bounds other than 1), nor does DLX5"
                .to_string(),
        )
    } else if restricted {
        Some(
            "the cheapest-solutions search cannot apply a side condition that looks at whole \
             solutions (connectivity, one loop)"
                .to_string(),
        )
    } else if *task != Task::root() {
        Some("the cheapest-solutions search runs from the root only: it is never split".into())
    } else {
        None
    }
}

fn stats_of(figures: &CheapestStats, solutions: u64) -> Stats {
    Stats {
        nodes: figures.nodes,
        updates: figures.updates,
        cleansings: figures.cleansings,
        solutions,
        ..Stats::default()
    }
}

/// Finds the `k` cheapest solutions of `problem` as DLX5 does, steered and
/// answered through `port` like [`super::run_task`]. `restricted`: the job
/// has a side condition that filters solutions (refused).
pub fn run_cheapest<P: Port>(
    problem: &Problem,
    task: &Task,
    spec: &RunSpec,
    k: usize,
    restricted: bool,
    port: &mut P,
) -> RunReport {
    let ended = |end: RunEnd, stats: Stats| RunReport {
        end,
        stats,
        found: 0,
        delivered: 0,
        exact_count: None,
    };
    if let Some(why) = cheapest_refusal(problem, task, k, restricted) {
        return ended(RunEnd::Failed(why), Stats::default());
    }
    if spec.limit == Some(0) {
        return ended(RunEnd::Stopped(Stop::SolutionLimit), Stats::default());
    }
    let stop = spec.stop.clone();
    let mut asked: Option<RunEnd> = None;
    let mut poll = |figures: &CheapestStats| {
        if stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
        {
            asked = Some(RunEnd::Stopped(Stop::Asked));
            return false;
        }
        if spec.max_nodes.is_some_and(|m| figures.nodes >= m) {
            asked = Some(RunEnd::Stopped(Stop::NodeLimit));
            return false;
        }
        let stats = stats_of(figures, 0);
        let view = ProgressView {
            stats: &stats,
            positions: &[] as &[Decision],
            degrees: &[] as &[Decision],
            done_weight: 0.0,
            task_weight: 1.0,
        };
        match port.control(&view) {
            Control::Continue | Control::GiveAway | Control::Checkpoint => true,
            Control::Release => {
                asked = Some(RunEnd::Released);
                false
            }
            Control::Stop => {
                asked = Some(RunEnd::Stopped(Stop::Asked));
                false
            }
        }
    };
    let outcome = match cheapest::cheapest_polled(
        problem,
        &CheapestConfig::new(k),
        spec.poll_interval,
        |_| {},
        &mut poll,
    ) {
        Ok(outcome) => outcome,
        Err(CheapestError::Stopped { nodes }) => {
            let stats = Stats {
                nodes,
                ..Stats::default()
            };
            return ended(asked.unwrap_or(RunEnd::Stopped(Stop::Asked)), stats);
        }
        Err(error) => return ended(RunEnd::Failed(error.to_string()), Stats::default()),
    };
    // What a limit lets through, past what earlier runs delivered.
    let count = outcome.solutions.len() as u64;
    let wanted = spec
        .limit
        .map_or(count, |l| count.min(l.saturating_add(spec.skip)));
    let new = wanted.saturating_sub(spec.skip);
    let fresh = &outcome.solutions[spec.skip.min(wanted) as usize..wanted as usize];
    if !spec.want_solutions && new > 0 {
        let batch = Batch {
            first: spec.skip,
            count: new,
            solutions: Solutions::default(),
        };
        // A forced batch is always taken, whatever the port answers.
        let _ = port.deliver(batch, true);
    }
    // Batches of at most the spec's size, as a search delivers them.
    let mut first = spec.skip;
    for chunk in fresh
        .chunks(spec.batch_size.max(1))
        .filter(|_| spec.want_solutions)
    {
        let mut solutions = Solutions::with_capacity(chunk.len(), 0);
        for s in chunk {
            // Solutions travel with their indices ascending.
            let mut options: Vec<u32> = s.options.iter().map(|&o| o as u32).collect();
            options.sort_unstable();
            solutions.push(&options);
        }
        let count = chunk.len() as u64;
        let _ = port.deliver(
            Batch {
                first,
                count,
                solutions,
            },
            true,
        );
        first += count;
    }
    let end = if wanted < count {
        RunEnd::Stopped(Stop::SolutionLimit)
    } else {
        RunEnd::Exhausted
    };
    RunReport {
        end,
        stats: stats_of(&outcome.stats, wanted),
        found: wanted,
        delivered: new,
        exact_count: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::dlx_format;

    use crate::run::testing::port;

    /// Queens with a cost on each option: its row times its column.
    fn costly_queens(n: usize) -> Problem {
        let plain = crate::xcc::testing::queens(n);
        let mut text = String::new();
        let mut items: Vec<String> = plain.items().iter().map(|i| i.name.clone()).collect();
        let second = plain.primary_count();
        items.insert(second, "|".into());
        text.push_str(&items.join(" "));
        text.push('\n');
        for o in 0..plain.options().len() {
            text.push_str(&format!("{} |{}\n", plain.format_option(o), o % 7));
        }
        dlx_format::parse(&text).unwrap()
    }

    #[test]
    fn delivers_the_k_cheapest_in_dlx5s_order_and_declines_give_away() {
        let problem = costly_queens(8);
        let expected = cheapest::cheapest(&problem, &CheapestConfig::new(5)).unwrap();
        let mut p = port(Control::GiveAway);
        let spec = RunSpec {
            poll_interval: 16,
            ..RunSpec::default()
        };
        let report = run_cheapest(&problem, &Task::root(), &spec, 5, false, &mut p);
        assert_eq!(report.end, RunEnd::Exhausted);
        assert!(p.polls > 0);
        assert_eq!((report.found, report.delivered), (5, 5));
        assert_eq!(
            (report.stats.nodes, report.stats.updates),
            (expected.stats.nodes, expected.stats.updates),
            "polling changes none of DLX5's figures"
        );
        assert_eq!(p.taken.len(), 1);
        let got: Vec<Vec<u32>> = p.taken[0].solutions.iter().map(|s| s.to_vec()).collect();
        // Batches of the spec's size, one after another.
        let small = RunSpec {
            batch_size: 2,
            ..spec.clone()
        };
        let mut q = port(Control::Continue);
        run_cheapest(&problem, &Task::root(), &small, 5, false, &mut q);
        let firsts: Vec<(u64, u64)> = q.taken.iter().map(|b| (b.first, b.count)).collect();
        assert_eq!(firsts, [(0, 2), (2, 2), (4, 1)]);
        let again: Vec<Vec<u32>> = q
            .taken
            .iter()
            .flat_map(|b| b.solutions.iter().map(|s| s.to_vec()).collect::<Vec<_>>())
            .collect();
        assert_eq!(again, got);
        let want: Vec<Vec<u32>> = expected
            .solutions
            .iter()
            .map(|s| {
                let mut o: Vec<u32> = s.options.iter().map(|&o| o as u32).collect();
                o.sort_unstable();
                o
            })
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_stop_release_or_node_budget_at_a_poll_ends_without_solutions() {
        let problem = costly_queens(10);
        let spec = RunSpec {
            poll_interval: 64,
            ..RunSpec::default()
        };
        for (control, end) in [
            (Control::Stop, RunEnd::Stopped(Stop::Asked)),
            (Control::Release, RunEnd::Released),
        ] {
            let mut p = port(control);
            let report = run_cheapest(&problem, &Task::root(), &spec, 3, false, &mut p);
            assert_eq!(report.end, end);
            assert!(p.taken.is_empty());
            assert_eq!(report.stats.nodes, 64);
        }
        let spec = RunSpec {
            max_nodes: Some(100),
            ..spec
        };
        let mut p = port(Control::Continue);
        let report = run_cheapest(&problem, &Task::root(), &spec, 3, false, &mut p);
        assert_eq!(report.end, RunEnd::Stopped(Stop::NodeLimit));
        assert!(p.taken.is_empty());
    }

    #[test]
    fn refuses_what_dlx5_cannot_do() {
        let mut p = port(Control::Continue);
        let mcc = dlx_format::parse("a 2:2|b\na b\nb\n").unwrap();
        let spec = RunSpec::default();
        let report = run_cheapest(&mcc, &Task::root(), &spec, 1, false, &mut p);
        assert!(matches!(report.end, RunEnd::Failed(m) if m.contains("multiplicities")));
        let problem = costly_queens(6);
        let report = run_cheapest(&problem, &Task::root(), &spec, 1, true, &mut p);
        assert!(matches!(report.end, RunEnd::Failed(m) if m.contains("side condition")));
        let report = run_cheapest(&problem, &Task::root(), &spec, 0, false, &mut p);
        assert!(matches!(report.end, RunEnd::Failed(m) if m.contains("between 1 and")));
        assert!(p.taken.is_empty());
    }
}
