//! The in-process executor: the target is a closure in this process.

use std::cell::{Cell, RefCell};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::region::{Layout, Region, RegionRef};
use dst_kernel::executor::region_map;
use dst_kernel::{Coverage, End, Executor};

use crate::Forking;

/// Only one in-process region can be attached to the SDK at a time (the
/// native SDK has one current region per process; guest levels hold
/// recorders of their own and never take this).
static ATTACHED: Mutex<()> = Mutex::new(());
static HOOK: Once = Once::new();

thread_local! {
    pub(crate) static IN_RUN: Cell<bool> = const { Cell::new(false) };
    pub(crate) static LAST_PANIC: RefCell<Option<(String, Option<String>)>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that records panics of running targets
/// instead of printing them; other panics go to the previous hook.
pub(crate) fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_RUN.with(Cell::get) || dst::thread::is_controlled() {
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic with a non-string payload".to_string());
                let location = info.location().map(|l| l.to_string());
                LAST_PANIC.with(|p| *p.borrow_mut() = Some((message, location)));
            } else {
                previous(info);
            }
        }));
    });
}

/// Size of the region's coverage map in-process. Edge coverage of Rust
/// targets comes from the binary's own sanitizer counters; the region's map
/// holds decision coverage only, so it can be small (and cheap to reset).
pub const DECISION_COVERAGE: usize = 1024;

/// Runs a closure that uses the `dst` SDK, in this process.
pub struct InProcess<F> {
    region: Region,
    target: F,
    flags: u64,
    catalog: Vec<SiteInfo>,
    /// What the target compared in its last run with `FLAG_CMPLOG`
    /// (`dst::cmplog`): logged by the comparison callbacks of code built by
    /// `cargo dst-fuzz` (`-sanitizer-coverage-trace-compares`); empty for
    /// other builds and other runs.
    cmplog: Option<dst::cmplog::Log>,
    /// The region's coverage map holds the edges (a C program's hashed
    /// `trace-pc` edges, in a binary without inline counters): reported as
    /// the edge map, with a stand-in for the decisions.
    region_edges: Option<dst_kernel::StandIn>,
}

impl<F: FnMut()> InProcess<F> {
    /// An executor for `target` with the default region layout.
    pub fn new(target: F) -> InProcess<F> {
        InProcess::with_layout(
            target,
            Layout {
                sites_capacity: dst::catalog::count().max(1),
                coverage_size: DECISION_COVERAGE,
                ..Layout::default()
            },
        )
    }

    pub fn with_layout(target: F, layout: Layout) -> InProcess<F> {
        install_panic_hook();
        InProcess {
            region: Region::new(layout),
            target,
            flags: 0,
            catalog: dst::catalog::sites(),
            cmplog: dst::cmplog::Log::anonymous().ok(),
            region_edges: None,
        }
    }

    /// An executor for `target` whose edges land in the region's coverage
    /// map (`layout.coverage_size` bytes): C code built with `trace-pc`,
    /// hashed there by dst.h's callbacks.
    pub fn with_region_edges(target: F, layout: Layout) -> InProcess<F> {
        let mut exec = InProcess::with_layout(target, layout);
        exec.region_edges = Some(dst_kernel::StandIn::default());
        exec
    }
}

impl<F: FnMut()> InProcess<F> {
    /// The target itself, e.g. to run it under another executor.
    pub fn target_mut(&mut self) -> &mut F {
        &mut self.target
    }
}

impl<F> Drop for InProcess<F> {
    fn drop(&mut self) {
        detach(&self.region);
    }
}

/// Resets `region` with `input` and makes it the SDK's for one run in this
/// process, until the guard is dropped (runs of every executor in this
/// process are serialized by it). The region must be detached with
/// [`detach`] before it is dropped.
pub(crate) fn attach<'a>(region: &Region, input: &[u8], flags: u64) -> MutexGuard<'a, ()> {
    let guard = ATTACHED.lock().unwrap_or_else(|p| p.into_inner());
    let view = region.view();
    view.reset(input, flags);
    if dst::runtime::attached() != view.base() {
        let len = view.sections().total_size;
        // SAFETY: the region is owned by the executor calling this; it stays
        // attached until another executor attaches its own or the owner is
        // dropped (which detaches it), and the ATTACHED lock serializes runs.
        unsafe { dst::attach(view.base(), len) }.expect("an owned region always validates");
    }
    debug_assert_eq!(dst::runtime::attached(), view.base());
    guard
}

/// Detaches `region` from the SDK if it is attached.
pub(crate) fn detach(region: &Region) {
    // A region that is not attached needs no lock: an in-process executor
    // made and dropped inside another's run would otherwise wait for the
    // lock its own run holds.
    if dst::runtime::attached() != region.view().base() {
        return;
    }
    let _attached = ATTACHED.lock().unwrap_or_else(|p| p.into_inner());
    if dst::runtime::attached() == region.view().base() {
        dst::detach();
    }
}

impl<F: FnMut()> Executor for InProcess<F> {
    fn execute(&mut self, input: &[u8]) -> End {
        let _attached = attach(&self.region, input, self.flags);
        if let Some(log) = &self.cmplog {
            // Logged only when asked: a comparison costs a callback either
            // way, and an entry only here.
            log.clear();
            if self.flags & dst::region::FLAG_CMPLOG != 0 {
                dst::cmplog::attach_local(log);
            } else {
                dst::cmplog::detach_local(log);
            }
        }
        IN_RUN.with(|r| r.set(true));
        let result = dst::thread::run_body(&mut self.target);
        IN_RUN.with(|r| r.set(false));
        if let Some(log) = &self.cmplog {
            // The explorer's own comparisons until the next run are not
            // the target's (and logging them costs).
            dst::cmplog::detach_local(log);
        }
        match result {
            Ok(()) => End::Ok,
            Err(_) => {
                let (message, location) = LAST_PANIC
                    .with(|p| p.borrow_mut().take())
                    .unwrap_or_else(|| ("panic".to_string(), None));
                End::crash("panic", message, location)
            }
        }
    }

    fn region(&self) -> RegionRef<'_> {
        self.region.view()
    }

    fn catalog(&self) -> &[SiteInfo] {
        &self.catalog
    }

    fn coverage(&mut self) -> Coverage<'_> {
        match &self.region_edges {
            Some(no_decisions) => Coverage {
                edges: region_map(&self.region),
                decisions: no_decisions.map(),
            },
            None => Coverage {
                edges: crate::edges::map(),
                decisions: region_map(&self.region),
            },
        }
    }

    fn flags(&self) -> u64 {
        self.flags
    }

    fn set_flags(&mut self, flags: u64) {
        self.flags = flags;
    }

    fn comparisons(&self) -> Vec<dst::cmplog::Entry> {
        self.cmplog
            .as_ref()
            .map(dst::cmplog::Log::entries)
            .unwrap_or_default()
    }

    fn isolated(&mut self, timeout: Duration) -> Option<Box<dyn Executor + '_>> {
        Some(Box::new(Forking::new(&mut self.target, timeout)))
    }
}
