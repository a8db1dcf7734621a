//! The one trait every executor level implements, and what a run yields
//! through it.

use std::marker::PhantomData;
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::region::{FLAG_EVENTS, RegionRef};

use crate::{Outcome, RunRecord};

/// How a run ended, as the executor saw it. Whether a property failed is
/// not part of it: that is in the region, which the SDK wrote.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// The target returned (or its process exited with status 0).
    Ok,
    /// The target crashed: an [`Outcome::Crash`] (a panic, a signal, a
    /// nonzero exit, a region it wrote over).
    Crash(Outcome),
    /// The executor cut the run short at its time limit.
    Timeout,
}

impl End {
    /// A crash of `cause` (`panic`, a signal's name, `exit`, `region`...).
    pub fn crash(
        cause: impl Into<String>,
        message: impl Into<String>,
        location: Option<String>,
    ) -> End {
        End::Crash(Outcome::Crash {
            cause: cause.into(),
            message: message.into(),
            location,
        })
    }
}

/// A coverage map that an executor's runs write: a fixed address and length
/// for the executor's whole life, written only while a run executes.
///
/// Reading it between runs is safe ([`Map::get`], [`Map::to_vec`]); the
/// explorer's observers take its address ([`Map::as_mut_ptr`]) once, and
/// may reset it to zero before each run.
#[derive(Debug, Clone, Copy)]
pub struct Map<'a> {
    ptr: *mut u8,
    len: usize,
    _memory: PhantomData<&'a [u8]>,
}

impl<'a> Map<'a> {
    /// # Safety
    /// `ptr..ptr + len` must be readable and writable for `'a`, stay at that
    /// address, and be written by nothing but the executor's runs.
    pub unsafe fn from_raw_parts(ptr: *mut u8, len: usize) -> Map<'a> {
        debug_assert!(!ptr.is_null() && len > 0, "a map has at least one byte");
        Map {
            ptr,
            len,
            _memory: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The counter at `index`, `None` past the end.
    pub fn get(&self, index: usize) -> Option<u8> {
        // SAFETY: in bounds of memory that `from_raw_parts` vouched for;
        // volatile because a run may have written it from another process.
        (index < self.len).then(|| unsafe { self.ptr.add(index).read_volatile() })
    }

    /// A copy of the whole map.
    pub fn to_vec(&self) -> Vec<u8> {
        (0..self.len).filter_map(|i| self.get(i)).collect()
    }

    /// The map's address, for an observer that reads and resets it in place.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

/// The maps an executor's runs write.
#[derive(Debug, Clone, Copy)]
pub struct Coverage<'a> {
    /// Edge counters of the target's code (a one-byte stand-in, never
    /// written, where the level observes none).
    pub edges: Map<'a>,
    /// Decision coverage: the SDK's counters of decision sites and values
    /// (a stand-in where they are part of `edges`).
    pub decisions: Map<'a>,
}

/// Runs inputs against one target at one level: in this process, in forked
/// children, in another program, in a WebAssembly interpreter, on dst's
/// RISC-V emulator or in a KVM virtual machine.
///
/// # Protocol
///
/// 1. Create the executor for a target. Its [`catalog`](Executor::catalog)
///    is fixed from then on, and its [`coverage`](Executor::coverage) maps
///    stay at the same addresses for its whole life, so an observer may
///    hold them across runs.
/// 2. Call [`execute`](Executor::execute) once per input, from one thread,
///    one run at a time. Each run starts from a reset region holding only
///    the input and the flags last set with
///    [`set_flags`](Executor::set_flags); the target reads every decision
///    from that input, so the run is a pure function of it.
/// 3. When `execute` returns, the [`End`] says how the run ended, and until
///    the next run [`region`](Executor::region) is that run's region (its
///    decisions, assertion state, events) and the coverage maps hold that
///    run's counters. [`run`](Executor::run) does both and reads the whole
///    [`RunRecord`]: what replay, shrinking and findings use; the explorer
///    calls `execute` and reads only what it needs.
/// 4. A run that exceeds [`timeout`](Executor::timeout) ends as
///    [`End::Timeout`] where the executor enforces a limit; where it does
///    not (in this process), the caller bounds the run itself, and replays a
///    failure that hangs or kills the process through
///    [`isolated`](Executor::isolated).
///
/// An executor never panics on what a target does: a target that crashes,
/// hangs, exits or scribbles over the region yields an `End`, and the next
/// run starts clean.
pub trait Executor {
    /// Runs one input; see the protocol above.
    fn execute(&mut self, input: &[u8]) -> End;

    /// The region of the last run.
    fn region(&self) -> RegionRef<'_>;

