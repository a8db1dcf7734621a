//! `RwLock`.

use std::ops::{Deref, DerefMut};

use super::{LockResult, PoisonError, TryLockError, TryLockResult, addr};
use crate::sched::{self, Op, Site};

/// A reader-writer lock, as `std::sync::RwLock`.
#[derive(Debug, Default)]
pub struct RwLock<T: ?Sized> {
    inner: std::sync::RwLock<T>,
}

/// Shared access to an [`RwLock`]'s value.
pub struct RwLockReadGuard<'a, T: ?Sized + 'a> {
    obj: usize,
    guard: Option<std::sync::RwLockReadGuard<'a, T>>,
    site: Site,
    controlled: bool,
}

/// Exclusive access to an [`RwLock`]'s value.
pub struct RwLockWriteGuard<'a, T: ?Sized + 'a> {
    obj: usize,
    guard: Option<std::sync::RwLockWriteGuard<'a, T>>,
    site: Site,
    controlled: bool,
}

fn map<G, W>(locked: LockResult<G>, wrap: impl FnOnce(G) -> W) -> LockResult<W> {
    match locked {
        Ok(g) => Ok(wrap(g)),
        Err(p) => Err(PoisonError::new(wrap(p.into_inner()))),
    }
}

fn map_try<G, W>(locked: TryLockResult<G>, wrap: impl FnOnce(G) -> W) -> TryLockResult<W> {
    match locked {
        Ok(g) => Ok(wrap(g)),
        Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
        Err(TryLockError::Poisoned(p)) => Err(TryLockError::Poisoned(PoisonError::new(wrap(
            p.into_inner(),
        )))),
    }
}

impl<T> RwLock<T> {
    pub const fn new(value: T) -> RwLock<T> {
        RwLock {
            inner: std::sync::RwLock::new(value),
        }
    }

    pub fn into_inner(self) -> LockResult<T> {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    #[track_caller]
    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        let (obj, site) = (addr(self), sched::here());
        let controlled = sched::acquire(obj, Op::Read, site);
        map(self.inner.read(), |g| RwLockReadGuard {
            obj,
            guard: Some(g),
            site,
            controlled,
        })
    }

    #[track_caller]
    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        let (obj, site) = (addr(self), sched::here());
        let controlled = sched::acquire(obj, Op::Lock, site);
        map(self.inner.write(), |g| RwLockWriteGuard {
            obj,
            guard: Some(g),
            site,
            controlled,
        })
    }

    #[track_caller]
    pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        let (obj, site) = (addr(self), sched::here());
        let wrap = |controlled| {
            move |g| RwLockReadGuard {
                obj,
                guard: Some(g),
                site,
                controlled,
            }
        };
        match sched::try_acquire(obj, Op::Read, site) {
            Some(false) => Err(TryLockError::WouldBlock),
            Some(true) => Ok(map(self.inner.read(), wrap(true))?),
            None => map_try(self.inner.try_read(), wrap(false)),
        }
    }

    #[track_caller]
    pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        let (obj, site) = (addr(self), sched::here());
        let wrap = |controlled| {
            move |g| RwLockWriteGuard {
                obj,
                guard: Some(g),
                site,
                controlled,
            }
        };
        match sched::try_acquire(obj, Op::Lock, site) {
            Some(false) => Err(TryLockError::WouldBlock),
            Some(true) => Ok(map(self.inner.write(), wrap(true))?),
            None => map_try(self.inner.try_write(), wrap(false)),
        }
    }

    pub fn is_poisoned(&self) -> bool {
        self.inner.is_poisoned()
    }

    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        self.inner.get_mut()
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    /// Turns exclusive access into shared access without letting a writer
    /// in between, as `std::sync::RwLockWriteGuard::downgrade`: the way to
    /// publish a value and keep reading it.
    #[track_caller]
    pub fn downgrade(mut this: RwLockWriteGuard<'a, T>) -> RwLockReadGuard<'a, T> {
        let site = sched::here();
        let std_guard = this.guard.take().expect("held until drop");
        // std's lock first: a reader the scheduler lets in next must find
        // it shared, not block the carrier on it.
        let guard = Some(std::sync::RwLockWriteGuard::downgrade(std_guard));
        if this.controlled {
            sched::downgrade(this.obj, site);
        }
        RwLockReadGuard {
            obj: this.obj,
            guard,
            site,
            controlled: this.controlled,
        }
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("held until drop")
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("held until drop")
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("held until drop")
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        if self.guard.take().is_some() && self.controlled {
            sched::release(self.obj, Op::ReadUnlock, self.site);
        }
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        if self.guard.take().is_some() && self.controlled {
            sched::release(self.obj, Op::Unlock, self.site);
        }
    }
}
