//! Fork isolation: each run in a forked child of this process, so a target
//! that crashes the process (abort, segfault, stack overflow) or hangs is
//! observed, classified and survived.
//!
//! The region lives in an anonymous shared mapping, so what the child's SDK
//! writes (decisions, assertion state, events, a panic's message) is what the
//! parent reads. The parent waits up to the timeout, then kills the child
//! and records a timeout. Edge counters of instrumented code stay in the
//! child; decision coverage is in the region and survives.

use std::time::{Duration, Instant};

use crate::inprocess::{DECISION_COVERAGE, IN_RUN, LAST_PANIC, install_panic_hook};
use crate::symbolize::{Symbolizer, read_maps, recorded_crash};
use dst::catalog::SiteInfo;
use dst::region::{Event, Layout, Region, RegionRef};
use dst_kernel::executor::region_map;
use dst_kernel::{Coverage, End, Executor, StandIn};

/// Exit status of a child whose target panicked (its message is in the region).
const PANICKED: i32 = 101;

/// Runs a closure that uses the `dst` SDK in a forked child per input.
pub struct Forking<F> {
    /// In an anonymous shared mapping, so that what the child's SDK writes
    /// is what the parent reads.
    region: Region,
    target: F,
    flags: u64,
    timeout: Duration,
    catalog: Vec<SiteInfo>,
    /// Edge counters stay in the child.
    no_edges: StandIn,
    /// This process's layout (the children share it), read at the first
    /// crash.
    symbolizer: Option<Symbolizer>,
}

impl<F: FnMut()> Forking<F> {
    pub fn new(target: F, timeout: Duration) -> Forking<F> {
        install_panic_hook();
        Forking {
            region: Region::shared(Layout {
                sites_capacity: dst::catalog::count().max(1),
                coverage_size: DECISION_COVERAGE,
                ..Layout::default()
            })
            .unwrap_or_else(|e| panic!("cannot map shared memory for the region: {e}")),
            target,
            flags: 0,
            timeout,
            catalog: dst::catalog::sites(),
            no_edges: StandIn::default(),
            symbolizer: None,
        }
    }

    /// Waits for `pid` up to the timeout; kills it past that. Returns the
    /// wait status, or `None` on timeout.
    fn wait(&self, pid: libc::pid_t) -> Option<libc::c_int> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(20);
        loop {
            let mut status = 0;
            // SAFETY: waiting for our own child, with a valid status pointer.
            let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if done == pid {
                return Some(status);
            }
            if start.elapsed() >= self.timeout {
                // SAFETY: killing and reaping our own child (again if a
                // signal, such as an explorer's alarm, interrupted the wait).
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    while libc::waitpid(pid, &mut status, 0) < 0
                        && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                    {
                    }
                }
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }
}

/// The child: attach, run, report a panic through the region, exit.
fn child(view: RegionRef<'_>, target: &mut impl FnMut()) -> ! {
    // SAFETY: the shared mapping is valid in the child too (inherited),
    // for the rest of its life (it ends in `_exit` below).
    let attached = unsafe { dst::attach(view.base(), view.sections().total_size) };
    if attached.is_err() {
        // SAFETY: `_exit` ends the child without running the parent's
        // atexit handlers or flushing its buffers twice.
        unsafe { libc::_exit(70) };
    }
    // A crash is recorded in the region and kills the child, whatever
    // handlers the parent had (an explorer's would take the child for it).
    dst::runtime::__record_crashes_in_child();
    IN_RUN.with(|r| r.set(true));
    let result = dst::thread::run_body(target);
    let code = match result {
        Ok(()) => 0,
        Err(_) => {
            let (message, location) = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| ("panic".to_string(), None));
            view.push_event(&Event::Panic { message, location });
            PANICKED
        }
    };
    // SAFETY: as above.
    unsafe { libc::_exit(code) }
}

impl<F: FnMut()> Executor for Forking<F> {
    fn execute(&mut self, input: &[u8]) -> End {
        let view = self.region.view();
        // Events always: a panic's message comes back as one.
        view.reset(input, self.flags | dst::region::FLAG_EVENTS);
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: fork in a process whose other threads (if any) do not hold
        // locks the child needs: the child only attaches the SDK to the
        // shared region, runs the target and calls `_exit`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            child(view, &mut self.target);
        }
        if pid < 0 {
            let why = std::io::Error::last_os_error();
            return End::crash("fork", format!("cannot fork: {why}"), None);
        }
        let Some(status) = self.wait(pid) else {
            return End::Timeout;
        };
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            let symbolizer = self
                .symbolizer
                .get_or_insert_with(|| Symbolizer::new(read_maps(std::process::id())));
            End::Crash(recorded_crash(view.header(), signal, symbolizer))
        } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == PANICKED {
            let (message, location) = view
                .events()
                .into_iter()
                .find_map(|e| match e {
                    Event::Panic { message, location } => Some((message, location)),
                    _ => None,
                })
                .unwrap_or_else(|| ("panic".into(), None));
            End::crash("panic", message, location)
        } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 0 {
            let code = libc::WEXITSTATUS(status);
            End::crash(
                "exit",
                format!("the target exited the process with status {code}"),
                None,
            )
        } else {
            End::Ok
        }
    }

    fn region(&self) -> RegionRef<'_> {
        self.region.view()
    }

    fn catalog(&self) -> &[SiteInfo] {
        &self.catalog
    }

    fn coverage(&mut self) -> Coverage<'_> {
        Coverage {
            edges: self.no_edges.map(),
            decisions: region_map(&self.region),
        }
    }

    fn flags(&self) -> u64 {
        self.flags
    }

    fn set_flags(&mut self, flags: u64) {
        self.flags = flags;
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }

    fn ends_overdue_runs(&self) -> bool {
        true
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }
}
