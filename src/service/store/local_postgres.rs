//! A PostgreSQL server of its own, in a temporary directory on a free
//! loopback port, for the tests of the PostgreSQL store and the benchmark
//! (`bench --service --filter durable`): `initdb` and `pg_ctl` of an
//! installed PostgreSQL (Debian's `postgresql` package, or the directory
//! of `XCCD_POSTGRES_BIN`), stopped and removed when dropped.
//!
//! PostgreSQL refuses to run as root: as root, the server runs as the
//! `postgres` user (through `runuser`), and its directory is given to it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// A running server; dropping it stops it (`pg_ctl stop -m immediate`) and
/// removes its directory.
pub struct LocalPostgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    /// The user the server runs as, when it is not this process's.
    run_as: Option<String>,
    /// Addresses it listens on besides 127.0.0.1, whose clients it trusts.
    also: Vec<std::net::IpAddr>,
}

/// The directory of `initdb` and `pg_ctl`: `XCCD_POSTGRES_BIN`, else the
/// newest `/usr/lib/postgresql/N/bin` (Debian's layout), else the PATH's.
pub fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XCCD_POSTGRES_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The uid and gid of `user`.
fn ids_of(user: &str) -> Option<(u32, u32)> {
    let name = std::ffi::CString::new(user).ok()?;
    // SAFETY: a NUL-terminated name; the result is read at once, before
    // any other call that could reuse its buffer.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    if entry.is_null() {
        return None;
    }
    // SAFETY: getpwnam returned a valid entry.
    unsafe { Some(((*entry).pw_uid, (*entry).pw_gid)) }
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl LocalPostgres {
    /// Starts a server; the error says why not (no PostgreSQL installed,
    /// no `postgres` user to run it as root, initdb or pg_ctl failing).
    pub fn start() -> Result<LocalPostgres, String> {
        LocalPostgres::start_also_at(&[])
    }

    /// Starts a server that listens on each of `also` too (an address of
    /// this machine, such as one end of a test's veth pair) and trusts the
    /// clients that come from it (from the host at the other end of a
    /// point-to-point /30, say): `pg_hba.conf` trusts `ADDR/30`.
    pub fn start_also_at(also: &[std::net::IpAddr]) -> Result<LocalPostgres, String> {
        let bin = bin_dir().ok_or(
            "no PostgreSQL found (initdb and pg_ctl: install Debian's postgresql package, or set \
             XCCD_POSTGRES_BIN to their directory)",
        )?;
        let run_as = is_root().then(|| "postgres".to_string());
        let dir = tempfile_dir()?;
        let server = LocalPostgres {
            bin,
            dir,
            port: 0,
            run_as,
            also: also.to_vec(),
        };
        if let Some(user) = &server.run_as {
            let (uid, gid) = ids_of(user).ok_or(format!(
                "running as root, and there is no `{user}` user to run PostgreSQL as"
            ))?;
            std::os::unix::fs::chown(&server.dir, Some(uid), Some(gid))
                .map_err(|e| format!("chown {}: {e}", server.dir.display()))?;
        }
        server.start_in()
    }

    fn start_in(mut self) -> Result<LocalPostgres, String> {
        let data = self.data();
        let data = data
            .to_str()
            .ok_or("a temporary directory that is not UTF-8")?;
        self.pg(
            "initdb",
            &[
                "-D",
                data,
                "-U",
                "xccd",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        )?;
        if !self.also.is_empty() {
            let hba = self.data().join("pg_hba.conf");
            let mut lines = std::fs::read_to_string(&hba)
                .map_err(|e| format!("read {}: {e}", hba.display()))?;
            for addr in &self.also {
                let bits = if addr.is_ipv4() { 30 } else { 126 };
                lines += &format!("host all all {addr}/{bits} trust\n");
            }
            std::fs::write(&hba, lines).map_err(|e| format!("write {}: {e}", hba.display()))?;
        }
        // A port found free may be taken before the server binds it: try
        // a few.
        let mut last = String::new();
        for _ in 0..4 {
            self.port = free_port().map_err(|e| format!("no free port: {e}"))?;
            match self.launch() {
                Ok(()) => return Ok(self),
                Err(error) => last = format!("{error}\n{}", self.log_tail()),
            }
        }
        Err(last)
    }

    /// `pg_ctl start` on its port, waiting until it accepts connections.
    fn launch(&self) -> Result<(), String> {
        let data = self.data();
        let mut listen = "127.0.0.1".to_string();
        for addr in &self.also {
            listen += &format!(",{addr}");
        }
        let options = format!(
            "-p {} -k {} -c listen_addresses={listen}",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("server.log");
        self.pg(
            "pg_ctl",
            &[
                "-D",
                data.to_str().expect("UTF-8, as the directory"),
                "-l",
                log.to_str().expect("UTF-8, as the directory"),
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        )
        .map(|_| ())
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Runs one of PostgreSQL's programs (as its user when root).
    fn pg(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        let path = self.bin.join(program);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(&path);
                command
            }
            None => Command::new(&path),
        };
        let output = command
            .args(args)
            .current_dir(&self.dir)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
        if !output.status.success() {
            return Err(format!(
                "{program} {} failed ({}): {}{}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(output)
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// The URL of its `postgres` database (user `xccd`, no password).
    pub fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// The URL of database `name` on it.
    pub fn url_of(&self, name: &str) -> String {
        format!("postgres://xccd@127.0.0.1:{}/{name}", self.port)
    }

    /// The URL of its `postgres` database at `host`, one of the addresses
    /// it listens on.
    pub fn url_at(&self, host: std::net::IpAddr) -> String {
        let host = match host {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        format!("postgres://xccd@{host}:{}/postgres", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its directory (the cluster is `data` in it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the server at once (as a crash would), keeping its files, and
    /// starts it again on the same port.
    pub fn restart(&self) -> Result<(), String> {
        self.stop()?;
        self.launch()
    }

    fn stop(&self) -> Result<(), String> {
        let data = self.data();
        let data = data.to_str().expect("UTF-8, as the directory");
        self.pg("pg_ctl", &["-D", data, "-m", "immediate", "-w", "stop"])
            .map(|_| ())
    }
}

/// A new directory under the system's temporary one, open to the server's
/// user (as its parent is).
fn tempfile_dir() -> Result<PathBuf, String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "xccd-postgres-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    Ok(dir)
}

impl Drop for LocalPostgres {
    fn drop(&mut self) {
        if self.port != 0 {
            let _ = self.stop();
        }
        // Give the stop a moment to let go of the files.
        for _ in 0..20 {
            if std::fs::remove_dir_all(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
