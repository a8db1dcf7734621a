//! PCT, probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010):
//! random thread priorities, the highest-priority runnable thread runs, and
//! up to `depth - 1` change points, each of which puts the thread that
//! would run below every other. Here the change points are per-step
//! decisions (a run must be a pure function of its input, so it cannot
//! spread them over a length it does not know yet): each contested step is
//! one when its byte reaches a threshold, until they are used up.

use super::{Contest, Priorities, Site, Strategy};
use crate::decision::{Kind, Value};
use crate::runtime;

pub(super) struct Pct {
    priorities: Priorities,
    /// A contested step is a change point when its byte is at least this.
    threshold: u16,
    changes_left: u32,
}

impl Pct {
    /// From the strategy decision's value: 1 to 3 change points, each
    /// contested step one with probability 1/4 to 1/32 (on a random tail).
    pub(super) fn new(value: u64) -> Pct {
        Pct {
            priorities: Priorities::default(),
            threshold: 256 - (64 >> ((value >> 4) % 4)),
            changes_left: 1 + ((value >> 2) % 3) as u32,
        }
    }
}

impl Strategy for Pct {
    fn added(&mut self, tid: usize, site: Site) {
        self.priorities.add(tid, site);
    }

    fn choose(&mut self, contest: &Contest<'_>) -> usize {
        if self.changes_left > 0 {
            let mut byte = [0u8; 1];
            let b = runtime::decide(Kind::Change, contest.site.decision(), &mut byte, Value::Be);
            if b >= u64::from(self.threshold) {
                self.changes_left -= 1;
                let runs = self.priorities.highest(contest.order);
                self.priorities.demote(runs);
            }
        }
        if contest.yielding {
            self.priorities.demote(contest.me);
        }
        self.priorities.highest(contest.order)
    }
}
