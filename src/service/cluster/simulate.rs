//! A cluster simulated in virtual time (`xccd bench --simulate`): how well
//! one search is spread over N workers, on a machine that has two cores.
//!
//! Owns the virtual clock and the events of a simulated cluster, and
//! nothing of its policy: every decision is the real one. The pool is a
//! real [`Pool`] (no local thread, N remote slots), which queues, hands
//! out and books the tasks as it does for a coordinator; each simulated
//! session keeps its lease's books with the real [`Ledger`], steers it by
//! the pool's [`policy`] translated as the coordinator's sessions do
//! ([`steering`]), and each simulated worker answers its run's polls by the
//! real worker's rule ([`worker::control_for`]). Runs are real runs of the
//! engine ([`run_task`](crate::run::run_task)) on their leases' tasks, so
//! the count is exact or the simulation is wrong, and the nodes are those a
//! cluster would explore.
//!
//! Time is virtual, in nanoseconds: a run's clock advances by the nodes it
//! explores at a fixed rate (`rate` nodes a virtual second), after a node's
//! time for each level of its task's path (which it replays), every message
//! between a session and its worker takes `latency`, and the coordinator's
//! own work takes no time. Events are taken in order of time, ties in the
//! order they were made, so a run depends on nothing but its inputs; the
//! seed chooses which idle worker a woken task goes to (in a coordinator,
//! whichever session the runtime wakes first).
//!
//! The runs go in lock-step: each simulated worker's engine runs on a
//! thread of its own (a run cannot be suspended mid-search otherwise), but
//! only one thread runs at a time. A worker's run goes from one poll to the
//! next and waits there until the simulation reaches that poll's virtual
//! time, then gets what its worker would tell it then: so the simulation
//! is sequential, and deterministic. The threads' side is in
//! `simulate/lockstep.rs`.
//!
//! `XCCD_SIM_TRACE=1` prints every event on stderr, as it is taken.
//!
//! Left out (they do not move the splitting of one job): heartbeats (no
//! lease stalls, and only node budgets read their counts), lost workers,
//! other jobs, and the cost of the coordinator's CPU.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::coordinator::steering::{self, give_ask_due, LeaseAtPoll, Steer};
use super::coordinator::{HOLDING_LOOK, TICK};
use super::proto::AskKind;
use super::worker;
use crate::puzzles::rng::Rng;
use crate::run::{check_task, Batch, Ledger, RunEnd, RunPoint, RunReport, RunSpec, Settlement};
use crate::service::job::{EndReason, Job, JobSpec};
use crate::service::pool::{policy, Pool, PoolConfig};
use crate::xcc::{CountOnly, Engine, Problem, RunConfig, Solver, Stats, Task};

mod lockstep;
use lockstep::{run_thread, FromRun, Said, ToRun};

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Simulated workers, one task slot each.
    pub workers: usize,
    /// How long each message between a session and its worker takes.
    pub latency: Duration,
    /// Nodes a worker explores in a virtual second.
    pub rate: u64,
    /// Chooses which idle worker a woken task goes to.
    pub seed: u64,
    /// The engine every run uses.
    pub engine: Engine,
    /// Nodes between two polls of a run (the pool's default unless told).
    pub poll_interval: u64,
}

/// A plain count: one run of the whole tree on one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plain {
    pub solutions: u64,
    pub nodes: u64,
}

/// Counts `problem`'s solutions in one plain run: what the simulation's
/// count must equal, and one worker's work.
pub fn plain_count(problem: &Problem, engine: Engine) -> Plain {
    let mut solver = Solver::with_engine(problem, engine).unwrap_or_else(|_| Solver::new(problem));
    let outcome = solver
        .run(&Task::root(), &RunConfig::default(), &mut CountOnly)
        .expect("the root task runs");
    Plain {
        solutions: outcome.stats.solutions,
        nodes: outcome.stats.nodes,
    }
}

