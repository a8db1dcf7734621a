//! PCT, probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010):
//! random thread priorities, the highest-priority runnable thread runs, and
//! `depth - 1` change points, each of which puts the thread that would run
//! below every other. The change points ([`ChangePoints`], shared with the
//! site strategy) fall uniformly over the run's length, as the algorithm
//! assumes.

use super::{ChangePoints, Contest, Priorities, Site, Strategy};

pub(super) struct Pct {
    priorities: Priorities,
    changes: ChangePoints,
}

impl Pct {
    /// From the strategy decision's value (1 to 3 change points), then the
    /// expected length and each change point, decided at `site`.
    pub(super) fn new(value: u64, site: Site) -> Pct {
        let count = 1 + ((value >> 2) % 3) as usize;
        Pct {
            priorities: Priorities::default(),
            changes: ChangePoints::new(count, site),
        }
    }
}

impl Strategy for Pct {
    fn added(&mut self, tid: usize, site: Site) {
        self.priorities.add(tid, site);
    }

    fn choose(&mut self, contest: &Contest<'_>) -> usize {
        for _ in 0..self.changes.due() {
            let runs = self.priorities.highest(contest.order);
            self.priorities.demote(runs);
        }
        if contest.yielding {
            self.priorities.demote(contest.me);
        }
        self.priorities.highest(contest.order)
    }
}
