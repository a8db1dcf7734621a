//! `dst-executors`: run one input against a target and return the kernel's
//! [`RunRecord`].
//!
//! Every level implements [`Executor`] (the kernel's [`Runner`] plus the
//! target's catalog) over the same region layout and decision stream:
//! - [`inprocess`]: the target is a closure in this process (fastest). Panics
//!   are caught and classified as crashes.
//! - [`fork`]: the same closure, run in a forked child per input over a
//!   shared-memory region, with a per-run timeout: for targets that crash the
//!   process or hang.
//!
//! - [`process`]: another program (a C or C++ service linking libdst), run
//!   through its fork server (or one process per input) over a region in a
//!   named shared-memory segment; its catalog is read from its binary
//!   ([`elf`]), its crashes are symbolized from its DWARF ([`symbolize`]).
//!
//! Still to come, behind the same trait: wasm, a CPU emulator and a KVM
//! virtual machine.

pub mod elf;
pub mod fork;
pub mod inprocess;
pub mod process;
pub mod symbolize;

use std::time::Duration;

use dst::catalog::SiteInfo;
pub use dst_kernel::{RunRecord, Runner};
pub use fork::Forking;
pub use inprocess::InProcess;
pub use process::Process;

/// Runs inputs against one target at one level.
///
/// Life cycle: create the executor for a target, then call [`Runner::run`] once
/// per input, from one thread at a time. Each run starts from a reset region
/// holding only the input; the record describes that run alone. The catalog
/// is fixed for the executor's lifetime and known before the first run.
pub trait Executor: Runner {
    /// Every assertion and fault site of the target, in catalog order.
    fn catalog(&self) -> Vec<SiteInfo>;

    /// Sets region flags (`dst::region::FLAG_*`) for the following runs, e.g.
    /// `FLAG_TRACE_SITES` to have decision sites logged for `replay`.
    fn set_flags(&mut self, flags: u64);

    /// The per-run time limit, for executors that enforce one (`None`: runs
    /// are not timed, as in-process).
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Changes the per-run time limit for the following runs (ignored by
    /// executors that do not time runs).
    fn set_timeout(&mut self, timeout: Duration) {
        let _ = timeout;
    }
}
