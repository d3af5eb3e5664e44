//! Locks that survive a panic.
//!
//! A panic while a lock is held poisons a `std` mutex, and every later
//! `lock().unwrap()` would panic too: one bug would take the whole service
//! down. The state these locks guard is kept consistent at every point a
//! panic can happen (each update is a few assignments), so the service
//! takes the lock anyway and goes on; the run that panicked reports itself
//! as failed (see [`crate::run::run_task`]).

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

pub(crate) trait Locked<T> {
    /// The lock, poisoned or not.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Waits on `condvar` for at most `timeout`, poisoned or not.
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    match condvar.wait_timeout(guard, timeout) {
        Ok((guard, _)) => guard,
        Err(poisoned) => poisoned.into_inner().0,
    }
}
