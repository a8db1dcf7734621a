//! `Barrier`, built on the controlled [`Mutex`] and [`Condvar`].

use super::{Condvar, Mutex};

/// A barrier for `n` threads, as `std::sync::Barrier`.
#[derive(Debug)]
pub struct Barrier {
    n: usize,
    state: Mutex<(usize, u64)>,
    cv: Condvar,
}

/// Whether this thread was the barrier's leader (the last to arrive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierWaitResult(bool);

impl BarrierWaitResult {
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

impl Barrier {
    pub const fn new(n: usize) -> Barrier {
        Barrier {
            n,
            state: Mutex::new((0, 0)),
            cv: Condvar::new(),
        }
    }

    #[track_caller]
    pub fn wait(&self) -> BarrierWaitResult {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let generation = state.1;
        state.0 += 1;
        if state.0 < self.n {
            while state.1 == generation {
                state = self.cv.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            BarrierWaitResult(false)
        } else {
            state.0 = 0;
            state.1 += 1;
            self.cv.notify_all();
            BarrierWaitResult(true)
        }
    }
}
