//! Several coordinators on one PostgreSQL store, one leader.
//!
//! Any number of `xccd serve --store postgres://...` share a database. The
//! leader holds a lease: one row of the table `leader (id = 1, holder,
//! token, expires_at)`, which it renews every [`RENEW_EVERY`] for
//! [`LEASE_TTL`] (the database's clock decides expiry, so the coordinators'
//! clocks do not matter). A standby polls the row every [`POLL_EVERY`] and
//! takes it once it has lapsed, one larger `token` each time: the **fencing
//! token**. Every write transaction of the job store opened under a lease
//! ([`PostgresStore::open_fenced`](super::store::PostgresStore::open_fenced))
//! first reads the row `FOR SHARE` and is refused unless its token is still
//! there, so a coordinator that was paused or cut off while another took
//! over can never write a solution, a snapshot or a job's state: the
//! database refuses it (`xccd_store_fenced_writes_total`), and the refusal
//! makes it step down.
//!
//! **Takeover bound.** After a `kill -9` of the leader its lease runs out
//! within [`LEASE_TTL`] of its last renewal, and a standby sees that within
//! [`POLL_EVERY`]: a standby leads within 5.5 s, then resumes every
//! unfinished job from its last snapshot (the path a restart on SQLite
//! takes, [`durable::resume_all`](super::durable::resume_all)). A leader
//! that stops gracefully (SIGTERM) gives the lease up: the next leads
//! within [`POLL_EVERY`].
//!
//! **Stepping down.** A leader that cannot renew for [`SELF_LAPSE`] (less
//! than the TTL, so before anyone can take over), or whose lease turns out
//! taken, or whose write is fenced, stops every job and its listeners, and
//! starts again as a standby in the same process: so each term as leader
//! has its own pool of jobs, rebuilt from the store.
//!
//! **A standby** listens on the same addresses and answers every API and
//! worker call UNAVAILABLE `NOT_LEADER` with the leader's advertised
//! address ([`super::leader_gate`]); its gRPC health is NOT_SERVING, the
//! leader's SERVING, so a Kubernetes Service routes to the leader.
//!
//! The SQLite store (the default) knows none of this: one coordinator per
//! data directory, held by its exclusive lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use postgres::{Client, Config, NoTls};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::leader_gate::LeaderGateLayer;
use super::metrics as metric;
use super::server::{self, catch_panics, incoming, ServeConfig};
use super::store::fence::Fence;
use super::store::postgres::{describe, redacted, LOCK_CLASS};
use super::store::PostgresStore;
use super::sync::Locked;

/// How long a lease lasts past its last renewal.
pub const LEASE_TTL: Duration = Duration::from_secs(5);
/// How often the leader renews its lease.
pub const RENEW_EVERY: Duration = Duration::from_secs(1);
/// How often a standby looks whether the lease has lapsed.
pub const POLL_EVERY: Duration = Duration::from_millis(500);
/// A leader that has not renewed for this long steps down by itself:
/// before its lease can lapse in the database.
pub const SELF_LAPSE: Duration = Duration::from_secs(4);
/// A coordinator that starts looks for the lead this long, this often,
/// before it stands by: a killed predecessor's session may take a moment
/// to be seen closed.
pub const START_WAIT: Duration = Duration::from_secs(2);
const START_POLL: Duration = Duration::from_millis(50);
/// The leaders' session lock: the store's advisory locks' class, key 3.
const LEADER_LOCK: i32 = 3;

/// The lease's task: a thread of its own with its own connection (the sync
/// client must not block the runtime), and what it shares.
struct Lease {
    fence: Arc<Fence>,
    /// When the last successful renewal (or takeover) was sent.
    renewed: Mutex<Option<Instant>>,
    stop: AtomicBool,
    /// A token to give up (a graceful stop), and the answer.
    release: Mutex<Option<(i64, std::sync::mpsc::SyncSender<()>)>>,
}

