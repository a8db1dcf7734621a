//! The corpus scheduler a client uses: LibAFL's queue scheduler (the
//! default), or, for the comparison in docs/benchmarks.md, its weighted
//! scheduler inside its minimizer with one of AFL++'s power schedules and
//! [`WeighStage`] in place of the calibration stage it needs:
//! `DST_SCHEDULER=weighted|fast|explore|coe` (`weighted`: corpus weights
//! without a power schedule). An experiment knob: a campaign's search then
//! depends on it, and does not repeat exactly.

use std::time::Duration;

use libafl::corpus::{CorpusId, SchedulerTestcaseMetadata};
use libafl::feedbacks::MapIndexesMetadata;
use libafl::schedulers::SchedulerMetadata;
use libafl::stages::Stage;
use libafl::state::HasCurrentTestcase;
use libafl::{Error, HasMetadata};

use super::State;
use libafl::schedulers::powersched::{BaseSchedule, PowerSchedule};
use libafl::schedulers::{QueueScheduler, Scheduler};
use libafl_bolts::tuples::MatchName;

/// A scheduler chosen when the client starts: the queue, or `W` (LibAFL's
/// weighted scheduler inside its minimizer, which keeps the favoured
/// entries its weights need).
pub(crate) enum Sched<W> {
    Queue(QueueScheduler),
    Weighted(W),
}

/// What `DST_SCHEDULER` asks for: `None` for the queue scheduler (the
/// default), else the weighted scheduler with this power schedule (or
/// none). The weighted scheduler found some of the examples' bugs in fewer
/// executions and some in more (docs/benchmarks.md), and its minimizer
/// walks a randomly seeded hash map, so a campaign with a fixed seed would
/// no longer repeat: the queue stays the default.
pub(crate) fn weighted() -> Option<Option<PowerSchedule>> {
    match std::env::var("DST_SCHEDULER").as_deref() {
        Ok("weighted") => Some(None),
        Ok("fast") => Some(Some(PowerSchedule::new(BaseSchedule::FAST))),
        Ok("explore") => Some(Some(PowerSchedule::new(BaseSchedule::EXPLORE))),
        Ok("coe") => Some(Some(PowerSchedule::new(BaseSchedule::COE))),
        _ => None,
    }
}

impl<W, I, S> Scheduler<I, S> for Sched<W>
where
    QueueScheduler: Scheduler<I, S>,
    W: Scheduler<I, S>,
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

/// What the weighted scheduler knows of a new corpus entry, measured
/// without a clock, in place of LibAFL's calibration stage (which runs the
/// entry 4 to 8 times and weighs it by the time taken): its "time" is its
/// length (the decisions it carries; 100 ns a byte, over 1 us), its map
/// size the decision-map entries it was kept for. So a campaign with a
/// fixed seed repeats, and a target that takes no decision is no error.
pub(crate) struct WeighStage;

/// The time an entry of `len` bytes stands for.
fn cost(len: usize) -> Duration {
    Duration::from_nanos(1_000 + 100 * len as u64)
}

impl<E, EM, Z> Stage<E, EM, State, Z> for WeighStage {
    fn perform(
        &mut self,
        _fuzzer: &mut Z,
        _executor: &mut E,
        state: &mut State,
        _manager: &mut EM,
    ) -> Result<(), Error> {
        if !state.has_metadata::<SchedulerMetadata>() {
            return Ok(());
        }
        let (time, bitmap, weighed) = {
            let testcase = state.current_testcase()?;
            let len = testcase.input().as_ref().map_or(0, |i| i.as_ref().len());
            let bitmap = testcase
                .metadata::<MapIndexesMetadata>()
                .map_or(1, |m| m.list.len().max(1)) as u64;
            let weighed = testcase
                .metadata::<SchedulerTestcaseMetadata>()
                .is_ok_and(|m| m.cycle_and_time().1 > 0);
            (cost(len), bitmap, weighed)
        };
        if weighed {
            return Ok(());
        }
        let psmeta = state.metadata_mut::<SchedulerMetadata>()?;
        let handicap = psmeta.queue_cycles();
        psmeta.set_exec_time(psmeta.exec_time() + time);
        psmeta.set_cycles(psmeta.cycles() + 1);
        psmeta.set_bitmap_size(psmeta.bitmap_size() + bitmap);
        psmeta.set_bitmap_size_log(psmeta.bitmap_size_log() + (bitmap as f64).log2());
        psmeta.set_bitmap_entries(psmeta.bitmap_entries() + 1);
        let mut testcase = state.current_testcase_mut()?;
        testcase.set_exec_time(time);
        if testcase.metadata::<SchedulerTestcaseMetadata>().is_err() {
            testcase.add_metadata(SchedulerTestcaseMetadata::new(0));
        }
        let data = testcase.metadata_mut::<SchedulerTestcaseMetadata>()?;
        data.set_cycle_and_time((time, 1));
        data.set_bitmap_size(bitmap);
        data.set_handicap(handicap);
        Ok(())
    }
}

super::always_restartable!(WeighStage);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longer_entries_cost_more() {
        assert!(cost(0) > Duration::ZERO);
        assert!(cost(100) > cost(10));
    }
}
