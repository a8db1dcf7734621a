//! Threads whose schedule is a decision: `std::thread`'s API, under control.
//!
//! In a controlled run (an explorer is attached, or local mode replays
//! `DST_INPUT` / `DST_SEED`), one thread runs at a time and spawn, join,
//! [`yield_now`] and [`sleep`] are scheduling points (see
//! [`crate::sync`] for the rest). Otherwise these are std's own functions.
//! Threads spawned with `std::thread` are not controlled; use these.
//!
//! ```
//! use std::sync::Arc;
//! use dst::sync::atomic::{AtomicU64, Ordering};
//!
//! let hits = Arc::new(AtomicU64::new(0));
//! let handles: Vec<_> = (0..2)
//!     .map(|_| {
//!         let hits = Arc::clone(&hits);
//!         dst::thread::spawn(move || {
//!             let seen = hits.load(Ordering::SeqCst);
//!             hits.store(seen + 1, Ordering::SeqCst); // a racy increment
//!         })
//!     })
//!     .collect();
//! for handle in handles {
//!     handle.join().unwrap();
//! }
//! dst::assert_sometimes!(hits.load(Ordering::SeqCst) == 1, "an increment is lost");
//! ```

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::time::Duration;

pub use std::thread::{Result, Thread, ThreadId, current, panicking};

use crate::sched::{self, Op, ThreadKey};
pub use crate::sched::{Abandoned, DEFAULT_MAX_STEPS, finish, run_body};

/// Whether the calling thread is a thread of a controlled run (for panic
/// hooks that tell a target's panics from the controller's own).
pub fn is_controlled() -> bool {
    sched::is_controlled()
}

/// An owned permission to join a thread, as `std::thread::JoinHandle`.
pub struct JoinHandle<T> {
    inner: std::thread::JoinHandle<T>,
    key: Option<ThreadKey>,
}

impl<T> JoinHandle<T> {
    /// Waits for the thread to finish (a scheduling point under control).
    #[track_caller]
    pub fn join(self) -> Result<T> {
        if let Some(key) = self.key {
            sched::join(key, sched::here());
        }
        self.inner.join()
    }

    pub fn thread(&self) -> &Thread {
        self.inner.thread()
    }

    pub fn is_finished(&self) -> bool {
        match self.key {
            Some(key) => sched::is_finished(key),
            None => self.inner.is_finished(),
        }
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle").finish_non_exhaustive()
    }
}

/// Thread configuration, as `std::thread::Builder`.
#[derive(Debug)]
pub struct Builder {
    inner: std::thread::Builder,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    pub fn new() -> Builder {
        Builder {
            inner: std::thread::Builder::new(),
        }
    }

    pub fn name(self, name: String) -> Builder {
        Builder {
            inner: self.inner.name(name),
        }
    }

    pub fn stack_size(self, size: usize) -> Builder {
        Builder {
            inner: self.inner.stack_size(size),
        }
    }

    /// Spawns a thread; under control it runs when the schedule picks it,
    /// and the spawn is a scheduling point (nominally the caller goes on).
    #[track_caller]
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let site = sched::here();
        let Some(key) = sched::spawn_begin(site, true) else {
            return Ok(JoinHandle {
                inner: self.inner.spawn(f)?,
                key: None,
            });
        };
        let spawned = self.inner.spawn(move || {
            let _exit = sched::thread_start(key);
            match catch_unwind(AssertUnwindSafe(f)) {
                Ok(value) => value,
                Err(payload) => resume_unwind(payload),
            }
        });
        let inner = match spawned {
            Ok(inner) => inner,
            Err(err) => {
                sched::spawn_failed(key);
                return Err(err);
            }
        };
        sched::point(Op::Spawn, 0, site);
        Ok(JoinHandle {
            inner,
            key: Some(key),
        })
    }
}

/// Spawns a thread, as `std::thread::spawn`.
#[track_caller]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().spawn(f).expect("failed to spawn thread")
}

/// Gives other threads a turn: under control, a scheduling point whose
/// nominal choice is the next runnable thread.
#[track_caller]
pub fn yield_now() {
    if !sched::point(Op::Yield, 0, sched::here()) {
        std::thread::yield_now();
    }
}

/// Sleeps; under control (no virtual time yet) it is a yield: other
/// threads run first, and no real time passes.
#[track_caller]
pub fn sleep(duration: Duration) {
    if !sched::point(Op::Sleep, 0, sched::here()) {
        std::thread::sleep(duration);
    }
}