impl Lease {
    /// Starts the lease's thread on `url`; this process is `me` (its
    /// advertised address) in the row.
    fn start(url: &str, me: String, fence: Arc<Fence>) -> std::io::Result<Arc<Lease>> {
        let mut config: Config = url.parse().map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("the job store {}: not a PostgreSQL URL: {e}", redacted(url)),
            )
        })?;
        config.connect_timeout(Duration::from_secs(2));
        // A call cut off by a partition fails instead of hanging.
        config.tcp_user_timeout(Duration::from_secs(3));
        config.keepalives_idle(Duration::from_secs(2));
        if config.get_application_name().is_none() {
            config.application_name("xccd-lease");
        }
        let lease = Arc::new(Lease {
            fence,
            renewed: Mutex::new(None),
            stop: AtomicBool::new(false),
            release: Mutex::new(None),
        });
        let shared = lease.clone();
        std::thread::Builder::new()
            .name("xccd-lease".into())
            .spawn(move || shared.run(config, me))?;
        Ok(lease)
    }

    /// Whether this leader's lease may have lapsed (no renewal for
    /// [`SELF_LAPSE`]).
    fn lapsed(&self) -> bool {
        self.renewed
            .locked()
            .is_none_or(|at| at.elapsed() >= SELF_LAPSE)
    }

    /// Gives the lease up if it still holds `token`, so that a standby
    /// takes over at once; waits a moment for it.
    fn release(&self, token: i64) {
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        *self.release.locked() = Some((token, done));
        let _ = wait.recv_timeout(Duration::from_secs(2));
        self.stop.store(true, Ordering::SeqCst);
    }

    fn run(&self, config: Config, me: String) {
        let mut conn: Option<Conn> = None;
        let mut token = 0i64;
        let started = Instant::now();
        while !self.stop.load(Ordering::SeqCst) {
            if let Some((held, done)) = self.release.locked().take() {
                if let Some(conn) = conn.as_mut() {
                    let _ = conn.client.execute(
                        "UPDATE leader SET expires_at = now() WHERE id = 1 AND token = $1",
                        &[&held],
                    );
                }
                self.fence.lose(held, None);
                // The connection closes, and the session's lock with it.
                drop(conn.take());
                let _ = done.send(());
                return;
            }
            // Lost by the store (a fenced write) or by the watchdog: the
            // session lock goes too (a new connection).
            if token != 0 && self.fence.token() != token {
                token = 0;
                conn = None;
            }
            let sent = Instant::now();
            if conn.as_ref().is_none_or(|c| c.client.is_closed()) {
                conn = Conn::open(&config).map_err(|error| {
                    tracing::warn!(error = %describe(&error), "the lease's database cannot be reached");
                }).ok();
            }
            let step = match conn.as_mut() {
                Some(c) => c.step(&me, token).map_err(Some),
                None => Err(None),
            };
            match step {
                Ok(Some(now)) if token == 0 => {
                    token = now;
                    *self.renewed.locked() = Some(sent);
                    self.fence.lead(token, &me);
                    metrics::counter!(metric::LEADER_TAKEOVERS).increment(1);
                    tracing::info!(token, "took the lead: this coordinator runs the jobs now");
                }
                Ok(Some(_)) => *self.renewed.locked() = Some(sent),
                Ok(None) if token != 0 => {
                    tracing::warn!(token, "the lease was taken by another coordinator");
                    let holder = conn.as_mut().and_then(Conn::holder);
                    self.fence.lose(token, holder);
                    token = 0;
                    conn = None;
                }
                Ok(None) => {
                    let holder = conn.as_mut().and_then(Conn::holder);
                    self.fence.set_leader(holder);
                }
                Err(error) => {
                    if let Some(error) = error {
                        tracing::warn!(error = %describe(&error), "the lease could not be read");
                    }
                    conn = None;
                    if token != 0 && self.lapsed() {
                        self.fence.lose(token, None);
                        token = 0;
                    }
                }
            }
            let pause = if token != 0 {
                RENEW_EVERY
            } else if started.elapsed() < START_WAIT {
                START_POLL
            } else {
                POLL_EVERY
            };
            std::thread::sleep(pause.saturating_sub(sent.elapsed()));
        }
    }
}

/// The lease's connection, and whether its session holds the leaders'
/// advisory lock: a session of the leader's that ends (its process killed,
/// its connection closed) frees the lock at once, and a standby that takes
/// it takes over without waiting for the lease to lapse. (The token, not
/// the lock, keeps the old leader's writes out.)
struct Conn {
    client: Client,
    locked: bool,
}

impl Conn {
    fn open(config: &Config) -> Result<Conn, postgres::Error> {
        Ok(Conn {
            client: config.connect(NoTls)?,
            locked: false,
        })
    }

    /// One renewal (`token` held) or one try to take the lease (`token`
    /// 0), which a standby may once it has lapsed, or once it holds the
    /// session lock that the leader's row says the leader held (so the
    /// leader's session has ended): the token held after it, if any.
    fn step(&mut self, me: &str, token: i64) -> Result<Option<i64>, postgres::Error> {
        if !self.locked {
            self.locked = self
                .client
                .query_one(
                    "SELECT pg_try_advisory_lock($1, $2)",
                    &[&LOCK_CLASS, &LEADER_LOCK],
                )?
                .get(0);
        }
        let ttl = LEASE_TTL.as_secs_f64();
        let row = if token != 0 {
            self.client.query_opt(
                "UPDATE leader SET expires_at = now() + make_interval(secs => $3), locked = $4
                 WHERE id = 1 AND token = $1 AND holder = $2 RETURNING token",
                &[&token, &me, &ttl, &self.locked],
            )?
        } else {
            self.client.query_opt(
                "INSERT INTO leader (id, holder, token, expires_at, locked)
                 VALUES (1, $1, 1, now() + make_interval(secs => $2), $3)
                 ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder,
                     token = leader.token + 1, expires_at = EXCLUDED.expires_at,
                     locked = EXCLUDED.locked
                 WHERE leader.expires_at < now() OR ($3 AND leader.locked)
                 RETURNING token",
                &[&me, &ttl, &self.locked],
            )?
        };
        Ok(row.map(|row| row.get(0)))
    }

