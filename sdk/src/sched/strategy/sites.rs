//! Site priorities: PCT's priorities given to program locations instead of
//! threads. Each scheduling site (the place of a lock, an atomic access, a
//! spawn...) takes a random priority the first time a contest shows it;
//! the runnable thread whose pending operation's site ranks highest runs,
//! ties going to the nominal order (the current thread first). Change
//! points and yields put a thread below every site, as PCT's do.
//!
//! Why: threads that run the same code share their sites, so a bug that
//! needs "one writer stops between its two stages while the reader runs"
//! needs an order among a handful of sites, not one thread's rank among
//! a hundred threads: its chance per run does not shrink with the number
//! of threads, where PCT's does (1 in n for the right thread on top).

use super::{ChangePoints, Contest, Site, Strategy, priority_decision};
use crate::sched::Op;

pub(super) struct Sites {
    /// Each site seen so far, by key, and its priority.
    sites: Vec<(u64, i64)>,
    /// Keys are a site and the operation there, not the site alone.
    by_op: bool,
    /// Threads put below every site (change points, yields), by id: their
    /// level (lower is later).
    demoted: Vec<Option<i64>>,
    low: i64,
    changes: ChangePoints,
}

impl Sites {
    /// From the strategy decision's value (0 to 2 change points; the top
    /// bit: keys by site and operation), then the expected length and each
    /// change point, decided at `site`.
    pub(super) fn new(value: u64, site: Site) -> Sites {
        let count = ((value >> 2) % 3) as usize;
        Sites {
            by_op: value & 0x80 != 0,
            sites: Vec::new(),
            demoted: Vec::new(),
            low: 0,
            changes: ChangePoints::new(count, site),
        }
    }

    /// The priority of `op` at `site`, decided at `at` the first time it
    /// shows. With `by_op`, a lock and the unlock of its guard (which share
    /// a site) rank apart: a thread can stop between the two, inside a
    /// loop, where one key per site would keep it going or keep it out.
    fn of_site(&mut self, site: Site, op: Op, at: Site) -> i64 {
        let key = if self.by_op {
            site.key() ^ (op as u64) << 58
        } else {
            site.key()
        };
        if let Some(&(_, priority)) = self.sites.iter().find(|(k, _)| *k == key) {
            return priority;
        }
        let priority = 1_000_000 + priority_decision(at);
        self.sites.push((key, priority));
        priority
    }

    fn demote(&mut self, tid: usize) {
        self.low -= 1;
        self.demoted[tid] = Some(self.low);
    }

    /// The runnable thread that ranks highest (the first of the order on a
    /// tie).
    fn highest(&mut self, contest: &Contest<'_>) -> usize {
        let mut best = (contest.order[0], i64::MIN);
        for &t in contest.order {
            let priority = match self.demoted[t] {
                Some(level) => level,
                None => {
                    let thread = &contest.threads[t];
                    self.of_site(thread.site, thread.op, contest.site)
                }
            };
            if priority > best.1 {
                best = (t, priority);
            }
        }
        best.0
    }
}

impl Strategy for Sites {
    fn added(&mut self, tid: usize, _site: Site) {
        debug_assert_eq!(tid, self.demoted.len(), "threads join in id order");
        self.demoted.push(None);
    }

    fn choose(&mut self, contest: &Contest<'_>) -> usize {
        for _ in 0..self.changes.due() {
            let runs = self.highest(contest);
            self.demote(runs);
        }
        if contest.yielding {
            self.demote(contest.me);
        }
        self.highest(contest)
    }
}
