//! [`run_memo`]: a memoized count (Knuth's DLX6, [`crate::xcc::memo`]) run
//! as a task, so that the pool and every transport run it through the same
//! [`Port`] as a search.
//!
//! A memoized count is one search with one cache: it cannot start below the
//! root, give work away or checkpoint (its cache is the point). So it runs
//! only the root task; a give-away or a checkpoint asked at a poll is
//! declined (as a run declines them before it has caught up), a release
//! stops it to run again from the start, and a stop stops it. Its count
//! goes to the port as one count-only batch when the search ends: nothing
//! before, since a count cut short would be wrong.

use crate::xcc::memo::{self, MemoConfig, MemoError, MemoStats, Verdict};
use crate::xcc::{Decision, Problem, ProgressView, Stats, Task};

use super::port::{Batch, Control, MemoRun, Port, RunEnd, RunReport, RunSpec, Stop};
use super::Solutions;

/// Why a memoized count cannot run on a job or a task: checked by the
/// callers before a job starts (as a status naming the field), and again
/// here.
pub fn memo_refusal(task: &Task, restricted: bool) -> Option<&'static str> {
    if restricted {
        Some(
            "memoized counting cannot apply a side condition that rejects whole solutions \
             (hitori's connectivity, slitherlink's one loop): its cache merges partial solutions \
             (count the weak puzzle, or count without memoizing)",
        )
    } else if *task != Task::root() {
        Some("a memoized count runs from the root only: it is never split")
    } else {
        None
    }
}

fn stats_of(memo: &MemoStats, solutions: u64) -> Stats {
    Stats {
        nodes: memo.nodes,
        updates: memo.updates,
        cleansings: memo.cleansings,
        solutions,
        max_level: memo.max_level,
        ..Stats::default()
    }
}

