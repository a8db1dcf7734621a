//! Scheduling strategies: which runnable thread runs at a contested
//! scheduling point (one where more than one thread could run next).
//!
//! The protocol, as the scheduler (`sched`) drives it:
//! 1. At a run's first contested point the scheduler calls [`read`], which
//!    takes the *strategy decision* (one byte: 0 direct, 1 PCT, 2 and 3
//!    POS; the higher bits tune PCT, which then decides its expected length
//!    and change points) and makes the strategy. The strategy
//!    is told of every thread the run has so far, in thread order, through
//!    [`Strategy::added`]; later spawns are told as they happen. A run
//!    without a contested point takes no strategy decision at all.
//! 2. At every contested point the scheduler calls [`Strategy::choose`]
//!    with the runnable threads in the order a nominal run would prefer
//!    them (the current thread first unless it yields, then the others
//!    from it in thread order, a yielding current thread last). The choice
//!    is one of them.
//! 3. Every decision a strategy takes goes through the decision stream, so
//!    the schedule is a pure function of the input; the zero bytes choose
//!    the first of the order, so the nominal input never preempts.
//!
//! One file per strategy, as shuttle has: [`direct`], [`pct`], [`pos`].

mod direct;
mod pct;
mod pos;

use crate::decision::{Kind, Value};
use crate::runtime;

use super::{Site, Thread};

/// A contested scheduling point, as a strategy sees it.
pub(super) struct Contest<'a> {
    /// The runnable threads, in nominal order (see the module docs).
    pub order: &'a [usize],
    /// The thread at the scheduling point.
    pub me: usize,
    /// Whether it yields (or sleeps): it goes last, and PCT and POS lower
    /// its priority.
    pub yielding: bool,
    pub site: Site,
    /// Every thread of the run, by id: each one's pending operation and
    /// the object it concerns (0: none) tell which threads race.
    pub threads: &'a [Thread],
}

/// A scheduling strategy; see the module docs for when each call comes.
pub(super) trait Strategy: Send {
    /// Thread `tid` (the next id) joined the run.
    fn added(&mut self, tid: usize, site: Site);

    /// The thread of `contest.order` that runs next.
    fn choose(&mut self, contest: &Contest<'_>) -> usize;
}

/// Takes the strategy decision at `site` and makes that strategy, told of
/// the run's `threads` threads so far.
pub(super) fn read(site: Site, threads: usize) -> Box<dyn Strategy> {
    let mut byte = [0u8; 1];
    let value = runtime::decide(Kind::Strategy, site.decision(), &mut byte, Value::Be);
    let mut strategy: Box<dyn Strategy> = match value % 4 {
        0 => Box::new(direct::Direct),
        1 => Box::new(pct::Pct::new(value, site)),
        _ => Box::new(pos::Pos::default()),
    };
    for tid in 0..threads {
        strategy.added(tid, site);
    }
    strategy
}

/// A priority decision (two bytes, big-endian).
fn priority_decision(site: Site) -> i64 {
    let mut bytes = [0u8; 2];
    runtime::decide(Kind::Priority, site.decision(), &mut bytes, Value::Be) as i64
}

/// Thread priorities, shared by the priority-based strategies (PCT, POS):
/// the runnable thread with the highest runs; the first of the order wins
/// a tie.
#[derive(Default)]
struct Priorities {
    of: Vec<i64>,
    /// The next demoted priority (change points, yields): below every
    /// priority given so far.
    low: i64,
}

impl Priorities {
    /// A thread joins with a random priority above every demoted one.
    fn add(&mut self, tid: usize, site: Site) {
        debug_assert_eq!(tid, self.of.len(), "threads join in id order");
        self.of.push(1_000_000 + priority_decision(site));
    }

    /// Puts `tid` below every thread.
    fn demote(&mut self, tid: usize) {
        self.low -= 1;
        self.of[tid] = self.low;
    }

    fn highest(&self, order: &[usize]) -> usize {
        debug_assert!(!order.is_empty());
        let mut best = order[0];
        for &t in &order[1..] {
            if self.of[t] > self.of[best] {
                best = t;
            }
        }
        best
    }
}
