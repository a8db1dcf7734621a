//! What a controlled run reports: the SDK's own properties (deadlock, the
//! step bound, outliving threads; [`crate::catalog::BUILTIN`]) with every
//! live thread's state as details, and the schedule's steps when a run is
//! traced (`replay`, `DST_TRACE`).

use super::{Sched, State};
use crate::{catalog, runtime};

/// Records that the run reached one of the SDK's own unreachable
/// properties ([`catalog::BUILTIN`]), with each thread's state as details.
pub(super) fn report(builtin: usize, details: &serde_json::Value) {
    runtime::__assert(&catalog::BUILTIN[builtin], true, f64::NAN, || {
        runtime::__details(details)
    });
}

/// Records step `sched.steps`: thread `next` runs, having preempted
/// `preempted` (a thread that could have gone on), if any.
pub(super) fn step(sched: &Sched, next: usize, preempted: Option<usize>) {
    let thread = &sched.threads[next];
    runtime::step_event(crate::region::Step {
        step: sched.steps,
        thread: next as u32,
        op: thread.op.name().to_string(),
        file: thread.site.file().to_string(),
        line: thread.site.line(),
        column: thread.site.column(),
        preempted: preempted.map(|t| t as u32),
    });
}

impl Sched {
    /// Each live thread and what it waits for, for a report.
    pub(super) fn describe(&self) -> serde_json::Value {
        let threads: Vec<serde_json::Value> = self
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state != State::Finished)
            .map(|(i, t)| {
                serde_json::json!({
                    "thread": i,
                    "state": if t.state == State::Blocked { "blocked" } else { "runnable" },
                    "op": t.op.name(),
                    "at": format!("{}:{}:{}", t.site.file(), t.site.line(), t.site.column()),
                })
            })
            .collect();
        serde_json::json!({ "steps": self.steps, "threads": threads })
    }
}