/// What a simulated cluster did with one search.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOutcome {
    pub workers: usize,
    /// Virtual time from the job's start to its end.
    pub makespan: Duration,
    /// One worker's makespan: the plain run's nodes at the rate, and a
    /// message each way (its one lease and its end).
    pub one_worker: Duration,
    pub leases: u64,
    /// Give-aways asked of runs, and made by them.
    pub give_asks: u64,
    pub give_aways: u64,
    /// Nodes every run explored (the plain run's, split among the runs).
    pub nodes: u64,
    /// Levels of the leased tasks' paths, each replayed before its run
    /// (counted as a node's time each), and the updates they cost.
    pub replayed_nodes: u64,
    pub replay_updates: u64,
    /// The share of the slots' time (N x makespan) in which no run went.
    pub idle_share: f64,
    /// The job's count (equal to the plain count, or the simulation fails).
    pub solutions: u64,
}

impl SimOutcome {
    /// One worker's makespan over this one's.
    pub fn speedup(&self) -> f64 {
        self.one_worker.as_secs_f64() / self.makespan.as_secs_f64()
    }

    /// Speedup over the number of workers, in (0, 1].
    pub fn efficiency(&self) -> f64 {
        self.speedup() / self.workers as f64
    }
}

/// Simulates counting `problem` on a cluster of `config.workers` workers;
/// `plain` is its plain count. Fails if the count is not exact, or if a
/// report of a run is refused (either is a bug).
pub fn simulate(
    problem: Arc<Problem>,
    config: &SimConfig,
    plain: Plain,
) -> Result<SimOutcome, String> {
    if config.workers == 0 || config.rate == 0 {
        return Err("a simulated cluster needs a worker and a rate above 0".into());
    }
    let pool = Pool::new(PoolConfig {
        threads: 0,
        poll_interval: config.poll_interval,
        ..PoolConfig::default()
    });
    pool.remote_joined(config.workers);
    let job = pool
        .submit(
            problem.clone(),
            JobSpec {
                engine: config.engine,
                ..JobSpec::default()
            },
        )
        .map_err(|e| e.to_string())?;
    let mut cluster = Cluster::new(&pool, problem, config);
    let result = cluster.run(&job);
    cluster.stop_threads();
    let end = result?;
    let summary = job.summary().ok_or("the job did not end")?;
    if summary.reason != EndReason::Complete {
        return Err(format!("the job ended {:?}", summary.reason));
    }
    if summary.solutions != plain.solutions {
        return Err(format!(
            "the simulated cluster counted {} solutions, the plain count {}",
            summary.solutions, plain.solutions
        ));
    }
    let makespan = end;
    let one_worker = nanos_for(plain.nodes, config.rate) + 2 * cluster.latency;
    let slot_time = makespan as f64 * config.workers as f64;
    let busy = nanos_for(cluster.nodes + cluster.replayed, config.rate) as f64;
    Ok(SimOutcome {
        workers: config.workers,
        makespan: Duration::from_nanos(makespan),
        one_worker: Duration::from_nanos(one_worker),
        leases: cluster.leases,
        give_asks: cluster.give_asks,
        give_aways: cluster.give_aways,
        nodes: cluster.nodes,
        replayed_nodes: cluster.replayed,
        replay_updates: cluster.replay_updates,
        idle_share: (1.0 - busy / slot_time).max(0.0),
        solutions: summary.solutions,
    })
}

/// Virtual nanoseconds `nodes` take at `rate` nodes a second.
fn nanos_for(nodes: u64, rate: u64) -> u64 {
    (u128::from(nodes) * 1_000_000_000 / u128::from(rate)) as u64
}

/// What a session and its worker tell each other, and the clock's own
/// events.
enum What {
    /// At the worker: a lease.
    Lease {
        lease: u64,
        task: Task,
        spec: Box<RunSpec>,
    },
    /// At the worker: its run reached a poll and waits for its answer.
    Poll,
    /// At the worker: an ask of the session.
    Ask {
        lease: u64,
        kind: AskKind,
    },
    /// At the session: reports of the worker.
    Found {
        lease: u64,
        first: u64,
        count: u64,
    },
    GaveAway {
        lease: u64,
        task: Task,
        found: u64,
    },
    Ended {
        lease: u64,
        report: Box<RunReport>,
    },
    /// At the session: its look at its lease, at the give-away cadence
    /// ([`TICK`]) while one is wanted, else after [`HOLDING_LOOK`], as the
    /// real session's deadlines.
    Tick {
        generation: u64,
    },
}

