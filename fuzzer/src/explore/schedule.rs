//! The corpus scheduler a client uses: LibAFL's queue scheduler (the
//! default), or its weighted scheduler with one of AFL++'s power schedules
//! and the calibration stage it needs, for the comparison in
//! docs/benchmarks.md. `DST_SCHEDULER=queue|weighted|fast|explore|coe`
//! picks one (`weighted`: corpus weights without a power schedule): an
//! experiment knob (a campaign's search then depends on it).

use libafl::Error;
use libafl::corpus::CorpusId;
use libafl::schedulers::powersched::{BaseSchedule, PowerSchedule};
use libafl::schedulers::{QueueScheduler, Scheduler, StdWeightedScheduler};
use libafl_bolts::tuples::MatchName;

/// A scheduler chosen when the client starts.
pub(crate) enum Sched<C, O> {
    Queue(QueueScheduler),
    Weighted(StdWeightedScheduler<C, O>),
}

/// What `DST_SCHEDULER` asks for: `None` for the queue scheduler, else
/// the weighted scheduler with this power schedule (or none).
pub(crate) fn weighted() -> Option<Option<PowerSchedule>> {
    match std::env::var("DST_SCHEDULER").as_deref() {
        Ok("weighted") => Some(None),
        Ok("fast") => Some(Some(PowerSchedule::new(BaseSchedule::FAST))),
        Ok("explore") => Some(Some(PowerSchedule::new(BaseSchedule::EXPLORE))),
        Ok("coe") => Some(Some(PowerSchedule::new(BaseSchedule::COE))),
        _ => None,
    }
}

impl<C, O, I, S> Scheduler<I, S> for Sched<C, O>
where
    QueueScheduler: Scheduler<I, S>,
    StdWeightedScheduler<C, O>: Scheduler<I, S>,
{
    fn on_add(&mut self, state: &mut S, id: CorpusId) -> Result<(), Error> {
        match self {
            Sched::Queue(s) => s.on_add(state, id),
            Sched::Weighted(s) => s.on_add(state, id),
        }
    }

    fn on_evaluation<OT: MatchName>(
        &mut self,
        state: &mut S,
        input: &I,
        observers: &OT,
    ) -> Result<(), Error> {
        match self {
            Sched::Queue(s) => s.on_evaluation(state, input, observers),
            Sched::Weighted(s) => s.on_evaluation(state, input, observers),
        }
    }

    fn next(&mut self, state: &mut S) -> Result<CorpusId, Error> {
        match self {
            Sched::Queue(s) => s.next(state),
            Sched::Weighted(s) => s.next(state),
        }
    }

    fn set_current_scheduled(
        &mut self,
        state: &mut S,
        next_id: Option<CorpusId>,
    ) -> Result<(), Error> {
        match self {
            Sched::Queue(s) => s.set_current_scheduled(state, next_id),
            Sched::Weighted(s) => s.set_current_scheduled(state, next_id),
        }
    }
}