    /// Every assertion and fault site of the target, in catalog order.
    fn catalog(&self) -> &[SiteInfo];

    /// The maps the runs write. May start the target (a program reports
    /// which part of its map it uses when it starts).
    fn coverage(&mut self) -> Coverage<'_>;

    /// The region flags (`dst::region::FLAG_*`) the following runs get.
    fn flags(&self) -> u64;

    /// Sets region flags for the following runs, e.g. `FLAG_TRACE_SITES` to
    /// have decision sites logged for `replay`.
    fn set_flags(&mut self, flags: u64);

    /// The per-run wall-clock limit, for executors whose runs end by
    /// themselves: one they enforce (a child process is killed past it), or
    /// the backstop of one bounded otherwise (wasm: by fuel). `None`: runs
    /// are not bounded, as in this process, and the caller bounds them.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether this executor ends a run that outlives [`Executor::timeout`]
    /// itself (it kills the process, stops the guest): then nothing around
    /// it needs a timer of its own. False where the limit is a backstop
    /// the caller enforces (runs bounded by fuel or an instruction budget).
    fn ends_overdue_runs(&self) -> bool {
        false
    }

    /// Changes the per-run time limit for the following runs (ignored by
    /// executors that do not time runs).
    fn set_timeout(&mut self, timeout: Duration) {
        let _ = timeout;
    }

    /// The same target, one run per child process with `timeout` per run:
    /// for replaying a failure that hangs or kills the process. `None` when
    /// this executor's runs are isolated already.
    fn isolated(&mut self, timeout: Duration) -> Option<Box<dyn Executor + '_>> {
        let _ = timeout;
        None
    }

    /// What the target compared in the last run (`dst::cmplog`), for the
    /// explorer's input-to-state mutations; empty where the level does not
    /// log comparisons.
    fn comparisons(&self) -> Vec<dst::cmplog::Entry> {
        Vec::new()
    }

    /// Runs one input with events recorded and reads its whole record.
    fn run(&mut self, input: &[u8]) -> RunRecord {
        let flags = self.flags();
        self.set_flags(flags | FLAG_EVENTS);
        let end = self.execute(input);
        self.set_flags(flags);
        RunRecord::read(self.region(), end, self.catalog())
    }
}

/// `&mut E` and `Box<E>` are executors as `E` is (so `&mut dyn Executor`
/// and `Box<dyn Executor>` are too), every method forwarded.
macro_rules! forward {
    ($($ty:ty),*) => {$(
        impl<E: Executor + ?Sized> Executor for $ty {
            fn execute(&mut self, input: &[u8]) -> End {
                (**self).execute(input)
            }
            fn region(&self) -> RegionRef<'_> {
                (**self).region()
            }
            fn catalog(&self) -> &[SiteInfo] {
                (**self).catalog()
            }
            fn coverage(&mut self) -> Coverage<'_> {
                (**self).coverage()
            }
            fn flags(&self) -> u64 {
                (**self).flags()
            }
            fn set_flags(&mut self, flags: u64) {
                (**self).set_flags(flags);
            }
            fn timeout(&self) -> Option<Duration> {
                (**self).timeout()
            }
            fn ends_overdue_runs(&self) -> bool {
                (**self).ends_overdue_runs()
            }
            fn set_timeout(&mut self, timeout: Duration) {
                (**self).set_timeout(timeout);
            }
            fn isolated(&mut self, timeout: Duration) -> Option<Box<dyn Executor + '_>> {
                (**self).isolated(timeout)
            }
            fn run(&mut self, input: &[u8]) -> RunRecord {
                (**self).run(input)
            }
            fn comparisons(&self) -> Vec<dst::cmplog::Entry> {
                (**self).comparisons()
            }
        }
    )*};
}

forward!(&mut E, Box<E>);

/// The coverage section of `region`: a map at a fixed address for as long
/// as the region lives.
pub fn region_map(region: &dst::region::Region) -> Map<'_> {
    let (ptr, len) = region.view().coverage_ptr();
    // SAFETY: the validated coverage section of memory `region` owns, which
    // does not move while it lives; the SDK writes it only during runs.
    unsafe { Map::from_raw_parts(ptr, len) }
}

/// A one-byte map that no run writes, for a level without such coverage.
/// Owned by the executor that hands it out, so its address is fixed.
#[derive(Debug, Default)]
pub struct StandIn(Box<std::cell::UnsafeCell<u8>>);

impl StandIn {
    pub fn map(&self) -> Map<'_> {
        // SAFETY: one heap byte owned by `self`, at a fixed address while it
        // lives; no run writes it (an observer may reset it to zero).
        unsafe { Map::from_raw_parts(self.0.get(), 1) }
    }
}