struct Event {
    at: u64,
    seq: u64,
    worker: usize,
    what: What,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    /// Reversed: the heap gives the earliest event, ties in order made.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A lease as its simulated session keeps it (as the coordinator's
/// `session::Lease`, less what heartbeats feed).
struct SimLease {
    id: u64,
    job: Arc<Job>,
    ledger: Ledger,
    asked: AskKind,
    started: u64,
    revoked: bool,
}

/// A simulated worker's run, on the worker's side.
struct Running {
    lease: u64,
    /// When the lease reached the worker.
    started: u64,
    /// The session's latest ask, not yet taken.
    pending: AskKind,
}

/// A worker's engine thread, in lock-step with the simulation.
struct RunThread {
    to: Sender<ToRun>,
    from: Receiver<FromRun>,
    handle: JoinHandle<()>,
}

/// One simulated worker: its session at the coordinator and the worker.
#[derive(Default)]
struct Member {
    lease: Option<SimLease>,
    /// When the session last asked a give-away (never: due at once).
    last_give_ask: Option<u64>,
    /// A give-away came back since the last give-away ask.
    give_answered: bool,
    /// Looks scheduled before this generation are void.
    tick: u64,
    /// When the session last armed its hunger wake-up (holding leases):
    /// the pool's `Notify` wakes the one waiting longest first.
    armed_hunger: u64,
    /// When it last passed a hunger wake-up on (`Pool::pass_hunger`).
    passed_hunger: u64,
    running: Option<Running>,
    thread: Option<RunThread>,
}

struct Cluster<'a> {
    pool: &'a Pool,
    problem: Arc<Problem>,
    engine: Engine,
    latency: u64,
    rate: u64,
    rng: Rng,
    now: u64,
    seq: u64,
    events: BinaryHeap<Event>,
    members: Vec<Member>,
    /// Members whose session has its slot free, and where each stands.
    idle: Vec<usize>,
    idle_at: Vec<Option<usize>>,
    next_lease: u64,
    /// The pool's hunger wake-ups taken so far (`Pool::hunger_wakes`):
    /// each goes to one session holding a lease, as in a coordinator.
    hunger_seen: u64,
    /// Sessions' armings of their hunger wake-up, so far.
    armings: u64,
    leases: u64,
    give_asks: u64,
    give_aways: u64,
    nodes: u64,
    replayed: u64,
    replay_updates: u64,
}