/// Counts the solutions of `problem` by memoized search, under
/// `memo.memory_limit` bytes for its cache and ZDD, steered and answered
/// through `port` like [`super::run_task`]. `restricted`: the job has a
/// side condition that filters solutions (refused; one that only prunes
/// is left out, the count is exact without it).
///
/// With `memo.probe`, `Err` when memoizing does not pay (the engine's
/// judgement, [`MemoConfig::probe`]): nothing was delivered, and the
/// caller counts with the plain search ([`super::run_task`] does).
pub fn run_memo<P: Port>(
    problem: &Problem,
    task: &Task,
    spec: &RunSpec,
    memo: MemoRun,
    restricted: bool,
    port: &mut P,
) -> Result<RunReport, Verdict> {
    let failed = |message: String| RunReport {
        end: RunEnd::Failed(message),
        stats: Stats::default(),
        found: 0,
        delivered: 0,
        exact_count: None,
    };
    if let Some(why) = memo_refusal(task, restricted) {
        return Ok(failed(why.to_string()));
    }
    if spec.limit == Some(0) {
        return Ok(RunReport {
            end: RunEnd::Stopped(Stop::SolutionLimit),
            stats: Stats::default(),
            found: 0,
            delivered: 0,
            exact_count: None,
        });
    }
    let config = MemoConfig {
        memory_limit: memo.memory_limit,
        stop: spec.stop.clone(),
        probe: memo.probe,
    };
    let mut asked: Option<RunEnd> = None;
    let mut poll = |figures: &MemoStats| {
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
    let outcome = match memo::count_polled(problem, &config, &mut poll) {
        Ok(outcome) => outcome,
        Err(MemoError::NoGain(verdict)) => return Err(verdict),
        Err(MemoError::Stopped { nodes }) => {
            return Ok(RunReport {
                end: asked.unwrap_or(RunEnd::Stopped(Stop::Asked)),
                stats: Stats {
                    nodes,
                    ..Stats::default()
                },
                found: 0,
                delivered: 0,
                exact_count: None,
            })
        }
        Err(error @ MemoError::OutOfMemory { .. }) => {
            return Ok(RunReport {
                end: RunEnd::OutOfMemory(error.to_string()),
                stats: Stats::default(),
                found: 0,
                delivered: 0,
                exact_count: None,
            })
        }
    };
    // Past u64::MAX the count travels as text beside a saturated number.
    let exact = outcome.zdd.count();
    let (count, exact_count) = match u64::try_from(&exact) {
        Ok(count) => (count, None),
        Err(_) => (u64::MAX, Some(exact.to_string())),
    };
    // What the limit lets through, past what earlier runs delivered.
    let wanted = spec
        .limit
        .map_or(count, |l| count.min(l.saturating_add(spec.skip)));
    let new = wanted.saturating_sub(spec.skip);
    let mut delivered = 0;
    if new > 0 {
        let batch = Batch {
            first: spec.skip,
            count: new,
            solutions: Solutions::default(),
        };
        delivered = match port.deliver(batch, true) {
            super::Taken::All | super::Taken::Stop => new,
            // Forced batches are always taken.
            super::Taken::Refused(_) => new,
        };
    }
    let exact_count = exact_count.filter(|_| wanted == u64::MAX);
    let end = if wanted < count {
        RunEnd::Stopped(Stop::SolutionLimit)
    } else {
        RunEnd::Exhausted
    };
    Ok(RunReport {
        end,
        stats: stats_of(&outcome.stats, wanted),
        found: wanted,
        delivered,
        exact_count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcc::dlx_format;

    use crate::run::testing::{port, Answering};

    fn queens(n: usize) -> Problem {
        crate::xcc::testing::queens(n)
    }

    /// `run_memo` on the root task of a problem without a side condition,
    /// with the probe off: every test here but the probe's own.
    fn count_root(
        problem: &Problem,
        spec: &RunSpec,
        memo: MemoRun,
        port: &mut Answering,
    ) -> RunReport {
        run_memo(problem, &Task::root(), spec, memo, false, port).expect("the probe is off")
    }

    #[test]
    fn counts_as_the_search_does_and_declines_give_away() {
        let problem = queens(8);
        let mut p = port(Control::GiveAway);
        let report = count_root(&problem, &RunSpec::default(), MemoRun::default(), &mut p);
        assert_eq!(report.end, RunEnd::Exhausted);
        assert_eq!(
            (report.found, report.delivered, report.stats.solutions),
            (92, 92, 92)
        );
        assert_eq!(p.taken.len(), 1);
        assert_eq!((p.taken[0].first, p.taken[0].count), (0, 92));
        assert!(p.taken[0].solutions.is_empty());
    }

    #[test]
    fn a_limit_caps_the_count_and_a_skip_is_not_delivered_again() {
        let problem = queens(8);
        let spec = RunSpec {
            limit: Some(10),
            ..RunSpec::default()
        };
        let mut p = port(Control::Continue);
        let report = count_root(&problem, &spec, MemoRun::default(), &mut p);
        assert_eq!(report.end, RunEnd::Stopped(Stop::SolutionLimit));
        assert_eq!((report.found, report.delivered), (10, 10));
        let spec = RunSpec {
            skip: 90,
            ..RunSpec::default()
        };
        let mut p = port(Control::Continue);
        let report = count_root(&problem, &spec, MemoRun::default(), &mut p);
        assert_eq!(report.end, RunEnd::Exhausted);
        assert_eq!((p.taken[0].first, p.taken[0].count), (90, 2));
        assert_eq!((report.found, report.delivered), (92, 2));
    }

    #[test]
    fn a_stop_or_release_at_a_poll_ends_without_a_count() {
        // queens 11 takes more than one poll's nodes.
        let problem = queens(11);
        for (control, end) in [
            (Control::Stop, RunEnd::Stopped(Stop::Asked)),
            (Control::Release, RunEnd::Released),
        ] {
            let mut p = port(control);
            let report = count_root(&problem, &RunSpec::default(), MemoRun::default(), &mut p);
            assert_eq!(report.end, end);
            assert_eq!(p.polls, 1);
            assert!(p.taken.is_empty());
            assert_eq!(report.found, 0);
        }
        let spec = RunSpec {
            max_nodes: Some(5000),
            ..RunSpec::default()
        };
        let mut p = port(Control::Continue);
        let report = count_root(&problem, &spec, MemoRun::default(), &mut p);
        assert_eq!(report.end, RunEnd::Stopped(Stop::NodeLimit));
    }

    #[test]
    fn counts_multiplicities_as_the_links_engine_does() {
        // Algorithm M: b twice, a once, and c at most twice.
        let mcc = dlx_format::parse("a 2:2|b 0:2|c\na b\nb\nb c\na c\nc\nb c\n").unwrap();
        let plain = crate::xcc::Solver::new(&mcc)
            .run(
                &Task::root(),
                &crate::xcc::RunConfig::default(),
                &mut crate::xcc::CountOnly,
            )
            .unwrap()
            .stats
            .solutions;
        let mut p = port(Control::Continue);
        let report = count_root(&mcc, &RunSpec::default(), MemoRun::default(), &mut p);
        assert_eq!(report.end, RunEnd::Exhausted);
        assert!(plain > 1, "{plain}");
        assert_eq!(report.found, plain);
    }

    /// With the probe, a count whose cache does not pay (queens 10) is
    /// made by the plain search through the same port, which hears why;
    /// one whose cache pays (latin 4 as exact cover) stays memoized, and
    /// without the probe (the service) queens stays memoized too.
    #[test]
    fn the_probe_hands_a_count_to_the_plain_search_where_the_cache_does_not_pay() {
        let latin4 = crate::xcc::testing::bench_problem("instances/latin4.dlx");
        for (problem, probe, declined) in [
            (queens(10), true, true),
            (queens(10), false, false),
            (latin4, true, false),
        ] {
            let engine = crate::xcc::Engine::auto(&problem);
            let plain = crate::xcc::Solver::with_engine(&problem, engine)
                .unwrap()
                .run(
                    &Task::root(),
                    &crate::xcc::RunConfig::default(),
                    &mut crate::xcc::CountOnly,
                )
                .unwrap()
                .stats;
            let spec = RunSpec {
                want_solutions: false,
                memo: Some(MemoRun {
                    memory_limit: None,
                    probe,
                }),
                ..RunSpec::default()
            };
            let mut p = port(Control::Continue);
            let report = super::super::run_root(&problem, engine, &spec, None, &mut p);
            assert_eq!(report.end, RunEnd::Exhausted);
            assert_eq!(report.found, plain.solutions);
            assert_eq!(p.declined.is_some(), declined, "{:?}", p.declined);
            if let Some(verdict) = &p.declined {
                assert_eq!(verdict.nodes, crate::xcc::memo::FIRST_STAGE);
                // The plain search's figures, not the memoized one's.
                assert_eq!(report.stats.nodes, plain.nodes);
            }
        }
    }

    #[test]
    fn refuses_what_it_cannot_count() {
        let mut p = port(Control::Continue);
        let problem = queens(6);
        let report = run_memo(
            &problem,
            &Task::root(),
            &RunSpec::default(),
            MemoRun::default(),
            true,
            &mut p,
        )
        .unwrap();
        assert!(matches!(report.end, RunEnd::Failed(m) if m.contains("side condition")));
        let report = count_root(
            &problem,
            &RunSpec::default(),
            MemoRun {
                memory_limit: Some(1000),
                probe: false,
            },
            &mut p,
        );
        assert!(
            matches!(report.end, RunEnd::OutOfMemory(_)),
            "{:?}",
            report.end
        );
    }
}
