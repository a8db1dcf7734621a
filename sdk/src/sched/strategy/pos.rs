//! POS, partial order sampling (Yuan et al., CAV 2018): random thread
//! priorities, the highest-priority runnable thread runs, and after each
//! step fresh priorities for the thread that ran and for the threads whose
//! pending operation races with its (same object, one of them a write).
//!
//! A thread joins above every redrawn priority (`Priorities::add` puts it
//! past 1,000,000, a redraw is two bytes), so threads that have not run yet
//! go before those that have: on the nominal input (all priorities zero)
//! that is a fair turn-taking, which finds SCTBench's account and lazy01
//! (a checker started first must run last) in the first run.

use super::{Contest, Priorities, Site, Strategy, priority_decision};

#[derive(Default)]
pub(super) struct Pos {
    priorities: Priorities,
}

impl Strategy for Pos {
    fn added(&mut self, tid: usize, site: Site) {
        self.priorities.add(tid, site);
    }

    fn choose(&mut self, contest: &Contest<'_>) -> usize {
        if contest.yielding {
            self.priorities.demote(contest.me);
        }
        let chosen = self.priorities.highest(contest.order);
        let (op, obj) = (contest.threads[chosen].op, contest.threads[chosen].obj);
        self.priorities.of[chosen] = priority_decision(contest.site);
        for &t in contest.order {
            let other = &contest.threads[t];
            if t != chosen && obj != 0 && other.obj == obj && (op.writes() || other.op.writes()) {
                self.priorities.of[t] = priority_decision(contest.site);
            }
        }
        chosen
    }
}
