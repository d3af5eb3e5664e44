//! The memory searches may take on this machine: the limits (one run, all
//! concurrent runs of the server), their defaults read from the machine,
//! and the budget jobs are charged against while they run (issue 24,
//! point 1). What a search needs is [`crate::xcc::memory::bound`], known
//! before it starts; a job that would pass a limit is refused before it
//! allocates, so no request can make the process abort.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes kept out of the budget for each thread of the process (its stack,
/// the allocator's arena, the buffers of the calls it serves).
pub const THREAD_RESERVE: u64 = 64 << 20;

/// The limits on the memory of searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimits {
    /// Most bytes one run (one solver, on one thread) may take.
    pub per_run: u64,
    /// Most bytes all the server's concurrent runs may take together.
    pub total: u64,
}

impl Default for MemoryLimits {
    /// No limit: what tests and library callers get unless they ask.
    fn default() -> Self {
        MemoryLimits {
            per_run: u64::MAX,
            total: u64::MAX,
        }
    }
}

impl MemoryLimits {
    /// The default for a process with `threads` threads on this machine:
    /// half of what it may use (the least of the machine's memory, its
    /// cgroup's limit and its address-space limit), less
    /// [`THREAD_RESERVE`] a thread; a run may take all of it.
    pub fn for_machine(threads: usize) -> MemoryLimits {
        let available = machine_memory();
        let reserve = THREAD_RESERVE.saturating_mul(threads as u64);
        let total = (available / 2).saturating_sub(reserve).max(16 << 20);
        MemoryLimits {
            per_run: total,
            total,
        }
    }
}

/// The least of the machine's memory (`MemTotal`), the cgroup's
/// `memory.max` and `RLIMIT_AS`, in bytes; what is not known does not
/// count (and if none is, 4 GiB).
pub fn machine_memory() -> u64 {
    let mut least = u64::MAX;
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        if let Some(kib) = text
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        {
            least = least.min(kib.saturating_mul(1024));
        }
    }
    for path in [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ] {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(bytes) = text.trim().parse::<u64>() {
                least = least.min(bytes);
            }
        }
    }
    least = least.min(address_space_limit());
    if least == u64::MAX {
        4 << 30
    } else {
        least
    }
}

/// The soft `RLIMIT_AS` of this process (`u64::MAX` when unlimited).
fn address_space_limit() -> u64 {
    // `prlimit --as` and a shell's `ulimit -v` set it; /proc shows it
    // without a libc call.
    let Ok(text) = std::fs::read_to_string("/proc/self/limits") else {
        return u64::MAX;
    };
    text.lines()
        .find(|l| l.starts_with("Max address space"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|soft| soft.parse::<u64>().ok())
        .unwrap_or(u64::MAX)
}

/// Parses a size: bytes, or with a suffix K, M, G, T (powers of 1024; an
/// `i`/`iB`/`B` after it is allowed).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .or_else(|| t.strip_suffix('i'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 10),
        Some('M') => (&t[..t.len() - 1], 20),
        Some('G') => (&t[..t.len() - 1], 30),
        Some('T') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let value: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a size (bytes, or a number with K, M, G or T)"))?;
    value
        .checked_mul(1u64 << shift)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("'{text}' is not a size between 1 byte and 16 EiB"))
}

/// The bytes all running jobs are charged, against the server's limit.
#[derive(Debug)]
pub struct Budget {
    total: u64,
    used: Arc<AtomicU64>,
}

/// What a job is charged while it runs; dropping it gives the bytes back.
#[derive(Debug)]
pub struct Charge {
    bytes: u64,
    used: Arc<AtomicU64>,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.used.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

impl Budget {
    pub fn new(total: u64) -> Budget {
        Budget {
            total,
            used: Arc::new(AtomicU64::new(0)),
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }

    /// Charges `bytes` if they are free; else how many are.
    pub fn charge(&self, bytes: u64) -> Result<Charge, u64> {
        let mut used = self.used.load(Ordering::SeqCst);
        loop {
            let free = self.total.saturating_sub(used);
            if bytes > free {
                return Err(free);
            }
            match self
                .used
                .compare_exchange(used, used + bytes, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    return Ok(Charge {
                        bytes,
                        used: self.used.clone(),
                    })
                }
                Err(now) => used = now,
            }
        }
    }

    /// Charges `bytes` whatever is free (a job resumed after a restart,
    /// which runs again whatever the limits).
    pub fn force(&self, bytes: u64) -> Charge {
        self.used.fetch_add(bytes, Ordering::SeqCst);
        Charge {
            bytes,
            used: self.used.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert!(parse_size("1.5G").is_err());
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("3k"), Ok(3 << 10));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn a_budget_refuses_past_its_total_and_gets_charges_back() {
        let budget = Budget::new(100);
        let a = budget.charge(60).unwrap();
        assert_eq!(budget.charge(50).unwrap_err(), 40);
        drop(a);
        let b = budget.charge(100).unwrap();
        assert_eq!(budget.used(), 100);
        drop(b);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn the_machine_has_some_memory() {
        let limits = MemoryLimits::for_machine(4);
        assert!(limits.total >= 16 << 20 && limits.per_run == limits.total);
    }
}
