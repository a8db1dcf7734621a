//! Synchronization whose interleavings are decisions: `std::sync`'s API,
//! under control.
//!
//! In a controlled run (see [`crate::thread`]) every lock, unlock, wait,
//! notify, channel operation and atomic access is a scheduling point, and
//! blocking is the scheduler's business: a thread waiting for a lock lets
//! the others run, and when every live thread waits, the run is reported as
//! a deadlock naming each thread's operation and site. Outside a controlled
//! run each type is std's own (a thin wrapper).
//!
//! Limits: atomics are sequentially consistent under control (weaker
//! orderings are not explored); data races on plain memory are not seen;
//! `Arc` is std's. Timed waits time out only when nothing else can run.

pub mod atomic;
mod barrier;
pub mod mpsc;
mod mutex;
mod once;
mod rwlock;

pub use barrier::{Barrier, BarrierWaitResult};
pub use mutex::{Condvar, Mutex, MutexGuard, WaitTimeoutResult};
pub use once::{LazyLock, Once, OnceLock, OnceState};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use std::sync::{Arc, LockResult, PoisonError, TryLockError, TryLockResult, Weak};

/// The address of a synchronization object: its identity for the scheduler.
fn addr<T: ?Sized>(object: &T) -> usize {
    object as *const T as *const u8 as usize
}
