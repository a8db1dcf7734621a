//! `Mutex` and `Condvar`.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use super::{LockResult, PoisonError, TryLockError, TryLockResult, addr};
use crate::sched::{self, Op, Site};

/// A mutual exclusion lock, as `std::sync::Mutex`.
#[derive(Debug, Default)]
pub struct Mutex<T: ?Sized> {
    inner: std::sync::Mutex<T>,
}

/// The guard of a locked [`Mutex`]; unlocking (dropping it) is a
/// scheduling point under control.
pub struct MutexGuard<'a, T: ?Sized + 'a> {
    mutex: &'a Mutex<T>,
    guard: Option<std::sync::MutexGuard<'a, T>>,
    site: Site,
    controlled: bool,
}

impl<T> Mutex<T> {
    pub const fn new(value: T) -> Mutex<T> {
        Mutex {
            inner: std::sync::Mutex::new(value),
        }
    }

    pub fn into_inner(self) -> LockResult<T> {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, blocking while another thread holds the lock.
    #[track_caller]
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        let site = sched::here();
        let controlled = sched::acquire(addr(self), Op::Lock, site);
        self.guard(self.inner.lock(), site, controlled)
    }

    /// Locks if the lock is free.
    #[track_caller]
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        let site = sched::here();
        match sched::try_acquire(addr(self), Op::Lock, site) {
            Some(false) => Err(TryLockError::WouldBlock),
            Some(true) => Ok(self.guard(self.inner.lock(), site, true)?),
            None => match self.inner.try_lock() {
                Ok(guard) => Ok(self.wrap(guard, site, false)),
                Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
                Err(TryLockError::Poisoned(p)) => Err(TryLockError::Poisoned(PoisonError::new(
                    self.wrap(p.into_inner(), site, false),
                ))),
            },
        }
    }

    fn wrap<'a>(
        &'a self,
        guard: std::sync::MutexGuard<'a, T>,
        site: Site,
        controlled: bool,
    ) -> MutexGuard<'a, T> {
        MutexGuard {
            mutex: self,
            guard: Some(guard),
            site,
            controlled,
        }
    }

    fn guard<'a>(
        &'a self,
        locked: LockResult<std::sync::MutexGuard<'a, T>>,
        site: Site,
        controlled: bool,
    ) -> LockResult<MutexGuard<'a, T>> {
        match locked {
            Ok(guard) => Ok(self.wrap(guard, site, controlled)),
            Err(p) => Err(PoisonError::new(self.wrap(
                p.into_inner(),
                site,
                controlled,
            ))),
        }
    }

    pub fn is_poisoned(&self) -> bool {
        self.inner.is_poisoned()
    }

    pub fn clear_poison(&self) {
        self.inner.clear_poison()
    }

    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        self.inner.get_mut()
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Self {
        Mutex::new(value)
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("held until drop")
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("held until drop")
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        if self.guard.take().is_some() && self.controlled {
            sched::release(addr(self.mutex), Op::Unlock, self.site);
        }
    }
}

/// Whether a timed wait timed out, as `std::sync::WaitTimeoutResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

/// A condition variable, as `std::sync::Condvar`. Under control a wait
/// blocks until a notify or a *spurious wakeup*, which is a decision (as
/// std allows them, programs must check their condition in a loop:
/// `wait_while` does), and a timed wait times out only when no other
/// thread can run.
#[derive(Debug, Default)]
pub struct Condvar {
    inner: std::sync::Condvar,
}

impl Condvar {
    pub const fn new() -> Condvar {
        Condvar {
            inner: std::sync::Condvar::new(),
        }
    }

    #[track_caller]
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        let site = sched::here();
        self.wait_inner(guard, None, site)
            .map(|(g, _)| g)
            .map_err(|p| PoisonError::new(p.into_inner().0))
    }

    #[track_caller]
    pub fn wait_while<'a, T, F: FnMut(&mut T) -> bool>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> LockResult<MutexGuard<'a, T>> {
        let site = sched::here();
        while condition(&mut *guard) {
            guard = match self.wait_inner(guard, None, site) {
                Ok((g, _)) => g,
                Err(p) => return Err(PoisonError::new(p.into_inner().0)),
            };
        }
        Ok(guard)
    }

    #[track_caller]
    pub fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        self.wait_inner(guard, Some(timeout), sched::here())
    }

    #[track_caller]
    pub fn wait_timeout_while<'a, T, F: FnMut(&mut T) -> bool>(
        &self,
        mut guard: MutexGuard<'a, T>,
        timeout: Duration,
        mut condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let site = sched::here();
        let start = std::time::Instant::now();
        while condition(&mut *guard) {
            let left = timeout.saturating_sub(start.elapsed());
            let (g, result) = self.wait_inner(guard, Some(left), site)?;
            guard = g;
            if result.timed_out() {
                let still = condition(&mut *guard);
                return Ok((guard, WaitTimeoutResult(still)));
            }
        }
        Ok((guard, WaitTimeoutResult(false)))
    }

    fn wait_inner<'a, T>(
        &self,
        mut guard: MutexGuard<'a, T>,
        timeout: Option<Duration>,
        site: Site,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let mutex = guard.mutex;
        let std_guard = guard.guard.take().expect("held until drop");
        if guard.controlled {
            drop(std_guard);
            let timed_out =
                sched::wait(addr(self), addr(mutex), timeout.is_some(), site).unwrap_or(false);
            let relocked = mutex.inner.lock();
            let poisoned = relocked.is_err();
            guard.guard = Some(relocked.unwrap_or_else(|p| p.into_inner()));
            let result = (guard, WaitTimeoutResult(timed_out));
            return if poisoned {
                Err(PoisonError::new(result))
            } else {
                Ok(result)
            };
        }
        let (std_guard, timed_out, poisoned) = match timeout {
            None => match self.inner.wait(std_guard) {
                Ok(g) => (g, false, false),
                Err(p) => (p.into_inner(), false, true),
            },
            Some(timeout) => match self.inner.wait_timeout(std_guard, timeout) {
                Ok((g, r)) => (g, r.timed_out(), false),
                Err(p) => {
                    let (g, r) = p.into_inner();
                    (g, r.timed_out(), true)
                }
            },
        };
        guard.guard = Some(std_guard);
        let result = (guard, WaitTimeoutResult(timed_out));
        if poisoned {
            Err(PoisonError::new(result))
        } else {
            Ok(result)
        }
    }

    #[track_caller]
    pub fn notify_one(&self) {
        if !sched::notify(addr(self), false, sched::here()) {
            self.inner.notify_one();
        }
    }

    #[track_caller]
    pub fn notify_all(&self) {
        if !sched::notify(addr(self), true, sched::here()) {
            self.inner.notify_all();
        }
    }
}
