//! `xccd bench --simulate`'s cluster in virtual time
//! (`service::cluster::simulate`): the real pool, ledger, policy and
//! engine with N simulated workers must count exactly at every N, the same
//! way twice for one seed, with an efficiency in (0, 1].

use std::sync::Arc;
use std::time::Duration;

use xccd::service::cluster::simulate::{plain_count, simulate, SimConfig};
use xccd::xcc::{dlx_format, Engine, Problem, POLL_INTERVAL};

fn instance(name: &str) -> Arc<Problem> {
    let path = format!("{}/bench/instances/{name}.dlx", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    Arc::new(dlx_format::parse(&text).unwrap())
}

fn config(workers: usize, seed: u64, engine: Engine) -> SimConfig {
    SimConfig {
        workers,
        latency: Duration::from_millis(1),
        rate: 5_000_000,
        seed,
        engine,
        // Small polls split small trees finely: many leases and give-aways.
        poll_interval: 64,
    }
}

#[test]
fn the_count_is_exact_at_every_size_of_cluster() {
    for name in ["queens8", "queens10", "latin4"] {
        let problem = instance(name);
        for engine in [Engine::Links, Engine::Cells] {
            let plain = plain_count(&problem, engine);
            for workers in [1, 3, 10, 100] {
                let row = simulate(problem.clone(), &config(workers, 7, engine), plain)
                    .unwrap_or_else(|e| panic!("{name} {engine:?} {workers}: {e}"));
                assert_eq!(row.solutions, plain.solutions, "{name} {workers}");
                assert_eq!(
                    row.nodes, plain.nodes,
                    "{name} {workers}: the plain run's nodes, split"
                );
                let efficiency = row.efficiency();
                assert!(
                    efficiency > 0.0 && efficiency <= 1.0,
                    "{name} {workers}: efficiency {efficiency}"
                );
                assert!((0.0..1.0).contains(&row.idle_share), "{row:?}");
                if workers == 1 {
                    assert_eq!(row.makespan, row.one_worker, "one worker: one lease");
                    assert_eq!((row.leases, row.give_aways), (1, 0));
                } else if name != "queens8" {
                    assert!(row.give_aways > 0, "{name} {workers}: split: {row:?}");
                }
            }
        }
    }
}

#[test]
fn one_seed_gives_one_outcome() {
    let problem = instance("queens10");
    let plain = plain_count(&problem, Engine::Links);
    for workers in [10, 100] {
        let first = simulate(problem.clone(), &config(workers, 3, Engine::Links), plain).unwrap();
        let again = simulate(problem.clone(), &config(workers, 3, Engine::Links), plain).unwrap();
        assert_eq!(first, again);
    }
}

#[test]
fn the_pool_default_poll_interval_spreads_a_larger_tree() {
    let problem = instance("queens12");
    let plain = plain_count(&problem, Engine::Links);
    let config = SimConfig {
        poll_interval: POLL_INTERVAL,
        ..config(10, 1, Engine::Links)
    };
    let row = simulate(problem, &config, plain).unwrap();
    assert_eq!(row.solutions, 14200);
    assert!(row.speedup() > 1.0, "{row:?}");
    assert!(row.efficiency() <= 1.0);
}