    /// The lease's holder now, if it can be read.
    fn holder(&mut self) -> Option<String> {
        self.client
            .query_opt("SELECT holder FROM leader WHERE id = 1", &[])
            .ok()
            .flatten()
            .map(|row| row.get(0))
    }
}

/// Serves until SIGINT or SIGTERM: on a PostgreSQL store as one of several
/// coordinators (see the module's documentation), else as the only one.
pub async fn serve_until_signal(config: ServeConfig) -> std::io::Result<()> {
    let Some(url) = config.store_url.clone() else {
        return server::serve_until_signal(config).await;
    };
    // The schema (with the lease's table) is brought up to date first.
    drop(
        tokio::task::spawn_blocking({
            let url = url.clone();
            move || PostgresStore::open_fenced(&url, Arc::new(Fence::new()), 0)
        })
        .await
        .map_err(std::io::Error::other)?
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?,
    );
    if let Some(addr) = config.metrics_listen {
        metric::listen(addr, metric::Role::Coordinator).await?;
    }
    let fence = Arc::new(Fence::new());
    let me = config
        .advertise
        .clone()
        .unwrap_or_else(|| config.listen.to_string());
    let lease = Lease::start(&url, me.clone(), fence.clone())?;
    let mut signal = std::pin::pin!(server::shutdown_signal());
    let mut changes = fence.subscribe();
    metrics::gauge!(metric::LEADER).set(0.0);
    // Alone on the database (or after a killed predecessor), this one
    // leads at once: it listens only once it does.
    let _ = tokio::time::timeout(START_WAIT, changes.wait_for(|token| *token != 0)).await;
    loop {
        if !fence.leads() {
            metrics::gauge!(metric::LEADER).set(0.0);
            let standby = Standby::start(&config, fence.clone()).await?;
            tracing::info!(advertise = %me, "standing by: another coordinator leads, or none yet");
            let signalled = tokio::select! {
                _ = &mut signal => true,
                _ = changes.wait_for(|token| *token != 0) => false,
            };
            standby.shutdown().await;
            if signalled {
                lease.release(0);
                return Ok(());
            }
        }
        let token = fence.token();
        let leader = server::start(ServeConfig {
            fence: Some(fence.clone()),
            ..config.clone()
        })
        .await;
        let leader = match leader {
            Ok(leader) => leader,
            // Fenced while resuming the jobs: stand by again.
            Err(error) if !fence.leads() => {
                tracing::warn!(%error, "lost the lead while taking over");
                continue;
            }
            Err(error) => {
                lease.release(token);
                return Err(error);
            }
        };
        metrics::gauge!(metric::LEADER).set(1.0);
        let mut watchdog = tokio::time::interval(Duration::from_millis(200));
        let signalled = loop {
            tokio::select! {
                _ = &mut signal => break true,
                _ = changes.wait_for(|now| *now != token) => break false,
                _ = watchdog.tick() => {
                    if lease.lapsed() && fence.lose(token, None) {
                        tracing::warn!("the lease could not be renewed in time");
                    }
                }
            }
        };
        if !signalled {
            fence.lose(token, None);
            tracing::warn!(
                token,
                "stepping down: another coordinator leads; stopping every job"
            );
        }
        let result = leader.shutdown().await;
        if signalled {
            lease.release(token);
            return result.map_err(std::io::Error::other);
        }
        if let Err(error) = result {
            tracing::warn!(%error, "stopping the term as leader");
        }
    }
}

/// A standby's listeners: health (NOT_SERVING) and reflection, and
/// `NOT_LEADER` for every other call, on the API's address and the
/// workers'.
struct Standby {
    stop: Vec<oneshot::Sender<()>>,
    tasks: Vec<JoinHandle<Result<(), tonic::transport::Error>>>,
}

impl Standby {
    async fn start(config: &ServeConfig, fence: Arc<Fence>) -> std::io::Result<Standby> {
        let (health, health_service) = tonic_health::server::health_reporter();
        server::not_serving(&health).await;
        health
            .set_service_status(
                server::STORE_HEALTH,
                tonic_health::ServingStatus::NotServing,
            )
            .await;
        let mut standby = Standby {
            stop: Vec::new(),
            tasks: Vec::new(),
        };
        let mut addrs = vec![config.listen];
        addrs.extend(config.workers_at());
        for addr in addrs {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let mut builder = tonic::transport::Server::builder();
            if let Some(tls) = &config.tls {
                builder = builder
                    .tls_config(tls.config())
                    .map_err(|e| std::io::Error::other(format!("TLS: {e}")))?;
            }
            let (stop, stopped) = oneshot::channel::<()>();
            standby.stop.push(stop);
            standby.tasks.push(tokio::spawn(
                builder
                    .layer(catch_panics())
                    .layer(LeaderGateLayer::standby(fence.clone()))
                    .add_service(health_service.clone())
                    .serve_with_incoming_shutdown(incoming(listener), async move {
                        let _ = stopped.await;
                    }),
            ));
        }
        Ok(standby)
    }

    async fn shutdown(self) {
        for stop in self.stop {
            let _ = stop.send(());
        }
        for task in self.tasks {
            let _ = task.await;
        }
    }
}
