//! PCT, probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010):
//! random thread priorities, the highest-priority runnable thread runs, and
//! `depth - 1` change points, each of which puts the thread that would run
//! below every other. As the algorithm assumes, the change points fall
//! uniformly over the run's length `k` (its contested steps): the run
//! cannot know `k` before it ends and must stay a pure function of its
//! input, so `k` is itself a decision ([`Kind::Steps`]), which the explorer
//! sets to the count of the run it mutates (`Header::contested`); on a
//! random tail it is log-uniform. Each change point is then a
//! [`Kind::Change`] decision: a fraction of `k`.

use super::{Contest, Priorities, Site, Strategy};
use crate::decision::{self, Kind, Value};
use crate::runtime;

pub(super) struct Pct {
    priorities: Priorities,
    /// Contested steps at which priorities change, ascending.
    changes: Vec<u64>,
    /// Contested steps so far.
    step: u64,
}

impl Pct {
    /// From the strategy decision's value (1 to 3 change points), then the
    /// expected length and each change point, decided at `site`.
    pub(super) fn new(value: u64, site: Site) -> Pct {
        let count = 1 + ((value >> 2) % 3) as usize;
        let mut byte = [0u8; 1];
        let code = runtime::decide(Kind::Steps, site.decision(), &mut byte, Value::Be);
        let k = decision::steps_of(code as u8);
        let mut changes: Vec<u64> = (0..count)
            .map(|_| {
                let mut bytes = [0u8; 2];
                let at = runtime::decide(Kind::Change, site.decision(), &mut bytes, Value::Be);
                (at * k) >> 16
            })
            .collect();
        changes.sort_unstable();
        debug_assert!(changes.iter().all(|&c| c < k.max(1)));
        Pct {
            priorities: Priorities::default(),
            changes,
            step: 0,
        }
    }
}

impl Strategy for Pct {
    fn added(&mut self, tid: usize, site: Site) {
        self.priorities.add(tid, site);
    }

    fn choose(&mut self, contest: &Contest<'_>) -> usize {
        while self.changes.first() == Some(&self.step) {
            self.changes.remove(0);
            let runs = self.priorities.highest(contest.order);
            self.priorities.demote(runs);
        }
        self.step += 1;
        if contest.yielding {
            self.priorities.demote(contest.me);
        }
        self.priorities.highest(contest.order)
    }
}
