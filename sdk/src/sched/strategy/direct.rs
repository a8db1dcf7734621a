//! Direct choices: each contested point reads one `below(runnable)`
//! decision, 0 keeping the nominal choice (the current thread), so a
//! shortlex-minimal input has the fewest preemptions.

use super::{Contest, Site, Strategy};
use crate::decision::Kind;

pub(super) struct Direct;

impl Strategy for Direct {
    fn added(&mut self, _tid: usize, _site: Site) {}

    fn choose(&mut self, contest: &Contest<'_>) -> usize {
        let len = contest.order.len() as u64;
        let k = crate::random::below_as(Kind::Schedule, len, contest.site.decision());
        debug_assert!(k < len);
        contest.order[k as usize]
    }
}
