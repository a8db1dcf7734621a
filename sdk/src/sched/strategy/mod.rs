//! Scheduling strategies: which runnable thread runs at a contested
//! scheduling point (one where more than one thread could run next).
//!
//! The protocol, as the scheduler (`sched`) drives it:
//! 1. At a run's first contested point the scheduler calls [`read`], which
//!    takes the *strategy decision* (one byte: 0 direct, 1 PCT, 2 POS, 3
//!    site priorities; the higher bits tune PCT and the site strategy,
//!    which then decide their expected length and change points) and makes
//!    the strategy. The strategy
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
//! One file per strategy, as shuttle has: [`direct`], [`pct`], [`pos`],
//! [`sites`].

mod direct;
mod pct;
mod pos;
mod sites;

use crate::decision::{self, Kind, Value};
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
    let mut value = runtime::decide(Kind::Strategy, site.decision(), &mut byte, Value::Be);
    if let Some(only) = only() {
        value = value & !3 | only;
    }
    let mut strategy: Box<dyn Strategy> = match value % 4 {
        0 => Box::new(direct::Direct),
        1 => Box::new(pct::Pct::new(value, site)),
        2 => Box::new(pos::Pos::default()),
        _ => Box::new(sites::Sites::new(value, site)),
    };
    for tid in 0..threads {
        strategy.added(tid, site);
    }
    strategy
}

/// `DST_STRATEGY` (`direct`, `pct`, `pos` or `sites`), for experiments such as the
/// benchmark's ablation: every run uses that strategy whatever its
/// strategy byte says (the byte's other bits still tune it). Runs then
/// depend on the variable as well as on their input: replay with the same.
fn only() -> Option<u64> {
    static ONLY: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *ONLY.get_or_init(|| match std::env::var("DST_STRATEGY").ok()?.as_str() {
        "direct" => Some(0),
        "pct" => Some(1),
        "pos" => Some(2),
        "sites" => Some(3),
        _ => None,
    })
}

/// Where a run's priority change points fall (PCT's, and the site
/// strategy's): `count` of them, uniformly over the contested steps the
/// run expects. That length cannot be known before the run ends, and a run
/// must stay a pure function of its input, so it is itself a decision
/// ([`Kind::Steps`], which the explorer fits to the count of the run it
/// mutates); each change point is then a [`Kind::Change`] decision, a
/// fraction of it.
struct ChangePoints {
    /// Contested steps at which a change falls, ascending.
    at: Vec<u64>,
    /// Contested steps so far.
    step: u64,
}

impl ChangePoints {
    fn new(count: usize, site: Site) -> ChangePoints {
        let mut byte = [0u8; 1];
        let code = runtime::decide(Kind::Steps, site.decision(), &mut byte, Value::Be);
        let k = decision::steps_of(code as u8);
        let mut at: Vec<u64> = (0..count)
            .map(|_| {
                let mut bytes = [0u8; 2];
                let f = runtime::decide(Kind::Change, site.decision(), &mut bytes, Value::Be);
                (f * k) >> 16
            })
            .collect();
        at.sort_unstable();
        debug_assert!(at.iter().all(|&c| c < k.max(1)));
        ChangePoints { at, step: 0 }
    }

    /// How many change points fall at this contested step (then the next).
    fn due(&mut self) -> usize {
        let due = self.at.iter().take_while(|&&c| c == self.step).count();
        self.at.drain(..due);
        self.step += 1;
        due
    }
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