impl<'a> Cluster<'a> {
    fn new(pool: &'a Pool, problem: Arc<Problem>, config: &SimConfig) -> Cluster<'a> {
        let n = config.workers;
        Cluster {
            pool,
            problem,
            engine: config.engine,
            latency: u64::try_from(config.latency.as_nanos()).unwrap_or(u64::MAX),
            rate: config.rate,
            rng: Rng::new(config.seed),
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            members: (0..n)
                .map(|_| Member {
                    passed_hunger: u64::MAX,
                    ..Member::default()
                })
                .collect(),
            idle: (0..n).collect(),
            idle_at: (0..n).map(Some).collect(),
            next_lease: 1,
            hunger_seen: 0,
            armings: 0,
            leases: 0,
            give_asks: 0,
            give_aways: 0,
            nodes: 0,
            replayed: 0,
            replay_updates: 0,
        }
    }

    fn at(&mut self, at: u64, worker: usize, what: What) {
        self.seq += 1;
        self.events.push(Event {
            at,
            seq: self.seq,
            worker,
            what,
        });
    }

    /// Runs the job to its end; its end's virtual time.
    fn run(&mut self, job: &Job) -> Result<u64, String> {
        self.fill(None);
        self.wake_for_hunger();
        while job.summary().is_none() {
            let Some(event) = self.events.pop() else {
                return Err(
                    "the simulated cluster stalled: no event left, the job not ended".into(),
                );
            };
            self.now = event.at;
            if trace() {
                eprintln!(
                    "{:>12} w{} {}",
                    event.at,
                    event.worker,
                    describe(&event.what)
                );
            }
            self.handle(event.worker, event.what)?;
            self.fill(Some(event.worker));
            self.wake_for_hunger();
        }
        Ok(self.now)
    }

    /// Gives each hunger wake-up the pool issued to the session holding a
    /// lease that has waited longest, as the pool's `Notify` does; one that
    /// asks no give-away passes it on, as `Session::run` does.
    fn wake_for_hunger(&mut self) {
        while self.hunger_seen < self.pool.hunger_wakes() {
            self.hunger_seen += 1;
            let waiting = (0..self.members.len())
                .filter(|&w| self.members[w].lease.is_some())
                .min_by_key(|&w| self.members[w].armed_hunger);
            // No session holding a lease: no one to wake.
            let Some(worker) = waiting else { continue };
            self.armings += 1;
            self.members[worker].armed_hunger = self.armings;
            if !self.steer(worker) {
                let mut passed = self.members[worker].passed_hunger;
                self.pool.pass_hunger(&mut passed);
                self.members[worker].passed_hunger = passed;
            }
        }
    }

    fn handle(&mut self, worker: usize, what: What) -> Result<(), String> {
        match what {
            What::Lease { lease, task, spec } => {
                // Its path replayed first, a node's time a level.
                let replayed = task.path.len() as u64;
                self.replayed += replayed;
                self.members[worker].running = Some(Running {
                    lease,
                    started: self.now + nanos_for(replayed, self.rate),
                    pending: AskKind::Unspecified,
                });
                let to = self.thread(worker);
                to.send(ToRun::Lease { task, spec })
                    .map_err(|_| "a worker's thread is gone")?;
                self.hear(worker)
            }
            What::Poll => {
                let running = self.members[worker].running.as_mut().expect("a run");
                let (control, taken) = worker::control_for(running.pending, false);
                if taken {
                    running.pending = AskKind::Unspecified;
                }
                let thread = self.members[worker].thread.as_ref().expect("a thread");
                thread
                    .to
                    .send(ToRun::Go(control))
                    .map_err(|_| "a worker's thread is gone")?;
                self.hear(worker)
            }
            What::Ask { lease, kind } => {
                if let Some(running) = &mut self.members[worker].running {
                    if running.lease == lease && worker::overrides(running.pending) {
                        running.pending = kind;
                    }
                }
                Ok(())
            }
            What::Found {
                lease,
                first,
                count,
            } => {
                let Some(held) = self.live(worker, lease) else {
                    return Ok(());
                };
                let known = held.ledger.found(first, count).map_err(|e| e.to_string())?;
                if count > known {
                    held.job.deliver(
                        Batch {
                            first: first + known,
                            count: count - known,
                            solutions: Default::default(),
                        },
                        true,
                    );
                }
                Ok(())
            }
            What::GaveAway { lease, task, found } => {
                let Some(held) = self.live(worker, lease) else {
                    return Ok(());
                };
                held.job
                    .with_checker(|solver| check_task(solver, &task))
                    .map_err(|e| format!("gave_away: {e}"))?;
                let task = held
                    .ledger
                    .gave_away(task, found)
                    .map_err(|e| format!("gave_away: {e}"))?;
                let job = held.job.clone();
                self.give_aways += 1;
                self.members[worker].give_answered = true;
                self.pool.remote_gave_away(&job, task);
                Ok(())
            }
            What::Ended { lease, report } => self.ended(worker, lease, *report),
            What::Tick { generation } => {
                if self.members[worker].tick == generation && self.members[worker].lease.is_some() {
                    self.steer(worker);
                }
                Ok(())
            }
        }
    }

    /// The session's lease `lease`, if it holds it and has not revoked it.
    fn live(&mut self, worker: usize, lease: u64) -> Option<&mut SimLease> {
        self.members[worker]
            .lease
            .as_mut()
            .filter(|held| held.id == lease && !held.revoked)
    }

    /// Books the end of a run its worker reports (as `Session::ended`).
    fn ended(&mut self, worker: usize, lease: u64, report: RunReport) -> Result<(), String> {
        let Some(held) = self.members[worker].lease.take_if(|held| held.id == lease) else {
            return Err("the end of a lease the session does not hold".into());
        };
        self.nodes += report.stats.nodes;
        self.replay_updates += report.stats.replay_updates;
        self.make_idle(worker);
        if held.revoked {
            self.pool.remote_slot_freed();
            return Ok(());
        }
        if let RunEnd::Checkpointed(remaining) = &report.end {
            for task in remaining {
                held.job
                    .with_checker(|solver| check_task(solver, task))
                    .map_err(|e| format!("ended.remaining: {e}"))?;
            }
        }
        let settlement = held
            .ledger
            .settle(report.end, report.found)
            .map_err(|e| format!("ended: {e}"))?;
        if let Some(failure) = &settlement.failure {
            return Err(format!("a run failed: {}", failure.message()));
        }
        self.pool
            .finish_remote_run(lease, &held.job, &report.stats, settlement);
        Ok(())
    }

    /// Looks at a session's lease as `Session::steer_leases` does, and
    /// when to look again as it does: at the give-away cadence while the
    /// policy wants one, else after [`HOLDING_LOOK`] (the simulation has
    /// no stall nor other job to look for sooner). True if it asked a
    /// give-away.
    fn steer(&mut self, worker: usize) -> bool {
        let (now, pool) = (self.now, self.pool);
        let Some(held) = self.members[worker].lease.as_ref().filter(|h| !h.revoked) else {
            return false;
        };
        let mut facts = LeaseAtPoll {
            pool,
            id: held.id,
            job: &held.job,
            asked: held.asked,
            // A simulated run never stalls (see the module's documentation).
            stuck: false,
            ran: Duration::from_nanos(now - held.started),
        };
        let decision = policy::decide(&mut facts);
        let job = held.job.clone();
        let steered = steering::steer(decision);
        let ask = match steered {
            Steer::Revoke { budget_spent } => {
                if budget_spent {
                    job.request_stop(EndReason::NodeLimit);
                }
                self.revoke(worker, Settlement::default());
                Some(AskKind::Revoke)
            }
            Steer::Lost => {
                let lost = held.ledger.lose(pool.max_attempts(), RunPoint::default());
                self.revoke(worker, lost);
                Some(AskKind::Revoke)
            }
            Steer::Ask(kind) => Some(kind),
            Steer::GiveAway => {
                let member = &mut self.members[worker];
                let since = member
                    .last_give_ask
                    .map_or(Duration::MAX, |at| Duration::from_nanos(now - at));
                give_ask_due(since, member.give_answered).then(|| {
                    member.last_give_ask = Some(now);
                    member.give_answered = false;
                    self.give_asks += 1;
                    AskKind::GiveAway
                })
            }
            Steer::Nothing => None,
        };
        let member = &mut self.members[worker];
        let next = match (steered, member.last_give_ask) {
            (Steer::GiveAway, Some(asked)) => asked + nanos(TICK),
            _ => now + nanos(HOLDING_LOOK),
        };
        self.look_at(worker, next);
        if let Some(kind) = ask {
            self.ask(worker, kind);
        }
        ask == Some(AskKind::GiveAway)
    }

    /// The session's next look at its lease, in place of the one planned.
    fn look_at(&mut self, worker: usize, at: u64) {
        let member = &mut self.members[worker];
        member.tick += 1;
        let generation = member.tick;
        self.at(at, worker, What::Tick { generation });
    }

    /// Revokes a session's lease: its run is booked now with `settlement`,
    /// its slot stays busy until the worker reports the run's end.
    fn revoke(&mut self, worker: usize, settlement: Settlement) {
        let held = self.members[worker].lease.as_mut().expect("a lease");
        held.revoked = true;
        let (id, job) = (held.id, held.job.clone());
        self.pool
            .end_remote_run(id, &job, &Stats::default(), settlement);
    }

    fn ask(&mut self, worker: usize, kind: AskKind) {
        let Some(held) = self.members[worker].lease.as_mut() else {
            return;
        };
        held.asked = kind;
        let lease = held.id;
        let at = self.now + self.latency;
        self.at(at, worker, What::Ask { lease, kind });
    }

    /// Gives idle slots a task each while the pool has ready ones: first
    /// the slot of the session whose event this was (its loop fills after
    /// each message), then idle ones chosen by the seed.
    fn fill(&mut self, first: Option<usize>) {
        loop {
            let worker = match first.filter(|&w| self.idle_at[w].is_some()) {
                Some(worker) => worker,
                None if self.idle.is_empty() => return,
                None => self.idle[self.rng.below(self.idle.len())],
            };
            let id = self.next_lease;
            let Some((job, work, spent)) = self.pool.take_remote(id, &[]) else {
                return;
            };
            self.next_lease += 1;
            self.leases += 1;
            self.make_busy(worker);
            let spec = job.run_spec(&work, spent, self.pool.poll_interval());
            let task = work.task.clone();
            let member = &mut self.members[worker];
            member.lease = Some(SimLease {
                id,
                job,
                ledger: Ledger::new(work),
                asked: AskKind::Unspecified,
                started: self.now,
                revoked: false,
            });
            // The session held no lease: it arms its hunger wake-up, and
            // looks at its lease at the safety net's interval unless woken.
            self.armings += 1;
            member.armed_hunger = self.armings;
            let (now, latency) = (self.now, self.latency);
            self.look_at(worker, now + nanos(HOLDING_LOOK));
            self.at(
                now + latency,
                worker,
                What::Lease {
                    lease: id,
                    task,
                    spec: Box::new(spec),
                },
            );
        }
    }

    fn make_busy(&mut self, worker: usize) {
        let at = self.idle_at[worker].take().expect("idle");
        self.idle.swap_remove(at);
        if let Some(&moved) = self.idle.get(at) {
            self.idle_at[moved] = Some(at);
        }
    }

    fn make_idle(&mut self, worker: usize) {
        self.idle_at[worker] = Some(self.idle.len());
        self.idle.push(worker);
    }

    /// The worker's thread, started at its first lease.
    fn thread(&mut self, worker: usize) -> Sender<ToRun> {
        let member = &mut self.members[worker];
        if member.thread.is_none() {
            let (to, runs) = channel();
            let (says, from) = channel();
            let problem = self.problem.clone();
            let engine = self.engine;
            let handle = std::thread::Builder::new()
                .name(format!("xccd-sim-{worker}"))
                .stack_size(1 << 20)
                .spawn(move || run_thread(&problem, engine, &runs, &says))
                .expect("spawn a simulated worker's thread");
            member.thread = Some(RunThread { to, from, handle });
        }
        member.thread.as_ref().expect("started").to.clone()
    }

    /// Waits for the worker's run to reach its next poll or its end, and
    /// schedules what it said and that poll (or its end's report).
    fn hear(&mut self, worker: usize) -> Result<(), String> {
        let thread = self.members[worker].thread.as_ref().expect("a thread");
        let heard = thread
            .from
            .recv()
            .map_err(|_| "a simulated worker's thread died")?;
        let running = self.members[worker].running.as_ref().expect("a run");
        let (lease, started) = (running.lease, running.started);
        let (nodes, said, early, report) = match heard {
            FromRun::Poll { nodes, said, early } => (nodes, said, early, None),
            FromRun::End {
                report,
                said,
                early,
            } => (report.stats.nodes, said, early, Some(report)),
        };
        let then = started + nanos_for(nodes, self.rate);
        for (index, said) in said.into_iter().enumerate() {
            let sent = if index < early { self.now } else { then };
            let what = match said {
                Said::Found { first, count } => What::Found {
                    lease,
                    first,
                    count,
                },
                Said::GaveAway { task, found } => What::GaveAway { lease, task, found },
            };
            self.at(sent + self.latency, worker, what);
        }
        match report {
            None => self.at(then, worker, What::Poll),
            Some(report) => {
                self.members[worker].running = None;
                self.at(
                    then + self.latency,
                    worker,
                    What::Ended {
                        lease,
                        report: Box::new(report),
                    },
                );
            }
        }
        Ok(())
    }

    /// Ends the workers' threads (each waits for a lease, or at a poll).
    fn stop_threads(&mut self) {
        for member in &mut self.members {
            if let Some(thread) = member.thread.take() {
                drop(thread.to);
                let _ = thread.handle.join();
            }
        }
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn trace() -> bool {
    std::env::var_os("XCCD_SIM_TRACE").is_some()
}

fn describe(what: &What) -> String {
    match what {
        What::Lease { lease, task, .. } => {
            format!("lease {lease} {:?} [{}..{})", task.path, task.from, task.to)
        }
        What::Poll => "poll".into(),
        What::Ask { lease, kind } => format!("ask {lease} {kind:?}"),
        What::Found {
            lease,
            first,
            count,
        } => format!("found {lease} {first}+{count}"),
        What::GaveAway { lease, task, .. } => {
            format!("gave {lease} {:?} [{}..{})", task.path, task.from, task.to)
        }
        What::Ended { lease, report } => format!(
            "ended {lease} {:?} nodes {}",
            report.end, report.stats.nodes
        ),
        What::Tick { .. } => "tick".into(),
    }
}
