//! What the explorer runs: a target at some level, behind one trait, so the
//! same LibAFL loop explores a closure in this process ([`InProcessSubject`])
//! and another program over shared memory ([`ProcessSubject`]).

use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::region::RegionRef;
use dst_executors::{Executor, Forking, InProcess, Process, RunRecord, Runner};
use dst_kernel::{Outcome, Signature};

use crate::findings;

/// Shrinking budget for findings whose every candidate may cost a timeout
/// or a fork.
pub const SLOW_SHRINK_BUDGET: u64 = 100;

/// A target as the explorer sees it.
pub trait Subject: 'static {
    /// Runs one input; returns the crash, if any, and whether the run timed
    /// out. The rest of the outcome is in [`Subject::view`].
    fn execute(&mut self, input: &[u8]) -> (Option<Outcome>, bool);
    /// The region of the last run.
    fn view(&self) -> RegionRef<'_>;
    fn catalog(&self) -> Vec<SiteInfo>;
    /// The map observed as edge coverage.
    fn edges(&self) -> (*mut u8, usize);
    /// The map observed as decision coverage.
    fn decisions(&self) -> (*mut u8, usize);
    /// The time limit LibAFL's executor enforces around one run: the run's
    /// own limit for a closure in this process; more for a subject that
    /// enforces the limit itself (and reports a timeout as a result).
    fn harness_timeout(&self, timeout: Duration) -> Duration {
        timeout
    }
    /// Calls `f` with an executor fit to replay and shrink a finding with
    /// `signature`, and a cap on its shrinking budget.
    fn with_replayer(
        &mut self,
        signature: Option<&Signature>,
        f: &mut dyn FnMut(&mut dyn Executor, u64),
    );
}

/// A `&mut dyn Executor` as an [`Executor`] value.
pub struct Dyn<'a>(pub &'a mut dyn Executor);

impl Runner for Dyn<'_> {
    fn run(&mut self, input: &[u8]) -> RunRecord {
        self.0.run(input)
    }
}

impl Executor for Dyn<'_> {
    fn catalog(&self) -> Vec<SiteInfo> {
        self.0.catalog()
    }

    fn set_flags(&mut self, flags: u64) {
        self.0.set_flags(flags);
    }

    fn timeout(&self) -> Option<Duration> {
        self.0.timeout()
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.0.set_timeout(timeout);
    }
}

/// A closure using the SDK, run in this process; findings that crash the
/// process or hang are replayed in forked children.
pub struct InProcessSubject<F: FnMut() + 'static> {
    exec: InProcess<F>,
    timeout: Duration,
}

impl<F: FnMut() + 'static> InProcessSubject<F> {
    pub fn new(target: F, timeout: Duration) -> Self {
        InProcessSubject {
            exec: InProcess::new(target),
            timeout,
        }
    }
}

impl<F: FnMut() + 'static> Subject for InProcessSubject<F> {
    fn execute(&mut self, input: &[u8]) -> (Option<Outcome>, bool) {
        (self.exec.run_raw(input), false)
    }

    fn view(&self) -> RegionRef<'_> {
        self.exec.view()
    }

    fn catalog(&self) -> Vec<SiteInfo> {
        self.exec.catalog()
    }

    fn edges(&self) -> (*mut u8, usize) {
        crate::coverage::edges()
    }

    fn decisions(&self) -> (*mut u8, usize) {
        self.exec.view().coverage_ptr()
    }

    fn with_replayer(
        &mut self,
        signature: Option<&Signature>,
        f: &mut dyn FnMut(&mut dyn Executor, u64),
    ) {
        if signature.is_some_and(findings::needs_fork) {
            // It hangs or kills the process: replay it in forked children,
            // with the same target.
            let mut forked = Forking::new(self.exec.target_mut(), self.timeout);
            f(&mut forked, SLOW_SHRINK_BUDGET);
        } else {
            f(&mut self.exec, u64::MAX);
        }
    }
}

/// Another program linking the SDK (libdst), through its fork server.
pub struct ProcessSubject {
    exec: Process,
    /// Decision coverage is in the program's coverage map with its edges;
    /// this stand-in is never written.
    none: Box<std::cell::UnsafeCell<[u8; 1]>>,
}

impl ProcessSubject {
    /// Starts the program at once, so that the part of its coverage map
    /// in use is known before the observers are made.
    pub fn new(mut exec: Process) -> Self {
        exec.start();
        ProcessSubject {
            exec,
            none: Box::new(std::cell::UnsafeCell::new([0])),
        }
    }
}

impl Subject for ProcessSubject {
    fn execute(&mut self, input: &[u8]) -> (Option<Outcome>, bool) {
        self.exec.execute(input)
    }

    fn view(&self) -> RegionRef<'_> {
        self.exec.view()
    }

    fn catalog(&self) -> Vec<SiteInfo> {
        self.exec.catalog()
    }

    fn edges(&self) -> (*mut u8, usize) {
        self.exec.coverage()
    }

    fn harness_timeout(&self, timeout: Duration) -> Duration {
        timeout * 3 + Duration::from_secs(10)
    }

    fn decisions(&self) -> (*mut u8, usize) {
        (self.none.get().cast(), 1)
    }

    fn with_replayer(
        &mut self,
        signature: Option<&Signature>,
        f: &mut dyn FnMut(&mut dyn Executor, u64),
    ) {
        let cap = match signature {
            Some(Signature::Timeout) => SLOW_SHRINK_BUDGET,
            _ => u64::MAX,
        };
        f(&mut self.exec, cap);
    }
}
